"""C for a dense linear layer with constant weights: ``y[M, N] = act(x[M, K] W^T + bias)``.

The classic register-blocked GEMM (Goto's scheme, as BLAS libraries write it by hand):

- The weights are packed at compile time into panels of ``NR = n_vectors x lanes`` output
  columns, ``[N / NR][K][NR]`` (the last panel zero-padded), so the k-loop reads one panel
  row as ``n_vectors`` aligned vector loads; the bias follows, padded the same way.
- The register tile is ``rows x n_vectors`` accumulators (``target.gemm_tile``): per k, the
  panel's vectors are loaded once and each of ``rows`` inputs ``x[m, k]`` is broadcast into
  ``n_vectors`` FMAs. ``x`` is read in place (row-major, no transpose, no padding); the last
  rows of a tile that M does not fill run a tile with fewer rows, a compile-time constant
  per ``switch`` case, so the accumulators stay in registers.
- Cache blocking: k runs in blocks of ``kc`` (a panel's block stays in L1 while every row
  tile of the M block streams past it; the x block, ``mc x kc``, stays in L2), partial sums
  go through ``y`` between k blocks; the bias is the first block's start, the epilogue
  (the elementwise ops after the layer that translate to C, ``passes/epilogue_c.py``) runs
  after the last. Its per-column constants follow the bias in the weight buffer, padded the
  same way; its tensors (a residual) are inputs read at the tile's own rows and columns.
- Workgroups: ``(panel group, M block, batch)``; a group is ``panels_per_group`` panels.
  A batched GEMM (``batch`` > 1: Winograd's ``[a*a, tiles, C] x [a*a, C, F]``) has one
  weight buffer per batch, back to back, and reads and writes ``x`` and ``y`` at the batch's
  offset.

Every product is computed, so NaN and Inf propagate as in the dense reference; sums are in k
order per k block (reassociation only).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..target import busy_share
from .block_sparse import math_c


@dataclass
class GemmSpec:
    symbol: str
    m: int  # rows of x (tokens / pixels)
    n: int  # outputs
    k: int  # inputs
    lanes: int  # f32 per vector
    rows: int  # register tile: rows of x
    n_vectors: int  # register tile: vectors of outputs
    kc: int = 256  # k block
    mc: int = 0  # M block (0: from kc and l2_bytes)
    panels_per_group: int = 0  # panels per workgroup (0: chosen from N)
    l2_bytes: int = 512 * 1024
    act: tuple[str, ...] = ()
    columns: int = 0  # the epilogue's per-column constants (c0, c1, ...)
    tensors: int = 0  # the epilogue's tensors of y's shape (t0, t1, ...)
    batch: int = 1  # independent GEMMs, each with its own weights (the z workgroup id)
    workers: int = 0  # threads the dispatch runs on (0: not known)

    @property
    def nr(self) -> int:
        return self.n_vectors * self.lanes

    @property
    def panels(self) -> int:
        return -(-self.n // self.nr)

    @property
    def group(self) -> int:
        """Panels per workgroup: as given (the tuner measures 1 and 2 per layer), else 2 (two
        panels share each x row read), or 1 where that would leave under 8 workgroups or keep
        the ``workers`` less busy (``target.busy_share``: IREE hands out workgroups in
        reservations of 8)."""
        if self.panels_per_group:
            return self.panels_per_group
        if self.panels < 16:
            return 1
        if not self.workers:
            return 2
        rest = self.m_blocks * self.batch
        shares = {g: busy_share(-(-self.panels // g) * rest, self.workers) for g in (2, 1)}
        return 2 if shares[2] >= shares[1] else 1

    @property
    def groups(self) -> int:
        return -(-self.panels // self.group)

    @property
    def k_block(self) -> int:
        return max(1, min(self.kc, self.k))

    @property
    def m_block(self) -> int:
        """Rows per workgroup: whole row tiles whose x block fills at most half of L2."""
        if self.mc:
            return self.mc
        fit = (self.l2_bytes // 2) // (4 * self.k_block)
        tiles = max(1, fit // self.rows)
        return min(tiles * self.rows, -(-self.m // self.rows) * self.rows)

    @property
    def m_blocks(self) -> int:
        return -(-self.m // self.m_block)

    @property
    def grid(self) -> tuple[int, int, int]:
        return (self.groups, self.m_blocks, self.batch)

    @property
    def ids(self) -> int:
        """Workgroup ids the entry takes (x, y, and z for a batch)."""
        return 3 if self.batch > 1 else 2

    @property
    def weights_length(self) -> int:
        """Floats of one batch's weight buffer."""
        return self.panels * self.nr * (self.k + 1 + self.columns)


#: C: the panels ``p0 .. p1`` and rows ``m_start .. m_end`` of workgroup (``gx``, ``gy``) of a
#: kernel laid out in panel groups (``GROUP`` of ``PANELS``) and M blocks (``MC`` of ``M``).
WORKGROUP_RANGE = """  const int p0 = (int)gx * GROUP;
  const int p1 = p0 + GROUP < PANELS ? p0 + GROUP : PANELS;
  const int m_start = (int)gy * MC;
  const int m_end = m_start + MC < M ? m_start + MC : M;
"""


def pack_weights(
    w: np.ndarray, bias: np.ndarray, nr: int, columns: list[np.ndarray] | None = None
) -> np.ndarray:
    """The kernel's weight buffer from ``w`` [N, K] and ``bias`` [N]: panels ``[N/nr][K][nr]``
    (zero columns past N), then the bias and each of the epilogue's ``columns`` [N] padded
    to whole panels."""
    n, k = w.shape
    panels = -(-n // nr)
    wp = np.zeros((panels * nr, k), np.float32)
    wp[:n] = w
    packed = wp.reshape(panels, nr, k).transpose(0, 2, 1)
    rows = []
    for vec in [bias, *(columns or [])]:
        row = np.zeros(panels * nr, np.float32)
        row[:n] = vec
        rows.append(row)
    return np.concatenate([np.ascontiguousarray(packed).ravel(), *rows])


def epilogue_helpers(lanes: int, act: tuple[str, ...], params: str) -> str:
    """C shared by the GEMM kernels that run an epilogue (``passes/epilogue_c.py``): its
    vector types and helpers, ``act`` (its statements on ``v``, with the operands
    ``params``) and ``load_part``; after ``#define VL``."""
    body = "\n".join(f"  {s}" for s in act)
    return f"""typedef float v16 __attribute__((vector_size({4 * lanes})));
typedef float vfu __attribute__((vector_size({4 * lanes}), aligned(4)));
typedef int vi16 __attribute__((vector_size({4 * lanes})));
#define SEL(m, a, b) ((v16)(((m) & (vi16)(a)) | (~(m) & (vi16)(b))))
#define SPLAT(c) ((v16){{0}} + (c))
{math_c()}
static inline v16 act(v16 v{params}) {{
{body}
  return v;
}}

/* n < VL floats from p, zeros after them (a partial panel's last columns) */
static inline v16 load_part(const float* p, int n) {{
  float t[VL] __attribute__((aligned(64)));
  for (int c = 0; c < VL; ++c) t[c] = c < n ? p[c] : 0.0f;
  return *(const v16*)t;
}}"""


def generate(spec: GemmSpec) -> str:
    """C source with the IREE entry ``<symbol>_impl(x, w, t0.., y, panel group, M block)``."""
    cases = "\n".join(
        f"        case {r}: tile(x, wp, y, bias, ts, {r}, k0, k1, first, last, cols); break;"
        for r in range(1, spec.rows)
    )
    params = "".join(f", v16 c{i}" for i in range(spec.columns))
    params += "".join(f", v16 t{i}" for i in range(spec.tensors))
    args = "".join(f", COLUMN({i})" for i in range(spec.columns))
    args += "".join(f", TENSOR({i})" for i in range(spec.tensors))
    tensor_params = "".join(f"MEMREF(const float, t{i}), " for i in range(spec.tensors))
    tensor_bases = "".join(f"t{i} + t{i}_off, " for i in range(spec.tensors))
    shape = f"{spec.m} x {spec.k} -> {spec.n}, tile {spec.rows}x{spec.nr}"
    if spec.batch > 1:
        shape = f"{spec.batch} x ({shape})"
    gz = ", size_t gz" if spec.batch > 1 else ""
    no_gz = "" if spec.batch > 1 else "\n  const size_t gz = 0;"
    blocks = f"kc {spec.k_block}, mc {spec.m_block}, {spec.group} panel(s) per workgroup"
    return f"""/* generated by xgen_mlir for {spec.symbol}: {shape}, {blocks} */
#include <stddef.h>
#define MEMREF(T, n) T* n##_base, T* n, size_t n##_off, size_t n##_size, size_t n##_stride
#define VL {spec.lanes}
#define NV {spec.n_vectors}
#define NR {spec.nr}
#define MR {spec.rows}
#define M {spec.m}
#define N {spec.n}
#define K {spec.k}
#define KC {spec.k_block}
#define MC {spec.m_block}
#define PANELS {spec.panels}
#define GROUP {spec.group}
#define NT {spec.tensors}
{epilogue_helpers(spec.lanes, spec.act, params)}
/* the epilogue's operands at row r, vector j: a column constant (after the bias, one
   padded row of PANELS * NR each) and a tensor of y's shape */
#define COLUMN(i) (*(const vfu*)(bias + (size_t)((i) + 1) * PANELS * NR + VL * j))
#define TENSOR(i) (full ? *(const vfu*)(ts[i] + (size_t)r * N + VL * j) \
                        : load_part(ts[i] + (size_t)r * N + VL * j, cols - VL * j))

/* R rows x NR columns of y over k0..k1: start from the bias (first k block) or y, store the
   sums (or, after the last k block, the epilogue's values); cols < NR: the last panel, whose
   columns past N are not stored */
static inline __attribute__((always_inline)) void tile(
    const float* restrict x, const float* restrict wp, float* restrict y,
    const float* restrict bias, const float* const* ts, const int R, const int k0,
    const int k1, const int first, const int last, const int cols) {{
  v16 acc[MR][NV];
  float part[MR][NR] __attribute__((aligned(64)));
  const int full = cols == NR;
  #pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
    #pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {{
      if (first) acc[r][j] = *(const vfu*)(bias + VL * j);
      else if (full) acc[r][j] = *(const vfu*)(y + (size_t)r * N + VL * j);
      else {{
        for (int c = 0; c < VL; ++c)
          part[r][VL * j + c] = VL * j + c < cols ? y[(size_t)r * N + VL * j + c] : 0.0f;
        acc[r][j] = *(const v16*)(&part[r][VL * j]);
      }}
    }}
  const float* restrict xk = x + k0;
  const float* restrict wk = wp + (size_t)k0 * NR;
  for (int k = 0; k < k1 - k0; ++k) {{
    v16 b[NV];
    #pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) b[j] = *(const vfu*)(wk + (size_t)k * NR + VL * j);
    #pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {{
      const float a = xk[(size_t)r * K + k];
      #pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) acc[r][j] += a * b[j];
    }}
  }}
  #pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
    #pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {{
      const v16 v = last ? act(acc[r][j]{args}) : acc[r][j];
      if (full) *(vfu*)(y + (size_t)r * N + VL * j) = v;
      else {{
        *(v16*)(&part[r][VL * j]) = v;
        for (int c = 0; c < VL && VL * j + c < cols; ++c)
          y[(size_t)r * N + VL * j + c] = part[r][VL * j + c];
      }}
    }}
}}

void {spec.symbol}_impl(MEMREF(const float, xm), MEMREF(const float, w), {tensor_params}
                        MEMREF(float, ym), size_t gx, size_t gy{gz}) {{{no_gz}
  const float* tensors[NT ? NT : 1] = {{{tensor_bases}}};
  for (int i = 0; i < NT; ++i) tensors[i] += gz * (size_t)M * N;
  const float* ts[NT ? NT : 1];
  const float* restrict x0 = xm + xm_off + gz * (size_t)M * K;
  const float* restrict weights = w + w_off + gz * (size_t){spec.weights_length};
  const float* restrict biases = weights + (size_t)PANELS * NR * K;
  float* restrict y0 = ym + ym_off + gz * (size_t)M * N;
{WORKGROUP_RANGE}  for (int k0 = 0; k0 < K; k0 += KC) {{
    const int k1 = k0 + KC < K ? k0 + KC : K;
    const int first = k0 == 0, last = k1 == K;
    for (int p = p0; p < p1; ++p) {{
      const float* restrict wp = weights + (size_t)p * K * NR;
      const float* restrict bias = biases + (size_t)p * NR;
      const int cols = N - p * NR < NR ? N - p * NR : NR;
      int m0 = m_start;
      for (; m0 + MR <= m_end; m0 += MR) {{
        const float* restrict x = x0 + (size_t)m0 * K;
        float* restrict y = y0 + (size_t)m0 * N + (size_t)p * NR;
        for (int i = 0; i < NT; ++i) ts[i] = tensors[i] + (size_t)m0 * N + (size_t)p * NR;
        tile(x, wp, y, bias, ts, MR, k0, k1, first, last, cols);
      }}
      if (m0 < m_end) {{
        const float* restrict x = x0 + (size_t)m0 * K;
        float* restrict y = y0 + (size_t)m0 * N + (size_t)p * NR;
        for (int i = 0; i < NT; ++i) ts[i] = tensors[i] + (size_t)m0 * N + (size_t)p * NR;
        switch (m_end - m0) {{
{cases}
          default: break;
        }}
      }}
    }}
  }}
}}
"""
