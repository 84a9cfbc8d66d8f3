"""C for a block-sparse linear layer: ``y[M, N] = act(x[M, K] W^T + bias)`` from compact
block storage (``xgen_sparse.bcsr_linear``).

Vectors run along M (tokens, pixels), not along the weights, so a kept weight is one scalar
broadcast into an FMA and any kept-row / kept-column set costs only what it keeps. A
generated pack dispatch (``generate_pack``) lays x out in token tiles, ``[MP / MT][K][MT]`` (MT tokens per tile, MP = M rounded
up to whole tiles, zero padded), so one tile's columns are contiguous and a chunk of
``kc`` of them (at most 16 KiB) stays in L1.

Each kept block is a ``switch`` case on its (kept rows, kept columns) pair, both
compile-time constants: for each kept column, ``d`` vector loads of x and ``r x d`` FMAs
into accumulators that stay in registers (``d`` vectors of tokens per pass, the most that
fit the register file beside them); then added to the block-row's tile (on the stack, in
L1) at the kept rows' places. A workgroup owns ``group`` block-rows and, per token tile and
chunk of columns, runs every block of each of them in that chunk: the chunk of x is read
from L2 once and reused by all of them from L1. Column indices are stored as byte offsets
inside their chunk (16 bits), so a column costs one table load and no address arithmetic.
After the last chunk: the bias (the tile's start), the NaN flags, the activation, and the
store: 8 outputs at a time transposed in registers to one vector per token. Where the output
is only the next kernel's x (a transformer's FFN), the tile rows are stored as they are, in
that kernel's packed layout, and it skips its pack (``packed_out``, ``flag_rows``).

Nothing but the compact tables is indexed at run time: per block-row and chunk its first
block, per block its case, kept rows and column offsets (static const arrays in the
object), values column by column.

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

from ..target import busy_share

#: vectors of tokens per token tile: 4 x 8 on AVX2, 4 x 16 on AVX-512 (blocks keeping up to half
#: their rows run it in one pass with their accumulators in registers)
TOKEN_VECTORS = 4


@dataclass
class BcsrSpec:
    symbol: str
    m: int  # rows of x (tokens / pixels)
    n: int  # outputs
    k: int  # inputs
    block: tuple[int, int]  # (rows, cols) of a block
    lanes: int  # f32 per vector
    m_vectors: int  # vectors of tokens per token tile (fewer where M is smaller)
    block_offsets: np.ndarray
    row_offsets: np.ndarray
    col_offsets: np.ndarray
    kept_rows: np.ndarray
    kept_cols: np.ndarray
    act: tuple[str, ...] = ()
    nan_checks: bool = True
    registers: int = 16  # vector registers the register tiles may use
    workers: int = 0  # threads the dispatch runs on (0: not known)
    chunk_bytes: int = 16 * 1024  # the x chunk a workgroup's block-rows share from L1
    tile_bytes: int = 16 * 1024  # the workgroup's output tiles (on the stack, in L1)
    flag_rows: int = 1  # rows of NaN flags after the packed x (its producer's workgroups)
    packed_out: bool = False  # write y packed for the next kernel (``packed_out_size``)

    @property
    def nm(self) -> int:
        """Vectors per token tile: fewer for few tokens (no whole vector of padding), whole
        groups of 8 tokens (the pack transposes 8 x 8 blocks)."""
        step = max(1, 8 // self.lanes)
        nm = max(1, min(self.m_vectors, -(-self.m // self.lanes)))
        return -(-nm // step) * step

    @property
    def m_tile(self) -> int:
        return self.nm * self.lanes

    @property
    def m_padded(self) -> int:
        return -(-self.m // self.m_tile) * self.m_tile

    @property
    def block_rows(self) -> int:
        return -(-self.n // self.block[0])

    @property
    def kc(self) -> int:
        """Columns per chunk: whole column tiles of blocks, one tile's chunk of x at most
        ``chunk_bytes`` (and byte offsets inside it fit 16 bits)."""
        bc = self.block[1]
        limit = min(self.chunk_bytes, 65536) // (4 * self.m_tile)
        return max(bc, limit // bc * bc)

    @property
    def group(self) -> int:
        """Block-rows per workgroup: as many as fit (each chunk of x is read from L2 once for
        all of them; their tiles together at most ``tile_bytes``), or fewer where that keeps
        IREE's ``workers`` busier (``target.busy_share``)."""
        per_row = self.block[0] * self.nm * self.lanes * 4
        best, share = 1, -1.0
        for g in (24, 16, 12, 8, 6, 4, 3, 2, 1):
            if g > 1 and g * per_row > self.tile_bytes:
                continue
            s = busy_share(-(-self.block_rows // g), self.workers) if self.workers else 1.0
            if s > share + 1e-9:
                best, share = g, s
        return best

    @property
    def workgroups(self) -> int:
        return -(-self.block_rows // self.group)

    def pass_vectors(self, r: int) -> int:
        """Token vectors per pass for blocks keeping ``r`` rows: the most (dividing the tile)
        whose ``r x d`` accumulators, ``d`` inputs and a broadcast fit the registers."""
        for d in range(self.nm, 0, -1):
            if self.nm % d == 0 and r * d + d + 2 <= self.registers:
                return d
        return 1


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


def horner(coeffs: tuple[float, ...], var: str) -> str:
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
  return x * {horner(num, "t")} / {horner(den, "t")};
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
  return {horner(inv_fact, "r")} * (v16)e;
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
    body = ",".join(map(str, np.asarray(arr, np.int64).ravel().tolist()))
    return f"static const {ctype} {name}[{max(len(arr), 1)}] = {{{body or '0'}}};\n"


def pack_values(values: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """The kernel's weight buffer: the compact values, then the bias."""
    return np.concatenate([np.asarray(values, np.float32).ravel(), np.asarray(bias, np.float32)])


def _block_cases(spec: BcsrSpec) -> tuple[list[tuple[int, int]], np.ndarray]:
    """The distinct (kept rows, kept columns) pairs of the blocks, and each block's index."""
    pairs = list(
        zip(np.diff(spec.row_offsets).tolist(), np.diff(spec.col_offsets).tolist(), strict=True)
    )
    cases = sorted(set(pairs))
    index = {p: i for i, p in enumerate(cases)}
    return cases, np.array([index[p] for p in pairs], np.int64)


def _chunk_starts(spec: BcsrSpec) -> np.ndarray:
    """``[block_rows][chunks + 1]``: each block-row's first block in each chunk of columns
    (blocks are stored by rising column tile), the last entry its end."""
    kc = spec.kc
    chunks = -(-spec.k // kc)
    first_col = spec.kept_cols[spec.col_offsets[:-1]] if len(spec.kept_cols) else np.zeros(0)
    chunk_of = np.asarray(first_col, np.int64) // kc  # kc is whole column tiles
    starts = np.zeros((spec.block_rows, chunks + 1), np.int64)
    for i in range(spec.block_rows):
        lo, hi = int(spec.block_offsets[i]), int(spec.block_offsets[i + 1])
        starts[i] = lo + np.searchsorted(chunk_of[lo:hi], np.arange(chunks + 1))
    return starts


def _col_type(spec: BcsrSpec) -> str:
    """The column offsets' C type: 16 bits where a chunk's bytes fit (always, for the blocks
    block pruning makes: a column tile of 4 vectors)."""
    return "unsigned short" if spec.kc * 4 * spec.m_tile <= 65536 else "unsigned int"


def _case_function(spec: BcsrSpec, r: int, c: int) -> str:
    d = spec.pass_vectors(r)
    return f"""static inline __attribute__((always_inline)) void blk_{r}_{c}(
    const float* restrict xs, const float* restrict w, const unsigned short* restrict rows,
    const {_col_type(spec)}* restrict cols, char* restrict tile) {{
  #pragma GCC unroll 1
  for (int h = 0; h < NM; h += {d}) {{
    v16 acc[{r}][{d}];
    #pragma GCC unroll 16
    for (int i = 0; i < {r}; ++i)
      #pragma GCC unroll 8
      for (int j = 0; j < {d}; ++j) acc[i][j] = SPLAT(0.0f);
    #pragma GCC unroll 4
    for (int cc = 0; cc < {c}; ++cc) {{
      const float* restrict xr = (const float*)((const char*)xs + cols[cc]) + VL * h;
      v16 xv[{d}];
      #pragma GCC unroll 8
      for (int j = 0; j < {d}; ++j) xv[j] = *(const v16*)(xr + VL * j);
      #pragma GCC unroll 16
      for (int i = 0; i < {r}; ++i) {{
        const float wv = w[cc * {r} + i];
        #pragma GCC unroll 8
        for (int j = 0; j < {d}; ++j) acc[i][j] += wv * xv[j];
      }}
    }}
    #pragma GCC unroll 16
    for (int i = 0; i < {r}; ++i)
      #pragma GCC unroll 8
      for (int j = 0; j < {d}; ++j) *(v16*)(tile + rows[i] + (h + j) * sizeof(v16)) += acc[i][j];
  }}
}}"""


def packed_x_size(spec: BcsrSpec) -> int:
    """Floats of the packed x buffer: the token tiles, then ``flag_rows`` rows of NaN flags
    (``nan_checks``) that the kernel adds up."""
    return spec.k * spec.m_padded + (spec.flag_rows * spec.m_padded if spec.nan_checks else 0)


def packed_out_size(spec: BcsrSpec) -> int:
    """Floats of y written packed (``packed_out``): the next kernel's x, ``[MP / MT][N][MT]``,
    then, with ``nan_checks``, one row of flags per workgroup (its outputs' ``y * 0`` per
    token; the next kernel adds the rows, so no workgroup waits for another)."""
    return spec.n * spec.m_padded + (spec.workgroups * spec.m_padded if spec.nan_checks else 0)


#: C: an 8 x 8 transpose of ``v8`` rows in registers (the pack and the kernel's stores)
TRANSPOSE8 = """/* r[i] = row i of an 8 x 8 block -> r[c] = its column c */
static inline __attribute__((always_inline)) void transpose8(v8 r[8]) {
  v8 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = SH(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[i + 1] = SH(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int i = 0; i < 8; i += 4)
    for (int h = 0; h < 2; ++h) {
      u[i + 2 * h] = SH(t[i + h], t[i + h + 2], 0, 1, 8, 9, 4, 5, 12, 13);
      u[i + 2 * h + 1] = SH(t[i + h], t[i + h + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    }
  for (int c = 0; c < 4; ++c) {
    r[c] = SH(u[c], u[c + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    r[c + 4] = SH(u[c], u[c + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}
"""


def generate_pack(spec: BcsrSpec) -> str:
    """C source with the IREE entry ``<symbol>_pack_impl(x, packed, token tile)``: one token
    tile of x ``[M][K]`` transposed to ``[K][MT]`` (rows past M zero) by 8 x 8 blocks, and,
    with ``nan_checks``, the tile's flags (the sum of ``x * 0`` per token) after all tiles."""
    flags = (
        "    *(v8u*)(out + (size_t)K * MP + m0 + mb) = fl;" if spec.nan_checks else "    (void)fl;"
    )
    return f"""/* generated by xgen_mlir: {spec.symbol}'s x {spec.m} x {spec.k} in tiles of {spec.m_tile} tokens */
#include <stddef.h>
typedef float v8 __attribute__((vector_size(32)));
typedef float v8u __attribute__((vector_size(32), aligned(4)));
#define MEMREF(T, n) T* n##_base, T* n, size_t n##_off, size_t n##_size, size_t n##_stride
#define M {spec.m}
#define K {spec.k}
#define MT {spec.m_tile}
#define MP {spec.m_padded}
#define SH __builtin_shufflevector

{TRANSPOSE8}
void {spec.symbol}_pack_impl(MEMREF(const float, x), MEMREF(float, o), size_t gx) {{
  const float* restrict xs = x + x_off;
  float* restrict out = o + o_off;
  const int m0 = (int)gx * MT;
  float* restrict tile = out + (size_t)m0 * K;
  for (int mb = 0; mb < MT; mb += 8) {{
    v8 fl = {{0}};
    int k = 0;
    for (; k + 8 <= K; k += 8) {{
      v8 r[8];
      for (int i = 0; i < 8; ++i) {{
        const int m = m0 + mb + i;
        r[i] = m < M ? *(const v8u*)(xs + (size_t)m * K + k) : (v8){{0}};
      }}
      transpose8(r);
      for (int c = 0; c < 8; ++c) {{
        *(v8u*)(tile + (size_t)(k + c) * MT + mb) = r[c];
        fl += r[c] * 0.0f;
      }}
    }}
    for (; k < K; ++k) {{
      v8 v;
      for (int i = 0; i < 8; ++i) {{
        const int m = m0 + mb + i;
        v[i] = m < M ? xs[(size_t)m * K + k] : 0.0f;
      }}
      *(v8u*)(tile + (size_t)k * MT + mb) = v;
      fl += v * 0.0f;
    }}
{flags}
  }}
}}
"""


def _flags_c(spec: BcsrSpec) -> str:
    """C adding token ``m0 + VL * j``'s NaN flags (every row of them) to ``t``."""
    if not spec.nan_checks:
        return ""
    return """          for (int f = 0; f < FLAG_ROWS; ++f)
            t += *(const vfu*)(xall + (size_t)K * MP + (size_t)f * MP + m0 + VL * j);"""


def _store_c(spec: BcsrSpec) -> str:
    """C storing the workgroup's tiles after the last chunk (bias in, flags added, activated).
    Packed (``packed_out``): each output's tile row is the next kernel's x row as it is, one
    vector store per vector of tokens, and the outputs' ``y * 0`` summed per token into this
    workgroup's row of flags. Else ``y[M][N]``: the group's outputs are consecutive, so 8 at
    a time are transposed (8 x 8, in registers) to 8 outputs per token, one vector store each
    (element by element at the edge of N)."""
    if spec.packed_out:
        flags = (
            "\n".join(
                [
                    "    for (int j = 0; j < NM; ++j)",
                    "      *(v16*)(out + (size_t)N * MP + gx * MP + m0 + VL * j) = fl[j];",
                ]
            )
            if spec.nan_checks
            else "    (void)fl;"
        )
        return f"""    v16 fl[NM];
    for (int j = 0; j < NM; ++j) fl[j] = SPLAT(0.0f);
    for (int g = 0; g < ng; ++g)
      for (int r = 0; r < BR; ++r) {{
        const int n = (i0 + g) * BR + r;
        if (n >= N) break;
        for (int j = 0; j < NM; ++j) {{
          v16 t = tile[g][r][j];
{_flags_c(spec)}
          t = act(t);
          *(v16*)(out + (size_t)m0 * N + (size_t)n * MT + VL * j) = t;
          fl[j] += t * 0.0f;
        }}
      }}
{flags}"""
    return f"""    const v16* restrict rows_of = (const v16*)tile;
    const int q_end = ng * BR, nbase = i0 * BR;
    const int q_valid = N - nbase < q_end ? N - nbase : q_end;
    for (int q0 = 0; q0 < q_valid; q0 += 8) {{
      float t_out[8][MT] __attribute__((aligned(64)));
      for (int i = 0; i < 8; ++i)
        for (int j = 0; j < NM; ++j) {{
          v16 t = q0 + i < q_end ? rows_of[(q0 + i) * NM + j] : SPLAT(0.0f);
{_flags_c(spec)}
          *(v16*)(&t_out[i][VL * j]) = act(t);
        }}
      const int nq = q_valid - q0 < 8 ? q_valid - q0 : 8;
      for (int mb = 0; mb < MT; mb += 8) {{
        v8 r[8];
        for (int i = 0; i < 8; ++i) r[i] = *(const v8*)(&t_out[i][mb]);
        transpose8(r);
        for (int c = 0; c < 8; ++c) {{
          const int m = m0 + mb + c;
          if (m >= M) break;
          float* restrict yr = out + (size_t)m * N + nbase + q0;
          if (nq == 8)
            *(v8u*)yr = r[c];
          else
            for (int i = 0; i < nq; ++i) yr[i] = r[c][i];
        }}
      }}
    }}"""


def generate(spec: BcsrSpec) -> str:
    """C source with the IREE entry ``<symbol>_impl(packed x, w, y, workgroup)``."""
    voff = np.concatenate(
        [[0], np.cumsum(np.diff(spec.row_offsets) * np.diff(spec.col_offsets))]
    ).astype(np.int64)
    br = spec.block[0]
    kc, chunks = spec.kc, -(-spec.k // spec.kc)
    cases, case_of = _block_cases(spec)
    col_bytes = (np.asarray(spec.kept_cols, np.int64) % kc) * (4 * spec.m_tile)
    tables = (
        _table("CHUNK_START", _chunk_starts(spec).ravel())
        + _table("ROW_OFF", spec.row_offsets)
        + _table("COL_OFF", spec.col_offsets)
        + _table("VAL_OFF", voff, "long")
        + _table("CASE", case_of, "unsigned char" if len(cases) < 256 else "int")
        + _table(
            "ROWS", np.asarray(spec.kept_rows) % br * spec.nm * 4 * spec.lanes, "unsigned short"
        )
        + _table("COLS", col_bytes, _col_type(spec))
    )
    functions = "\n".join(_case_function(spec, r, c) for r, c in cases)
    switch = "\n".join(
        f"            case {i}: blk_{r}_{c}(xs, wp, rp, cp, tg); "
        f"wp += {r * c}; rp += {r}; cp += {c}; break;"
        for i, (r, c) in enumerate(cases)
    )
    body = "\n".join(f"  {s}" for s in spec.act)
    return f"""/* generated by xgen_mlir for {spec.symbol}: {spec.m} x {spec.k} -> {spec.n}, blocks {br}x{spec.block[1]}, {len(spec.row_offsets) - 1} kept blocks, tiles of {spec.m_tile} tokens, {spec.group} block-rows per workgroup, chunks of {kc} columns */
#include <stddef.h>
typedef float v16 __attribute__((vector_size({4 * spec.lanes})));
typedef float vfu __attribute__((vector_size({4 * spec.lanes}), aligned(4)));
typedef int vi16 __attribute__((vector_size({4 * spec.lanes})));
typedef float v8 __attribute__((vector_size(32)));
typedef float v8u __attribute__((vector_size(32), aligned(4)));
#define SH __builtin_shufflevector
{TRANSPOSE8}
#define SEL(m, a, b) ((v16)(((m) & (vi16)(a)) | (~(m) & (vi16)(b))))
#define SPLAT(c) ((v16){{0}} + (c))
#define MEMREF(T, n) T* n##_base, T* n, size_t n##_off, size_t n##_size, size_t n##_stride
#define VL {spec.lanes}
#define M {spec.m}
#define K {spec.k}
#define MP {spec.m_padded}
#define MT {spec.m_tile}
#define NM {spec.nm}
#define N {spec.n}
#define BR {br}
#define NBR {spec.block_rows}
#define G {spec.group}
#define KC {kc}
#define CHUNKS {chunks}
#define NVALS {int(voff[-1])}
#define FLAG_ROWS {spec.flag_rows}
{tables}
{math_c()}
static inline v16 act(v16 v) {{
{body}
  return v;
}}

{functions}

void {spec.symbol}_impl(MEMREF(const float, x), MEMREF(const float, w), MEMREF(float, y),
                        size_t gx) {{
  const float* restrict xall = x + x_off;
  const float* restrict vals = w + w_off;
  const float* restrict bias = vals + NVALS;
  float* restrict out = y + y_off;
  const int i0 = (int)gx * G;
  const int ng = NBR - i0 < G ? NBR - i0 : G;
  v16 tile[G][BR][NM];
  for (int m0 = 0; m0 < MP; m0 += MT) {{
    const float* restrict xt = xall + (size_t)m0 * K;
    for (int g = 0; g < ng; ++g)
      for (int r = 0; r < BR; ++r) {{
        const int n = (i0 + g) * BR + r;
        for (int j = 0; j < NM; ++j) tile[g][r][j] = SPLAT(n < N ? bias[n] : 0.0f);
      }}
    for (int q = 0; q < CHUNKS; ++q) {{
      const float* restrict xs = xt + (size_t)q * KC * MT;
      for (int g = 0; g < ng; ++g) {{
        const int i = i0 + g;
        const int b0 = CHUNK_START[i * (CHUNKS + 1) + q], b1 = CHUNK_START[i * (CHUNKS + 1) + q + 1];
        if (b0 == b1) continue;
        const float* restrict wp = vals + VAL_OFF[b0];
        const unsigned short* restrict rp = ROWS + ROW_OFF[b0];
        const {_col_type(spec)}* restrict cp = COLS + COL_OFF[b0];
        char* restrict tg = (char*)tile[g];
        for (int b = b0; b < b1; ++b) {{
          switch (CASE[b]) {{
{switch}
          }}
        }}
      }}
    }}
{_store_c(spec)}
  }}
}}
"""
