"""Is a refactor behaviour-preserving? Compile the zoo and compare with a saved run.

For every model: the ``cpu`` pipeline's dispatch count, the fusion plan's summary, whether a
fallback was used, and the outputs on a fixed input, saved as ``.npy``. ``--against DIR``
compares a new run with a saved one: dispatch counts equal and outputs bit-identical, or the
model is listed as changed (exit status 1).

    python benchmarks/same_build.py --out /tmp/before            # on the old commit
    python benchmarks/same_build.py --out /tmp/after --against /tmp/before
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import xgen_mlir
from bench_models import KNOWN, build


def record(name: str, out: Path) -> dict:
    torch.manual_seed(0)  # the same weights and input whichever models run
    model, inputs = build(name)
    t0 = time.perf_counter()
    compiled = xgen_mlir.compile(model, inputs, target="cpu")
    seconds = time.perf_counter() - t0
    result = compiled(*[t.numpy() for t in inputs])
    result = np.asarray(result[0] if isinstance(result, (tuple, list)) else result)
    np.save(out / f"{name}.npy", result)
    with torch.no_grad():
        ref = model(*inputs).numpy()
    report = compiled.report
    return {
        "dispatches": compiled.dispatch_count(),
        "fallback": report.fallback_used,
        "fusion_note": report.fusion_note,
        "fusion": [p.summary() for p in report.fusion_plans],
        "shared_packs": report.shared_packs.describe() if report.shared_packs else None,
        "iree_flags": report.iree_flags,
        "max_abs_err_vs_torch": float(np.abs(result - ref).max()),
        "compile_s": round(seconds, 1),
    }


def compare(name: str, now: dict, before: dict, out: Path, old: Path) -> list[str]:
    diffs = []
    for key in ("dispatches", "fallback", "fusion", "shared_packs"):
        if now.get(key) != before.get(key):
            diffs.append(f"{key}: {before.get(key)!r} -> {now.get(key)!r}")
    a, b = np.load(out / f"{name}.npy"), np.load(old / f"{name}.npy")
    if a.shape != b.shape or a.tobytes() != b.tobytes():
        diffs.append(f"outputs differ (max abs {float(np.abs(a - b).max()):.3g})")
    return diffs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--against", type=Path, default=None)
    p.add_argument("--models", nargs="*", default=KNOWN)
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    records = {}
    changed = 0
    for name in args.models:
        print(f"[same_build] {name}", file=sys.stderr, flush=True)
        records[name] = record(name, args.out)
        (args.out / "records.json").write_text(json.dumps(records, indent=1))
        line = f"{name:16s} {records[name]['dispatches']:5d} dispatches"
        if args.against:
            before = json.loads((args.against / "records.json").read_text()).get(name)
            diffs = (
                ["not in the saved run"]
                if before is None
                else compare(name, records[name], before, args.out, args.against)
            )
            changed += bool(diffs)
            line += "  same" if not diffs else "  CHANGED: " + "; ".join(diffs)
        print(line, flush=True)
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
