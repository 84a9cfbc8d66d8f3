"""Fair side-by-side timing on a shared, noisy 2-core machine (see shared/STACK.md).

Alternating single calls of two systems was unstable here; blocks are not: warm up every
system, then for several rounds time a block of calls of each system, rotating which system
goes first, and report the median over all timed calls.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def time_blocks(
    systems: dict[str, Callable[[], object]],
    *,
    rounds: int = 4,
    block: int = 10,
    warmup: int = 3,
    progress: Callable[[str], None] | None = None,
) -> dict[str, dict[str, float]]:
    """Median/min/mean latency in ms of each system's zero-argument callable."""
    names = list(systems)
    for name in names:
        for _ in range(warmup):
            systems[name]()
    samples: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            fn = systems[name]
            for _ in range(block):
                t0 = time.perf_counter()
                fn()
                samples[name].append(time.perf_counter() - t0)
        if progress:
            progress(f"round {r + 1}/{rounds} done")
    return {
        n: {
            "median_ms": statistics.median(s) * 1e3,
            "min_ms": min(s) * 1e3,
            "mean_ms": statistics.fmean(s) * 1e3,
            "runs": len(s),
        }
        for n, s in samples.items()
    }
