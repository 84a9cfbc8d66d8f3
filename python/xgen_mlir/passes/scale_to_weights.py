"""xgen-scale-to-weights: move a per-input-channel scale off a conv's input onto its weights.

Why: a contraction sums over its input channels, so scaling the input by ``s[c]`` before it
equals scaling the weights along their input-channel axis: ``conv(x * s, W) = conv(x, W * s)``
and ``(x * s) @ W = x @ (s[:, None] * W)`` (distributivity of the product over the sum). The
squeeze-excite blocks of EfficientNet and MobileNetV3 end in exactly this: ``x * sigmoid(e)``,
a full-size multiply over H x W x C (its own dispatch), then a 1x1 project conv. After the
rewrite the multiply runs over the C x F weights instead, and the conv reads ``x`` directly.

What it matches: ``linalg.conv_2d_nhwc_hwcf`` / ``conv_2d_nchw_fchw`` / ``matmul`` (default
maps) whose input is a single-use elementwise ``linalg.generic`` computing ``x * s`` (its body
one ``arith.mulf`` of its two inputs), optionally through a single-use ``linalg.transpose``
(torch-mlir's NCHW <-> NHWC shuffle around channels-last convs), where ``x`` is read with the
identity map and ``s`` is broadcast along everything but the dimension that becomes the
contraction's input-channel axis. No padding may sit in between (a pad is not matched).

When it must not fire: ``s`` varying along a spatial or batch dimension (not a weight
property), a multiply with other uses (it would be computed twice), weights at least as
large as the activation (``KH*KW*C*F >= N*C*H*W``: late 7x7 EfficientNet blocks, where the
scale, and the sigmoid IREE fuses into it, would run over more elements than before), and a
contraction ``xgen-winograd-convs`` marked for the generated GEMM kernel or a kernel library
(measured faster there on this host): both pack constant weights at compile time, so scaled
weights would send it back to IREE's code. (xgen-pointwise-kernels' bf16 kernel, later in the
pipeline, takes a filter this pass scaled apart again: constant weights, the scale on its rows.)

Numerics: each term ``(x*s)*w`` becomes ``x*(s*w)``: float reassociation of one product, no
change to NaN propagation (a NaN or Inf in ``s`` still reaches every output it touched).
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .._mlir import arith, ir
from ..byoc import OFFLOAD_ATTR
from ..diagnostics import format_location
from ..irutil import ops_named
from .gemm_kernels import KERNEL_ATTR
from .generic_util import (
    body,
    body_ops,
    empty,
    erase_dead_tree,
    generic,
    has_default_maps,
    indexing_maps,
    is_elementwise,
    is_identity,
    map_dims,
    num_inputs,
    num_uses,
    producer,
    tensor_shape,
    transpose,
)
from .registry import register_pass

# op name -> (input operand's channel dim, weight operand's input-channel dim)
CONTRACTIONS = {
    "linalg.conv_2d_nhwc_hwcf": (3, 2),
    "linalg.conv_2d_nchw_fchw": (1, 1),
    "linalg.matmul": (1, 0),
}


@dataclass
class ScaleToWeightsOptions:
    verbose: bool = False  # print each rewrite (or why a candidate was left) to stderr


def _scaled_input(value: ir.Value) -> tuple[ir.Operation, list[int] | None] | None:
    """The ``x * s`` generic feeding a contraction input (and the transpose between), if any."""
    perm = None
    op = producer(value)
    if op is not None and op.name == "linalg.transpose" and num_uses(value) == 1:
        perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
        value = op.operands[0]
        op = producer(value)
    if op is None or op.name != "linalg.generic" or num_uses(value) != 1:
        return None
    return op, perm


def split_scale(mul: ir.Operation, ch: int) -> tuple[ir.Value, ir.Value, list[int | None]] | None:
    """``(x, s, dims of s's map)`` if ``mul`` is ``x * s`` with ``s`` along loop ``ch`` only
    (None in the dims: s is read at index 0 there)."""
    if not is_elementwise(mul) or num_inputs(mul) != 2:
        return None
    ops = body_ops(mul)
    args = list(body(mul).arguments)
    if [o.name for o in ops] != ["arith.mulf", "linalg.yield"]:
        return None
    if {ops[0].operands[0], ops[0].operands[1]} != {args[0], args[1]}:
        return None
    if ops[1].operands[0] != ops[0].results[0]:
        return None
    maps = indexing_maps(mul)
    out_shape = tensor_shape(mul.results[0])
    assert out_shape is not None  # a linalg.generic's result is a ranked tensor
    for xi, si in ((0, 1), (1, 0)):
        x, s = mul.operands[xi], mul.operands[si]
        dims = map_dims(maps[si])
        if not is_identity(maps[xi]) or tensor_shape(x) != out_shape or dims is None:
            continue
        # a loop of extent 1 (the batch of N=1) reads s at 0 like a broadcast does
        dims = [None if d is not None and d != ch and out_shape[d] == 1 else d for d in dims]
        if [d for d in dims if d is not None] == [ch]:
            return x, s, dims
    return None


def rewrite_one(op: ir.Operation) -> tuple[bool, str | None]:
    """Move the input scale of contraction ``op`` onto its weights.

    Returns (rewritten, what happened); the message is None when the input is no scale at
    all (nothing worth reporting)."""
    in_ch, w_ch = CONTRACTIONS[op.name]
    found = _scaled_input(op.operands[0])
    if found is None or (op.name == "linalg.matmul" and not has_default_maps(op)):
        return False, None
    mul, perm = found
    split = split_scale(mul, perm[in_ch] if perm is not None else in_ch)
    if split is None:
        return False, None
    x, s, s_dims = split
    for attr in (KERNEL_ATTR, OFFLOAD_ATTR):
        if attr in op.attributes:
            kernel = ir.StringAttr(op.attributes[attr]).value
            return False, f"left: marked for {kernel}, which reads its weights as constants"
    weight = op.operands[1]
    w_shape, x_shape = tensor_shape(weight), tensor_shape(x)
    if w_shape is None or x_shape is None:
        return False, "left: dynamic shapes"
    if int(np.prod(w_shape)) >= int(np.prod(x_shape)):
        return False, (
            f"left: weights ({int(np.prod(w_shape))} elements) not smaller than the "
            f"activation ({int(np.prod(x_shape))}): scaling them would cost more"
        )
    w_ty = ir.RankedTensorType(weight.type)
    rank = len(w_shape)
    ctx = op.context
    s_exprs = [
        ir.AffineConstantExpr.get(0, ctx) if d is None else ir.AffineDimExpr.get(w_ch, ctx)
        for d in s_dims
    ]
    s_map = ir.AffineMap.get(rank, 0, s_exprs, ctx)
    ident = ir.AffineMap.get_identity(rank, ctx)
    old_input = op.operands[0]
    with ir.InsertionPoint(op), op.location:
        scaled = generic(
            [weight, s],
            [ident, s_map, ident],
            empty(w_shape, w_ty.element_type),
            ["parallel"] * rank,
            lambda a: [arith.MulFOp(a[0], a[1]).result],
        ).results[0]
        new_input = transpose(x, perm) if perm is not None else x
    op.operands[0] = new_input
    op.operands[1] = scaled
    erase_dead_tree([old_input])
    return True, f"scale of {x_shape} moved onto weights {w_shape}"


def scale_to_weights(module_op: ir.Operation, opts: ScaleToWeightsOptions | None = None) -> Counter:
    """Run the rewrite on every matching contraction; returns counts by op kind."""
    opts = opts or ScaleToWeightsOptions()
    counts: Counter[str] = Counter()
    with module_op.context:
        for op in ops_named(module_op, *CONTRACTIONS):
            rewritten, done = rewrite_one(op)
            if rewritten:
                counts[op.name] += 1
            if opts.verbose and done:
                where = format_location(op.location)
                print(f"xgen-scale-to-weights: {where}: {op.name}: {done}", file=sys.stderr)
    return counts


@register_pass(
    "xgen-scale-to-weights",
    "conv/matmul(x * s[c]) -> conv/matmul(x, W * s[c]): a per-input-channel scale moves onto "
    "the (smaller) weights.",
    ScaleToWeightsOptions,
)
def _pass(module_op: ir.Operation, opts: ScaleToWeightsOptions | None) -> Counter:
    return scale_to_weights(module_op, opts)
