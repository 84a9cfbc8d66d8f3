"""End-to-end speed of pattern-pruned CNNs: xgen_mlir vs the dense model's best runtimes.

ResNet-18 and VGG-16 (224x224, batch 1) pruned with ``xgen_mlir.compress.prune`` (4-entry
patterns on every 3x3 conv, 50% connectivity: 2/9 of those weights left; groups of 16 filters
for the cpu target). xgen_mlir compiles the pruned model (pattern kernels); the baselines run
the same pruned weights densely -- plain IREE with its best stock flags, ONNX Runtime,
PyTorch -- which is all they can do with them. One process run; prints a table, writes JSON.

    .venv/bin/python benchmarks/bench_pattern_models.py [--models resnet18 vgg16]
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import xgen_mlir
from bench_models import IREE_BEST, iree_plain, log, onnxruntime_session
from harness import time_blocks, write_results
from xgen_mlir import compress
from xgen_mlir.frontend import import_model
from xgen_mlir.models import vision
from xgen_mlir.passes.runner import snapshot


def bench(name: str, connectivity: float, rounds: int, block: int) -> dict:
    x = vision.random_input("resnet18")
    dense_model = getattr(vision, name)()
    log(f"{name}: pruning (connectivity {connectivity})")
    model = compress.prune(dense_model, (x,), target="cpu", connectivity=connectivity)
    desc = compress.describe(model)
    torch.set_num_threads(2)
    with torch.no_grad():
        ref = model(x).numpy()
    arr = x.numpy()
    res: dict[str, dict] = {}
    systems = {}
    log(f"{name}: importing")
    linalg = snapshot(import_model(model, (x,)))
    log(f"{name}: compiling plain IREE (best flags, dense)")
    plain = iree_plain(linalg, IREE_BEST)
    systems["IREE best flags (dense)"] = lambda: plain(arr)
    log(f"{name}: compiling xgen_mlir cpu (pattern kernels)")
    t0 = time.perf_counter()
    ours = xgen_mlir.compile(model, (x,))
    res["xgen_mlir cpu"] = {"compile_s": time.perf_counter() - t0}
    systems["xgen_mlir cpu"] = lambda: ours(arr)
    log(f"{name}: ONNX Runtime (dense)")
    run_ort, _ = onnxruntime_session(model, (x,), 2)
    systems["ONNX Runtime (dense)"] = run_ort

    def run_torch():
        with torch.no_grad():
            return model(x)

    systems["PyTorch eager (dense)"] = run_torch
    for k, fn in systems.items():
        out = fn()
        out = out.numpy() if isinstance(out, torch.Tensor) else np.asarray(out)
        res.setdefault(k, {})["max_abs_err"] = float(np.abs(out - ref).max())
    res["xgen_mlir cpu"]["dispatches"] = ours.dispatch_count()
    res["IREE best flags (dense)"]["dispatches"] = plain.dispatch_count()
    log(f"{name}: timing")
    timing = time_blocks(systems, rounds=rounds, block=block)
    for k, v in timing.items():
        res[k].update(v)
    total = desc.totals if hasattr(desc, "totals") else {}
    return {"systems": res, "sparsity": total}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=["resnet18", "vgg16"])
    p.add_argument("--connectivity", type=float, default=0.5)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--block", type=int, default=10)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    results = {m: bench(m, args.connectivity, args.rounds, args.block) for m in args.models}
    order = [
        "xgen_mlir cpu",
        "IREE best flags (dense)",
        "ONNX Runtime (dense)",
        "PyTorch eager (dense)",
    ]
    print(f"\npruned models (patterns + {args.connectivity:.0%} connectivity), median ms, batch 1")
    print(f"{'model':<10}" + "".join(f"{s:>25}" for s in order) + f"{'vs IREE':>9}{'vs ORT':>8}")
    for m, r in results.items():
        s = r["systems"]
        cells = "".join(f"{s[k]['median_ms']:>25.2f}" for k in order)
        vs_iree = s["IREE best flags (dense)"]["median_ms"] / s["xgen_mlir cpu"]["median_ms"]
        vs_ort = s["ONNX Runtime (dense)"]["median_ms"] / s["xgen_mlir cpu"]["median_ms"]
        print(f"{m:<10}{cells}{vs_iree:>8.2f}x{vs_ort:>7.2f}x")
    for m, r in results.items():
        errs = ", ".join(f"{k}: {v['max_abs_err']:.1e}" for k, v in r["systems"].items())
        print(f"  {m} max |error| vs pruned PyTorch: {errs}")
    out = (
        Path(args.json)
        if args.json
        else (
            Path(__file__).parent / "results" / f"pattern-models-{dt.date.today().isoformat()}.json"
        )
    )
    write_results(out, {"args": vars(args), "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
