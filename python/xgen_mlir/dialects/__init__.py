"""xgen_mlir's own dialects: loading their specs (from ``dialects/``) into a context."""

from .loader import load_xgen_dialects

__all__ = ["load_xgen_dialects"]
