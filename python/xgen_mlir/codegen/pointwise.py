"""C for a 1x1 convolution (pointwise conv) with few pixels: ``y = act(x W + b) (+ r)``.

IREE's data tiling packs a matmul's rows in tiles of 16 on AVX-512, so a 7x7 image's 49
pixels run as 64 rows: 24% of the work is padding, and MobileNetV2's 7x7 1x1 convs run at
140-160 of the sgemm rate's 205 GFLOP/s. This kernel has no row tile to fill: it blocks
``pixels`` rows (a divisor of M, e.g. 7) by ``nv`` vectors of ``vl`` floats of output
channels (the target's vector: 16 floats with AVX-512, 8 with AVX2), so
a register block of accumulators is updated by one weight load per vector and one broadcast
per row for every input channel, the whole K at once (K is small: the rows of x and the
weight panel stay in L1/L2).

Workgroups are panels of ``vl * nv`` output channels (workgroup x) by chunks of whole
register blocks of rows (workgroup y, ``row_chunks``: a conv over a large image with few output
channels is one or two panels, which would leave a thread idle). Weights are packed
panel by panel: ``w[NP / (vl nv)][K][vl nv]`` then the bias ``b[NP]``, where NP is N rounded
up to whole panels with zero columns (a classifier's 1000 classes); the last panel stores only
the columns that exist. The activation is C statements on the vector ``v`` (the IR's
elementwise ops translated, as for the inverted-residual kernel). ``r`` (optional) is added
after the activation, as the model's residual add does. Rows are NHWC pixels (M = N x H x W: a
batch's images are more rows) or a matmul's rows, fp32; products are summed over k in order,
as a plain dot product, starting from the bias (a conv's accumulator init) or from zero with
the bias added after (``bias_after``: a matmul followed by its bias add).

``bf16``: the products are AVX512-BF16 dot products of bf16 pairs (``_generate_bf16``): the
weights are rounded at compile time and paired by input channel, each register block's input
rows are rounded as they are read, the sums stay f32; the same register block then does twice
the multiply-adds per instruction.

One row (M = 1, a classifier head's matrix-vector product) reads every weight once: it is
bound by memory, and its panels are 64 channels wide, so that four independent accumulators
keep the loads streaming.

The register block follows the target's vector registers (``registers``: 32 with AVX-512, 16
with AVX2): at most three quarters of them hold accumulators, the rest the weight vectors and
the broadcast row value. A block sized for 32 registers on a 16-register CPU spills every
accumulator on every FMA: MobileNetV2's 7x7 1x1 convs took 36 ms instead of a few on an AVX2
EPYC with the AVX-512 block.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .bf16 import AMX_C, TO_BF16, TO_BF16_SCALED, amx_header, pair_rows
from .bf16 import header as bf16_header
from .block_sparse import math_c

VL = 16  # floats per vector with AVX-512 (the default target)
REGISTERS = 32  # vector registers with AVX-512


@dataclass(frozen=True)
class PointwiseSpec:
    symbol: str
    m: int  # rows (pixels)
    k: int  # input channels
    n: int  # output channels
    act: tuple[str, ...] = ()
    residual: bool = False
    bias_after: bool = False  # sum from zero, then add the bias (the IR's matmul + bias add)
    vl: int = VL  # floats per vector on the target
    registers: int = REGISTERS  # vector registers on the target
    bf16: bool = False  # products of bf16 pairs (AVX512-BF16 dot products), f32 sums
    row_chunks: int = 1  # workgroups along the rows (workgroup y), each whole row blocks
    amx: bool = False  # (with bf16) the products in AMX tiles, 16 rows at a time
    # (with bf16, not amx) the rows are x * s, s a per-input-channel scale (one more operand,
    # K floats, after the weights), multiplied as each block's rows are rounded to bf16
    scaled: bool = False

    @property
    def nv(self) -> int:
        """Vectors of output channels per panel: the widest of 4 (only for fewer than 4 rows,
        where each weight load feeds one FMA per vector), 2 and 1 that leaves 8 or more
        panels for the threads to share."""
        for nv in (4, 2) if self.m < 4 else (2,):
            if -(-self.n // (nv * self.vl)) >= 8:
                return nv
        return 1

    @property
    def pixels(self) -> int:
        """Rows per register block: the largest divisor of M that fits the accumulators, or
        the most that fit (the rest run one row at a time)."""
        most = (self.registers * 3 // 4) // self.nv
        if self.m < 4:
            return self.m
        return next((p for p in range(most, 3, -1) if self.m % p == 0), most)

    @property
    def panels(self) -> int:
        return -(-self.n // (self.vl * self.nv))

    @property
    def n_padded(self) -> int:
        return self.panels * self.vl * self.nv

    @property
    def k_pairs(self) -> int:
        """bf16: the input channels in pairs (one 32-bit lane of a dot product), a zero
        channel after an odd K."""
        return -(-self.k // 2)

    @property
    def k_pairs_padded(self) -> int:
        """bf16: the pairs of input channels the packed weights hold: with AMX, whole tiles
        of 16 pairs (zero rows after K)."""
        return -(-self.k_pairs // 16) * 16 if self.amx else self.k_pairs

    @property
    def chunk_rows(self) -> int:
        """Rows per workgroup along y: whole register blocks, the last chunk takes the rest."""
        per = -(-self.m // self.row_chunks)
        return -(-per // self.pixels) * self.pixels

    @property
    def grid(self) -> tuple[int, int, int]:
        return (self.panels, -(-self.m // self.chunk_rows), 1)


def row_chunks(
    m: int, k: int, n: int, workgroups: int = 16, vl: int = VL, registers: int = REGISTERS
) -> int:
    """Workgroups along the rows so that panels x chunks reaches ``workgroups``: a 1x1 conv
    over a large image with few output channels is one or two panels (MobileNetV2's
    112x112x32 -> 16: one), which would leave every other thread idle."""
    spec = PointwiseSpec("probe", m, k, n, vl=vl, registers=registers)
    want = -(-workgroups // spec.panels)
    return max(1, min(want, m // spec.pixels))


def unsupported(m: int, k: int, n: int, residual: bool = False, vl: int = VL) -> str | None:
    """Why the kernel cannot take this product on a target with ``vl``-float vectors, or
    None."""
    if residual and n % vl:
        return f"{n} output channels and a residual add (needs a multiple of {vl})"
    return None


def pack_weights(w: np.ndarray, b: np.ndarray, spec: PointwiseSpec) -> np.ndarray:
    """``w`` [K, N] and ``b`` [N] in the kernel's panel order, zero columns up to NP.

    bf16: ``w`` rounded to bf16 (to nearest even, ``ml_dtypes``) and the input channels
    paired, ``[panels][K2][WIDTH]`` 32-bit words with channel 2i in the low half and 2i+1 in
    the high half (the lane order of ``vdpbf16ps``), stored as the f32 array's bits; the bias
    stays f32."""
    pad = spec.n_padded - spec.n
    w = np.pad(np.asarray(w, np.float32), ((0, 0), (0, pad)))
    b = np.pad(np.asarray(b, np.float32).ravel(), (0, pad))
    width = spec.vl * spec.nv
    if spec.bf16:
        pairs = pair_rows(w)  # [K2, NP]
        pairs = np.pad(pairs, ((0, spec.k_pairs_padded - spec.k_pairs), (0, 0)))  # AMX tiles
        panels = pairs.reshape(spec.k_pairs_padded, spec.panels, width).transpose(1, 0, 2)
        return np.concatenate([panels.ravel(), b])
    panels = w.reshape(spec.k, spec.panels, width).transpose(1, 0, 2)
    return np.concatenate([panels.ravel(), b]).astype(np.float32)


def _prelude(spec: PointwiseSpec, title: str, extra: str = "", defines: str = "") -> str:
    """What both variants start with: the title comment, includes (``extra``), the vector
    types and macros, the shape's defines (plus ``defines``), ``act`` and ``store``."""
    vl, width = spec.vl, spec.vl * spec.nv
    last_cols = spec.n - (spec.panels - 1) * width  # columns of the last panel
    body = "\n".join(f"  {s}" for s in spec.act)
    math = math_c() if any("xg_" in s for s in spec.act) else ""  # exp, erf, tanh
    return f"""/* generated by xgen_mlir for {spec.symbol}: {title} */
#include <stddef.h>
{extra}/* v16 / vi16: the target's vector of {vl} floats / ints (the names the translated activations use) */
typedef float v16 __attribute__((vector_size({4 * vl})));
typedef float v16u __attribute__((vector_size({4 * vl}), aligned(4)));
typedef int vi16 __attribute__((vector_size({4 * vl})));
#define SEL(m, a, b) ((v16)(((m) & (vi16)(a)) | (~(m) & (vi16)(b))))
#define SPLAT(c) ((v16){{0}} + (c))
#define MEMREF(T, n) T* n##_base, T* n, size_t n##_off, size_t n##_size, size_t n##_stride
#define VL {vl}
#define M {spec.m}
#define K {spec.k}
#define N {spec.n}
#define NV {spec.nv}
#define PB {spec.pixels}
#define WIDTH (VL * NV)
#define NP {spec.n_padded}
#define PANELS {spec.panels}
#define LAST_NV {-(-last_cols // vl)}  /* vectors of the last panel */
#define LAST_COLS {last_cols - vl * (-(-last_cols // vl) - 1)}  /* columns of its last vector */
{defines}{math}static inline v16 act(v16 v) {{
{body}
  return v;
}}

/* vector j of nv at y; only the first `cols` floats of the last one (the columns past N) */
static inline __attribute__((always_inline)) void store(float* y, v16 v, int j, int nv,
                                                         int cols) {{
  if (j < nv - 1 || cols == VL) {{ *(v16u*)y = v; return; }}
  for (int i = 0; i < cols; ++i) y[i] = v[i];
}}
"""


def _io(spec: PointwiseSpec) -> tuple[str, str, str, str, str]:
    """C pieces both variants use: the residual's add at a block row, its parameter and
    argument, the accumulators' start and what is added to them after the sum (the bias,
    where the IR adds it after the product)."""
    return (
        "+ *(const v16u*)(r + (m0 + p) * N + col + VL * j)" if spec.residual else "",
        "MEMREF(const float, r), " if spec.residual else "",
        "r + r_off" if spec.residual else "0",
        "SPLAT(0.0f)" if spec.bias_after else "*(const v16u*)(bias + VL * j)",
        " + *(const v16u*)(bias + VL * j)" if spec.bias_after else "",
    )


def generate(spec: PointwiseSpec) -> str:
    """C source: ``run_panel(x, w, r, y, panel)`` and the IREE entry ``<symbol>_impl``
    (memref arguments as IREE passes them: x, w, [s,] [r,] y, then the workgroup ids)."""
    why = unsupported(spec.m, spec.k, spec.n, spec.residual, spec.vl)
    if why:
        raise ValueError(f"{spec.symbol}: {why}")
    if spec.bf16:
        return _generate_bf16(spec)
    if spec.scaled:
        raise ValueError(f"{spec.symbol}: a scaled input needs the bf16 kernel")
    vl = spec.vl
    width = vl * spec.nv
    res, r_arg, r_pass, init, post = _io(spec)
    res1 = "+ *(const v16u*)(r + m * N + col + VL * j)" if spec.residual else ""
    tail = (
        ""
        if spec.m % spec.pixels == 0
        else f"""  for (size_t m = m0; m < m_end; ++m) {{  /* rows left over from the register blocks */
    v16 acc[NV];
    for (int j = 0; j < nv; ++j) acc[j] = {init};
    for (size_t k = 0; k < K; ++k)
      for (int j = 0; j < nv; ++j) acc[j] += x[m * K + k] * *(const v16u*)(wp + k * WIDTH + VL * j);
    for (int j = 0; j < nv; ++j) store(y + m * N + col + VL * j, act(acc[j]{post}) {res1}, j, nv, cols);
  }}
"""
    )
    title = (
        f"{spec.m} rows x {spec.k} -> {spec.n}{' + r' if spec.residual else ''}, panels of "
        f"{width} channels, {spec.pixels} rows per register block, {vl}-float vectors"
    )
    chunk = f"#define CHUNK {spec.chunk_rows}\n"
    return f"""{_prelude(spec, title, defines=chunk)}
/* nv vectors of panel `panel` (compile-time constants once inlined: full or last panel) */
static inline __attribute__((always_inline)) void panel_rows(
    const float* restrict x, const float* restrict w, const float* restrict r,
    float* restrict y, size_t panel, size_t m_begin, size_t m_end, const int nv,
    const int cols) {{
  const float* restrict wp = w + panel * K * WIDTH;
  const float* restrict bias = w + (size_t)K * NP + panel * WIDTH;
  const size_t col = panel * WIDTH;
  (void)r;
  size_t m0 = m_begin;
  for (; m0 + PB <= m_end; m0 += PB) {{
    v16 acc[PB][NV];
    #pragma GCC unroll 32
    for (int p = 0; p < PB; ++p)
      #pragma GCC unroll 4
      for (int j = 0; j < nv; ++j) acc[p][j] = {init};
    const float* xp = x + m0 * K;
    #pragma GCC unroll {8 if spec.m < 4 else 2}
    for (size_t k = 0; k < K; ++k) {{
      v16 wv[NV];
      #pragma GCC unroll 4
      for (int j = 0; j < nv; ++j) wv[j] = *(const v16u*)(wp + k * WIDTH + VL * j);
      #pragma GCC unroll 32
      for (int p = 0; p < PB; ++p)
        #pragma GCC unroll 4
        for (int j = 0; j < nv; ++j) acc[p][j] += xp[p * K + k] * wv[j];
    }}
    #pragma GCC unroll 32
    for (int p = 0; p < PB; ++p)
      #pragma GCC unroll 4
      for (int j = 0; j < nv; ++j)
        store(y + (m0 + p) * N + col + VL * j, act(acc[p][j]{post}) {res}, j, nv, cols);
  }}
{tail}}}

static void run(const float* restrict x, const float* restrict w, const float* restrict r,
                float* restrict y, size_t panel, size_t chunk) {{
  const size_t m_begin = chunk * CHUNK;
  const size_t m_end = m_begin + CHUNK < M ? m_begin + CHUNK : M;
  if (panel + 1 == PANELS)
    panel_rows(x, w, r, y, PANELS - 1, m_begin, m_end, LAST_NV, LAST_COLS);
  else
    panel_rows(x, w, r, y, panel, m_begin, m_end, NV, VL);
}}

void {spec.symbol}_impl(MEMREF(const float, x), MEMREF(const float, w), {r_arg}MEMREF(float, y),
                        size_t gx, size_t gy) {{
  run(x + x_off, w + w_off, {r_pass}, y + y_off, gx, gy);
}}
"""


def _generate_bf16(spec: PointwiseSpec) -> str:
    """The kernel with bf16 products (``vdpbf16ps``: 16 f32 sums, each of two products of
    bf16 pairs), 16-float vectors only. Each workgroup (a panel, a chunk of rows) converts its
    rows' inputs to bf16 pairs once per register block (``to_bf16``, rounding to nearest
    even as ``ml_dtypes`` rounds the weights), then runs the f32 kernel's register block with
    one dot product per pair of input channels instead of two FMAs. The sums start from the
    bias (or zero) and run over the pairs in order; the activation and the residual add are
    the f32 kernel's."""
    if spec.vl != 16:
        raise ValueError(f"{spec.symbol}: bf16 products need 16-float (AVX-512) vectors")
    if spec.scaled and spec.amx:
        raise ValueError(f"{spec.symbol}: a scaled input is not taken by the AMX path")
    width = spec.vl * spec.nv
    res, r_arg, r_pass, init, post = _io(spec)
    title = (
        f"{spec.m} rows x {spec.k} -> {spec.n}{' + r' if spec.residual else ''}, bf16 "
        f"products, f32 sums, panels of {width} channels, {spec.pixels} rows per register "
        f"block, {spec.chunk_rows} rows per workgroup"
    )
    defines = (
        f"#define K2 {spec.k_pairs}\n#define K2A {spec.k_pairs_padded}\n"
        f"#define CHUNK {spec.chunk_rows}\n"
    )
    head = bf16_header("pointwise") + (amx_header("pointwise") if spec.amx else "")
    convert = (
        "to_bf16_scaled(x + (m0 + p) * K, sc, xb[p], K)"
        if spec.scaled
        else "to_bf16(x + (m0 + p) * K, xb[p], K)"
    )
    s_arg, s_pass = ("MEMREF(const float, sc), ", "sc + sc_off") if spec.scaled else ("", "0")
    if spec.scaled:
        title += ", rows scaled per input channel"
    amx, amx_call = (_amx(spec), _AMX_CALL) if spec.amx else ("", "")
    if spec.amx:
        title += ", in AMX tiles"
    return f"""{_prelude(spec, title, head, defines)}
{TO_BF16}{TO_BF16_SCALED if spec.scaled else ""}{amx}
/* rows m0 .. m0 + R - 1 (R <= PB) of panel `panel`, nv vectors */
static inline __attribute__((always_inline)) void block(
    const float* restrict x, const float* restrict sc, const uint32_t* restrict wp,
    const float* restrict bias, const float* restrict r, float* restrict y, size_t col,
    size_t m0, const int R, const int nv, const int cols) {{
  uint32_t xb[PB][K2] __attribute__((aligned(64)));
  (void)r;
  (void)sc;
  for (int p = 0; p < R; ++p) {convert};
  v16 acc[PB][NV];
  #pragma GCC unroll 32
  for (int p = 0; p < R; ++p)
    #pragma GCC unroll 4
    for (int j = 0; j < nv; ++j) acc[p][j] = {init};
  #pragma GCC unroll 2
  for (size_t k = 0; k < K2; ++k) {{
    __m512bh wv[NV];
    #pragma GCC unroll 4
    for (int j = 0; j < nv; ++j) wv[j] = (__m512bh)_mm512_loadu_si512((const void*)(wp + k * WIDTH + VL * j));
    #pragma GCC unroll 32
    for (int p = 0; p < R; ++p) {{
      const __m512bh a = (__m512bh)_mm512_set1_epi32((int)xb[p][k]);
      #pragma GCC unroll 4
      for (int j = 0; j < nv; ++j) acc[p][j] = (v16)_mm512_dpbf16_ps((__m512)acc[p][j], a, wv[j]);
    }}
  }}
  #pragma GCC unroll 32
  for (int p = 0; p < R; ++p)
    #pragma GCC unroll 4
    for (int j = 0; j < nv; ++j)
      store(y + (m0 + p) * N + col + VL * j, act(acc[p][j]{post}) {res}, j, nv, cols);
}}

static inline __attribute__((always_inline)) void panel_rows(
    const float* restrict x, const float* restrict sc, const uint32_t* restrict w,
    const float* restrict r, float* restrict y, size_t panel, size_t m_begin, size_t m_end,
    const int nv, const int cols) {{
  const uint32_t* restrict wp = w + panel * K2A * WIDTH;
  const float* restrict bias = (const float*)(w + (size_t)K2A * NP) + panel * WIDTH;
  const size_t col = panel * WIDTH;
{amx_call}  size_t m0 = m_begin;
  for (; m0 + PB <= m_end; m0 += PB) block(x, sc, wp, bias, r, y, col, m0, PB, nv, cols);
  for (; m0 < m_end; ++m0) block(x, sc, wp, bias, r, y, col, m0, 1, nv, cols);
}}

static void run(const float* restrict x, const float* restrict sc, const uint32_t* restrict w,
                const float* restrict r, float* restrict y, size_t panel, size_t chunk) {{
  const size_t m_begin = chunk * CHUNK;
  const size_t m_end = m_begin + CHUNK < M ? m_begin + CHUNK : M;
  if (panel + 1 == PANELS)
    panel_rows(x, sc, w, r, y, PANELS - 1, m_begin, m_end, LAST_NV, LAST_COLS);
  else
    panel_rows(x, sc, w, r, y, panel, m_begin, m_end, NV, VL);
}}

void {spec.symbol}_impl(MEMREF(const float, x), MEMREF(const float, w), {s_arg}{r_arg}MEMREF(float, y),
                        size_t gx, size_t gy) {{
  run(x + x_off, {s_pass}, (const uint32_t*)(w + w_off), {r_pass}, y + y_off, gx, gy);
}}
"""


_AMX_CALL = """  if (amx_ready()) {
    amx_rows(x, wp, bias, r, y, col, m_begin, m_end, nv, cols);
    return;
  }
"""


def _amx(spec: PointwiseSpec) -> str:
    """The AMX path (``spec.amx``): rows m_begin..m_end of a panel 16 at a time; for each
    step of 32 input channels the tile's rows are rounded to bf16 pairs (zero past K and past
    the rows: a 1 KB A tile on the stack, whatever K) and multiplied by the panel's ``NV``
    16-column blocks of weights (``tdpbf16ps`` into tiles 0..NV-1, f32 sums), the sums stored
    to the stack; then the bias, the activation and the residual as the register-block kernel
    adds them. The weights' padded columns (past N) are multiplied too and never stored."""
    res, _, _, _, _ = _io(spec)
    nv = spec.nv
    zero = "\n".join(f"    _tile_zero({j});" for j in range(nv))
    dots = "\n".join(
        f"      _tile_loadd({5 + j % 2}, wp + (size_t)ks * 16 * WIDTH + {16 * j}, WIDTH * 4);\n"
        f"      _tile_dpbf16ps({j}, 4, {5 + j % 2});"
        for j in range(nv)
    )
    stores = "\n".join(
        f"    _tile_stored({j}, (float*)cb + {16 * j}, WIDTH * 4);" for j in range(nv)
    )
    return f"""
{AMX_C}
static __attribute__((noinline)) void amx_rows(
    const float* restrict x, const uint32_t* restrict wp, const float* restrict bias,
    const float* restrict r, float* restrict y, size_t col, size_t m_begin, size_t m_end,
    const int nv, const int cols) {{
  amx_configure();
  uint32_t xa[16][16] __attribute__((aligned(64)));
  float cb[16][WIDTH] __attribute__((aligned(64)));
  (void)r;
  for (size_t m0 = m_begin; m0 < m_end; m0 += 16) {{
    const int R = m_end - m0 < 16 ? (int)(m_end - m0) : 16;
{zero}
    for (int ks = 0; ks < K2A / 16; ++ks) {{
      const int c0 = 32 * ks, n = K - c0 < 32 ? K - c0 : 32;
      for (int p = 0; p < 16; ++p) {{
        int w = 0;
        if (p < R && n > 0) {{
          to_bf16(x + (m0 + p) * K + c0, xa[p], n);
          w = (n + 1) / 2;
        }}
        for (; w < 16; ++w) xa[p][w] = 0u;
      }}
      _tile_loadd(4, (const uint32_t*)xa, 64);
{dots}
    }}
{stores}
    for (int p = 0; p < R; ++p)
      for (int j = 0; j < nv; ++j) {{
        const v16 v = *(const v16*)(cb[p] + VL * j) + *(const v16u*)(bias + VL * j);
        store(y + (m0 + p) * N + col + VL * j, act(v) {res}, j, nv, cols);
      }}
  }}
  _tile_release();
}}
"""
