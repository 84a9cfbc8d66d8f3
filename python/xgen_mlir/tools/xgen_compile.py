"""xgen-compile: compile a .pt2 / .onnx / .mlir model to a .vmfb from the shell.

The output runs with stock ``iree-run-module --module=OUT --function=<entry>``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..compiler import compile as xgen_compile
from ..errors import XGenError
from ..fileio import atomic_copy_file, atomic_write_bytes
from ..pipelines import available_pipelines, load_pipeline


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="xgen-compile", description=__doc__.splitlines()[0])
    p.add_argument(
        "input", nargs="?", help="model file: .pt2 (torch.export), .onnx, .mlir, .mlirbc"
    )
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
    p.add_argument(
        "--target-option",
        action="append",
        default=[],
        dest="target_options",
        metavar="NAME=VALUE",
        help="set one of the target's options (repeatable), e.g. features=+neon,+dotprod",
    )
    p.add_argument(
        "--precision",
        choices=["fp32", "bf16", "int8"],
        help="bf16: conv/matmul operands in bf16, f32 accumulation (targets with a 'precision' "
        "option); int8: a float ONNX model is quantized (static with --calibration, or "
        "--quantization-mode dynamic), a quantized one compiles as it is; prints each output's "
        "error against an fp32 compile",
    )
    p.add_argument(
        "--calibration",
        metavar="FILE.npz",
        help="int8 static quantization: calibration samples, one array per model input in "
        "input order (arr_0, arr_1, ... as numpy.savez writes them), samples along axis 0",
    )
    p.add_argument(
        "--quantization-mode",
        choices=["static", "dynamic"],
        help="int8: static (default; needs --calibration) or dynamic (activations quantized at "
        "run time: transformers)",
    )
    p.add_argument(
        "--observer",
        help="int8 static: the calibration observer (minmax, percentile, distribution)",
    )
    p.add_argument(
        "--bundle",
        metavar="DIR",
        help="also write a deployable bundle (module, weights, manifest.json, run.sh)",
    )
    p.add_argument(
        "--external-weights",
        nargs="?",
        const=0,
        type=int,
        metavar="MIN_BYTES",
        help="put weights (of at least MIN_BYTES, default all) in a .irpa archive",
    )
    p.add_argument(
        "--list-target-options",
        action="store_true",
        help="print the target's options with defaults and exit",
    )
    p.add_argument("--benchmark", action="store_true", help="also time the module on random inputs")
    p.add_argument("--keep-temps", action="store_true", help="on failure, keep the inputs to rerun")
    p.add_argument(
        "--trust-pickle",
        action="store_true",
        help="load a .pt2 even if it holds pickled objects (they can run any code: only for "
        "files you trust)",
    )
    p.add_argument(
        "--dynamic-dim",
        action="append",
        default=[],
        dest="dynamic_dims",
        metavar="INPUT:DIM[:MIN:MAX]",
        help="ONNX models: make dim DIM of input INPUT (both counted from 0) dynamic, "
        "optionally bounded (MIN or MAX may be left empty); repeatable, e.g. 0:0:1:64 for a "
        "batch of 1 to 64. The model's own symbolic dims stay dynamic without it. A .pt2 "
        "carries its dims from torch.export(dynamic_shapes=...)",
    )
    p.add_argument(
        "--input-shape",
        action="append",
        default=[],
        dest="input_shapes",
        metavar="D0xD1x...",
        help="ONNX models: the shape of each graph input (once per input, in order), e.g. "
        "1x3x640x640: the model's symbolic dims take these sizes and the module is static, "
        "as with compile(example_inputs=...); without it they stay dynamic",
    )
    p.add_argument(
        "--tuning-db",
        metavar="FILE|none",
        help="the tuning database whose records apply (default: $XGEN_TUNING_DB or "
        "~/.cache/xgen_mlir/tuning.db if it exists); none: no tuned configs",
    )
    p.add_argument(
        "--tuning-device",
        metavar="RUNNER",
        help="apply the records of the device the module is for, named as xgen-tune --runner "
        "named it (qemu, ssh://user@board; the device need not be reachable); default: this "
        "host's, for --target cpu",
    )
    p.add_argument(
        "--tuning-threads",
        type=int,
        metavar="N",
        help="the thread count the module will run with, for picking records",
    )
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.list_target_options:
        return _list_options(args.target)
    if not args.input:
        _parser().error("the model file is required")
    src = Path(args.input)
    out = Path(args.output) if args.output else src.with_suffix(f".{args.target}.vmfb")
    try:
        _check_outputs(out, args.bundle)
        options = _parse_options(args.target_options)
        dynamic = _parse_dynamic_dims(args.dynamic_dims)
        examples = _shaped_examples(src, args.input_shapes)
        module = xgen_compile(
            src,
            examples,
            target=args.target,
            entry=args.entry,
            dump_ir=args.dump_ir,
            dump_executables=args.dump_executables,
            extra_iree_flags=args.iree_flags,
            verbose=args.verbose,
            target_options=options,
            external_weights=args.external_weights,
            keep_temps=args.keep_temps or None,
            trust_pickle=args.trust_pickle,
            dynamic_shapes=dynamic,
            tuning_db=False if args.tuning_db == "none" else args.tuning_db,
            tuning_device=args.tuning_device,
            tuning_threads=args.tuning_threads,
            precision=args.precision,
            calibration=_calibration(args.calibration),
            quantization={
                k: v
                for k, v in (("mode", args.quantization_mode), ("observer", args.observer))
                if v is not None
            }
            or None,
        )
        module.save(out)
        for name, data in module.artifacts.items():  # bare metal: .o, .h, C module beside it
            atomic_write_bytes(out.with_name(f"{out.stem}.{name}"), data)
        if module.parameters is not None:
            assert not isinstance(module.parameters, bytes)  # compile() writes an .irpa file
            params = out.with_suffix(".irpa")
            atomic_copy_file(module.parameters, params)
            print(f"wrote {params} (run with --parameters=model={params})")
        if args.bundle:
            print(f"wrote bundle {module.save_bundle(args.bundle)}")
    except XGenError as e:
        print(f"xgen-compile: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # an output that cannot be written (permissions, a full disk...)
        where = f"{e.filename}: " if e.filename else ""
        print(f"xgen-compile: error: cannot write {where}{e.strerror or e}", file=sys.stderr)
        return 1
    print(f"wrote {out} ({out.stat().st_size} bytes): {module!r}")
    tuning = module.report.tuning if module.report is not None else None
    if tuning is not None and tuning.source:
        print(f"tuned configs: {len(tuning.applied)} op(s) from {tuning.source}")
    if args.precision and module.report is not None:
        print(module.report.text())
    if args.benchmark:
        print(f"latency: {module.benchmark()}")
    return 0


def _check_outputs(out: Path, bundle: str | None) -> None:
    """Refuse outputs that cannot be written before spending a compile on them."""
    if out.is_dir():
        raise XGenError(f"-o {out}: is a directory; give the path of the .vmfb file to write")
    if bundle is not None and Path(bundle).exists() and not Path(bundle).is_dir():
        raise XGenError(f"--bundle {bundle}: exists and is not a directory")


def _shaped_examples(src: Path, shapes: list[str]) -> tuple[object, ...] | None:
    """``--input-shape``: one seeded random array per ONNX graph input, of its element type."""
    if not shapes:
        return None
    if src.suffix != ".onnx":
        raise XGenError(f"--input-shape applies to .onnx models; {src} has its shapes")
    import numpy as np

    from ..frontend.onnx_import import onnx_inputs

    inputs = onnx_inputs(src)
    if len(shapes) != len(inputs):
        raise XGenError(
            f"--input-shape given {len(shapes)} time(s); {src} has {len(inputs)} input(s) "
            f"({', '.join(v.name for v in inputs)}): give one shape per input, in order"
        )
    rng = np.random.default_rng(0)
    out = []
    for text, v in zip(shapes, inputs, strict=True):
        try:
            shape = tuple(int(d) for d in text.lower().split("x"))
            if any(d < 0 for d in shape):
                raise ValueError
        except ValueError:
            raise XGenError(
                f"--input-shape {text!r}: expected sizes joined by 'x', e.g. 1x3x224x224"
            ) from None
        a = rng.standard_normal(shape) if v.dtype.kind == "f" else np.zeros(shape)
        out.append(a.astype(v.dtype))
    return tuple(out)


def _calibration(path: str | None) -> list[tuple[object, ...]] | None:
    """``--calibration FILE.npz``: sample i is (arr_0[i], arr_1[i], ...)."""
    if path is None:
        return None
    import numpy as np

    try:
        with np.load(path) as data:
            arrays = [data[k] for k in sorted(data.files, key=lambda k: (len(k), k))]
    except Exception as e:
        raise XGenError(f"--calibration {path}: cannot read it as an .npz file: {e}") from None
    if not arrays or len({len(a) for a in arrays}) != 1:
        raise XGenError(
            f"--calibration {path}: expected one array per model input, all with the same "
            f"number of samples along axis 0; got shapes {[list(a.shape) for a in arrays]}"
        )
    return [tuple(a[i] for a in arrays) for i in range(len(arrays[0]))]


def _parse_options(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        if "=" not in item:
            raise XGenError(f"--target-option {item!r}: expected NAME=VALUE")
        key, value = item.split("=", 1)
        out[key.strip()] = value
    return out


def _parse_dynamic_dims(items: list[str]) -> tuple[dict[int, object] | None, ...] | None:
    """``--dynamic-dim INPUT:DIM[:MIN:MAX]`` items as compile()'s ``dynamic_shapes`` (one entry
    per input up to the last one named, ``torch.export.Dim`` per dim)."""
    if not items:
        return None
    from torch.export import Dim

    by_input: dict[int, dict[int, object]] = {}
    for item in items:
        parts = item.split(":")
        try:
            if len(parts) not in (2, 4):
                raise ValueError
            i, d = int(parts[0]), int(parts[1])
            lo, hi = (int(x) if x else None for x in (parts[2:] or ["", ""]))
            if i < 0 or d < 0 or (lo is not None and lo < 0):
                raise ValueError
        except ValueError:
            raise XGenError(
                f"--dynamic-dim {item!r}: expected INPUT:DIM or INPUT:DIM:MIN:MAX with "
                "non-negative integers (MIN or MAX may be empty), e.g. 0:0:1:64"
            ) from None
        if lo is not None and hi is not None and lo > hi:
            raise XGenError(f"--dynamic-dim {item!r}: MIN {lo} is above MAX {hi}")
        bounds = {k: v for k, v in (("min", lo), ("max", hi)) if v is not None}
        by_input.setdefault(i, {})[d] = Dim(f"input{i}_dim{d}", **bounds)  # type: ignore[arg-type]
    return tuple(by_input.get(i) for i in range(max(by_input) + 1))


def _list_options(target: str) -> int:
    try:
        pipeline = load_pipeline(target)
    except XGenError as e:
        print(f"xgen-compile: error: {e}", file=sys.stderr)
        return 1
    print(f"{target}: {pipeline.description}")
    for o in pipeline.options:
        print(f"  {o.name} (default {o.default!r}): {o.help}")
    if not pipeline.options:
        print("  (no options)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
