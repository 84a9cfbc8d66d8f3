"""xgen_mlir: a compression-compilation co-design DNN compiler on MLIR and IREE.

Public API: :func:`compile`, :func:`load`, :func:`tune`, :class:`CompileOptions`,
:class:`CompiledModule`.
"""

from .compiler import CompileOptions, compile
from .errors import XGenError
from .runtime import CompiledModule, load, load_bundle
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
