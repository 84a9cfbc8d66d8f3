"""The 8x pattern-pruned MNIST CNN in int8: accuracy on the 10k test images and speed.

Issue 28's accuracy goal for pruning with quantization: "MNIST within 0.3 point in int8 at 8x
pattern pruning". The pruned, fine-tuned model is ``results/mnist_pruned.pt`` (written by
``compress_mnist.py``: 8x fewer conv weights, groups of 16, 99.19% in fp32). It is quantized
once (``compress.quantize``: static, per-channel weights, min-max on ``--calibration`` training
images) and that one quantized file is evaluated image by image (batch 1, as deployed) in
xgen_mlir (``precision="int8"``: on a CPU with VNNI its pruned convs run in the int8 pattern
kernel, ``docs/pattern-codegen.md``) and in ONNX Runtime, against the fp32 pruned model in
PyTorch. Then all are timed on one image, alternating blocks, with OpenVINO's int8 of the same
file and ONNX Runtime's fp32 of the pruned model (peers run it dense).

    .venv/bin/python benchmarks/mnist_int8.py
    .venv/bin/python benchmarks/mnist_int8.py --images 2000 --out /tmp/mnist_int8.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import sys
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
import xgen_mlir
from harness import time_blocks, write_results
from xgen_mlir import compress
from xgen_mlir.models.mnist import load_mnist, mnist_vgg

RESULTS = Path(__file__).resolve().parent / "results"


def _labels(run, images: torch.Tensor, what: str) -> np.ndarray:
    out = np.empty(len(images), np.int64)
    for i in tqdm(range(len(images)), desc=what, unit="img", leave=False):
        out[i] = int(np.argmax(np.asarray(run(images[i : i + 1].numpy()))))
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", type=Path, default=RESULTS / "mnist_pruned.pt")
    p.add_argument("--images", type=int, default=10000, help="test images scored")
    p.add_argument("--calibration", type=int, default=256, help="training images calibrated on")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--out", type=Path, default=RESULTS / "mnist-int8-pruned.json")
    args = p.parse_args()

    import onnxruntime as ort

    data = load_mnist()
    x_test, y_test = data["test"]
    x_test, y_test = x_test[: args.images], y_test[: args.images].numpy()
    cal = [data["train"][0][i : i + 1] for i in range(args.calibration)]
    model = compress.load(args.model, mnist_vgg).eval()
    example = x_test[:1]
    print(f"[{time.strftime('%H:%M:%S')}] quantizing ({args.calibration} calibration images)")
    quantized = compress.quantize(model, example, calibration=cal)
    compiled = xgen_mlir.compile(quantized, None, precision="int8", precision_check=False)
    report = compiled.report
    print(report.precision_note)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    buf = io.BytesIO()
    import onnx

    onnx.save(quantized, buf)
    ort_int8 = ort.InferenceSession(buf.getvalue(), opts, providers=["CPUExecutionProvider"])
    name = ort_int8.get_inputs()[0].name

    with torch.no_grad():
        fp32 = model(x_test).argmax(1).numpy()
    got = {
        "PyTorch fp32 (pruned)": fp32,
        "xgen_mlir int8": _labels(compiled, x_test, "xgen_mlir int8"),
        "ORT int8": _labels(lambda a: ort_int8.run(None, {name: a})[0], x_test, "ORT int8"),
    }
    accuracy = {k: float((v == y_test).mean()) * 100 for k, v in got.items()}
    agree = {k: float((v == fp32).mean()) * 100 for k, v in got.items()}

    one = x_test[:1].numpy()
    runners = {
        "xgen_mlir int8": lambda: compiled(one),
        "ORT int8": lambda: ort_int8.run(None, {name: one}),
    }
    try:
        import openvino as ov

        core = ov.Core()
        ov_int8 = core.compile_model(
            core.read_model(buf.getvalue()), "CPU", {"INFERENCE_NUM_THREADS": 2}
        )
        runners["OpenVINO int8"] = lambda: ov_int8(one)
    except ImportError:
        print("OpenVINO is not installed: its column is left out")
    fbuf = io.BytesIO()
    torch.onnx.export(model, (example,), fbuf, dynamo=False)
    ort_fp32 = ort.InferenceSession(fbuf.getvalue(), opts, providers=["CPUExecutionProvider"])
    fname = ort_fp32.get_inputs()[0].name
    runners["ORT fp32"] = lambda: ort_fp32.run(None, {fname: one})
    torch.set_num_threads(1)
    times = time_blocks(runners, rounds=args.rounds, block=50, warmup=20)

    print(f"\n{len(y_test)} MNIST test images, batch 1; 8x pattern-pruned model")
    print("| system | accuracy % | vs fp32 (points) | agrees with fp32 % | median ms | min ms |")
    print("|---|---|---|---|---|---|")
    for k in [*got, *[r for r in runners if r not in got]]:
        acc = f"{accuracy[k]:.2f}" if k in accuracy else "-"
        delta = f"{accuracy[k] - accuracy['PyTorch fp32 (pruned)']:+.2f}" if k in accuracy else "-"
        agr = f"{agree[k]:.2f}" if k in agree else "-"
        t = times.get(k)
        med = f"{t['median_ms']:.3f}" if t else "-"
        low = f"{t['min_ms']:.3f}" if t else "-"
        print(f"| {k} | {acc} | {delta} | {agr} | {med} | {low} |")
    write_results(
        args.out,
        {
            "date": dt.date.today().isoformat(),
            "command": " ".join(sys.argv),
            "images": len(y_test),
            "calibration_images": args.calibration,
            "accuracy_percent": accuracy,
            "agreement_with_fp32_percent": agree,
            "times": times,
            "rewrites": {
                k: v for k, v in report.rewrites.items() if "pattern" in k or "offload" in k
            },
            "precision_note": report.precision_note,
        },
        threads=2,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
