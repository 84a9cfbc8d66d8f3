"""Winograd vs direct per conv, measured on this host (xgen_mlir.tuning.choices), and the model
with the measured choices (winograd=tuned) against the model with none, with every conv as
Winograd (winograd=true) and ONNX Runtime, in one run; prints tables, writes JSON with the
host (CPU, ISA flags, measured matmul rates).

    .venv/bin/python benchmarks/bench_choices.py resnet18 vgg16_features --threads 2

``vgg16_features``: VGG-16's 13 convs (no classifier) at 112x112, a model made of 3x3 stride-1
convs of other shapes than ResNet-18's. The tuning database defaults to a fresh file beside
the results (``--db`` to reuse one). Timing: ``harness.time_blocks`` (blocks of calls,
rotating order, median); each system's output is checked against PyTorch.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))

import xgen_mlir
from bench_models import onnxruntime_session
from harness import time_blocks, write_json
from xgen_mlir.frontend import import_model
from xgen_mlir.models import vision
from xgen_mlir.tuning.choices import measure_choices, summary
from xgen_mlir.tuning.measure import MeasureSettings

RESULTS = Path(__file__).parent / "results"
MODELS = ("resnet18", "vgg16_features")


def build(name: str) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    if name == "resnet18":
        return vision.resnet18(), (vision.random_input("resnet18"),)
    if name == "vgg16_features":
        features = vision.vgg16().features.eval()
        return features, (torch.randn(1, 3, 112, 112, generator=torch.Generator().manual_seed(0)),)
    raise SystemExit(f"unknown model {name}; known: {', '.join(MODELS)}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="+", choices=MODELS)
    p.add_argument("--db", default=None)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--conv-rounds", type=int, default=9)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--out", default=str(RESULTS / "choices.json"))
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    db = Path(args.db) if args.db else RESULTS / f"choices-{int(time.time())}.db"
    results = {}
    for name in args.models:
        model, inputs = build(name)
        module = import_model(model, inputs)
        t0 = time.perf_counter()
        choices = measure_choices(
            module,
            inputs,
            db=db,
            settings=MeasureSettings(
                threads=args.threads, rounds=args.conv_rounds, min_block_s=0.05
            ),
            tuning_threads=args.threads,
        )
        measure_s = time.perf_counter() - t0
        print(f"\n{name}: {summary(choices)}", file=sys.stderr)
        common = {"tuning_threads": args.threads}
        compiled = {
            "xgen_mlir untuned (all direct)": xgen_mlir.compile(module, inputs, tuning_db=False),
            "xgen_mlir winograd=tuned": xgen_mlir.compile(module, inputs, tuning_db=db, **common),
            "xgen_mlir winograd=true (all)": xgen_mlir.compile(
                module, inputs, tuning_db=False, target_options={"winograd": "true"}
            ),
        }
        tuned_report = compiled["xgen_mlir winograd=tuned"].report
        ort, _ = onnxruntime_session(model, inputs, args.threads)
        arrays = [t.numpy() for t in inputs]
        with torch.no_grad():
            ref = model(*inputs).numpy()
        scale = float(np.max(np.abs(ref)))
        errors = {
            s: float(np.max(np.abs(np.asarray(m(*arrays)) - ref))) / scale
            for s, m in compiled.items()
        }
        errors["ONNX Runtime"] = float(np.max(np.abs(np.asarray(ort()) - ref))) / scale
        systems = {s: (lambda m=m, a=arrays: m(*a)) for s, m in compiled.items()}
        systems["ONNX Runtime"] = ort
        times = time_blocks(systems, rounds=args.rounds, block=5)
        results[name] = {
            "times": times,
            "max_error_vs_torch_rel_to_max": errors,
            "measure_seconds": measure_s,
            "rewrites_tuned": tuned_report.rewrites.get("xgen-winograd-convs", {}),
            "decisions": [
                {"conv": c, "algorithm": a, "why": w}
                for c, a, w in (tuned_report.tuning.choices if tuned_report.tuning else [])
            ],
            "convs": [
                {
                    "conv": c.description,
                    "signature": c.signature,
                    "count": c.count,
                    "ms": c.times(),
                    "status": {f"F{r.config.get('m')}": r.status for r in c.measured},
                    "choice": c.algorithm,
                }
                for c in choices
            ],
        }
        print(f"\n{name} (median ms per call, max |error| / max |PyTorch|):")
        for s, t in times.items():
            print(f"  {s:<34} {t['median_ms']:>9.3f} ms  {errors[s]:.1e}")
    write_json(
        Path(args.out),
        {"threads": args.threads, "db": str(db), "command": " ".join(sys.argv)},
        results,
        args.threads,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
