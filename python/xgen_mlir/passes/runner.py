"""Running a pipeline's steps on a module: failures name the step, and can keep a reproducer.

The error always names the failing step. When the user asks to keep temporaries
(``keep_temps``, ``XGEN_KEEP_TEMPS=1``), the input IR is snapshotted before running (bytecode,
in memory) and, on failure, written to disk; the error then gives the exact ``xgen-opt``
command that reproduces it. Otherwise nothing is written and the error says how to keep it (a
reproducer folder per failure would pile up in the temp directory). With ``dump_dir`` the IR
after every step is written for people.
"""

from __future__ import annotations

import io
import re
import shlex
import tempfile
from pathlib import Path
from typing import Any

from .._mlir import binding_of
from ..diagnostics import captured_diagnostics
from ..errors import PipelineError
from ..fileio import KEEP_TEMPS_HOW
from ..fileio import keep_temps as temps_kept
from .registry import (
    DISPATCH,
    DispatchState,
    build_pass_manager,
    check_order,
    phase_of,
    split_pipeline,
    take_failures,
    take_stats,
)

# Above this size a reproducer is written as bytecode (text of big weights is huge and slow).
_TEXT_REPRO_LIMIT = 8 << 20


def snapshot(module: Any) -> bytes:
    buf = io.BytesIO()
    module.operation.write_bytecode(buf)
    return buf.getvalue()


def save_reproducer(data: bytes, module: Any = None, where: Path | None = None) -> Path:
    where = Path(where) if where else Path(tempfile.mkdtemp(prefix="xgen-repro-"))
    where.mkdir(parents=True, exist_ok=True)
    if len(data) <= _TEXT_REPRO_LIMIT:
        if module is not None:
            ir, ctx = binding_of(module).ir, module.context
        else:  # a context that knows every dialect our IR holds (tm_tensor, torch_c, ...)
            from .._mlir import ir
            from ..frontend.mlir_import import new_torch_context

            ctx = new_torch_context()
        path = where / "input.mlir"
        path.write_text(str(ir.Module.parse(data, ctx)))
    else:
        path = where / "input.mlirbc"
        path.write_bytes(data)
    return path


def _slug(step: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", step)[:60].strip("_")


def dump_module(module: Any, path: Path) -> None:
    """Readable IR: large constants elided (the file is for eyes, not for re-parsing)."""
    with open(path, "w") as f:
        module.operation.print(large_elements_limit=16, large_resource_limit=64, file=f)


def run_steps(
    module: Any,
    steps: list[str],
    *,
    what: str = "pipeline",
    dump_dir: Path | None = None,
    repro_dir: Path | None = None,
    state: DispatchState | None = None,
    keep_temps: bool | None = None,
) -> dict[str, dict[str, int]]:
    """Run ``steps`` in order on ``module`` (in place); raise PipelineError on failure.
    The module's binding decides the phase: torch-mlir's runs graph passes, IREE's dispatch
    passes, which share ``state``. A reproducer is written on failure when ``keep_temps`` (None:
    ``XGEN_KEEP_TEMPS``) or a ``repro_dir`` asks for it. Returns what our Python passes reported
    rewriting, per pass (``{pass: {what: count}}``)."""
    ctx = module.context
    ir = binding_of(module).ir
    phase = phase_of(ctx)
    if phase == DISPATCH and state is None:
        state = DispatchState()
    flat = [s for step in steps for s in split_pipeline(step)]
    check_order(flat)
    pipeline_text = ",".join(flat)
    groups = [[s] for s in flat] if dump_dir else [flat]
    keep = repro_dir is not None or temps_kept(keep_temps)
    input_snapshot = snapshot(module) if keep else b""
    take_stats()  # drop anything a failed or outside run left behind
    if dump_dir:
        Path(dump_dir).mkdir(parents=True, exist_ok=True)
        dump_module(module, Path(dump_dir) / "00-input.mlir")
    for i, group in enumerate(groups, start=1):
        pm = build_pass_manager(ctx, group, state)  # raises on unknown names first
        with captured_diagnostics(ctx) as diags:
            try:
                pm.run(module.operation)
                failed = None
            except (ir.MLIRError, RuntimeError) as e:
                failed = e
        py_failures = take_failures()
        if failed is not None:
            details = "\n".join(py_failures + diags) or str(failed)
            where = f"step '{group[0]}'" if len(group) == 1 else "one of its steps"
            message = f"{what} failed in {where}:\n{details}"
            if not keep:
                raise PipelineError(
                    f"{message}\nno reproducer was saved; to save one, {KEEP_TEMPS_HOW}"
                )
            path = save_reproducer(input_snapshot, module, repro_dir)
            cmd = f"xgen-opt {shlex.quote(str(path))} --pass-pipeline={shlex.quote(pipeline_text)}"
            cmd += " --dispatch" if phase == DISPATCH else ""
            raise PipelineError(f"{message}\ninput IR kept at {path}", cmd, path.parent)
        if dump_dir:
            dump_module(module, Path(dump_dir) / f"{i:02d}-{_slug(group[0])}.mlir")
    return take_stats()  # summed per pass over every group
