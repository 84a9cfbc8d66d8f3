"""The structure a pruned layer carries, and the check that its weights obey it.

Each pruned module keeps three persistent buffers next to its plain (zero-filled) weight, so
they survive ``state_dict`` save/load and ``torch.export`` untouched, without the
parametrizations that would hide the zeros from an exported graph:

- ``xgen_patterns``    [P, K, K] bool: the pattern library (for 1x1 / Linear: one 1x1 pattern);
- ``xgen_pattern_ids`` [F, C] int16: pattern of each kernel, -1 for a removed kernel;
- ``xgen_groups``      [F] int32: the filter group of each filter (groups share a layout).
"""

from __future__ import annotations

from typing import cast

import torch
from torch import nn

from ..errors import XGenError

__all__ = [
    "BUFFERS",
    "StructureError",
    "attach",
    "check_structure",
    "detach",
    "mask_of",
    "pruned_layers",
]

BUFFERS = ("xgen_patterns", "xgen_pattern_ids", "xgen_groups")
#: A kept weight that happens to be exactly 0.0 is set to this, so "exactly n nonzeros per
#: kept kernel" holds and the compiler can read the structure from the zeros alone.
TINY = 1e-12


class StructureError(XGenError, ValueError):
    """A pruned weight does not match the structure its layer declares."""


def weight_of(module: nn.Module) -> torch.Tensor:
    """``module.weight`` (``nn.Module`` types an attribute it looks up as Tensor | Module)."""
    return cast(torch.Tensor, module.weight)


def buffer_of(module: nn.Module, name: str) -> torch.Tensor:
    """The structure buffer ``name`` (one of ``BUFFERS``) of ``module``."""
    return cast(torch.Tensor, getattr(module, name))


def attach(module: nn.Module, patterns: torch.Tensor, ids: torch.Tensor, groups: torch.Tensor):
    """Register (or overwrite) the structure buffers of ``module``."""
    module.register_buffer("xgen_patterns", patterns.to(torch.bool).clone())
    module.register_buffer("xgen_pattern_ids", ids.to(torch.int16).clone())
    module.register_buffer("xgen_groups", groups.to(torch.int32).clone())


def detach(module: nn.Module) -> None:
    """Remove the structure buffers (the weights keep their zeros)."""
    for name in BUFFERS:
        module._buffers.pop(name, None)


def pruned_layers(model: nn.Module) -> dict[str, nn.Module]:
    """Name -> module of every module that carries a structure (pattern or block), in module
    order."""
    return {
        n: m
        for n, m in model.named_modules()
        if "xgen_pattern_ids" in m._buffers or "xgen_block_rows" in m._buffers
    }


def mask_of(module: nn.Module) -> torch.Tensor:
    """The bool keep-mask of ``module.weight`` that its structure buffers describe."""
    if "xgen_block_rows" in module._buffers:
        from .blocks import block_mask

        return block_mask(module)
    patterns = buffer_of(module, "xgen_patterns")
    lib = patterns.reshape(len(patterns), -1)
    ids = buffer_of(module, "xgen_pattern_ids").long()
    mask = lib[ids.clamp(min=0)] & (ids >= 0)[..., None]
    return mask.reshape(weight_of(module).shape)


@torch.no_grad()
def project(module: nn.Module) -> None:
    """Zero everything outside the mask and make every kept weight nonzero."""
    mask = mask_of(module)
    w = weight_of(module)
    w.mul_(mask)
    w.masked_fill_(mask & (w == 0), TINY)


def check_structure(model: nn.Module) -> list[str]:
    """Verify every pruned layer's weight against its declared structure.

    Raises :class:`StructureError` naming the layer and kernel of the first violation of:
    a library of distinct, equal-size patterns; ids in range; zeros exactly outside the kept
    positions and nonzeros exactly inside them; one shared layout per filter group.
    Returns the names of the layers checked.
    """
    layers = pruned_layers(model)
    if not layers:
        raise StructureError("no pruned layers found (no module has xgen_pattern_ids)")
    for name, m in layers.items():
        _check_layer(name, m)
    return list(layers)


def _check_layer(name: str, m: nn.Module) -> None:
    if "xgen_block_rows" in m._buffers:
        from .blocks import check_block_layer

        check_block_layer(name, m, StructureError)
        return
    lib = buffer_of(m, "xgen_patterns")
    ids = buffer_of(m, "xgen_pattern_ids").long()
    groups = buffer_of(m, "xgen_groups").long()
    w = weight_of(m).detach()
    f, c = w.shape[:2]
    where = f"layer {name!r}"
    fits = lib[0].numel() == w[0, 0].numel()
    if ids.shape != (f, c) or groups.shape != (f,) or not fits:
        raise StructureError(
            f"{where}: structure buffers {tuple(lib.shape)}, {tuple(ids.shape)}, "
            f"{tuple(groups.shape)} do not fit weight {tuple(w.shape)}"
        )
    flat_lib = lib.reshape(len(lib), -1)
    sizes = flat_lib.sum(1)
    if len(set(sizes.tolist())) != 1 or len({tuple(r.tolist()) for r in flat_lib}) != len(lib):
        raise StructureError(f"{where}: pattern library must hold distinct patterns of one size")
    if int(ids.min()) < -1 or int(ids.max()) >= len(lib):
        raise StructureError(f"{where}: pattern ids must lie in [-1, {len(lib) - 1}]")
    mask = mask_of(m).reshape(f, c, -1)
    nz = w.reshape(f, c, -1) != 0
    bad = (nz & ~mask).any(-1) | (~nz & mask).any(-1)
    if bool(bad.any()):
        fi, ci = (int(v) for v in torch.nonzero(bad)[0])
        pid = int(ids[fi, ci])
        got = torch.nonzero(nz[fi, ci]).flatten().tolist()
        want = torch.nonzero(mask[fi, ci]).flatten().tolist()
        declared = "removed (all zero)" if pid < 0 else f"pattern {pid} (positions {want})"
        raise StructureError(
            f"{where}: kernel [filter {fi}, input channel {ci}] is declared {declared} but "
            f"its nonzero positions are {got} ({int(bad.sum())} bad kernel(s) in this layer)"
        )
    for g in torch.unique(groups).tolist():
        members = torch.nonzero(groups == g).flatten()
        rows = ids[members]
        differ = (rows != rows[0]).any(1)
        if bool(differ.any()):
            other = int(members[torch.nonzero(differ)[0, 0]])
            raise StructureError(
                f"{where}: filters {int(members[0])} and {other} are in group {g} but have "
                "different kernel layouts (kept input channels or patterns)"
            )
