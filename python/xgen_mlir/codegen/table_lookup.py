"""A kernel reading a 256-entry table once per int8 element (``xgen-int8-tables``).

IREE lowers the lookup (``tensor.extract`` at a computed index) to one scalar load per
element with the index moved out of and the value back into a vector: EfficientNet-B0's SiLU
tables over 1.2M elements took 0.97 ms on two threads (Intel Xeon, AVX-512). The kernel does
what no vector gather of bytes can: with AVX512-VBMI, ``vpermi2b`` looks 64 bytes up in a
128-byte table at once, so a 256-byte table is two of them and a blend on each index's top
bit. An f32 table is read by ``vgatherdps``, 16 lookups at once (AVX-512F). Elsewhere the
kernel is the scalar loop (which the compiler may vectorize for the target it is given).

The table is an operand and the element count the operands' size, so one kernel serves
every lookup of a shape and element type (``xgen-int8-tables`` installs it once); each
workgroup takes ``CHUNK`` elements (the dispatch's grid is the count over it, rounded up).
"""

from __future__ import annotations

CHUNK = 16384  # elements per workgroup: 16 KB of int8 in, 16 or 64 KB out

_TYPES = {"i8": "int8_t", "f32": "float"}


def workgroups(n: int) -> int:
    return max(1, -(-n // CHUNK))


def generate(symbol: str, out: str) -> str:
    """The C source of ``<symbol>_impl(x, table, y, workgroup)``: ``y[i] = table[x[i] +
    128]`` over the workgroup's chunk. ``out``: the table's and result's element type."""
    ty = _TYPES[out]
    vector = ""
    if out == "i8":
        vector = """#if defined(__AVX512VBMI__)
  const __m512i t0 = _mm512_loadu_si512(tp), t1 = _mm512_loadu_si512(tp + 64);
  const __m512i t2 = _mm512_loadu_si512(tp + 128), t3 = _mm512_loadu_si512(tp + 192);
  const __m512i flip = _mm512_set1_epi8((char)0x80);
  for (; i < end; i += 64) {
    const size_t left = end - i;
    const __mmask64 m = left >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << left) - 1);
    /* x + 128 as a byte: entries 0-127 by its low 7 bits from t0:t1, 128-255 from t2:t3 */
    const __m512i at = _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, xp + i), flip);
    const __m512i lo = _mm512_permutex2var_epi8(t0, at, t1);
    const __m512i hi = _mm512_permutex2var_epi8(t2, at, t3);
    _mm512_mask_storeu_epi8(yp + i, m,
                            _mm512_mask_blend_epi8(_mm512_movepi8_mask(at), lo, hi));
  }
#endif"""
    else:  # f32: 16 lookups per gather
        vector = """#if defined(__AVX512F__)
  const __m512i off = _mm512_set1_epi32(128);
  for (; i + 16 <= end; i += 16) {
    const __m512i at =
        _mm512_add_epi32(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)(xp + i))), off);
    _mm512_storeu_ps(yp + i, _mm512_i32gather_ps(at, tp, 4));
  }
#endif"""
    return f"""#include <stddef.h>
#include <stdint.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#define MEMREF(T, n) T* n##_base, T* n, size_t n##_off, size_t n##_size, size_t n##_stride
#define CHUNK {CHUNK}

void {symbol}_impl(MEMREF(const int8_t, x), MEMREF(const {ty}, t), MEMREF({ty}, y), size_t gx) {{
  const int8_t* xp = x + x_off;
  const {ty}* tp = t + t_off;
  {ty}* yp = y + y_off;
  size_t i = gx * CHUNK;
  const size_t end = i + CHUNK < y_size ? i + CHUNK : y_size;
{vector}
  for (; i < end; ++i) yp[i] = tp[(uint8_t)(xp[i] ^ 0x80)];
}}
"""
