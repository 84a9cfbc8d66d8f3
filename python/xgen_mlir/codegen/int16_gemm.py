"""C for an integer linear layer with constant weights, exact, on 16-bit multiply-adds:
``y[M, N] = init[N] + sum_k (x[m, k] - zx) * (w[k, n] - zw)`` in i32, x and w int8.

Why 16 bits: an int8 operand minus its zero point lies in [-255, 255], so it fits an int16
exactly, and ``vpmaddwd`` (AVX2, AVX-512BW; ``vpdpwssd`` with VNNI) multiplies 16-bit pairs
and adds each pair into an i32 lane: 2 multiply-adds per 32-bit lane per instruction, twice
an f32 FMA's, with no saturation (a pair's sum is at most 2 * 255^2). The u8 x s8 instruction
(``vpmaddubsw``) that ONNX Runtime and oneDNN use on AVX2 does 4 per lane but saturates the
pair's sum at int16, so it is not the ONNX semantics; the f32 route
(``passes/integer_in_float.py``) is exact but runs at f32's rate.

The layout is the f32 GEMM kernel's (``codegen/dense_gemm.py``), with pairs of k:

- weights, less their zero point, in panels of ``NR = n_vectors x lanes`` columns,
  ``[N / NR][K / 2][NR][2]`` int16 (K even: the pass pads an odd K with a zero input), so one
  vector load holds ``lanes`` columns' two k;
- ``x`` arrives as int16 already less its zero point (an elementwise conversion before the
  call, which IREE fuses into the op that quantizes it), read in place: each row's pair
  ``x[m, k..k+1]`` is one 32-bit broadcast;
- the register tile, the k blocks (partial sums in ``y`` between them), the M blocks and the
  panel groups per workgroup are GemmSpec's; the accumulator starts at ``init`` (a bias
  quantized to i32, or zeros).

Integer sums wrap as i32 additions do in the reference, so the result equals IREE's integer
code bit for bit.

With an epilogue (``spec.act``: the dequantize after the layer and the elementwise ops after
it, ``passes/epilogue_c.py``) the last k block converts each i32 tile to f32 as ``sitofp``
does and applies the epilogue before storing, so ``y`` is f32 and the dequantized (GELU'd,
residual-added) output never goes through memory as i32; partial sums between k blocks stay
i32 in ``y``'s bytes. Its column constants follow the start in the start buffer (f32 bits,
padded to whole panels); its tensors are read at the tile's rows and columns, or, for a
tensor of one row (``column_tensors``: a dequantize scale computed at run time, the input's
scale times each column's), at its columns only.
"""

from __future__ import annotations

import numpy as np

from .dense_gemm import WORKGROUP_RANGE, GemmSpec, epilogue_helpers

#: The widest weight magnitude the kernel takes, after the zero point: int8 less an int8.
MAX_OPERAND = 255


def pack_weights(
    w: np.ndarray, init: np.ndarray, nr: int, columns: list[np.ndarray] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's weight buffer from ``w`` [N, K] (integers less their zero point, K even)
    and its accumulator start ``init`` [N]: int16 panels ``[N/nr][K/2][nr][2]`` (zero columns
    past N), and the start as int32 padded to whole panels, followed by the epilogue's
    ``columns`` [N] as f32 bits padded the same way."""
    n, k = w.shape
    assert k % 2 == 0, "K is padded to even by the pass"
    if np.abs(w).max(initial=0) > MAX_OPERAND:
        raise ValueError(f"weights beyond +-{MAX_OPERAND} do not fit the 16-bit kernel exactly")
    panels = -(-n // nr)
    wp = np.zeros((panels * nr, k), np.int16)
    wp[:n] = w
    packed = wp.reshape(panels, nr, k // 2, 2).transpose(0, 2, 1, 3)
    start = np.zeros(panels * nr, np.int32)
    start[:n] = init
    rows = [start]
    for vec in columns or []:
        row = np.zeros(panels * nr, np.float32)
        row[:n] = vec
        rows.append(row.view(np.int32))
    return np.ascontiguousarray(packed).ravel(), np.concatenate(rows)


def generate(spec: GemmSpec, column_tensors: tuple[int, ...] = ()) -> str:
    """C source with the IREE entry ``<symbol>_impl(x, w, start, t0.., y, panel group, M
    block)``; ``spec.k`` is even, ``spec.lanes`` the i32 lanes of a vector (8: AVX2, 16:
    AVX-512BW). With ``spec.act`` (an epilogue) ``y`` is f32; ``column_tensors`` are the
    indices of its tensors that hold one row (read at the columns only)."""
    epi = bool(spec.act)
    cases = "\n".join(
        f"        case {r}: tile(x, wp, y, start, ts, {r}, k0, k1, first, last, cols); break;"
        for r in range(1, spec.rows)
    )
    shape = f"{spec.m} x {spec.k} -> {spec.n}, tile {spec.rows}x{spec.nr}, int16 pairs"
    blocks = f"kc {spec.k_block}, mc {spec.m_block}, {spec.group} panel(s) per workgroup"
    if epi:
        blocks += ", f32 epilogue"
    if spec.lanes == 16:
        vec = """typedef __m512i vi;
#define LOADU(p) _mm512_loadu_si512((const void*)(p))
#define STOREU(p, v) _mm512_storeu_si512((void*)(p), (v))
#define STOREF(p, v) _mm512_storeu_ps((void*)(p), (__m512)(v))
#define SPLAT32(v) _mm512_set1_epi32(v)
#ifdef __AVX512VNNI__
#define MADD(acc, a, b) _mm512_dpwssd_epi32((acc), (a), (b))
#else
#define MADD(acc, a, b) _mm512_add_epi32((acc), _mm512_madd_epi16((a), (b)))
#endif"""
    elif spec.lanes == 8:
        vec = """typedef __m256i vi;
#define LOADU(p) _mm256_loadu_si256((const __m256i*)(p))
#define STOREU(p, v) _mm256_storeu_si256((__m256i*)(p), (v))
#define STOREF(p, v) _mm256_storeu_ps((float*)(p), (__m256)(v))
#define SPLAT32(v) _mm256_set1_epi32(v)
#ifdef __AVXVNNI__
#define MADD(acc, a, b) _mm256_dpwssd_avx_epi32((acc), (a), (b))
#else
#define MADD(acc, a, b) _mm256_add_epi32((acc), _mm256_madd_epi16((a), (b)))
#endif"""
    else:
        raise ValueError(f"no 16-bit multiply-add kernel for {spec.lanes} i32 lanes")
    nt = spec.tensors
    params = "".join(f", v16 c{i}" for i in range(spec.columns))
    params += "".join(f", v16 t{i}" for i in range(nt))
    args = "".join(f", COLUMN({i})" for i in range(spec.columns))
    args += "".join(f", TENSOR({i})" for i in range(nt))
    tensor_params = "".join(f"MEMREF(const float, t{i}), " for i in range(nt))
    tensor_bases = "".join(f"t{i} + t{i}_off, " for i in range(nt))
    strides = ", ".join("0" if i in column_tensors else "N" for i in range(nt)) or "0"
    y_type = "float" if epi else "int32_t"
    # the epilogue's vector types and helpers (dense_gemm's names, which its C uses)
    floats = (
        f"""{epilogue_helpers(spec.lanes, spec.act, params)}
/* the epilogue's operands at row r, vector j: a column constant (after the start, one padded
   row of PANELS * NR f32 each) and a tensor (rows of N, or one row: stride 0) */
#define COLUMN(i) (*(const vfu*)((const float*)start + (size_t)((i) + 1) * PANELS * NR + VL * j))
#define TENSOR(i) (full ? *(const vfu*)(ts[i] + (size_t)r * TSTRIDE[i] + VL * j) \\
                        : load_part(ts[i] + (size_t)r * TSTRIDE[i] + VL * j, cols - VL * j))
"""
        if epi
        else ""
    )
    store = (
        f"""      if (last) {{
        const v16 v = act(__builtin_convertvector((vs32)acc[r][j], v16){args});
        if (full) STOREF(y + (size_t)r * N + VL * j, v);
        else {{
          float f[VL];
          __builtin_memcpy(f, &v, sizeof f);
          for (int c = 0; c < VL && VL * j + c < cols; ++c) y[(size_t)r * N + VL * j + c] = f[c];
        }}
        continue;
      }}"""
        if epi
        else ""
    )
    return f"""/* generated by xgen_mlir for {spec.symbol}: {shape}, {blocks} */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
{vec}
typedef int32_t vs32 __attribute__((vector_size(sizeof(vi))));
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
#define NT {nt}
static const size_t TSTRIDE[] = {{{strides}}};  /* each tensor's row stride (0: one row) */
{floats}
/* x[r, k] and x[r, k + 1] as one 32-bit lane, in every lane */
static inline vi pair(const int16_t* p) {{
  int32_t v;
  __builtin_memcpy(&v, p, sizeof v);
  return SPLAT32(v);
}}

/* i32 partial sums in y's bytes (f32 once an epilogue has run on them) */
static inline int32_t part_at(const {y_type}* p) {{
  int32_t v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}}
static inline void set_part({y_type}* p, int32_t v) {{ __builtin_memcpy(p, &v, sizeof v); }}

/* R rows x NR columns of y over k0..k1 (even): start from the start row (first k block) or y's
   partial sums; store the sums, or after the last k block (with an epilogue) its f32 values;
   cols < NR: the last panel, whose columns past N are neither read nor stored */
static inline __attribute__((always_inline)) void tile(
    const int16_t* restrict x, const int16_t* restrict wp, {y_type}* restrict y,
    const int32_t* restrict start, const float* const* ts, const int R, const int k0,
    const int k1, const int first, const int last, const int cols) {{
  vi acc[MR][NV];
  int32_t part[NR] __attribute__((aligned(64)));
  const int full = cols == NR;
  (void)ts; (void)last;
  #pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
    #pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {{
      if (first) acc[r][j] = LOADU(start + VL * j);
      else if (full) acc[r][j] = LOADU(y + (size_t)r * N + VL * j);
      else {{
        for (int c = 0; c < VL; ++c)
          part[VL * j + c] = VL * j + c < cols ? part_at(y + (size_t)r * N + VL * j + c) : 0;
        acc[r][j] = LOADU(part + VL * j);
      }}
    }}
  const int16_t* restrict wk = wp + (size_t)k0 * NR;
  for (int k = k0; k < k1; k += 2, wk += 2 * NR) {{
    vi b[NV];
    #pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) b[j] = LOADU(wk + 2 * VL * j);
    #pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {{
      const vi a = pair(x + (size_t)r * K + k);
      #pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) acc[r][j] = MADD(acc[r][j], a, b[j]);
    }}
  }}
  #pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
    #pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {{
{store}
      if (full) STOREU(y + (size_t)r * N + VL * j, acc[r][j]);
      else {{
        STOREU(part + VL * j, acc[r][j]);
        for (int c = 0; c < VL && VL * j + c < cols; ++c)
          set_part(y + (size_t)r * N + VL * j + c, part[VL * j + c]);
      }}
    }}
}}

void {spec.symbol}_impl(MEMREF(const int16_t, xm), MEMREF(const int16_t, w),
                        MEMREF(const int32_t, s), {tensor_params}MEMREF({y_type}, ym),
                        size_t gx, size_t gy) {{
  const int16_t* restrict x0 = xm + xm_off;
  const int16_t* restrict weights = w + w_off;
  const int32_t* restrict starts = s + s_off;
  {y_type}* restrict y0 = ym + ym_off;
  const float* tensors[NT ? NT : 1] = {{{tensor_bases}}};
  const float* ts[NT ? NT : 1];
{WORKGROUP_RANGE}  for (int k0 = 0; k0 < K; k0 += KC) {{
    const int k1 = k0 + KC < K ? k0 + KC : K;
    const int first = k0 == 0, last = k1 == K;
    for (int p = p0; p < p1; ++p) {{
      const int16_t* restrict wp = weights + (size_t)p * K * NR;
      const int32_t* restrict start = starts + (size_t)p * NR;
      const int cols = N - p * NR < NR ? N - p * NR : NR;
      int m0 = m_start;
      for (; m0 + MR <= m_end; m0 += MR) {{
        for (int i = 0; i < NT; ++i) ts[i] = tensors[i] + (size_t)m0 * TSTRIDE[i] + (size_t)p * NR;
        tile(x0 + (size_t)m0 * K, wp, y0 + (size_t)m0 * N + (size_t)p * NR, start, ts, MR, k0,
             k1, first, last, cols);
      }}
      if (m0 < m_end) {{
        const int16_t* restrict x = x0 + (size_t)m0 * K;
        {y_type}* restrict y = y0 + (size_t)m0 * N + (size_t)p * NR;
        for (int i = 0; i < NT; ++i) ts[i] = tensors[i] + (size_t)m0 * TSTRIDE[i] + (size_t)p * NR;
        switch (m_end - m0) {{
{cases}
          default: break;
        }}
      }}
    }}
  }}
}}
"""
