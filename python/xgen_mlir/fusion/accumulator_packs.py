"""An accumulator's pack kept out of a row-reduction dispatch that packs another result.

In bf16, IREE demotes every matmul input (``arith.truncf``), and its elementwise fusion makes
that cast a second result of the op before it: a LayerNorm region returns its f32 output (the
next residual) and a bf16 copy (the next matmul's input), and the copy's pack goes into the
region. At batch > 1 the residual add after the next Linear is not in a region (the planner
does not fuse across the reshape that splits rows), IREE folds it into that Linear's
accumulator, and packs the f32 output too, in the same region. A reduction's tile spans whole
rows: 16 rows x 384 x (2 + 4) bytes = 36 KB of stack at MiniLM's width, against IREE's 32 KB
limit. IREE refused the module (MiniLM, DistilBERT, BERT-base at batch 4 in bf16), and the
compile fell back to IREE without data tiling: MiniLM at batch 4 in bf16 ran 114-120 ms
against 58-67 in fp32.

So where a region with a reduction returns one value packed as a contraction's input and
another folded into an accumulator, the accumulator reads the value through an
``iree_tensor_ext.compute_barrier.start``: IREE then packs it in a dispatch of its own (a 2-D
pack, ~0.03 ms at 512 x 384), and the region keeps the input's pack, as at batch 1. MiniLM at
batch 4 in bf16: 38.3-38.5 ms, against 39.5-39.9 with the bf16 copy computed in a dispatch of
its own instead (IREE flattens that cast and writes its pack element by element: 0.16 ms).
At batch 1 the planner fuses the residual add into the next LayerNorm's region, nothing is
folded into an accumulator, and nothing changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._mlir import iree_binding
from .data_tiling import HINT, _has_reduction

_RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape")
BARRIER = "iree_tensor_ext.compute_barrier.start"
REGION = "flow.dispatch.region"


@dataclass
class AccumulatorPack:
    """A reduction region's result folded into a data-tiled contraction's accumulator."""

    region: str  # where the region's reduction comes from, for people
    shape: str  # the result's type, e.g. 4x128x384xf32
    separated: bool  # its pack is kept out of the region
    reason: str

    def describe(self) -> str:
        verdict = "pack in a dispatch of its own" if self.separated else "pack left to IREE"
        where = f"after the reduction at {self.region}"
        return f"accumulator {self.shape} {where}: {verdict}: {self.reason}"


def _hinted_result(value: Any) -> bool:
    ir = iree_binding().ir

    owner = value.owner
    return not isinstance(owner, ir.Block) and HINT in owner.attributes


def _top_level(op: Any) -> bool:
    return op.parent is None or op.parent.name != REGION


def packed_as_input(value: Any, depth: int = 4) -> bool:
    """Whether ``value`` is an input of a data-tiled contraction, through reshapes."""
    for use in value.uses:
        user = use.owner.operation
        if user.name in _RESHAPES and depth > 0 and packed_as_input(user.results[0], depth - 1):
            return True
        if HINT in user.attributes:
            return True
    return False


def accumulator_uses(value: Any, depth: int = 4) -> list[tuple[Any, int]]:
    """(op, operand number) of each elementwise op outside any region that reads ``value``
    (through reshapes) beside a data-tiled contraction's result: IREE folds such an add into
    the contraction's accumulator and packs ``value`` for it. One already in a region (the
    planner fused the residual add into the next LayerNorm, as at batch 1) stays there."""
    found = []
    for use in value.uses:
        user = use.owner.operation
        if user.name in _RESHAPES and depth > 0:
            found += accumulator_uses(user.results[0], depth - 1)
        elif (
            user.name == "linalg.generic"
            and _top_level(user)
            and any(_hinted_result(v) for v in user.operands if v != value)
        ):
            found.append((user, use.operand_number))
    return found


def _through_barrier(op: Any, number: int) -> None:
    ir = iree_binding().ir

    value = op.operands[number]
    with op.location, ir.InsertionPoint(op):
        barrier = ir.Operation.create(BARRIER, results=[value.type], operands=[value])
    op.operands[number] = barrier.results[0]


def separate_accumulator_packs(block: Any) -> list[AccumulatorPack]:
    """Keep out of its region the accumulator pack of every reduction region that also packs
    another of its results as an input (see the module docstring); one record per result
    folded into an accumulator."""
    ir = iree_binding().ir

    from ..diagnostics import location_text

    records = []
    for region in list(block.operations):
        region = region.operation
        if region.name != REGION:
            continue
        body = [o.operation for o in region.regions[0].blocks[0].operations]
        reductions = [o for o in body if o.name == "linalg.generic" and _has_reduction(o)]
        if not reductions:
            continue
        where = location_text(reductions[0].location).split(" at ")[0]
        inputs = [packed_as_input(r) for r in region.results]
        for i, result in enumerate(region.results):
            uses = accumulator_uses(result)
            if not uses:
                continue
            shape = str(ir.RankedTensorType(result.type)).removeprefix("tensor<")[:-1]
            if not any(packed for j, packed in enumerate(inputs) if j != i):
                why = "the region packs no other result"
                records.append(AccumulatorPack(where, shape, False, why))
                continue
            for op, number in uses:
                _through_barrier(op, number)
            why = (
                "another result is packed as an input in the region: two packs of whole-row "
                "tiles on one dispatch's stack"
            )
            records.append(AccumulatorPack(where, shape, True, why))
    return records
