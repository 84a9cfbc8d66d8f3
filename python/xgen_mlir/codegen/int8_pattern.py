"""The int8 pattern-conv kernel: a pattern-pruned conv's integer sums on VNNI dot products.

A pattern keeps 4 taps of a 3x3 kernel, and ``vpdpbusd`` adds 4 products of a uint8 and an
int8 into each 32-bit lane: one instruction computes one kept kernel's whole contribution to
16 output pixels of one filter. Each 32-bit lane holds one pixel's 4 tap inputs, and the int8
weights are broadcast as 4 bytes. For 16 pixels of one input channel, the 4 tap rows are
four 16-byte loads and one byte permutation (``vpermb``, AVX512-VBMI). One such vector
serves every filter of a group: they share the channel and its pattern (the pruning's
co-design contract). So a group of up to 16 filters keeps 16 accumulators, and there is no
multiply by a pruned weight and no run-time index arithmetic beyond the group's table of
kept channels.

Pixels are "wide": the output row runs over the whole padded input row (``WQ`` columns, of
which the last few are discarded), so a tap of any pixel is at a fixed offset from the
pixel's own index and 16 consecutive pixels read 16 consecutive bytes, whatever the row
width. Stride 2 reads the input split into its 2 x 2 phases (row and column parity: the
wrapper's transpose), where a tap is again a fixed offset. Each vector's valid pixels go
straight to the compact ``[F, OH, OW]`` output: compressed in a register, one masked store
per filter.

The input is int8 with zero point ``zp``; the kernel flips each byte to uint8 (``x ^ 0x80
= x + 128``), so it computes ``sum w * (x + 128)``, and the start value of each filter
holds the difference: ``bias - (128 + zp) * sum(w)``. Padding holds ``zp``, which then
contributes nothing, exactly as in the integer conv. The result is the conv's exact i32
sums.

On aarch64 with the dot product (``+dotprod``) the same plan runs on ``sdot`` by element
(``generate_neon``): a 128-bit tap vector holds 4 pixels' 4 tap bytes, built from the four
tap loads by two rounds of zips, and one instruction adds a kept kernel's share to 4 pixels
of one filter, whose 4 weights are one 32-bit lane of a vector holding 4 filters'. ``sdot``
multiplies int8 by int8, so no flip: the start is ``bias - zp * sum(w)``. NEON has no masked
store: a vector of 8 pixels that are all valid is stored whole, another lane by lane.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .dense_gemm import epilogue_helpers

LANES = 16  # i32 lanes of a 512-bit vector: pixels per vector
NEON_LANES = 8  # pixels per step on NEON: two 128-bit vectors of 4
NEON_FILTERS = 8  # filters per step on NEON: 8 x 2 accumulators, 2 tap and 2 weight vectors
MAX_FILTERS = 16  # accumulators per group (of 32 registers: the rest hold the tap vector)
TAP_BYTES = 16  # bytes each tap load reads


@dataclass
class Int8PatternSpec:
    """One conv's geometry and its grouped structure. ``groups``: per group, its filters
    (original indices) and kernels (channel, pattern id); ``patterns``: tap indices
    (``ky * kw + kx``) of each pattern."""

    symbol: str
    batch: int
    c: int
    f: int
    kh: int
    kw: int
    stride: int
    hq: int  # rows of each phase plane (the padded input's rows / stride, rounded up)
    wq: int  # columns of each phase plane: the wide row
    oh: int
    ow: int
    patterns: list[list[int]]
    groups: list[tuple[list[int], list[tuple[int, int]]]]
    tiles: int = 1  # pixel tiles: workgroups along y
    isa: str = "avx512"  # avx512 (VNNI + VBMI) or neon (aarch64 with the dot product)
    # a requantize after the conv (``passes/epilogue_c.py``: statements on ``v``, the sums as
    # f32, ending in the integer the quantize converts to int8): the kernel stores int8
    act: tuple[str, ...] = ()
    columns: list[np.ndarray] = field(default_factory=list)  # its per-filter constants ([F])
    derived: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        plane = self.hq * self.wq
        q = self.oh * self.wq
        nv = -(-q // self.lanes)
        chunks = max(-(-len(p) // 4) for p in self.patterns)
        taps = self.tap_offsets(chunks)
        in_len = self.stride * self.stride * self.c * plane
        # one past the last byte read: the last vector's tap loads
        last = (self.c - 1) * plane + int(taps.max()) + (nv - 1) * self.lanes + TAP_BYTES
        self.derived = {
            "plane": plane,
            "q": q,
            "nv": nv,
            "chunks": chunks,
            "in_len": in_len,
            "slack": max(0, last - in_len),
            "tile": -(-nv // self.tiles),
        }

    @property
    def lanes(self) -> int:
        """Pixels per step of the kernel."""
        return self.lanes_of(self.isa)

    @staticmethod
    def lanes_of(isa: str) -> int:
        return NEON_LANES if isa == "neon" else LANES

    def tap_offsets(self, chunks: int) -> np.ndarray:
        """(P, 4 * chunks) byte offsets of each pattern's taps from a pixel's own index in
        its channel's plane: the phase plane's base plus the tap's row and column in it;
        0 for the unused slots of the last chunk (their weights are 0)."""
        s, plane = self.stride, self.hq * self.wq
        out = np.zeros((len(self.patterns), 4 * chunks), np.int64)
        for p, taps in enumerate(self.patterns):
            for i, t in enumerate(taps):
                dy, dx = divmod(t, self.kw)
                phase = (dy % s) * s + dx % s
                out[p, i] = phase * self.c * plane + (dy // s) * self.wq + dx // s
        return out


def pack(spec: Int8PatternSpec, weight: np.ndarray) -> np.ndarray:
    """The kernel's int8 weights: per group, per kept kernel, per chunk of 4 taps, each
    filter's 4 bytes (the broadcast operand of one ``vpdpbusd``)."""
    chunks = spec.derived["chunks"]
    f, c, kh, kw = weight.shape
    flat = weight.reshape(f, c, kh * kw)
    parts = []
    for filters, kernels in spec.groups:
        for ch, p in kernels:
            taps = spec.patterns[p]
            block = np.zeros((chunks, len(filters), 4), np.int8)
            for i, t in enumerate(taps):
                block[i // 4, :, i % 4] = flat[filters, ch, t]
            parts.append(block.reshape(-1))
    if spec.isa == "neon":  # a step's two weight loads may read past a group's last filter
        parts.append(np.zeros(8 * NEON_FILTERS, np.int8))
    return np.concatenate(parts) if parts else np.zeros(1, np.int8)


def starts(spec: Int8PatternSpec, weight: np.ndarray, bias: np.ndarray, zp: int) -> np.ndarray:
    """Each filter's start value, in the groups' filter order: its bias less ``(128 + zp)``
    times the sum of its weights (the uint8 flip's and the zero point's share; on NEON,
    whose ``sdot`` reads int8, ``zp`` times it)."""
    order = [f for filters, _ in spec.groups for f in filters]
    sums = weight.reshape(weight.shape[0], -1).astype(np.int64).sum(1)
    shift = zp if spec.isa == "neon" else 128 + zp
    out = bias.astype(np.int64)[order] - shift * sums[order]
    if np.abs(out).max(initial=0) >= 1 << 31:
        raise ValueError("a filter's start value does not fit in int32")
    return out.astype(np.int32)


def _arr(name: str, ctype: str, values: np.ndarray | list[int]) -> str:
    """A static C array; floats as exact literals (hexadecimal f32)."""
    flat = np.asarray(values).reshape(-1)
    if ctype == "float":
        vals = ", ".join(f"{float(v).hex()}f" for v in flat.astype(np.float32))
    else:
        vals = ", ".join(str(int(v)) for v in flat)
    return f"static const {ctype} {name}[] = {{{vals}}};"


def _vector_tables(spec: Int8PatternSpec) -> tuple[np.ndarray, np.ndarray]:
    """Per wide vector: the mask of its valid lanes (pixels inside the output), and the
    compact output index of its first valid pixel (where its compressed store begins)."""
    d, lanes = spec.derived, spec.lanes
    q = np.arange(d["nv"] * lanes).reshape(d["nv"], lanes)
    valid = (q < d["q"]) & (q % spec.wq < spec.ow)
    masks = (valid * (1 << np.arange(lanes))).sum(1)
    q0 = q[:, 0]
    row, col = q0 // spec.wq, q0 % spec.wq
    dst = np.where(col < spec.ow, row * spec.ow + col, (row + 1) * spec.ow)
    dst = np.minimum(dst, spec.oh * spec.ow)
    return masks, dst


def _tables(spec: Int8PatternSpec) -> tuple[str, list[int]]:
    """The kernel's constant tables (taps, groups, kernels, filters, vectors) as C, and the
    filters in the groups' order."""
    d = spec.derived
    chunks = d["chunks"]
    gk0, gf0, gw0 = [0], [0], [0]
    kch, kpat, filt = [], [], []
    for filters, kernels in spec.groups:
        gk0.append(gk0[-1] + len(kernels))
        gf0.append(gf0[-1] + len(filters))
        gw0.append(gw0[-1] + len(kernels) * chunks * 4 * len(filters))
        kch += [ch * d["plane"] for ch, _ in kernels]
        kpat += [p for _, p in kernels]
        filt += [f * spec.oh * spec.ow for f in filters]
    masks, dst = _vector_tables(spec)
    text = "\n".join(
        [
            _arr("TAPS", "int32_t", spec.tap_offsets(chunks)),
            _arr("GK0", "int32_t", gk0),
            _arr("GF0", "int32_t", gf0),
            _arr("GW0", "int32_t", gw0),
            _arr("KCH", "int32_t", kch or [0]),
            _arr("KPAT", "uint8_t", kpat or [0]),
            _arr("FILT", "int32_t", filt or [0]),
            _arr("MASK", "uint16_t", masks),
            _arr("DST", "int32_t", dst),
        ]
    )
    return text, [f for filters, _ in spec.groups for f in filters]


def _header(spec: Int8PatternSpec, include: str, tables: str) -> str:
    """The kernel source's first lines: includes, geometry and the constant tables."""
    d = spec.derived
    return f"""/* the requantize is IREE's ops one by one: no multiply-add contracted into an FMA */
#pragma GCC optimize("fp-contract=off")
#include <stddef.h>
#include <stdint.h>
#include <{include}>
#define MEMREF(T, n) T* n##_base, T* n, size_t n##_off, size_t n##_size, size_t n##_stride
#define NV {d["nv"]}
#define IMG_IN {d["in_len"]}  /* one image's input bytes: images one after another */
#define IMG_OUT {spec.f * spec.oh * spec.ow}  /* one image's outputs */
#define TILE {d["tile"]}
#define CH {d["chunks"]}
{tables}"""


def _entry(spec: Int8PatternSpec, y_type: str) -> str:
    """The IREE entry's signature and its workgroup's image, group and pixel vectors."""
    return f"""void {spec.symbol}_impl(MEMREF(const int8_t, xm), MEMREF(const int8_t, wm),
                        MEMREF(const int32_t, sm), MEMREF({y_type}, ym), size_t gx, size_t gy,
                        size_t gz) {{
  const int8_t* restrict x = xm + xm_off + gz * (size_t)IMG_IN;
  {y_type}* restrict y = ym + ym_off + gz * (size_t)IMG_OUT;
  const int g = (int)gx;
  const int v0 = (int)gy * TILE, v1 = v0 + TILE < NV ? v0 + TILE : NV;
  const int k0 = GK0[g], k1 = GK0[g + 1], f0 = GF0[g];
  const int8_t* wg = wm + wm_off + GW0[g];
  const int32_t* st = sm + sm_off + f0;"""


def _requantize(spec: Int8PatternSpec, order_f: list[int], lanes: int) -> tuple[str, str]:
    """C of the requantize epilogue on vectors of ``lanes`` sums (``act``, its per-filter
    constant tables ``COL<i>`` in the groups' filter order), and the arguments of a call of
    ``act`` for filter ``f0 + j``."""
    params = "".join(f", v16 c{i}" for i in range(len(spec.columns)))
    cols = "\n".join(_arr(f"COL{i}", "float", col[order_f]) for i, col in enumerate(spec.columns))
    args = "".join(f", SPLAT(COL{i}[f0 + j])" for i in range(len(spec.columns)))
    helpers = f"""#define VL {lanes}
typedef int32_t vs32 __attribute__((vector_size({4 * lanes})));
{epilogue_helpers(lanes, spec.act, params)}
{cols}
"""
    return helpers, args


def generate_neon(spec: Int8PatternSpec) -> str:
    """C source of ``<symbol>_impl(x, w, start, y, group, tile, image)`` for aarch64 with the
    dot product: steps of 8 pixels by up to 8 filters, ``sdot`` by element."""
    tables, order_f = _tables(spec)
    y_type = "int8_t" if spec.act else "int32_t"
    helpers = ""
    if spec.act:
        helpers, args = _requantize(spec, order_f, 4)
        helpers += f"""/* the requantize of 4 sums: the int8 values, as int32 */
#define REQ(a) ((int32x4_t)__builtin_convertvector( \
    act(__builtin_convertvector((vs32)(a), v16){args}), vs32))
"""
        full = """{
        const int16x8_t h = vcombine_s16(vmovn_s32(REQ(acc[j][0])), vmovn_s32(REQ(acc[j][1])));
        vst1_s8(out + FILT[f0 + j], vmovn_s16(h));
      }"""
        part = """{
        int32_t t[8];
        vst1q_s32(t, REQ(acc[j][0]));
        vst1q_s32(t + 4, REQ(acc[j][1]));
        int8_t* o = out + FILT[f0 + j];
        for (int l = 0, n = 0; l < 8; ++l)
          if (m >> l & 1) o[n++] = (int8_t)t[l];
      }"""
    else:
        full = """{
        vst1q_s32(out + FILT[f0 + j], acc[j][0]);
        vst1q_s32(out + FILT[f0 + j] + 4, acc[j][1]);
      }"""
        part = """{
        int32_t t[8];
        vst1q_s32(t, acc[j][0]);
        vst1q_s32(t + 4, acc[j][1]);
        int32_t* o = out + FILT[f0 + j];
        for (int l = 0, n = 0; l < 8; ++l)
          if (m >> l & 1) o[n++] = t[l];
      }"""
    cases = "\n".join(
        f"      case {n}: block(x, wg + 4 * fb, st + fb, y, k0, k1, f0 + fb, GF0[g + 1] - f0, "
        f"v0, v1, {n}); break;"
        for n in range(1, NEON_FILTERS + 1)
    )
    return f"""{_header(spec, "arm_neon.h", tables)}
{helpers}
/* acc += the 4 pixels' tap bytes of a . filter l's 4 weights (lane l of w) */
#define DOT(acc, a, w, l) acc = vdotq_laneq_s32(acc, a, w, l)

/* vectors v0..v1 of NF filters (of the group's GN) from f0: kernels k0..k1, weights wg (the
   group's, from this block's first filter), starts st */
static inline __attribute__((always_inline)) void block(
    const int8_t* restrict x, const int8_t* restrict wg, const int32_t* restrict st,
    {y_type}* restrict y, const int k0, const int k1, const int f0, const int GN, const int v0,
    const int v1, const int NF) {{
  for (int v = v0; v < v1; ++v) {{
    int32x4_t acc[{NEON_FILTERS}][2];
    #pragma GCC unroll 8
    for (int j = 0; j < NF; ++j) acc[j][0] = acc[j][1] = vdupq_n_s32(st[j]);
    const int8_t* xv = x + (size_t)v * 8;
    const int8_t* restrict wk = wg;
    for (int k = k0; k < k1; ++k) {{
      const int8_t* b = xv + KCH[k];
      const int32_t* t = TAPS + KPAT[k] * 4 * CH;
      #pragma GCC unroll 4
      for (int c = 0; c < CH; ++c, wk += 4 * GN) {{
        const int32_t* tc = t + 4 * c;
        /* byte 4p + i of a0 (pixels 0-3) and a1 (4-7): pixel p's tap i */
        const int8x16_t z01 = vzip1q_s8(vld1q_s8(b + tc[0]), vld1q_s8(b + tc[1]));
        const int8x16_t z23 = vzip1q_s8(vld1q_s8(b + tc[2]), vld1q_s8(b + tc[3]));
        const int8x16_t a0 = vreinterpretq_s8_s16(
            vzip1q_s16(vreinterpretq_s16_s8(z01), vreinterpretq_s16_s8(z23)));
        const int8x16_t a1 = vreinterpretq_s8_s16(
            vzip2q_s16(vreinterpretq_s16_s8(z01), vreinterpretq_s16_s8(z23)));
        const int8x16_t w0 = vld1q_s8(wk), w1 = vld1q_s8(wk + 16);
        #define F(j, w, l) if (j < NF) {{ DOT(acc[j][0], a0, w, l); DOT(acc[j][1], a1, w, l); }}
        F(0, w0, 0) F(1, w0, 1) F(2, w0, 2) F(3, w0, 3)
        F(4, w1, 0) F(5, w1, 1) F(6, w1, 2) F(7, w1, 3)
        #undef F
      }}
    }}
    const unsigned m = MASK[v];
    {y_type}* out = y + DST[v];
    if (m == 0xff) {{
      #pragma GCC unroll 8
      for (int j = 0; j < NF; ++j)
        {full}
    }} else {{
      #pragma GCC unroll 8
      for (int j = 0; j < NF; ++j)
        {part}
    }}
  }}
}}

{_entry(spec, y_type)}
  for (int fb = 0; fb < GF0[g + 1] - f0; fb += {NEON_FILTERS}) {{
    const int n = GF0[g + 1] - f0 - fb;
    switch (n < {NEON_FILTERS} ? n : {NEON_FILTERS}) {{
{cases}
      default: break;
    }}
  }}
}}
"""


def generate(spec: Int8PatternSpec) -> str:
    """C source of ``<symbol>_impl(x, w, start, y, group, tile, image)``."""
    if spec.isa == "neon":
        return generate_neon(spec)
    tables, order_f = _tables(spec)
    y_type = "int8_t" if spec.act else "int32_t"
    helpers, store = (
        "",
        (
            "_mm512_mask_storeu_epi32(out + FILT[f0 + j], head, "
            "_mm512_maskz_compress_epi32(m, acc[j]));"
        ),
    )
    if spec.act:
        helpers, args = _requantize(spec, order_f, LANES)
        store = f"""{{
        const v16 r = act(__builtin_convertvector((vs32)acc[j], v16){args});
        const __m512i q = _mm512_maskz_compress_epi32(m, _mm512_cvttps_epi32((__m512)r));
        _mm_mask_storeu_epi8(out + FILT[f0 + j], head, _mm512_cvtepi32_epi8(q));
      }}"""
    cases = "\n".join(
        f"    case {n}: group_tile(x, wg, st, y, k0, k1, f0, v0, v1, {n}); break;"
        for n in range(1, MAX_FILTERS + 1)
    )
    # byte 4j + k of the tap vector is byte 16k + j of the four loads (set_epi8 lists e63..e0)
    order = ", ".join(str(16 * (i % 4) + i // 4) for i in reversed(range(64)))
    return f"""{_header(spec, "immintrin.h", tables)}
{helpers}
/* 16 pixels' 4 tap bytes of one channel: lane j holds pixel j's taps t[0..3], as uint8 */
static inline __m512i taps4(const int8_t* b, const int32_t* t, __m512i order, __m512i flip) {{
  __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i*)(b + t[0])));
  v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i*)(b + t[1])), 1);
  v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i*)(b + t[2])), 2);
  v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i*)(b + t[3])), 3);
  return _mm512_xor_si512(_mm512_permutexvar_epi8(order, v), flip);
}}

/* acc += a (uint8) . the 4 int8 at p, broadcast. In asm: GCC's register allocation of the
   intrinsic copies every accumulator in and out of another register on each use */
#define DPBUSD(acc, a, p) \
  __asm__("vpdpbusd %2%{{1to16%}}, %1, %0" : "+v"(acc) : "v"(a), "m"(*(const int32_t*)(p)))

/* vectors v0..v1 of one group's NF filters (kernels k0..k1, weights wg, starts st) */
static inline __attribute__((always_inline)) void group_tile(
    const int8_t* restrict x, const int8_t* restrict wg, const int32_t* restrict st,
    {y_type}* restrict y, const int k0, const int k1, const int f0, const int v0, const int v1,
    const int NF) {{
  const __m512i order = _mm512_set_epi8({order});
  const __m512i flip = _mm512_set1_epi8((char)0x80);
  for (int v = v0; v < v1; ++v) {{
    __m512i acc[{MAX_FILTERS}];
    #pragma GCC unroll 16
    for (int j = 0; j < NF; ++j) acc[j] = _mm512_set1_epi32(st[j]);
    const int8_t* xv = x + (size_t)v * 16;
    const int8_t* restrict wk = wg;
    for (int k = k0; k < k1; ++k) {{
      const int8_t* b = xv + KCH[k];
      const int32_t* t = TAPS + KPAT[k] * 4 * CH;
      #pragma GCC unroll 4
      for (int c = 0; c < CH; ++c, wk += 4 * NF) {{
        const __m512i a = taps4(b, t + 4 * c, order, flip);
        #pragma GCC unroll 16
        for (int j = 0; j < NF; ++j)
          DPBUSD(acc[j], a, wk + 4 * j);
      }}
    }}
    const __mmask16 m = MASK[v];
    {y_type}* out = y + DST[v];
    /* compress in registers, then one masked store: the compressing store to memory is
       microcoded */
    const __mmask16 head = (__mmask16)((1u << __builtin_popcount(m)) - 1);
    #pragma GCC unroll 16
    for (int j = 0; j < NF; ++j)
      {store}
  }}
}}

{_entry(spec, y_type)}
  switch (GF0[g + 1] - f0) {{
{cases}
    default: break;
  }}
}}
"""
