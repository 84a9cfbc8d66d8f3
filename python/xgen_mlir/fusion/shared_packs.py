"""Packs of activations with several readers, fused into their producer's dispatch.

With data tiling, every data-tiled matmul reads its activation in a packed layout
(``iree_encoding.set_encoding``). IREE fuses that pack into the producer's dispatch only when
the producer's result has one reader. A transformer's residual stream has several: MobileBERT's
layer output feeds three projections and the next residual add, its bottleneck output the Q and
K projections, each FFN output the next FFN and the next residual. Each of those packs becomes
a dispatch of its own: 288 of MobileBERT's 770, ~3-12 us each, plus a round trip of the
activation through memory.

IREE has the fusion behind an experimental flag (``FLAG``), but it moves one ``set_encoding``
per reader into the producer's region before they are CSE'd: the region then writes the same
packed value to two or three outputs, and IREE's CPU codegen rejects the copies between them
("write affecting operations on global resources are restricted to workgroup distributed
contexts"). So the backend stops IREE after dispatch creation, where regions are
``flow.dispatch.workgroups`` ops, points the readers of every duplicate output at the first one
(``merge_duplicate_outputs``), and resumes; IREE's own closure canonicalization then drops the
unread outputs and their stores. MobileBERT: 770 -> 506 dispatches, bit-identical results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._mlir import iree_binding

FLAG = "--iree-dispatch-creation-experimental-multi-use-encoding-fusion"
_STORE = "iree_tensor_ext.dispatch.tensor.store"


@dataclass
class SharedPacks:
    """What the step did to a module, for the report."""

    fused: bool  # IREE compiled the module with multi-reader packs in their producers
    merged_outputs: int = 0  # duplicate dispatch outputs pointed at their first copy
    why: str = ""  # why the packs stayed separate dispatches, when they did

    def describe(self) -> str:
        if not self.fused:
            return f"packs of multi-reader activations: separate dispatches ({self.why})"
        return (
            "packs of multi-reader activations: in their producers' dispatches "
            f"({self.merged_outputs} duplicate outputs merged)"
        )


def _tied(op: Any) -> bool:
    ir = iree_binding().ir

    if "tied_operands" not in op.attributes:
        return False
    return any(ir.IntegerAttr(a).value != -1 for a in ir.ArrayAttr(op.attributes["tied_operands"]))


def _merge_in(op: Any) -> int:
    """Point readers of each duplicate output of one ``flow.dispatch.workgroups`` op at the
    first output that stores the same value (same offsets, sizes, strides and type)."""
    ir = iree_binding().ir

    if _tied(op):  # an output aliasing an input: its block argument is shared, leave it
        return 0
    body = op.regions[0].blocks[0]
    first_output = len(body.arguments) - len(op.results)
    seen: dict[tuple[Any, ...], int] = {}
    merged = 0
    for inner in body.operations:
        if inner.name != _STORE:
            continue
        target = inner.operands[1]
        if not isinstance(target.owner, ir.Block):
            continue
        index = ir.BlockArgument(target).arg_number - first_output
        if index < 0:
            continue
        attrs = tuple(
            str(inner.attributes[a]) for a in ("static_offsets", "static_sizes", "static_strides")
        )
        others = tuple(v for i, v in enumerate(inner.operands) if i != 1)
        key = (*others, *attrs, str(target.type))
        if key not in seen:
            seen[key] = index
            continue
        op.results[index].replace_all_uses_with(op.results[seen[key]])
        merged += 1
    return merged


def merge_duplicate_outputs(module: Any) -> int:
    """Merge duplicate outputs of every dispatch in ``module`` (IREE's bindings, after dispatch
    creation); returns how many were merged. The now unread outputs stay until IREE's next
    canonicalization, which removes them and their stores."""
    ir = iree_binding().ir

    merged = 0

    def visit(op: Any) -> Any:
        nonlocal merged
        if op.name != "flow.dispatch.workgroups":
            return ir.WalkResult.ADVANCE
        merged += _merge_in(op)
        return ir.WalkResult.SKIP

    module.operation.walk(visit)
    return merged
