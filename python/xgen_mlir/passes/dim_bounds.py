"""Bounds of an entry function's dynamic input dims, checked by the module itself.

``compile(..., dynamic_shapes=...)`` may bound a dynamic dim (``torch.export.Dim(min=, max=)``):
the program torch.export traced is only known to be right inside those bounds. Each bounded
dim gets a ``cf.assert`` at the top of the entry function, so a call with a size outside them
fails with a message naming the input, the dim and the bounds, in Python, under
``iree-run-module`` and in a bundle alike (the check travels with the ``.vmfb``).
"""

from __future__ import annotations

from collections.abc import Mapping

from .._mlir import arith, ir, tensor

Bounds = Mapping[tuple[int, int], tuple[int | None, int | None]]


def describe(lo: int | None, hi: int | None) -> str:
    if lo is not None and hi is not None:
        return f"{lo}..{hi}"
    return f"at least {lo}" if lo is not None else f"at most {hi}"


def add_dim_bound_checks(module_op: ir.Operation, entry: str, bounds: Bounds) -> int:
    """Assert ``min <= size <= max`` for every bounded dynamic dim of ``entry``'s inputs
    (``bounds``: {(input, dim): (min or None, max or None)}); returns how many dims got a
    check. Static dims and unknown inputs are skipped (the runtime checks static sizes)."""
    func = next(
        (
            op.operation
            for op in module_op.regions[0].blocks[0].operations
            if op.operation.name == "func.func"
            and ir.StringAttr(op.operation.attributes["sym_name"]).value == entry
        ),
        None,
    )
    if func is None:
        return 0
    block = func.regions[0].blocks[0]
    args = list(block.arguments)
    added = 0
    with module_op.context, func.location, ir.InsertionPoint.at_block_begin(block):
        for (i, d), (lo, hi) in sorted(bounds.items()):
            if (lo is None and hi is None) or i >= len(args):
                continue
            ty = args[i].type
            if not isinstance(ty, ir.RankedTensorType) or d >= ty.rank:
                continue
            if not ir.ShapedType.is_dynamic_size(ty.shape[d]):
                continue
            index = ir.IndexType.get()
            size = tensor.DimOp(args[i], arith.ConstantOp(index, d).result).result
            checks = []
            if lo is not None:  # predicate 5: sge
                checks.append(arith.CmpIOp(5, size, arith.ConstantOp(index, lo).result).result)
            if hi is not None:  # predicate 3: sle
                checks.append(arith.CmpIOp(3, size, arith.ConstantOp(index, hi).result).result)
            ok = checks[0] if len(checks) == 1 else arith.AndIOp(checks[0], checks[1]).result
            message = (
                f"input {i} dim {d}: size outside the compiled bounds {describe(lo, hi)} "
                "(compile's dynamic_shapes)"
            )
            ir.Operation.create(
                "cf.assert", operands=[ok], attributes={"msg": ir.StringAttr.get(message)}
            )
            added += 1
    return added
