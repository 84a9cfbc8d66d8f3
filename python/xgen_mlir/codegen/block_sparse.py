"""C for a block-sparse linear layer: ``y[M, N] = act(x[M, K] W^T + bias)`` from compact
block storage (``xgen_sparse.bcsr_linear``).

Vectors run along M (tokens, pixels), not along the weights: the kernel reads ``x^T`` [K, MP]
(MP = M rounded up to whole tiles, the wrapper transposes and pads), so a kept weight is one
scalar broadcast into an FMA and any kept-row / kept-column set costs only what it keeps. The
register tile (``target.block_tile``) is ``rows`` weight rows x ``m_vectors`` vectors of
tokens: for each kept column of a block, ``m_vectors`` loads of x^T and ``r x m_vectors``
FMAs (``r`` = the block's kept rows, a compile-time constant in each ``switch`` case, so the
accumulators stay in registers). After a block its accumulators are added to the block-row's
tile (on the stack, in L1) at the kept rows' places; after the block-row's blocks, the bias
(the tile's start), the NaN flags, the activation, and the store of ``rows`` consecutive
outputs per token.

Nothing but the compact tables is indexed at run time: block list per block-row, kept rows
and columns per block (static const arrays in the object), values column by column. One
workgroup per block-row; it runs every token tile, so its weights stay in L1.

NaN/Inf: ``flags[m]`` (the wrapper's sum of ``x[m, :] * 0``: NaN iff token m has a NaN or
Inf input) is added to every output of token m, so a pruned weight meeting a NaN/Inf input
gives NaN as the dense product does (where every weight of the row is kept and the input is
Inf, dense gives Inf and this NaN).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np


@dataclass
class BcsrSpec:
    symbol: str
    m: int  # rows of x (tokens / pixels)
    n: int  # outputs
    k: int  # inputs
    block: tuple[int, int]  # (rows, cols) of a block
    lanes: int  # f32 per vector
    m_vectors: int  # vectors of tokens per register tile
    block_offsets: np.ndarray
    row_offsets: np.ndarray
    col_offsets: np.ndarray
    kept_rows: np.ndarray
    kept_cols: np.ndarray
    act: tuple[str, ...] = ()
    nan_checks: bool = True

    @property
    def nm(self) -> int:
        """Vectors per token tile: fewer for few tokens (no tile of padding)."""
        return self.m_vectors if self.m >= self.m_vectors * self.lanes else 1

    @property
    def m_tile(self) -> int:
        return self.nm * self.lanes

    @property
    def m_padded(self) -> int:
        return -(-self.m // self.m_tile) * self.m_tile

    @property
    def block_rows(self) -> int:
        return -(-self.n // self.block[0])


#: ln 2 to 9 bits: n * LN2_HI is exact for the exponents exp can take
LN2_HI = 0.693359375
#: erf is +-1 to f32 precision past this (1 - erf(4) = 1.5e-8, a quarter of an ulp of 1)
ERF_CLAMP = 4.0


@functools.cache
def erf_coefficients(p: int = 5, q: int = 5) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """erf(x) ~ x P(x^2) / Q(x^2) on [-4, 4] (Q's constant term 1): a least-squares fit of the
    linearized rational form at Chebyshev points, reweighted by 1/Q so that it approaches the
    fit of the ratio itself. Degree 5/5 gives 4.4e-7 max abs error evaluated in f32
    (tests/python/test_block_pruning.py checks it against math.erf)."""
    n = 4000
    x = np.cos(np.linspace(0.0, np.pi, n)) * ERF_CLAMP / 2 + ERF_CLAMP / 2
    x = x[x > 0]
    t = x * x
    y = np.array([math.erf(v) for v in x]) / x
    a = np.hstack(
        [t[:, None] ** np.arange(p + 1), -(y[:, None] * t[:, None] ** np.arange(1, q + 1))]
    )
    w = np.ones_like(t)
    for _ in range(8):
        c, *_ = np.linalg.lstsq(a * w[:, None], y * w, rcond=None)
        den = np.polyval(np.concatenate([[1.0], c[p + 1 :]])[::-1], t)
        w = 1.0 / np.abs(den)
    return tuple(float(v) for v in c[: p + 1]), (1.0, *(float(v) for v in c[p + 1 :]))


def _horner(coeffs: tuple[float, ...], var: str) -> str:
    """C for the polynomial with ``coeffs`` (lowest first) in vector ``var``, Horner form."""
    expr = f"SPLAT({float(np.float32(coeffs[-1])).hex()}f)"
    for c in coeffs[-2::-1]:
        expr = f"({expr} * {var} + SPLAT({float(np.float32(c)).hex()}f))"
    return expr


def math_c() -> str:
    """Vector erf / exp / tanh / roundeven for fused epilogues (GELU in both of torch-mlir's forms). No
    libm: the object is linked into IREE's embedded ELF. NaN in gives NaN out; +-Inf gives
    erf, tanh = +-1 and exp = its clamp's value (0 or 1.7e38, not Inf)."""
    num, den = erf_coefficients()
    inv_fact = tuple(1.0 / math.factorial(i) for i in range(8))
    return f"""static inline v16 xg_clamp(v16 x, float lo, float hi) {{
  x = SEL(x > SPLAT(hi), SPLAT(hi), x);
  return SEL(x < SPLAT(lo), SPLAT(lo), x);
}}
static inline v16 xg_erf(v16 x) {{
  x = xg_clamp(x, -{ERF_CLAMP}f, {ERF_CLAMP}f);
  const v16 t = x * x;
  return x * {_horner(num, "t")} / {_horner(den, "t")};
}}
/* 2^n exp(r), n = round(x / ln 2), r = x - n ln 2 in two parts (exact first product), degree-7
   Taylor polynomial for |r| <= ln 2 / 2 (relative error 6e-9) */
static inline v16 xg_exp(v16 x) {{
  x = xg_clamp(x, -87.0f, 88.0f);
  const v16 big = SPLAT(12582912.0f); /* 1.5 * 2^23: adding it rounds to an integer */
  const v16 n = (x * SPLAT({float(np.float32(1 / math.log(2))).hex()}f) + big) - big;
  v16 r = x - n * SPLAT({LN2_HI.hex()}f);
  r = r - n * SPLAT({float(np.float32(math.log(2) - LN2_HI)).hex()}f);
  const vi16 e = (__builtin_convertvector(n, vi16) + 127) << 23;
  return {_horner(inv_fact, "r")} * (v16)e;
}}
static inline v16 xg_tanh(v16 x) {{
  return SPLAT(1.0f) - SPLAT(2.0f) / (xg_exp(x + x) + SPLAT(1.0f));
}}
/* round half to even (a quantize): |x| + 2^23 - 2^23 rounds |x| < 2^23 to an integer in the
   default rounding mode; larger values (and NaN) are kept; the sign goes back on (-0.4 -> -0) */
static inline v16 xg_roundeven(v16 x) {{
  const vi16 sign = (vi16)x & ((vi16){{0}} + (-2147483647 - 1)); /* the sign bit */
  const v16 a = (v16)((vi16)x ^ sign);
  const v16 r = SEL(a < SPLAT(8388608.0f), (a + SPLAT(8388608.0f)) - SPLAT(8388608.0f), a);
  return (v16)((vi16)r | sign);
}}
"""


def _table(name: str, arr: np.ndarray, ctype: str = "int") -> str:
    body = ",".join(str(int(v)) for v in arr)
    return f"static const {ctype} {name}[{max(len(arr), 1)}] = {{{body or '0'}}};\n"


def pack_values(values: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """The kernel's weight buffer: the compact values, then the bias."""
    return np.concatenate([np.asarray(values, np.float32).ravel(), np.asarray(bias, np.float32)])


def generate(spec: BcsrSpec) -> str:
    """C source with the IREE entry ``<symbol>_impl(xT, w, [flags,] y, block-row)``."""
    voff = np.concatenate(
        [[0], np.cumsum(np.diff(spec.row_offsets) * np.diff(spec.col_offsets))]
    ).astype(np.int64)
    small = "unsigned short" if max(spec.n, spec.k) < 65536 else "int"
    tables = (
        _table("BLOCK_OFF", spec.block_offsets)
        + _table("ROW_OFF", spec.row_offsets)
        + _table("COL_OFF", spec.col_offsets)
        + _table("VAL_OFF", voff, "long")
        + _table("ROWS", spec.kept_rows, small)
        + _table("COLS", spec.kept_cols, small)
    )
    br = spec.block[0]
    cases = "\n".join(
        f"      case {r}: run_block(xT, vals + VAL_OFF[b], ROWS + ROW_OFF[b], COLS + COL_OFF[b], "
        f"COL_OFF[b + 1] - COL_OFF[b], {r}, n0, m0, tile); break;"
        for r in range(1, br + 1)
    )
    body = "\n".join(f"  {s}" for s in spec.act)
    flags_arg = "MEMREF(const float, f), " if spec.nan_checks else ""
    flags_add = "        t += *(const vfu*)(f + f_off + m0 + VL * j);" if spec.nan_checks else ""
    return f"""/* generated by xgen_mlir for {spec.symbol}: {spec.m} x {spec.k} -> {spec.n}, blocks {br}x{spec.block[1]}, {len(spec.row_offsets) - 1} kept blocks, tiles of {spec.m_tile} tokens */
#include <stddef.h>
typedef float v16 __attribute__((vector_size({4 * spec.lanes})));
typedef float vfu __attribute__((vector_size({4 * spec.lanes}), aligned(4)));
typedef int vi16 __attribute__((vector_size({4 * spec.lanes})));
#define SEL(m, a, b) ((v16)(((m) & (vi16)(a)) | (~(m) & (vi16)(b))))
#define SPLAT(c) ((v16){{0}} + (c))
#define MEMREF(T, n) T* n##_base, T* n, size_t n##_off, size_t n##_size, size_t n##_stride
#define VL {spec.lanes}
#define M {spec.m}
#define MP {spec.m_padded}
#define MT {spec.m_tile}
#define NM {spec.nm}
#define N {spec.n}
#define BR {br}
#define NVALS {int(voff[-1])}
{tables}
{math_c()}
static inline v16 act(v16 v) {{
{body}
  return v;
}}

/* one block: its kept columns streamed through R rows x NM vectors of accumulators */
static inline __attribute__((always_inline)) void run_block(
    const float* restrict xT, const float* restrict w, const {small}* restrict rows,
    const {small}* restrict cols, const int ncols, const int R, const int n0, const int m0,
    v16 tile[BR][NM]) {{
  v16 acc[BR][NM];
  #pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
    #pragma GCC unroll 4
    for (int j = 0; j < NM; ++j) acc[r][j] = SPLAT(0.0f);
  for (int c = 0; c < ncols; ++c) {{
    const float* restrict xr = xT + (size_t)cols[c] * MP + m0;
    v16 xv[NM];
    #pragma GCC unroll 4
    for (int j = 0; j < NM; ++j) xv[j] = *(const vfu*)(xr + VL * j);
    const float* restrict wc = w + c * R;
    #pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
      #pragma GCC unroll 4
      for (int j = 0; j < NM; ++j) acc[r][j] += wc[r] * xv[j];
  }}
  #pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
    #pragma GCC unroll 4
    for (int j = 0; j < NM; ++j) tile[rows[r] - n0][j] += acc[r][j];
}}

void {spec.symbol}_impl(MEMREF(const float, x), MEMREF(const float, w), {flags_arg}MEMREF(float, y),
                        size_t gx) {{
  const float* restrict xT = x + x_off;
  const float* restrict vals = w + w_off;
  const float* restrict bias = vals + NVALS;
  float* restrict out = y + y_off;
  const int i = (int)gx;
  const int n0 = i * BR;
  const int nr = N - n0 < BR ? N - n0 : BR;
  for (int m0 = 0; m0 < MP; m0 += MT) {{
    v16 tile[BR][NM];
    for (int r = 0; r < BR; ++r)
      for (int j = 0; j < NM; ++j) tile[r][j] = SPLAT(r < nr ? bias[n0 + r] : 0.0f);
    for (int b = BLOCK_OFF[i]; b < BLOCK_OFF[i + 1]; ++b) {{
      switch (ROW_OFF[b + 1] - ROW_OFF[b]) {{
{cases}
      }}
    }}
    float t_out[BR][MT] __attribute__((aligned(64)));
    for (int r = 0; r < BR; ++r)
      for (int j = 0; j < NM; ++j) {{
        v16 t = tile[r][j];
{flags_add}
        *(v16*)(&t_out[r][VL * j]) = act(t);
      }}
    const int mend = M - m0 < MT ? M - m0 : MT;
    for (int mm = 0; mm < mend; ++mm) {{
      float* restrict yr = out + (size_t)(m0 + mm) * N + n0;
      for (int r = 0; r < nr; ++r) yr[r] = t_out[r][mm];
    }}
  }}
}}
"""
