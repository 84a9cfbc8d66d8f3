"""xgen-space-to-depth: a concat of strided slices that is a space-to-depth becomes a transpose.

Why: YOLOv5's and YOLOX's "Focus" stem (ddddocr's detector, for one) slices the image into
its four 2x2 phases, ``x[..., 0::2, 0::2]``, ``x[..., 1::2, 0::2]``, ... and concatenates
them along the channels. torch-mlir imports each phase as strided ``tensor.extract_slice``
ops and IREE gives each its own copy dispatch that reads every other element, plus a copy
for the concat: on a 416x416 image about 4 ms of 50 on an AVX2 host, for moving 2 MB. The
same data movement is one reshape and one transpose: with ``x`` seen as
``[N, C, H/2, 2, W/2, 2]``, phase ``(dy, dx)`` of channel ``c`` is ``x[n, c, h, dy, w, dx]``,
so the concat is that tensor transposed to ``[N, (phase), C, H/2, W/2]`` with the phase
digits in the order the concat lists them, then collapsed. One dispatch, unit-stride writes.

What it matches: a ``tensor.concat`` along dim ``d`` whose operands are each a chain of
static, non-rank-reducing ``tensor.extract_slice`` ops of one tensor ``S`` that composes to:
full extent and unit stride on every dim but a set ``P`` of dims (``d`` not in ``P``), and on
each ``j`` in ``P`` stride ``s_j``, an offset below ``s_j`` and ``S_j / s_j`` elements
(``s_j`` dividing ``S_j``). The operands' offsets must enumerate every phase exactly once in
a mixed-radix order over ``P`` (either dim order for two dims), so that the concat index is
a digit expansion of the phase. Any strides and any number of strided dims work that way.

It must not fire on:
- unit-stride pieces (an ordinary concat), pieces of different tensors, or a rank-reducing
  or dynamic slice;
- phases missing, repeated or listed in an order that is not a digit expansion (the concat
  would then be a gather, not a transpose);
- an odd extent (``S_j`` not a multiple of the stride: the phases differ in size);
- a concat along one of the strided dims;
- a dynamic shape (the reshape would need its sizes at run time).

Numerics: exact; only data movement changes.
"""

from __future__ import annotations

import itertools
import sys
from collections import Counter
from dataclasses import dataclass

from .._mlir import ir, tensor
from ..diagnostics import format_location
from ..irutil import ops_named
from .generic_util import (
    erase_dead_tree,
    has_dynamic_shape,
    producer,
    static_i64s,
    tensor_shape,
    transpose,
)
from .registry import register_pass


@dataclass
class SpaceToDepthOptions:
    verbose: bool = False  # print each rewrite (or why a concat of strided slices was left)


@dataclass
class Phase:
    """One concat operand as ``S[offsets :: strides]`` (full size on unit-stride dims)."""

    source: ir.Value
    offsets: list[int]
    strides: list[int]
    sizes: list[int]


def _compose(value: ir.Value) -> Phase | str:
    """Follow a chain of static extract_slices down to the tensor they view."""
    shape = tensor_shape(value)
    if shape is None:
        return "a dynamic shape"
    rank = len(shape)
    offsets, strides = [0] * rank, [1] * rank
    op = producer(value)
    if op is None or op.name != "tensor.extract_slice":
        return "a piece that is not a slice"
    while op is not None and op.name == "tensor.extract_slice":
        off = static_i64s(op.attributes["static_offsets"])
        st = static_i64s(op.attributes["static_strides"])
        src_shape = tensor_shape(op.operands[0])
        if len(op.operands) != 1 or off is None or st is None or src_shape is None:
            return "a slice with dynamic offsets, sizes or strides"
        if len(src_shape) != rank:
            return "a rank-reducing slice"
        # element i of the chain so far is this slice's element offsets + i * strides
        offsets = [o + a * s for o, a, s in zip(off, offsets, st, strict=True)]
        strides = [a * s for a, s in zip(strides, st, strict=True)]
        value = op.operands[0]
        op = producer(value)
    return Phase(value, offsets, strides, shape)


def _digit_order(phases: list[Phase], dims: list[int]) -> list[int] | None:
    """The order of ``dims`` (most significant first) in which concat index k is the
    mixed-radix number of phase k's offsets; None when no order is."""
    strides = phases[0].strides
    for order in itertools.permutations(dims):
        ok = True
        for k, ph in enumerate(phases):
            number = 0
            for j in order:
                number = number * strides[j] + ph.offsets[j]
            if number != k:
                ok = False
                break
        if ok:
            return list(order)
    return None


def _match(concat: ir.Operation) -> tuple[ir.Value, list[int], list[int], list[int]] | str:
    """(S, the strides, the strided dims, their digit order) or why the concat is left."""
    dim = ir.IntegerAttr(concat.attributes["dim"]).value
    phases = []
    for operand in concat.operands:
        found = _compose(operand)
        if isinstance(found, str):
            return found
        phases.append(found)
    source = phases[0].source
    src_shape = tensor_shape(source)
    if src_shape is None or has_dynamic_shape(source, concat.results[0]):
        return "a dynamic shape"
    if any(ph.source != source for ph in phases):
        return "the pieces slice different tensors"
    strides = phases[0].strides
    if any(ph.strides != strides for ph in phases):
        return "the pieces have different strides"
    strided = [j for j, s in enumerate(strides) if s != 1]
    if not strided:
        return "unit-stride pieces (an ordinary concat)"
    if dim in strided:
        return "the concat runs along a strided dim"
    for ph in phases:
        for j, size in enumerate(src_shape):
            s = strides[j]
            if size % s or ph.sizes[j] != size // s or not 0 <= ph.offsets[j] < s:
                return "a piece is not one whole phase (odd extent, offset or size)"
    count = 1
    for j in strided:
        count *= strides[j]
    if len(phases) != count:
        return f"{len(phases)} pieces for {count} phases"
    order = _digit_order(phases, strided)
    if order is None:
        return "the phases are not listed in a digit order (a gather, not a transpose)"
    return source, strides, strided, order


def rewrite_one(concat: ir.Operation) -> tuple[bool, str]:
    found = _match(concat)
    if isinstance(found, str):
        return False, f"left: {found}"
    source, strides, strided, order = found
    dim = ir.IntegerAttr(concat.attributes["dim"]).value
    src_shape = tensor_shape(source)
    assert src_shape is not None  # _match checked
    elem = ir.RankedTensorType(source.type).element_type
    # [S_0, ..., S_j/s_j, s_j, ...]: hi[j] / lo[j] are the positions of dim j's two parts
    expanded: list[int] = []
    groups: list[list[int]] = []
    hi: dict[int, int] = {}
    lo: dict[int, int] = {}
    for j, size in enumerate(src_shape):
        if j in strided:
            hi[j], lo[j] = len(expanded), len(expanded) + 1
            groups.append([hi[j], lo[j]])
            expanded += [size // strides[j], strides[j]]
        else:
            hi[j] = len(expanded)
            groups.append([hi[j]])
            expanded.append(size)
    perm: list[int] = []
    out_groups: list[list[int]] = []
    for i in range(len(src_shape)):
        start = len(perm)
        perm += ([lo[j] for j in order] + [hi[i]]) if i == dim else [hi[i]]
        out_groups.append(list(range(start, len(perm))))
    with ir.InsertionPoint(concat), concat.location:
        ex = tensor.ExpandShapeOp(
            ir.RankedTensorType.get(expanded, elem), source, groups, [], expanded
        ).result
        moved = transpose(ex, perm)
        result = tensor.CollapseShapeOp(concat.results[0].type, moved, out_groups).result
    concat.results[0].replace_all_uses_with(result)
    operands = list(concat.operands)
    concat.erase()
    erase_dead_tree(operands)
    phases = "x".join(str(strides[j]) for j in strided)
    return True, f"{len(operands)} strided slices ({phases} phases) -> one transpose"


# concats that are no candidate at all: not worth a line in verbose mode
_NOT_CANDIDATES = ("left: a piece that is not a slice", "left: unit-stride pieces")
REWRITE = "tensor.concat of strided slices as a transpose"


def space_to_depth(module_op: ir.Operation, opts: SpaceToDepthOptions | None = None) -> Counter:
    """Rewrite every matching concat; returns the count under ``REWRITE``."""
    opts = opts or SpaceToDepthOptions()
    count: Counter[str] = Counter()
    with module_op.context:
        for op in ops_named(module_op, "tensor.concat"):
            where = format_location(op.location)
            rewritten, done = rewrite_one(op)
            count[REWRITE] += rewritten
            if opts.verbose and not done.startswith(_NOT_CANDIDATES):
                print(f"xgen-space-to-depth: {where}: {done}", file=sys.stderr)
    return count


@register_pass(
    "xgen-space-to-depth",
    "concat(strided slices that enumerate a tensor's phases) -> reshape + one transpose.",
    SpaceToDepthOptions,
)
def _pass(module_op: ir.Operation, opts: SpaceToDepthOptions | None) -> Counter:
    return space_to_depth(module_op, opts)
