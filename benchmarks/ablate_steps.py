"""A/B of the cpu pipeline with some pass steps left out, against plain IREE, in one process.

    .venv/bin/python benchmarks/ablate_steps.py resnet18 --drop xgen-fold-batchnorm

Prints max |error| vs plain IREE, dispatches per call and median/min ms of each variant (blocks
of 10 calls, rotating order; see harness.py). Used to find which step made a model slower.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from bench_models import IREE_BEST, KNOWN, build, iree_plain
from harness import time_blocks
from xgen_mlir._mlir import ir
from xgen_mlir.backend.iree import compile_vmfb
from xgen_mlir.frontend import import_model
from xgen_mlir.frontend.mlir_import import new_torch_context
from xgen_mlir.passes.runner import run_steps, snapshot
from xgen_mlir.pipelines import load_pipeline
from xgen_mlir.runtime import CompiledModule


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", choices=KNOWN)
    p.add_argument(
        "--drop", nargs="+", default=[], help="pass names to leave out (one variant each)"
    )
    p.add_argument("--rounds", type=int, default=6)
    args = p.parse_args(argv)
    model, inputs = build(args.model)
    arrays = [t.numpy() for t in inputs]
    torch.set_num_threads(2)
    linalg = snapshot(import_model(model, inputs))
    pipe = load_pipeline("cpu")
    steps = pipe.pass_steps("main")

    def variant(drop: str | None) -> CompiledModule:
        with new_torch_context():
            module = ir.Module.parse(linalg)
            run_steps(module, [s for s in steps if drop is None or drop not in s], what="ablation")
            return CompiledModule(compile_vmfb(module, pipe).vmfb)

    systems = {"IREE best flags": iree_plain(linalg, IREE_BEST), "cpu pipeline": variant(None)}
    for name in args.drop:
        systems[f"without {name}"] = variant(name)
    ref = systems["IREE best flags"](*arrays)
    timing = time_blocks(
        {k: (lambda m=m: m(*arrays)) for k, m in systems.items()}, rounds=args.rounds, block=10
    )
    for name, m in systems.items():
        err = float(np.abs(m(*arrays) - ref).max())
        t = timing[name]
        print(
            f"{name:40s} {t['median_ms']:8.2f} ms (min {t['min_ms']:.2f})  "
            f"{m.dispatch_count():4d} dispatches  max|err| {err:.1e}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
