"""xgen_mlir: a compression-compilation co-design DNN compiler on MLIR and IREE.

Public API: :func:`compile`, :func:`load`, :func:`tune`, :class:`CompileOptions`,
:class:`CompiledModule`.

The compiler half (torch-mlir, IREE's compiler) is imported on first use of ``compile`` or
``tune``, so a machine that only runs compiled modules needs only the runtime's dependencies
(numpy, ml_dtypes and IREE's runtime): ``xgen_mlir.load`` works there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import XGenError
from .runtime import CompiledModule, load, load_bundle

if TYPE_CHECKING:
    from .compiler import CompileOptions, compile
    from .tuning.search import tune

__all__ = [
    "CompileOptions",
    "CompiledModule",
    "XGenError",
    "compile",
    "load",
    "load_bundle",
    "tune",
]
__version__ = "0.1.0"

_COMPILER_NAMES = {"compile": ".compiler", "CompileOptions": ".compiler", "tune": ".tuning.search"}


def __getattr__(name: str) -> Any:
    module = _COMPILER_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'xgen_mlir' has no attribute '{name}'")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
