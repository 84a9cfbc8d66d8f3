"""C for one fused inverted-residual block (MobileNetV2's expand -> depthwise -> project).

IREE's codegen puts one contraction root in a dispatch (STACK.md item 5), so a block's 1x1
expand conv, 3x3 depthwise conv and 1x1 project conv are three dispatches, and the expanded
tensor goes to memory twice (4.8 MB in MobileNetV2's block 2): the depthwise conv between the
two 1x1 convs is then memory-bound and does not scale to a second core. This kernel keeps that
tensor in a stack buffer instead. It works on bands of ``rows`` output rows (one IREE
workgroup each); for each block of ``vl`` expanded channels (one vector of the target: 16
floats with AVX-512, 8 with AVX2) it expands the band's input rows
(plus the halo the depthwise conv reads) into the buffer, applies the activation, runs the
depthwise conv and its activation, and adds that block's share of the project conv into the
output band. Bands are independent (rows between two bands are expanded by both).

NHWC, fp32, any static batch (one workgroup per band and image; the images one after
another in the input and output, as NHWC has them), GCC vector extensions with the target's
vector width (a 16-float block on an AVX2 CPU is two registers per value, and its register
blocks spill: MobileNetV2's three fused blocks took 12 ms there, against 2-3 ms left to IREE).
One packed weight array: ``we[cin][ce] be[ce] wd[3][3][ce] bd[ce] wp[ce][cout] bp[cout]``
(without ``we`` and ``be`` for a block with no expand conv: the depthwise conv reads the
input, as in MobileNetV2's first block).
``bf16`` (``precision="bf16"`` on an AVX-512 target with AVX512-BF16): the expand and project
convs are ``vdpbf16ps`` dot products of bf16 pairs (weights rounded and paired along their
reduction at compile time; each input row rounded as the expand reads it, each row of
depthwise outputs as the project reads it), the sums and the depthwise conv f32. MobileNetV2
in bf16, in-process: 3.09-3.45 -> 2.84-3.21 ms with its three fused blocks in bf16.
The activations are C statements on the vector ``v`` (the pass translates the IR's
elementwise ops, so NaN and -0 behave as the model's ops say; C's fmaxf-style max would drop
a NaN, so ``arith.maximumf``/``minimumf`` are written out to keep it). Sums run in a different order
than IREE's (float reassociation only).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .bf16 import TO_BF16, pair_rows
from .bf16 import header as bf16_header
from .block_sparse import math_c

VL = 16  # floats per vector with AVX-512 (the default target)
STACK_BUDGET = 80 * 1024  # bytes of expanded rows per band (IREE workers have 128 KiB stacks)

# ReLU6 (clamp 0..6) as the pipelines give it (torch-mlir's x > 0 ? x : 0 made maximumf(x, 0)
# by xgen-nan-minmax), as kernel_match.activation_c translates it: NaN stays NaN, -0 becomes
# +0; then 6 < x ? 6 : x (NaN stays NaN).
TORCH_RELU6 = (
    "v = SEL(((v > SPLAT(0.0f)) | (v != v)), v, SEL(((v < SPLAT(0.0f)) | (SPLAT(0.0f) != "
    "SPLAT(0.0f))), SPLAT(0.0f), (v16)((vi16)v & (vi16)SPLAT(0.0f))));",
    "v = SEL(SPLAT(6.0f) < v, SPLAT(6.0f), v);",
)


@dataclass(frozen=True)
class BlockSpec:
    symbol: str
    h: int
    w: int
    cin: int
    ce: int  # expanded channels
    cout: int
    stride: int  # of the depthwise conv (1 or 2); 3x3, zero padding 1
    rows: int  # output rows per band (one workgroup); divides the output height
    act_expand: tuple[str, ...] = TORCH_RELU6
    act_depthwise: tuple[str, ...] = TORCH_RELU6
    pixels: int = 4  # output pixels per depthwise/project register block
    residual: bool = False  # add the block's input to the output (stride 1, cin == cout)
    expand: bool = True  # False: no expand conv (MobileNetV2's first block), ce == cin
    batch: int = 1  # images, one after another in x and y; workgroup y is the image
    vl: int = VL  # floats per vector on the target: the expanded channels' block
    bf16: bool = False  # expand and project as bf16 dot products (AVX512-BF16), f32 sums
    # per-channel constants the activations read (``c0``, ``c1``, ...: an int8 model's
    # dequantize scales and requantize shifts), [ce] each, packed after ``bp``
    cols_expand: int = 0
    cols_depthwise: int = 0

    @property
    def out_hw(self) -> tuple[int, int]:
        return (self.h - 1) // self.stride + 1, (self.w - 1) // self.stride + 1

    @property
    def bands(self) -> int:
        return self.out_hw[0] // self.rows

    @property
    def halo_rows(self) -> int:
        """Expanded input rows one band needs."""
        return self.stride * (self.rows - 1) + 3

    @property
    def offsets(self) -> dict[str, int]:
        """Offsets (floats) of each weight array in the packed weights, and the total."""
        e = int(self.expand)
        pair = 2 if self.bf16 else 1  # bf16: two weights per 32-bit word
        sizes = [
            ("we", e * self.cin * self.ce // pair),
            ("be", e * self.ce),
            ("wd", 9 * self.ce),
            ("bd", self.ce),
            ("wp", self.ce * self.cout // pair),
            ("bp", self.cout),
            ("ce", self.cols_expand * self.ce),
            ("cd", self.cols_depthwise * self.ce),
        ]
        out, at = {}, 0
        for name, n in sizes:
            out[name] = at
            at += n
        out["total"] = at
        return out


def unsupported(
    h: int, w: int, cin: int, ce: int, cout: int, stride: int, vl: int = VL
) -> str | None:
    """Why the kernel cannot take this block on a target with ``vl``-float vectors, or None."""
    if stride not in (1, 2):
        return f"depthwise stride {stride} (kernel does 1 and 2)"
    if ce % vl:
        return f"{ce} expanded channels (needs a multiple of {vl})"
    if cout % 8:
        return f"{cout} output channels (needs a multiple of 8)"
    wo = (w - 1) // stride + 1
    if pick_pixels(wo) is None:
        return f"output width {wo} (needs a multiple of 2)"
    return None


def bf16_unsupported(cin: int, expand: bool, vl: int) -> str | None:
    """Why the block cannot take bf16 products, or None: 16-float vectors (AVX-512) and,
    with an expand conv, an even number of input channels (they are paired)."""
    if vl != 16:
        return "bf16 products need 16-float (AVX-512) vectors"
    if expand and cin % 2:
        return f"{cin} input channels (bf16 pairs them)"
    return None


def pack_weights(
    weights: list[np.ndarray], spec: BlockSpec, columns: list[np.ndarray] | None = None
) -> np.ndarray:
    """The packed weight array (the layout in the module docstring), then the activations'
    per-channel ``columns`` (expand's, then the depthwise conv's). bf16: the expand
    weights ``we[cin][ce]`` and project weights ``wp[ce][cout]`` rounded to bf16 (nearest
    even, ``ml_dtypes``) and paired along their reduction, ``[cin / 2][ce]`` and
    ``[ce / 2][cout]`` 32-bit words (channel 2i low, 2i + 1 high: the lanes of
    ``vdpbf16ps``), stored as the f32 array's bits; biases and depthwise weights f32."""
    arrays = [np.asarray(a, np.float32) for a in weights]
    if spec.bf16:
        paired = {0, len(arrays) - 2} if spec.expand else {len(arrays) - 2}
        arrays = [pair_rows(a) if i in paired else a for i, a in enumerate(arrays)]
    arrays += [np.asarray(c, np.float32) for c in columns or []]
    packed = np.concatenate([a.ravel() for a in arrays]).astype(np.float32)
    assert packed.size == spec.offsets["total"], (packed.size, spec.offsets)
    return packed


def pick_pixels(wo: int) -> int | None:
    return next((p for p in (4, 2) if wo % p == 0), None)


def pick_rows(h: int, w: int, stride: int, min_bands: int = 4, vl: int = VL) -> int:
    """Output rows per band: the most whose expanded rows fit ``STACK_BUDGET`` (fewer rows
    expanded twice), keeping at least ``min_bands`` bands to share among threads."""
    ho = (h - 1) // stride + 1
    best = 1
    for rows in range(1, ho + 1):
        fits = (stride * (rows - 1) + 3) * (w + 2) * vl * 4 <= STACK_BUDGET
        if ho % rows == 0 and fits and ho // rows >= min(min_bands, ho):
            best = rows
    return best


def _project(nv16: int, t8: int, pixels: int, vl: int, bf16: bool = False) -> str:
    """y[p, :] += sum_c dt[p][c] * wpc[c, :] for the register block's pixels. ``bf16``:
    ``dp`` holds the depthwise outputs as bf16 pairs of channels and ``wpc`` the project
    weights paired the same way, one ``vdpbf16ps`` per pair (512- or 256-bit: the half
    vector)."""
    vecs = [("v16", "v16u", vl * j, "_mm512", "512") for j in range(nv16)] + (
        [("v8", "v8u", vl * nv16, "_mm256", "256")] if t8 else []
    )

    def each(line: str) -> str:  # one C line per output vector (acc{j}: its accumulators)
        return "\n".join(
            line.format(j=j, vt=vt, vu=vu, off=off, P=pixels, mm=mm, bh=f"__m{bits}bh", b=bits)
            for j, (vt, vu, off, mm, bits) in enumerate(vecs)
        )

    decl = each("      {vt} acc{j}[{P}];")
    init = each("        acc{j}[p] = *({vu}*)(yp0 + p * COUT + {off});")
    if bf16:
        loads = each(
            "        const {bh} w{j} = ({bh}){mm}_loadu_si{b}((const void*)(wpc + c * COUT + {off}));"
        )
        fmas = each(
            "          acc{j}[p] = ({vt}){mm}_dpbf16_ps((__m{b})acc{j}[p], "
            "({bh}){mm}_set1_epi32((int)dp[p][c]), w{j});"
        )
        steps, unroll = "VL / 2", 8
    else:
        loads = each("        const {vt} w{j} = *(const {vu}*)(wpc + c * COUT + {off});")
        fmas = each("          acc{j}[p] += dp[p][c] * w{j};")
        steps, unroll = "VL", 16
    stores = each("        *({vu}*)(yp0 + p * COUT + {off}) = acc{j}[p];")
    return f"""{decl}
      #pragma GCC unroll 8
      for (int p = 0; p < P; ++p) {{
{init}
      }}
      #pragma GCC unroll {unroll}
      for (int c = 0; c < {steps}; ++c) {{
{loads}
        #pragma GCC unroll 8
        for (int p = 0; p < P; ++p) {{
{fmas}
        }}
      }}
      #pragma GCC unroll 8
      for (int p = 0; p < P; ++p) {{
{stores}
      }}"""


def generate(spec: BlockSpec, expand_pixels: int = 8) -> str:
    """C source: ``run_band(x, w, y, band)`` and the IREE entry ``<symbol>_impl`` (memref
    arguments as IREE passes them, then the workgroup id: one band)."""
    vl = spec.vl
    why = unsupported(spec.h, spec.w, spec.cin, spec.ce, spec.cout, spec.stride, vl)
    ho, wo = spec.out_hw
    if why or ho % spec.rows or wo % spec.pixels:
        raise ValueError(f"{spec.symbol}: {why or 'rows/pixels do not divide the output'}")
    if spec.residual and (spec.stride != 1 or spec.cin != spec.cout):
        raise ValueError(f"{spec.symbol}: a residual needs stride 1 and cin == cout")
    if not spec.expand and (spec.cin != spec.ce or spec.act_expand):
        raise ValueError(f"{spec.symbol}: without an expand conv, ce == cin and no activation")
    off = spec.offsets
    res = " + x[((oy0 + r) * W + ox) * CIN + n]" if spec.residual else ""
    nv16, t8 = spec.cout // vl, (spec.cout % vl) // 8

    def act(name: str, stmts: tuple[str, ...], ncols: int) -> str:
        """``name(v, cols)``: the statements on ``v``; ``cols`` points at the first column
        constant's entries for this block of channels (the next one CE floats on)."""
        loads = [f"  const v16 c{i} = *(const v16u*)(cols + {i} * CE);" for i in range(ncols)]
        body = "\n".join([*loads, *(f"  {s}" for s in stmts)])
        return (
            f"static inline v16 {name}(v16 v, const float* restrict cols) {{\n"
            f"  (void)cols;\n{body}\n  return v;\n}}"
        )

    bf16 = spec.bf16
    if bf16:
        why = bf16_unsupported(spec.cin, spec.expand, vl)
        if why:
            raise ValueError(f"{spec.symbol}: {why}")
    wt = "uint32_t" if bf16 else "float"  # the expand and project weights' element
    cast = "(const uint32_t*)" if bf16 else ""  # the words' offsets count f32 slots too
    if bf16:
        expand_weights = """    __m512bh wev[CIN / 2];
    for (size_t k = 0; k < CIN / 2; ++k)
      wev[k] = (__m512bh)_mm512_loadu_si512((const void*)(we + k * CE + cb));"""
        expand_row = """      uint32_t xb[W * CIN / 2] __attribute__((aligned(64)));
      to_bf16(xr, xb, W * CIN);
      size_t ix = 0;
      for (; ix + PE <= W; ix += PE) {
        v16 a[PE];
        #pragma GCC unroll 16
        for (int p = 0; p < PE; ++p) a[p] = bev;
        const uint32_t* xp = xb + ix * (CIN / 2);
        #pragma GCC unroll 4
        for (size_t k = 0; k < CIN / 2; ++k) {
          const __m512bh wk = wev[k];
          #pragma GCC unroll 16
          for (int p = 0; p < PE; ++p)
            a[p] = (v16)_mm512_dpbf16_ps((__m512)a[p], (__m512bh)_mm512_set1_epi32((int)xp[p * (CIN / 2) + k]), wk);
        }
        #pragma GCC unroll 16
        for (int p = 0; p < PE; ++p) er[ix + 1 + p] = act_e(a[p], cep);
      }
      for (; ix < W; ++ix) {
        v16 a0 = bev; const uint32_t* xp = xb + ix * (CIN / 2);
        for (size_t k = 0; k < CIN / 2; ++k)
          a0 = (v16)_mm512_dpbf16_ps((__m512)a0, (__m512bh)_mm512_set1_epi32((int)xp[k]), wev[k]);
        er[ix + 1] = act_e(a0, cep);
      }"""
        dt_decl = "uint32_t dt[WO][VL / 2] __attribute__((aligned(64)));"
        dt_store = "_mm256_storeu_si256((__m256i*)dt[ox0 + p], (__m256i)_mm512_cvtneps_pbh((__m512)act_d(a[p], cdp)));"
        dt_row = "const uint32_t (*dp)[VL / 2] = dt + ox0;"
        wpc = "const uint32_t* wpc = wp + cb / 2 * COUT;"
        project = _project(nv16, t8, spec.pixels, vl, bf16=True)
        header = "\n" + bf16_header("inverted-residual") + TO_BF16.rstrip()
    else:
        expand_weights = """    v16 wev[CIN];
    for (size_t k = 0; k < CIN; ++k) wev[k] = *(const v16u*)(we + k * CE + cb);"""
        expand_row = """      size_t ix = 0;
      for (; ix + PE <= W; ix += PE) {
        v16 a[PE];
        #pragma GCC unroll 16
        for (int p = 0; p < PE; ++p) a[p] = bev;
        const float* xp = xr + ix * CIN;
        #pragma GCC unroll 4
        for (size_t k = 0; k < CIN; ++k) {
          const v16 wk = wev[k];
          #pragma GCC unroll 16
          for (int p = 0; p < PE; ++p) a[p] += xp[p * CIN + k] * wk;
        }
        #pragma GCC unroll 16
        for (int p = 0; p < PE; ++p) er[ix + 1 + p] = act_e(a[p], cep);
      }
      for (; ix < W; ++ix) {
        v16 a0 = bev; const float* xp = xr + ix * CIN;
        for (size_t k = 0; k < CIN; ++k) a0 += xp[k] * wev[k];
        er[ix + 1] = act_e(a0, cep);
      }"""
        dt_decl = "float dt[WO][VL] __attribute__((aligned(64)));"
        dt_store = "*(v16*)dt[ox0 + p] = act_d(a[p], cdp);"
        dt_row = "const float (*dp)[VL] = dt + ox0;"
        wpc = "const float* wpc = wp + cb * COUT;"
        project = _project(nv16, t8, spec.pixels, vl)
        header = ""

    uses_math = any("xg_" in s for s in (*spec.act_expand, *spec.act_depthwise))
    math = math_c() if uses_math else ""  # exp, erf, tanh, roundeven (a quantize's rounding)
    return f"""/* generated by xgen_mlir for {spec.symbol}: inverted-residual block {spec.h}x{spec.w}x{spec.cin}
   -> {spec.ce if spec.expand else "(no expand)"} -> dw3x3 s{spec.stride} -> {spec.cout}{" + x" if spec.residual else ""}, {spec.rows} output rows per band, {vl}-float vectors */
#include <stddef.h>{header}
/* v16 / vi16: the target's vector of VL floats / ints (the names the translated activations use) */
typedef float v16 __attribute__((vector_size({4 * vl})));
typedef float v16u __attribute__((vector_size({4 * vl}), aligned(4)));
typedef float v8 __attribute__((vector_size(32)));
typedef float v8u __attribute__((vector_size(32), aligned(4)));
typedef int vi16 __attribute__((vector_size({4 * vl})));
#define SEL(m, a, b) ((v16)(((m) & (vi16)(a)) | (~(m) & (vi16)(b))))
#define SPLAT(c) ((v16){{0}} + (c))
#define MEMREF(T, n) T* n##_base, T* n, size_t n##_off, size_t n##_size, size_t n##_stride
{math}#define VL {vl}
#define H {spec.h}
#define W {spec.w}
#define CIN {spec.cin}
#define EXPAND {int(spec.expand)}
#define CE {spec.ce}
#define COUT {spec.cout}
#define S {spec.stride}
#define R {spec.rows}
#define WO {wo}
#define NR {spec.halo_rows}
#define WP {spec.w + 2}
#define PE {expand_pixels}
#define P {spec.pixels}
{act("act_e", spec.act_expand, spec.cols_expand)}
{act("act_d", spec.act_depthwise, spec.cols_depthwise)}

static void run_band(const float* restrict x, const float* restrict wts, float* restrict y,
                     size_t band) {{
  const {wt}* restrict we = {cast}wts + {off["we"]};
  const float* restrict be = wts + {off["be"]};
  const float* restrict wd = wts + {off["wd"]};
  const float* restrict bd = wts + {off["bd"]};
  const {wt}* restrict wp = {cast}wts + {off["wp"]};
  const float* restrict bp = wts + {off["bp"]};
  float e[NR][WP][VL] __attribute__((aligned(64)));
  {dt_decl}
  const size_t oy0 = band * R;
  const long iy0 = (long)oy0 * S - 1;
  for (size_t r = 0; r < R; ++r)
    for (size_t ox = 0; ox < WO; ++ox) {{
      float* yp = y + ((oy0 + r) * WO + ox) * COUT;
      for (size_t n = 0; n < COUT; ++n) yp[n] = bp[n]{res};
    }}
  for (size_t cb = 0; cb < CE; cb += VL) {{
    const float* restrict cep = wts + {off["ce"]} + cb;  /* the activations' column constants */
    const float* restrict cdp = wts + {off["cd"]} + cb;
#if EXPAND
    const v16 bev = *(const v16u*)(be + cb);
{expand_weights}
#endif
    for (size_t r = 0; r < NR; ++r) {{
      const long iy = iy0 + (long)r;
      v16* er = (v16*)e[r];
      const v16 zero = {{0}};
      er[0] = zero; er[WP - 1] = zero;
      if (iy < 0 || iy >= H) {{ for (size_t i = 1; i < WP - 1; ++i) er[i] = zero; continue; }}
      const float* xr = x + (size_t)iy * W * CIN;
#if EXPAND
{expand_row}
#else  /* no expand conv: the band's input rows, VL channels, as they are */
      for (size_t ix = 0; ix < W; ++ix) er[ix + 1] = *(const v16u*)(xr + ix * CIN + cb);
#endif
    }}
    v16 wdv[9];
    for (size_t t = 0; t < 9; ++t) wdv[t] = *(const v16u*)(wd + t * CE + cb);
    const v16 bdv = *(const v16u*)(bd + cb);
    {wpc}
    for (size_t r = 0; r < R; ++r) {{
      float* yr = y + (oy0 + r) * WO * COUT;
      for (size_t ox0 = 0; ox0 < WO; ox0 += P) {{  /* depthwise conv of the row */
        v16 a[P];
        #pragma GCC unroll 8
        for (int p = 0; p < P; ++p) a[p] = bdv;
        #pragma GCC unroll 3
        for (int ky = 0; ky < 3; ++ky) {{
          const v16* er = (const v16*)e[S * r + ky] + S * ox0;
          #pragma GCC unroll 3
          for (int kx = 0; kx < 3; ++kx) {{
            const v16 wk = wdv[ky * 3 + kx];
            #pragma GCC unroll 8
            for (int p = 0; p < P; ++p) a[p] += er[S * p + kx] * wk;
          }}
        }}
        #pragma GCC unroll 8
        for (int p = 0; p < P; ++p) {dt_store}
      }}
      /* its share of the project conv: the row's stores have retired before these loads */
      for (size_t ox0 = 0; ox0 < WO; ox0 += P) {{
        {dt_row}
        float* yp0 = yr + ox0 * COUT;
{project}
      }}
    }}
  }}
}}

{_entry(spec)}"""


def _entry(spec: BlockSpec) -> str:
    """The IREE entry: workgroup x is the band; y, for a batch above 1, the image."""
    if spec.batch == 1:
        return f"""void {spec.symbol}_impl(MEMREF(const float, x), MEMREF(const float, w), MEMREF(float, y),
                        size_t gx) {{
  run_band(x + x_off, w + w_off, y + y_off, gx);
}}
"""
    ho, wo = spec.out_hw
    return f"""void {spec.symbol}_impl(MEMREF(const float, x), MEMREF(const float, w), MEMREF(float, y),
                        size_t gx, size_t gy) {{
  run_band(x + x_off + gy * {spec.h * spec.w * spec.cin}, w + w_off,
           y + y_off + gy * {ho * wo * spec.cout}, gx);
}}
"""
