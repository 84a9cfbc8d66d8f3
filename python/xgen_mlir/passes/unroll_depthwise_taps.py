"""xgen-unroll-depthwise-taps: a depthwise conv becomes one elementwise ``linalg.generic`` over
its K*K shifted input slices (no accumulator fill, no reduction loop).

Why: IREE 3.13's SPIR-V codegen distributes a depthwise conv's accumulator fill and the conv
itself over a workgroup's invocations differently (fill: W on x, C on y; conv: C on x, W on
y) in one dispatch, with no barrier between them. Invocations then accumulate into elements
another invocation has not zeroed yet, or zero them afterwards: on Mesa's llvmpipe a lone 3x3
depthwise conv (16 channels, 8x8) comes out wrong in 37% of its outputs (max error 2.2), and
MobileNetV2 does too (docs/targets.md has the reproducer for IREE's tracker). Generalizing the
named op does not help (same tiling). The elementwise form has nothing to race on: each
output is ``init + sum_t x_t * w_t`` over the taps ``t``, read from ``tensor.extract_slice``s
that IREE folds into the dispatch's loads.

Numerics: the taps are summed in the conv's own order (kh outer, kw inner) from the same
init, so the result is what the conv's loop nest computes, bit for bit.

What it matches: ``linalg.depthwise_conv_2d_nchw_chw`` / ``_nhwc_hwc`` on static float tensors
with at most ``max-taps`` taps (strides and dilations any). The init stays as it was: a
``linalg.fill`` becomes the body's starting value, anything else (a bias broadcast) an input.
Not matched: dynamic shapes, integer types (quantized convs), bigger kernels.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass

from .._mlir import arith, ir, tensor
from ..diagnostics import format_location
from ..irutil import ops_named
from .generic_util import empty, erase_dead_tree, generic, producer, tensor_shape
from .registry import register_pass

# op name -> (channels-last?, filter layout)
_DEPTHWISE = {
    "linalg.depthwise_conv_2d_nchw_chw": False,
    "linalg.depthwise_conv_2d_nhwc_hwc": True,
}


@dataclass
class UnrollOptions:
    max_taps: int = 49  # kernels up to 7x7; bigger ones keep the named op
    verbose: bool = False  # print every unrolled conv to stderr


def _pair(attr: ir.Attribute | None) -> tuple[int, int]:
    """A conv's ``strides``/``dilations`` (``dense<1>`` or ``dense<[2, 2]>``); absent = 1."""
    if attr is None:
        return (1, 1)
    values = [int(v) for v in ir.DenseIntElementsAttr(attr)]
    return (values[0], values[-1])


def _why_not(op: ir.Operation, max_taps: int) -> str | None:
    shapes = [tensor_shape(v) for v in op.operands]
    if any(s is None or any(d < 0 for d in s) for s in shapes):
        return "kept: dynamic shape"
    elem = ir.RankedTensorType(op.operands[0].type).element_type
    if not isinstance(elem, (ir.F32Type, ir.F16Type, ir.BF16Type, ir.F64Type)):
        return "kept: not a float conv"
    filt = shapes[1]
    assert filt is not None
    taps = filt[1] * filt[2] if not _DEPTHWISE[op.name] else filt[0] * filt[1]
    if taps > max_taps:
        return f"kept: {taps} taps > max-taps"
    return None


def _unroll(op: ir.Operation) -> None:
    channels_last = _DEPTHWISE[op.name]
    x, w, init = op.operands[0], op.operands[1], op.operands[2]
    out_ty = ir.RankedTensorType(init.type)
    elem = out_ty.element_type
    n, *rest = out_ty.shape
    c = rest[2] if channels_last else rest[0]
    wshape = tensor_shape(w)
    assert wshape is not None
    kh_n, kw_n = (wshape[0], wshape[1]) if channels_last else (wshape[1], wshape[2])
    sh, sw = _pair(op.attributes["strides"] if "strides" in op.attributes else None)
    dh, dw = _pair(op.attributes["dilations"] if "dilations" in op.attributes else None)
    vec_ty = ir.RankedTensorType.get([c], elem)
    xs, ws = [], []
    for kh in range(kh_n):
        for kw in range(kw_n):
            if channels_last:
                offsets, strides = [0, kh * dh, kw * dw, 0], [1, sh, sw, 1]
                w_offsets, w_sizes = [kh, kw, 0], [1, 1, c]
            else:
                offsets, strides = [0, 0, kh * dh, kw * dw], [1, 1, sh, sw]
                w_offsets, w_sizes = [0, kh, kw], [c, 1, 1]
            xs.append(
                tensor.ExtractSliceOp(
                    out_ty, x, [], [], [], offsets, list(out_ty.shape), strides
                ).result
            )
            ws.append(
                tensor.ExtractSliceOp(vec_ty, w, [], [], [], w_offsets, w_sizes, [1, 1, 1]).result
            )
    fill_op = producer(init)
    start = fill_op.operands[0] if fill_op is not None and fill_op.name == "linalg.fill" else None
    rank = 4
    ident = ir.AffineMap.get_identity(rank)
    chan = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(3 if channels_last else 1)])
    inputs = [*xs, *ws] + ([] if start is not None else [init])
    maps = [ident] * len(xs) + [chan] * len(ws) + ([] if start is not None else [ident])
    taps = len(xs)

    def body(args: list[ir.Value]) -> list[ir.Value]:
        acc = start if start is not None else args[2 * taps]
        for t in range(taps):
            acc = arith.AddFOp(acc, arith.MulFOp(args[t], args[taps + t]).result).result
        return [acc]

    new = generic(inputs, [*maps, ident], empty([n, *rest], elem), ["parallel"] * rank, body)
    op.results[0].replace_all_uses_with(new.results[0])
    operands = list(op.operands)
    op.erase()
    erase_dead_tree(operands)


def unroll_depthwise_taps(module_op: ir.Operation, opts: UnrollOptions | None = None) -> Counter:
    opts = opts or UnrollOptions()
    counts: Counter[str] = Counter()
    with module_op.context:
        for op in ops_named(module_op, *_DEPTHWISE):
            why = _why_not(op, opts.max_taps)
            if why is not None:
                counts[why] += 1
                continue
            where = format_location(op.location)
            with ir.InsertionPoint(op), op.location:
                _unroll(op)
            counts["unrolled"] += 1
            if opts.verbose:
                print(f"xgen-unroll-depthwise-taps: {where}: unrolled", file=sys.stderr)
    return counts


@register_pass(
    "xgen-unroll-depthwise-taps",
    "depthwise convs -> one elementwise generic over the K*K shifted input slices (no fill, "
    "no reduction): works around IREE's SPIR-V depthwise race",
    UnrollOptions,
)
def _pass(module_op: ir.Operation, opts: UnrollOptions | None) -> Counter:
    return unroll_depthwise_taps(module_op, opts)
