"""xgen-bisect: find the first dispatch whose numbers differ between a target and a reference.

    xgen-bisect model.onnx --target vulkan                  # against llvm-cpu on the same IR
    xgen-bisect model.mlir --target cpu --leave-out xgen-winograd-convs   # does a pass break it?

Prints the culprit dispatch, its source lines and where the reproducer went (repro.mlir of
just that dispatch, its inputs and both outputs as .npy, and the commands to rerun it).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from ..bisect import bisect
from ..errors import XGenError
from ..pipelines import available_pipelines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="xgen-bisect", description=__doc__.splitlines()[0])
    p.add_argument("model", help="model file: .pt2, .onnx, .mlir, .mlirbc")
    p.add_argument("--target", default="vulkan", help=f"one of {', '.join(available_pipelines())}")
    p.add_argument(
        "--leave-out",
        action="append",
        default=[],
        metavar="STEP",
        help="compare against the target without this pipeline step (repeatable)",
    )
    p.add_argument(
        "--input", action="append", default=[], metavar="FILE.npy", help="an input (repeatable)"
    )
    p.add_argument("--tolerance", type=float, default=1e-4, help="relative error allowed")
    p.add_argument(
        "--target-option", action="append", default=[], metavar="NAME=VALUE", dest="options"
    )
    p.add_argument("-o", "--out", help="folder for the report and reproducer")
    args = p.parse_args(argv)
    try:
        options = dict(o.split("=", 1) for o in args.options)
        inputs = [np.load(f) for f in args.input] or None
        report = bisect(
            args.model,
            inputs,
            target=args.target,
            reference="pipeline" if args.leave_out else "cpu",
            leave_out=args.leave_out,
            tolerance=args.tolerance,
            target_options=options,
            out_dir=args.out,
        )
    except (XGenError, OSError, ValueError) as e:
        print(f"xgen-bisect: error: {e}", file=sys.stderr)
        return 1
    print(report.describe())
    return 2 if report.culprit else 0


if __name__ == "__main__":
    sys.exit(main())
