"""fp32 against bf16: xgen_mlir in both precisions against OpenVINO and ONNX Runtime.

The evidence table of issue 28's first slice (docs/precision.md). Per model, in one process:
xgen_mlir ``precision="fp32"`` and ``precision="bf16"`` (target cpu), OpenVINO with its default
precision (what it picks on this CPU is recorded: bf16 where the CPU has AVX512-BF16 or AMX),
OpenVINO with ``INFERENCE_PRECISION_HINT`` f32, and ONNX Runtime fp32 (one static ONNX export).
Every system's output is compared with PyTorch eager fp32 on the same input (relative error =
max |out - ref| / max |ref|); MobileNetV2 (pretrained) also gives each system's top-1 agreement
with PyTorch on 12 views of the two sample images the project has (china.jpg, flower.jpg:
3 resizes x 2 flips each). Times: alternating blocks (``harness.time_blocks``). A missing peer or
a failing system is that cell's text; the run goes on.

    .venv/bin/python benchmarks/bench_precision.py                      # all six models
    .venv/bin/python benchmarks/bench_precision.py --models resnet18 --rounds 2
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
from bench_models import build, log
from bench_shapes import errors, export_onnx, ort_runner, short_error
from harness import cell_text, time_into_cells, write_results
from host import describe, summary

MODELS = ["mobilenet_v2", "resnet18", "efficientnet_b0", "minilm", "bert_base", "gpt2_small"]
SYSTEMS = ["xgen_mlir fp32", "xgen_mlir bf16", "OpenVINO default", "OpenVINO f32", "ORT fp32"]
Cell = dict[str, object]


def openvino_runner(path: Path, threads: int, f32: bool) -> tuple[Callable, Cell]:
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
    info: Cell = {
        "version": ov.__version__,
        "inference_precision": compiled.get_property(hints.inference_precision).get_type_name(),
    }

    def run(*arrays: np.ndarray):
        request.infer(list(arrays))
        return np.array(request.get_output_tensor(0).data)

    return run, info


def xgen_runner(model, example, precision: str) -> tuple[Callable, Cell]:
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = xgen_mlir.compile(model, example, precision=precision, precision_check=False)
    info: Cell = {
        "compile_s": time.perf_counter() - t0,
        "precision": m.report.precision,
        "note": m.report.precision_note,
        "warnings": sorted({str(w.message)[:200] for w in caught})[:5],
    }

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


def bench_model(name: str, threads: int, rounds: int, block: int) -> dict[str, Cell]:
    model, example = build(name)
    model.eval()
    with torch.no_grad():
        ref_out = model(*example)
    ref = (ref_out if isinstance(ref_out, torch.Tensor) else ref_out[0]).numpy().astype(np.float64)
    arrays = tuple(x.numpy() for x in example)
    runners: dict[str, Callable] = {}
    cells: dict[str, Cell] = {}
    makers: dict[str, Callable[[], tuple[Callable, Cell]]] = {
        "xgen_mlir fp32": lambda: xgen_runner(model, example, "fp32"),
        "xgen_mlir bf16": lambda: xgen_runner(model, example, "bf16"),
    }
    try:
        path, names = export_onnx(model, example, {})
        makers["OpenVINO default"] = lambda: openvino_runner(path, threads, f32=False)
        makers["OpenVINO f32"] = lambda: openvino_runner(path, threads, f32=True)
        makers["ORT fp32"] = lambda: ort_runner(path, names, threads)
    except Exception as e:
        for s in SYSTEMS[2:]:
            cells[s] = {"error": f"ONNX export failed: {short_error(e)}"}
    for system, make in makers.items():
        log(f"{name}: building {system}")
        try:
            runners[system], cells[system] = make()
            cells[system].update(errors(runners[system](*arrays), ref))
        except Exception as e:
            log(f"{name}: {system} failed: {short_error(e)}")
            cells[system] = {"error": short_error(e)}
            runners.pop(system, None)
    if name == "mobilenet_v2":
        views = image_views()
        with torch.no_grad():
            want = [int(model(v).argmax()) for v in views]
        for system, fn in runners.items():
            got = [int(np.asarray(fn(v.numpy())).argmax()) for v in views]
            same = sum(g == w for g, w in zip(got, want, strict=True))
            cells[system]["top1_agree"] = f"{same}/{len(views)}"
    time_into_cells(cells, runners, arrays, rounds, block, threads, lambda m: log(f"{name}: {m}"))
    return cells


def print_table(results: dict[str, dict[str, Cell]]) -> None:
    print("\nmedian ms (relative error vs PyTorch fp32)")
    print("| model | " + " | ".join(SYSTEMS) + " |")
    print("|---" * (len(SYSTEMS) + 1) + "|")
    for name, cells in results.items():
        row = [cell_text(cells.get(s, {"error": "not run"})) for s in SYSTEMS]
        print(f"| {name} | " + " | ".join(row) + " |")
    if "mobilenet_v2" in results:
        agree = [str(results["mobilenet_v2"].get(s, {}).get("top1_agree", "-")) for s in SYSTEMS]
        print("| MobileNetV2 top-1 agreement | " + " | ".join(agree) + " |")
    ov = {n: c.get("OpenVINO default", {}).get("inference_precision") for n, c in results.items()}
    print(f"OpenVINO default inference precision: {ov}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=MODELS, choices=MODELS)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--block", type=int, default=5)
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "precision.json"))
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    log(summary(args.threads))
    describe(args.threads)  # the host record (matmul rates) before the models load the CPU
    results: dict[str, dict[str, Cell]] = {}
    for name in args.models:
        try:
            results[name] = bench_model(name, args.threads, args.rounds, args.block)
        except Exception as e:  # a model that cannot even be built
            log(f"{name} failed: {short_error(e)}")
            results[name] = {s: {"error": short_error(e)} for s in SYSTEMS}
        print_table(results)
        write_results(
            Path(args.out),
            {
                "what": "fp32 vs bf16: xgen_mlir, OpenVINO (default and f32), ONNX Runtime fp32",
                "date": dt.date.today().isoformat(),
                "command": "python benchmarks/bench_precision.py " + " ".join(argv or sys.argv[1:]),
                "note": "shared host: other sessions' jobs ran at the same time",
                "threads": args.threads,
                "results": results,
            },
            threads=args.threads,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
