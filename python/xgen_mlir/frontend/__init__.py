"""Frontends: every model format becomes linalg-on-tensors in torch-mlir's MLIR context.

``import_model`` dispatches on what it is given: an ``nn.Module`` (+ example inputs), a
``torch.export`` program or ``.pt2`` file, an ``.onnx`` file or ``ModelProto``, ``.mlir`` /
``.mlirbc`` files, or an already-imported ``ir.Module``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._mlir import ir
from ..errors import FrontendError

SUFFIXES = {
    ".pt2": "torch.export program",
    ".onnx": "ONNX model",
    ".mlir": "MLIR text",
    ".mlirbc": "MLIR bytecode",
}


def _shapes(example_inputs: Sequence[Any] | None) -> list[tuple[int, ...]] | None:
    if example_inputs is None:
        return None
    import numpy as np

    return [tuple(int(d) for d in np.shape(x)) for x in example_inputs]


def import_model(
    model: Any, example_inputs: Sequence[Any] | None = None, *, trust_pickle: bool = False
) -> ir.Module:
    """Return a linalg-on-tensors module for ``model`` (see module docstring for the kinds).
    An ONNX model's symbolic dims take the sizes of ``example_inputs`` when given (a static
    module, as a torch export from examples is); without them they stay dynamic.
    ``trust_pickle``: load a ``.pt2`` file without first checking that it runs no code of its
    own (``torch_import.load_pt2``)."""
    if isinstance(model, ir.Module):
        return model
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        if path.suffix == ".pt2":
            from .torch_import import import_torch

            return import_torch(path, trust_pickle=trust_pickle)
        if path.suffix == ".onnx":
            from .onnx_import import import_onnx

            return import_onnx(path, input_shapes=_shapes(example_inputs))[0]
        if path.suffix in (".mlir", ".mlirbc"):
            from .mlir_import import import_mlir_file

            return import_mlir_file(path)
        kinds = ", ".join(f"{k} ({v})" for k, v in SUFFIXES.items())
        raise FrontendError(
            f"{path}: unknown model file type '{path.suffix}'; expected one of {kinds}"
        )
    try:
        import onnx

        if isinstance(model, onnx.ModelProto):
            from .onnx_import import import_onnx

            return import_onnx(model, input_shapes=_shapes(example_inputs))[0]
    except ImportError:
        pass
    import torch

    if isinstance(model, (torch.nn.Module, torch.export.ExportedProgram)):
        from .torch_import import import_torch

        return import_torch(model, example_inputs)
    raise FrontendError(
        f"cannot compile an object of type {type(model).__name__}; give an nn.Module with example "
        "inputs, a torch.export program, an ONNX model, or a .pt2/.onnx/.mlir file path"
    )
