"""xgen-lower-sparse-to-linalg: xgen_sparse convolutions back to dense linalg convolutions.

The reference semantics of the dialect and the fallback wherever pattern kernels cannot run
(batch > 1, non-constant tables, targets without a kernel toolchain such as Vulkan): dense
weights are rebuilt from the pattern/FKW form and the op becomes tensor.pad +
linalg.broadcast(bias) + linalg.conv_2d_nchw_fchw, exactly what torch-mlir emits.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._mlir import ir
from ..dialects.sparse import FKW_CONV, PATTERN_CONV, geometry, patterns_of
from ..irutil import ConstantReader, constant_op, ops_named
from .registry import PassFailure, register_pass

_ids = [0]


def dense_from_fkw(op: ir.Operation, reader: ConstantReader) -> np.ndarray:
    """Rebuild the (F, C, KH, KW) weights of an fkw_conv2d from its compact storage."""
    g = geometry(op)
    wts, order, gfo, gko, chan, pat = (reader.value_of(op.operands[i]) for i in (1, 3, 4, 5, 6, 7))
    if wts is None or order is None or gfo is None or gko is None or chan is None or pat is None:
        raise PassFailure(
            f"{op.location}: fkw_conv2d needs constant weights and tables to be lowered"
        )
    pats = patterns_of(op)
    n = len(pats[0])
    dense = np.zeros((g.f, g.c, g.kh * g.kw), np.float32)
    pos = 0
    for gi in range(len(gfo) - 1):
        filters = order[gfo[gi] : gfo[gi + 1]]
        for k in range(gko[gi], gko[gi + 1]):
            block = wts[pos : pos + n * len(filters)].reshape(n, len(filters))
            dense[np.ix_(filters, [chan[k]], pats[pat[k]])] = block.T[:, None, :]
            pos += n * len(filters)
    return dense.reshape(g.f, g.c, g.kh, g.kw)


def _t(shape: list[int]) -> str:
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


def _dense_conv(op: ir.Operation, weight_value: ir.Value) -> None:
    g = geometry(op)
    _ids[0] += 1
    name = f"xgen_dense_conv_{_ids[0]}"
    pt, pl, pb, pr = g.padding
    hp, wp = g.h + pt + pb, g.w + pl + pr
    oh, ow = g.out_hw
    xin, xp = _t([g.n, g.c, g.h, g.w]), _t([g.n, g.c, hp, wp])
    wt, out = _t([g.f, g.c, g.kh, g.kw]), _t([g.n, g.f, oh, ow])
    text = f"""
func.func private @{name}(%x: {xin}, %w: {wt}, %b: {_t([g.f])}) -> {out} {{
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, {pt}, {pl}] high[0, 0, {pb}, {pr}] {{
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %z : f32
  }} : {xin} to {xp}
  %e = tensor.empty() : {out}
  %bb = linalg.broadcast ins(%b : {_t([g.f])}) outs(%e : {out}) dimensions = [0, 2, 3]
  %c = linalg.conv_2d_nchw_fchw {{dilations = dense<1> : vector<2xi64>, strides = dense<[{g.strides[0]}, {g.strides[1]}]> : vector<2xi64>}} ins(%p, %w : {xp}, {wt}) outs(%bb : {out}) -> {out}
  return %c : {out}
}}"""
    module_op = op
    while module_op.name != "builtin.module":
        module_op = module_op.parent
    snippet = ir.Module.parse(text, op.context)
    body = module_op.regions[0].blocks[0]
    for fn in list(snippet.body.operations):
        fn.operation.move_before(body.operations[0])
    from .._mlir import func

    with ir.InsertionPoint(op), op.location:
        call = func.CallOp(
            [op.results[0].type],
            ir.FlatSymbolRefAttr.get(name),
            [op.operands[0], weight_value, op.operands[2]],
        )
    op.results[0].replace_all_uses_with(call.results[0])
    op.erase()


def lower_fkw_to_linalg(op: ir.Operation, reader: ConstantReader) -> None:
    with ir.InsertionPoint(op), op.location:
        weight = constant_op(dense_from_fkw(op, reader), "xgen_dense_weight")
    _dense_conv(op, weight.result)


def lower_pattern_to_linalg(op: ir.Operation, _reader: Any) -> None:
    _dense_conv(op, op.operands[1])  # its weights are already dense (zeros included)


@register_pass(
    "xgen-lower-sparse-to-linalg",
    "Lower xgen_sparse convolutions to dense linalg convolutions (reference and fallback).",
)
def lower_sparse_to_linalg(module_op: ir.Operation, _opts: Any) -> None:
    reader = ConstantReader(module_op)
    ops = ops_named(module_op, PATTERN_CONV, FKW_CONV)
    for op in ops:
        (lower_pattern_to_linalg if op.name == PATTERN_CONV else lower_fkw_to_linalg)(op, reader)
