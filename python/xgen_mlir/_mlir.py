"""The one place that imports MLIR's Python bindings (torch-mlir's copy).

xgen_mlir works in torch-mlir's MLIR context (it has the FX/ONNX importers, IRDL, ext and
Python rewrite patterns). IREE has its own, separate MLIR copy: the two only meet through
text or bytecode, never through Python objects (see backend/iree.py).
"""

from __future__ import annotations

try:
    from torch_mlir import ir, passmanager, rewrite
    from torch_mlir.dialects import arith, func, linalg, tensor
except ImportError as e:  # pragma: no cover - exercised only on broken installs
    raise ImportError(
        "xgen_mlir needs torch-mlir's MLIR Python bindings (pip install torch-mlir); "
        f"importing them failed: {e}"
    ) from e

__all__ = ["arith", "func", "ir", "linalg", "new_context", "passmanager", "rewrite", "tensor"]


def new_context() -> ir.Context:
    """A fresh context with all of torch-mlir's dialects registered and loaded."""
    ctx = ir.Context()
    # torch-mlir's site initializer registers upstream + torch dialects on construction.
    ctx.allow_unregistered_dialects = False
    return ctx
