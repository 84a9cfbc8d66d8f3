"""Saving a pruned model with its sparsity description, and loading it into an architecture.

The file is a plain ``torch.save`` dict (state dict + description as JSON-compatible data), so
``torch.load(weights_only=True)`` reads it. Loading re-creates the structure buffers from the
description before loading the state dict strictly, then checks the weights obey it.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import torch
from torch import nn

from ..errors import XGenError
from .blocks import attach_blocks, gemm_view
from .description import LayerSparsity, SparsityDescription, describe
from .patterns import patterns_to_masks
from .structure import attach, check_structure, weight_of

__all__ = ["load", "save"]

_FORMAT = "xgen-compress-v1"


def save(model: nn.Module, path: str | os.PathLike[str]) -> SparsityDescription:
    """Write ``model``'s state dict and sparsity description to ``path``; returns the latter."""
    check_structure(model)
    desc = describe(model)
    payload = {"format": _FORMAT, "state_dict": model.state_dict(), "description": desc.to_dict()}
    torch.save(payload, os.fspath(path))
    return desc


def load(
    path: str | os.PathLike[str], model_or_builder: nn.Module | Callable[[], nn.Module]
) -> nn.Module:
    """Load a file written by :func:`save` into an architecture (a module, or a no-argument
    builder of one); the module is filled in place and returned in eval mode."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"pruned model file not found: {path!r}")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        raise XGenError(f"cannot read pruned model {path!r}: {e}") from e
    if not isinstance(payload, dict) or payload.get("format") != _FORMAT:
        raise XGenError(f"{path!r} is not a file written by xgen_mlir.compress.save")
    model = model_or_builder if isinstance(model_or_builder, nn.Module) else model_or_builder()
    desc = SparsityDescription.from_dict(payload["description"])
    for name, ly in desc.layers.items():
        try:
            module = model.get_submodule(name)
        except AttributeError:
            raise XGenError(f"{path!r}: the architecture has no layer {name!r}") from None
        if list(weight_of(module).shape) != ly.weight_shape:
            raise XGenError(
                f"{path!r}: layer {name!r} has weight {list(weight_of(module).shape)} in the "
                f"architecture but {ly.weight_shape} in the file"
            )
        if ly.scheme == "block":
            _attach_blocks(module, ly)
            continue
        k = ly.kernel_size
        groups = torch.empty(ly.weight_shape[0], dtype=torch.int64)
        for g, members in enumerate(ly.groups):
            groups[members] = g
        lib = patterns_to_masks(ly.patterns, k).reshape(-1, k, k)
        attach(module, lib, torch.tensor(ly.pattern_ids), groups)
    try:
        model.load_state_dict(payload["state_dict"], strict=True)
    except RuntimeError as e:
        raise XGenError(f"{path!r} does not fit the given architecture: {e}") from e
    check_structure(model)
    return model.eval()


def _attach_blocks(module: nn.Module, ly: LayerSparsity) -> None:
    """Rebuild a block layer's buffers from its description."""
    br, bc = ly.block_shape
    n, k = gemm_view(weight_of(module)).shape
    nbr, nbc = -(-n // br), -(-k // bc)
    if len(ly.block_rows) != nbr * nbc or len(ly.block_cols) != nbr * nbc:
        raise XGenError(
            f"layer {ly.name!r}: the description lists {len(ly.block_rows)} blocks, its "
            f"{n}x{k} GEMM view has {nbr * nbc} of {br}x{bc}"
        )
    rows = torch.zeros(nbr * nbc, br, dtype=torch.bool)
    cols = torch.zeros(nbr * nbc, bc, dtype=torch.bool)
    for i, (r, c) in enumerate(zip(ly.block_rows, ly.block_cols, strict=True)):
        rows[i, r] = True
        cols[i, c] = True
    attach_blocks(module, (br, bc), rows.reshape(nbr, nbc, br), cols.reshape(nbr, nbc, bc))
