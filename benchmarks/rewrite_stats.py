"""What the graph-rewriting passes do on the real models, and that results still match PyTorch.

For each model: import once, run the cpu pipeline's steps up to the rewrites, then each
rewrite pass (counting how often each rule fired), then canonicalize/cse; op counts and
FLOPs (``xgen_mlir.analysis.flops``) are compared with the same steps without the rewrites.
Then the rewritten module is compiled through the full cpu pipeline and its output compared
with PyTorch's (max abs error). One model at a time (the machine has 2 cores); no timing.

    .venv/bin/python benchmarks/rewrite_stats.py [--models resnet18 minilm ...] [--no-compile]
        [--target x86_64]   # numerics through another target's pipeline (same rewrite steps)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import torch

import xgen_mlir
from xgen_mlir._mlir import ir
from xgen_mlir.analysis.flops import module_flops
from xgen_mlir.frontend import import_model
from xgen_mlir.models import transformers_zoo, vision
from xgen_mlir.passes.algebraic_simplify import algebraic_simplify
from xgen_mlir.passes.cancel_reshapes import cancel_reshapes
from xgen_mlir.passes.fold_batchnorm import fold_batchnorm
from xgen_mlir.passes.fuse_gather_views import fuse_gather_views
from xgen_mlir.passes.merge_sibling_matmuls import merge_sibling_matmuls
from xgen_mlir.passes.merge_sibling_transposes import merge_sibling_transposes
from xgen_mlir.passes.op_stats import count_ops
from xgen_mlir.passes.runner import run_steps, snapshot
from xgen_mlir.passes.scale_to_weights import scale_to_weights
from xgen_mlir.passes.split_reductions import split_reductions

BEFORE = ["xgen-set-entry-point{name=main}", "xgen-fold-transpose-pairs"]
CLEANUP = ["func.func(canonicalize),cse"]
REWRITES = {
    "xgen-fold-batchnorm": fold_batchnorm,
    "xgen-merge-sibling-matmuls": merge_sibling_matmuls,
    "xgen-merge-sibling-transposes": merge_sibling_transposes,
    "xgen-algebraic-simplify": algebraic_simplify,
    "xgen-cancel-reshapes": cancel_reshapes,
    "xgen-scale-to-weights": scale_to_weights,
    "xgen-fuse-gather-views": lambda m: +Counter({"tensor.concat": fuse_gather_views(m)}),
    "xgen-split-reductions": split_reductions,
}


def build(name: str) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    if name in ("resnet18", "mobilenet_v2", "efficientnet_b0"):
        model = getattr(vision, name)()
        return model.eval(), (
            torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(0)),
        )
    builders = {
        "minilm": transformers_zoo.minilm,
        "bert_base": transformers_zoo.bert_base,
        "gpt2": transformers_zoo.gpt2_small,
        "mobilebert": transformers_zoo.mobilebert,
    }
    return builders[name](seq=128)


def summary(module: ir.Module) -> dict[str, int]:
    ops = count_ops(module.operation)
    linalg = sum(n for k, n in ops.items() if k.startswith("linalg."))
    return {"ops": sum(ops.values()), "linalg_ops": linalg, "flops": module_flops(module.operation)}


def measure(name: str, compile_too: bool, target: str = "cpu") -> dict:
    model, inputs = build(name)
    module = import_model(model, inputs)
    run_steps(module, BEFORE)
    baseline = ir.Module.parse(snapshot(module), module.context)
    run_steps(baseline, CLEANUP)
    fired: dict[str, dict[str, int]] = {}
    for step, fn in REWRITES.items():
        t0 = time.perf_counter()
        counts: Counter[str] = fn(module.operation)
        fired[step] = dict(counts)
        print(
            f"  {name}: {step}: {dict(counts) or 'nothing'} ({time.perf_counter() - t0:.1f}s)",
            file=sys.stderr,
        )
    run_steps(module, CLEANUP)
    row = {"model": name, "fired": fired, "without": summary(baseline), "with": summary(module)}
    if compile_too:
        with torch.no_grad():
            want = model(*inputs).numpy()
        got = xgen_mlir.compile(module, target=target)(*inputs).numpy()
        row["max_abs_err"] = float(np.max(np.abs(got.astype(np.float64) - want)))
        row["max_abs_ref"] = float(np.max(np.abs(want)))
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    models = [
        "resnet18",
        "mobilenet_v2",
        "efficientnet_b0",
        "minilm",
        "bert_base",
        "gpt2",
        "mobilebert",
    ]
    ap.add_argument("--models", nargs="*", default=models)
    ap.add_argument("--no-compile", action="store_true", help="skip the numerics check")
    ap.add_argument("--json", type=Path, help="write the rows here")
    ap.add_argument("--target", default="cpu", help="target compiled for the numerics check")
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = []
    for name in args.models:
        row = measure(name, not args.no_compile, args.target)
        rows.append(row)
        w, wo = row["with"], row["without"]
        err = f"max|err| {row['max_abs_err']:.2e}" if "max_abs_err" in row else ""
        flops = f"GFLOP {wo['flops'] / 1e9:.3f} -> {w['flops'] / 1e9:.3f}"
        ops = f"linalg ops {wo['linalg_ops']} -> {w['linalg_ops']}"
        print(f"{name:13s} {ops}, {flops}  {err}", flush=True)
        print(f"{'':13s} fired: {json.dumps(row['fired'])}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
