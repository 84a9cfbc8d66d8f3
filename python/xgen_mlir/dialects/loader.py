"""Register the IRDL specs in the top-level ``dialects/`` folder into an MLIR context.

The specs are the single definition of our dialects; loading is idempotent per context.
"""

from __future__ import annotations

import functools

from .._mlir import ir
from .._paths import dialects_dir

SPECS = ("xgen_sparse.irdl.mlir",)


@functools.cache
def _spec_text(name: str) -> str:
    return (dialects_dir() / name).read_text()


def load_xgen_dialects(ctx: ir.Context) -> None:
    """Make ``xgen_sparse.*`` ops parse and verify in ``ctx`` (no-op if already loaded)."""
    from .._mlir import irdl

    if ctx.is_registered_operation("xgen_sparse.pattern_conv2d"):
        return
    for name in SPECS:
        irdl.load_dialects(ir.Module.parse(_spec_text(name), ctx))
