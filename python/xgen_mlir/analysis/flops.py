"""FLOPs of linalg-on-tensors, counted from structure: iterations x arithmetic per iteration.

For a structured op the loop ranges come from its indexing maps and operand shapes; the
arithmetic ops in its body (``arith``/``math``, not casts or selects) are counted once per
iteration. Named ops without a body we can read (matmul, conv) count 2 per iteration (one
multiply, one add). Reports compare this number before and after graph rewriting. A call of a
generated kernel counts what its declaration's ``xgen.flops`` says (the FLOPs of the ops the
kernel replaced, counted here before they went).
"""

from __future__ import annotations

from typing import Any

from .mapping_types import classify, indexing_maps, ir_of

_FREE = (
    "arith.constant",
    "arith.index_cast",
    "arith.select",
    "arith.cmpi",
    "arith.ext",
    "arith.trunc",
    "arith.bitcast",
    "arith.sitofp",
    "arith.uitofp",
    "arith.fpto",
    "linalg.index",
    "linalg.yield",
    "tensor.extract",
)


def _loop_ranges(op: Any, maps: list[Any]) -> list[int] | None:
    ir = ir_of(op)
    n = maps[0].n_dims
    ranges: list[int | None] = [None] * n
    for value, amap in zip(op.operands, maps, strict=False):
        shape = getattr(value.type, "shape", None)
        if shape is None:
            continue
        for size, expr in zip(shape, amap.results, strict=False):
            if isinstance(expr, ir.AffineDimExpr) and ranges[expr.position] is None:
                ranges[expr.position] = size
    if any(r is None or r < 0 for r in ranges):
        return None
    return [int(r) for r in ranges]  # type: ignore[arg-type]


def _body_flops(op: Any) -> int:
    count = 0
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                name = inner.operation.name
                if name.startswith(("arith.", "math.")) and not name.startswith(_FREE):
                    count += 1
    return count


def op_flops(op: Any) -> int:
    op = op.operation
    maps = indexing_maps(op)
    if maps is None or not maps:
        return 0
    ranges = _loop_ranges(op, maps)
    if ranges is None:
        return 0
    iterations = 1
    for r in ranges:
        iterations *= r
    per = _body_flops(op)
    if per == 0:
        mapping = classify(op)
        per = 2 if mapping is not None and mapping.is_contraction else 0
    return iterations * per


FLOPS_ATTR = "xgen.flops"


def module_flops(module_op: Any) -> int:
    """Sum of ``op_flops`` over every op of the module (nested bodies are not double counted),
    plus the ``xgen.flops`` of each generated kernel called."""
    ir = ir_of(module_op)
    total = 0
    kernels = {}
    for f in module_op.regions[0].blocks[0].operations:
        if f.operation.name == "func.func" and FLOPS_ATTR in f.operation.attributes:
            name = ir.StringAttr(f.operation.attributes["sym_name"]).value
            kernels[name] = ir.IntegerAttr(f.operation.attributes[FLOPS_ATTR]).value

    def visit(op: Any) -> Any:
        nonlocal total
        if op.operation.name == "func.call":
            callee = ir.FlatSymbolRefAttr(op.operation.attributes["callee"]).value
            total += kernels.get(callee, 0)
        else:
            total += op_flops(op)
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    return total
