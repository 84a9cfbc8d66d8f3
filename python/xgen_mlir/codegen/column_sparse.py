"""C for a block-sparse linear layer whose blocks keep whole columns:
``y[M, N] = act(x[M, K] W^T + bias)`` where every block of ``NR`` rows keeps some of its
columns for all its rows (``compress.prune(scheme="block", row_share=0)`` with blocks of a
whole number of vectors of rows).

The orientation is the dense GEMM kernel's (``codegen/dense_gemm.py``), not the row-and-column
kernel's (``codegen/block_sparse.py``): outputs in the vectors, inputs broadcast. A block-row
is one panel of ``NR`` outputs; its kept columns, over all its blocks, are one list, and its
values are already stored column by column, ``[kept column][NR]`` (the compact storage of
blocks that keep all their rows). Per kept column: one index from the table, ``n_vectors``
weight vectors, ``rows`` broadcasts of x read in place (no pack), ``rows x n_vectors`` FMAs
into accumulators that stay in registers; no work per block. Workgroups are (panel group,
M block); a workgroup runs its row tiles one after the other and, for each, every panel of
its group (the tile's rows of x stay in L1 while the panels' values stream past).

NaN/Inf: a pruned weight's product is not computed, so each row's flag (the sum of
``x[m, :] * 0`` over all K, NaN iff the row holds a NaN or Inf) is added to its outputs before
the activation, as the row-and-column kernel does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..target import busy_share
from .block_sparse import _table, math_c
from .dense_gemm import WORKGROUP_RANGE


@dataclass
class ColumnSpec:
    symbol: str
    m: int  # rows of x (tokens / pixels)
    n: int  # outputs, a whole number of panels
    k: int  # inputs
    lanes: int  # f32 per vector
    rows: int  # register tile: rows of x
    n_vectors: int  # register tile: vectors of outputs (a panel: n_vectors x lanes outputs)
    panel_offsets: np.ndarray  # [panels + 1]: each panel's first entry in kept_cols
    kept_cols: np.ndarray  # each panel's kept input columns, rising
    act: tuple[str, ...] = ()
    nan_checks: bool = True
    workers: int = 0  # threads the dispatch runs on (0: not known)

    @property
    def nr(self) -> int:
        return self.n_vectors * self.lanes

    @property
    def panels(self) -> int:
        return self.n // self.nr

    @property
    def group(self) -> int:
        """Panels per workgroup: the most of 8, 4, 2, 1 that keeps IREE's ``workers`` as busy
        as any (a row tile's flags are computed once per workgroup, so more panels share
        them)."""
        best, share = 1, -1.0
        for g in (8, 4, 2, 1):
            s = busy_share(-(-self.panels // g) * self.m_blocks_for(g), self.workers or 1)
            if s > share + 1e-9:
                best, share = g, s
        return best

    def m_blocks_for(self, group: int) -> int:
        """M blocks: one, or as many as give two workgroups per worker when the panel groups
        alone are fewer (whole row tiles each)."""
        groups = -(-self.panels // group)
        want = 2 * max(1, self.workers)
        tiles = -(-self.m // self.rows)
        return max(1, min(tiles, -(-want // groups))) if groups < want else 1

    @property
    def m_block(self) -> int:
        tiles = -(-self.m // self.rows)
        per = -(-tiles // self.m_blocks_for(self.group))
        return per * self.rows

    @property
    def grid(self) -> tuple[int, int, int]:
        return (-(-self.panels // self.group), -(-self.m // self.m_block), 1)


def whole_column_panels(
    n: int,
    block: tuple[int, int],
    block_offsets: np.ndarray,
    row_offsets: np.ndarray,
    lanes: int,
) -> bool:
    """Whether the compact tables describe blocks that all keep all their rows, with blocks
    a whole number of vectors of rows and N whole blocks (the column kernel's panels)."""
    br = block[0]
    if br % lanes or n % br or len(block_offsets) != n // br + 1:
        return False
    return bool(np.all(np.diff(np.asarray(row_offsets)) == br))


def panel_tables(block_offsets: np.ndarray, col_offsets: np.ndarray, panels: int) -> np.ndarray:
    """``[panels + 1]``: each panel's (block-row's) first kept column in the kept list."""
    return np.asarray(col_offsets, np.int64)[np.asarray(block_offsets, np.int64)[: panels + 1]]


def generate(spec: ColumnSpec) -> str:
    """C source with the IREE entry ``<symbol>_impl(x, w, y, panel group, M block)``; ``w`` is
    the compact values (``[kept column][NR]`` per panel) then the bias."""
    col_type = "unsigned short" if spec.k <= 65535 else "int"
    tables = _table("POFF", spec.panel_offsets, "int") + _table("KEPT", spec.kept_cols, col_type)
    body = "\n".join(f"  {s}" for s in spec.act)
    cases = "\n".join(
        f"          case {r}: tile(x, wp, kept, nq, y, bias, fl, {r}); break;"
        for r in range(1, spec.rows)
    )
    flags = "flag_of(x + (size_t)r * K)" if spec.nan_checks else "0.0f"
    nvals = int(spec.panel_offsets[-1]) * spec.nr
    header = (
        f"{spec.symbol}: {spec.m} x {spec.k} -> {spec.n}, whole-column blocks, "
        f"{nvals // spec.nr} kept columns over {spec.panels} panels of {spec.nr}, tile "
        f"{spec.rows}x{spec.nr}, {spec.group} panel(s) per workgroup, M blocks of {spec.m_block}"
    )
    return f"""/* generated by xgen_mlir for {header} */
#include <stddef.h>
typedef float v16 __attribute__((vector_size({4 * spec.lanes})));
typedef float vfu __attribute__((vector_size({4 * spec.lanes}), aligned(4)));
typedef int vi16 __attribute__((vector_size({4 * spec.lanes})));
#define SEL(m, a, b) ((v16)(((m) & (vi16)(a)) | (~(m) & (vi16)(b))))
#define SPLAT(c) ((v16){{0}} + (c))
#define MEMREF(T, n) T* n##_base, T* n, size_t n##_off, size_t n##_size, size_t n##_stride
#define VL {spec.lanes}
#define NV {spec.n_vectors}
#define NR {spec.nr}
#define MR {spec.rows}
#define M {spec.m}
#define N {spec.n}
#define K {spec.k}
#define PANELS {spec.panels}
#define GROUP {spec.group}
#define MC {spec.m_block}
#define NVALS {nvals}
{tables}
{math_c()}
static inline v16 act(v16 v) {{
{body}
  return v;
}}

/* NaN iff row xr of x holds a NaN or an Inf (0 * Inf = NaN), else 0 */
static inline float flag_of(const float* restrict xr) {{
  v16 f = SPLAT(0.0f);
  int k = 0;
  for (; k + VL <= K; k += VL) f += *(const vfu*)(xr + k) * 0.0f;
  float s = 0.0f;
  for (int c = 0; c < VL; ++c) s += f[c];
  for (; k < K; ++k) s += xr[k] * 0.0f;
  return s;
}}

/* R rows x NR outputs of one panel over its nq kept columns: bias in, flags, activation */
static inline __attribute__((always_inline)) void tile(
    const float* restrict x, const float* restrict wp, const {col_type}* restrict kept,
    const int nq, float* restrict y, const float* restrict bias, const float* restrict fl,
    const int R) {{
  v16 acc[MR][NV];
  #pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
    #pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) acc[r][j] = *(const vfu*)(bias + VL * j);
  #pragma GCC unroll 4
  for (int q = 0; q < nq; ++q) {{
    v16 b[NV];
    #pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) b[j] = *(const vfu*)(wp + (size_t)q * NR + VL * j);
    const float* restrict xk = x + kept[q];
    #pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {{
      const float a = xk[(size_t)r * K];
      #pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) acc[r][j] += a * b[j];
    }}
  }}
  #pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
    #pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) *(vfu*)(y + (size_t)r * N + VL * j) = act(acc[r][j] + fl[r]);
}}

void {spec.symbol}_impl(MEMREF(const float, xm), MEMREF(const float, w), MEMREF(float, ym),
                        size_t gx, size_t gy) {{
  const float* restrict x0 = xm + xm_off;
  const float* restrict vals = w + w_off;
  const float* restrict biases = vals + NVALS;
  float* restrict y0 = ym + ym_off;
{WORKGROUP_RANGE}  float fl[MR];
  for (int m0 = m_start; m0 < m_end; m0 += MR) {{
    const int R = m_end - m0 < MR ? m_end - m0 : MR;
    const float* restrict x = x0 + (size_t)m0 * K;
    for (int r = 0; r < R; ++r) fl[r] = {flags};
    for (int p = p0; p < p1; ++p) {{
      const float* restrict wp = vals + (size_t)POFF[p] * NR;
      const {col_type}* restrict kept = KEPT + POFF[p];
      const int nq = POFF[p + 1] - POFF[p];
      const float* restrict bias = biases + (size_t)p * NR;
      float* restrict y = y0 + (size_t)m0 * N + (size_t)p * NR;
      if (R == MR) tile(x, wp, kept, nq, y, bias, fl, MR);
      else {{
        switch (R) {{
{cases}
          default: break;
        }}
      }}
    }}
  }}
}}
"""
