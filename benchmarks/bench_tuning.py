"""Tuned vs untuned xgen_mlir, side by side with plain IREE (best stock flags) and ONNX Runtime,
on zoo models, on this host; prints a table, writes JSON (with the host: CPU, ISA flags,
measured matmul rates) and the tuning report.

    .venv/bin/python benchmarks/bench_tuning.py minilm --budget-minutes 10
    .venv/bin/python benchmarks/bench_tuning.py mobilenet_v2 minilm --db /tmp/t.db --threads 2

The tuning database defaults to a fresh file beside the results (so the untuned numbers are
really untuned); give ``--db`` to reuse records. Timing: ``harness.time_blocks`` (blocks of
calls, rotating order, median). The JSON keeps, per model, the tuner's own interleaved
before/after and each op's verdict in the model (applied, rejected with the measured ratio,
or not applied and why).
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
from bench_models import IREE_BEST, KNOWN, build, iree_plain_with_fallbacks, onnxruntime_session
from harness import time_blocks, write_json
from xgen_mlir.frontend import import_model
from xgen_mlir.passes.runner import snapshot
from xgen_mlir.tuning.measure import MeasureSettings

RESULTS = Path(__file__).parent / "results"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="+", choices=KNOWN)
    p.add_argument("--budget-minutes", type=float, default=10.0)
    p.add_argument("--db", default=None)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--out", default=str(RESULTS / "tuning.json"))
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    db = Path(args.db) if args.db else RESULTS / f"tuning-{int(time.time())}.db"
    rows, results = [], {}
    for name in args.models:
        model, inputs = build(name)
        module = import_model(model, inputs)
        t0 = time.perf_counter()
        tuned = xgen_mlir.tune(
            module,
            inputs,
            budget_minutes=args.budget_minutes,
            db=db,
            settings=MeasureSettings(threads=args.threads),
            report=RESULTS / f"tuning-{name}.html",
        )
        tune_s = time.perf_counter() - t0
        print(tuned.summary(), file=sys.stderr)
        untuned = xgen_mlir.compile(module, inputs, tuning_db=False)
        iree, _ = iree_plain_with_fallbacks(snapshot(module), IREE_BEST)
        ort, _ = onnxruntime_session(model, inputs, args.threads)
        arrays = [t.numpy() for t in inputs]
        with torch.no_grad():
            ref = model(*inputs)
        ref = ref[0] if isinstance(ref, (tuple, list)) else ref
        ref = ref.numpy() if hasattr(ref, "numpy") else np.asarray(ref)
        err = float(np.max(np.abs(np.asarray(tuned.module(*arrays)) - ref)))
        systems = {
            "xgen_mlir tuned": lambda m=tuned.module, a=arrays: m(*a),
            "xgen_mlir untuned": lambda m=untuned, a=arrays: m(*a),
            "IREE best flags": lambda m=iree, a=arrays: m(*a),
            "ONNX Runtime": ort,
        }
        times = time_blocks(systems, rounds=args.rounds, block=5)
        results[name] = {
            "times": times,
            "tune_seconds": tune_s,
            "trials": tuned.trials,
            "budget_minutes": args.budget_minutes,
            # the tuner's own before/after: untuned vs tuned model, interleaved rounds
            "model_ms_untuned": tuned.model_ms_before,
            "model_ms_tuned": tuned.model_ms_after,
            "model_ratio_noise": tuned.model_timing.noise if tuned.model_timing else None,
            "model_checks": tuned.model_checks,
            "check_log": tuned.check_log,  # each model compile timed: which ops, the ratio
            "in_model": [
                {
                    "op": v.description,
                    "count": v.count,
                    "verdict": v.status,
                    "why": v.why,
                    "config": v.config,
                    "speedup_alone": v.standalone,
                    "expected_model_gain": v.expected_gain,
                    "model_ratio": v.ratio,
                }
                for v in sorted(tuned.verdicts.values(), key=lambda v: -v.expected_gain)
            ],
            "max_abs_error_vs_torch": err,
            "ranking": tuned.ranking,
            "ops": [
                {
                    "op": o.description,
                    "count": o.count,
                    "iree_ms": (o.baseline or 0) * 1e3,
                    "tuned_ms": (o.best or 0) * 1e3,
                    "trials": o.trials,
                    "failed": o.failed,
                }
                for o in tuned.ops
            ],
        }
        rows.append((name, times, tuned.trials, tune_s, err))
    print(f"\n{'model':<14}" + "".join(f"{s:>20}" for s in systems) + "   trials  tune s  err")
    for name, times, trials, tune_s, err in rows:
        cells = "".join(f"{times[s]['median_ms']:>17.3f} ms" for s in times)
        print(f"{name:<14}{cells}   {trials:>6}  {tune_s:>6.0f}  {err:.1e}")
    write_json(Path(args.out), {"threads": args.threads, "db": str(db)}, results, args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
