"""Does the cost model earn its keep? The same model tuned twice with the same number of
trials, into two fresh databases: candidates ranked by the LightGBM model vs at random. Prints
the estimated contraction speedup after each batch (the tuning curve) for both, the model's
time before/after for both, and the cost model's ranking quality on held-out records; writes
JSON (with the host).

    .venv/bin/python benchmarks/bench_cost_model.py mobilenet_v2 --trials 120
    .venv/bin/python benchmarks/bench_cost_model.py efficientnet_b0 --trials 120 --prior-db A.db

``--prior-db``: start the model-ranked run from a copy of a database tuned on other models
(transfer: the cost model is trained on those records before the first trial).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import xgen_mlir
from bench_models import KNOWN, build
from harness import write_json
from xgen_mlir.frontend import import_model
from xgen_mlir.tuning.measure import MeasureSettings

RESULTS = Path(__file__).parent / "results"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", choices=KNOWN)
    p.add_argument("--trials", type=int, default=120)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--prior-db", default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    model, inputs = build(args.model)
    module = import_model(model, inputs)
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, use_model in (("cost model", True), ("random", False)):
            db = Path(tmp) / f"{name.replace(' ', '-')}.db"
            if args.prior_db and use_model:
                shutil.copy(args.prior_db, db)
            t0 = time.perf_counter()
            result = xgen_mlir.tune(
                module,
                inputs,
                budget_minutes=600,
                max_trials=args.trials,
                db=db,
                settings=MeasureSettings(threads=args.threads),
                use_cost_model=use_model,
                seed=args.seed,
                progress=False,
            )
            runs[name] = {
                "seconds": time.perf_counter() - t0,
                "trials": result.trials,
                "curve": [(n, est) for _, n, est in result.timeline],
                "model_ms_before": result.model_ms_before,
                "model_ms_after": result.model_ms_after,
                "ranking": result.ranking,
            }
            print(result.summary(), file=sys.stderr)
    print(f"\n{args.model}: estimated contraction speedup after n trials")
    marks = sorted({n for r in runs.values() for n, _ in r["curve"]})
    step = max(1, len(marks) // 12)
    print(f"{'trials':>8}" + "".join(f"{k:>14}" for k in runs))
    for n in marks[::step] + marks[-1:]:
        cells = []
        for r in runs.values():
            upto = [e for m, e in r["curve"] if m <= n]
            cells.append(f"{upto[-1]:>13.3f}x" if upto else f"{'-':>14}")
        print(f"{n:>8}" + "".join(cells))
    for k, r in runs.items():
        if r["model_ms_before"] and r["model_ms_after"]:
            print(f"{k}: model {r['model_ms_before']:.3f} -> {r['model_ms_after']:.3f} ms")
    print(f"ranking quality (cost-model run, held out): {runs['cost model']['ranking']}")
    out = Path(args.out) if args.out else RESULTS / f"cost-model-{args.model}.json"
    write_json(
        out,
        {"model": args.model, "trials": args.trials, "prior_db": args.prior_db},
        runs,
        args.threads,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
