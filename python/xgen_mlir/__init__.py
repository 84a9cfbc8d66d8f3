"""xgen_mlir: a compression-compilation co-design DNN compiler on MLIR and IREE.

Public API: :func:`compile`, :func:`load`, :class:`CompileOptions`, :class:`CompiledModule`.
"""

from .compiler import CompileOptions, compile
from .errors import XGenError
from .runtime import CompiledModule, load, load_bundle

__all__ = ["CompileOptions", "CompiledModule", "XGenError", "compile", "load", "load_bundle"]
__version__ = "0.1.0"
