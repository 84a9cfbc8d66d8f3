"""One-shot pattern + connectivity pruning with the compiler's filter-group constraint.

``prune`` returns a deep copy whose conv weights are projected (no training) onto: a small
pattern library per model and kernel size, whole-kernel removal per (filter group, input
channel), and groups of G filters sharing one layout. The structure is stored as buffers on
each pruned module (see :mod:`.structure`) and is visible in the weights' zeros alone.
"""

from __future__ import annotations

import copy
import fnmatch
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
from torch import nn

from ..errors import XGenError
from .connectivity import rate_for_target
from .grouping import group_filters
from .patterns import default_pattern_size, patterns_to_masks, select_library
from .structure import attach, check_structure, detach, project, pruned_layers, weight_of

__all__ = ["TARGET_GROUP_SIZE", "prune"]

#: Filters per group by target: the CPU kernels keep 16 filters' accumulators in registers.
TARGET_GROUP_SIZE = {"cpu": 16}

LayerFilter = Iterable[str] | Callable[[str, nn.Module], bool] | None


@dataclass
class _Layer:
    name: str
    module: nn.Module
    kind: str  # "conv" | "depthwise" | "pointwise" | "linear"
    kernel: int
    n: int = 1
    rate: float = 0.0


def _kind(m: nn.Module) -> tuple[str, int] | None:
    """Classify a module as a pruning candidate: (kind, kernel size) or None."""
    if isinstance(m, nn.Linear):
        return "linear", 1
    if not isinstance(m, nn.Conv2d) or m.kernel_size[0] != m.kernel_size[1]:
        return None
    k = m.kernel_size[0]
    if m.groups == 1:
        return ("conv", k) if k in (3, 5, 7) else ("pointwise", 1) if k == 1 else None
    if m.groups == m.in_channels and m.weight.shape[1] == 1 and k == 3:
        return "depthwise", k
    return None


def _matches(name: str, m: nn.Module, spec: LayerFilter) -> bool:
    if callable(spec):
        return bool(spec(name, m))
    return any(fnmatch.fnmatchcase(name, pat) for pat in spec or ())


def _select(model, group_size, layers, exclude, pointwise) -> list[_Layer]:
    chosen = []
    for name, m in model.named_modules():
        kind = _kind(m)
        if kind is None or (layers is not None and not _matches(name, m, layers)):
            continue
        if _matches(name, m, exclude) or m.weight.shape[0] < group_size:
            continue
        if kind[0] in ("pointwise", "linear") and pointwise is None:
            continue
        chosen.append(_Layer(name, m, *kind))
    if layers is not None and not callable(layers):
        names = [n for n, _ in model.named_modules()]
        unknown = [p for p in layers if not any(fnmatch.fnmatchcase(n, p) for n in names)]
        if unknown:
            raise XGenError(f"layers= names match no module: {unknown}")
    return chosen


def _per_layer(value, name: str, default):
    if isinstance(value, dict):
        return value.get(name, default)
    return default if value is None else value


def prune(
    model: nn.Module,
    example_inputs: tuple,
    target: str = "cpu",
    *,
    patterns: int = 8,
    pattern_size: int | dict[str, int] | None = None,
    connectivity: float | dict[str, float] = 0.0,
    target_rate: float | None = None,
    allocation: str | None = None,
    group_size: int | None = None,
    layers: LayerFilter = None,
    exclude: LayerFilter = (),
    pointwise: float | dict[str, float] | None = None,
    library: str = "model",
    verbose: bool = False,
    scheme: str = "pattern",
    rate: float | dict[str, float] = 4.0,
    block_shape: tuple[int, int] | dict[str, tuple[int, int]] | None = None,
    row_share: float | None = None,
    criterion: str | None = None,
    calibration: Iterable | None = None,
    refit: bool | None = None,
) -> nn.Module:
    """Pattern- and connectivity-prune a deep copy of ``model`` for ``target``.

    Candidates: square 3x3/5x5/7x7 convs with groups=1 and at least G filters (patterns and
    connectivity), depthwise 3x3 convs (patterns only), and, when ``pointwise`` gives a rate,
    1x1 convs and Linear layers (connectivity only). ``layers``/``exclude`` take module-name
    globs or a ``(name, module) -> bool`` predicate.

    ``patterns``: library size P (4..8); ``pattern_size``: kept positions n per kernel (default
    4 for 3x3, round(K*K*4/9) otherwise); ``connectivity``: fraction of kernels removed per
    layer (a float or {name: rate}); ``target_rate``: instead, solve per-layer connectivity
    rates so conv weights become ``target_rate`` times fewer, allocated by ``allocation``
    ("erk": big layers pruned harder, the default; or "uniform"); ``group_size``: filters sharing a
    layout (default by target, 1 = unconstrained); ``library``: "model" (one library per
    kernel size, the paper's default) or "layer".

    ``scheme="block"``: block-based pruning of Linear and conv layers through their GEMM view
    instead (:func:`.blocks.prune_blocks`, which takes ``rate``, ``block_shape``,
    ``row_share``, ``allocation`` ("uniform" by default there), ``layers``, ``exclude``,
    ``criterion`` ("activation" by default: weights x input RMS on ``example_inputs`` and
    ``calibration``; or "weight"), ``calibration`` and ``refit`` (least-squares refit of the
    kept weights on the calibration inputs; on by default when ``calibration`` is given).
    """
    if scheme == "block":
        pattern_args = {
            "patterns": patterns != 8,
            "pattern_size": pattern_size is not None,
            "connectivity": bool(connectivity),
            "target_rate": target_rate is not None,
            "group_size": group_size is not None,
            "pointwise": pointwise is not None,
        }
        wrong = [k for k, given in pattern_args.items() if given]
        if wrong:
            raise XGenError(f"scheme='block' does not take the pattern scheme's {wrong}")
        from .blocks import prune_blocks

        return prune_blocks(
            model,
            example_inputs,
            target,
            rate=rate,
            block_shape=block_shape,
            row_share=row_share,
            allocation=allocation or "uniform",
            layers=layers,
            exclude=exclude,
            criterion=criterion or "activation",
            calibration=calibration,
            refit=refit,
            verbose=verbose,
        )
    if scheme != "pattern":
        raise XGenError(f"scheme={scheme!r}: use 'pattern' or 'block'")
    if criterion is not None or calibration is not None or refit is not None:
        raise XGenError("criterion=, calibration= and refit= belong to scheme='block'")
    allocation = allocation or "erk"
    if target not in TARGET_GROUP_SIZE:
        raise XGenError(f"unknown target {target!r}; known: {sorted(TARGET_GROUP_SIZE)}")
    if not 4 <= patterns <= 8:
        raise XGenError(f"patterns={patterns}: the pattern library holds 4 to 8 patterns")
    if library not in ("model", "layer"):
        raise XGenError(f"library={library!r}: use 'model' or 'layer'")
    if target_rate is not None and connectivity:
        raise XGenError("give either connectivity= or target_rate=, not both")
    g = TARGET_GROUP_SIZE[target] if group_size is None else int(group_size)
    if g < 1:
        raise XGenError(f"group_size={g} must be >= 1")
    pruned = copy.deepcopy(model).eval()
    for m in pruned_layers(pruned).values():
        detach(m)
    chosen = _select(pruned, g, layers, exclude, pointwise)
    if not chosen:
        raise XGenError("no layer to prune (see prune's docstring for which layers qualify)")
    for layer in chosen:
        if layer.kind in ("conv", "depthwise"):
            layer.n = _per_layer(pattern_size, layer.name, default_pattern_size(layer.kernel))
            if not 1 <= layer.n < layer.kernel**2:
                raise XGenError(f"{layer.name}: pattern_size {layer.n} not in 1..K*K-1")
        if layer.kind == "conv":
            layer.rate = float(_per_layer(connectivity, layer.name, 0.0))
        elif layer.kind != "depthwise":
            layer.rate = float(_per_layer(pointwise, layer.name, 0.0))
        if not 0.0 <= layer.rate < 1.0:
            raise XGenError(f"{layer.name}: connectivity rate {layer.rate} not in [0, 1)")
    if target_rate is not None:
        _apply_target_rate(pruned, chosen, target_rate, allocation)
    libraries = _libraries(chosen, patterns, library)
    for layer in chosen:
        _prune_layer(layer, libraries[_library_key(layer, library)], g)
    check_structure(pruned)
    with torch.no_grad():
        out = pruned(*example_inputs)
    if verbose:
        from .description import describe

        print(describe(pruned).summary())
        print(f"output shape {tuple(out.shape) if hasattr(out, 'shape') else type(out)}")
    return pruned


def _apply_target_rate(model: nn.Module, chosen: list[_Layer], target: float, alloc: str):
    """Set connectivity rates on the regular conv layers so conv weights become ``target``x
    fewer (depthwise convs count with their patterns, unpruned convs fully)."""
    convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
    before = sum(m.weight.numel() for m in convs)
    by_module = {id(layer.module): layer for layer in chosen}
    fixed, conn = 0, []
    for m in convs:
        layer = by_module.get(id(m))
        if layer is None or layer.kind == "pointwise":
            fixed += m.weight.numel()
        elif layer.kind == "depthwise":
            fixed += m.weight.shape[0] * layer.n
        else:
            conn.append((m.weight.shape[0], m.weight.shape[1], layer.n, layer.kernel))
    try:
        rates = iter(rate_for_target(conn, fixed, before, target, alloc))
    except ValueError as e:
        raise XGenError(str(e)) from None
    for layer in chosen:
        if layer.kind == "conv":
            layer.rate = next(rates)


def _library_key(layer: _Layer, mode: str) -> tuple:
    return (layer.kernel, layer.n) if mode == "model" else (layer.name,)


def _energy(layer: _Layer) -> torch.Tensor:
    w = weight_of(layer.module).detach().double()
    return (w * w).reshape(w.shape[0], w.shape[1], -1)


def _libraries(chosen: list[_Layer], count: int, mode: str) -> dict[tuple, torch.Tensor]:
    """Pattern library ([P, K*K] bool) per key: (K, n) per model, or per layer."""
    pools: dict[tuple, list[_Layer]] = {}
    for layer in chosen:
        pools.setdefault(_library_key(layer, mode), []).append(layer)
    out = {}
    for key, members in pools.items():
        k, n = members[0].kernel, members[0].n
        if k == 1:
            out[key] = torch.ones(1, 1, dtype=torch.bool)
            continue
        lib = select_library([_energy(m) for m in members], k, n, count)
        out[key] = patterns_to_masks(lib, k)
    return out


def _prune_layer(layer: _Layer, library: torch.Tensor, group_size: int) -> None:
    assign, group_ids = group_filters(_energy(layer), library, group_size, layer.rate)
    k = layer.kernel
    attach(layer.module, library.reshape(-1, k, k), group_ids[assign], assign)
    project(layer.module)
