"""xgen-split-reductions: a long sum (or max, min) becomes a sum of partial sums
(associativity).

Why: IREE's llvm-cpu codegen distributes a reduction over its parallel (output) dimension only.
A global average pool over a large image has few outputs and a long reduction: EfficientNet-B0's
first squeeze-excite pool sums 12544 pixels for each of 32 channels. IREE gave it 8 workgroups
of 4 channels each, every one streaming the whole 1.6 MB tensor, and summed along the pixels:
0.09-0.10 ms on one thread for 1.6 MB, and no faster on two. Split in two steps,

    partial[s, c] = sum over pixels p in chunk s of x[p, c]     (S chunks, parallel over s, c)
    out[c]        = sum over s of partial[s, c]

the first step has S x more parallel work, and each of its workgroups reads whole rows
(channels innermost): the same pool took 0.029 ms on one thread (measured standalone,
``iree-benchmark-module``).

What it matches: a ``linalg.generic`` with one input and one output whose body is
``out + in`` (f32 ``arith.addf``; or max / min: ``arith.maximumf``, ``minimumf``, ``maxnumf``,
``minnumf``, as dynamic quantization's range of an activation), whose input is read through a
permutation of all loops, and
whose reduction loops cover at least ``min-elems`` elements for each of at most
``max-outputs`` outputs. The outermost input dimension that a reduction loop reads is split
into ``S x (N/S)`` (the outermost that is not 1), ``S`` the largest divisor of ``N`` up to
``max-split``; each chunk starts from the combiner's identity (0, -inf, +inf); no split below 4
chunks. With more outputs IREE's own workgroups do well enough: a 56x56x144 pool took 0.029 ms
as it was and 0.052 split, while 56x56x96 went 0.041 -> 0.020 and 112x112x32 0.10-0.13 ->
0.027 (one thread, standalone). Not matched: other combiners (product, integer ones),
reductions read through windows or broadcasts. A sum pool whose window is the whole image
(``linalg.pooling_nhwc_sum`` / ``pooling_nchw_sum``, what ONNX's GlobalAveragePool becomes) is
the same sum and is split the same way.

Numerics: float reassociation only (each output is the sum of its chunk sums); max and min
exact.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass

from .._mlir import arith, ir, tensor
from ..diagnostics import format_location
from ..irutil import ops_named
from .generic_util import (
    body_ops,
    empty,
    fill,
    generic,
    indexing_maps,
    iterator_types,
    loop_dims,
    map_dims,
    num_inputs,
    tensor_shape,
)
from .registry import register_pass


@dataclass
class SplitReductionsOptions:
    min_elems: int = 2048  # reduced elements per output below which a sum is left alone
    max_outputs: int = 128  # outputs above which IREE's own distribution is left alone
    max_split: int = 16  # most chunks
    verbose: bool = False  # print each split to stderr


# combiner -> the value every chunk starts from (its identity)
_COMBINERS = {
    "arith.addf": 0.0,
    "arith.maximumf": float("-inf"),
    "arith.minimumf": float("inf"),
    "arith.maxnumf": float("-inf"),
    "arith.minnumf": float("inf"),
}


_KINDS = {"arith.addf": "sum", "arith.maximumf": "max", "arith.maxnumf": "max"}
_KINDS |= {"arith.minimumf": "min", "arith.minnumf": "min"}


def _combiner(op: ir.Operation) -> str | None:
    """The body's ``out = f(in, out)`` op name, for a combiner this pass splits."""
    ops = body_ops(op)
    if len(ops) != 2 or ops[0].name not in _COMBINERS or ops[1].name != "linalg.yield":
        return None
    args = list(op.regions[0].blocks[0].arguments)
    if set(ops[0].operands) != set(args) or ops[1].operands[0] != ops[0].results[0]:
        return None
    return ops[0].name


def _chunks(n: int, most: int) -> int:
    return max(s for s in range(1, min(n, most) + 1) if n % s == 0)


def _plan(op: ir.Operation, opts: SplitReductionsOptions) -> tuple[int, int] | None:
    """(input dim to split, chunk count) for a matching sum, else None."""
    if op.name != "linalg.generic" or num_inputs(op) != 1 or len(op.results) != 1:
        return None
    kinds = iterator_types(op)
    if "reduction" not in kinds or _combiner(op) is None:
        return None
    elem = ir.RankedTensorType(op.results[0].type).element_type
    if not isinstance(elem, ir.F32Type):
        return None
    in_map, out_map = indexing_maps(op)
    reads = loop_dims(in_map)
    if reads is None or sorted(reads) != list(range(len(kinds))):
        return None  # the input must be read through a permutation of all loops
    if map_dims(out_map) is None:
        return None
    return _split_plan(tensor_shape(op.operands[0]), reads, kinds, opts)


def _split_plan(
    shape: list[int] | None, reads: list[int], kinds: list[str], opts: SplitReductionsOptions
) -> tuple[int, int] | None:
    """Input dim ``k`` is read by loop ``reads[k]``; split or not (see the module doc)."""
    if shape is None or any(s < 0 for s in shape):
        return None
    reduced = [k for k, loop in enumerate(reads) if kinds[loop] == "reduction"]
    elems = outputs = 1
    for k, size in enumerate(shape):
        if k in reduced:
            elems *= size
        else:
            outputs *= size
    # the outermost reduced dim of the input that is not 1: whole inner rows per chunk
    dim = min((k for k in reduced if shape[k] > 1), default=min(reduced))
    split = _chunks(shape[dim], opts.max_split)
    if elems < opts.min_elems or outputs > opts.max_outputs or split < 4:
        return None
    return dim, split


# A global sum pool as a sum over loops (n, c, h, w): which loop reads each input dim, and the
# output map's results (loop or constant 0 for the 1x1 image).
_GLOBAL_POOLS = {
    "linalg.pooling_nhwc_sum": ([0, 2, 3, 1], [0, None, None, 1]),
    "linalg.pooling_nchw_sum": ([0, 1, 2, 3], [0, 1, None, None]),
}
_POOL_KINDS = ["parallel", "parallel", "reduction", "reduction"]


def _global_pool(op: ir.Operation) -> bool:
    """A sum pool whose window is the whole image (ONNX's GlobalAveragePool after
    xgen-nhwc-convs): the same sum as a reduction over H and W."""
    if op.name not in _GLOBAL_POOLS:
        return False
    shape, window = tensor_shape(op.operands[0]), tensor_shape(op.operands[1])
    out = tensor_shape(op.results[0])
    elem = ir.RankedTensorType(op.results[0].type).element_type
    if shape is None or window is None or out is None or not isinstance(elem, ir.F32Type):
        return False
    hw = [1, 2] if op.name == "linalg.pooling_nhwc_sum" else [2, 3]
    dilations = list(ir.DenseIntElementsAttr(op.attributes["dilations"]))
    return (
        window == [shape[i] for i in hw] and [out[i] for i in hw] == [1, 1] and dilations == [1, 1]
    )


def _pool_as_sum(op: ir.Operation) -> ir.Operation:
    """Replace global pool ``op`` by the equivalent sum generic (returned)."""
    reads, out_dims = _GLOBAL_POOLS[op.name]
    zero = ir.AffineConstantExpr.get(0)
    out_map = [zero if d is None else ir.AffineDimExpr.get(d) for d in out_dims]
    with ir.InsertionPoint(op), op.location:
        new = generic(
            [op.operands[0]],
            [
                ir.AffineMap.get(4, 0, [ir.AffineDimExpr.get(r) for r in reads]),
                ir.AffineMap.get(4, 0, out_map),
            ],
            op.operands[2],
            _POOL_KINDS,
            _add_body,
        )
    op.results[0].replace_all_uses_with(new.results[0])
    op.erase()
    return new


def _add_body(args: list[ir.Value]) -> list[ir.Value]:
    return [arith.AddFOp(args[0], args[1]).result]


def _body_of(combiner: str):
    def build(args: list[ir.Value]) -> list[ir.Value]:
        made = ir.Operation.create(combiner, [args[0].type], [args[0], args[1]])
        return [made.results[0]]

    return build


def split_one(op: ir.Operation, dim: int, split: int) -> None:
    """Rewrite ``op`` as chunk sums (a new leading parallel loop) + a sum over the chunks."""
    x, init = op.operands[0], op.operands[1]
    combiner = _combiner(op) or "arith.addf"  # (a global pool is a sum)
    combine = _body_of(combiner)
    shape = tensor_shape(x)
    elem = ir.RankedTensorType(x.type).element_type
    in_map, out_map = indexing_maps(op)
    kinds = iterator_types(op)
    n = len(kinds)
    reads = loop_dims(in_map)
    out_dims = map_dims(out_map)
    # _plan checked them: a static input read through a permutation of all loops
    assert shape is not None and reads is not None and out_dims is not None

    def d(i: int) -> ir.AffineExpr:  # loop i of the original op, shifted past the chunk loop
        return ir.AffineDimExpr.get(i + 1)

    chunk = ir.AffineDimExpr.get(0)
    with ir.InsertionPoint(op), op.location:
        groups = [[i] for i in range(dim)] + [[dim, dim + 1]]
        groups += [[i + 1] for i in range(dim + 1, len(shape))]
        new_shape = [*shape[:dim], split, shape[dim] // split, *shape[dim + 1 :]]
        split_x = tensor.ExpandShapeOp(
            ir.RankedTensorType.get(new_shape, elem), x, groups, [], new_shape
        ).result
        x_exprs = [d(r) for r in reads[:dim]] + [chunk, d(reads[dim])]
        x_exprs += [d(r) for r in reads[dim + 1 :]]
        out_exprs = [ir.AffineConstantExpr.get(0) if r is None else d(r) for r in out_dims]
        out_shape = tensor_shape(init)
        assert out_shape is not None  # a linalg.generic's init is a ranked tensor
        start = arith.ConstantOp(elem, ir.FloatAttr.get(elem, _COMBINERS[combiner])).result
        partial_init = fill(start, empty([split, *out_shape], elem))
        partial = generic(
            [split_x],
            [ir.AffineMap.get(n + 1, 0, x_exprs), ir.AffineMap.get(n + 1, 0, [chunk, *out_exprs])],
            partial_init,
            ["parallel", *kinds],
            combine,
        ).results[0]
        m = len(out_shape)
        total = generic(
            [partial],
            [
                ir.AffineMap.get_identity(m + 1),
                ir.AffineMap.get(m + 1, 0, [ir.AffineDimExpr.get(i + 1) for i in range(m)]),
            ],
            init,
            ["reduction", *["parallel"] * m],
            combine,
        ).results[0]
    op.results[0].replace_all_uses_with(total)
    op.erase()


def split_reductions(
    module_op: ir.Operation, opts: SplitReductionsOptions | None = None
) -> Counter:
    """Split every matching sum; returns counts by chunk count."""
    opts = opts or SplitReductionsOptions()
    counts: Counter[str] = Counter()
    with module_op.context:
        for op in ops_named(module_op, "linalg.generic", *_GLOBAL_POOLS):
            if op.name in _GLOBAL_POOLS:
                if not _global_pool(op):
                    continue
                reads = _GLOBAL_POOLS[op.name][0]
                plan = _split_plan(tensor_shape(op.operands[0]), reads, _POOL_KINDS, opts)
                if plan is not None:
                    op = _pool_as_sum(op)
            else:
                plan = _plan(op, opts)
            if plan is None:
                continue
            dim, split = plan
            what = _KINDS.get(_combiner(op) or "arith.addf", "sum")
            if opts.verbose:
                in_shape = tensor_shape(op.operands[0])
                assert in_shape is not None  # _split_plan read it
                shape = "x".join(map(str, in_shape))
                print(
                    f"xgen-split-reductions: {format_location(op.location)}: {what} over "
                    f"{shape} split into {split} chunks along dim {dim}",
                    file=sys.stderr,
                )
            split_one(op, dim, split)
            counts[f"{what} split in {split}"] += 1
    return counts


@register_pass(
    "xgen-split-reductions",
    "A long sum with few outputs (a global pool) becomes chunk sums + a sum over the chunks "
    "(float reassociation only).",
    SplitReductionsOptions,
)
def _pass(module_op: ir.Operation, opts: SplitReductionsOptions | None) -> Counter:
    return split_reductions(module_op, opts)
