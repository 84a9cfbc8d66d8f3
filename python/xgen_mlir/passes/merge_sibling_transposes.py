"""xgen-merge-sibling-transposes: the heads' transposes of Q, K and V become one transpose.

Why: after ``xgen-merge-sibling-matmuls`` (and in GPT-2, whose ``c_attn`` is one matmul)
attention computes Q/K/V as one tensor ``X`` of shape ``[.., S, N*H*D]`` that is cut into N
column slices; each slice is reshaped to heads (``expand_shape`` to ``[.., S, H, D]``) and
transposed (Q and V by ``[0, 2, 1, 3]``, K often by ``[0, 2, 3, 1]``, i.e. K^T). IREE makes
each of those transposes a dispatch of its own: three per layer. Here ``X`` is reshaped once
to ``[.., S, N, H, D]`` and transposed once, by the members' common permutation with the new
N dimension in front (``[N, .., H, S, D]``); each member is then the N-th slice along that
leading dimension, a contiguous block (no copy). A member whose permutation differs from the
common one (K^T) gets a transpose of its slice by the composed permutation (``[0, 1, 3, 2]``
for K^T), which IREE folds into the consuming batched matmul's indexing maps.

What it matches: a statically shaped value ``X`` whose ``tensor.extract_slice`` users cut only
its last dimension, with unit strides, into N >= 2 slices of one width that cover it exactly;
each slice has one use, an ``expand_shape`` (all with the same reassociation and result
shape) whose one use is a transpose (``linalg.transpose`` or a generic that only permutes).
Not matched: slices that leave part of ``X`` out or overlap, different widths or reshapes,
a slice or reshape with another user, a slice across other dimensions, dynamic shapes, ops in
different blocks. Other (non-slice) users of ``X`` are left alone.

Numerics: exact (only data movement changes).
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass

from .._mlir import ir, tensor
from ..diagnostics import format_location
from ..irutil import ops_named
from .cancel_reshapes import _named_transpose, transpose_perm
from .generic_util import erase_dead_tree, num_uses
from .registry import register_pass


@dataclass
class MergeTransposesOptions:
    min_group: int = 2  # merge only groups of at least this many slices
    verbose: bool = False  # print every merge to stderr


@dataclass
class Member:
    index: int  # which of the N slices (offset / width)
    slice_op: ir.Operation
    expand: ir.Operation
    transpose: ir.Operation
    perm: list[int]


def _ints(op: ir.Operation, name: str) -> list[int]:
    return list(ir.DenseI64ArrayAttr(op.attributes[name]))


def _static(ty: ir.Type) -> list[int] | None:
    if not isinstance(ty, ir.RankedTensorType) or not ty.has_static_shape:
        return None
    return list(ty.shape)


def _column_slice(op: ir.Operation, shape: list[int]) -> tuple[int, int] | None:
    """``(offset, width)`` of a slice of a value of ``shape`` that cuts only its last
    dimension (unit strides, no rank reduction, static), else None."""
    if len(op.operands) != 1:  # dynamic offsets/sizes/strides are extra operands
        return None
    offsets, sizes, strides = (
        _ints(op, k) for k in ("static_offsets", "static_sizes", "static_strides")
    )
    rank = len(shape)
    if _static(op.results[0].type) != sizes or len(sizes) != rank:
        return None
    if any(s != 1 for s in strides) or offsets[:-1] != [0] * (rank - 1):
        return None
    if sizes[:-1] != shape[:-1]:
        return None
    return offsets[-1], sizes[-1]


def _reassociation(op: ir.Operation) -> list[list[int]]:
    groups = ir.ArrayAttr(op.attributes["reassociation"])
    return [[ir.IntegerAttr(d).value for d in g] for g in groups]


def _only_user(value: ir.Value) -> ir.Operation | None:
    if num_uses(value) != 1:
        return None
    return next(iter(value.uses)).owner.operation


def _members(source: ir.Value) -> list[Member] | None:
    """The slice -> expand -> transpose chains on ``source``, sorted by slice, when they
    cover it exactly and have one shape; else None."""
    shape = _static(source.type)
    if shape is None or not shape:
        return None
    found: list[tuple[int, int, ir.Operation]] = []
    for use in source.uses:
        user = use.owner.operation
        if user.name != "tensor.extract_slice":
            continue
        cut = _column_slice(user, shape)
        if cut is None:
            return None  # some other slice of X: leave X alone
        found.append((*cut, user))
    if len(found) < 2:
        return None
    width = found[0][1]
    if any(w != width for _, w, _ in found) or width == 0 or shape[-1] % width:
        return None
    if sorted(off for off, _, _ in found) != list(range(0, shape[-1], width)):
        return None  # gaps or overlaps
    members: list[Member] = []
    ref_expand: tuple[str, list[int]] | None = None
    for off, _, slice_op in found:
        expand = _only_user(slice_op.results[0])
        if expand is None or expand.name != "tensor.expand_shape" or len(expand.operands) != 1:
            return None
        out = _static(expand.results[0].type)
        reassociation = str(expand.attributes["reassociation"])
        if out is None:
            return None
        key = (reassociation, out)
        if ref_expand is not None and key != ref_expand:
            return None
        ref_expand = key
        trans = _only_user(expand.results[0])
        perm = transpose_perm(trans)
        if perm is None or trans is None or trans.operands[0] != expand.results[0]:
            return None
        members.append(Member(off // width, slice_op, expand, trans, perm))
    block = members[0].transpose.block
    if any(op.block != block for m in members for op in (m.slice_op, m.expand, m.transpose)):
        return None
    return sorted(members, key=lambda m: m.index)


def _common_perm(members: list[Member]) -> list[int]:
    """The most frequent permutation (the first member's on a tie)."""
    counts = Counter(tuple(m.perm) for m in members)
    best = max(counts.values())
    return next(m.perm for m in members if counts[tuple(m.perm)] == best)


def _i64_groups(groups: list[list[int]]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get(
        [ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in g]) for g in groups]
    )


def _rewrite(source: ir.Value, members: list[Member]) -> list[int]:
    """Replace the members' transposes; returns the common permutation used."""
    n = len(members)
    groups = _reassociation(members[0].expand)
    heads = _static(members[0].expand.results[0].type)
    assert heads is not None
    g = groups[-1][0]  # the new N dimension goes in front of the last group's dims
    new_groups = [*groups[:-1], [g, *[d + 1 for d in groups[-1]]]]
    full_shape = [*heads[:g], n, *heads[g:]]
    common = _common_perm(members)
    rank = len(common)
    perm = [g] + [p + (p >= g) for p in common]
    elem = ir.RankedTensorType(source.type).element_type
    out_shape = [heads[p] for p in common]
    first = members[0].transpose  # the first transpose in the block
    for m in members[1:]:
        if m.transpose.is_before_in_block(first):
            first = m.transpose
    inverse = [0] * rank
    for i, p in enumerate(common):
        inverse[p] = i
    leftovers: list[ir.Value] = []
    with ir.InsertionPoint(first), first.location:
        full_ty = ir.RankedTensorType.get(full_shape, elem)
        expanded = tensor.ExpandShapeOp(
            full_ty, source, _i64_groups(new_groups), [], full_shape
        ).result
        moved_ty = ir.RankedTensorType.get([n, *out_shape], elem)
        moved = _named_transpose(expanded, perm, moved_ty)
        piece_ty = ir.RankedTensorType.get(out_shape, elem)
        for m in members:
            piece = tensor.ExtractSliceOp(
                piece_ty,
                moved,
                [],
                [],
                [],
                [m.index] + [0] * rank,
                [1, *out_shape],
                [1] * (rank + 1),
            ).result
            if m.perm != common:
                composed = [inverse[p] for p in m.perm]
                piece = _named_transpose(piece, composed, m.transpose.results[0].type)
            m.transpose.results[0].replace_all_uses_with(piece)
            leftovers += list(m.transpose.operands)
    for m in members:
        m.transpose.erase()
    erase_dead_tree(leftovers)
    return common


def merge_sibling_transposes(
    module_op: ir.Operation, opts: MergeTransposesOptions | None = None
) -> Counter:
    """Merge every group; returns counts (``groups``, ``transposes`` replaced, ``composed``:
    members that kept a transpose of their slice)."""
    with module_op.context:
        opts = opts or MergeTransposesOptions()
        counts: Counter[str] = Counter()
        sources: list[ir.Value] = []
        for op in ops_named(module_op, "tensor.extract_slice"):
            src = op.operands[0]
            if not any(src == s for s in sources):
                sources.append(src)
        for src in sources:
            members = _members(src)
            if members is None or len(members) < max(2, opts.min_group):
                continue
            where = format_location(members[0].transpose.location)
            common = _rewrite(src, members)
            counts["groups"] += 1
            counts["transposes"] += len(members)
            counts["composed"] += sum(1 for m in members if m.perm != common)
            if opts.verbose:
                perms = " ".join(str(m.perm) for m in members)
                print(
                    f"xgen-merge-sibling-transposes: {where}: {len(members)} slices, {perms}",
                    file=sys.stderr,
                )
        return counts


@register_pass(
    "xgen-merge-sibling-transposes",
    "Slices of one tensor, each reshaped to heads and transposed (Q/K/V): one transpose of "
    "the whole, then slices along its new leading dimension.",
    MergeTransposesOptions,
)
def _pass(module_op: ir.Operation, opts: MergeTransposesOptions | None) -> None:
    merge_sibling_transposes(module_op, opts)
