"""A narrowing cast that feeds a packed matmul input, split out of a row-reduction dispatch.

In bf16, IREE demotes every matmul input (``arith.truncf``), and its elementwise fusion makes
that cast a second result of the op before it: a LayerNorm then returns its f32 output (the
next residual) and a bf16 copy (the next matmul's input). When both are packed for data-tiled
matmuls (the bf16 copy as an input, the f32 output as the accumulator IREE folds a residual
add into), IREE fuses both packs into the LayerNorm's dispatch, and a reduction's tile spans
whole rows: 16 rows x 384 x (2 + 4) bytes = 36 KB of stack at MiniLM's width, against IREE's
32 KB limit. IREE refuses the module (MiniLM, BERT-base at batch 4 in bf16), and the compile
fell back to IREE without data tiling: MiniLM at batch 4 in bf16 ran 114 ms against 58-60 in
fp32.

So when a region with a reduction returns a value and its narrowed copy, and both have packed
readers, the copy is computed in a dispatch of its own from the value (one more pass over an
activation; the pack goes with it). At batch 1 the planner fuses the residual add into the next
LayerNorm's region, so the f32 output is not packed and nothing is split: split there, MiniLM
in bf16 ran 10.2 ms against 9.6-9.7.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._mlir import iree_binding
from .data_tiling import HINT
from .regions import wrap_in_region

_RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape")
_CASTS = ("arith.truncf",)


@dataclass
class CastSplit:
    """One region's narrowed result, and whether it now has a dispatch of its own."""

    region: str  # where the region's op that makes the copy comes from, for people
    shape: str  # the cast's type, e.g. 4x128x384xbf16
    split: bool
    reason: str

    def describe(self) -> str:
        verdict = "split into its own dispatch" if self.split else "kept in its region"
        where = f"after the reduction at {self.region}"
        return f"cast to {self.shape} {where}: {verdict}: {self.reason}"


def _hinted_result(value: Any) -> bool:
    ir = iree_binding().ir

    owner = value.owner
    return not isinstance(owner, ir.Block) and HINT in owner.attributes


def packed_reader(value: Any, depth: int = 4) -> str | None:
    """How ``value`` reaches a data-tiled contraction through reshapes, if it does: as an
    input ("input"), or as the other operand of an elementwise op on such a contraction's
    result ("accumulator": IREE folds a residual add into the matmul's accumulator and packs
    it). An elementwise op already in a region (the planner fused the residual add into the
    next LayerNorm, as it does at batch 1) is no accumulator: IREE leaves it there."""
    for use in value.uses:
        user = use.owner.operation
        if user.name in _RESHAPES and depth > 0:
            found = packed_reader(user.results[0], depth - 1)
            if found:
                return found
            continue
        if HINT in user.attributes:
            return "input"
        if (
            user.name == "linalg.generic"
            and user.parent.name != "flow.dispatch.region"  # IREE forms its dispatch
            and any(_hinted_result(v) for v in user.operands if v != value)
        ):
            return "accumulator"
    return None


def _has_reduction(op: Any) -> bool:
    ir = iree_binding().ir

    if op.name != "linalg.generic":
        return False
    return any("reduction" in str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"]))


def _casts_of_results(generic: Any) -> list[tuple[int, int]]:
    """(cast result, source result) pairs of a multi-result ``linalg.generic`` whose body
    yields a value and its narrowing cast."""
    ir = iree_binding().ir

    yielded = list(generic.regions[0].blocks[0].operations[-1].operands)
    pairs = []
    for i, v in enumerate(yielded):
        owner = v.owner
        if isinstance(owner, ir.Block) or owner.name not in _CASTS:
            continue
        source = owner.operands[0]
        j = next((j for j, w in enumerate(yielded) if w == source and j != i), None)
        if j is not None:
            pairs.append((i, j))
    return pairs


def _returned(region: Any, value: Any) -> int | None:
    ret = region.regions[0].blocks[0].operations[-1]
    return next((i for i, v in enumerate(ret.operands) if v == value), None)


def _cast_after(region: Any, source: Any, like: Any, cast: Any) -> Any:
    """A one-op elementwise ``linalg.generic`` right after ``region`` that applies ``cast``'s
    op to ``source`` (a region result), typed like ``like``."""
    ir = iree_binding().ir
    linalg, tensor = iree_binding().linalg, iree_binding().tensor

    out_ty = ir.RankedTensorType(like.type)
    rank = out_ty.rank
    identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))
    parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
    with ir.InsertionPoint.after(region), region.location:
        empty = tensor.EmptyOp(out_ty.shape, out_ty.element_type)
        generic = linalg.GenericOp(
            [out_ty],
            [source],
            [empty.result],
            ir.ArrayAttr.get([identity, identity]),
            ir.ArrayAttr.get([parallel] * rank),
        )
        body = generic.regions[0].blocks.append(
            ir.RankedTensorType(source.type).element_type, out_ty.element_type
        )
        with ir.InsertionPoint(body):
            narrowed = ir.Operation.create(
                cast.name, results=[out_ty.element_type], operands=[body.arguments[0]]
            )
            linalg.YieldOp([narrowed.results[0]])
    return generic


def split_packed_casts(block: Any) -> list[CastSplit]:
    """Split every narrowed copy that shares a reduction region with its packed source (see
    the module docstring) into a dispatch of its own; returns one record per candidate."""
    ir = iree_binding().ir

    from ..diagnostics import location_text

    records = []
    for region in list(block.operations):
        region = region.operation
        if region.name != "flow.dispatch.region":
            continue
        body = [o.operation for o in region.regions[0].blocks[0].operations]
        if not any(_has_reduction(o) for o in body):
            continue
        for generic in body:
            if generic.name != "linalg.generic" or len(generic.results) < 2:
                continue
            for ci, si in _casts_of_results(generic):
                c_at = _returned(region, generic.results[ci])
                s_at = _returned(region, generic.results[si])
                if c_at is None or s_at is None:
                    continue
                cast_value, source_value = region.results[c_at], region.results[s_at]
                shape = str(ir.RankedTensorType(cast_value.type)).removeprefix("tensor<")[:-1]
                where = location_text(generic.location).split(" at ")[0]
                cast_reader = packed_reader(cast_value)
                source_reader = packed_reader(source_value)
                if not (cast_reader and source_reader):
                    why = "only one of the value and its copy is packed: the region keeps both"
                    records.append(CastSplit(where, shape, False, why))
                    continue
                yielded = generic.regions[0].blocks[0].operations[-1].operands[ci]
                cast = _cast_after(region, source_value, cast_value, yielded.owner)
                cast_value.replace_all_uses_with(cast.results[0])
                wrap_in_region([cast])
                why = (
                    f"the copy is packed as an {cast_reader} and the value as an "
                    f"{source_reader}: both packs' whole-row tiles on one dispatch's stack"
                )
                records.append(CastSplit(where, shape, True, why))
    return records
