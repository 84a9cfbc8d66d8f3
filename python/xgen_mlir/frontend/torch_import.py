"""PyTorch -> linalg-on-tensors through torch.export and torch-mlir's FX importer.

Accepts an ``nn.Module`` with example inputs, an ``ExportedProgram``, or a saved ``.pt2``.
Hugging Face models keep some buffers non-persistent, which the importer cannot map
("Could not find state mapping for buffer"); they are made persistent before export.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from .._mlir import ir
from ..errors import FrontendError
from .lowering import lower_torch_to_linalg


def _make_buffers_persistent(model: torch.nn.Module) -> None:
    for m in model.modules():
        m._non_persistent_buffers_set.clear()


def _first_lines(e: BaseException, n: int = 6) -> str:
    lines = [ln for ln in str(e).splitlines() if ln.strip()]
    return "\n".join(lines[:n]) + ("\n..." if len(lines) > n else "")


def export_program(
    model: torch.nn.Module, example_inputs: Sequence[Any]
) -> torch.export.ExportedProgram:
    """torch.export the model (eval mode) with its example inputs."""
    if not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    model = model.eval()
    _make_buffers_persistent(model)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return torch.export.export(model, tuple(example_inputs), strict=False)
    except Exception as e:  # torch.export raises many kinds; all mean "cannot trace"
        raise FrontendError(
            f"torch.export could not trace {type(model).__name__}: {type(e).__name__}: "
            f"{_first_lines(e)}"
        ) from None


def load_pt2(path: str | os.PathLike[str]) -> torch.export.ExportedProgram:
    path = Path(path)
    if not path.is_file():
        raise FrontendError(f"{path}: no such file (expected a torch.export .pt2 program)")
    try:
        return torch.export.load(str(path))
    except Exception as e:
        raise FrontendError(
            f"{path}: not a loadable torch.export program: {_first_lines(e, 3)}"
        ) from None


def import_exported(prog: torch.export.ExportedProgram, entry: str = "main") -> ir.Module:
    """ExportedProgram -> linalg-on-tensors module in a fresh torch-mlir context."""
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table
    from torch_mlir.extras.fx_importer import FxImporter

    from .._mlir import torch_dialect as torch_d

    ctx = ir.Context()
    torch_d.register_dialect(ctx)
    importer = FxImporter(context=ctx)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            prog = prog.run_decompositions(get_decomposition_table())
            importer.import_frozen_program(prog, func_name=entry)
    except Exception as e:
        raise FrontendError(
            f"torch-mlir's FX importer failed: {type(e).__name__}: {_first_lines(e)}"
        ) from None
    return lower_torch_to_linalg(importer.module)


def import_torch(
    model: torch.nn.Module | torch.export.ExportedProgram | str | os.PathLike[str],
    example_inputs: Sequence[Any] | None = None,
    entry: str = "main",
) -> ir.Module:
    if isinstance(model, (str, os.PathLike)):
        return import_exported(load_pt2(model), entry)
    if isinstance(model, torch.export.ExportedProgram):
        return import_exported(model, entry)
    if example_inputs is None:
        raise FrontendError(
            f"compiling a {type(model).__name__} needs example_inputs (a tensor or a tuple)"
        )
    return import_exported(export_program(model, example_inputs), entry)
