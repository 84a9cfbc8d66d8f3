"""xgen-fkw-compact: filter-kernel reorder and compact FKW storage for pattern convolutions.

Turns ``xgen_sparse.pattern_conv2d`` (dense weights + pattern ids) into
``xgen_sparse.fkw_conv2d``: filters with the same kernel layout are gathered into groups of at
most ``group-size`` (the number of filters whose accumulators the code generator keeps in
registers), each group's kept kernels are listed by input channel sorted by pattern (so one
code path runs over a whole run of kernels), and only the pattern entries are stored,
interleaved by filter so one vector load feeds all filters of the group. The filter order is
recorded in ``filter_order``; code generation writes every result straight to its original
channel, so no output shuffle remains. Needs constant weights and pattern ids.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._mlir import ir
from ..dialects.sparse import FKW_CONV, PATTERN_CONV, patterns_of
from ..irutil import ConstantReader, constant_op, ops_named
from .registry import PassFailure, register_pass


@dataclass
class FkwOptions:
    group_size: int = 16  # max filters per group (accumulator registers of the target)


@dataclass
class FkwLayout:
    filter_order: np.ndarray  # (F,) filter index per slot, groups contiguous
    group_filter_offsets: np.ndarray  # (G+1,)
    group_kernel_offsets: np.ndarray  # (G+1,)
    kernel_channel: np.ndarray  # (NK,)
    kernel_pattern: np.ndarray  # (NK,)
    weights: np.ndarray  # (sum over groups of nk * n * group_size,)


def fkw_layout(
    weight: np.ndarray, ids: np.ndarray, patterns: list[list[int]], group_size: int
) -> FkwLayout:
    """Group filters by identical kernel layout and pack the kept pattern entries."""
    f, c, kh, kw = weight.shape
    flat = weight.reshape(f, c, kh * kw)
    layouts: dict[bytes, list[int]] = {}
    for fi in range(f):
        layouts.setdefault(ids[fi].tobytes(), []).append(fi)
    order, gfo, gko, chans, pats, chunks = [], [0], [0], [], [], []
    for filters in layouts.values():
        for start in range(0, len(filters), group_size):
            group = filters[start : start + group_size]
            row = ids[group[0]]
            kept = sorted((int(row[ci]), ci) for ci in range(c) if row[ci] >= 0)
            order += group
            gfo.append(len(order))
            for p, ci in kept:
                chans.append(ci)
                pats.append(p)
                # (taps, filters) block: tap-major so each tap's filters are contiguous
                chunks.append(flat[np.ix_(group, [ci], patterns[p])][:, 0, :].T.reshape(-1))
            gko.append(len(chans))
    i32 = np.int32
    return FkwLayout(
        np.array(order, i32),
        np.array(gfo, i32),
        np.array(gko, i32),
        np.array(chans, i32),
        np.array(pats, i32),
        np.concatenate(chunks).astype(np.float32) if chunks else np.zeros(0, np.float32),
    )


@register_pass(
    "xgen-fkw-compact",
    "Reorder filters into shared-layout groups and pack pattern weights (FKW storage).",
    FkwOptions,
)
def fkw_compact(module_op: ir.Operation, opts: FkwOptions | None) -> None:
    opts = opts or FkwOptions()
    if opts.group_size < 1:
        raise PassFailure(f"group-size must be >= 1, got {opts.group_size}")
    reader = ConstantReader(module_op)
    convs = ops_named(module_op, PATTERN_CONV)
    for op in convs:
        weight = reader.value_of(op.operands[1])
        ids = reader.value_of(op.operands[3])
        if weight is None or ids is None:
            continue  # not constant: leave it for a dense lowering
        pats = patterns_of(op)
        lay = fkw_layout(weight, ids, pats, opts.group_size)
        kh, kw = weight.shape[2:]
        with ir.InsertionPoint(op), op.location:
            consts = [
                constant_op(a, "xgen_fkw")
                for a in (
                    lay.weights,
                    lay.filter_order,
                    lay.group_filter_offsets,
                    lay.group_kernel_offsets,
                    lay.kernel_channel,
                    lay.kernel_pattern,
                )
            ]
            i64 = ir.IntegerType.get_signless(64)
            new = ir.Operation.create(
                FKW_CONV,
                results=[op.results[0].type],
                operands=[op.operands[0], consts[0].result, op.operands[2]]
                + [c.result for c in consts[1:]],
                attributes={
                    "strides": op.attributes["strides"],
                    "padding": op.attributes["padding"],
                    "patterns": op.attributes["patterns"],
                    "kernel_size": ir.ArrayAttr.get(
                        [ir.IntegerAttr.get(i64, kh), ir.IntegerAttr.get(i64, kw)]
                    ),
                },
            )
        op.results[0].replace_all_uses_with(new.results[0])
        op.erase()
