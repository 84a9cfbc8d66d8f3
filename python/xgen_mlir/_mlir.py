"""The one place that imports MLIR's Python bindings.

xgen_mlir's graph phase works in torch-mlir's MLIR context (it has the FX/ONNX importers,
IRDL, ext and Python rewrite patterns). IREE has its own, separate MLIR copy, in which the
dispatch phase runs: the two only meet through text or bytecode, never through Python objects
(see backend/iree.py). ``binding_of`` tells which copy an IR object belongs to.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

try:
    from torch_mlir import ir, passmanager, rewrite
    from torch_mlir.dialects import arith, func, irdl, linalg, tensor
    from torch_mlir.dialects import torch as torch_dialect
except ImportError as e:  # pragma: no cover - exercised only on broken installs
    raise ImportError(
        "xgen_mlir needs torch-mlir's MLIR Python bindings (pip install torch-mlir); "
        f"importing them failed: {e}"
    ) from e

__all__ = [
    "Binding",
    "arith",
    "binding_of",
    "func",
    "ir",
    "irdl",
    "iree_binding",
    "linalg",
    "new_context",
    "passmanager",
    "rewrite",
    "tensor",
    "torch_binding",
    "torch_dialect",
]


@dataclass(frozen=True)
class Binding:
    """One copy of MLIR's Python bindings: its ``ir``, ``passmanager`` and dialect modules."""

    name: str  # "torch-mlir" or "iree"
    ir: ModuleType
    passmanager: ModuleType
    linalg: ModuleType
    tensor: ModuleType
    arith: ModuleType


def torch_binding() -> Binding:
    return Binding("torch-mlir", ir, passmanager, linalg, tensor, arith)


_IREE: Binding | None = None


def iree_binding() -> Binding:
    global _IREE
    if _IREE is None:
        from iree.compiler import ir as iree_ir
        from iree.compiler import passmanager as iree_pm
        from iree.compiler.dialects import arith as iree_arith
        from iree.compiler.dialects import linalg as iree_linalg
        from iree.compiler.dialects import tensor as iree_tensor

        _IREE = Binding("iree", iree_ir, iree_pm, iree_linalg, iree_tensor, iree_arith)
    return _IREE


def binding_of(obj: Any) -> Binding:
    """The binding an IR object (context, module, operation, op view, value, type, location)
    comes from, by the class it is an instance of."""
    probe = obj.context if hasattr(obj, "context") and not isinstance(obj, ir.Context) else obj
    if isinstance(probe, ir.Context):
        return torch_binding()
    iree = iree_binding()
    if isinstance(probe, iree.ir.Context):
        return iree
    raise TypeError(f"not an MLIR object of a known binding: {type(obj).__name__}")


def new_context() -> ir.Context:
    """A fresh context with all of torch-mlir's dialects registered and loaded."""
    ctx = ir.Context()
    # torch-mlir's site initializer registers upstream + torch dialects on construction.
    ctx.allow_unregistered_dialects = False
    return ctx
