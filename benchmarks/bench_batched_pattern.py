"""Pattern-pruned ResNet-18 at batch 1 and 8: does the pruning's speedup survive a batch?

ResNet-18 (224x224) pruned as in ``bench_pattern_models.py`` (4-entry patterns on every 3x3
conv, 50% connectivity, groups of 16 filters), compiled by xgen_mlir (pattern kernels, one
workgroup z per image at batch 8) against the dense ResNet-18 compiled by xgen_mlir and run by
ONNX Runtime (2 threads). Per batch, the three are timed in alternating blocks in one process
(``harness.time_blocks``); median ms per call and per image. Prints a table, writes JSON.

    .venv/bin/python benchmarks/bench_batched_pattern.py [--batches 1 8] [--rounds 8 --block 4]
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import xgen_mlir
from bench_models import log, onnxruntime_session
from harness import time_blocks, write_results
from xgen_mlir import compress
from xgen_mlir.models import vision


def bench(batch: int, pruned: torch.nn.Module, dense: torch.nn.Module, rounds: int, block: int):
    torch.manual_seed(batch)
    x = torch.randn(batch, 3, 224, 224)
    arr = x.numpy()
    log(f"batch {batch}: compiling xgen_mlir pruned and dense")
    ours = xgen_mlir.compile(pruned, (x,))
    fired = ours.report.rewrites.get("xgen-lower-fkw-kernels", {})
    ours_dense = xgen_mlir.compile(dense, (x,))
    run_ort, _ = onnxruntime_session(dense, (x,), 2)
    systems = {
        "xgen_mlir pruned": lambda: ours(arr),
        "xgen_mlir dense": lambda: ours_dense(arr),
        "ONNX Runtime dense": run_ort,
    }
    with torch.no_grad():
        refs = {"xgen_mlir pruned": pruned(x).numpy()}
        refs["xgen_mlir dense"] = refs["ONNX Runtime dense"] = dense(x).numpy()
    res: dict[str, dict] = {}
    for k, fn in systems.items():
        out = np.asarray(fn())
        res[k] = {"max_abs_err": float(np.abs(out - refs[k]).max())}
    log(f"batch {batch}: timing")
    for k, v in time_blocks(systems, rounds=rounds, block=block).items():
        res[k].update(v)
        res[k]["per_image_ms"] = v["median_ms"] / batch
    return {"systems": res, "pattern_kernels": fired}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    p.add_argument("--connectivity", type=float, default=0.5)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--block", type=int, default=4)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    torch.set_num_threads(2)
    dense = vision.resnet18()
    x1 = vision.random_input("resnet18")
    log("pruning ResNet-18")
    pruned = compress.prune(dense, (x1,), target="cpu", connectivity=args.connectivity)
    results = {b: bench(b, pruned, dense, args.rounds, args.block) for b in args.batches}
    names = ["xgen_mlir pruned", "xgen_mlir dense", "ONNX Runtime dense"]
    print("\nResNet-18, median ms per call (per image)")
    print(f"{'batch':<6}" + "".join(f"{n:>26}" for n in names) + f"{'vs dense':>10}{'vs ORT':>8}")
    for b, r in results.items():
        s = r["systems"]
        cells = "".join(f"{s[n]['median_ms']:>16.2f} ({s[n]['per_image_ms']:>6.2f})" for n in names)
        ours = s["xgen_mlir pruned"]["median_ms"]
        vs_dense = s["xgen_mlir dense"]["median_ms"] / ours
        vs_ort = s["ONNX Runtime dense"]["median_ms"] / ours
        print(f"{b:<6}{cells}{vs_dense:>9.2f}x{vs_ort:>7.2f}x")
        errs = ", ".join(f"{k}: {v['max_abs_err']:.1e}" for k, v in s.items())
        print(f"       pattern kernels {r['pattern_kernels']}; max |error| {errs}")
    out = (
        Path(args.json)
        if args.json
        else (
            Path(__file__).parent
            / "results"
            / f"batched-pattern-{dt.date.today().isoformat()}.json"
        )
    )
    write_results(out, {"args": vars(args), "results": {str(b): r for b, r in results.items()}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
