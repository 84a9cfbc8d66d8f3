"""Kernels of a dynamic quantization (``xgen-dynamic-quantize-kernels``): the min and max of a
tensor in one pass, and its quantize by a scale and zero point computed at run time.

A dynamically quantized Linear layer (ONNX ``DynamicQuantizeLinear``, ``quantize_dynamic``)
reads its input three times before the integer matmul: a max, a min, and the quantize
``clamp(roundeven(x / scale) + zp)``. IREE makes each a dispatch of its own: the two
reductions each split in 16 rows and finished in a third dispatch, the quantize with its
division and rounding. MobileBERT dynamic int8 (Intel Xeon, 2 threads): 289 such
quantizations took 6.5 of 30 ms, as much per 128x512 input (about 40 us) as the matmul
after it.

The min/max kernel reads each element once, keeping both in four vectors each: AVX-512DQ's
``vrangeps`` orders -0 below +0 as MLIR's ``maximumf``/``minimumf`` do, and a NaN (which
``vrangeps`` drops) is tracked on the side and makes both results NaN. Each workgroup writes
its chunk's ``(max, min)``; the caller combines the chunks (``partials``).

The quantize kernel's result is that of IREE's code: divide, round half to even, add the zero
point, clamp, narrow to bytes. It multiplies by the scale's reciprocal instead of dividing
(``vdivps`` takes about as long as the rest together) where that cannot change the integer:
the product is within 2^-21 of the quotient, relatively, so where it is farther than that
from a half-integer both round alike; a vector with a lane that close (about one in a
hundred), an Inf or a NaN divides. An ``x - 128`` on the
bytes after it (uint8 read as int8) is a flip of each byte's top bit, done in the kernel.

Both have a scalar loop for what is left and for hosts without AVX-512.
"""

from __future__ import annotations

import math

MINMAX_CHUNK = 32768  # elements per min/max workgroup: 128 KB of f32
QUANTIZE_CHUNK = 8192  # elements per quantize workgroup: 32 KB in, 8 KB out


def partials(n: int) -> int:
    """The min/max kernel's workgroups (each writes one ``(max, min)`` pair) for ``n``
    elements."""
    return max(1, -(-n // MINMAX_CHUNK))


def quantize_workgroups(n: int) -> int:
    return max(1, -(-n // QUANTIZE_CHUNK))


def c_float(v: float) -> str:
    """``v`` as a C float expression, exactly (a hex literal; the infinities and NaN by
    name)."""
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    return f"{float(v).hex()}f"


_HEAD = """#include <stddef.h>
#include <stdint.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#define MEMREF(T, n) T* n##_base, T* n, size_t n##_off, size_t n##_size, size_t n##_stride
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
"""


def minmax(symbol: str, max_init: float, min_init: float) -> str:
    """The C source of ``<symbol>_impl(x, y, workgroup)``: ``y[2g] = maximumf(max_init,
    x[chunk g]...)``, ``y[2g + 1]`` the minimum from ``min_init``."""
    return f"""{_HEAD}#define CHUNK {MINMAX_CHUNK}

/* MLIR's maximumf / minimumf on numbers: -0 < +0 (NaN apart, tracked by the caller) */
static inline float hi2(float a, float b) {{
  return (a > b || (a == b && !__builtin_signbit(a))) ? a : b;
}}
static inline float lo2(float a, float b) {{
  return (a < b || (a == b && __builtin_signbit(a))) ? a : b;
}}

void {symbol}_impl(MEMREF(const float, x), MEMREF(float, y), size_t gx) {{
  const float* xp = x + x_off;
  float* yp = y + y_off;
  size_t i = gx * CHUNK;
  const size_t end = i + CHUNK < x_size ? i + CHUNK : x_size;
  float hi = {c_float(max_init)}, lo = {c_float(min_init)};
  int nan = hi != hi || lo != lo;
#if defined(__AVX512DQ__)
  if (end - i >= 16) {{
    __m512 h0 = _mm512_set1_ps(hi), h1 = h0, h2 = h0, h3 = h0;
    __m512 l0 = _mm512_set1_ps(lo), l1 = l0, l2 = l0, l3 = l0;
    __mmask16 bad = 0;
    for (; i + 64 <= end; i += 64) {{
      const __m512 v0 = _mm512_loadu_ps(xp + i), v1 = _mm512_loadu_ps(xp + i + 16);
      const __m512 v2 = _mm512_loadu_ps(xp + i + 32), v3 = _mm512_loadu_ps(xp + i + 48);
      h0 = _mm512_range_ps(h0, v0, 0x05), l0 = _mm512_range_ps(l0, v0, 0x04);
      h1 = _mm512_range_ps(h1, v1, 0x05), l1 = _mm512_range_ps(l1, v1, 0x04);
      h2 = _mm512_range_ps(h2, v2, 0x05), l2 = _mm512_range_ps(l2, v2, 0x04);
      h3 = _mm512_range_ps(h3, v3, 0x05), l3 = _mm512_range_ps(l3, v3, 0x04);
      bad |= _mm512_cmp_ps_mask(v0, v1, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(v2, v3, _CMP_UNORD_Q);
    }}
    for (; i + 16 <= end; i += 16) {{
      const __m512 v = _mm512_loadu_ps(xp + i);
      h0 = _mm512_range_ps(h0, v, 0x05), l0 = _mm512_range_ps(l0, v, 0x04);
      bad |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    }}
    h0 = _mm512_range_ps(_mm512_range_ps(h0, h1, 0x05), _mm512_range_ps(h2, h3, 0x05), 0x05);
    l0 = _mm512_range_ps(_mm512_range_ps(l0, l1, 0x04), _mm512_range_ps(l2, l3, 0x04), 0x04);
    float hs[16], ls[16];
    _mm512_storeu_ps(hs, h0);
    _mm512_storeu_ps(ls, l0);
    for (int k = 0; k < 16; ++k) hi = hi2(hi, hs[k]), lo = lo2(lo, ls[k]);
    nan |= bad != 0;
  }}
#endif
  for (; i < end; ++i) {{
    const float v = xp[i];
    if (v != v) nan = 1;
    hi = hi2(hi, v), lo = lo2(lo, v);
  }}
  yp[2 * gx] = nan ? NAN : hi;
  yp[2 * gx + 1] = nan ? NAN : lo;
}}
"""


def quantize(
    symbol: str, low: float, high: float, zp_signed: bool, out_signed: bool, flip: bool
) -> str:
    """The C source of ``<symbol>_impl(x, scale, zp, y, workgroup)``: ``y[i] =
    clamp(roundeven(x[i] / scale) + zp, low, high)`` as a byte (``out_signed``: the value
    is an int8's, else a uint8's), its top bit flipped where ``flip``. ``zp`` is one byte,
    int8 or uint8 by ``zp_signed``."""
    zp_type = "int8_t" if zp_signed else "uint8_t"
    out = "(int8_t)(int)r" if out_signed else "(int8_t)(uint8_t)(int)r"
    flip_vector = "q = _mm_xor_si128(q, _mm_set1_epi8((char)0x80));" if flip else ""
    flip_scalar = " ^ 0x80" if flip else ""
    return f"""{_HEAD}#define CHUNK {QUANTIZE_CHUNK}

/* x rounded to an integer, ties to even (the default rounding mode), for |x| < 2^23 */
static inline float round_even(float x) {{
  const float big = __builtin_copysignf(8388608.0f, x);
  return __builtin_fabsf(x) < 8388608.0f ? __builtin_copysignf((x + big) - big, x) : x;
}}

void {symbol}_impl(MEMREF(const float, x), MEMREF(const float, s), MEMREF(const {zp_type}, z),
                   MEMREF(int8_t, y), size_t gx) {{
  const float* xp = x + x_off;
  int8_t* yp = y + y_off;
  const float scale = s[s_off], zp = (float)z[z_off];
  const float low = {c_float(low)}, high = {c_float(high)};
  size_t i = gx * CHUNK;
  const size_t end = i + CHUNK < y_size ? i + CHUNK : y_size;
#if defined(__AVX512F__)
  const __m512 vs = _mm512_set1_ps(scale), vz = _mm512_set1_ps(zp);
  const __m512 vlo = _mm512_set1_ps(low), vhi = _mm512_set1_ps(high);
  /* x * (1 / scale) is within 2^-21 of x / scale, relatively: where that is farther from
     a half-integer, both round to the same integer; elsewhere (and for an Inf or a NaN)
     the vector divides. */
  /* (the reciprocal of a finite scale is at least 2^-128: a subnormal one has 21 bits or
     more, within the bound) */
  const __m512 vr = _mm512_set1_ps(1.0f / scale), half = _mm512_set1_ps(0.5f);
  const __m512 margin = _mm512_set1_ps(0x1p-20f);
  for (; i + 16 <= end; i += 16) {{
    const __m512 in = _mm512_loadu_ps(xp + i);
    __m512 y = _mm512_mul_ps(in, vr);
    __m512 v = _mm512_roundscale_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 tie = _mm512_sub_ps(half, _mm512_abs_ps(_mm512_sub_ps(y, v)));
    const __m512 near = _mm512_mul_ps(_mm512_abs_ps(y), margin);
    if (_mm512_cmp_ps_mask(tie, near, _CMP_GT_OQ) != 0xFFFF) {{
      y = _mm512_div_ps(in, vs);
      v = _mm512_roundscale_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }}
    v = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(v, vz), vlo), vhi);
    __m128i q = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(v));
    {flip_vector}
    _mm_storeu_si128((__m128i*)(yp + i), q);
  }}
#endif
  for (; i < end; ++i) {{
    float r = round_even(xp[i] / scale) + zp;
    r = r < low ? low : r;
    r = r > high ? high : r;
    yp[i] = (int8_t)(({out}){flip_scalar});
  }}
}}
"""
