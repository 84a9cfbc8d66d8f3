"""The one place that imports MLIR's Python bindings.

xgen_mlir's graph phase works in torch-mlir's MLIR context (it has the FX/ONNX importers,
IRDL, ext and Python rewrite patterns). IREE has its own, separate MLIR copy, in which the
dispatch phase runs: the two only meet through text or bytecode, never through Python objects
(see backend/iree.py). ``binding_of`` tells which copy an IR object belongs to.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

try:
    from torch_mlir import ir, passmanager, rewrite
except ImportError as e:  # pragma: no cover - exercised only on broken installs
    raise ImportError(
        "xgen_mlir needs torch-mlir's MLIR Python bindings (pip install torch-mlir); "
        f"importing them failed: {e}"
    ) from e

if TYPE_CHECKING:
    from torch_mlir.dialects import arith, func, irdl, linalg, tensor
    from torch_mlir.dialects import torch as torch_dialect

# The dialects' Python modules (op builders) are imported when first used: parsing needs none
# of them, and importing them all costs 0.3 s, paid by every child process that checks an
# untrusted file (``frontend/parse_check.py``) and every ``xgen-opt`` run.
_DIALECT_MODULES = {
    "arith": "torch_mlir.dialects.arith",
    "func": "torch_mlir.dialects.func",
    "irdl": "torch_mlir.dialects.irdl",
    "linalg": "torch_mlir.dialects.linalg",
    "tensor": "torch_mlir.dialects.tensor",
    "torch_dialect": "torch_mlir.dialects.torch",
}


def __getattr__(name: str) -> ModuleType:
    if name in _DIALECT_MODULES:
        module = importlib.import_module(_DIALECT_MODULES[name])
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    "register_torch_dialect",
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
    return Binding(
        "torch-mlir",
        ir,
        passmanager,
        __getattr__("linalg"),
        __getattr__("tensor"),
        __getattr__("arith"),
    )


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


def register_torch_dialect(ctx: ir.Context) -> None:
    """Register torch-mlir's ``torch`` dialect in ``ctx`` (what
    ``torch_mlir.dialects.torch.register_dialect`` does, without importing the dialect's
    thousand op builders first)."""
    from torch_mlir._mlir_libs._torchMlir import register_dialect

    register_dialect(ctx)


def new_context() -> ir.Context:
    """A fresh context with all of torch-mlir's dialects registered and loaded."""
    ctx = ir.Context()
    # torch-mlir's site initializer registers upstream + torch dialects on construction.
    ctx.allow_unregistered_dialects = False
    return ctx
