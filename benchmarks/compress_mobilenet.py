"""Pruning pretrained MobileNetV2 without data: how far do its predictions move?

No ImageNet data exists offline, so there is no fine-tuning and no accuracy: we report top-1
agreement with the dense model (and "dense top-1 within pruned top-5") on scikit-learn's two
sample photos plus deterministic crops and flips of them (60 inputs). Depthwise 3x3 convs get
pattern pruning (the stem 3x3 conv too), pointwise 1x1 convs optionally connectivity pruning.
This measures the one-shot projection error only; the paper's numbers come after retraining.
Two unstructured magnitude-pruning rows show how sensitive the model itself is.

    .venv/bin/python benchmarks/compress_mobilenet.py     # ~2-4 min on 1 core
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path

import torch
from PIL import Image

from xgen_mlir import compress
from xgen_mlir.models.imagenet import preprocess
from xgen_mlir.models.vision import mobilenet_v2

RESULTS = Path(__file__).resolve().parent / "results"


def images() -> torch.Tensor:
    """china.jpg and flower.jpg: 3 crop scales x 5 positions x 2 flips each = 60 inputs."""
    from sklearn.datasets import load_sample_image

    out = []
    for name in ("china.jpg", "flower.jpg"):
        img = Image.fromarray(load_sample_image(name))
        w, h = img.size
        for scale in (1.0, 0.8, 0.6):
            cw, ch = int(w * scale), int(h * scale)
            for fx, fy in ((0.5, 0.5), (0, 0), (1, 0), (0, 1), (1, 1)):
                left, top = int((w - cw) * fx), int((h - ch) * fy)
                crop = img.crop((left, top, left + cw, top + ch))
                for flip in (False, True):
                    im = crop.transpose(Image.Transpose.FLIP_LEFT_RIGHT) if flip else crop
                    out.append(preprocess(im))
    return torch.cat(out)


def main() -> None:
    torch.set_num_threads(1)
    x = images()
    dense = mobilenet_v2(pretrained=True)
    with torch.no_grad():
        ref = dense(x)
    depthwise = [n for n, m in dense.named_modules() if getattr(m, "groups", 1) > 1]
    configs = [
        ("stem 3x3 conv only, n=4", {"layers": ["features.0.0"]}),
        ("depthwise n=4 (default), G=16", {}),
        ("depthwise n=4, G=1", {"group_size": 1}),
        ("depthwise n=6, G=16", {"pattern_size": dict.fromkeys(depthwise, 6)}),
        ("depthwise n=4 + pointwise 50%", {"pointwise": 0.5}),
    ]
    rows = []
    for name, opts in configs:
        t = time.time()
        pruned = compress.prune(dense, (x[:1],), exclude=["classifier.*"], **opts)
        with torch.no_grad():
            out = pruned(x)
        desc = compress.describe(pruned)
        rows.append(_row(name, out, ref, desc.compression_rate, time.time() - t))
    for keep in (8, 4):  # reference without any structure: magnitude pruning per kernel
        unstructured = copy.deepcopy(dense)
        with torch.no_grad():
            for m in unstructured.modules():
                if isinstance(m, torch.nn.Conv2d) and m.groups > 1:
                    w = m.weight.view(m.weight.shape[0], -1)
                    w.scatter_(1, w.abs().topk(9 - keep, dim=1, largest=False).indices, 0.0)
            out = unstructured(x)
        rows.append(_row(f"reference: unstructured, {keep} of 9 per depthwise kernel", out, ref))
    _write(rows, len(x))


def _row(name, out, ref, rate=None, seconds=None) -> dict:
    top1 = ref.argmax(1)
    row = {
        "config": name,
        "conv_weights_fewer": None if rate is None else round(rate, 3),
        "top1_agreement": float((out.argmax(1) == top1).float().mean()),
        "dense_top1_in_top5": float(
            (out.topk(5, 1).indices == top1[:, None]).any(1).float().mean()
        ),
        "relative_logit_error": float((out - ref).norm() / ref.norm()),
        "prune_seconds": None if seconds is None else round(seconds, 1),
    }
    print(row, flush=True)
    return row


def _rate(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.3f}x"


def _write(rows: list[dict], inputs: int) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "compress_mobilenet.json").write_text(
        json.dumps({"inputs": inputs, "rows": rows}, indent=1)
    )
    lines = [
        f"MobileNetV2 (pretrained), {inputs} inputs, no fine-tuning:",
        "",
        "| config | conv weights fewer | top-1 agreement | dense top-1 in top-5 | logit rel. err |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['config']} | {_rate(r['conv_weights_fewer'])} | {100 * r['top1_agreement']:.1f}% "
        f"| {100 * r['dense_top1_in_top5']:.1f}% | {r['relative_logit_error']:.2f} |"
        for r in rows
    ]
    (RESULTS / "compress_mobilenet.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
