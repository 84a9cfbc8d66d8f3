"""``.mlir`` / ``.mlirbc`` input: parse with file:line:col errors, lower torch IR if present."""

from __future__ import annotations

import os
import re
from pathlib import Path

from .._mlir import binding_of, ir
from ..diagnostics import captured_diagnostics
from ..errors import FrontendError, MLIRParseError
from .lowering import lower_torch_to_linalg


def new_torch_context() -> ir.Context:
    from .._mlir import torch_dialect as torch_d
    from ..dialects import load_xgen_dialects

    ctx = ir.Context()
    torch_d.register_dialect(ctx)
    load_xgen_dialects(ctx)
    return ctx


def parse_mlir(
    text: str | bytes, source: str = "<string>", ctx: ir.Context | None = None
) -> ir.Module:
    """Parse MLIR text or bytecode; a malformed input raises MLIRParseError naming the place.
    ``ctx``: torch-mlir's by default; an IREE context parses IREE's IR (dispatch passes)."""
    ctx = ctx or new_torch_context()
    binding = binding_of(ctx)
    with captured_diagnostics(ctx) as diags:
        try:
            module = binding.ir.Module.parse(text, ctx)
        except binding.ir.MLIRError as e:
            msgs = [
                _relocate(str(d.location), source) + ": error: " + d.message
                for d in e.error_diagnostics
            ]
            raise MLIRParseError("\n".join(msgs or diags or [str(e)])) from None
    from ..dialects.sparse import has_sparse_ops, verify_sparse_ops

    if binding.name == "torch-mlir" and has_sparse_ops(
        module.operation
    ):  # the dialect's semantic rules, like a verifier
        verify_sparse_ops(module.operation)
    return module


def _relocate(loc: str, source: str) -> str:
    """'loc("-":3:7)' -> 'source:3:7'."""
    m = re.match(r'loc\("(.*)":(\d+):(\d+)\)', loc)
    if not m:
        return source
    return f"{source}:{m.group(2)}:{m.group(3)}"


def relabel_source(text: str, source: str) -> str:
    """Name the file in locations the parser recorded as '-' (it is given no file name)."""
    return re.sub(
        r"(?<![\w/.])-:(\d+):(\d+)", lambda m: f"{source}:{m.group(1)}:{m.group(2)}", text
    )


def import_mlir_file(path: str | os.PathLike[str]) -> ir.Module:
    path = Path(path)
    if not path.is_file():
        raise FrontendError(f"{path}: no such file")
    data = path.read_bytes()
    module = parse_mlir(data if path.suffix == ".mlirbc" else data.decode(), str(path))
    if _has_torch_ops(module):
        module = lower_torch_to_linalg(module, from_raw=True)
    return module


def _has_torch_ops(module: ir.Module) -> bool:
    from ..irutil import ops_where

    return bool(
        ops_where(module.operation, lambda op: op.name.startswith("torch."), first_only=True)
    )
