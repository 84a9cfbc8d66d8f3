"""Whether a pattern-pruned int8 conv net runs faster with its pruned convs in xgen_mlir's int8
pattern kernel or in the dense route (oneDNN's s8 convs), as ``xgen_mlir.tune`` decides it on
this host: the model pattern-pruned (connectivity as ``bench_precision.py --prune``) and
quantized static, its group line before the tune, the tune, the line and the record after.

    python benchmarks/tune_pruned_int8.py resnet18 --budget-minutes 2
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import xgen_mlir
from bench_models import build
from bench_precision import quantized
from harness import write_results
from xgen_mlir import compress
from xgen_mlir.passes.int8_pattern_kernels import GROUP_PREFIX
from xgen_mlir.tunedb import HostIdentity, TuningDB


def _group(compiled) -> list:
    return [c for c in compiled.report.tuning.choices if c[0].startswith(GROUP_PREFIX)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", help="a conv net of the zoo (bench_models.py), e.g. resnet18")
    p.add_argument("--prune", type=float, default=0.5, help="connectivity rate")
    p.add_argument("--budget-minutes", type=float, default=2.0)
    p.add_argument("--db", default=None, help="tuning database (default: a fresh one)")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    model, example = build(args.model)
    model = compress.prune(model.eval(), example, target="cpu", connectivity=args.prune).eval()
    q, _ = quantized(args.model, model, example)
    db = Path(args.db or Path(tempfile.mkdtemp(prefix="tune-int8-")) / "tuning.db")
    TuningDB(db).close()
    common = dict(precision="int8", precision_check=False, tuning_db=db)
    before = _group(xgen_mlir.compile(q, None, **common))
    print(f"before the tune: {before}")
    t0 = time.perf_counter()
    xgen_mlir.tune(q, None, db=db, budget_minutes=args.budget_minutes, precision="int8")
    tune_s = time.perf_counter() - t0
    after = _group(xgen_mlir.compile(q, None, **common))
    print(f"after the tune ({tune_s:.0f} s): {after}")
    records = []
    with TuningDB(db) as tdb:
        for sig, recs in tdb.choices(HostIdentity.current()).items():
            for r in recs if sig.startswith(GROUP_PREFIX) else ():
                records.append(
                    {
                        "config": r.config,
                        "status": r.status,
                        "candidate_ms": r.seconds and r.seconds * 1e3,
                        "current_ms": r.baseline_seconds and r.baseline_seconds * 1e3,
                        "detail": r.detail,
                    }
                )
                print(f"record: {records[-1]}")
    out = Path(args.json or Path(__file__).parent / "results" / "tune_pruned_int8.json")
    write_results(out, {"args": vars(args), "before": before, "after": after, "records": records})
    return 0


if __name__ == "__main__":
    sys.exit(main())
