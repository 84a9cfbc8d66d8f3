"""What the generated kernels' bf16 variants share: the weights' pairing and the C helpers.

``vdpbf16ps`` multiplies pairs of bf16 values held in one 32-bit lane (element 2i in the low
half, 2i + 1 in the high half) and adds both products to an f32 sum. So a kernel's reduction
runs over pairs: its weights are rounded to bf16 (nearest even, ``ml_dtypes``) and paired
along the reduction at compile time (``pair_rows``), and its activations are rounded the same
way as it reads them (``TO_BF16``, ``cvtne`` = round to nearest even).
"""

from __future__ import annotations

import numpy as np

from ..dtypes import bfloat16


def pair_rows(w: np.ndarray) -> np.ndarray:
    """Rows 2i and 2i + 1 of ``w`` (2-D, the reduction along rows; a zero row after an odd
    count) rounded to bf16 and packed into one 32-bit word per column, returned as f32 bits
    (the kernels' weight arrays are f32 buffers)."""
    w = np.asarray(w, np.float32)
    if len(w) % 2:
        w = np.pad(w, ((0, 1), (0, 0)))
    bits = w.astype(bfloat16()).view(np.uint16).astype(np.uint32)
    return (bits[0::2] | (bits[1::2] << 16)).view(np.float32)


def header(kernel: str) -> str:
    """The includes, and a compile error naming the kernel on a CPU without AVX512-BF16."""
    return f"""#include <stdint.h>
#include <immintrin.h>
#ifndef __AVX512BF16__
#error "xgen_mlir's bf16 {kernel} kernel needs AVX512-BF16 (-march=native on such a CPU)"
#endif
"""


def _converter(scaled: bool) -> str:
    """C of ``to_bf16``: n floats as words of bf16 pairs in order (a zero half after an odd
    n), rounded to nearest even, 32 at a time, then 16 under a mask. ``scaled``:
    ``to_bf16_scaled``, of ``x * s`` (a per-channel scale of the input, a squeeze-excite's
    that xgen-scale-to-weights had moved onto a conv's weights), multiplied in f32 first."""

    def load(at: str, mask: str = "") -> str:
        one = (
            f"_mm512_maskz_loadu_ps({mask}, {{}} + {at})"
            if mask
            else f"_mm512_loadu_ps({{}} + {at})"
        )
        return f"_mm512_mul_ps({one.format('x')}, {one.format('s')})" if scaled else one.format("x")

    name, s_param = ("to_bf16_scaled", "const float* restrict s, ") if scaled else ("to_bf16", "")
    params = f"const float* restrict x, {s_param}uint32_t* restrict out, int n"
    return f"""static inline void {name}({params}) {{
  int k = 0;
  for (; k + 32 <= n; k += 32)
    _mm512_storeu_si512((void*)(out + k / 2),
                        (__m512i)_mm512_cvtne2ps_pbh({load("k + 16")}, {load("k")}));
  for (; k < n; k += 16) {{
    const int m = n - k < 16 ? n - k : 16;
    const __mmask16 mask = (__mmask16)((1u << m) - 1u);
    const __m256bh b = _mm512_cvtneps_pbh({load("k", "mask")});
    _mm256_mask_storeu_epi16((void*)((uint16_t*)out + k), mask, (__m256i)b);
  }}
  if (n % 2) ((uint16_t*)out)[n] = 0;
}}
"""


TO_BF16 = _converter(scaled=False)
TO_BF16_SCALED = _converter(scaled=True)


def amx_header(kernel: str) -> str:
    """A compile error naming the kernel on a CPU without AMX-BF16 (after ``header``)."""
    return f"""#ifndef __AMX_BF16__
#error "xgen_mlir's AMX {kernel} kernel needs AMX-BF16 (-march=native on such a CPU)"
#endif
"""


# What the AMX kernels share: Linux's permission for the process to use the tiles' state
# (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, a raw system call: the kernels' objects
# have no libc; granted once per process, asking again is cheap), and the one tile shape they
# use: every tile 16 rows of 64 bytes (16 f32, or 16 pairs of bf16), palette 1.
AMX_C = """static int amx_ready(void) {
  long ret;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(158L), "D"(0x1023L), "S"(18L)
                   : "rcx", "r11", "memory");
  return ret == 0;
}
struct amx_config {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} __attribute__((packed, aligned(64)));
static inline void amx_configure(void) {
  struct amx_config cfg;
  for (int b = 0; b < 64; ++b) ((uint8_t*)&cfg)[b] = 0;
  cfg.palette = 1;
  for (int t = 0; t < 8; ++t) { cfg.colsb[t] = 64; cfg.rows[t] = 16; }
  _tile_loadconfig(&cfg);
}
"""
