"""Connectivity pruning: removing whole kernels (input-channel connections of a filter group).

Removal is decided per (filter group, input channel) unit, because the compiler-aware group
constraint says all filters of a group keep the same input channels. Units compete layer-wide
by their kept energy per kernel, so a layer spends its kernel budget where the energy is; each
group keeps at least one channel so no filter becomes dead (a first conv with one input
channel is therefore never connectivity-pruned).
"""

from __future__ import annotations

import math

import torch

__all__ = ["keep_units", "rate_for_target"]


def keep_units(scores: torch.Tensor, sizes: torch.Tensor, rate: float) -> torch.Tensor:
    """[g, C] unit scores (kept energy), [g] group sizes -> [g, C] bool: units to keep.

    Removes the weakest units (by energy per kernel) until at least ``rate`` of the layer's
    kernels (``sum(sizes) * C``) are gone, never a group's strongest channel.
    """
    g, c = scores.shape
    keep = torch.ones(g, c, dtype=torch.bool)
    if rate <= 0:
        return keep
    budget = math.ceil(rate * int(sizes.sum()) * c - 1e-9)
    per_kernel = (scores / sizes[:, None].to(scores.dtype)).clone()
    per_kernel[torch.arange(g), per_kernel.argmax(1)] = math.inf  # each group keeps one channel
    order = per_kernel.flatten().argsort(stable=True)
    unit_sizes = sizes.repeat_interleave(c)[order]
    removable = per_kernel.flatten()[order] < math.inf
    before = torch.cumsum(unit_sizes * removable, 0) - unit_sizes  # removed before this unit
    removed = before < budget  # so at least ``budget`` kernels go (the rate is a floor)
    keep.view(-1)[order[removed & removable]] = False
    return keep


def rate_for_target(
    layers: list[tuple[int, int, int, int]],
    fixed_after: int,
    before: int,
    target: float,
    allocation: str = "uniform",
) -> list[float]:
    """Per-layer connectivity rates that make ``before`` conv weights ``target`` times fewer.

    ``layers``: (filters F, input channels C, kept positions n, kernel size K) of each layer
    that gets connectivity pruning; ``fixed_after``: what all other conv weights amount to after
    pruning. ``allocation``: "uniform" (one rate for all) or "erk" (kept kernels in proportion
    to (F + C + 2K) / (F*C*K*K), RigL's Erdos-Renyi-Kernel rule: big layers, which hold most
    of the redundancy, are pruned harder than small ones). A layer keeps at least one of its C
    channels per group, which the bisection accounts for.
    """
    if allocation not in ("uniform", "erk"):
        raise ValueError(f"allocation={allocation!r}: use 'uniform' or 'erk'")
    scale = [
        1.0 if allocation == "uniform" else (f + c + 2 * k) / (f * c * k * k)
        for f, c, _, k in layers
    ]
    want = before / target

    def kept(eps: float) -> list[float]:  # fraction of kernels kept per layer
        return [
            min(1.0, max(eps * s, 1 / c)) for s, (_, c, _, _) in zip(scale, layers, strict=True)
        ]

    def after(eps: float) -> float:
        q = kept(eps)
        return fixed_after + sum(f * c * n * qi for qi, (f, c, n, _) in zip(q, layers, strict=True))

    hi = 1 / min(scale, default=1.0)
    if after(hi) <= want:
        return [0.0] * len(layers)
    if after(0.0) > want:
        raise ValueError(
            f"a {target:g}x compression rate is out of reach: patterns and maximal "
            f"connectivity pruning leave {after(0.0):.0f} of {before} conv weights"
        )
    lo = 0.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if after(mid) <= want else (lo, mid)
    return [1.0 - q for q in kept(lo)]
