"""Kernel patterns: choosing a small library from the weights, and projecting kernels onto it.

A pattern is the set of kept positions of a KxK kernel, as flat row-major indices
(``r * K + c``). PatDNN's observation is that a handful of n-entry patterns (n=4 for 3x3)
covers most of a trained model's kernel energy; a small library is what lets the compiler
generate one branch-free code path per pattern. The library is picked by voting (each kernel
votes for its own top-n pattern, the center always kept) and then refined Lloyd-style: kernels
join the pattern that keeps most of their energy, and each pattern moves to the top-n positions
of its members' summed energy, which never lowers the total kept energy.
"""

from __future__ import annotations

import torch

__all__ = ["best_patterns", "default_pattern_size", "patterns_to_masks", "select_library"]


def default_pattern_size(kernel: int) -> int:
    """4 of 9 for 3x3 (the paper's 4-entry patterns); the same 4/9 density for 5x5 and 7x7."""
    return 4 if kernel == 3 else round(kernel * kernel * 4 / 9)


def patterns_to_masks(patterns: list[list[int]], kernel: int) -> torch.Tensor:
    """[P, K*K] bool masks of a pattern library."""
    masks = torch.zeros(len(patterns), kernel * kernel, dtype=torch.bool)
    for i, pattern in enumerate(patterns):
        masks[i, pattern] = True
    return masks


def _top_n(energy: torch.Tensor, n: int, kernel: int) -> torch.Tensor:
    """[U, K*K] energy -> [U, K*K] bool mask of the center plus the n-1 strongest others."""
    center = (kernel * kernel) // 2
    e = energy.clone()
    e[:, center] = float("inf")
    idx = e.topk(n, dim=1).indices
    return torch.zeros_like(energy, dtype=torch.bool).scatter_(1, idx, True)


def _mask_key(mask: torch.Tensor) -> torch.Tensor:
    """Encode [U, K*K] bool masks as int64 bitsets (K*K <= 49 fits)."""
    weights = 2 ** torch.arange(mask.shape[1], dtype=torch.int64)
    return (mask.long() * weights).sum(1)


def _key_to_pattern(key: int, positions: int) -> list[int]:
    return [i for i in range(positions) if (key >> i) & 1]


def select_library(
    energies: list[torch.Tensor], kernel: int, n: int, count: int, iters: int = 10
) -> list[list[int]]:
    """Pick up to ``count`` distinct n-entry patterns for KxK kernels.

    ``energies``: one [U, K*K] tensor of squared weights per layer. Each layer's kernels are
    normalised by their layer's mean kernel energy, so small layers still get a say and
    already-removed (all-zero) kernels get none.
    """
    rows = []
    for e in energies:
        e = e.reshape(-1, kernel * kernel).double()
        mean = e.sum(1).mean()
        if mean > 0:
            rows.append(e / mean)
    if not rows:  # all-zero weights: any pattern is as good; keep the center and its row
        return [sorted({(kernel * kernel) // 2, *range(n)})[:n]]
    energy = torch.cat(rows)
    keys = _mask_key(_top_n(energy, n, kernel))
    votes: dict[int, float] = {}
    for key, w in zip(keys.tolist(), energy.sum(1).tolist(), strict=True):
        votes[key] = votes.get(key, 0.0) + w
    ranked = sorted(votes, key=lambda k: (-votes[k], k))[:count]
    library = patterns_to_masks([_key_to_pattern(k, kernel * kernel) for k in ranked], kernel)
    best = (energy @ library.double().T).max(1).values.sum()
    for _ in range(iters):
        assign = (energy @ library.double().T).argmax(1)
        moved = library.clone()
        for p in range(len(library)):
            members = energy[assign == p]
            if len(members):
                moved[p] = _top_n(members.sum(0, keepdim=True), n, kernel)[0]
        if len(set(_mask_key(moved).tolist())) < len(moved):
            break  # two patterns collapsed into one: keep the distinct library
        kept = (energy @ moved.double().T).max(1).values.sum()
        if kept <= best:
            break
        library, best = moved, kept
    return [torch.nonzero(m).flatten().tolist() for m in library]


def best_patterns(energy: torch.Tensor, library: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For [..., K*K] energies and a [P, K*K] bool library: (best pattern id, kept energy)."""
    kept = energy @ library.to(energy.dtype).T
    values, ids = kept.max(-1)
    return ids, values
