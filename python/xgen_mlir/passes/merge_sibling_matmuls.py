"""xgen-merge-sibling-matmuls: matmuls that share their input become one wider matmul.

Why: attention computes Q, K and V as three projections of the same hidden states
(``x @ Wq``, ``x @ Wk``, ``x @ Wv``, each plus a bias). Three thin GEMMs read ``x`` three
times and each has a small N; one GEMM on the concatenated weights ``x @ [Wq|Wk|Wv]`` reads
``x`` once and gives the code generator one larger, better-shaped problem (GPT-2 is written
that way already: its ``c_attn`` is one matmul). The original results become
``tensor.extract_slice``s of the merged one, which IREE folds into their consumers.

What it matches: ``linalg.matmul`` (or ``linalg.batch_matmul``) ops with default indexing
maps, in one block, whose LHS is the same SSA value and whose RHS evaluates to a constant
(through the ``linalg.transpose`` torch-mlir puts on ``nn.Linear`` weights; see
``consteval``), all with the same K and element type, and inits that are constant fills or
per-column constant broadcasts. When each result has exactly one use, an elementwise
``+ bias[n]`` with a constant bias, the bias adds are merged too (one add on the concatenated
bias); siblings with and without such a bias add are merged in separate groups. Not merged:
different LHS values (even if equal in content), non-constant weights, an LHS read through a
transposing indexing map (a different K), non-f32 types.

Not merged either (the *epilogue guard*): a member whose result, through elementwise ops and
reshapes, reaches an elementwise op that also reads the result of another contraction (a
matmul or convolution outside the sibling set, again through elementwise ops and reshapes).
IREE fuses that elementwise op into the other contraction's dispatch as its epilogue, and the
member's slice of the merged result becomes a side operand there; with
``--iree-opt-data-tiling`` IREE 3.13 then puts the merged result's encoding into that
dispatch and codegen fails ("large vector sizes"), so the model compiles only without data
tiling. MobileBERT has that shape: its bottleneck ``layer_input`` (one of three projections
of the hidden states) is the residual of the attention output's ``dense + residual``; the
other two projections (shared Q/K bottleneck and V) still merge. Q/K/V of BERT-style models
go to transposes and batched matmuls, never into another matmul's epilogue, and merge.

Not merged either: members narrower than ``min-width`` (N < 256 by default; measured on
MobileBERT, see ``MergeOptions``).

Numerics: exact. Every output element is computed by the same dot product as before.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass
from functools import cmp_to_key

import numpy as np

from .._mlir import arith, ir, tensor
from ..diagnostics import format_location
from ..irutil import constant_op, ops_named
from .consteval import ConstEval
from .generic_util import (
    body_ops,
    channel_init,
    clone_body,
    empty,
    erase_dead_tree,
    generic,
    has_default_maps,
    is_elementwise,
    iterator_types,
    mixed_sizes,
    num_inputs,
    producer,
)
from .kernel_match import bias_add
from .registry import register_pass

_MATMULS = ("linalg.matmul", "linalg.batch_matmul")
_RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape")
_GUARD_DEPTH = 16  # ops the epilogue guard follows from a member's result (and back)


@dataclass
class MergeOptions:
    min_group: int = 2  # merge only groups of at least this many matmuls
    # merge only members at least this wide (N). Thin projections are not worth it: MobileBERT's
    # N=128 bottleneck/Q/K projections, merged, ran 31.9 ms with 798 dispatches against 30.1 ms
    # and 774 unmerged (IREE 30.5; one process, blocks, 2026-11-21): the merged result's
    # data-tiling encode/slice work outweighs one saved read of a small LHS. BERT-style Q/K/V
    # (N=384 MiniLM, 768 BERT-base/DistilBERT) merge: 25 fewer dispatches, same or better time.
    min_width: int = 256
    verbose: bool = False  # print every merge to stderr


@dataclass
class Member:
    op: ir.Operation
    weight: np.ndarray  # (K, N) or (B, K, N)
    init: np.ndarray  # (N,) per-column value the matmul accumulates onto
    bias_add: ir.Operation | None
    bias: np.ndarray | None  # (N,)


def _member(op: ir.Operation, ev: ConstEval) -> Member | None:
    ty = ir.RankedTensorType(op.results[0].type)
    if str(ty.element_type) != "f32" or not has_default_maps(op):
        return None
    weight = ev.value(op.operands[1])
    if weight is None or weight.dtype != np.float32:
        return None
    init = ev.per_channel_init(op.operands[2], len(ty.shape) - 1)
    if init is None:
        return None
    found = bias_add(op, ev)
    return Member(op, weight, init, *(found or (None, None)))


def _is_contraction(op: ir.Operation) -> bool:
    """A named matmul/convolution, or a generic with a reduction loop whose body is a
    multiply-accumulate (what IREE roots a dispatch at and data-tiles)."""
    name = op.name
    if name.startswith("linalg.") and ("matmul" in name or "matvec" in name or "conv" in name):
        return True
    if name != "linalg.generic" or "reduction" not in iterator_types(op):
        return False
    kinds = [o.name for o in body_ops(op)]
    return "arith.mulf" in kinds and "arith.addf" in kinds


def _reads_contraction(value: ir.Value, siblings: list[ir.Operation]) -> bool:
    """Whether ``value`` is (through elementwise ops and reshapes) the result of a
    contraction other than ``siblings``."""
    work, seen = [value], 0
    while work and seen < _GUARD_DEPTH:
        op = producer(work.pop())
        seen += 1
        if op is None:
            continue
        if _is_contraction(op):
            if not any(op == s for s in siblings):
                return True
        elif op.name in _RESHAPES:
            work.append(op.operands[0])
        elif is_elementwise(op):
            work.extend(list(op.operands)[: num_inputs(op)])
    return False


def feeds_foreign_epilogue(member: Member, siblings: list[ir.Operation]) -> bool:
    """The epilogue guard: ``member``'s result (after its bias add), through elementwise ops
    and reshapes, reaches an elementwise op that also reads another contraction's result."""
    out = (member.bias_add or member.op).results[0]
    work, seen = [out], 0
    while work and seen < _GUARD_DEPTH:
        value = work.pop()
        for use in value.uses:
            user = use.owner.operation
            seen += 1
            if user.name in _RESHAPES:
                work.append(user.results[0])
            elif is_elementwise(user):
                ins = list(user.operands)[: num_inputs(user)]
                if any(_reads_contraction(v, siblings) for v in ins if v != value):
                    return True
                work.append(user.results[0])
    return False


def _merge(group: list[Member]) -> None:
    first, lhs = group[0].op, group[0].op.operands[0]
    out_ty = ir.RankedTensorType(first.results[0].type)
    widths = [m.weight.shape[-1] for m in group]
    shape = [*out_ty.shape[:-1], sum(widths)]
    elem = out_ty.element_type
    with ir.InsertionPoint(first), first.location:
        # a dynamic dim (batch, sequence) takes its size from the first member's init
        lead = mixed_sizes(first.operands[2], range(len(shape) - 1))
        sizes_now = [*lead, shape[-1]]
        weight = constant_op(np.concatenate([m.weight for m in group], -1), "xgen_merged_w")
        inits = np.concatenate([m.init for m in group])
        init = channel_init(inits, sizes_now, len(shape) - 1, elem)
        merged = ir.Operation.create(
            first.name,
            results=[ir.RankedTensorType.get(shape, elem)],
            operands=[lhs, weight.result, init],
            attributes={name: first.attributes[name] for name in first.attributes},
            regions=1,
        )
        clone_body(first, merged)
        result = merged.results[0]
        if group[0].bias_add is not None:
            bias = constant_op(np.concatenate([m.bias for m in group]).astype(np.float32))
            rank = len(shape)
            ident = ir.AffineMap.get_identity(rank)
            bmap = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(rank - 1)])
            result = generic(
                [result, bias.result],
                [ident, bmap, ident],
                empty(sizes_now, elem),
                ["parallel"] * rank,
                lambda a: [arith.AddFOp(a[0], a[1]).result],
            ).results[0]
        offset = 0
        leftovers: list[ir.Value] = []
        for m, width in zip(group, widths, strict=True):
            old = m.bias_add if m.bias_add is not None else m.op
            sizes = [*out_ty.shape[:-1], width]
            offsets = [0] * (len(shape) - 1) + [offset]
            dynamic = [v for v in lead if isinstance(v, ir.Value)]
            piece = tensor.ExtractSliceOp(
                old.results[0].type, result, [], dynamic, [], offsets, sizes, [1] * len(shape)
            ).result
            old.results[0].replace_all_uses_with(piece)
            results = [m.op.results[0]]
            leftovers += [v for v in [*old.operands, *m.op.operands] if v not in results]
            offset += width
    for m in group:
        if m.bias_add is not None:
            m.bias_add.erase()
        m.op.erase()
    erase_dead_tree(leftovers)


def merge_sibling_matmuls(module_op: ir.Operation, opts: MergeOptions | None = None) -> Counter:
    """Merge every group of siblings; returns counts (``groups``, ``matmuls`` merged,
    ``guarded``: members the epilogue guard kept out, ``thin``: members below min-width)."""
    with module_op.context:
        opts = opts or MergeOptions()
        ev = ConstEval(module_op)
        counts: Counter[str] = Counter()
        by_lhs: dict[tuple[str, ir.Value], list[ir.Operation]] = {}
        for op in ops_named(module_op, *_MATMULS):
            by_lhs.setdefault((op.name, op.operands[0]), []).append(op)
        for ops in by_lhs.values():
            if len(ops) < opts.min_group:
                continue
            members = [m for m in (_member(op, ev) for op in ops) if m is not None]
            thin = [m for m in members if m.weight.shape[-1] < opts.min_width]
            if thin:
                counts["thin"] += len(thin)
                members = [m for m in members if m.weight.shape[-1] >= opts.min_width]
                if opts.verbose:
                    for m in thin:
                        print(
                            f"xgen-merge-sibling-matmuls: {format_location(m.op.location)}: not "
                            f"merged (N={m.weight.shape[-1]} < min-width={opts.min_width})",
                            file=sys.stderr,
                        )
            guarded = [m for m in members if feeds_foreign_epilogue(m, ops)]
            if guarded:
                counts["guarded"] += len(guarded)
                members = [m for m in members if not any(m is g for g in guarded)]
                if opts.verbose:
                    for m in guarded:
                        where = format_location(m.op.location)
                        print(
                            f"xgen-merge-sibling-matmuls: {where}: not merged (its result "
                            "joins another contraction's epilogue)",
                            file=sys.stderr,
                        )
            for with_bias in (True, False):
                group = [m for m in members if (m.bias_add is not None) == with_bias]
                group = _same_block_and_k(group)
                if len(group) < opts.min_group:
                    continue
                group.sort(key=cmp_to_key(lambda x, y: -1 if x.op.is_before_in_block(y.op) else 1))
                where = format_location(group[0].op.location)
                _merge(group)
                counts["groups"] += 1
                counts["matmuls"] += len(group)
                if opts.verbose:
                    widths = "+".join(str(m.weight.shape[-1]) for m in group)
                    bias = " with bias" if with_bias else ""
                    print(f"xgen-merge-sibling-matmuls: {where}: N={widths}{bias}", file=sys.stderr)
        return counts


def _same_block_and_k(group: list[Member]) -> list[Member]:
    """The members in the block of the first one with its K and batch shape."""
    if not group:
        return group
    ref = group[0]
    return [
        m
        for m in group
        if m.op.parent == ref.op.parent
        and m.op.block == ref.op.block
        and m.weight.shape[:-1] == ref.weight.shape[:-1]
    ]


@register_pass(
    "xgen-merge-sibling-matmuls",
    "Merge matmuls sharing one LHS and constant RHS (Q/K/V) into one on concatenated weights.",
    MergeOptions,
)
def _pass(module_op: ir.Operation, opts: MergeOptions | None) -> Counter:
    return merge_sibling_matmuls(module_op, opts)
