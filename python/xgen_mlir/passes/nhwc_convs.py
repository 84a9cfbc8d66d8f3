"""xgen-nhwc-convs: NCHW convolutions with constant weights become named NHWC convolutions.

Why: PyTorch models arrive NCHW. IREE's llvm-cpu codegen handles NHWC convolutions best, and
its own channels-last preprocessing rewrites them into ``linalg.generic`` ops. For a depthwise
conv that generic is no longer recognized as depthwise and gets a generic, slow lowering:
MobileNetV2's 17 depthwise convs took 7.0 of 11.5 ms in a per-dispatch profile. Here every
conv becomes the *named* ``linalg.conv_2d_nhwc_hwcf`` / ``linalg.depthwise_conv_2d_nhwc_hwc``
op on permuted constant weights, with its zero padding moved to NHWC. It is wrapped in
transposes (NCHW -> NHWC before, back after). IREE's transpose propagation cancels the pairs
between consecutive convs through the elementwise ops between them (batch norm, ReLU6, residual
adds), so one transpose stays at the entry and one at the exit.

Which modules: every one with a depthwise conv; one without as ``convs`` says (``all``; or
``depthwise``, leaving them to IREE's rewrite, which gives a 1x1 conv its filter as (n, k) and
so a plain matmul IREE vectorizes poorly; ``tuned``, the cpu target's default: as
``xgen_mlir.tune`` measured the model both ways on this host, else ``all``: ``_decide_convs``).

What it matches: ``linalg.conv_2d_nchw_fchw`` and ``linalg.depthwise_conv_2d_nchw_chw`` with
constant f32 weights and an accumulator init that is a constant fill or a per-channel
broadcast. A ``tensor.pad`` producing the input that pads only H and W with a constant is
re-created in NHWC. Not matched: non-constant weights (left to IREE), other layouts.

Dynamic shapes: a dynamic batch is kept (the new ``tensor.empty`` ops take it from the input
with ``tensor.dim``); a conv or pool with any other dynamic dim is left NCHW, counted as
``<op> left NCHW: dynamic H/W/C`` in the pass's report.

The batch norm after each converted conv is folded into it first (``xgen-fold-batchnorm``'s
rule): left as NCHW per-channel constants it keeps IREE from moving the transposes through,
measured on EfficientNet-B0: 33.4 ms unfolded vs 11.2 ms folded.

Numerics: the layout change is exact (same sums, same tap order); the batch-norm fold differs
by float reassociation only (see that pass).
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .._mlir import arith, ir, linalg, tensor
from ..byoc import OFFLOAD_ATTR
from ..diagnostics import format_location
from ..irutil import constant_op, ops_named
from ..tunedb import ALGORITHM
from .consteval import ConstEval
from .fold_batchnorm import fold_one
from .gemm_kernels import GROUP_ATTR, KERNEL_ATTR
from .generic_util import (
    channel_init,
    empty,
    erase_dead_tree,
    fill,
    is_dynamic,
    is_zero_constant,
    mixed_sizes,
    pad_high,
    producer,
    transpose,
)
from .registry import PassFailure, register_pass

_CONVS = {
    # name -> (NHWC op builder name, weight permutation to the NHWC filter layout)
    "linalg.conv_2d_nchw_fchw": ("conv_2d_nhwc_hwcf", (2, 3, 1, 0)),
    "linalg.depthwise_conv_2d_nchw_chw": ("depthwise_conv_2d_nhwc_hwc", (1, 2, 0)),
}
# integer convs (int8 in, int32 out: torch-mlir's form of a quantized conv), converted only
# for a library that takes them (xgen-byoc-offload), not by this pass
QUANTIZED_CONVS = {"linalg.conv_2d_nchw_fchw_q": ("conv_2d_nhwc_hwcf_q", (2, 3, 1, 0))}
_POOLS = {
    "linalg.pooling_nchw_max": "pooling_nhwc_max",
    "linalg.pooling_nchw_sum": "pooling_nhwc_sum",
}
TO_NHWC, TO_NCHW = [0, 2, 3, 1], [0, 3, 1, 2]


# the convs option's values (NhwcOptions.convs), and the tuning database's group of the
# convs it decides (tuning/choices.py: tune_nhwc_convs)
CONVS = ("tuned", "all", "depthwise")
GROUP_PREFIX = "nhwc convs of"
GROUP_ALGORITHM = "nhwc convs"


@dataclass
class NhwcOptions:
    verbose: bool = False  # print every converted conv to stderr
    depthwise_only: bool = False  # convert only depthwise convs
    # the convs of a module without a depthwise conv: "all" (converted), "depthwise" (left
    # NCHW to IREE's channels-last rewrite), "tuned" (as this host's record of the model's
    # group says, else all); see _decide_convs. A module with one converts every conv.
    convs: str = "all"
    # the precision compiled for: the group's records are kept per precision (a bf16 compile's
    # convs are f32 ops here, and its layout may win the other way)
    precision: str = "fp32"
    # NCHW max/sum pools -> NHWC pools, in every function (see _convert_pool)
    pools: bool = True


def nhwc_input(x: ir.Value, extra_high: tuple[int, int] = (0, 0)) -> ir.Value:
    """The conv's input in NHWC; a constant H/W zero pad is re-done after the transpose.
    ``extra_high``: zero rows and columns to add after H and W (Winograd's last tiles)."""
    pad = producer(x)
    if pad is not None and pad.name == "tensor.pad":
        low = list(ir.DenseI64ArrayAttr(pad.attributes["static_low"]))
        high = list(ir.DenseI64ArrayAttr(pad.attributes["static_high"]))
        ops = list(pad.regions[0].blocks[0].operations)
        dynamic = len(pad.operands) > 1
        if not dynamic and low[:2] == [0, 0] and high[:2] == [0, 0] and len(ops) == 1:
            value = ops[0].operands[0]
            constant = not isinstance(value.owner, ir.Block)  # from outside, not an index
            if constant and (not any(extra_high) or is_zero_constant(value)):
                src = transpose(pad.operands[0], TO_NHWC)
                src_ty = ir.RankedTensorType(src.type)
                high = [high[p] for p in TO_NHWC]
                high[1:3] = [high[1] + extra_high[0], high[2] + extra_high[1]]
                low = [low[p] for p in TO_NHWC]
                out_shape = [
                    s if is_dynamic(s) else s + lo + hi  # a dynamic batch is never padded
                    for s, lo, hi in zip(src_ty.shape, low, high, strict=True)
                ]
                out_ty = ir.RankedTensorType.get(out_shape, src_ty.element_type)
                new = tensor.PadOp(out_ty, src, [], [], low, high)
                block = new.regions[0].blocks.append(*([ir.IndexType.get()] * 4))
                with ir.InsertionPoint(block):
                    tensor.YieldOp(value)
                return new.result  # the NCHW pad dies with the conv (erase_dead_tree)
    return pad_high(transpose(x, TO_NHWC), extra_high)


DYNAMIC_HWC = "left NCHW: dynamic H/W/C"


def _dynamic_hwc(op: ir.Operation) -> bool:
    """Whether the conv/pool has a dynamic dim other than the batch (dim 0 of its input and
    result): the NHWC form is only built for a dynamic batch."""
    values = [op.operands[0], op.results[0]]
    return any(is_dynamic(s) for v in values for s in ir.RankedTensorType(v.type).shape[1:])


def _init_sizes(x: ir.Value, static: list[int]) -> list[int | ir.Value]:
    """An NHWC result's sizes [n, oh, ow, c]; a dynamic n is the NHWC input ``x``'s."""
    return [mixed_sizes(x, [0])[0] if is_dynamic(static[0]) else static[0], *static[1:]]


def to_nhwc(op: ir.Operation, ev: ConstEval) -> ir.Operation | bool | str:
    """The NCHW conv ``op`` as its named NHWC form between transposes (returned); False where
    it does not match, a reason string where it is left NCHW for that reason."""
    if op.name in QUANTIZED_CONVS:
        return _quantized_to_nhwc(op, ev)
    builder, perm = _CONVS[op.name]
    out_ty = ir.RankedTensorType(op.results[0].type)
    if str(out_ty.element_type) != "f32":
        return False
    if _dynamic_hwc(op):
        return DYNAMIC_HWC
    weight = ev.value(op.operands[1])
    bias = ev.per_channel_init(op.operands[2], 1)
    if weight is None or weight.dtype != np.float32 or bias is None:
        return False
    n, f, oh, ow = out_ty.shape

    def make(x: ir.Value, strides: list[int], dilations: list[int]) -> ir.Value:
        w = constant_op(np.ascontiguousarray(weight.transpose(perm)), "xgen_nhwc_weight").result
        sizes = _init_sizes(x, [n, oh, ow, f])
        init = channel_init(bias.astype(np.float32), sizes, 3, out_ty.element_type)
        return getattr(linalg, builder)(x, w, outs=[init], strides=strides, dilations=dilations)

    return _swap_in_nhwc(op, make)


def _quantized_to_nhwc(op: ir.Operation, ev: ConstEval) -> ir.Operation | bool | str:
    """``linalg.conv_2d_nchw_fchw_q`` (constant int8 weights, a zero-filled int32
    accumulator) as ``linalg.conv_2d_nhwc_hwcf_q`` between transposes; its pad, whose value
    is the source's zero point, moves with it. The zero points are kept as they are."""
    builder, perm = QUANTIZED_CONVS[op.name]
    out_ty = ir.RankedTensorType(op.results[0].type)
    if _dynamic_hwc(op):
        return DYNAMIC_HWC
    weight = ev.value(op.operands[1])
    init = ev.per_channel_init(op.operands[4], 1)
    if weight is None or weight.dtype != np.int8 or init is None or init.any():
        return False
    n, f, oh, ow = out_ty.shape
    izp, wzp = op.operands[2], op.operands[3]

    def make(x: ir.Value, strides: list[int], dilations: list[int]) -> ir.Value:
        w = constant_op(np.ascontiguousarray(weight.transpose(perm)), "xgen_nhwc_weight").result
        elem = out_ty.element_type
        zero = arith.ConstantOp(elem, ir.IntegerAttr.get(elem, 0)).result
        acc = fill(zero, empty(_init_sizes(x, [n, oh, ow, f]), elem))
        conv = getattr(linalg, builder)
        return conv(x, w, izp, wzp, outs=[acc], strides=strides, dilations=dilations)

    return _swap_in_nhwc(op, make)


def _swap_in_nhwc(op: ir.Operation, make) -> ir.Operation:
    """Replace the NCHW conv/pool ``op`` by ``make(nhwc_input, strides, dilations)`` (its NHWC
    form, built at ``op`` and returned) followed by a transpose back to NCHW; dead producers
    go too."""
    strides = list(ir.DenseIntElementsAttr(op.attributes["strides"]))
    dilations = list(ir.DenseIntElementsAttr(op.attributes["dilations"]))
    with ir.InsertionPoint(op), op.location:
        made = make(nhwc_input(op.operands[0]), strides, dilations)
        back = transpose(made, TO_NCHW)
    for attr in (OFFLOAD_ATTR, KERNEL_ATTR, GROUP_ATTR):  # decisions on the NCHW conv go with it
        if attr in op.attributes:
            made.owner.attributes[attr] = op.attributes[attr]
    old = list(op.operands)
    op.results[0].replace_all_uses_with(back)
    op.erase()
    erase_dead_tree(old)
    return made.owner


# a pool reading a generated kernel's output (an NCHW tensor it stores itself) stays NCHW: no
# transposes of IREE's cancel there, and IREE fuses the one before the pool into it, a strided
# pool. Pruned int8 models on an Intel Xeon with VNNI, the pools after int8 pattern kernels:
# VGG-16's five 2x2 pools 7.2 ms NHWC, 1.9 NCHW; ResNet-18's 3x3 stem pool 0.19 (with its
# two transposes) and 0.24
KERNEL_NCHW = "left NCHW: it reads a generated kernel's NCHW output"


def _from_kernel(x: ir.Value) -> bool:
    """Whether ``x`` is (a pad of) the result of a call: a generated kernel's wrapper."""
    op = producer(x)
    if op is not None and op.name == "tensor.pad":
        op = producer(op.operands[0])
    return op is not None and op.name == "func.call"


def _convert_pool(op: ir.Operation) -> ir.Operation | bool | str:
    """An NCHW pool becomes the named NHWC pool between transposes.

    Why, even in functions whose convs stay NCHW: IREE's channels-last preprocessing leaves
    ``pooling_nchw_max`` alone, so it runs on NCHW between two layout changes, with a slow
    lowering: ResNet-18's stem max pool took 1.19 ms (as long as a 64->64 3x3 conv) plus a
    transpose dispatch. In NHWC its transposes cancel against IREE's own around the convs."""
    out_ty = ir.RankedTensorType(op.results[0].type)
    init_op = producer(op.operands[2])
    if _from_kernel(op.operands[0]):
        return KERNEL_NCHW
    # f32, or an int8 max pool (xgen-quantized-max-pool's: the NHWC op's max is signed)
    kind = str(out_ty.element_type)
    if kind != "f32" and not (kind == "i8" and op.name == "linalg.pooling_nchw_max"):
        return False
    if init_op is None or init_op.name != "linalg.fill":
        return False
    if _dynamic_hwc(op):
        return DYNAMIC_HWC
    n, c, oh, ow = out_ty.shape

    def make(x: ir.Value, strides: list[int], dilations: list[int]) -> ir.Value:
        init = fill(init_op.operands[0], empty(_init_sizes(x, [n, oh, ow, c]), out_ty.element_type))
        pool = getattr(linalg, _POOLS[op.name])
        return pool(x, op.operands[1], outs=[init], strides=strides, dilations=dilations)

    return _swap_in_nhwc(op, make)


def nhwc_convs(module_op: ir.Operation, opts: NhwcOptions | None = None) -> Counter:
    """Convert every matching conv; returns counts by op name."""
    with module_op.context:
        opts = opts or NhwcOptions()
        ev = ConstEval(module_op)
        counts: Counter[str] = Counter()

        def convert(op: ir.Operation, how) -> None:
            where, name = format_location(op.location), op.name
            done = how(op)
            if isinstance(done, str):  # skipped, with the reason
                counts[f"{name} {done}"] += 1
            elif done:
                counts[name] += 1
                if opts.verbose:
                    print(f"xgen-nhwc-convs: {where}: {name} -> NHWC", file=sys.stderr)

        if opts.pools:
            for op in ops_named(module_op, *_POOLS):
                convert(op, _convert_pool)
        names = ["linalg.depthwise_conv_2d_nchw_chw"] if opts.depthwise_only else list(_CONVS)
        if not _decide_convs(module_op, opts):
            return counts
        for op in ops_named(module_op, *names):
            if _dynamic_hwc(op):
                counts[f"{op.name} {DYNAMIC_HWC}"] += 1
                continue
            fold_one(op, ev)  # per-channel constants in NCHW would pin transposes (see above)
            convert(op, lambda op: to_nhwc(op, ev))
        return counts


def _decide_convs(module_op: ir.Operation, opts: NhwcOptions) -> bool:
    """Whether the module's convs are converted. With a depthwise conv, always: IREE's own
    channels-last rewrite turns it into a generic op it no longer lowers as a depthwise conv
    (MobileNetV2 12.8 -> 5.4 ms). Without one, as ``convs`` says: ``all``, not
    ``depthwise``; under ``tuned`` as this host's record of the module's convs as a group says
    (``xgen_mlir.tune`` compiles the model both ways and times them in the model:
    ``tuning/choices.py: tune_nhwc_convs``), and without one ``all``. IREE's rewrite gives a
    1x1 conv the filter as (n, k), which its plain tiles vectorize poorly, and the named NHWC
    conv did as well or better on four of five models measured (an AMD Zen 4, paired rounds:
    ddddocr's detector 0.93x, YOLOv8n 0.94x, ResNet-18 0.98x, VGG-16 1.00x, ddddocr's reader
    1.02x; docs/measurements.md), but not on all: a choice for the tuner, with a prior. The
    decision goes to the report (``report.tuning.choices``)."""
    from .byoc_offload import group_signature, group_use  # (it imports this module)
    from .winograd_convs import CHOICES

    if opts.convs not in CONVS:
        raise PassFailure(f"convs must be one of {', '.join(CONVS)}, got '{opts.convs}'")
    if opts.depthwise_only or ops_named(module_op, "linalg.depthwise_conv_2d_nchw_chw"):
        return True
    if opts.convs != "tuned":
        return opts.convs == "all"
    convs = [op for op in ops_named(module_op, *_CONVS) if not _dynamic_hwc(op)]
    choices = CHOICES.get()
    if not convs or choices is None:
        return True
    signature = group_signature(GROUP_PREFIX, convs, "convs", opts.precision)
    rule = "every conv as a named NHWC conv"
    measured, why = group_use(choices.records.get(signature, []), GROUP_ALGORITHM, rule)
    use = measured != "depthwise"
    said = "NHWC" if use else "NCHW, IREE's channels-last rewrite"
    choices.log.append((signature, f"{said} ({len(convs)} convs)", why))
    return use


def nhwc_convs_config(use: str) -> dict[str, str]:
    """The ``algorithm`` record of a module's convs as a group, run by ``use``: ``all``
    (named NHWC convs) or ``depthwise`` (left to IREE's channels-last rewrite)."""
    return {"kind": ALGORITHM, "algorithm": GROUP_ALGORITHM, "use": use}


@register_pass(
    "xgen-nhwc-convs",
    "NCHW convs with constant weights -> named NHWC convs (+ transposes IREE cancels).",
    NhwcOptions,
)
def _pass(module_op: ir.Operation, opts: NhwcOptions | None) -> Counter:
    return nhwc_convs(module_op, opts)
