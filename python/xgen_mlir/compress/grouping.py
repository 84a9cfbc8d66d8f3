"""Compiler-aware filter groups: G filters that share one kernel layout.

The generated CPU kernels keep G filters' accumulators in vector registers, which only works
when those G filters read the same input channels through the same patterns. Which filters
share a layout is free (the compiler reorders filters), so we cluster them to lose as little
weight energy as possible: a balanced k-means on filters' normalised energy maps to start, then
Lloyd iterations on the real objective, alternating "best layout of each group" (pattern per
input channel maximising the group's kept energy, connectivity by group-kernel energy) with
"best group of each filter under that layout" (a capacity-constrained assignment).
"""

from __future__ import annotations

import torch

from .connectivity import keep_units
from .patterns import best_patterns

__all__ = ["capacities", "group_filters", "group_layout"]


def capacities(filters: int, group_size: int) -> torch.Tensor:
    """Group sizes: all ``group_size`` except a smaller last one when F % G != 0."""
    groups = -(-filters // group_size)
    sizes = torch.full((groups,), group_size, dtype=torch.int64)
    sizes[-1] = filters - group_size * (groups - 1)
    return sizes


def balanced_assign(cost: torch.Tensor, sizes: torch.Tensor, swaps: int = 8) -> torch.Tensor:
    """[F, g] cost, [g] capacities -> [F] group per filter, cheaply minimising the total cost.

    Greedy in order of regret (how much a filter loses if it misses its best group), then a
    few rounds of improving pairwise swaps between groups.
    """
    f, g = cost.shape
    free = sizes.clone()
    assign = torch.full((f,), -1, dtype=torch.int64)
    two = cost.topk(min(2, g), dim=1, largest=False).values
    regret = two[:, -1] - two[:, 0]
    for i in regret.argsort(descending=True, stable=True).tolist():
        row = cost[i].masked_fill(free == 0, float("inf"))
        k = int(row.argmin())
        assign[i], free[k] = k, free[k] - 1
    tol = 1e-9 * float(cost.abs().max())
    for _ in range(swaps):
        own = cost[torch.arange(f), assign]
        cross = cost[:, assign]  # cross[a, b]: cost of a in b's group
        gain = (own[:, None] + own[None, :] - cross - cross.T).triu_(1)  # symmetric
        gain[assign[:, None] == assign[None, :]] = 0
        a_idx, b_idx = torch.nonzero(gain > tol, as_tuple=True)
        if len(a_idx) == 0:
            break
        best = gain[a_idx, b_idx].topk(min(len(a_idx), 4 * f)).indices
        groups, taken = assign.tolist(), [False] * f
        for a, b in zip(a_idx[best].tolist(), b_idx[best].tolist(), strict=True):
            if not (taken[a] or taken[b]):
                groups[a], groups[b] = groups[b], groups[a]
                taken[a] = taken[b] = True
        assign = torch.tensor(groups)
    return assign


def group_layout(
    energy: torch.Tensor,
    assign: torch.Tensor,
    sizes: torch.Tensor,
    library: torch.Tensor,
    rate: float,
) -> torch.Tensor:
    """[F, C, K*K] energy, [F] groups -> [g, C] pattern id per (group, channel), -1 = removed."""
    g = len(sizes)
    group_energy = torch.zeros(g, *energy.shape[1:], dtype=energy.dtype)
    group_energy.index_add_(0, assign, energy)
    ids, kept = best_patterns(group_energy, library)
    return ids.masked_fill(~keep_units(kept, sizes, rate), -1)


def layout_masks(ids: torch.Tensor, library: torch.Tensor) -> torch.Tensor:
    """[..., C] pattern ids -> [..., C, K*K] bool masks (removed kernels all False)."""
    masks = library[ids.clamp(min=0)]
    return masks & (ids >= 0)[..., None]


def group_filters(
    energy: torch.Tensor, library: torch.Tensor, group_size: int, rate: float, iters: int = 10
) -> tuple[torch.Tensor, torch.Tensor]:
    """Cluster F filters into groups of ``group_size`` sharing a layout.

    ``energy``: [F, C, K*K] squared weights (float64). Returns ([F] group index per filter,
    [g, C] pattern id per group and input channel).
    """
    f = energy.shape[0]
    sizes = capacities(f, group_size)
    flat = energy.reshape(f, -1)
    if group_size == 1:
        assign = torch.arange(f)
        return assign, group_layout(energy, assign, sizes, library, rate)
    assign = _balanced_kmeans(flat, sizes)
    best_assign, best_ids, best_kept = assign, None, -1.0
    for _ in range(iters):
        ids = group_layout(energy, assign, sizes, library, rate)
        masks = layout_masks(ids, library).reshape(len(sizes), -1).to(flat.dtype)
        gain = flat @ masks.T  # energy each filter keeps under each group's layout
        kept = float(gain[torch.arange(f), assign].sum())
        if kept <= best_kept:
            break
        best_assign, best_ids, best_kept = assign, ids, kept
        assign = balanced_assign(-gain, sizes)
    assert best_ids is not None  # iters >= 1: the first pass keeps more than best_kept = -1
    return best_assign, best_ids


def _balanced_kmeans(flat: torch.Tensor, sizes: torch.Tensor, iters: int = 5) -> torch.Tensor:
    """Initial groups: balanced k-means on filters' unit-norm |w| maps (Hellinger-like)."""
    x = flat.sqrt()
    x = x / x.norm(dim=1, keepdim=True).clamp(min=1e-30)
    gen = torch.Generator().manual_seed(0)
    centers = [int(torch.randint(len(x), (1,), generator=gen))]
    for _ in range(1, len(sizes)):  # k-means++ seeding
        d = torch.cdist(x, x[centers]).min(1).values ** 2
        if float(d.sum()) <= 0:
            centers.append(int(torch.randint(len(x), (1,), generator=gen)))
        else:
            centers.append(int(torch.multinomial(d, 1, generator=gen)))
    c = x[centers]
    assign = balanced_assign(torch.cdist(x, c) ** 2, sizes)
    for _ in range(iters):
        c = torch.zeros_like(c).index_add_(0, assign, x) / sizes[:, None].to(x.dtype)
        new = balanced_assign(torch.cdist(x, c) ** 2, sizes)
        if torch.equal(new, assign):
            break
        assign = new
    return assign
