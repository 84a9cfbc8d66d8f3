"""What NaN/Inf semantics as PyTorch's cost (issue 33, items 5 and 6): same process, same
weights, builds with and without, timed in alternating blocks (benchmarks/harness.py).

- ``pattern``: a pattern-pruned ResNet-18 (4-entry patterns on every 3x3 conv and the stem,
  50% connectivity, as benchmarks/bench_pattern_models.py), compiled with the cpu target's
  default ``pattern_nan_checks=true`` (each kernel workgroup checks its inputs for NaN/Inf)
  and with ``false`` (pruned taps ignore NaN/Inf, the former behaviour).
- ``minmax``: MobileNetV2 (ReLU6 after most convs), compiled as the cpu pipeline does, with
  ``xgen-nan-minmax`` (relu6's lower bound as ``arith.maximumf``) and with that pass made a
  no-op for the second build (torch-mlir's ``x > 0 ? x : 0``).

    .venv/bin/python benchmarks/bench_nan_semantics.py [--cases pattern minmax] [--rounds 8]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import xgen_mlir
from harness import time_blocks
from xgen_mlir import compress
from xgen_mlir.models import vision
from xgen_mlir.passes import nan_minmax


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@contextlib.contextmanager
def without_nan_minmax() -> Iterator[None]:
    saved = nan_minmax._rewrite
    nan_minmax._rewrite = lambda *_args: None
    try:
        yield
    finally:
        nan_minmax._rewrite = saved


def pattern_builds() -> tuple[dict, np.ndarray]:
    x = vision.random_input("resnet18")
    model = compress.prune(vision.resnet18(), (x,), target="cpu", connectivity=0.5)
    builds = {}
    for checks in ("true", "false"):
        log(f"compiling pruned resnet18, pattern_nan_checks={checks}")
        builds[f"pruned resnet18, nan checks {checks}"] = xgen_mlir.compile(
            model, (x,), target_options={"pattern_nan_checks": checks}
        )
    return builds, x.numpy()


def minmax_builds() -> tuple[dict, np.ndarray]:
    x = vision.random_input("mobilenet_v2")
    model = vision.mobilenet_v2()
    log("compiling mobilenet_v2 with xgen-nan-minmax")
    builds = {"mobilenet_v2, maximumf relu6": xgen_mlir.compile(model, (x,))}
    log("compiling mobilenet_v2 without it")
    with without_nan_minmax():
        builds["mobilenet_v2, select relu6"] = xgen_mlir.compile(model, (x,))
    return builds, x.numpy()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", nargs="+", default=["pattern", "minmax"])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--block", type=int, default=20)
    args = ap.parse_args()
    torch.set_num_threads(1)
    for case in args.cases:
        builds, arr = {"pattern": pattern_builds, "minmax": minmax_builds}[case]()
        a, b = (np.asarray(m(arr)) for m in builds.values())
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=2e-4)  # same numbers on finite input
        res = time_blocks(
            {name: (lambda m=m, arr=arr: m(arr)) for name, m in builds.items()},
            rounds=args.rounds,
            block=args.block,
        )
        for name, r in res.items():
            print(
                f"{name:40s} median {r['median_ms']:.3f} ms  min {r['min_ms']:.3f}  "
                f"p90 {r['p90_ms']:.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
