"""What ``load(path, isolated=True)`` costs per call, against the same module in-process.

    .venv/bin/python benchmarks/bench_isolation.py [--models small_cnn,mobilenet_v2] [--calls 200]

Each model is compiled once (cpu), saved, and loaded twice: in-process and isolated (calls run
in a child process; inputs and outputs cross a pipe). Timed: ``module(x)`` from Python with a
numpy input, the whole call as a user sees it, in alternating blocks of 10 calls so both
modes share the machine's load. Also: the first isolated call (worker start + module load)
and the isolated module's own latency measured in the child (``benchmark()``).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

import xgen_mlir
from xgen_mlir.models import vision

MODELS = {
    "small_cnn": lambda: (vision.small_cnn(), vision.random_input("small_cnn")),
    "mobilenet_v2": lambda: (vision.mobilenet_v2(pretrained=False), torch.randn(1, 3, 224, 224)),
}


def measure(name: str, calls: int, folder: Path) -> dict[str, float]:
    model, x = MODELS[name]()
    path = xgen_mlir.compile(model, (x,)).save(folder / f"{name}.vmfb")
    xn = x.numpy()
    inproc = xgen_mlir.load(path)
    t0 = time.perf_counter()
    isolated = xgen_mlir.load(path, isolated=True)  # starts the worker, which parses the module
    t1 = time.perf_counter()
    isolated(xn)  # first call: loads onto the device in the worker
    t2 = time.perf_counter()
    np.testing.assert_allclose(isolated(xn), inproc(xn), rtol=1e-5, atol=1e-5)
    for _ in range(10):
        inproc(xn)
        isolated(xn)
    samples: dict[str, list[float]] = {"in-process": [], "isolated": []}
    for _ in range(calls // 10):
        for mode, module in (("in-process", inproc), ("isolated", isolated)):
            for _ in range(10):
                s = time.perf_counter()
                module(xn)
                samples[mode].append(time.perf_counter() - s)
    med = {m: statistics.median(v) * 1e3 for m, v in samples.items()}
    child = isolated.benchmark(xn, runs=calls // 2, warmup=5).median_ms
    return {
        "in_process_ms": med["in-process"],
        "isolated_ms": med["isolated"],
        "overhead_ms": med["isolated"] - med["in-process"],
        "isolated_in_child_ms": child,
        "load_isolated_s": t1 - t0,
        "first_call_s": t2 - t1,
        "input_kb": xn.nbytes / 1024,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            r = measure(name, args.calls, Path(tmp))
            print(
                f"{name:14s} in-process {r['in_process_ms']:.3f} ms  isolated "
                f"{r['isolated_ms']:.3f} ms  overhead {r['overhead_ms']:+.3f} ms/call  "
                f"(in the child {r['isolated_in_child_ms']:.3f} ms; load(isolated) "
                f"{r['load_isolated_s']:.2f} s, first call {r['first_call_s']:.2f} s; "
                f"input {r['input_kb']:.0f} KiB)",
                flush=True,
            )


if __name__ == "__main__":
    main()
