"""Torch dialect -> linalg-on-tensors, reporting every op that does not lower.

torch-mlir's own pipeline stops at the first illegal op with a generic message. We run the
same conversion passes (they are partial conversions), and if anything is left in the torch
dialect afterwards we list *all* of it -- op name, count and source location -- at once.
"""

from __future__ import annotations

from .._mlir import ir, passmanager
from ..diagnostics import captured_diagnostics
from ..errors import FrontendError, UnsupportedOp, UnsupportedOpsError
from ..irutil import leftover_torch_ops

TORCH_BACKEND_CONTRACT = (
    "builtin.module(func.func(torch-match-quantized-custom-ops),"
    "torchdynamo-export-to-torch-backend-pipeline)"
)
TORCH_TO_LINALG = "builtin.module(torch-backend-to-linalg-on-tensors-backend-pipeline)"


def run_pipeline(module: ir.Module, pipeline: str) -> list[str] | None:
    """Run a textual pipeline; return None on success, the diagnostics on failure."""
    ctx = module.context
    with captured_diagnostics(ctx) as diags:
        try:
            passmanager.PassManager.parse(pipeline, ctx).run(module.operation)
        except ir.MLIRError as e:
            return diags + [str(e)]
        except RuntimeError as e:  # older bindings raise RuntimeError on pass failure
            return diags + [str(e)]
    return None


def lower_torch_to_linalg(module: ir.Module, *, from_raw: bool = True) -> ir.Module:
    """Lower a torch-dialect module in place to linalg-on-tensors, or raise UnsupportedOpsError."""
    if from_raw:
        diags = run_pipeline(module, TORCH_BACKEND_CONTRACT)
        if diags is not None:
            ops = leftover_torch_ops_needing_support(module, diags)
            if ops:
                raise UnsupportedOpsError(ops, stage="torch backend-contract lowering")
            raise FrontendError("torch backend-contract lowering failed:\n" + "\n".join(diags))
    diags = run_pipeline(module, TORCH_TO_LINALG)
    if diags is None:
        return module
    # The conversions are partial: after a failure the module holds exactly what did not lower.
    ops = leftover_torch_ops(module)
    if ops:
        raise UnsupportedOpsError(ops, stage="torch -> linalg-on-tensors lowering")
    raise FrontendError("torch -> linalg-on-tensors lowering failed:\n" + "\n".join(diags))


def leftover_torch_ops_needing_support(module: ir.Module, diags: list[str]) -> list[UnsupportedOp]:
    """Ops named in backend-contract diagnostics (e.g. missing shape/dtype functions)."""
    ops = []
    for d in diags:
        if "unsupported by backend contract" in d or "failed to legalize" in d:
            loc, _, msg = d.partition(": ")
            name = msg.split("'")[1] if "'" in msg else msg
            ops.append(UnsupportedOp(name, loc))
    return ops
