"""Latency of xgen_mlir's `cpu` pipeline against the baselines, all in one process run.

Systems: xgen_mlir (cpu pipeline), plain IREE with its best stock flags (STACK.md item 9),
IREE defaults, PyTorch eager, ONNX Runtime. Models: ResNet-18 and MobileNetV2 (224x224),
BERT-base and GPT-2 small (seq 128); batch 1, fp32. Prints a table and writes JSON.

    make bench                                   # all models
    make bench ARGS="--models resnet18 --rounds 2"
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import xgen_mlir
from harness import time_blocks
from xgen_mlir.frontend import import_model
from xgen_mlir.models import transformers_zoo, vision
from xgen_mlir.runtime import CompiledModule

HOST = ["--iree-llvmcpu-target-cpu=host"]
IREE_BEST = HOST + [
    "--iree-opt-data-tiling",
    "--iree-preprocessing-pass-pipeline=builtin.module(util.func("
    "iree-preprocessing-convert-conv-to-channels-last))",
]


def build(name: str) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    if name == "resnet18":
        return vision.resnet18(), (vision.random_input("resnet18"),)
    if name == "mobilenet_v2":
        return vision.mobilenet_v2(pretrained=True), (vision.random_input("mobilenet_v2"),)
    if name == "bert_base":
        return transformers_zoo.bert_base(seq=128)
    if name == "gpt2_small":
        return transformers_zoo.gpt2_small(seq=128)
    raise SystemExit(f"unknown model {name}")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def iree_plain(module_bytes: bytes, flags: list[str]) -> CompiledModule:
    import iree.compiler as ic

    with tempfile.NamedTemporaryFile(suffix=".mlirbc") as f:
        f.write(module_bytes)
        f.flush()
        vmfb = ic.compile_file(f.name, target_backends=["llvm-cpu"], extra_args=flags)
    return CompiledModule(vmfb, source="plain IREE")


def onnxruntime_session(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...], threads: int):
    import onnxruntime as ort

    path = Path(tempfile.mkdtemp()) / "model.onnx"
    names = [f"input{i}" for i in range(len(inputs))]
    with torch.no_grad():
        torch.onnx.export(model, inputs, str(path), input_names=names, opset_version=17,
                          dynamo=False)  # fmt: skip
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    feed = {n: t.numpy() for n, t in zip(names, inputs, strict=True)}
    return lambda: sess.run(None, feed)[0]


def bench_model(name: str, rounds: int, block: int, threads: int) -> dict:
    log(f"{name}: building model")
    model, inputs = build(name)
    torch.set_num_threads(threads)
    with torch.no_grad():
        ref = model(*inputs).numpy()
    arrays = [t.numpy() for t in inputs]
    results: dict[str, dict] = {}
    systems = {}

    log(f"{name}: importing (torch-mlir)")
    t0 = time.perf_counter()
    module = import_model(model, inputs)
    import_s = time.perf_counter() - t0
    from xgen_mlir.passes.runner import snapshot

    linalg = snapshot(module)
    for label, flags in (("IREE defaults", HOST), ("IREE best flags", IREE_BEST)):
        log(f"{name}: compiling {label}")
        t0 = time.perf_counter()
        m = iree_plain(linalg, flags)
        results[label] = {"compile_s": time.perf_counter() - t0}
        systems[label] = lambda m=m: m(*arrays)
        results[label]["max_abs_err"] = float(np.abs(m(*arrays) - ref).max())
        results[label]["dispatches"] = m.dispatch_count()
    log(f"{name}: compiling xgen_mlir cpu")
    t0 = time.perf_counter()
    ours = xgen_mlir.compile(module, target="cpu")
    results["xgen_mlir cpu"] = {"compile_s": time.perf_counter() - t0 + import_s,
                                "max_abs_err": float(np.abs(ours(*arrays) - ref).max()),
                                "fallback": ours.report.fallback_used,
                                "dispatches": ours.dispatch_count()}  # fmt: skip
    systems["xgen_mlir cpu"] = lambda: ours(*arrays)
    log(f"{name}: exporting to ONNX for ONNX Runtime")
    try:
        run_ort = onnxruntime_session(model, inputs, threads)
        results["ONNX Runtime"] = {"max_abs_err": float(np.abs(run_ort() - ref).max())}
        systems["ONNX Runtime"] = run_ort
    except Exception as e:  # report, don't hide: the row says why it is missing
        results["ONNX Runtime"] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}

    def run_torch():
        with torch.no_grad():
            return model(*inputs)

    systems["PyTorch eager"] = run_torch
    results["PyTorch eager"] = {"max_abs_err": 0.0}
    log(f"{name}: timing {len(systems)} systems ({rounds} rounds x {block} calls)")
    timing = time_blocks(
        systems, rounds=rounds, block=block, progress=lambda m: log(f"{name}: {m}")
    )
    for k, v in timing.items():
        results[k].update(v)
    return results


def print_table(all_results: dict[str, dict]) -> None:
    systems = ["xgen_mlir cpu", "IREE best flags", "IREE defaults", "ONNX Runtime", "PyTorch eager"]
    head = f"{'model':<14}" + "".join(f"{s:>17}" for s in systems) + f"{'xgen vs IREE best':>19}"
    print("\nmedian latency, ms (batch 1, fp32; lower is better)")
    print(head)
    print("-" * len(head))
    for model, res in all_results.items():
        cells = []
        for s in systems:
            r = res.get(s, {})
            cells.append(f"{r['median_ms']:17.2f}" if "median_ms" in r else f"{'n/a':>17}")
        ratio = res["IREE best flags"]["median_ms"] / res["xgen_mlir cpu"]["median_ms"]
        print(f"{model:<14}" + "".join(cells) + f"{ratio:18.2f}x")
    print("\ndispatches per call (xgen_mlir / IREE best / IREE defaults):")
    for model, res in all_results.items():
        counts = [res[s].get("dispatches", "?") for s in systems[:3]]
        print(f"  {model}: {' / '.join(map(str, counts))}")
    print("\nmax |error| vs PyTorch:")
    for model, res in all_results.items():
        errs = ", ".join(
            f"{s}: {r['max_abs_err']:.1e}" for s, r in res.items() if "max_abs_err" in r
        )
        print(f"  {model}: {errs}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--models", nargs="+", default=["resnet18", "mobilenet_v2", "bert_base", "gpt2_small"]
    )
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--block", type=int, default=10)
    p.add_argument("--threads", type=int, default=2, help="threads for PyTorch/ONNX Runtime")
    p.add_argument("--json", default=None, help="output JSON (default benchmarks/results/)")
    args = p.parse_args(argv)  # fmt: skip
    all_results = {}
    for name in args.models:
        all_results[name] = bench_model(name, args.rounds, args.block, args.threads)
    print_table(all_results)
    out = (
        Path(args.json)
        if args.json
        else (Path(__file__).parent / "results" / f"models-{dt.date.today().isoformat()}.json")
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"date": dt.datetime.now().isoformat(timespec="seconds"), "host": platform.node(),
            "cpus": os.cpu_count(), "torch": torch.__version__, "rounds": args.rounds,
            "block": args.block, "threads": args.threads}  # fmt: skip
    out.write_text(json.dumps({"meta": meta, "results": all_results}, indent=2))
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
