"""A generated kernel's result, reshaped and converted, packed in a dispatch of its own.

A generated kernel's call returns a flat tensor, reshaped to the op's shape after it
(``passes/kernel_call.py``). When a top-level elementwise op reads that reshape and feeds a
data-tiled matmul (in bf16, the attention kernel's output demoted for the output projection),
IREE puts the matmul's pack into the elementwise op's dispatch, collapses that dispatch to one
loop (it is elementwise), and the pack becomes an element-by-element scatter
(``iree_linalg_ext.map_store``): MiniLM's attention-output copy took 0.16 ms per layer at batch
4. The matmul reads the op's result through an ``iree_tensor_ext.compute_barrier.start``
instead, so the pack is a dispatch of its own, a 2-D pack.
"""

from __future__ import annotations

from typing import Any

from .accumulator_packs import BARRIER, REGION
from .data_tiling import HINT, _iterators

_KERNEL_CALL = "flow.dispatch"
_RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape")


def _reads_kernel_result(op: Any) -> bool:
    """Whether top-level elementwise ``op`` reads a reshape of a kernel call's result."""
    from .._mlir import iree_binding

    ir = iree_binding().ir

    if op.name != "linalg.generic" or (op.parent is not None and op.parent.name == REGION):
        return False
    if not all("parallel" in t for t in _iterators(op)):
        return False
    for value in op.operands:
        owner = value.owner
        if isinstance(owner, ir.Block) or owner.name not in _RESHAPES:
            continue
        source = owner.operands[0].owner
        if not isinstance(source, ir.Block) and source.name == _KERNEL_CALL:
            return True
    return False


def separate_kernel_result_packs(block: Any) -> int:
    """Put a barrier between each data-tiled contraction and an input computed by an
    elementwise op from a kernel call's reshaped result; returns how many inputs."""
    from .._mlir import iree_binding

    ir = iree_binding().ir

    done = 0
    for op in list(block.operations):
        op = op.operation
        if HINT not in op.attributes:
            continue
        for number, value in enumerate(list(op.operands)[:-1]):
            owner = value.owner
            if isinstance(owner, ir.Block) or not _reads_kernel_result(owner):
                continue
            with op.location, ir.InsertionPoint(op):
                barrier = ir.Operation.create(BARRIER, results=[value.type], operands=[value])
            op.operands[number] = barrier.results[0]
            done += 1
    return done
