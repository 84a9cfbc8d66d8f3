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
    """The pattern library and per-kernel ids behind ``weight``'s zeros, or None if unstructured."""
    f, c, kh, kw = weight.shape
    nz = (weight != 0).reshape(f, c, kh * kw)
    counts = nz.sum(-1)
    n = int(counts.max(initial=0))
    if n == 0 or n == kh * kw:
        return None
    full = nz[counts == n]
    library, inverse = np.unique(full, axis=0, return_inverse=True)
    if len(library) > MAX_PATTERNS:
        return None
    ids = np.full((f, c), -1, np.int32)
    ids[counts == n] = inverse.reshape(-1)
    partial = np.argwhere((counts > 0) & (counts < n))
    for fi, ci in partial:  # a pattern entry that happens to be exactly 0: pick a superset
        sup = np.flatnonzero((library | nz[fi, ci]).sum(-1) == n)
        if sup.size == 0:
            return None
        ids[fi, ci] = sup[0]
    _, layout_counts = np.unique(ids, axis=0, return_counts=True)
    return PatternStructure(
        [np.flatnonzero(p).tolist() for p in library],
        ids,
        float(nz.sum()) / nz.size,
        float(layout_counts.mean()),
    )


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
    """Raise every qualifying conv; returns the count of convs left dense for a dynamic
    shape (the other decisions print with ``verbose``)."""
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
            decision = f"stays dense: {parts}"
        elif st is None:
            decision = "stays dense: the weights' zeros form no small pattern library"
        elif st.density > opts.max_density:
            decision = f"stays dense: density {st.density:.2f} > {opts.max_density}"
        elif st.mean_group < opts.min_group:
            decision = (
                f"stays dense: filters share layouts in groups of {st.mean_group:.1f} "
                f"< {opts.min_group}"
            )
        else:
            decision = (
                f"raised: {len(st.patterns)} patterns, density {st.density:.3f}, "
                f"groups {st.mean_group:.1f}"
            )
            _raise_one(conv, parts, st)
        if opts.verbose:
            print(f"xgen-raise-pattern-conv: {where}: {decision}", file=sys.stderr)
    if pruned_dynamic:
        warn_fallback(
            f"xgen-raise-pattern-conv: {pruned_dynamic} pattern-pruned convolution(s) with a "
            "dynamic shape (e.g. a dynamic batch) run dense, without the pruning's speedup: "
            "the pattern kernels take static shapes (compile with a static batch to use them)"
        )
    return counts
