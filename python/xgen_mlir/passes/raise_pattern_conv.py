"""xgen-raise-pattern-conv: find pattern-pruned convolutions and raise them to xgen_sparse.

Matches ``linalg.conv_2d_nchw_fchw`` (unit dilation) whose weights are a constant and whose
init is a zero fill or a broadcast constant bias (torch-mlir's forms), absorbing a zero
``tensor.pad`` of the input into the op's padding. The weights' zero structure decides:
every kernel must be all-zero or nonzero only on one pattern of a small library (inferred
from the weights). Raised only where profitable: the layer is sparse enough
(``max-density``) and its filters share kernel layouts in large enough groups
(``min-group``) for the FKW code generator to keep many filters' accumulators in registers.
A dense-enough or unstructured layer stays a linalg convolution. Runs on linalg-on-tensors
before the FKW passes; does not handle grouped/depthwise or dilated convolutions.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._mlir import ir
from ..diagnostics import format_location, warn_fallback
from ..dialects import load_xgen_dialects
from ..dialects.sparse import PATTERN_CONV
from ..irutil import ConstantReader, constant_op, ops_named
from .generic_util import has_dynamic_shape
from .registry import register_pass

MAX_PATTERNS = 32
# The pattern kernels (xgen-lower-fkw-kernels) are generated for static shapes.
DYNAMIC = "stays dense: dynamic shape (the pattern kernels take static shapes)"


@dataclass
class RaiseOptions:
    max_density: float = 0.5  # raise only if at most this fraction of weights is nonzero
    min_group: int = 4  # ... and filters share layouts in groups of at least this size (mean)
    verbose: bool = False  # print the decision for every convolution to stderr


@dataclass
class PatternStructure:
    patterns: list[list[int]]
    kernel_pattern: np.ndarray  # (F, C) int32, -1 = removed kernel
    density: float
    mean_group: float


def infer_patterns(weight: np.ndarray) -> PatternStructure | None:
    """The pattern library and per-kernel ids behind ``weight``'s zeros, or None if unstructured.

    A kernel with fewer nonzeros than a pattern (an entry that happens to be exactly 0, as a
    small weight quantized to int8 is) may take any pattern that covers them, and an all-zero
    kernel any pattern or none: those choices are made so that filters share one layout with
    the filters they were pruned together with (``_shared_layouts``), which is what the
    kernels' filter groups need."""
    f, c, kh, kw = weight.shape
    nz = (weight != 0).reshape(f, c, kh * kw)
    counts = nz.sum(-1)
    n = int(counts.max(initial=0))
    if n == 0 or n == kh * kw:
        return None
    full = nz[counts == n]
    library = np.unique(full, axis=0)
    if len(library) > MAX_PATTERNS:
        return None
    # candidates[f, c]: bit p set = pattern p covers the kernel's nonzeros; bit MAX_PATTERNS =
    # the kernel can be removed (all zero)
    bits = np.left_shift(1, np.arange(kh * kw, dtype=np.int64))
    nz_mask, lib_mask = (nz * bits).sum(-1), (library * bits).sum(-1)  # taps as bit masks
    covers = (nz_mask[:, :, None] & ~lib_mask[None, None, :]) == 0  # (F, C, P)
    candidates = (covers.astype(np.uint64) << np.arange(len(library), dtype=np.uint64)).sum(
        -1, dtype=np.uint64
    )
    candidates |= np.where(counts == 0, np.uint64(1 << MAX_PATTERNS), np.uint64(0))
    if (candidates == 0).any():
        return None  # a kernel no pattern covers
    ids = _shared_layouts(candidates)
    _, layout_counts = np.unique(ids, axis=0, return_counts=True)
    return PatternStructure(
        [np.flatnonzero(p).tolist() for p in library],
        ids,
        float(nz.sum()) / nz.size,
        float(layout_counts.mean()),
    )


def _shared_layouts(candidates: np.ndarray) -> np.ndarray:
    """(F, C) pattern ids (-1 = removed kernel) from per-kernel candidate bit sets, filters
    clustered greedily: each joins the first cluster whose every channel still has a candidate
    in common with it (the most constrained filters first), so a few zeros more do not split a
    group of filters pruned alike. A cluster's channel takes "removed" where all its filters
    allow it, else its lowest common pattern."""
    single = (candidates & (candidates - np.uint64(1))) == 0  # exactly one candidate
    clusters: list[np.ndarray] = []
    members: list[list[int]] = []
    for fi in np.argsort(-single.sum(1), kind="stable"):
        row = candidates[fi]
        for k, common in enumerate(clusters):
            both = common & row
            if (both != 0).all():
                clusters[k] = both
                members[k].append(int(fi))
                break
        else:
            clusters.append(row.copy())
            members.append([int(fi)])
    ids = np.empty(candidates.shape, np.int32)
    removed = np.uint64(1 << MAX_PATTERNS)
    for common, rows in zip(clusters, members, strict=True):
        lowest = common & (~common + np.uint64(1))  # lowest set bit
        layout = np.where(
            (common & removed) != 0, -1, np.log2(lowest.astype(np.float64)).astype(np.int32)
        )
        ids[rows] = layout
    return ids


def _conv_parts(conv: ir.Operation, reader: ConstantReader) -> dict[str, Any] | str:
    """Input (unpadded), padding, weights and bias of a torch-mlir style convolution, or why
    the convolution does not qualify."""
    attrs = conv.attributes
    if any(v != 1 for v in np.array(attrs["dilations"]).tolist()):
        return "dilated convolutions are not handled"
    strides = [int(v) for v in np.array(attrs["strides"]).tolist()]
    inp, wval, init = conv.operands[0], conv.operands[1], conv.operands[2]
    weight = reader.value_of(wval)
    if weight is None or weight.dtype != np.float32:
        return "weights are not an f32 constant"
    f = weight.shape[0]
    padding = [0, 0, 0, 0]
    owner = inp.owner
    if not isinstance(owner, ir.Block) and owner.operation.name == "tensor.pad":
        pad = owner.operation
        low = list(ir.DenseI64ArrayAttr(pad.attributes["static_low"]))
        high = list(ir.DenseI64ArrayAttr(pad.attributes["static_high"]))
        yielded = pad.regions[0].blocks[0].operations[0].operands[0]
        zero = reader.value_of(yielded) if not isinstance(yielded.owner, ir.Block) else None
        zero_pad = zero is not None and float(zero) == 0.0 and len(pad.operands) == 1
        if zero_pad and low[:2] == [0, 0] and high[:2] == [0, 0]:
            padding = [low[2], low[3], high[2], high[3]]
            inp = pad.operands[0]
    bias = _bias_of(init, f, reader)
    if bias is None:
        return "the accumulator init is not a constant fill or bias broadcast"
    return {
        "input": inp,
        "weight": weight,
        "weight_value": wval,
        "bias": bias,
        "strides": strides,
        "padding": padding,
    }


def _bias_of(init: ir.Value, f: int, reader: ConstantReader) -> np.ndarray | None:
    owner = init.owner
    if isinstance(owner, ir.Block):
        return None
    op = owner.operation
    if op.name == "linalg.fill":
        val = reader.value_of(op.operands[0])
        return None if val is None else np.full(f, float(val), np.float32)
    if op.name == "linalg.broadcast":
        if list(ir.DenseI64ArrayAttr(op.attributes["dimensions"])) != [0, 2, 3]:
            return None
        val = reader.value_of(op.operands[0])
        return None if val is None or val.shape != (f,) else val.astype(np.float32)
    return None


def _int_array(values: list[int]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.IntegerAttr.get(i64, v) for v in values])


def _raise_one(conv: ir.Operation, parts: dict[str, Any], st: PatternStructure) -> None:
    with ir.InsertionPoint(conv), conv.location:
        bias = constant_op(parts["bias"], "xgen_bias")
        ids = constant_op(st.kernel_pattern, "xgen_kernel_pattern")
        new = ir.Operation.create(
            PATTERN_CONV,
            results=[conv.results[0].type],
            operands=[parts["input"], parts["weight_value"], bias.result, ids.result],
            attributes={
                "strides": _int_array(parts["strides"]),
                "padding": _int_array(parts["padding"]),
                "patterns": ir.ArrayAttr.get([_int_array(p) for p in st.patterns]),
            },
        )
    conv.results[0].replace_all_uses_with(new.results[0])
    conv.erase()


@register_pass(
    "xgen-raise-pattern-conv",
    "Raise pattern-pruned constant-weight linalg convolutions to xgen_sparse.pattern_conv2d.",
    RaiseOptions,
)
def raise_pattern_conv(module_op: ir.Operation, opts: RaiseOptions | None) -> Counter:
    """Raise every qualifying conv; returns, for the report, the count of each decision on the
    convs whose weights have a pattern structure (raised, or why it stays dense); ``verbose``
    prints every conv's, with its numbers."""
    opts = opts or RaiseOptions()
    load_xgen_dialects(module_op.context)
    reader = ConstantReader(module_op)
    convs = ops_named(module_op, "linalg.conv_2d_nchw_fchw")
    counts: Counter[str] = Counter()
    pruned_dynamic = 0
    for conv in convs:
        where = format_location(conv.location)
        parts = _conv_parts(conv, reader)
        st = infer_patterns(parts["weight"]) if isinstance(parts, dict) else None
        if has_dynamic_shape(conv.operands[0], conv.results[0]):
            counts[DYNAMIC] += 1
            if st is not None and st.density <= opts.max_density:
                pruned_dynamic += 1  # pattern-pruned: the speedup is lost, say so
            if opts.verbose:
                print(f"xgen-raise-pattern-conv: {where}: {DYNAMIC}", file=sys.stderr)
            continue
        if isinstance(parts, str):
            decision = kind = f"stays dense: {parts}"
        elif st is None:
            decision = kind = "stays dense: the weights' zeros form no small pattern library"
        elif st.density > opts.max_density:
            kind = f"stays dense: density > {opts.max_density}"
            decision = f"stays dense: density {st.density:.2f} > {opts.max_density}"
        elif st.mean_group < opts.min_group:
            kind = f"stays dense: filters share layouts in groups < {opts.min_group}"
            decision = (
                f"stays dense: filters share layouts in groups of {st.mean_group:.1f} "
                f"< {opts.min_group}"
            )
        else:
            kind = "raised"
            decision = (
                f"raised: {len(st.patterns)} patterns, density {st.density:.3f}, "
                f"groups {st.mean_group:.1f}"
            )
            _raise_one(conv, parts, st)
        if st is not None:  # a dense conv's "no pattern" is no news for the report
            counts[kind] += 1
        if opts.verbose:
            print(f"xgen-raise-pattern-conv: {where}: {decision}", file=sys.stderr)
    if pruned_dynamic:
        warn_fallback(
            f"xgen-raise-pattern-conv: {pruned_dynamic} pattern-pruned convolution(s) with a "
            "dynamic shape (e.g. a dynamic batch) run dense, without the pruning's speedup: "
            "the pattern kernels take static shapes (compile with a static batch to use them)"
        )
    return counts
