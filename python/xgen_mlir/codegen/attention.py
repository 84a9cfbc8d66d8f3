"""C for one self-attention core: ``O = softmax(score(Q K^T)) V`` per head, as one dispatch.

IREE runs a transformer's attention as four or more dispatches (the ``Q K^T`` batch matmul,
its scale and mask with the softmax, the ``P V`` batch matmul, the transposes between the
heads' layout and the tokens'), and each writes its tensor to memory: the scores and the
probabilities are ``heads x T x T`` floats, more than the layer's activations at T = 128.
This kernel keeps them in L1: a workgroup is one head and a block of query rows; for each
register tile of ``MR`` query rows it computes that tile's score rows, their softmax and their
products with V, then moves on, so a score never leaves the stack.

- ``Q``, ``K``, ``V`` and ``O`` are read and written in place through strides (head, token,
  feature), as the projections' outputs lie (``[T, 3 x heads x D]`` for a fused QKV): the
  transposes and slices between them and the batch matmuls are index arithmetic here. ``V``'s
  and ``O``'s features must be contiguous (vector loads and stores); ``Q`` and ``K`` may have
  any strides.
- ``K^T`` of the workgroup's head is packed once into ``[D][TKP]`` (keys padded to whole
  vectors), so ``Q K^T`` is a register-blocked GEMM (``MR`` rows x ``NV`` key vectors, one
  broadcast of ``Q`` per row and feature), like ``dense_gemm``'s.
- The ops between ``Q K^T`` and the softmax (a scale, an additive mask, a causal select)
  are the ``score`` function: C from ``passes/epilogue_c.py``, with tensors (``t<i>``) read at
  the tile's own (head, query, key) through their strides (a mask is broadcast over heads).
- The softmax computes what the decomposed ops compute: the row maximum, ``exp(s - max)``,
  their sum (``xg_exp``: ``block_sparse.math_c``); keys past ``TK`` in the padded vector are
  excluded from the maximum and the sum.
- ``P V``: ``MR`` rows x ``NV`` feature vectors per step over the keys, on the unnormalized
  ``exp(s - max)``; each output is scaled by ``1 / sum`` of its row once at the end, instead
  of each of the row's ``TK`` probabilities.

AMX (``AttentionSpec.amx``, bf16 on a CPU with bf16 matrix tiles): the same pairs, multiplied
in AMX tiles (``tdpbf16ps``: 16 rows x 32 bf16 by 32 x 16, f32 sums) 16 query rows at a time:
``K^T`` and ``V`` packed as above are the tiles' B operands (pairs along the reduction, padded
to 16 pairs), the tile's ``Q`` rows and ``exp(s - max)`` rows the A operands. The scores are
stored from the tiles, then scored and softmaxed in vectors as above. The kernel asks Linux
for the tiles' state once per workgroup (``arch_prctl(ARCH_REQ_XCOMP_PERM)``, a raw system
call: the object has no libc); where that is refused it runs the ``vdpbf16ps`` products
instead, so a module never faults for want of the permission.

Every product is computed (no online softmax: the whole key row is on the stack, which caps
``(D + MR) x TKP`` floats; longer sequences stay with IREE).

bf16 (``AttentionSpec.bf16``, a ``precision=bf16`` compile for a CPU with AVX512-BF16): both
products are ``vdpbf16ps`` dot products of bf16 pairs with f32 sums, as IREE's demoted batch
matmuls would compute them: ``K^T`` packed as pairs of features per key, ``V`` as pairs of
keys per feature, each tile's ``Q`` rows and its ``exp(s - max)`` rows rounded to pairs
(nearest even) as they are used. The scores, the softmax and its sum stay f32.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .bf16 import AMX_C, TO_BF16, amx_header, header
from .block_sparse import LN2_HI, horner, math_c

# stack bytes the packed K^T (and V) and one tile's score rows may take (IREE's worker
# stacks are 128 KiB by default, and the task system uses some); a K^T that does not fit
# goes to scratch after the result, and score rows that pass SCORE_BYTES are not taken
STACK_BYTES = 48 * 1024
SCORE_BYTES = 32 * 1024
# an AMX tile: 16 rows of 64 bytes (16 f32, or 16 pairs of bf16)
AMX_ROWS = 16
AMX_PAIRS = 16


@dataclass(frozen=True)
class Strided:
    """Where element (head, token, feature) lies in a flat buffer: ``off + head * hs + token
    * ts + feature * fs``; with ``inner`` > 0 the batch matmuls' head index is (batch item,
    head) folded, ``head = b * inner + h``, and the element lies at ``off + b * bs + h * hs
    + ...`` (a batch of sequences: the item's stride is not ``inner`` heads')."""

    off: int
    hs: int
    ts: int
    fs: int
    bs: int = 0
    inner: int = 0

    def c(self, h: str, t: str, f: str) -> str:
        """The C expression of the element's flat index."""
        terms = [f"(size_t)({t}) * {self.ts}", f"(size_t)({f}) * {self.fs}"]
        if self.inner:
            terms[:0] = [f"(size_t)(({h}) / {self.inner}) * {self.bs}",
                         f"(size_t)(({h}) % {self.inner}) * {self.hs}"]  # fmt: skip
        else:
            terms.insert(0, f"(size_t)({h}) * {self.hs}")
        return f"({self.off} + {' + '.join(terms)})"


@dataclass
class AttentionSpec:
    symbol: str
    heads: int  # the batch matmuls' batch (heads x batch)
    tq: int  # query rows
    tk: int  # keys
    d: int  # features per head (Q K^T's reduction, P V's output columns)
    lanes: int  # f32 per vector
    rows: int  # register tile: query rows
    n_vectors: int  # register tile: vectors of keys (Q K^T) or features (P V)
    q: Strided
    k: Strided
    v: Strided
    o: Strided
    q_input: int  # which input buffer (in0, in1, ...) holds Q, K, V
    k_input: int
    v_input: int
    inputs: int  # input buffers before the score's tensors
    score: tuple[str, ...] = ()  # C statements on v (and t<i>)
    tensors: list[Strided] = field(default_factory=list)  # the score's tensors: (head, query, key)
    blocks: int = 0  # query blocks per head (0: enough for 16 workgroups; see for_workers)
    pack_v: bool = True  # V of the head copied to the stack, [TK][D]
    kt_scratch: bool = False  # K^T in scratch past the result, not on the stack
    out_size: int = 0  # the result's floats (where the scratch starts)
    bf16: bool = False  # bf16 products (vdpbf16ps), f32 sums: 16 lanes, K^T and V on the stack
    amx: bool = False  # (with bf16) the products in AMX tiles, 16 query rows at a time

    @property
    def tkp(self) -> int:
        return -(-self.tk // self.lanes) * self.lanes

    @property
    def dv(self) -> int:
        """V's and the output's features rounded up to whole vectors (a packed V row)."""
        return -(-self.d // self.lanes) * self.lanes

    @property
    def score_bytes(self) -> int:
        return 4 * self.rows * self.tkp

    @property
    def dp(self) -> int:
        """Pairs of features (bf16: Q K^T's reduction in pairs)."""
        return -(-self.d // 2)

    @property
    def dpa(self) -> int:
        """Pairs of features padded to whole AMX tiles (16 pairs: 64 bytes a row); bf16 only."""
        return -(-self.dp // AMX_PAIRS) * AMX_PAIRS if self.amx else self.dp

    @property
    def jpa(self) -> int:
        """Pairs of keys (P V's reduction) padded to whole AMX tiles; bf16 only."""
        jp = -(-self.tk // 2)
        return -(-jp // AMX_PAIRS) * AMX_PAIRS if self.amx else jp

    @property
    def score_rows(self) -> int:
        """Rows of the score buffer: the register tile's, or an AMX tile's 16."""
        return max(self.rows, AMX_ROWS) if self.amx else self.rows

    @property
    def score_row_floats(self) -> int:
        """Floats per row of the score buffer: the padded keys; with AMX, at least the
        output's padded features (P V's tiles are stored there)."""
        return max(self.tkp, self.dv) if self.amx else self.tkp

    @property
    def stack_bytes(self) -> int:
        if self.amx:  # as bf16, padded to tiles; the AMX path's own Q and P rows (its
            # output tile reuses the score rows)
            words = self.dpa * self.tkp + self.jpa * self.dv
            own = AMX_ROWS * (self.dpa + self.jpa)
            regs = self.rows * (self.tkp // 2 + self.dp)
            return 4 * (self.score_rows * self.score_row_floats + words + max(own, regs)) + 64
        if self.bf16:  # K^T and V in pairs, each tile's P and Q rows in pairs
            words = self.dp * self.tkp + -(-self.tk // 2) * self.dv
            return self.score_bytes + 4 * (words + self.rows * (self.tkp // 2 + self.dp))
        kt = 0 if self.kt_scratch else self.d * self.tkp
        return self.score_bytes + 4 * (kt + (self.tk * self.dv if self.pack_v else 0))

    def place(self) -> None:
        """K^T and V on the stack where they fit, else V read in place (only where its rows
        are whole vectors), then K^T in scratch."""
        self.pack_v, self.kt_scratch = True, False
        if self.bf16:
            return  # both packed on the stack, or the kernel is not taken (stack_bytes)
        if self.stack_bytes > STACK_BYTES and self.d == self.dv:
            self.pack_v = False
        if self.stack_bytes > STACK_BYTES:
            self.kt_scratch = True

    @property
    def scratch(self) -> int:
        """Floats of scratch after the result: one K^T per workgroup, from a 64-byte
        boundary."""
        if not self.kt_scratch:
            return 0
        gx, gy, _ = self.grid
        return 16 + gx * gy * self.d * self.tkp

    @property
    def q_blocks(self) -> int:
        if self.blocks:
            return self.blocks
        want = max(1, -(-16 // self.heads))
        return max(1, min(want, self.tq // self.rows))

    def for_workers(self, workers: int) -> None:
        """Query blocks per head for ``workers`` threads: two workgroups per worker, and no
        more. Each workgroup packs its head's K^T (and V) again, so a head split in two
        packs them twice, and 24 workgroups on 2 threads are 3 of IREE's reservations of 8
        (``target.busy_share``: one worker idle a third of the time): MiniLM's six cores (12
        heads, 2 threads) took 0.90 ms in 24 workgroups, 0.66 in 12 (AMD Zen 5)."""
        self.blocks = max(1, min(-(-2 * workers // self.heads), self.tq // self.rows))

    @property
    def q_block(self) -> int:
        per = -(-self.tq // self.q_blocks)
        return -(-per // self.rows) * self.rows

    @property
    def grid(self) -> tuple[int, int, int]:
        return (self.heads, -(-self.tq // self.q_block), 1)


def _f32_parts(spec: AttentionSpec) -> dict[str, str]:
    """The f32 kernel's products: broadcast-multiply-adds of f32; K^T on the stack or in
    scratch, V packed on the stack or read in place (``AttentionSpec.place``)."""
    vpack = (
        f"  for (int j = 0; j < TK; ++j)\n    for (int f = 0; f < DV; ++f) "
        f"vp[(size_t)j * DV + f] = f < D ? v[{spec.v.c('h', 'j', 'f')}] : 0.0f;"
        if spec.pack_v
        else ""
    )
    vrow = "(size_t)j * DV" if spec.pack_v else spec.v.c("h", "j", "0")
    start = -(-spec.out_size // 16) * 16
    kt_decl = (
        f"  float* restrict kt = o + {start} + ((size_t)gy * {spec.grid[0]} + gx) * (D * TKP);"
        if spec.kt_scratch
        else "  float kt[D * TKP] __attribute__((aligned(64)));"
    )
    pv = "\n".join(
        f"""    {cond} {{
      for (int j = 0; j < TK; ++j) {{
        v16 b[NV];
        #pragma GCC unroll 4
        for (int n = 0; n < {nvx}; ++n) b[n] = *(const vfu*)(v + {vrow} + VL * (fv + n));
        #pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {{
          const float p = s[(size_t)r * TKP + j];
          #pragma GCC unroll 4
          for (int n = 0; n < {nvx}; ++n) acc[r][n] += p * b[n];
        }}
      }}
    }}"""
        for cond, nvx in (("if (nf == NV)", "NV"), ("else", "1"))
    )
    return {
        "head": "",
        "kt_t": "float",
        "qk_params": "",
        "qk_args": "",
        "qk_loop": f"""  for (int f = 0; f < D; ++f) {{
    v16 b[NV];
    #pragma GCC unroll 4
    for (int n = 0; n < NVT; ++n) b[n] = *(const vfu*)(kt + (size_t)f * TKP + VL * (jv + n));
    #pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {{
      const float a = q[{spec.q.c("h", "i + r", "f")}];
      #pragma GCC unroll 4
      for (int n = 0; n < NVT; ++n) acc[r][n] += a * b[n];
    }}
  }}""",
        "q_pack": "",
        "p_pack": "",
        "pv_loop": pv,
        "pack": f"""{kt_decl}
{"  float vp[TK * DV] __attribute__((aligned(64)));" if spec.pack_v else ""}
  float s[MR * TKP] __attribute__((aligned(64)));
  for (int j = 0; j < TKP; ++j)
    for (int f = 0; f < D; ++f)
      kt[(size_t)f * TKP + j] = j < TK ? k[{spec.k.c("h", "j", "f")}] : 0.0f;
{vpack}""",
        "vbuf": "vp" if spec.pack_v else "v",
    }


# f32 to bf16 bits, rounded to nearest even (a NaN stays a quiet NaN), and two of them as
# one word of a pair (the first in the low half: vdpbf16ps's order)
_PAIR_C = """static inline uint32_t bf16_bits(float x) {
  uint32_t u;
  __builtin_memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}
static inline uint32_t pair(float lo, float hi) { return bf16_bits(lo) | (bf16_bits(hi) << 16); }
"""


def _kt_pack(spec: AttentionSpec, k2: str) -> str:
    """``K^T`` of head h as pairs of features per key (``kt[fp][j]``), zero past TK and DP:
    a key row of contiguous features rounded as one vector run (``to_bf16``), else pair by
    pair."""
    zero = """  for (int fp = 0; fp < DPA; ++fp)
    for (int j = 0; j < TKP; ++j) kt[(size_t)fp * TKP + j] = 0u;"""
    if spec.k.fs != 1:
        return f"""{zero}
  for (int j = 0; j < TK; ++j)
    for (int fp = 0; fp < DP; ++fp)
      kt[(size_t)fp * TKP + j] = pair(k[{spec.k.c("h", "j", "2 * fp")}], {k2});"""
    return f"""{zero}
  for (int j = 0; j < TK; ++j) {{
    uint32_t row[DP + 1] __attribute__((aligned(64)));
    to_bf16(k + {spec.k.c("h", "j", "0")}, row, D);
    for (int fp = 0; fp < DP; ++fp) kt[(size_t)fp * TKP + j] = row[fp];
  }}"""


def _v_pack(spec: AttentionSpec, v2: str) -> str:
    """``V`` of head h as pairs of keys per feature (``vp[jp][f]``), zero past TK and D: two
    key rows of contiguous features rounded a vector at a time (V's features are always
    contiguous, ``fs`` 1) and interleaved into words."""
    if spec.v.fs != 1:
        return f"""  for (int jp = 0; jp < JPA; ++jp)
    for (int f = 0; f < DV; ++f)
      vp[(size_t)jp * DV + f] =
          f < D && jp < JP ? pair(v[{spec.v.c("h", "2 * jp", "f")}], {v2}) : 0u;"""
    return f"""  for (int jp = 0; jp < JPA; ++jp)
    for (int f = 0; f < DV; f += 16) {{
      const __mmask16 m = jp < JP ? (__mmask16)(D - f >= 16 ? 0xffffu : (1u << (D - f)) - 1u) : 0;
      const __mmask16 m2 = 2 * jp + 1 < TK ? m : 0;
      const __m512 lo = _mm512_maskz_loadu_ps(m, v + {spec.v.c("h", "2 * jp", "f")});
      const __m512 hi = _mm512_maskz_loadu_ps(m2, v + {spec.v.c("h", "2 * jp + 1", "f")});
      const __m512i a = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(lo));
      const __m512i b = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(hi));
      const __m512i w = _mm512_or_si512(a, _mm512_slli_epi32(b, 16));
      _mm512_store_si512((void*)(vp + (size_t)jp * DV + f), w);
    }}"""


def _softmax_exp(spec: AttentionSpec) -> str:
    """The softmax's ``exp(s - max)``: ``xg_exp``, or where the probabilities are rounded to
    bf16 for ``P V`` (``spec.bf16``) a shorter one for arguments that are never positive: a
    degree-5 polynomial (relative error 2.4e-6, 1600x below bf16's rounding) scaled by
    ``vscalefps``, with only the low clamp (``s - max <= 0``; -inf clamped as ``xg_exp``
    does, NaN kept)."""
    if not spec.bf16:
        return "#define SOFTMAX_EXP xg_exp"
    inv_fact = tuple(1.0 / math.factorial(i) for i in range(6))
    log2e = float(np.float32(1 / math.log(2))).hex()
    ln2_lo = float(np.float32(math.log(2) - LN2_HI)).hex()
    return f"""static inline v16 xg_exp_nonpositive(v16 x) {{
  x = SEL(x < SPLAT(-87.0f), SPLAT(-87.0f), x);
  const v16 n = (v16)_mm512_roundscale_ps((__m512)(x * SPLAT({log2e}f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  v16 r = x - n * SPLAT({LN2_HI.hex()}f);
  r = r - n * SPLAT({ln2_lo}f);
  return (v16)_mm512_scalef_ps((__m512)({horner(inv_fact, "r")}), (__m512)n);
}}
#define SOFTMAX_EXP xg_exp_nonpositive"""


def _bf16_parts(spec: AttentionSpec) -> dict[str, str]:
    """The bf16 kernel's products: ``vdpbf16ps`` over pairs of features (Q K^T) and of keys
    (P V), f32 sums."""
    dot = "(v16)_mm512_dpbf16_ps((__m512)acc[r][n], a, b[n])"
    pv = "\n".join(
        f"""    {cond} {{
      for (int jp = 0; jp < JP; ++jp) {{
        __m512bh b[NV];
        #pragma GCC unroll 4
        for (int n = 0; n < {nvx}; ++n)
          b[n] = (__m512bh)_mm512_load_si512((const void*)(v + (size_t)jp * DV + VL * (fv + n)));
        #pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {{
          const __m512bh a = (__m512bh)_mm512_set1_epi32((int)pb[r][jp]);
          #pragma GCC unroll 4
          for (int n = 0; n < {nvx}; ++n) acc[r][n] = {dot};
        }}
      }}
    }}"""
        for cond, nvx in (("if (nf == NV)", "NV"), ("else", "1"))
    )
    second = "2 * fp + 1 < D ? {} : 0.0f"
    q2 = second.format(f"q[{spec.q.c('h', 'i + r', '2 * fp + 1')}]")
    k2 = second.format(f"k[{spec.k.c('h', 'j', '2 * fp + 1')}]")
    v2 = f"2 * jp + 1 < TK ? v[{spec.v.c('h', '2 * jp + 1', 'f')}] : 0.0f"
    return {
        "head": f"{header('attention')}{TO_BF16}{_PAIR_C}#define DP {spec.dp}\n"
        f"#define JP ((TK + 1) / 2)\n#define DPA {spec.dpa}\n#define JPA {spec.jpa}\n"
        f"#define SR {spec.score_rows}\n#define SN {spec.score_row_floats}\n",
        "kt_t": "uint32_t",
        "qk_params": ", const uint32_t (*restrict qb)[DP]",
        "qk_args": ", qb",
        "qk_loop": f"""  for (int fp = 0; fp < DP; ++fp) {{
    __m512bh b[NV];
    #pragma GCC unroll 4
    for (int n = 0; n < NVT; ++n)
      b[n] = (__m512bh)_mm512_load_si512((const void*)(kt + (size_t)fp * TKP + VL * (jv + n)));
    #pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {{
      const __m512bh a = (__m512bh)_mm512_set1_epi32((int)qb[r][fp]);
      #pragma GCC unroll 4
      for (int n = 0; n < NVT; ++n) acc[r][n] = {dot};
    }}
  }}""",
        "q_pack": f"""  uint32_t qb[MR][DP] __attribute__((aligned(64)));
  for (int r = 0; r < R; ++r)
    for (int fp = 0; fp < DP; ++fp)
      qb[r][fp] = pair(q[{spec.q.c("h", "i + r", "2 * fp")}], {q2});
""",
        "p_pack": """  uint32_t pb[MR][TKP / 2] __attribute__((aligned(64)));
  for (int r = 0; r < R; ++r) to_bf16(s + (size_t)r * TKP, pb[r], TK);
""",
        "pv_loop": pv,
        "pack": f"""  uint32_t kt[DPA * TKP] __attribute__((aligned(64)));
  uint32_t vp[JPA * DV] __attribute__((aligned(64)));
  float s[SR * SN] __attribute__((aligned(64)));
{_kt_pack(spec, k2)}
{_v_pack(spec, v2)}""",
        "vbuf": "vp",
    }


def _amx_products(
    a: str, a_stride: str, b: str, b_row: str, b_stride: str, steps: str, out: str, ld: str,
    blocks: int,
) -> str:  # fmt: skip
    """C of ``out[16][blocks x 16] = a[16][steps x 16 pairs] x b``: per group of up to four
    16-column blocks, accumulators in tiles 0-3, A in tile 4, B alternating in tiles 5 and 6
    (B of step ks and block c at ``b + ks * b_row + 16 * c``); the sums stored to ``out``
    (rows ``ld`` bytes apart)."""
    text = []
    for g in range(0, blocks, 4):
        group = list(range(g, min(g + 4, blocks)))
        lines = [f"  _tile_zero({t});" for t in range(len(group))]
        lines.append(f"  for (int ks = 0; ks < {steps}; ++ks) {{")
        lines.append(f"    _tile_loadd(4, {a} + 16 * ks, {a_stride});")
        for t, block in enumerate(group):
            lines.append(
                f"    _tile_loadd({5 + t % 2}, {b} + (size_t)ks * {b_row} + {16 * block},"
                f" {b_stride});"
            )
            lines.append(f"    _tile_dpbf16ps({t}, 4, {5 + t % 2});")
        lines.append("  }")
        lines += [
            f"  _tile_stored({t}, {out} + {16 * block}, {ld});" for t, block in enumerate(group)
        ]
        text.append("\n".join(lines))
    return "\n".join(text)


def _output_store(spec: AttentionSpec, feature: str, value: str) -> str:
    """C storing vector ``value`` at output row i + r, features ``feature`` on: whole vectors,
    or (a head's features fill no whole vector) only the features that exist."""
    at = spec.o.c("h", "i + r", feature)
    if spec.d == spec.dv:
        return f"*(vfu*)(o + {at}) = {value};"
    return (
        f"{{ if ({feature} + VL <= D) *(vfu*)(o + {at}) = {value};\n"
        f"          else for (int c = 0; c < D - {feature}; ++c) o[{at} + c] = {value}[c]; }}"
    )


def _amx_c(spec: AttentionSpec, loads: str, tparams: str, targs: str) -> str:
    """The AMX path: ``amx_ready`` (the tiles' permission, asked of Linux) and ``amx_rows``
    (query rows i0..i1 of head h, 16 at a time)."""
    second = "2 * fp + 1 < D ? {} : 0.0f"
    q2 = second.format(f"q[{spec.q.c('h', 'i + r', '2 * fp + 1')}]")
    store = _output_store(spec, "VL * fv", "y")
    if spec.q.fs == 1:  # a row of contiguous features rounded as one vector run
        q_pack = f"""    for (int r = 0; r < 16; ++r) {{
      int w = 0;
      if (r < R) {{
        to_bf16(q + {spec.q.c("h", "i + r", "0")}, qb[r], D);
        w = DP;
      }}
      for (; w < DPA; ++w) qb[r][w] = 0u;
    }}"""
    else:
        q_pack = f"""    for (int r = 0; r < 16; ++r)
      for (int fp = 0; fp < DPA; ++fp)
        qb[r][fp] = r < R && fp < DP ? pair(q[{spec.q.c("h", "i + r", "2 * fp")}], {q2}) : 0u;"""
    qk = _amx_products(
        "(const uint32_t*)qb", "DPA * 4", "kt", "16 * TKP", "TKP * 4", "DPA / 16", "s",
        "TKP * 4", spec.tkp // AMX_ROWS,
    )  # fmt: skip
    pv = _amx_products(
        "(const uint32_t*)pb", "JPA * 4", "vp", "16 * DV", "DV * 4", "JPA / 16", "s",
        "DV * 4", spec.dv // AMX_ROWS,
    )  # fmt: skip
    return f"""
{AMX_C}
/* query rows i0..i1 of head h, 16 at a time: Q K^T and P V in AMX tiles */
static __attribute__((noinline)) void amx_rows(
    const float* restrict q, const uint32_t* restrict kt, const uint32_t* restrict vp,
    float* restrict o, float* restrict s{tparams}, const int h, const int i0, const int i1) {{
  amx_configure();
  uint32_t qb[16][DPA] __attribute__((aligned(64)));
  uint32_t pb[16][JPA] __attribute__((aligned(64)));
  for (int i = i0; i < i1; i += 16) {{
    const int R = i1 - i < 16 ? i1 - i : 16;
{q_pack}
{qk}
    for (int r = 0; r < R; ++r)
      for (int jv = 0; jv < JV; ++jv) {{
        const int n = 0;
        v16* restrict at = (v16*)(s + (size_t)r * TKP + VL * jv);
        *at = score(*at{loads});
      }}
    v16 inv[16];
    softmax_rows(s, inv, R);
    for (int r = 0; r < 16; ++r) {{
      int w = 0;
      if (r < R) {{
        to_bf16(s + (size_t)r * TKP, pb[r], TK);
        w = (TK + 1) / 2;
      }}
      for (; w < JPA; ++w) pb[r][w] = 0u;
    }}
{pv}
    for (int r = 0; r < R; ++r)
      for (int fv = 0; fv < DV / VL; ++fv) {{
        const v16 y = *(const v16*)(s + (size_t)r * DV + VL * fv) * inv[r];
        {store}
      }}
  }}
  _tile_release();
}}
"""


def generate(spec: AttentionSpec) -> str:
    """C source with the IREE entry ``<symbol>_impl(in0, .., t0, .., out, head, query block)``."""
    nt = len(spec.tensors)
    params = "".join(f", v16 t{i}" for i in range(nt))
    loads = "".join(
        f", TLOAD(t{i}, {t.c('h', 'i + r', 'VL * (jv + n)')})" for i, t in enumerate(spec.tensors)
    )
    body = "\n".join(f"  {s}" for s in spec.score)
    ins = "".join(f"MEMREF(const float, in{i}), " for i in range(spec.inputs))
    tens = "".join(f"MEMREF(const float, tm{i}), " for i in range(nt))
    tbases = "".join(f"const float* restrict t{i} = tm{i} + tm{i}_off;\n  " for i in range(nt))
    targs = "".join(f", t{i}" for i in range(nt))
    tparams = "".join(f", const float* restrict t{i}" for i in range(nt))
    qkv = (
        f"const float* restrict q = in{spec.q_input} + in{spec.q_input}_off;\n"
        f"  const float* restrict k = in{spec.k_input} + in{spec.k_input}_off;\n"
        f"  const float* restrict v = in{spec.v_input} + in{spec.v_input}_off;"
    )
    store = _output_store(spec, "VL * (fv + n)", "acc[r][n]")
    b = _bf16_parts(spec) if spec.bf16 else _f32_parts(spec)
    amx, amx_call = "", ""
    if spec.amx:
        b["head"] += amx_header("attention")
        amx = _amx_c(spec, loads, tparams, targs)
        amx_call = (
            f"  if (amx_ready()) {{\n    amx_rows(q, kt, vp, o, s{targs}, h, i0, i1);\n"
            "    return;\n  }\n"
        )
    cases = "\n".join(
        f"      case {r}: row_tile(q, kt, {b['vbuf']}, o, s{targs}, h, i, {r}); break;"
        for r in range(1, spec.rows)
    )
    head = (
        f"{spec.heads} heads, {spec.tq} x {spec.tk} keys, d {spec.d}, tile {spec.rows}x"
        f"{spec.n_vectors * spec.lanes}, {spec.q_block} query rows per workgroup"
        + (", bf16 products" if spec.bf16 else "")
        + (" in AMX tiles" if spec.amx else "")
    )
    return f"""/* generated by xgen_mlir for {spec.symbol}: attention, {head} */
#include <stddef.h>
{b["head"]}typedef float v16 __attribute__((vector_size({4 * spec.lanes})));
typedef float vfu __attribute__((vector_size({4 * spec.lanes}), aligned(4)));
typedef int vi16 __attribute__((vector_size({4 * spec.lanes})));
#define SEL(m, a, b) ((v16)(((m) & (vi16)(a)) | (~(m) & (vi16)(b))))
#define SPLAT(c) ((v16){{0}} + (c))
#define MEMREF(T, n) T* n##_b, T* n, size_t n##_off, size_t n##_size, size_t n##_stride
#define VL {spec.lanes}
#define NV {spec.n_vectors}
#define MR {spec.rows}
#define TQ {spec.tq}
#define TK {spec.tk}
#define TKP {spec.tkp}
#define JV (TKP / VL)
#define D {spec.d}
#define DV {spec.dv}
#define QB {spec.q_block}
{math_c()}
{_softmax_exp(spec)}
/* n < VL floats from p, zeros after them (the keys' last, partial vector) */
static inline v16 load_part(const float* p, int n) {{
  float t[VL] __attribute__((aligned(64)));
  for (int c = 0; c < VL; ++c) t[c] = c < n ? p[c] : 0.0f;
  return *(const v16*)t;
}}
#define TLOAD(t, at) (VL * (jv + n) + VL <= TK ? *(const vfu*)(t + (at)) \\
                                              : load_part(t + (at), TK - VL * (jv + n)))

static inline v16 score(v16 v{params}) {{
{body}
  return v;
}}

/* the softmax of score rows 0..R-1 in place, unnormalized (exp(s - max)); 1 / each row's sum
   in inv: P V is scaled once per output, not each probability */
static inline __attribute__((always_inline)) void softmax_rows(
    float* restrict s, v16* restrict inv, const int R) {{
  vi16 lane;
  for (int c = 0; c < VL; ++c) lane[c] = c;
  #pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {{
    float* restrict row = s + (size_t)r * TKP;
    /* the maximum as arith.maximumf computes it: NaN wins, keys past TK do not count */
    v16 m = SPLAT(-__builtin_inff());
    for (int j = 0; j < JV; ++j) {{
      const v16 x = *(const v16*)(row + VL * j);
      const vi16 in = (lane + VL * j) < TK;
      const v16 b = SEL(in, x, m);
      m = SEL(((m > b) | (m != m)), m, SEL(((m < b) | (b != b)), b, m));
    }}
    float mx = m[0];
    for (int c = 1; c < VL; ++c) {{
      const float b = m[c];
      if (!(mx > b || mx != mx)) mx = (mx < b || b != b) ? b : mx;
    }}
    v16 sum = SPLAT(0.0f);
    for (int j = 0; j < JV; ++j) {{
      const vi16 in = (lane + VL * j) < TK;
      const v16 e = SEL(in, SOFTMAX_EXP(*(const v16*)(row + VL * j) - SPLAT(mx)), SPLAT(0.0f));
      *(v16*)(row + VL * j) = e;
      sum += e;
    }}
    float total = 0.0f;
    for (int c = 0; c < VL; ++c) total += sum[c];
    inv[r] = SPLAT(1.0f) / SPLAT(total);
  }}
}}

/* score rows i..i+R-1, keys VL*jv .. VL*(jv+NVT)-1, into s */
static inline __attribute__((always_inline)) void qk_tile(
    const float* restrict q, const {b["kt_t"]}* restrict kt, float* restrict s{tparams},
    const int h, const int i, const int R, const int jv, const int NVT{b["qk_params"]}) {{
  v16 acc[MR][NV];
  #pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
    #pragma GCC unroll 4
    for (int n = 0; n < NVT; ++n) acc[r][n] = SPLAT(0.0f);
{b["qk_loop"]}
  #pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
    #pragma GCC unroll 4
    for (int n = 0; n < NVT; ++n)
      *(v16*)(s + (size_t)r * TKP + VL * (jv + n)) = score(acc[r][n]{loads});
}}

/* R query rows of one head: scores, softmax, P V into o */
static inline __attribute__((always_inline)) void row_tile(
    const float* restrict q, const {b["kt_t"]}* restrict kt, const {b["kt_t"]}* restrict v,
    float* restrict o, float* restrict s{tparams}, const int h, const int i, const int R) {{
{b["q_pack"]}  int jv = 0;
  for (; jv + NV <= JV; jv += NV) qk_tile(q, kt, s{targs}, h, i, R, jv, NV{b["qk_args"]});
  for (; jv < JV; ++jv) qk_tile(q, kt, s{targs}, h, i, R, jv, 1{b["qk_args"]});
  v16 inv[MR]; /* 1 / each row's sum: P V is scaled once per output, not each probability */
  softmax_rows(s, inv, R);
{b["p_pack"]}  for (int fv = 0; fv < DV / VL; fv += NV) {{
    const int nf = DV / VL - fv < NV ? DV / VL - fv : NV;
    v16 acc[MR][NV];
    #pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
      #pragma GCC unroll 4
      for (int n = 0; n < NV; ++n) acc[r][n] = SPLAT(0.0f);
{b["pv_loop"]}
    #pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
      for (int n = 0; n < nf; ++n) {{
        acc[r][n] *= inv[r];
        {store}
      }}
  }}
}}

{amx}
void {spec.symbol}_impl({ins}{tens}MEMREF(float, om), size_t gx, size_t gy) {{
  {qkv}
  {tbases}float* restrict o = om + om_off;
  const int h = (int)gx;
  const int i0 = (int)gy * QB;
  const int i1 = i0 + QB < TQ ? i0 + QB : TQ;
{b["pack"]}
{amx_call}  int i = i0;
  for (; i + MR <= i1; i += MR) row_tile(q, kt, {b["vbuf"]}, o, s{targs}, h, i, MR);
  if (i < i1) {{
    switch (i1 - i) {{
{cases}
      default: break;
    }}
  }}
}}
"""
