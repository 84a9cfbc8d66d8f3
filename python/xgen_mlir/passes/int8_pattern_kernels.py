"""``xgen-int8-pattern-kernels``: pattern-pruned int8 convs -> VNNI pattern kernels.

A pattern-pruned model quantized to int8 keeps its zeros (a pruned weight is an exact int8
zero), but the integer convs ran dense: a kernel library's s8 primitive, or
``xgen-integer-in-float``'s f32 form, whose pattern kernels run at f32's rate. On a CPU with
VNNI a pattern's 4 taps are exactly one ``vpdpbusd`` lane (``codegen/int8_pattern.py``), so
the pruned conv runs on 2/9 of the dense conv's multiply-adds (4-entry patterns, half the
kernels) at the integer rate.

Matches ``linalg.conv_2d_nchw_fchw_q`` with i8 operands, constant weights with zero point 0
(symmetric, as ``compress.quantize`` makes them), a constant input zero point, an i32
accumulator that starts from a constant per output channel (zeros or a bias), unit dilation,
equal strides, a static batch (one workgroup z per image), whose weights' zeros form a small
pattern library (``raise_pattern_conv.infer_patterns``: the same structure and the same rule,
``max-density`` and ``min-group``, as the f32 pattern convs). The input's pad with the zero
point is taken into the kernel's layout. The op's i32 result is replaced by the kernel's: bit
for bit the same sums. Where the conv's one user converts them to f32 and a requantize to
int8 follows (per-channel scale and bias, the quantize's divide, rounding, zero point and
clamp: ``epilogue_c``, ``Operands.quantize``), the kernel applies it to each vector and
stores the int8 output itself: no i32 tensor goes through memory and no dispatch of IREE's
is left for it (``epilogues=false``: IREE's).

It must not fire on: f32 convs, depthwise or grouped convs (another op), a dense or
unstructured conv, weights with a nonzero zero point, a dynamic shape, ``enable=false``,
``mode`` (``integer_contractions``) float or kernel, an x86 target whose C compiler does not
define ``__AVX512VNNI__`` and ``__AVX512VBMI__`` with the target's flags, or (``enable=vnni``,
and ``tuned`` without a record) one that defines ``__AMX_INT8__``: there a library's dense s8
conv runs on the AMX tiles; an aarch64 target without ``+dotprod``
in ``features`` (the arm64 pipeline's; with it the kernel is the ``sdot`` form).
Runs before ``xgen-integer-in-float`` and the BYOC offload, which then see only the convs it
left.

Whether the kernel beats the dense route (a library's s8 conv, on VNNI or AMX tiles) depends
on the host and its library, so under ``enable=tuned`` (the cpu target's default) the model's
convs the kernel takes are one group, measured in the model both ways by ``xgen_mlir.tune``
(``tuning/choices.py: tune_int8_pattern``); without a record the rule decides (``vnni``).
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .._mlir import ir, tensor
from ..codegen.int8_pattern import MAX_FILTERS, Int8PatternSpec, generate, pack, starts
from ..codegen.toolchain import Toolchain, ToolchainOptions, compile_object, predefined_macros
from ..diagnostics import format_location
from ..irutil import ops_named
from ..tunedb import ALGORITHM
from .byoc_offload import group_signature, group_use
from .consteval import ConstEval
from .epilogue_c import Epilogue, Operands, epilogue, sums_to_f32
from .generic_util import has_dynamic_shape, i64_array, pad_with, transpose
from .integer_in_float import unpadded
from .kernel_call import free_symbol, install_kernel
from .raise_pattern_conv import PatternStructure, infer_patterns
from .registry import PassFailure, register_pass

NEEDS = ("__AVX512VNNI__", "__AVX512VBMI__")
# where the target also has AMX-INT8 tiles, a library's dense s8 conv runs on them (up to 8x
# VNNI's multiply-adds per cycle): the rule leaves those convs to it until a tune measures
TILES = "__AMX_INT8__"
ENABLE = ("tuned", "vnni", "always", "false")
# the tuning database's group of a model's pruned int8 convs the kernel takes: whether the
# kernel or the dense route (a library's s8 conv) runs them faster is measured in the model
# (``tuning/choices.py: tune_int8_pattern``), as the host's library and units decide it
GROUP_PREFIX = "int8 pattern kernels of"
GROUP_ALGORITHM = "int8 pattern kernels"
DENSE_BY_CHOICE = "stay dense: int8_pattern_kernels' choice"  # (the pass's count)
# aarch64: the dot product (sdot), which the target's LLVM features name as +dotprod
ARM_DOT = "__ARM_FEATURE_DOTPROD"
ARM_MARCH = "-march=armv8.2-a+dotprod"
WORKGROUPS = 32  # at least this many workgroups per conv, so both threads' shares even out


@dataclass
class Int8PatternOptions(ToolchainOptions):
    # tuned: as xgen_mlir.tune measured the model's kernels against the dense route on this
    # host, else as vnni; vnni: where the target has VNNI and VBMI but no AMX-INT8 tiles;
    # always: wherever it has VNNI and VBMI (or aarch64's dot product); false: never
    enable: str = "tuned"
    # the target's LLVM CPU features (arm64: "+neon,+dotprod"): the C compiler for aarch64 gets
    # the dot product where they have it
    features: str = ""
    # the target option integer_contractions, resolved: under float and kernel the integer
    # convs are computed in f32 (the user's choice, or a CPU without an exact int8 product)
    mode: str = "convs"
    epilogues: bool = True  # the requantize after the conv in the kernel (false: IREE's)
    max_density: float = 0.5  # xgen-raise-pattern-conv's rule
    min_group: float = 4.0
    verbose: bool = False


def _scalar(ev: ConstEval, value: ir.Value) -> int | None:
    got = ev.value(value)
    return None if got is None or np.asarray(got).size != 1 else int(np.asarray(got).reshape(-1)[0])


def _why_not(op: ir.Operation, ev: ConstEval) -> str | dict:
    """The conv's parts for the kernel, or why it stays as it is."""
    x, w, zx, zw, init = op.operands[:5]
    if any(str(ir.RankedTensorType(v.type).element_type) != "i8" for v in (x, w)):
        return "operands are not i8"
    if str(ir.RankedTensorType(op.results[0].type).element_type) != "i32":
        return "the result is not i32"
    if has_dynamic_shape(x, op.results[0]):
        return "dynamic shape"
    if any(int(v) != 1 for v in np.array(op.attributes["dilations"]).tolist()):
        return "dilated"
    strides = [int(v) for v in np.array(op.attributes["strides"]).tolist()]
    if strides[0] != strides[1] or not 1 <= strides[0] <= 4:
        return f"strides {strides}"
    out = list(ir.RankedTensorType(op.results[0].type).shape)
    weight = ev.value(w)
    if weight is None:
        return "the weights are not constant"
    zp, wzp = _scalar(ev, zx), _scalar(ev, zw)
    if zp is None or not -128 <= zp <= 127:
        return "the input's zero point is not a constant"
    if wzp != 0:
        return "the weights' zero point is not 0"
    start = ev.value(init)
    if start is None:
        return "the accumulator does not start from a constant"
    start = np.asarray(start).reshape(out[1], -1)
    if (start != start[:, :1]).any():
        return "the accumulator's start varies within an output channel"
    return {"weight": np.asarray(weight), "zp": zp, "bias": start[:, 0], "stride": strides[0]}


def _groups(st: PatternStructure) -> list[tuple[list[int], list[tuple[int, int]]]]:
    """Filters sharing one kernel layout, in runs of at most ``MAX_FILTERS``, each with the
    layout's kept (channel, pattern) kernels."""
    layouts, inverse = np.unique(st.kernel_pattern, axis=0, return_inverse=True)
    groups = []
    for i, layout in enumerate(layouts):
        members = np.flatnonzero(inverse.reshape(-1) == i).tolist()
        kernels = [(int(c), int(p)) for c, p in enumerate(layout) if p >= 0]
        for s in range(0, len(members), MAX_FILTERS):
            groups.append((members[s : s + MAX_FILTERS], kernels))
    return groups


def _layout(x: ir.Value, spec: Int8PatternSpec, pads: list[int], zp: int) -> ir.Value:
    """The kernel's flat input: ``x`` padded with the zero point to whole phase planes,
    split into its stride x stride phases (``[image][phase][c][hq][wq]``), and ``slack``
    bytes more for the wide pixels past the last image's last row."""
    s, c, hq, wq = spec.stride, spec.c, spec.hq, spec.wq
    n, _, h, w = ir.RankedTensorType(x.type).shape
    top, left = pads
    i8 = ir.IntegerType.get_signless(8)
    x = pad_with(x, [0, 0, top, left], [0, 0, s * hq - h - top, s * wq - w - left], zp)
    if s > 1:
        shape = [n, c, hq, s, wq, s]
        x = tensor.ExpandShapeOp(
            ir.RankedTensorType.get(shape, i8),
            x,
            ir.ArrayAttr.get(
                [i64_array([0]), i64_array([1]), i64_array([2, 3]), i64_array([4, 5])]
            ),
            [],
            shape,
        ).result
        x = transpose(x, [0, 3, 5, 1, 2, 4])
    rank = len(ir.RankedTensorType(x.type).shape)
    flat = tensor.CollapseShapeOp(
        ir.RankedTensorType.get([n * spec.derived["in_len"]], i8),
        x,
        ir.ArrayAttr.get([i64_array(list(range(rank)))]),
    ).result
    return pad_with(flat, [0], [spec.derived["slack"]], zp)


def _spec(
    symbol: str, op: ir.Operation, parts: dict, st: PatternStructure, pads: list[int], isa: str
) -> Int8PatternSpec:
    f, c, kh, kw = parts["weight"].shape
    s = parts["stride"]
    _, _, oh, ow = ir.RankedTensorType(op.results[0].type).shape
    hp, wp = pads[2], pads[3]  # the padded input's rows and columns
    groups = _groups(st)
    lanes = Int8PatternSpec.lanes_of(isa)
    vectors = -(-oh * -(-wp // s) // lanes)
    tiles = max(1, min(-(-WORKGROUPS // len(groups)), vectors))
    return Int8PatternSpec(
        symbol=symbol,
        batch=ir.RankedTensorType(op.results[0].type).shape[0],
        c=c,
        f=f,
        kh=kh,
        kw=kw,
        stride=s,
        hq=-(-hp // s),
        wq=-(-wp // s),
        oh=oh,
        ow=ow,
        patterns=st.patterns,
        groups=groups,
        tiles=tiles,
        isa=isa,
    )


def _requantize(op: ir.Operation, ev: ConstEval) -> tuple[Epilogue, list[ir.Operation]]:
    """The requantize after conv ``op`` that the kernel can apply before storing: its result's
    one user converting the sums to f32 (``sitofp``), then ``epilogue_c``'s ops up to and
    including a quantize to int8, reading per-channel constants and scalars only; with the
    ops it replaces. Empty where the chain is anything else (the kernel then stores i32)."""
    none: tuple[Epilogue, list[ir.Operation]] = (Epilogue(), [])
    convert = sums_to_f32(op)
    if convert is None:
        return none
    epi = epilogue(convert.results[0], ev, Operands(op, column_dim=1, tensors=False, quantize=True))
    if not epi.int8 or not all(np.isfinite(c).all() for c in epi.columns):
        return none
    return epi, [convert, *epi.ops]


def _toolchain(opts: Int8PatternOptions) -> Toolchain:
    """The C compiler and flags of the kernels: the target's, and for aarch64 the dot
    product where the target's features have it."""
    toolchain = opts.toolchain()
    if "+dotprod" in opts.features.split(",") and "__aarch64__" in predefined_macros(toolchain):
        return Toolchain(toolchain.cc, (*toolchain.cflags, ARM_MARCH), toolchain.extra)
    return toolchain


def target_units(opts: Int8PatternOptions) -> str | None:
    """Which kernel the target can run (``avx512``: VNNI and VBMI; ``neon``: aarch64's dot
    product), or None."""
    toolchain = _toolchain(opts)
    if not toolchain.available():
        return None
    macros = predefined_macros(toolchain)
    if "__aarch64__" in macros:
        return "neon" if ARM_DOT in macros else None
    return "avx512" if all(m in macros for m in NEEDS) else None


def _ruled(opts: Int8PatternOptions, isa: str) -> bool:
    """Whether ``opts.enable`` puts the convs in the kernel without a tuning record:
    ``always``; ``vnni`` and ``tuned`` (the rule) unless the target has AMX-INT8 tiles, which
    a library's dense s8 conv runs on; never ``false``."""
    if opts.enable in ("always", "false"):
        return opts.enable == "always"
    return isa == "neon" or TILES not in predefined_macros(_toolchain(opts))


def target_has_units(opts: Int8PatternOptions) -> bool:
    """Whether the kernel runs under ``opts`` with no tuning records."""
    isa = target_units(opts)
    return isa is not None and _ruled(opts, isa)


def int8_pattern_config(use: str) -> dict[str, str]:
    """The ``algorithm`` record of a group of pruned int8 convs run by ``use``: ``kernel``
    (this pass's) or ``dense`` (the route they take without it)."""
    return {"kind": ALGORITHM, "algorithm": GROUP_ALGORITHM, "use": use}


def _decide(convs: list[ir.Operation], opts: Int8PatternOptions, isa: str) -> bool:
    """Whether ``convs`` (the pruned int8 convs the kernel takes) run as the kernel: under
    ``tuned`` as this host's records of their group say (measured in the model, not rejected
    there), else by the rule; the decision goes to the report (``report.tuning.choices``)."""
    from .winograd_convs import CHOICES  # (it imports the BYOC pass, which imports much)

    if opts.enable != "tuned":
        return _ruled(opts, isa)
    use = _ruled(opts, isa)
    choices = CHOICES.get()
    if choices is None:
        return use
    signature = group_signature(GROUP_PREFIX, convs, "convs", "int8")
    rule = "vnni: VNNI and VBMI, no AMX-INT8"
    measured, why = group_use(choices.records.get(signature, []), GROUP_ALGORITHM, rule)
    use = use if measured is None else measured == "kernel"
    choices.log.append((signature, f"{'kernel' if use else 'dense'} ({len(convs)} convs)", why))
    return use


@register_pass(
    "xgen-int8-pattern-kernels",
    "Pattern-pruned int8 convs as generated VNNI kernels (vpdpbusd per pattern).",
    Int8PatternOptions,
)
def int8_pattern_kernels(module_op: ir.Operation, opts: Int8PatternOptions | None) -> Counter:
    """Replace every qualifying conv by its kernel; returns the count of kernels and of the
    reasons pattern-pruned convs stayed as they were."""
    opts = opts or Int8PatternOptions()
    counts: Counter[str] = Counter()
    convs = ops_named(module_op, "linalg.conv_2d_nchw_fchw_q")
    if opts.enable not in ENABLE:
        raise PassFailure(f"enable must be one of {', '.join(ENABLE)}, got '{opts.enable}'")
    if opts.mode not in ("convs", "integer"):
        return counts
    isa = target_units(opts) if convs else None
    if isa is None:
        return counts
    ev = ConstEval(module_op)
    toolchain = _toolchain(opts)
    found: list[tuple[ir.Operation, dict, PatternStructure]] = []
    for op in convs:
        where = format_location(op.location)
        parts = _why_not(op, ev)
        if isinstance(parts, str):
            if opts.verbose:
                print(f"xgen-int8-pattern-kernels: {where}: stays: {parts}", file=sys.stderr)
            continue
        st = infer_patterns(parts["weight"])
        if st is None:
            continue  # a dense conv: no news
        if st.density > opts.max_density or st.mean_group < opts.min_group:
            counts["stays dense: too dense or groups too small"] += 1
            continue
        found.append((op, parts, st))
    if not found or not _decide([op for op, _, _ in found], opts, isa):
        if found:
            counts[DENSE_BY_CHOICE] += len(found)
        return counts
    for op, parts, st in found:
        where = format_location(op.location)
        x = op.operands[0]
        _, _, hp, wp = ir.RankedTensorType(x.type).shape
        top = left = 0
        pad = unpadded(x, parts["zp"], ev)
        if pad is not None and pad[1][:2] == [0, 0] and pad[2][:2] == [0, 0]:
            x, low, _ = pad
            top, left = low[2], low[3]
        symbol = free_symbol(module_op, "xgen_int8_pattern", 1)
        spec = _spec(symbol, op, parts, st, [top, left, hp, wp], isa)
        epi, replaced = _requantize(op, ev) if opts.epilogues else (Epilogue(), [])
        spec.act, spec.columns = tuple(epi.lines), list(epi.columns)
        obj = compile_object(generate(spec), toolchain, symbol)
        with ir.InsertionPoint(op), op.location:
            flat = _layout(x, spec, [top, left], parts["zp"])
        weights = pack(spec, parts["weight"])
        first = starts(spec, parts["weight"], parts["bias"], parts["zp"])
        end = replaced[-1] if replaced else op
        install_kernel(
            module_op,
            symbol,
            str(obj),
            opts.object_format,
            [flat, weights, first],
            end.results[0].type,
            (len(spec.groups), spec.tiles, spec.batch),
            [op, *replaced],
            end,
            weights_name="xgen_int8_pattern_weights",
            ids=3,
        )
        counts["int8 pattern kernels"] += 1
        if epi:
            counts["of them with their requantize"] += 1
        if opts.verbose:
            print(
                f"xgen-int8-pattern-kernels: {where}: kernel, {len(st.patterns)} patterns, "
                f"density {st.density:.3f}, {len(spec.groups)} groups",
                file=sys.stderr,
            )
    return counts
