"""Latency per target for the model suite; prints a table and writes benchmarks/results/*.json.

    .venv/bin/python benchmarks/bench_targets.py [--models mlp,small_cnn] [--targets cpu,vulkan]

How each target is timed (median ms of one call, batch 1, fp32):
  cpu, x86_64   in-process (CompiledModule.benchmark) on this machine's CPU: real speed.
  vulkan        in-process on the Vulkan device here. On Mesa's llvmpipe (a CPU) this checks
                correctness, NOT GPU speed: the number is labelled "llvmpipe".
  arm64         the bundle under qemu-aarch64 with stock iree-benchmark-module: emulated,
                labelled "qemu"; not the speed of an ARM device.
  riscv64, embedded  compile-only here (no runtime for them on PyPI): artifact size is reported.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

import torch

import xgen_mlir
from xgen_mlir.models import transformers_zoo, vision

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from harness import write_results  # noqa: E402

MODELS = {
    "mlp": lambda: (vision.mlp(), (vision.random_input("mlp"),)),
    "small_cnn": lambda: (vision.small_cnn(), (vision.random_input("small_cnn"),)),
    "resnet18_64": lambda: (vision.resnet18(), (torch.randn(1, 3, 64, 64),)),
    "mobilenet_v2_64": lambda: (vision.mobilenet_v2(pretrained=True), (torch.randn(1, 3, 64, 64),)),
    "minilm_seq32": lambda: transformers_zoo.minilm(seq=32),
}
TARGETS = ["cpu", "x86_64", "vulkan", "arm64", "riscv64", "embedded"]
LABEL = {
    "vulkan": "llvmpipe, correctness only",
    "arm64": "qemu, correctness only",
    "riscv64": "compile-only",
    "embedded": "compile-only",
}


def _bench_bundle(module, runs: int) -> float:
    from targets_util import run_bundle

    with tempfile.TemporaryDirectory() as d:
        bundle = module.save_bundle(Path(d) / "b")
        proc = run_bundle(
            bundle, f"--benchmark_repetitions={runs}", "--benchmark_min_time=1x", benchmark=True
        )
    times = [
        float(m) for m in re.findall(r"BM_\w+/process_time/real_time\s+([\d.]+) ms", proc.stdout)
    ]
    return sorted(times)[len(times) // 2]


def run(models: list[str], targets: list[str], runs: int) -> list[dict]:
    rows = []
    for name in models:
        model, inputs = MODELS[name]()
        with torch.no_grad():
            want = model(*inputs)
        for target in targets:
            row = {"model": name, "target": target, "label": LABEL.get(target, "real")}
            t0 = time.perf_counter()
            try:
                module = xgen_mlir.compile(model, inputs, target=target)
            except xgen_mlir.XGenError as e:
                row["error"] = str(e).splitlines()[0]
                rows.append(row)
                continue
            row["compile_s"] = round(time.perf_counter() - t0, 1)
            row["module_bytes"] = len(module.vmfb)
            args = [x.int() if target == "vulkan" and x.dtype == torch.int64 else x for x in inputs]
            try:
                if target in ("cpu", "x86_64", "vulkan"):
                    got = module(*args)
                    row["max_abs_err"] = float((got - want).abs().max())
                    n = runs if target != "vulkan" else max(3, runs // 5)
                    row["median_ms"] = round(module.benchmark(*args, runs=n, warmup=1).median_ms, 3)
                elif target == "arm64":
                    row["median_ms"] = round(_bench_bundle(module, 3), 3)
                else:
                    row["note"] = "compile-only: " + ", ".join(sorted(module.artifacts) or ["vmfb"])
            except xgen_mlir.XGenError as e:
                row["error"] = str(e).splitlines()[0]
            rows.append(row)
            print(f"  {row}", file=sys.stderr, flush=True)
    return rows


def table(rows: list[dict], targets: list[str]) -> str:
    models = list(dict.fromkeys(r["model"] for r in rows))
    head = "| model | " + " | ".join(f"{t} ({LABEL.get(t, 'real')})" for t in targets) + " |"
    lines = [head, "|---" * (len(targets) + 1) + "|"]
    for m in models:
        cells = []
        for t in targets:
            r = next((r for r in rows if r["model"] == m and r["target"] == t), {})
            if "median_ms" in r:
                cells.append(f"{r['median_ms']:.2f} ms")
            elif "error" in r:
                cells.append("error")
            else:
                cells.append("compiles" if r else "-")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="mlp,small_cnn,resnet18_64,mobilenet_v2_64,minilm_seq32")
    p.add_argument("--targets", default=",".join(TARGETS))
    p.add_argument("--runs", type=int, default=20)
    p.add_argument(
        "--out",
        default=str(ROOT / "benchmarks/results" / f"targets-{time.strftime('%Y-%m-%d')}.json"),
    )
    a = p.parse_args()
    torch.set_num_threads(1)
    targets = a.targets.split(",")
    rows = run(a.models.split(","), targets, a.runs)
    print(table(rows, targets))
    write_results(Path(a.out), {"rows": rows, "labels": LABEL})
    return 0


if __name__ == "__main__":
    sys.exit(main())
