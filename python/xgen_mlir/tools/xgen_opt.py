"""xgen-opt: parse .mlir, run xgen/upstream passes or a named pipeline, print the result.

Like mlir-opt: ``--split-input-file`` runs each ``// -----`` chunk on its own (line numbers in
diagnostics stay those of the file); errors go to stderr and make the exit status 1.

Graph passes run on torch-mlir's IR; dispatch passes (``xgen-plan-fusion``, the tile and pad
steps) on IREE's: when the pipeline names a dispatch pass, or with ``--dispatch``, the input
is parsed with IREE's bindings and upstream steps are IREE's passes.

The input is untrusted (``frontend/mlir_import.py``): text nested too deeply is refused, and
the file (stdin: a temporary copy) is parsed first in a child process, so that a chunk that
crashes MLIR's parser is an error naming it, not a crash of xgen-opt.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from .._mlir import iree_binding
from ..errors import XGenError
from ..frontend.mlir_import import (
    SPLIT_MARKER,
    check_nesting,
    decode_mlir_input,
    new_torch_context,
    parse_mlir,
    precheck_parse,
    relabel_source,
    split_chunks,
)
from ..passes.registry import (
    DISPATCH,
    build_pass_manager,
    check_order,
    get_pass,
    registered_passes,
    split_pipeline,
    step_name,
)
from ..passes.runner import run_steps
from ..pipelines import available_pipelines, load_pipeline


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="xgen-opt", description=__doc__.splitlines()[0])
    p.add_argument("input", nargs="?", default="-", help=".mlir/.mlirbc file, or - for stdin")
    p.add_argument(
        "--pass-pipeline",
        "-p",
        default=None,
        help="comma-separated steps: xgen passes (xgen-foo{opt=v}) and upstream passes",
    )
    p.add_argument("--pipeline", default=None, help="run the pass steps of a named pipeline")
    p.add_argument(
        "--dispatch",
        action="store_true",
        help="IREE's IR and passes (implied by a dispatch pass in the pipeline)",
    )
    p.add_argument("--entry", default="main", help="entry name for pipelines that set it")
    p.add_argument("--split-input-file", action="store_true")
    p.add_argument("-o", "--output", default="-", help="output file (default stdout)")
    p.add_argument("--emit-bytecode", action="store_true")
    p.add_argument("--dump-ir", default=None, help="directory for the IR after each step")
    p.add_argument("--keep-temps", action="store_true", help="on failure, keep a reproducer")
    p.add_argument("--list-passes", action="store_true")
    p.add_argument("--list-pipelines", action="store_true")
    return p


def _list(args: argparse.Namespace) -> bool:
    if args.list_passes:
        for name, info in sorted(registered_passes().items()):
            print(f"{name:32s} {info.phase:8s} {info.kind:8s} {info.summary}")
    if args.list_pipelines:
        for name in available_pipelines():
            pl = load_pipeline(name)
            print(f"{name}: {pl.description}")
            for s in pl.steps:
                print(f"  {s.pass_text:48s} # {s.why}")
            for s in pl.dispatch_steps:
                print(f"  [dispatch at {s.at}] {s.pass_text:30s} # {s.why}")
    return bool(args.list_passes or args.list_pipelines)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if _list(args):
            return 0
        steps: list[str] = []
        if args.pipeline:
            steps += load_pipeline(args.pipeline).pass_steps(args.entry)
        if args.pass_pipeline:
            steps.append(args.pass_pipeline)
        dispatch = args.dispatch or _names_dispatch_pass(steps)
        new_context = _iree_context if dispatch else new_torch_context
        if steps:  # unknown pass names fail once, before any input is read
            check_order(steps)
            build_pass_manager(new_context(), steps)
        source = "<stdin>" if args.input == "-" else args.input
        if args.input == "-":
            raw = sys.stdin.buffer.read()
        else:
            path = Path(args.input)
            if not path.is_file():
                raise XGenError(f"{path}: no such file")
            raw = path.read_bytes()
        data = decode_mlir_input(raw, source)
        chunks: list[str | bytes] = (
            list(split_chunks(data, args.split_input_file)) if isinstance(data, str) else [data]
        )
        crashed = _precheck(raw, args.input, source, chunks, dispatch, args.split_input_file)
    except XGenError as e:
        print(f"xgen-opt: error: {e}", file=sys.stderr)
        return 1
    ok, outputs = True, []
    for i, chunk in enumerate(chunks):
        try:
            if i in crashed:
                raise XGenError(crashed[i])
            module = parse_mlir(chunk, source, new_context())
            if steps:
                run_steps(
                    module,
                    steps,
                    what="xgen-opt",
                    dump_dir=args.dump_ir,
                    keep_temps=args.keep_temps or None,
                )
            outputs.append(module)
        except XGenError as e:
            print(relabel_source(str(e), source), file=sys.stderr)
            ok = False
    _write(outputs, args)
    return 0 if ok else 1


def _precheck(
    raw: bytes, name: str, source: str, chunks: list[str | bytes], dispatch: bool, split: bool
) -> dict[int, str]:
    """Untrusted input checks: nesting depth per chunk, then a parse in a child process.
    Returns {chunk index: error} for the chunks that must not be parsed here."""
    bad: dict[int, str] = {}
    for i, chunk in enumerate(chunks):
        if isinstance(chunk, str):
            try:
                check_nesting(chunk, source)
            except XGenError as e:
                bad[i] = str(e)
    if len(bad) == len(chunks):
        return bad
    binding = "iree" if dispatch else "torch"
    if name != "-":
        return {**precheck_parse(name, source, binding=binding, split=split), **bad}
    fd, tmp = tempfile.mkstemp(prefix="xgen-opt-stdin-", suffix=".mlir")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        return {**precheck_parse(tmp, source, binding=binding, split=split), **bad}
    finally:
        os.unlink(tmp)


def _names_dispatch_pass(steps: list[str]) -> bool:
    names = [step_name(s) for step in steps for s in split_pipeline(step)]
    return any(n is not None and get_pass(n).phase == DISPATCH for n in names)


def _iree_context() -> Any:
    return iree_binding().ir.Context()


def _write(modules: list[Any], args: argparse.Namespace) -> None:
    if args.emit_bytecode:
        if len(modules) != 1:
            raise SystemExit("xgen-opt: --emit-bytecode needs exactly one module")
        with open(args.output, "wb") as f:
            modules[0].operation.write_bytecode(f)
        return
    text = f"\n{SPLIT_MARKER}\n".join(str(m) for m in modules)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text)


if __name__ == "__main__":
    sys.exit(main())
