"""xgen-fuse-gather-views: a concat of shifted, padded views of a gather becomes one gather.

Why: MobileBERT's embedding looks up the token embeddings (a gather, ``table[ids[i], c]``),
then concatenates three views of the result along the channels: the next token's embedding
(a slice shifted by one row, zero-padded at the end), the token's own, and the previous
token's (shifted the other way, padded at the start). IREE makes that 5 dispatches: the
gather, one copy per concat piece (the gather's result has three readers, so no piece can be
written in place), and the data-tiling pack of the 128x384 result for the next matmul. All of
them only move data. A gathered element is as cheap to gather again as to copy, so the
whole chain is one gather over the concat's shape. Each output element works out which piece
it is in and where that piece reads the gather, gathers that element, and gives the pad value
where the view is padded. DNNFusion fuses such Reorganize/Shuffle chains into their
One-to-One producer the same way.

What it matches: a ``tensor.concat`` whose every operand is the gather's result ``G``, a
unit-stride static ``tensor.extract_slice`` of ``G``, or a static ``tensor.pad`` of such a
slice, all of the same ``G``. ``G`` is an all-parallel ``linalg.generic``: its inputs are
read through projected permutations, it does not read its init, and its body holds a
``tensor.extract`` (the gather). Every use of ``G`` and of each view must be inside the
chain, so nothing is computed twice.

It must not fire on:
- views of a tensor that is not a gather. Recomputing an arbitrary producer per view could
  cost more than the copies.
- strided or rank-reducing slices;
- a ``G`` or view with readers outside the concat.

Numerics: exact. Every output element is the same table element, or the same pad value, as
before.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from .._mlir import arith, ir, linalg, tensor
from ..diagnostics import format_location
from ..irutil import ops_named
from .generic_util import (
    body,
    body_ops,
    empty,
    erase_dead_tree,
    generic,
    indexing_maps,
    is_identity,
    iterator_types,
    map_dims,
    num_inputs,
    num_uses,
    producer,
    static_i64s,
    tensor_shape,
)
from .registry import register_pass


@dataclass
class FuseGatherViewsOptions:
    verbose: bool = False  # print each rewrite (or why a candidate concat was left) to stderr


@dataclass
class View:
    """A concat piece: ``G[off : off + size]`` padded by ``low`` in front (high implied)."""

    offsets: list[int]
    sizes: list[int]
    low: list[int]
    shape: list[int]  # the piece's shape (sizes + low + high)
    pad_value: ir.Value | None  # None: an unpadded piece
    ops: list[ir.Operation]  # the slice/pad ops of this view (erased after the rewrite)


def _as_view(value: ir.Value) -> tuple[ir.Value, View] | str:
    """(G, the view) for one concat operand, or why it is not a static view."""
    shape = tensor_shape(value)
    if shape is None:
        return "a dynamic shape"
    rank = len(shape)
    zeros = [0] * rank
    view_ops: list[ir.Operation] = []
    low: list[int] | None
    pad_value, low = None, zeros
    op = producer(value)
    if op is not None and op.name == "tensor.pad":
        if len(op.operands) != 1 or num_uses(value) != 1:
            return "a pad with dynamic amounts or other readers"
        low = static_i64s(op.attributes["static_low"])
        if low is None or any(d < 0 for d in low):
            return "a pad with dynamic or negative amounts"
        pad_value = _pad_value(op)
        if pad_value is None:
            return "a pad whose value is computed"
        view_ops.append(op)
        value = op.operands[0]
        op = producer(value)
    offsets: list[int] | None
    sizes, offsets = tensor_shape(value), zeros
    assert sizes is not None  # the operand (its shape read above) or a pad's source: ranked
    if op is not None and op.name == "tensor.extract_slice":
        if len(op.operands) != 1 or num_uses(value) != 1:
            return "a slice with dynamic offsets or other readers"
        offsets = static_i64s(op.attributes["static_offsets"])
        strides = static_i64s(op.attributes["static_strides"])
        source_shape = tensor_shape(op.operands[0])
        assert source_shape is not None  # a tensor.extract_slice's source is a ranked tensor
        if offsets is None or strides != [1] * rank or len(source_shape) != rank:
            return "a strided or rank-reducing slice"
        view_ops.append(op)
        value = op.operands[0]
    return value, View(offsets, sizes, low, shape, pad_value, view_ops)


def _pad_value(pad: ir.Operation) -> ir.Value | None:
    """The constant a pad fills with, as a value usable outside the pad's body."""
    yielded = body_ops(pad)[-1].operands[0]
    owner = producer(yielded)
    if owner is None:
        return None
    inside = owner.parent is not None and owner.parent.operation == pad
    if not inside:
        return yielded
    return yielded if owner.name == "arith.constant" else None


def _gather(value: ir.Value) -> tuple[ir.Operation | None, str]:
    op = producer(value)
    if op is None or op.name != "linalg.generic" or len(op.results) != 1:
        return None, "the views are not of a linalg.generic"
    if any(k != "parallel" for k in iterator_types(op)):
        return None, "the producer has reductions"
    maps = indexing_maps(op)
    n_in = num_inputs(op)
    if not is_identity(maps[-1]) or any(map_dims(m) is None for m in maps[:n_in]):
        return None, "the producer's maps are not projected permutations"
    if num_uses(body(op).arguments[n_in]) != 0:
        return None, "the producer reads its init"
    if not any(o.name == "tensor.extract" for o in body_ops(op)):
        return None, "the producer is not a gather (recomputing it could cost more than a copy)"
    return op, ""


def _match(concat: ir.Operation) -> tuple[ir.Operation, list[View]] | str:
    views, source = [], None
    for operand in concat.operands:
        found = _as_view(operand)
        if isinstance(found, str):
            return found
        g, view = found
        if source is not None and g != source:
            return "the pieces view different tensors"
        source = g
        views.append(view)
    gather, why = _gather(source)
    if gather is None:
        return why
    if num_uses(source) != len(views):  # each view reads it once: no other reader
        return "the gathered tensor has readers outside the concat"
    return gather, views


def _index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def _select_chain(conds: list[ir.Value], values: list[ir.Value]) -> ir.Value:
    """values[k] for the first conds[k] that holds (the last value otherwise)."""
    out = values[-1]
    for cond, val in zip(reversed(conds), reversed(values[:-1]), strict=True):
        out = arith.SelectOp(cond, val, out).result
    return out


def _build_body(gather: ir.Operation, views: list[View], dim: int, rank: int) -> ir.Value:
    """The fused element: which piece, where it reads G, the gather there (or the pad)."""
    q = [linalg.IndexOp(d).result for d in range(rank)]
    starts, acc = [], 0
    for v in views:
        starts.append(acc)
        acc += v.shape[dim]
    slt, sge = arith.CmpIPredicate.slt, arith.CmpIPredicate.sge
    in_piece = [arith.CmpIOp(slt, q[dim], _index(s)).result for s in starts[1:]]
    true = arith.ConstantOp(ir.IntegerType.get_signless(1), 1).result
    srcs: list[list[ir.Value]] = []
    valids: list[ir.Value] = []
    for v, start in zip(views, starts, strict=True):
        src, valid = [], true
        for d in range(rank):
            local = q[d] if d != dim or start == 0 else arith.SubIOp(q[d], _index(start)).result
            shift = v.offsets[d] - v.low[d]
            src.append(local if shift == 0 else arith.AddIOp(local, _index(shift)).result)
            if v.pad_value is not None and (v.low[d] or v.shape[d] != v.sizes[d]):
                inside = arith.AndIOp(
                    arith.CmpIOp(sge, local, _index(v.low[d])).result,
                    arith.CmpIOp(slt, local, _index(v.low[d] + v.sizes[d])).result,
                ).result
                valid = inside if valid is true else arith.AndIOp(valid, inside).result
        srcs.append(src)
        valids.append(valid)
    valid = _select_chain(in_piece, valids)
    zero = _index(0)
    point = [
        arith.SelectOp(valid, _select_chain(in_piece, [s[d] for s in srcs]), zero).result
        for d in range(rank)
    ]
    value = _gather_at(gather, point)
    pads = [v.pad_value if v.pad_value is not None else value for v in views]
    pad = _select_chain(in_piece, pads) if any(v.pad_value is not None for v in views) else value
    return arith.SelectOp(valid, value, pad).result


def _gather_at(gather: ir.Operation, point: list[ir.Value]) -> ir.Value:
    """G's body evaluated at loop point ``point``: inputs read with tensor.extract, the
    ``linalg.index`` ops replaced by the point's coordinates."""
    blk = body(gather)
    n_in = num_inputs(gather)
    mapping: dict[ir.Value, ir.Value] = {}
    for arg, operand, amap in zip(
        list(blk.arguments)[:n_in],
        list(gather.operands)[:n_in],
        indexing_maps(gather)[:n_in],
        strict=True,
    ):
        dims = map_dims(amap)
        assert dims is not None  # _gather checked the input maps
        idx = [point[d] if d is not None else _index(0) for d in dims]
        mapping[arg] = tensor.ExtractOp(operand, idx).result
    result = None
    for op in body_ops(gather):
        if op.name == "linalg.yield":
            result = mapping.get(op.operands[0], op.operands[0])
            break
        if op.name == "linalg.index":
            mapping[op.results[0]] = point[ir.IntegerAttr(op.attributes["dim"]).value]
            continue
        clone = op.clone()
        for i, v in enumerate(clone.operands):
            if v in mapping:
                clone.operands[i] = mapping[v]
        mapping.update(zip(op.results, clone.results, strict=True))
    return result


def rewrite_one(concat: ir.Operation) -> tuple[bool, str | None]:
    found = _match(concat)
    if isinstance(found, str):
        return False, f"left: {found}"
    gather, views = found
    dim = ir.IntegerAttr(concat.attributes["dim"]).value
    shape = tensor_shape(concat.results[0])
    assert shape is not None  # tensor.concat's result is a ranked tensor
    elem = ir.RankedTensorType(concat.results[0].type).element_type
    rank = len(shape)
    with ir.InsertionPoint(concat), concat.location:
        # a pad value defined inside its pad's body is a constant (_pad_value): recreate it here
        for v in views:
            owner = producer(v.pad_value) if v.pad_value is not None else None
            if owner is not None and owner.parent.operation.name == "tensor.pad":
                v.pad_value = owner.clone().results[0]
        fused = generic(
            [],
            [ir.AffineMap.get_identity(rank)],
            empty(shape, elem),
            ["parallel"] * rank,
            lambda _args: [_build_body(gather, views, dim, rank)],
        )
    done = f"{len(views)} views of a {tensor_shape(gather.results[0])} gather -> one gather"
    concat.results[0].replace_all_uses_with(fused.results[0])
    operands = list(concat.operands)
    concat.erase()
    erase_dead_tree(operands)
    return True, done


def fuse_gather_views(module_op: ir.Operation, opts: FuseGatherViewsOptions | None = None) -> int:
    opts = opts or FuseGatherViewsOptions()
    count = 0
    with module_op.context:
        for op in ops_named(module_op, "tensor.concat"):
            where = format_location(op.location)
            rewritten, done = rewrite_one(op)
            count += rewritten
            if opts.verbose and done:
                print(f"xgen-fuse-gather-views: {where}: {done}", file=sys.stderr)
    return count


@register_pass(
    "xgen-fuse-gather-views",
    "concat(shifted/padded slices of a gather) -> one gather over the concat's shape.",
    FuseGatherViewsOptions,
)
def _pass(module_op: ir.Operation, opts: FuseGatherViewsOptions | None) -> None:
    fuse_gather_views(module_op, opts)
