"""Fair side-by-side timing on a shared, noisy 2-core machine (see shared/STACK.md).

Alternating single calls of two systems was unstable here; blocks are not: warm up every
system, then for several rounds time a block of calls of each system, rotating which system
goes first, and report the median over all timed calls (and the spread: p10/p90, and the
calling thread's CPU time per call, which shows a caller that spins while it waits).

Between blocks the harness sleeps ``settle_s`` (50 ms): ONNX Runtime's intra-op threads spin
after a run before they sleep, and whichever system follows it in the rotation pays for that
spinning. Measured on the 2-core VM (2026-11-22, Zen 4) the first MobileNetV2 call of xgen_mlir
straight after a block of ONNX Runtime calls took 7.2 ms against 5.6 for the next ones, and
1 ms of idle removed it; on a Zen 5 host (2026-11-28) 10 ms did not: MiniLM through xgen_mlir
alternating with ONNX Runtime ran 8.1-8.7 ms median, p90 13.5-14.3, against 7.9 / 8.1 alone
(with ONNX Runtime's spinning turned off, 7.7-7.9 / 8.1-8.2). With 50 ms: 7.8 / 8.1, ONNX
Runtime itself unchanged (9.6); 200-500 ms made both slower (the cores clock down).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path


def time_blocks(
    systems: dict[str, Callable[[], object]],
    *,
    rounds: int = 4,
    block: int = 10,
    warmup: int = 3,
    progress: Callable[[str], None] | None = None,
    settle_s: float = 0.05,
) -> dict[str, dict[str, float]]:
    """Median/min/mean/p10/p90 latency in ms of each system's zero-argument callable, and the
    caller's CPU ms per call."""
    names = list(systems)
    for name in names:
        for _ in range(warmup):
            systems[name]()
    samples: dict[str, list[float]] = {n: [] for n in names}
    cpu = dict.fromkeys(names, 0.0)
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            fn = systems[name]
            time.sleep(settle_s)  # let the previous system's threads stop spinning
            c0 = time.thread_time()
            for _ in range(block):
                t0 = time.perf_counter()
                fn()
                samples[name].append(time.perf_counter() - t0)
            cpu[name] += time.thread_time() - c0
        if progress:
            progress(f"round {r + 1}/{rounds} done")
    out = {}
    for n, s in samples.items():
        deciles = statistics.quantiles(s, n=10) if len(s) > 1 else s * 9
        out[n] = {
            "median_ms": statistics.median(s) * 1e3,
            "min_ms": min(s) * 1e3,
            "mean_ms": statistics.fmean(s) * 1e3,
            "p10_ms": deciles[0] * 1e3,
            "p90_ms": deciles[-1] * 1e3,
            "caller_cpu_ms": cpu[n] * 1e3 / len(s),
            "runs": len(s),
        }
    return out


def write_json(out: Path, meta: dict, results: dict, threads: int | None = None) -> None:
    """``{"meta": ..., "results": ...}`` to ``out``; ``meta`` gains the host record."""
    write_results(out, {"meta": meta, "results": results}, threads or meta.get("threads"))


def write_results(out: Path, payload: dict, threads: int | None = None) -> None:
    """``payload`` plus ``"host"`` (CPU model, ISA flags, measured matmul rates: host.py) as
    JSON to ``out`` (folders created; written whole or not at all), and say where."""
    from host import describe
    from xgen_mlir.fileio import atomic_write_bytes
    from xgen_mlir.target import host_threads

    record = {"host": describe(threads or host_threads()), **payload}
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out, (json.dumps(record, indent=1, default=str) + "\n").encode())
    print(f"\nwrote {out}")


def time_into_cells(
    cells: dict,
    runners: dict,
    args: tuple,
    rounds: int,
    block: int,
    threads: int,
    log: Callable[[str], None] | None = None,
) -> None:
    """Time every runner on ``args`` in alternating blocks and merge the timings into its
    cell; PyTorch's own threads are parked meanwhile so they do not compete."""
    import torch

    torch.set_num_threads(1)
    if log is not None:
        log(f"timing {', '.join(runners)}")
    timing = time_blocks(
        {s: (lambda fn=fn: fn(*args)) for s, fn in runners.items()},
        rounds=rounds,
        block=block,
        warmup=2,
    )
    for system, t in timing.items():
        cells[system].update(t)
    torch.set_num_threads(threads)


def cell_text(c: dict) -> str:
    """A table cell: median ms (max relative error), or the failure's text."""
    if "median_ms" not in c:
        return str(c.get("error", "?"))[:40]
    return f"{c['median_ms']:.2f} ({c['max_rel_err']:.1e})"
