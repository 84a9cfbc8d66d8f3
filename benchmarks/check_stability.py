"""How often a check in the model reaches the same verdict when repeated: the model compiled
with one choice against the default compile, the two timed in the model as ``xgen_mlir.tune``
checks an algorithm choice, ``--repeats`` times in a row.

Two procedures, each repeat running both on the same two modules:

* ``medians``: 10 rounds, the medians of each module's block times compared, accepted at
  ``MIN_GAIN`` (what the algorithm-choice checks did before ``search.in_model_timing``);
* ``paired``: ``search.in_model_timing`` (per round, the log of the two times' ratio; two sets
  of 30 rounds, more while within the noise, for up to the compile's time), accepted where
  faster beyond the noise and by ``MIN_GAIN`` (``ModelTiming.wins``).

A procedure that flips between repeats on the same two modules is deciding on the host's
noise. Prints each repeat's verdicts and writes ``benchmarks/results/check_stability.json``.

    .venv/bin/python benchmarks/check_stability.py resnet18 --variant offload_convs=all \\
        --repeats 6
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import xgen_mlir
from bench_models import KNOWN, build
from harness import write_results
from xgen_mlir.tunedb import MIN_GAIN
from xgen_mlir.tuning.search import in_model_timing, time_models_paired


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", choices=KNOWN)
    p.add_argument("--variant", required=True, help="NAME=VALUE[,NAME=VALUE]: the choice")
    p.add_argument("--repeats", type=int, default=6)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    options = dict(kv.split("=", 1) for kv in args.variant.split(","))
    model, inputs = build(args.model)
    model.eval()
    base = xgen_mlir.compile(model, inputs, tuning_db=False)
    t0 = time.perf_counter()
    choice = xgen_mlir.compile(model, inputs, tuning_db=False, target_options=options)
    compile_s = time.perf_counter() - t0
    rows = []
    for i in range(args.repeats):
        old = time_models_paired(base, choice, inputs, rounds=10, min_block_s=0.05)
        paired = in_model_timing(base, choice, inputs, max(3.0, compile_s))
        row = {
            "medians_ms": [round(old.current_ms, 3), round(old.candidate_ms, 3)],
            "medians_accepts": old.candidate_ms * MIN_GAIN <= old.current_ms,
            "paired_ratio": round(paired.ratio, 4),
            "paired_noise": round(paired.noise, 4),
            "paired_rounds": len(paired.log_ratios),
            "paired_accepts": paired.wins(MIN_GAIN),
            "paired_slower": paired.slower(),
        }
        rows.append(row)
        print(
            f"repeat {i + 1}: medians {old.current_ms:.2f} -> {old.candidate_ms:.2f} ms "
            f"({'accept' if row['medians_accepts'] else 'reject'}); paired "
            f"{paired.describe()} ({'accept' if row['paired_accepts'] else 'reject'})"
        )
    for how in ("medians", "paired"):
        said = [r[f"{how}_accepts"] for r in rows]
        print(f"{how}: accepted {sum(said)} of {len(said)}")
    ratios = [r["paired_ratio"] for r in rows]
    print(f"paired ratio over the repeats: median {statistics.median(ratios):.3f}")
    out = Path(args.json or Path(__file__).parent / "results" / "check_stability.json")
    write_results(out, {"model": args.model, "variant": options, "repeats": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
