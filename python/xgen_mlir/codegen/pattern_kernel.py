"""C source for one FKW pattern convolution, run inside an IREE dispatch.

Layout (chosen so the kernel never tests borders and never gathers): the input is zero-padded
(width rounded up to a multiple of the stride s), its rows split into s row-phase planes
(row s*y' + a goes to plane a) and each plane flattened with row pitch Wp; output pixel
``o = y*WoP + x`` (WoP = Wp / s) of a filter reads input ``s*o + offset(tap)``, where the
offset (plane ky % s, row ky // s, column kx) is a compile-time constant per (pattern, tap).
For s = 2 a vector of outputs deinterleaves two contiguous input vectors (one shuffle).
Columns x >= OW of the padded grid are computed but never stored: each chunk of pixels is cut
into its runs of valid pixels per output row, and each run goes straight to its place in the
final ``[F, OH, OW]`` tensor (a masked vector store on AVX-512, a scalar copy elsewhere), so no
copy dispatch is needed after the kernel and no two workgroups write the same bytes. For each filter group and each chunk of ``VL*PX`` pixels, the group's filters'
accumulators stay in vector registers; for every kept kernel (channel from the FKW list, one
code path per pattern) each tap's input vector is loaded once and multiplied into all filters
of the group (the weights are stored tap-major, filter-minor, so this is one broadcast-FMA per
filter). No multiplication by a pruned weight, no redundant input load, and results are stored
straight into each filter's original channel (the FKW filter permutation costs nothing).

NaN and Inf (``nan_checks``, on by default): the dense convolution multiplies every pruned
(zero) weight too, and ``0 * NaN`` and ``0 * Inf`` are NaN, so an output whose window holds a
non-finite input at a pruned tap is NaN in PyTorch. The kernel takes one more operand, the sum
of ``x * 0`` per input row (channel, y) (a reduction the wrapper runs over the input: NaN iff
the row holds a NaN or Inf). After its stores, a workgroup adds those up; only if the sum is
NaN does it look closer: it sums ``x * 0`` over every input its outputs may read, in all
channels, and if that is NaN too takes the exact slow path: per output pixel, it counts the
non-finite inputs of the whole window and those at the group's computed taps; where they
differ, the group's outputs there become NaN (the filters of a group share one kernel layout).
Zero padding is finite, so only real inputs count. (A check of the tile's inputs in every
workgroup, without the reduction, cost 25-40% on the filter-vectorised layers: each of the
F/16 groups re-reads all C channels.)

A batch of N images is N workgroups along z (``batch``): each image's input, flags and output
are laid out as at batch 1, one image after another, and the kernel starts from image
``gz``'s bases; at batch 1 the code is what it was before batches were taken.

Written in portable C with GCC vector extensions: the same source compiles for x86-64
(AVX-512/AVX2), aarch64 (NEON) and riscv64 (RVV via vector extensions) cross compilers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SUPPORTED_STRIDES = (1, 2)
# pixels per block in the filter-vectorised variant, one accumulator register each. Measured
# (AVX-512, 2 workers): 28 spills (512x512 @7: 0.38 ms), 24: 0.25, 20: 0.25, 16: 0.24, 8: 0.26.
MAX_BLOCK = 16


def _full_groups(spec: KernelSpec) -> bool:
    """Every filter group holds the same whole number of vectors of filters."""
    gfo = spec.group_filter_offsets
    sizes = {int(gfo[g + 1] - gfo[g]) for g in range(len(gfo) - 1)}
    return len(sizes) == 1 and next(iter(sizes)) % spec.vl == 0


def _group_vectors(spec: KernelSpec) -> int:
    """Vectors of filters per group (the filters variant's accumulators per pixel)."""
    gfo = spec.group_filter_offsets
    return int(gfo[1] - gfo[0]) // spec.vl


def choose_variant(spec: KernelSpec) -> str:
    """Which formulation suits the layer.

    "pixels" (a vector of VL output pixels per filter): best for wide stride-1 layers. Its
    flat pixel chunks waste the padded columns and the tail chunk, and stride 2 needs the input
    split into row phases (one more layout dispatch) plus a shuffle per tap.
    "filters" (the group's filters as vectors of VL per output pixel; inputs broadcast): no
    phase split, no shuffle, no wasted pixels -- chosen for stride 2 and for narrow outputs
    (OW < 2*VL), when every filter group holds the same one or two vectors of filters (AVX2's
    8 lanes: groups of 16 are two; more would leave too few registers for pixels) (else:
    "pixels"). With two vectors a block holds at most 6 pixels, which only pays at stride 2
    (AVX2, one core, ms pixels -> filters: 64->128 @56 s2 1.09 -> 0.69, 256->512 @14 s2
    1.21 -> 0.91, but 512->512 @7 s1 1.14 -> 1.75).
    """
    ow = spec.derived["ow"]
    if (
        _full_groups(spec)
        and _group_vectors(spec) <= 2
        and spec.px == 1
        and (spec.derived["stride"] == 2 or (ow < 2 * spec.vl and _group_vectors(spec) == 1))
    ):
        return "filters"
    return "pixels"


@dataclass
class KernelSpec:
    """Everything the generated kernel bakes in (shapes, FKW tables, tiling)."""

    symbol: str
    c: int
    h: int
    w: int
    f: int
    kh: int
    kw: int
    strides: tuple[int, int]
    padding: tuple[int, int, int, int]
    patterns: list[list[int]]
    filter_order: np.ndarray
    group_filter_offsets: np.ndarray
    group_kernel_offsets: np.ndarray
    kernel_channel: np.ndarray
    kernel_pattern: np.ndarray
    vl: int = 16  # floats per vector register
    regs: int = 32  # vector registers the accumulators may plan on (target.vector_registers)
    px: int = 1  # vectors of pixels per accumulator row
    tile: int = 8  # pixel chunks per workgroup
    relu: bool = False  # max(x, 0) after the bias (a fused ReLU epilogue)
    nan_checks: bool = True  # NaN where a pruned tap meets a NaN/Inf input, as dense math gives
    variant: str = "auto"  # "pixels" | "filters" | "auto" (see choose_variant)
    batch: int = 1  # images; each a workgroup z, its operands one image after another
    derived: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        sh, sw = self.strides
        if sh != sw or sh not in SUPPORTED_STRIDES:
            raise ValueError(
                f"pattern kernels need equal strides in {SUPPORTED_STRIDES}, got {self.strides}"
            )
        st = sh
        pt, pl, pb, pr = self.padding
        oh = (self.h + pt + pb - self.kh) // st + 1
        ow = (self.w + pl + pr - self.kw) // st + 1
        hq, wp = -(-(self.h + pt + pb) // st), -(-(self.w + pl + pr) // st) * st
        wop = wp // st
        chunk = self.vl * self.px
        nchunks = -(-(oh * wop) // chunk)
        oplane = nchunks * chunk
        plane = hq * wp
        maxoff = ((self.kh - 1) // st) * wp + (self.kw - 1)
        slack = max(0, st * oplane + maxoff - plane) + st * self.vl
        if st == 1:  # read slack as extra zero rows of each plane: one pad op, not two
            hq += -(-slack // wp)
            plane, slack = hq * wp, 0
        self.derived = {
            "oh": oh,
            "ow": ow,
            "hq": hq,
            "wp": wp,
            "wop": wop,
            "stride": st,
            "plane": plane,
            "nchunks": nchunks,
            "oplane": oplane,
            "in_len": st * self.c * plane,
            "phases": st,
            "maxseg": chunk // ow + 2,
            "maxoff": maxoff,
            "out_len": self.f * oh * ow,
            "slack": slack,
            "ntiles": -(-nchunks // self.tile),
            "groups": len(self.group_filter_offsets) - 1,
            "weights": int(
                sum(
                    (self.group_kernel_offsets[g + 1] - self.group_kernel_offsets[g])
                    * len(self.patterns[0])
                    * (self.group_filter_offsets[g + 1] - self.group_filter_offsets[g])
                    for g in range(len(self.group_filter_offsets) - 1)
                )
            ),
        }

        if self.variant == "auto" or (self.variant == "filters" and not _full_groups(self)):
            self.variant = choose_variant(self)
        if self.variant == "filters":
            self._derive_filters()

    def _derive_filters(self) -> None:
        """Plain zero-padded input planes (no stride phases); output blocks of R rows x Q
        columns (Q divides OW), one accumulator per pixel holding the group's VL filters."""
        d = self.derived
        pt, pl, pb, pr = self.padding
        hp, wp, oh, ow = self.h + pt + pb, self.w + pl + pr, d["oh"], d["ow"]
        # the block with the most pixels (Q | OW; ties: wider rows), rows capped by OH; each
        # pixel's accumulators, the weight vectors and one broadcast input in the registers
        nv = _group_vectors(self)
        most = max(1, min(MAX_BLOCK, (self.regs - nv - 1) // nv))
        q, r = max(
            ((x, max(1, min(most // x, oh))) for x in range(1, min(ow, most) + 1) if ow % x == 0),
            key=lambda qr: (qr[0] * qr[1], qr[0]),
        )
        bands = -(-oh // r)
        nblocks = bands * (ow // q)
        kept = d["weights"] / max(1, self.f * len(self.patterns[0]))  # kept kernels per filter
        fmas = kept * len(self.patterns[0]) * r * q * nv  # vector FMAs per block and group
        tile = max(1, min(nblocks, int(8192 // max(1.0, fmas))))
        d.update(
            {
                "wp": wp,
                "hq": hp,
                "plane": hp * wp,
                "phases": 1,
                "in_len": self.c * hp * wp,
                "slack": 0,
                "q": q,
                "r": r,
                "rtail": oh - (bands - 1) * r,
                "bands": bands,
                "nbx": ow // q,
                "nblocks": nblocks,
                "btile": tile,
                "ntiles": -(-nblocks // tile),
            }
        )

    def tap_offset(self, k: int) -> int:
        if self.variant == "filters":
            ky, kx = divmod(k, self.kw)
            return ky * self.derived["wp"] + kx
        st = self.derived["stride"]
        ky, kx = divmod(k, self.kw)
        return (ky % st) * self.c * self.derived["plane"] + (ky // st) * self.derived["wp"] + kx


def _arr(name: str, values: list[int] | np.ndarray) -> str:
    body = ",".join(str(int(v)) for v in values) or "0"
    return f"static const int32_t {name}[] = {{{body}}};"


def _entry(spec: KernelSpec) -> list[str]:
    """The exported function's head: memrefs, workgroup ids (x: filter group, y: pixel tile,
    z: image of the batch, only for a batch above 1) and each operand's base for this image."""
    flags = "MEMREF(const float, flags), " if spec.nan_checks else ""
    ids = "size_t gx, size_t gy" + (", size_t gz" if spec.batch > 1 else "")
    lines = [
        f"void {spec.symbol}_impl(MEMREF(const float, in), MEMREF(const float, w), "
        f"MEMREF(const float, bias), {flags}MEMREF(float, out), {ids}) {{",
        "  in += in_off; w += w_off; bias += bias_off; out += out_off;",
    ]
    if spec.batch > 1:  # images one after another in each batched operand
        d = spec.derived
        lines.append(
            f"  in += gz * {d['in_len'] + d['slack']}; out += gz * {d['out_len']};"
            + (f" flags += gz * {spec.c * spec.h};" if spec.nan_checks else "")
        )
    return lines


def _relu(v: str) -> str:
    """C statement applying torch-mlir's relu (x ugt 0 ? x : 0) to vector ``v`` in place: NaN
    passes through, -0 becomes +0 (bitwise, so both kernel formulations agree)."""
    return f"{{ vf z = {{}}; vi m = ({v} > z) | ({v} != {v}); {v} = (vf)((vi){v} & m); }}"


def _prelude(spec: KernelSpec, what: str) -> list[str]:
    """Header comment, vector types, the MEMREF macro and the FKW tables both kernels read:
    per group the run length of each pattern (RUNS), weight/kernel/filter offsets, each kept
    kernel's input-plane offset (CHAN) and the original channel of each filter (ORDER)."""
    d, n, npat = spec.derived, len(spec.patterns[0]), len(spec.patterns)
    gfo, gko = spec.group_filter_offsets, spec.group_kernel_offsets
    ngroups = d["groups"]
    sizes = [int(gfo[g + 1] - gfo[g]) for g in range(ngroups)]
    runs = []
    for g in range(ngroups):
        pats = spec.kernel_pattern[gko[g] : gko[g + 1]]
        runs.append([int((pats == p).sum()) for p in range(npat)])
    woff = np.concatenate(
        [[0], np.cumsum([(gko[g + 1] - gko[g]) * n * sizes[g] for g in range(ngroups)])]
    )[:-1]
    return [
        f"/* generated by xgen_mlir for {spec.symbol}: {spec.f}x{spec.c}x{spec.kh}x{spec.kw} conv, "
        f"stride {spec.strides}, {ngroups} filter groups, {npat} patterns of {n}{what}"
        f"{', relu epilogue' if spec.relu else ''} */",
        "#include <stddef.h>",
        "#include <stdint.h>",
        f"typedef float vf __attribute__((vector_size({4 * spec.vl})));",
        f"typedef float vfu __attribute__((vector_size({4 * spec.vl}), aligned(4)));",
        f"typedef int32_t vi __attribute__((vector_size({4 * spec.vl})));",
        "#define LD(p) (*(const vfu*)(p))",
        f"#define VLEN {spec.vl}",
        "#define MEMREF(T, n) T* n##_base, T* n, size_t n##_off, size_t n##_size, size_t n##_stride",
        _arr("RUNS", [r for row in runs for r in row]),
        _arr("WOFF", woff),
        _arr("KOFF", gko[:-1]),
        _arr("FOFF", gfo[:-1]),
        _arr("GSIZE", sizes),
        _arr("CHAN", [int(ch) * d["plane"] for ch in spec.kernel_channel]),
        _arr("ORDER", spec.filter_order),
        *(_nan_helpers(spec) if spec.nan_checks else []),
    ]


def _nan_helpers(spec: KernelSpec) -> list[str]:
    """C for the NaN/Inf semantics of the pruned taps (module docstring): ``nonfinite``
    (any NaN/Inf in ``planes`` planes' range [lo, hi)) and ``fix_pixel`` (the slow path for one
    output pixel, whose window starts at ``b``)."""
    d, n, npat = spec.derived, len(spec.patterns[0]), len(spec.patterns)
    oh, ow = d["oh"], d["ow"]
    taps = [spec.tap_offset(k) for k in range(spec.kh * spec.kw)]
    return [
        _arr("TAPOFF", taps),
        _arr("PAT", [k for pat in spec.patterns for k in pat]),
        "/* 1 if an input row's sum of x * 0 (the wrapper's reduction) is NaN: a NaN or Inf */",
        "static int flagged(const float* restrict flags) {",
        "  vf s = {};",
        "  float t = 0.0f;",
        "  size_t i = 0;",
        f"  for (; i + VLEN <= {spec.c * spec.h}; i += VLEN) s += LD(flags + i);",
        f"  for (; i < {spec.c * spec.h}; i++) t += flags[i];",
        "  for (int k = 0; k < VLEN; k++) t += s[k];",
        "  return t != t;",
        "}",
        "/* 1 if any of planes x [lo, hi) (plane pitch `pitch`) is NaN or Inf: x * 0 is NaN",
        "   exactly then, and a sum of such products is NaN iff one of them is. Eight planes at",
        "   a time (independent sums); each plane's last vector overlaps the one before it (a",
        "   value read twice does no harm), so no scalar tail */",
        "static __attribute__((noinline)) int nonfinite(const float* restrict in, size_t planes,",
        "                                                size_t pitch, size_t lo, size_t hi) {",
        "  const vf z = {};",
        "  float t = 0.0f;",
        "  if (hi - lo < VLEN) {",
        "    for (size_t pl = 0; pl < planes; pl++)",
        "      for (size_t i = lo; i < hi; i++) t += in[pl * pitch + i] * 0.0f;",
        "    return t != t;",
        "  }",
        "  const size_t last = hi - VLEN;",
        "  vf s[8] = {};",
        "  size_t pl = 0;",
        "  for (; pl + 8 <= planes; pl += 8) {",
        "    const float* p = in + pl * pitch;",
        "    for (size_t i = lo; i < last; i += VLEN)",
        '      _Pragma("GCC unroll 8") for (int u = 0; u < 8; u++) s[u] += LD(p + u * pitch + i) * z;',
        '    _Pragma("GCC unroll 8") for (int u = 0; u < 8; u++) s[u] += LD(p + u * pitch + last) * z;',
        "  }",
        "  for (; pl < planes; pl++) {",
        "    const float* p = in + pl * pitch;",
        "    for (size_t i = lo; i < last; i += VLEN) s[0] += LD(p + i) * z;",
        "    s[1] += LD(p + last) * z;",
        "  }",
        "  const vf a = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));",
        "  for (int k = 0; k < VLEN; k++) t += a[k];",
        "  return t != t;",
        "}",
        "/* slow path, one output pixel (y, x) of group g: NaN where a NaN/Inf input meets a tap",
        "   the kernel skipped (a pruned weight: 0 * NaN = 0 * Inf = NaN in the dense conv) */",
        "static __attribute__((noinline, cold)) void fix_pixel(const float* restrict b,",
        "                                                     float* restrict out, size_t g,",
        "                                                     size_t y, size_t x) {",
        "  int all = 0, kept = 0;",
        f"  for (int c = 0; c < {spec.c}; c++)",
        f"    for (int k = 0; k < {spec.kh * spec.kw}; k++)",
        f"      all += !__builtin_isfinite(b[(size_t)c * {d['plane']} + TAPOFF[k]]);",
        "  if (!all) return;",
        "  const int32_t* cp = CHAN + KOFF[g];",
        f"  const int32_t* runs = RUNS + g * {npat};",
        f"  for (int p = 0; p < {npat}; p++) {{",
        "    for (int i = 0; i < runs[p]; i++)",
        f"      for (int t = 0; t < {n}; t++) kept += !__builtin_isfinite(b[cp[i] + TAPOFF[PAT[p * {n} + t]]]);",
        "    cp += runs[p];",
        "  }",
        "  if (kept == all) return;",
        "  const int32_t* oc = ORDER + FOFF[g];",
        "  for (int j = 0; j < GSIZE[g]; j++)",
        f'    out[(size_t)oc[j] * {oh * ow} + y * {ow} + x] = __builtin_nanf("");',
        "}",
    ]


def generate(spec: KernelSpec) -> str:
    """The kernel's C source (one exported function ``<symbol>_impl``)."""
    if spec.variant == "filters":
        return _generate_filters(spec)
    d = spec.derived
    n, npat = len(spec.patterns[0]), len(spec.patterns)
    gfo = spec.group_filter_offsets
    sizes = [int(gfo[g + 1] - gfo[g]) for g in range(d["groups"])]
    out = [
        *_prelude(spec, ""),
        f"#define VL {spec.vl}",
        f"#define PX {spec.px}",
        f"#define S {d['stride']}",
        "#if defined(__AVX512F__) && VL == 16 && PX == 1  /* lanes [a, a+n) of v to p[a..a+n) */",
        "#define STORE_RUN(p, v, a, n) __builtin_ia32_storeups512_mask((p), (v), "
        "(unsigned short)(((1u << (n)) - 1u) << (a)))",
        "#else",
        "#define STORE_RUN(p, v, a, n) do { float t_[VL * PX]; *(vfu*)t_ = (v); "
        "for (int k_ = (a); k_ < (a) + (n); k_++) (p)[k_] = t_[k_]; } while (0)",
        "#endif",
        "#if S == 1",
        "#define LDS(p) LD(p)",
        "#else  /* stride 2: the even elements of 2*VL contiguous inputs */",
        "#define LDS(p) __builtin_shufflevector(LD(p), LD((p) + VL), "
        + ", ".join(str(2 * i) for i in range(spec.vl))
        + ")",
        "#endif",
    ]
    for gs in sorted(set(sizes)):
        out += _group_function(spec, gs, n, npat)
    out += [
        *_entry(spec),
        f"  size_t c0 = gy * {spec.tile}, c1 = c0 + {spec.tile};",
        f"  if (c1 > {d['nchunks']}) c1 = {d['nchunks']};",
        "  switch (GSIZE[gx]) {",
    ]
    for gs in sorted(set(sizes)):
        out.append(f"    case {gs}: group_{gs}(in, w + WOFF[gx], bias, out, gx, c0, c1); break;")
    out += ["    default: break;", "  }"]
    if spec.nan_checks:
        chunk = spec.vl * spec.px
        out += [
            "  /* NaN/Inf in the input, and among what these pixels read (all phases, channels)? */",
            f"  size_t lo = S * c0 * {chunk}, hi = S * c1 * {chunk} + {d['maxoff']};",
            f"  if (hi > {d['plane']}) hi = {d['plane']};",
            f"  if (c0 < c1 && flagged(flags + flags_off) && "
            f"nonfinite(in, {d['stride'] * spec.c}, {d['plane']}, lo, hi))",
            f"    for (size_t o = c0 * {chunk}; o < c1 * {chunk}; o++) {{",
            f"      size_t y = o / {d['wop']}, x = o - y * {d['wop']};",
            f"      if (y < {d['oh']} && x < {d['ow']}) fix_pixel(in + S * o, out, gx, y, x);",
            "    }",
        ]
    out.append("}")
    return "\n".join(out) + "\n"


def filter_blocks(gs: int, px: int, regs: int) -> list[tuple[int, int]]:
    """The pixels variant's filter blocks of a group of ``gs`` filters, as (first, count): as
    few as keep one block's ``count * px`` accumulators, its ``px`` input vectors and one
    broadcast weight in the register file, of even sizes. (AVX2's 16 registers cannot hold 16
    filters' accumulators: GCC kept them on the stack, one load and store per FMA; two blocks
    of 8 read each input vector twice instead, from L1.)"""
    most = max(1, (regs - px - 1) // px)
    nblocks = -(-gs // most)
    size = -(-gs // nblocks)
    return [(j0, min(size, gs - j0)) for j0 in range(0, gs, size)]


def _group_function(spec: KernelSpec, gs: int, n: int, npat: int) -> list[str]:
    d = spec.derived
    oh, ow, wop, ms = d["oh"], d["ow"], d["wop"], d["maxseg"]
    lines = [
        f"static void group_{gs}(const float* restrict in, const float* restrict wp, "
        "const float* restrict bias, float* restrict out, size_t g, size_t c0, size_t c1) {",
        "  const int32_t* oc = ORDER + FOFF[g];",
        f"  const int32_t* runs = RUNS + g * {npat};",
        "  for (size_t ch = c0; ch < c1; ch++) {",
        "    const size_t o = ch * VL * PX;",
        "    const float* base = in + S * o;",
        "    /* runs of valid pixels (x < OW, y < OH) in this chunk: lane, length, destination */",
        f"    int ra[{ms}], rn[{ms}], nr = 0; size_t rd[{ms}];",
        "    for (size_t p = o, e = o + VL * PX; p < e;) {",
        f"      size_t y = p / {wop}, x = p - y * {wop};",
        f"      if (y >= {oh}) break;",
        f"      if (x < {ow}) {{ size_t n = {ow} - x; if (n > e - p) n = e - p;",
        f"        ra[nr] = (int)(p - o); rn[nr] = (int)n; rd[nr] = y * {ow} + x; nr++; }}",
        f"      p += {wop} - x;",
        "    }",
    ]
    for j0, fb in filter_blocks(gs, spec.px, spec.regs):
        lines += _filter_block(spec, gs, j0, fb, n)
    lines += ["  }", "}"]
    return lines


def _filter_block(spec: KernelSpec, gs: int, j0: int, fb: int, n: int) -> list[str]:
    """Filters [j0, j0 + fb) of a group of ``gs``, for the chunk at ``o``: accumulate over the
    group's kept kernels, then the epilogue and the stores."""
    d = spec.derived
    oh, ow = d["oh"], d["ow"]
    lines = [
        f"    {{  /* filters {j0}..{j0 + fb - 1} of the group */",
        f"    vf acc[{fb}][PX];",
        f'    _Pragma("GCC unroll 64") for (int j = 0; j < {fb}; j++)',
        '      _Pragma("GCC unroll 8") for (int q = 0; q < PX; q++) '
        f"acc[j][q] = (vf){{}} + bias[oc[{j0} + j]];",
        f"    const float* w = wp + {j0};",
        "    const int32_t* cp = CHAN + KOFF[g];",
    ]
    for p, pat in enumerate(spec.patterns):
        lines += [
            f"    for (int i = 0, e = runs[{p}]; i < e; i++) {{  /* pattern {p}: taps {pat} */",
            "      const float* b = base + cp[i];",
        ]
        for t, k in enumerate(pat):
            lines += [
                f'      {{ vf x[PX]; _Pragma("GCC unroll 8") for (int q = 0; q < PX; q++) '
                f"x[q] = LDS(b + {spec.tap_offset(k)} + q * VL * S);",
                f'        _Pragma("GCC unroll 64") for (int j = 0; j < {fb}; j++) {{ '
                f'const float s = w[{t * gs} + j]; _Pragma("GCC unroll 8") '
                "for (int q = 0; q < PX; q++) acc[j][q] += x[q] * s; } }",
            ]
        lines += [f"      w += {n * gs};", "    }", f"    cp += runs[{p}];"]
    if spec.relu:
        lines += [
            f'    _Pragma("GCC unroll 64") for (int j = 0; j < {fb}; j++)',
            f'      _Pragma("GCC unroll 8") for (int q = 0; q < PX; q++) {_relu("acc[j][q]")}',
        ]
    lines += [
        f'    _Pragma("GCC unroll 64") for (int j = 0; j < {fb}; j++) {{',
        f"      float* dst = out + (size_t)oc[{j0} + j] * {oh * ow};",
        "      if (nr == 1 && rn[0] == VL * PX) {  /* the whole chunk is one run */",
        '        _Pragma("GCC unroll 8") for (int q = 0; q < PX; q++) '
        "*(vfu*)(dst + rd[0] + q * VL) = acc[j][q];",
        "        continue;",
        "      }",
        "      for (int r = 0; r < nr; r++) {",
        "#if PX == 1",
        "        STORE_RUN(dst + rd[r] - ra[r], acc[j][0], ra[r], rn[r]);",
        "#else",
        "        float t[VL * PX];",
        '        _Pragma("GCC unroll 8") for (int q = 0; q < PX; q++) *(vfu*)(t + q * VL) = acc[j][q];',
        "        for (int k = 0; k < rn[r]; k++) dst[rd[r] + k] = t[ra[r] + k];",
        "#endif",
        "      }",
        "    }",
        "    }",
    ]
    return lines


def _generate_filters(spec: KernelSpec) -> str:
    """The filter-vectorised kernel: for each block of R x Q output pixels and filter group,
    R*Q accumulators each hold the group's VL filters; every tap of a kept kernel loads one
    weight vector and does one broadcast-FMA per pixel (input offsets are compile-time
    constants: tap offset + r*S*WP + S*q). Results are transposed through a small stack buffer
    into each filter's original channel of the [F, OH, OW] output."""
    d = spec.derived
    q = d["q"]
    out = _prelude(spec, f", filter-vectorised, blocks of {d['r']}x{q} pixels")
    for rows in sorted({d["r"], d["rtail"]}):
        out += _filters_block(spec, rows)
    out += [
        *_entry(spec),
        f"  size_t b0 = gy * {d['btile']}, b1 = b0 + {d['btile']};",
        f"  if (b1 > {d['nblocks']}) b1 = {d['nblocks']};",
        "  for (size_t b = b0; b < b1; b++) {",
        f"    size_t band = b / {d['nbx']}, x0 = (b % {d['nbx']}) * {q}, y0 = band * {d['r']};",
    ]
    if d["rtail"] != d["r"]:
        out.append(
            f"    if (band == {d['bands'] - 1}) block_{d['rtail']}(in, w + WOFF[gx], bias, out, "
            "gx, y0, x0); else"
        )
    out += [
        f"    block_{d['r']}(in, w + WOFF[gx], bias, out, gx, y0, x0);",
        "  }",
    ]
    if spec.nan_checks:
        st, wp, r = d["stride"], d["wp"], d["r"]
        out += [
            "  /* NaN/Inf in the input, and among the rows these blocks read (all channels)? */",
            f"  size_t ya = b0 / {d['nbx']} * {r}, yb = (b1 - 1) / {d['nbx']} * {r} + {r};",
            f"  if (yb > {d['oh']}) yb = {d['oh']};",
            f"  size_t lo = ya * {st * wp}, hi = ((yb - 1) * {st} + {spec.kh}) * {wp};",
            f"  if (hi > {d['plane']}) hi = {d['plane']};",
            f"  if (b0 < b1 && flagged(flags + flags_off) && "
            f"nonfinite(in, {spec.c}, {d['plane']}, lo, hi))",
            "    for (size_t b = b0; b < b1; b++) {",
            f"      size_t band = b / {d['nbx']}, x0 = (b % {d['nbx']}) * {q}, y0 = band * {r};",
            f"      for (size_t y = y0; y < y0 + {r} && y < {d['oh']}; y++)",
            f"        for (size_t x = x0; x < x0 + {q}; x++)",
            f"          fix_pixel(in + y * {st * wp} + x * {st}, out, gx, y, x);",
            "    }",
        ]
    out.append("}")
    return "\n".join(out) + "\n"


def _filters_block(spec: KernelSpec, rows: int) -> list[str]:
    d = spec.derived
    vl, st, wp, q, oh, ow = spec.vl, d["stride"], d["wp"], d["q"], d["oh"], d["ow"]
    n, npat = len(spec.patterns[0]), len(spec.patterns)
    nv = _group_vectors(spec)
    gs = nv * vl
    px = rows * q
    offs = [r * st * wp + st * c for r in range(rows) for c in range(q)]
    lines = [
        f"static void block_{rows}(const float* restrict in, const float* restrict wp, "
        "const float* restrict bias, float* restrict out, size_t g, size_t y0, size_t x0) {",
        "  const int32_t* oc = ORDER + FOFF[g];",
        f"  const int32_t* runs = RUNS + g * {npat};",
        f"  float bv[{gs}];",
        f"  for (int j = 0; j < {gs}; j++) bv[j] = bias[oc[j]];",
        f"  vf acc[{px}][{nv}];",
        f'  _Pragma("GCC unroll 64") for (int p = 0; p < {px}; p++)',
        f'    _Pragma("GCC unroll 4") for (int v = 0; v < {nv}; v++) acc[p][v] = LD(bv + v * {vl});',
        "  const float* w = wp;",
        "  const int32_t* cp = CHAN + KOFF[g];",
        f"  const float* base = in + y0 * {st * wp} + x0 * {st};",
    ]
    for p, pat in enumerate(spec.patterns):
        lines += [
            f"  for (int i = 0, e = runs[{p}]; i < e; i++) {{  /* pattern {p}: taps {pat} */",
            "    const float* b = base + cp[i];",
        ]
        for t, k in enumerate(pat):
            o = spec.tap_offset(k)
            wv = ", ".join(f"LD(w + {t * gs + v * vl})" for v in range(nv))
            lines.append(f"    {{ const vf wv[{nv}] = {{{wv}}};")
            lines += [
                f"      {{ const float xb = b[{o + off}]; "
                + " ".join(f"acc[{i}][{v}] += xb * wv[{v}];" for v in range(nv))
                + " }"
                for i, off in enumerate(offs)
            ]
            lines.append("    }")
        lines += [f"    w += {n * gs};", "  }", f"  cp += runs[{p}];"]
    if spec.relu:
        lines.append(
            f'  _Pragma("GCC unroll 64") for (int p = 0; p < {px}; p++) '
            f'_Pragma("GCC unroll 4") for (int v = 0; v < {nv}; v++) {_relu("acc[p][v]")}'
        )
    lines += [
        f"  float t[{px}][{gs}];",
        f'  _Pragma("GCC unroll 64") for (int p = 0; p < {px}; p++)',
        f'    _Pragma("GCC unroll 4") for (int v = 0; v < {nv}; v++) '
        f"*(vfu*)(t[p] + v * {vl}) = acc[p][v];",
        f"  for (int j = 0; j < {gs}; j++) {{",
        f"    float* dst = out + (size_t)oc[j] * {oh * ow} + y0 * {ow} + x0;",
        f'    _Pragma("GCC unroll 8") for (int r = 0; r < {rows}; r++)',
        f'      _Pragma("GCC unroll 32") for (int c = 0; c < {q}; c++) '
        f"dst[r * {ow} + c] = t[r * {q} + c][j];",
        "  }",
        "}",
    ]
    return lines
