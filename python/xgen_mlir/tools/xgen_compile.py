"""xgen-compile: compile a .pt2 / .onnx / .mlir model to a .vmfb from the shell.

The output runs with stock ``iree-run-module --module=OUT --function=<entry>``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..compiler import compile as xgen_compile
from ..errors import XGenError
from ..pipelines import available_pipelines


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="xgen-compile", description=__doc__.splitlines()[0])
    p.add_argument("input", help="model file: .pt2 (torch.export), .onnx, .mlir or .mlirbc")
    p.add_argument("-o", "--output", help="output .vmfb (default: <input stem>.<target>.vmfb)")
    p.add_argument("--target", default="cpu", help=f"target ({', '.join(available_pipelines())})")
    p.add_argument("--entry", default="main", help="entry function name in the output module")
    p.add_argument("--dump-ir", help="directory: IR after each xgen step")
    p.add_argument("--dump-executables", help="directory: IREE's per-dispatch executable dumps")
    p.add_argument(
        "--iree-flag",
        action="append",
        default=[],
        dest="iree_flags",
        help="extra flag for iree-compile (repeatable)",
    )
    p.add_argument("--benchmark", action="store_true", help="also time the module on random inputs")
    p.add_argument("-v", "--verbose", action="store_true")
    return p  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    src = Path(args.input)
    out = Path(args.output) if args.output else src.with_suffix(f".{args.target}.vmfb")
    try:
        module = xgen_compile(
            src,
            target=args.target,
            entry=args.entry,
            dump_ir=args.dump_ir,
            dump_executables=args.dump_executables,
            extra_iree_flags=args.iree_flags,
            verbose=args.verbose,
        )
        module.save(out)
    except XGenError as e:
        print(f"xgen-compile: error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {out} ({out.stat().st_size} bytes): {module!r}")
    if args.benchmark:
        print(f"latency: {module.benchmark()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
