"""How a call waits: one xgen_mlir module per model, called with the plain wait and with the
batch wait (python/xgen_mlir/runtime/waiting.py), next to ONNX Runtime, all in one process.

Calls run in alternating blocks (``harness.time_blocks``); every call is timed on its own, so
the table shows the spread (p10 / median / mean / p90) as well as the middle, and the calling
thread's CPU time per call (the plain wait's spin shows up there). The two waits run the same
module, so their results are compared bit for bit.

    python benchmarks/bench_waiting.py --models mobilenet_v2 resnet18 --rounds 10
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import xgen_mlir
from bench_models import KNOWN, build, log, onnxruntime_session
from harness import time_blocks, write_json

SYSTEMS = ("plain wait", "batch wait", "ONNX Runtime")


def bench_model(name: str, rounds: int, block: int, threads: int) -> dict:
    log(f"{name}: building and compiling")
    model, inputs = build(name)
    arrays = [t.numpy() for t in inputs]
    with tempfile.TemporaryDirectory() as d:
        path = xgen_mlir.compile(model, inputs).save(Path(d) / "model.vmfb")
        batch = xgen_mlir.load(path)
        plain = xgen_mlir.load(path, yield_to_workers=False)
    a, b = np.asarray(batch(*arrays)), np.asarray(plain(*arrays))
    if not np.array_equal(a, b):
        raise SystemExit(
            f"{name}: the two waits gave different results (max diff "
            f"{float(np.abs(a - b).max()):.3e})"
        )
    ort_run, _ = onnxruntime_session(model, inputs, threads)
    systems = {
        "plain wait": lambda: plain(*arrays),
        "batch wait": lambda: batch(*arrays),
        "ONNX Runtime": ort_run,
    }
    log(f"{name}: timing {len(systems)} systems ({rounds} rounds x {block} calls)")
    return time_blocks(systems, rounds=rounds, block=block)


def _cell(t: dict[str, float]) -> str:
    spread = "/".join(f"{t[k]:.2f}" for k in ("p10_ms", "median_ms", "mean_ms", "p90_ms"))
    return f"{spread} cpu {t['caller_cpu_ms']:.2f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=["mobilenet_v2", "resnet18"], choices=KNOWN)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--block", type=int, default=10)
    p.add_argument("--threads", type=int, default=2, help="threads for ONNX Runtime")
    p.add_argument("--json", default=None, help="output JSON (default benchmarks/results/)")
    args = p.parse_args(argv)
    results = {m: bench_model(m, args.rounds, args.block, args.threads) for m in args.models}
    print("per-call latency, ms (p10 / median / mean / p90), and the caller's CPU ms per call")
    print(f"{'model':16s}" + "".join(f"{s:>36s}" for s in SYSTEMS))
    for m, r in results.items():
        cells = [_cell(r[s]) for s in SYSTEMS]
        print(f"{m:16s}" + "".join(f"{c:>36s}" for c in cells))
    meta = {
        "date": dt.date.today().isoformat(),
        "machine": platform.platform(),
        "rounds": args.rounds,
        "block": args.block,
    }
    write_json(Path(args.json or Path(__file__).parent / "results" / "waiting.json"), meta, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
