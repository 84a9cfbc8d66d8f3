"""fp32, bf16 and int8: xgen_mlir in each precision against OpenVINO and ONNX Runtime.

The evidence table of issue 28's first slice (docs/precision.md). Per model, in one process:
xgen_mlir ``precision="fp32"`` and ``precision="bf16"`` (target cpu), OpenVINO with its default
precision (what it picks on this CPU is recorded: bf16 where the CPU has AVX512-BF16 or AMX),
OpenVINO with ``INFERENCE_PRECISION_HINT`` f32, and ONNX Runtime fp32 (one static ONNX export).
Every system's output is compared with PyTorch eager fp32 on the same input (relative error =
max |out - ref| / max |ref|); the conv nets also give each system's error and top-1 agreement
with PyTorch on 12 views of the two sample images the project has (china.jpg, flower.jpg:
3 resizes x 2 flips each): the example input is noise, outside the ranges an int8 model was
calibrated on. Times: alternating blocks (``harness.time_blocks``). A missing peer or
a failing system is that cell's text; the run goes on.

int8: the model is quantized once with ``xgen_mlir.compress.quantize`` (conv nets: static, per-
channel weights, calibrated with min-max on 8 other views of the same two images (other crops
and sizes than the 12 scored ones); transformers: dynamic) and that one quantized ONNX model
runs in xgen_mlir (``precision="int8"``: the default compile, which on a CPU without an exact
int8 dot product computes the integer contractions in f32; "int8 integer": IREE's integer code
whatever the host; every integer conv and Linear in oneDNN's s8 primitives ("int8 onednn"); or
after ``xgen_mlir.tune``, which measures each one),
in ONNX Runtime ("ORT int8") and in OpenVINO ("OpenVINO int8": it runs the quantize/dequantize
pairs as its int8 kernels), so they compute the same quantized function; "OpenVINO int8 nncf"
is OpenVINO's own int8: the fp32 model quantized by its tool, NNCF (``nncf.quantize``, its
defaults, calibrated on the same 8 views for the conv nets; for the transformers its
transformer scheme, calibrated on the example input), a different quantized function (its own
error is in its cell); each xgen_mlir cell
also has its error against ONNX Runtime's and the count of integer / float contractions
xgen_mlir imported.

    .venv/bin/python benchmarks/bench_precision.py                      # all six models
    .venv/bin/python benchmarks/bench_precision.py --models resnet18 --rounds 2
    .venv/bin/python benchmarks/bench_precision.py --models minilm distilbert --batch 4 \
        --systems "xgen_mlir fp32" "xgen_mlir bf16" "OpenVINO default" "ORT fp32"
    .venv/bin/python benchmarks/bench_precision.py --models mobilenet_v2 resnet18 bert_base \
        --systems "xgen_mlir fp32" "xgen_mlir int8" "ORT int8" "OpenVINO default" \
        --out benchmarks/results/precision_int8.json

Pruning and quantization together (issue 28's "pattern-pruned + int8" row): ``--prune C``
pattern-prunes each conv net first (``compress.prune``, target cpu, connectivity C: 4-entry
patterns, so 3x3 convs keep 4/9 x C of their weights). Every system then runs that pruned
model -- xgen_mlir through its pattern kernels (fp32, and int8 whose integer convs it computes
in f32 on a CPU without VNNI), the peers densely, which is all they can do with its zeros --
and the reference is the pruned model in PyTorch:

    .venv/bin/python benchmarks/bench_precision.py --models resnet18 vgg16 --prune 0.5 \
        --systems "xgen_mlir fp32" "xgen_mlir int8" "ORT int8" "OpenVINO int8" \
        "OpenVINO default" "ORT fp32"
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import xgen_mlir
from bench_models import build, log, openvino_session
from bench_shapes import errors, export_onnx, ort_runner, short_error
from harness import cell_text, time_into_cells, write_results
from host import describe, summary

MODELS = ["mobilenet_v2", "resnet18", "efficientnet_b0", "minilm", "bert_base", "gpt2_small"]
CONV_NETS = ("mobilenet_v2", "resnet18", "efficientnet_b0", "vgg16")
SYSTEMS = [
    "xgen_mlir fp32",
    "xgen_mlir bf16",
    "xgen_mlir fp32 onednn",
    "xgen_mlir bf16 onednn",
    "xgen_mlir fp32 tuned",
    "xgen_mlir bf16 tuned",
    "xgen_mlir int8",
    "xgen_mlir int8 bf16 float ops",
    "xgen_mlir int8 integer",
    "xgen_mlir int8 f32",
    "xgen_mlir int8 onednn",
    "xgen_mlir int8 tuned",
    "OpenVINO default",
    "OpenVINO int8",
    "OpenVINO int8 nncf",
    "OpenVINO f32",
    "ORT fp32",
    "ORT int8",
]
TRANSFORMERS = ("minilm", "distilbert", "mobilebert", "bert_base", "gpt2_small")
# the systems that run the one quantized model
INT8_SYSTEMS = (
    "xgen_mlir int8",
    "xgen_mlir int8 bf16 float ops",
    "xgen_mlir int8 integer",
    "xgen_mlir int8 f32",
    "xgen_mlir int8 onednn",
    "xgen_mlir int8 tuned",
    "ORT int8",
    "OpenVINO int8",
)
TUNE_MIN = 6.0  # budget of xgen_mlir.tune per model and precision (--tune-minutes)
Cell = dict[str, object]


def xgen_runner(
    model,
    example,
    precision: str,
    offload: str = "none",
    tune_minutes: float = 0.0,
    options: dict[str, str] | None = None,
) -> tuple[Callable, Cell]:
    """xgen_mlir in ``precision``; ``offload``: the target option (none, onednn); with
    ``tune_minutes``, ``xgen_mlir.tune`` first (a fresh database: contraction configs, and each
    conv's algorithm: Winograd, oneDNN, direct), then the default compile, which applies it."""
    t0 = time.perf_counter()
    options = {**({"offload": offload} if offload != "none" else {}), **(options or {})}
    extra: dict = {}
    if tune_minutes:
        import tempfile

        db = Path(tempfile.mkdtemp(prefix="bench-tune-")) / "tuning.db"
        xgen_mlir.tune(
            model,
            example,
            precision=precision,
            budget_minutes=tune_minutes,
            db=db,
            progress=False,
        )
        extra = {"tuning_db": db}
    t_tuned = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = xgen_mlir.compile(
            model,
            example,
            precision=precision,
            precision_check=False,
            target_options=options,
            **extra,
        )
    info: Cell = {
        "compile_s": time.perf_counter() - t_tuned,
        "tune_s": t_tuned - t0,
        "precision": m.report.precision,
        "note": m.report.precision_note,
        "warnings": sorted({str(w.message)[:200] for w in caught})[:5],
    }
    if m.report.quantization:
        info["quantization"] = m.report.quantization
    if m.report.offload:
        info["offload"] = m.report.offload
    if m.report.tuning is not None and getattr(m.report.tuning, "choices", None):
        info["choices"] = [list(c) for c in m.report.tuning.choices]

    def run(*arrays: np.ndarray):
        out = m(*arrays)
        return out[0] if isinstance(out, tuple) else out

    return run, info


def image_views() -> list[torch.Tensor]:
    """12 views of the project's two sample images: 3 resizes x 2 flips each."""
    from PIL import Image
    from sklearn.datasets import load_sample_image

    from xgen_mlir.models.imagenet import preprocess

    views = []
    for name in ("china.jpg", "flower.jpg"):
        img = Image.fromarray(load_sample_image(name))
        for flip in (False, True):
            src = img.transpose(Image.Transpose.FLIP_LEFT_RIGHT) if flip else img
            views += [preprocess(src, resize=r) for r in (224, 256, 320)]
    return views


def calibration_views() -> list[torch.Tensor]:
    """8 views of the two sample images that are not among ``image_views``' 12 (other
    resizes and crops): the int8 calibration set of the conv nets."""
    from PIL import Image
    from sklearn.datasets import load_sample_image

    from xgen_mlir.models.imagenet import preprocess

    views = []
    for name in ("china.jpg", "flower.jpg"):
        img = Image.fromarray(load_sample_image(name))
        for resize in (236, 288):
            views.append(preprocess(img, resize=resize))
            w, h = img.size
            views.append(preprocess(img.crop((w // 8, 0, w, h)), resize=resize))
    return views


def quantized(name: str, model, example) -> tuple[object, Cell]:
    """The model quantized once (xgen_mlir.compress.quantize), for xgen_mlir and ORT int8."""
    from xgen_mlir import compress

    t0 = time.perf_counter()
    if name in TRANSFORMERS:
        q = compress.quantize(model, example, mode="dynamic")
    else:
        q = compress.quantize(model, example, calibration=calibration_views())
    info: Cell = {"quantize_s": time.perf_counter() - t0}
    info.update(compress.quantization_settings(q) or {})
    return q, info


def openvino_proto_runner(proto, threads: int) -> tuple[Callable, Cell]:
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="bench-int8-")) / "quantized.onnx"
    path.write_bytes(proto.SerializeToString())
    return openvino_session(path, threads, f32=False)


def openvino_nncf_runner(name: str, path: Path, example, threads: int) -> tuple[Callable, Cell]:
    """OpenVINO's own int8: the fp32 ONNX model quantized by NNCF (post-training, its
    defaults), calibrated on ``calibration_views`` (conv nets), or with its transformer scheme
    on the example input."""
    import nncf
    import openvino as ov
    import openvino.properties as props
    import openvino.properties.hint as hints

    core = ov.Core()
    fp32 = core.read_model(str(path))
    options = {}
    if name in CONV_NETS:
        calib: list = [v.numpy() for v in calibration_views()]
    else:  # by input name; NNCF's transformer scheme (its default broke GPT-2: error 1.0)
        calib = [{i.get_any_name(): x.numpy() for i, x in zip(fp32.inputs, example, strict=True)}]
        options["model_type"] = nncf.ModelType.TRANSFORMER
    t0 = time.perf_counter()
    quantized_model = nncf.quantize(fp32, nncf.Dataset(calib), subset_size=len(calib), **options)
    quantize_s = time.perf_counter() - t0
    config = {
        props.inference_num_threads: threads,
        hints.performance_mode: hints.PerformanceMode.LATENCY,
    }
    compiled = core.compile_model(quantized_model, "CPU", config)
    request = compiled.create_infer_request()

    def run(*arrays: np.ndarray) -> np.ndarray:
        request.infer(list(arrays))
        return np.array(request.get_output_tensor(0).data)

    info: Cell = {"version": ov.__version__, "nncf_version": nncf.__version__}
    info.update(quantize_s=quantize_s, calibration_samples=len(calib))
    return run, info


def ort_proto_runner(proto, threads: int) -> tuple[Callable, Cell]:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(proto.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    info: Cell = {"version": ort.__version__, "intra_op_threads": threads}

    def run(*arrays: np.ndarray):
        return sess.run(None, dict(zip(names, arrays, strict=True)))[0]

    return run, info


def bench_model(
    name: str,
    threads: int,
    rounds: int,
    block: int,
    systems: list[str],
    batch: int = 1,
    prune: float | None = None,
) -> dict[str, Cell]:
    """``batch``: every system runs the zoo input repeated ``batch`` times along dim 0;
    ``prune``: every system runs the model pattern-pruned at that connectivity."""
    model, example = build(name)
    model.eval()
    pruned: Cell = {}
    if prune is not None:
        from xgen_mlir import compress

        log(f"{name}: pattern-pruning (connectivity {prune})")
        model = compress.prune(model, example, target="cpu", connectivity=prune).eval()
        desc = compress.describe(model)
        pruned = {"connectivity": prune, "compression_rate": desc.compression_rate}
    if batch > 1:
        example = tuple(torch.cat([t] * batch) for t in example)
    with torch.no_grad():
        ref_out = model(*example)
    ref = (ref_out if isinstance(ref_out, torch.Tensor) else ref_out[0]).numpy().astype(np.float64)
    arrays = tuple(x.numpy() for x in example)
    runners: dict[str, Callable] = {}
    cells: dict[str, Cell] = {}
    makers: dict[str, Callable[[], tuple[Callable, Cell]]] = {
        "xgen_mlir fp32": lambda: xgen_runner(model, example, "fp32"),
        "xgen_mlir bf16": lambda: xgen_runner(model, example, "bf16"),
        # BYOC: every conv oneDNN takes, through xgen_mlir's plugin (docs/byoc.md)
        "xgen_mlir fp32 onednn": lambda: xgen_runner(model, example, "fp32", "onednn"),
        "xgen_mlir bf16 onednn": lambda: xgen_runner(model, example, "bf16", "onednn"),
        # tuned on this host first: what a user gets after xgen_mlir.tune (offload=tuned)
        "xgen_mlir fp32 tuned": lambda: xgen_runner(model, example, "fp32", "none", TUNE_MIN),
        "xgen_mlir bf16 tuned": lambda: xgen_runner(model, example, "bf16", "none", TUNE_MIN),
    }
    if any("int8" in s for s in systems):
        try:
            log(f"{name}: quantizing")
            q, qinfo = quantized(name, model, example)
            makers["xgen_mlir int8"] = lambda: xgen_runner(q, None, "int8")
            # the float contractions the quantized model keeps (attention's) in bf16, as
            # OpenVINO's int8 runs its float part on a CPU with bf16 (int8_float_ops)
            bf16_float = {"int8_float_ops": "bf16"}
            makers["xgen_mlir int8 bf16 float ops"] = lambda: xgen_runner(
                q, None, "int8", options=bf16_float
            )
            # BYOC: every integer conv and Linear in oneDNN's s8 primitives (docs/byoc.md)
            # the integer contractions as such, whatever the host (integer_contractions=auto
            # computes them in f32 on a CPU without an exact int8 dot product)
            integer = {"integer_contractions": "integer"}
            makers["xgen_mlir int8 integer"] = lambda: xgen_runner(q, None, "int8", options=integer)
            # every integer contraction as the f32 contraction of the same integers (no 16-bit
            # multiply-add kernel for the Linear layers)
            in_f32 = {"integer_contractions": "float"}
            makers["xgen_mlir int8 f32"] = lambda: xgen_runner(q, None, "int8", options=in_f32)
            makers["xgen_mlir int8 onednn"] = lambda: xgen_runner(q, None, "int8", "onednn")
            makers["xgen_mlir int8 tuned"] = lambda: xgen_runner(q, None, "int8", "none", TUNE_MIN)
            makers["ORT int8"] = lambda: ort_proto_runner(q, threads)
            # the same quantized (QDQ) file: OpenVINO runs its quantize/dequantize pairs as
            # its own int8 kernels
            makers["OpenVINO int8"] = lambda: openvino_proto_runner(q, threads)
        except Exception as e:
            for s in INT8_SYSTEMS:
                cells[s] = {"error": f"quantization failed: {short_error(e)}"}
    try:
        path, names = export_onnx(model, example, {})
        makers["OpenVINO default"] = lambda: openvino_session(path, threads, f32=False)
        makers["OpenVINO int8 nncf"] = lambda: openvino_nncf_runner(name, path, example, threads)
        makers["OpenVINO f32"] = lambda: openvino_session(path, threads, f32=True)
        makers["ORT fp32"] = lambda: ort_runner(path, names, threads)
    except Exception as e:
        for s in ("OpenVINO default", "OpenVINO f32", "ORT fp32"):
            cells[s] = {"error": f"ONNX export failed: {short_error(e)}"}
    makers = {s: m for s, m in makers.items() if s in systems}
    outs: dict[str, np.ndarray] = {}
    for system, make in makers.items():
        log(f"{name}: building {system}")
        try:
            runners[system], cells[system] = make()
            outs[system] = np.asarray(runners[system](*arrays), np.float64)
            cells[system].update(errors(outs[system], ref))
            cells[system]["rel_l2_err"] = float(
                np.linalg.norm(outs[system] - ref) / (np.linalg.norm(ref) or 1.0)
            )
        except Exception as e:
            log(f"{name}: {system} failed: {short_error(e)}")
            cells[system] = {"error": short_error(e)}
            runners.pop(system, None)
    ours = [s for s in INT8_SYSTEMS if s.startswith("xgen_mlir") and s in outs]
    if ours and "ORT int8" in outs:
        b = outs["ORT int8"]
        for s in ours:
            cells[s]["vs_ort_int8_max_rel_err"] = errors(outs[s], b).get("max_rel_err")
            cells[s]["vs_ort_int8_rel_l2"] = float(
                np.linalg.norm(outs[s] - b) / (np.linalg.norm(b) or 1.0)
            )
        cells["ORT int8"].update(qinfo)
        # the control: ONNX Runtime on the same model with its graph optimizations off, which
        # runs the QDQ graph as written (float ops between quantize/dequantize) instead of its
        # fused integer kernels with fixed-point requantization
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(q.SerializeToString(), so, providers=["CPUExecutionProvider"])
        feed = dict(zip([i.name for i in sess.get_inputs()], arrays, strict=True))
        plain = np.asarray(sess.run(None, feed)[0], np.float64)
        norm = np.linalg.norm(plain) or 1.0
        cells["ORT int8"]["vs_unoptimized_rel_l2"] = float(np.linalg.norm(b - plain) / norm)
        for s in ours:
            cells[s]["vs_ort_int8_unoptimized_rel_l2"] = float(
                np.linalg.norm(outs[s] - plain) / norm
            )
    if name in CONV_NETS and batch == 1:  # the scored views are single images
        # the error on real images too: the example input is noise, outside the range an
        # int8 model was calibrated on (ResNet-18 int8: 1.8e-1 on it, 2.1e-2 on the views)
        views = image_views()
        with torch.no_grad():
            wants = [model(v).numpy().astype(np.float64) for v in views]
        for system, fn in runners.items():
            gots = [np.asarray(fn(v.numpy()), np.float64) for v in views]
            same = sum(int(g.argmax() == w.argmax()) for g, w in zip(gots, wants, strict=True))
            cells[system]["top1_agree"] = f"{same}/{len(views)}"
            cells[system]["views_max_rel_err"] = max(
                float(np.abs(g - w).max() / (np.abs(w).max() or 1.0))
                for g, w in zip(gots, wants, strict=True)
            )
    time_into_cells(cells, runners, arrays, rounds, block, threads, lambda m: log(f"{name}: {m}"))
    if pruned:  # on every cell: the pruning the model had
        for cell in cells.values():
            cell["pruned"] = pruned
    return cells


def print_table(results: dict[str, dict[str, Cell]], systems: list[str], batch: int = 1) -> None:
    print(f"\nmedian ms, batch {batch} (max relative error vs PyTorch fp32)")
    print("| model | " + " | ".join(systems) + " |")
    print("|---" * (len(systems) + 1) + "|")
    for name, cells in results.items():
        row = [cell_text(cells.get(s, {"error": "not run"})) for s in systems]
        print(f"| {name} | " + " | ".join(row) + " |")
    for name, cells in results.items():  # the conv nets, on the 12 image views
        if any("views_max_rel_err" in cells.get(s, {}) for s in systems):
            row = [
                f"{c['views_max_rel_err']:.1e} ({c['top1_agree']})"
                if "views_max_rel_err" in (c := cells.get(s, {}))
                else "-"
                for s in systems
            ]
            print(f"| {name}: image views, max rel error (top-1) | " + " | ".join(row) + " |")
    for name, cells in results.items():
        q = cells.get("xgen_mlir int8", {})
        if "vs_ort_int8_rel_l2" in q:
            print(
                f"{name} int8: xgen_mlir vs ORT int8 (same model) max rel "
                f"{q['vs_ort_int8_max_rel_err']:.1e}, rel L2 {q['vs_ort_int8_rel_l2']:.1e}; "
                f"vs ORT int8 unoptimized rel L2 {q.get('vs_ort_int8_unoptimized_rel_l2', 0):.1e} "
                "(ORT int8 vs itself unoptimized: "
                f"{cells.get('ORT int8', {}).get('vs_unoptimized_rel_l2', 0):.1e}); "
                f"contractions {q.get('quantization', {}).get('contractions')}"
            )
    ov = {n: c.get("OpenVINO default", {}).get("inference_precision") for n, c in results.items()}
    print(f"OpenVINO default inference precision: {ov}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--models",
        nargs="+",
        default=MODELS,
        choices=[*MODELS, "distilbert", "mobilebert", "vgg16"],
    )
    p.add_argument("--systems", nargs="+", default=SYSTEMS, choices=SYSTEMS)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--block", type=int, default=5)
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "precision.json"))
    p.add_argument("--tune-minutes", type=float, default=TUNE_MIN)
    p.add_argument("--batch", type=int, default=1, help="the zoo input repeated along dim 0")
    p.add_argument(
        "--prune",
        type=float,
        default=None,
        metavar="CONNECTIVITY",
        help="pattern-prune the conv nets first (compress.prune, this connectivity)",
    )
    args = p.parse_args(argv)
    if args.prune is not None and set(args.models) - set(CONV_NETS):
        p.error(f"--prune applies to the conv nets: {', '.join(CONV_NETS)}")
    globals()["TUNE_MIN"] = args.tune_minutes
    torch.set_num_threads(args.threads)
    log(summary(args.threads))
    describe(args.threads)  # the host record (matmul rates) before the models load the CPU
    results: dict[str, dict[str, Cell]] = {}
    for name in args.models:
        try:
            results[name] = bench_model(
                name, args.threads, args.rounds, args.block, args.systems, args.batch, args.prune
            )
        except Exception as e:  # a model that cannot even be built
            log(f"{name} failed: {short_error(e)}")
            results[name] = {s: {"error": short_error(e)} for s in args.systems}
        print_table(results, args.systems, args.batch)
        write_results(
            Path(args.out),
            {
                "what": "fp32 / bf16 / int8: xgen_mlir, OpenVINO (default and f32), ONNX Runtime "
                "(fp32, and int8 on the same quantized model as xgen_mlir int8)",
                "systems": args.systems,
                "date": dt.date.today().isoformat(),
                "command": "python benchmarks/bench_precision.py " + " ".join(argv or sys.argv[1:]),
                "note": "shared host: other sessions' jobs ran at the same time",
                "threads": args.threads,
                "batch": args.batch,
                "pruned": args.prune,
                "results": results,
            },
            threads=args.threads,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
