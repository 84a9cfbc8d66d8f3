"""Latency of xgen_mlir's `cpu` pipeline against the baselines, all in one process run.

Systems: xgen_mlir untuned (cpu pipeline: graph rewrites + fusion plan, no tuning records),
xgen_mlir tuned (--tune-minutes M: ``xgen_mlir.tune`` for M minutes per model into a fresh
database, then the compile that applies it), plain IREE with its best stock flags (STACK.md
item 9), IREE defaults (--defaults), ONNX Runtime, OpenVINO (f32 precision hint, on the same
ONNX export), torch.compile, PyTorch eager. Models: ResNet-18, MobileNetV2, EfficientNet-B0
(224x224), MiniLM, BERT-base, DistilBERT, MobileBERT, GPT-2 small (seq 128); batch 1, or
``--batch N`` (the input repeated along dim 0); fp32.
For every model it also counts the imported operators, linalg ops by mapping type, FLOPs
before/after our rewrites, and dispatches per call, and writes an HTML report
(benchmarks/results/report-<model>.html). Prints a table and writes JSON.

    make bench                                   # all models
    make bench ARGS="--models resnet18 --rounds 2"
    make bench ARGS="--models mobilenet_v2 --tune-minutes 10"
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
from harness import time_blocks, write_json
from host import describe, fp32_rate, summary
from xgen_mlir.frontend import import_model
from xgen_mlir.models import transformers_zoo, vision
from xgen_mlir.runtime import CompiledModule

HOST = ["--iree-llvmcpu-target-cpu=host"]
IREE_BEST = HOST + [
    "--iree-llvmcpu-reassociate-fp-reductions",
    "--iree-opt-data-tiling",
    "--iree-preprocessing-pass-pipeline=builtin.module(util.func("
    "iree-preprocessing-convert-conv-to-channels-last))",
]


# DNNFusion's table (../shared/seeds/001): operators in its graph -> fused layers, for the
# model nearest to ours (BERT-base stands in for MiniLM and DistilBERT; per layer compares
# them: 12 layers there, 6 here). Its operator counts are finer than ONNX's (LayerNorm and
# GELU split into many ops), so its ratio is compared with both of ours.
DNNFUSION = {
    "gpt2_small": (2533, 254, 12),
    "mobilebert": (2387, 510, 24),
    "minilm": (976, 216, 12),
    "distilbert": (976, 216, 12),
    "efficientnet_b0": (309, 97, None),
}
LAYERS = {"gpt2_small": 12, "mobilebert": 24, "minilm": 6, "distilbert": 6}
MODELS = [
    "mobilenet_v2",
    "resnet18",
    "efficientnet_b0",
    "minilm",
    "distilbert",
    "mobilebert",
    "gpt2_small",
]  # the issue-4 list; bert_base on request
KNOWN = [*MODELS, "bert_base"]


def build(name: str) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    if name == "resnet18":
        return vision.resnet18(), (vision.random_input("resnet18"),)
    if name == "mobilenet_v2":
        return vision.mobilenet_v2(pretrained=True), (vision.random_input("mobilenet_v2"),)
    if name == "efficientnet_b0":
        return vision.efficientnet_b0(), (vision.random_input("efficientnet_b0"),)
    if name == "vgg16":
        return vision.vgg16(), (vision.random_input("vgg16"),)
    if name in ("bert_base", "gpt2_small", "minilm", "distilbert", "mobilebert"):
        return getattr(transformers_zoo, name)(seq=128)
    raise SystemExit(f"unknown model {name}; known: {', '.join(KNOWN)}")


def graph_info(model: torch.nn.Module, inputs: tuple, module) -> dict:
    """Imported operator counts (PyTorch graph and linalg) and FLOPs from the IR."""
    from xgen_mlir.analysis.flops import module_flops
    from xgen_mlir.report import mapping_counts

    with torch.no_grad():
        graph = torch.export.export(model, inputs).graph
    aten = sum(1 for n in graph.nodes if n.op == "call_function")
    counts = mapping_counts(module.operation)
    return {
        "aten_ops": aten,
        "linalg_ops": sum(counts.values()),
        "mapping_types": counts,
        "gflop": module_flops(module.operation) / 1e9,
    }


def torch_compiled(model: torch.nn.Module, inputs: tuple):
    compiled = torch.compile(model)
    with torch.no_grad():
        compiled(*inputs)  # compile now, not inside the timing

    def run():
        with torch.no_grad():
            return compiled(*inputs)

    return run


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def iree_plain(module_bytes: bytes, flags: list[str]) -> CompiledModule:
    import iree.compiler as ic

    with tempfile.NamedTemporaryFile(suffix=".mlirbc") as f:
        f.write(module_bytes)
        f.flush()
        vmfb = ic.compile_file(f.name, target_backends=["llvm-cpu"], extra_args=flags)
    return CompiledModule(vmfb, source="plain IREE")


def iree_plain_with_fallbacks(module_bytes: bytes, flags: list[str]):
    """Plain IREE with the same fallbacks the cpu pipeline has (IREE 3.13 fails some models,
    e.g. EfficientNet-B0, with data tiling): returns the module and the flags dropped."""
    import iree.compiler as ic

    for drop in (
        [],
        ["--iree-preprocessing-pass-pipeline"],
        ["--iree-preprocessing-pass-pipeline", "--iree-opt-data-tiling"],
    ):
        kept = [f for f in flags if not any(f.startswith(d) for d in drop)]
        try:
            return iree_plain(module_bytes, kept), drop
        except ic.CompilerToolError:
            log(f"plain IREE failed with {len(flags) - len(kept)} flag(s) dropped; next fallback")
    raise RuntimeError("plain IREE failed with every flag set")


def export_onnx(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> tuple[Path, list[str]]:
    """The model as ONNX (opset 17, TorchScript exporter) in a temp dir; its input names."""
    path = Path(tempfile.mkdtemp()) / "model.onnx"
    names = [f"input{i}" for i in range(len(inputs))]
    with torch.no_grad():
        torch.onnx.export(
            model, inputs, str(path), input_names=names, opset_version=17, dynamo=False
        )
    return path, names


def ort_session(path: Path, threads: int, profile_dir: str | None = None):
    """ONNX Runtime on the CPU, all graph optimizations, ``threads`` intra-op threads; with
    ``profile_dir``, its per-node profiler on, writing there (not to the working directory)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if profile_dir:
        opts.enable_profiling = True
        opts.profile_file_prefix = str(Path(profile_dir) / "ort")
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def openvino_session(path: Path, threads: int, f32: bool = True):
    """OpenVINO on the CPU, latency mode, ``threads`` threads; ``f32``: the f32 precision hint
    (fp32 comparisons), else OpenVINO's default precision (bf16 on a CPU with AMX or native
    bf16). Returns ``run(*arrays) -> first output`` and what OpenVINO reports it chose."""
    import openvino as ov
    import openvino.properties as props
    import openvino.properties.hint as hints

    config = {
        props.inference_num_threads: threads,
        hints.performance_mode: hints.PerformanceMode.LATENCY,
    }
    if f32:
        config[hints.inference_precision] = ov.Type.f32
    compiled = ov.Core().compile_model(str(path), "CPU", config)
    request = compiled.create_infer_request()
    info = {
        "version": ov.__version__,
        "inference_precision": compiled.get_property(hints.inference_precision).get_type_name(),
        "inference_num_threads": compiled.get_property(props.inference_num_threads),
    }

    def run(*arrays: np.ndarray) -> np.ndarray:
        request.infer(list(arrays))
        return np.array(request.get_output_tensor(0).data)

    return run, info


def onnxruntime_session(
    model: torch.nn.Module,
    inputs: tuple[torch.Tensor, ...],
    threads: int,
    path: Path | None = None,
):
    """ONNX Runtime on ``model`` (exported here unless ``path`` holds its ONNX export):
    ``run() -> first output`` and the ONNX graph's node count."""
    if path is None:
        path, _ = export_onnx(model, inputs)
    sess = ort_session(path, threads)
    names = [i.name for i in sess.get_inputs()]
    feed = {n: t.numpy() for n, t in zip(names, inputs, strict=True)}
    import onnx

    onnx_nodes = len(onnx.load(str(path), load_external_data=False).graph.node)
    return (lambda: sess.run(None, feed)[0]), onnx_nodes


def bench_model(
    name: str,
    rounds: int,
    block: int,
    threads: int,
    defaults: bool,
    variants: list[dict[str, str]] | None = None,
    tune_minutes: float = 0.0,
    tuning_db: Path | None = None,
    batch: int = 1,
) -> dict:
    """``variants``: target-option sets, each compiled and timed as one more xgen_mlir system
    (e.g. the opt-in ``winograd=true``) next to the default one. "xgen_mlir cpu" is untuned
    (no tuning database); with ``tune_minutes``, ``xgen_mlir.tune`` spends that long on the
    model into ``tuning_db`` and "xgen_mlir tuned" is the compile that applies its records.
    ``batch``: every system runs the zoo input repeated ``batch`` times along dim 0."""
    log(f"{name}: building model")
    model, inputs = build(name)
    if batch > 1:
        inputs = tuple(torch.cat([t] * batch) for t in inputs)
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
    info = graph_info(model, inputs, module)
    plain = [("IREE best flags", IREE_BEST)] + ([("IREE defaults", HOST)] if defaults else [])
    for label, flags in plain:
        log(f"{name}: compiling {label}")
        t0 = time.perf_counter()
        m, used = iree_plain_with_fallbacks(linalg, flags)
        results[label] = {"compile_s": time.perf_counter() - t0, "flags_dropped": used}
        systems[label] = lambda m=m: m(*arrays)
        results[label]["max_abs_err"] = float(np.abs(m(*arrays) - ref).max())
        results[label]["dispatches"] = m.dispatch_count()
    log(f"{name}: compiling xgen_mlir cpu")
    t0 = time.perf_counter()
    ours = xgen_mlir.compile(module, target="cpu", tuning_db=False)

    info["gflop_after_rewrites"] = ours.report.flops_after_rewrites / 1e9
    results["xgen_mlir cpu"] = {
        "compile_s": time.perf_counter() - t0 + import_s,
        "max_abs_err": float(np.abs(ours(*arrays) - ref).max()),
        "fallback": ours.report.fallback_used,
        "fusion_note": ours.report.fusion_note,
        "fusion": [p.summary() for p in ours.report.fusion_plans],
        "shared_packs": (ours.report.shared_packs.describe() if ours.report.shared_packs else None),
        "dispatches": ours.dispatch_count(),
    }
    systems["xgen_mlir cpu"] = lambda: ours(*arrays)
    if tune_minutes > 0:
        from xgen_mlir.tuning.measure import MeasureSettings

        log(f"{name}: tuning for {tune_minutes} min into {tuning_db}")
        t0 = time.perf_counter()
        tuned = xgen_mlir.tune(
            module,
            inputs,
            budget_minutes=tune_minutes,
            db=tuning_db,
            settings=MeasureSettings(threads=threads),
        )
        mod_t = tuned.module
        results["xgen_mlir tuned"] = {
            "tune_s": time.perf_counter() - t0,
            "trials": tuned.trials,
            "max_abs_err": float(np.abs(mod_t(*arrays) - ref).max()),
            "dispatches": mod_t.dispatch_count(),
            "tuner_model_ms_before": tuned.model_ms_before,
            "tuner_model_ms_after": tuned.model_ms_after,
        }
        systems["xgen_mlir tuned"] = lambda: mod_t(*arrays)
    for options in variants or []:
        label = "xgen_mlir cpu (" + ", ".join(f"{k}={v}" for k, v in options.items()) + ")"
        log(f"{name}: compiling {label}")
        t0 = time.perf_counter()
        mod = xgen_mlir.compile(module, target="cpu", target_options=options)  # on a copy
        results[label] = {
            "compile_s": time.perf_counter() - t0,
            "max_abs_err": float(np.abs(mod(*arrays) - ref).max()),
            "gflop_after_rewrites": mod.report.flops_after_rewrites / 1e9,
            "fallback": mod.report.fallback_used,
            "fusion_note": mod.report.fusion_note,
            "dispatches": mod.dispatch_count(),
        }
        systems[label] = lambda mod=mod: mod(*arrays)
    log(f"{name}: exporting to ONNX for ONNX Runtime")
    onnx_path = None
    try:
        onnx_path, _ = export_onnx(model, inputs)
        run_ort, info["onnx_ops"] = onnxruntime_session(model, inputs, threads, onnx_path)
        results["ONNX Runtime"] = {"max_abs_err": float(np.abs(run_ort() - ref).max())}
        systems["ONNX Runtime"] = run_ort
    except Exception as e:  # report, don't hide: the row says why it is missing
        results["ONNX Runtime"] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
    if onnx_path is not None:
        log(f"{name}: OpenVINO (f32 hint)")
        try:
            run_ov, ov_info = openvino_session(onnx_path, threads, f32=True)
            results["OpenVINO f32"] = {
                **ov_info,
                "max_abs_err": float(np.abs(run_ov(*arrays) - ref).max()),
            }
            systems["OpenVINO f32"] = lambda: run_ov(*arrays)
        except Exception as e:
            results["OpenVINO f32"] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}

    log(f"{name}: torch.compile")
    try:
        systems["torch.compile"] = torch_compiled(model, inputs)
        results["torch.compile"] = {}
    except Exception as e:
        results["torch.compile"] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}

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
        gflops = info["gflop"] / (v["median_ms"] / 1e3)
        results[k]["gflops"] = round(gflops, 1)
        results[k]["of_peak"] = f"{100 * gflops / fp32_rate(threads):.0f}%"
    record = {"host": describe(threads), "graph": info, "systems": results}
    from xgen_mlir.report import render

    report = Path(__file__).parent / "results" / f"report-{name}.html"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(render(name, record, ours.report.fusion_plans))
    log(f"{name}: report written to {report}")
    return record


def print_table(all_records: dict[str, dict], threads: int, batch: int = 1) -> None:
    all_results = {m: r["systems"] for m, r in all_records.items()}
    variants = sorted(
        {s for r in all_results.values() for s in r if s.startswith("xgen_mlir cpu (")}
    )
    tuned = ["xgen_mlir tuned"] if any("xgen_mlir tuned" in r for r in all_results.values()) else []
    systems = [
        "xgen_mlir cpu",
        *tuned,
        *variants,
        "IREE best flags",
        "ONNX Runtime",
        "OpenVINO f32",
        "torch.compile",
        "PyTorch eager",
    ]
    width = {s: max(17, len(s) + 2) for s in systems}
    head = f"{'model':<14}" + "".join(f"{s:>{width[s]}}" for s in systems)
    head += f"{'xgen vs IREE best':>19}"
    print(f"\nhost: {summary(threads)}")
    print(f"median latency, ms (batch {batch}, fp32; lower is better)")
    print(head)
    print("-" * len(head))
    for model, res in all_results.items():
        cells = []
        for s in systems:
            r = res.get(s, {})
            w = width[s]
            cells.append(f"{r['median_ms']:{w}.2f}" if "median_ms" in r else f"{'n/a':>{w}}")
        ratio = res["IREE best flags"]["median_ms"] / res["xgen_mlir cpu"]["median_ms"]
        print(f"{model:<14}" + "".join(cells) + f"{ratio:18.2f}x")
    print(
        "\ngraph: PyTorch ops, ONNX ops, linalg ops, dispatches xgen / IREE best, "
        "fused-layer ratios (ONNX ops / dispatches, linalg ops / dispatches), "
        f"GFLOP, achieved rate xgen / IREE best (of this host's fp32 matmul rate, "
        f"{fp32_rate(threads)} GFLOP/s)"
    )
    for model, rec in all_records.items():
        g, res = rec["graph"], rec["systems"]
        ours, iree = res["xgen_mlir cpu"], res["IREE best flags"]
        n = max(1, ours.get("dispatches", 1))
        print(
            f"  {model}: {g['aten_ops']} ops, {g.get('onnx_ops', '?')} ONNX, "
            f"{g['linalg_ops']} linalg, "
            f"{ours.get('dispatches')} / {iree.get('dispatches')} dispatches, "
            f"ratios {g.get('onnx_ops', 0) / n:.1f} / {g['linalg_ops'] / n:.1f}, "
            f"{g['gflop']:.2f} GFLOP (after rewrites {g.get('gflop_after_rewrites', 0):.2f}), "
            f"{ours.get('of_peak')} / {iree.get('of_peak')}"
        )
        if model in DNNFUSION:
            ops, fused, layers = DNNFUSION[model]
            line = f"    DNNFusion: {ops} ops -> {fused} fused layers, ratio {ops / fused:.1f}"
            if layers and model in LAYERS:
                line += (
                    f"; fused layers per transformer layer {fused / layers:.1f} there, "
                    f"dispatches per layer {n / LAYERS[model]:.1f} here"
                )
            print(line)
    print("\nmax |error| vs PyTorch:")
    for model, res in all_results.items():
        errs = ", ".join(
            f"{s}: {r['max_abs_err']:.1e}" for s, r in res.items() if "max_abs_err" in r
        )
        print(f"  {model}: {errs}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=MODELS, choices=KNOWN)
    p.add_argument("--defaults", action="store_true", help="also time IREE's default flags")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--batch", type=int, default=1, help="the zoo input repeated along dim 0")
    p.add_argument("--block", type=int, default=10)
    p.add_argument("--threads", type=int, default=2, help="threads for PyTorch/ONNX Runtime")
    p.add_argument("--json", default=None, help="output JSON (default benchmarks/results/)")
    p.add_argument(
        "--target-option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="also time xgen_mlir with this cpu target option (e.g. winograd=true); "
        "repeat for several, comma-separate to combine",
    )
    p.add_argument(
        "--tune-minutes",
        type=float,
        default=0.0,
        help="also run xgen_mlir.tune this long per model and time the tuned module",
    )
    p.add_argument(
        "--tuning-db",
        default=None,
        help="database for --tune-minutes (default: a fresh file beside the results)",
    )
    args = p.parse_args(argv)
    variants = [dict(kv.split("=", 1) for kv in opt.split(",")) for opt in args.target_option]
    results_dir = Path(__file__).parent / "results"
    tuning_db = (
        Path(args.tuning_db)
        if args.tuning_db
        else results_dir / f"tuning-{dt.date.today().isoformat()}-{int(time.time())}.db"
    )
    all_results = {}
    for name in args.models:
        all_results[name] = bench_model(
            name,
            args.rounds,
            args.block,
            args.threads,
            args.defaults,
            variants,
            args.tune_minutes,
            tuning_db if args.tune_minutes > 0 else None,
            args.batch,
        )
        partial = Path(__file__).parent / "results" / "models-partial.json"
        partial.write_text(json.dumps(all_results, indent=2))  # survives a later crash
    print_table(all_results, args.threads, args.batch)
    out = (
        Path(args.json)
        if args.json
        else (Path(__file__).parent / "results" / f"models-{dt.date.today().isoformat()}.json")
    )
    meta = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "hostname": platform.node(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "rounds": args.rounds,
        "block": args.block,
        "threads": args.threads,
        "tune_minutes": args.tune_minutes,
        "batch": args.batch,
        "tuning_db": str(tuning_db) if args.tune_minutes > 0 else None,
    }
    write_json(out, meta, all_results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
