"""Running a pipeline's steps on a module: failures come with a saved reproducer.

Before running, the input IR is snapshotted (bytecode, in memory); if any step fails, the
snapshot is written to disk and the error names the failing step and the exact ``xgen-opt``
command that reproduces it. With ``dump_dir`` the IR after every step is written for people.
"""

from __future__ import annotations

import io
import re
import shlex
import tempfile
from pathlib import Path

from .._mlir import ir
from ..diagnostics import captured_diagnostics
from ..errors import PipelineError
from .registry import build_pass_manager, split_pipeline, take_failures, take_stats

# Above this size a reproducer is written as bytecode (text of big weights is huge and slow).
_TEXT_REPRO_LIMIT = 8 << 20


def snapshot(module: ir.Module) -> bytes:
    buf = io.BytesIO()
    module.operation.write_bytecode(buf)
    return buf.getvalue()


def save_reproducer(
    data: bytes, module: ir.Module | None = None, where: Path | None = None
) -> Path:
    where = Path(where) if where else Path(tempfile.mkdtemp(prefix="xgen-repro-"))
    where.mkdir(parents=True, exist_ok=True)
    if len(data) <= _TEXT_REPRO_LIMIT:
        ctx = module.context if module is not None else ir.Context()
        path = where / "input.mlir"
        path.write_text(str(ir.Module.parse(data, ctx)))
    else:
        path = where / "input.mlirbc"
        path.write_bytes(data)
    return path


def _slug(step: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", step)[:60].strip("_")


def dump_module(module: ir.Module, path: Path) -> None:
    """Readable IR: large constants elided (the file is for eyes, not for re-parsing)."""
    with open(path, "w") as f:
        module.operation.print(large_elements_limit=16, large_resource_limit=64, file=f)


def run_steps(
    module: ir.Module,
    steps: list[str],
    *,
    what: str = "pipeline",
    dump_dir: Path | None = None,
    repro_dir: Path | None = None,
) -> dict[str, dict[str, int]]:
    """Run ``steps`` in order on ``module`` (in place); raise PipelineError on failure.
    Returns what our Python passes reported rewriting, per pass (``{pass: {what: count}}``)."""
    ctx = module.context
    flat = [s for step in steps for s in split_pipeline(step)]
    pipeline_text = ",".join(flat)
    groups = [[s] for s in flat] if dump_dir else [flat]
    input_snapshot = snapshot(module)
    take_stats()  # drop anything a failed or outside run left behind
    if dump_dir:
        Path(dump_dir).mkdir(parents=True, exist_ok=True)
        dump_module(module, Path(dump_dir) / "00-input.mlir")
    for i, group in enumerate(groups, start=1):
        pm = build_pass_manager(ctx, group)  # raises on unknown names before anything runs
        with captured_diagnostics(ctx) as diags:
            try:
                pm.run(module.operation)
                failed = None
            except (ir.MLIRError, RuntimeError) as e:
                failed = e
        py_failures = take_failures()
        if failed is not None:
            path = save_reproducer(input_snapshot, module, repro_dir)
            cmd = f"xgen-opt {shlex.quote(str(path))} --pass-pipeline={shlex.quote(pipeline_text)}"
            details = "\n".join(py_failures + diags) or str(failed)
            where = f"step '{group[0]}'" if len(group) == 1 else "one of its steps"
            raise PipelineError(
                f"{what} failed in {where}:\n{details}\ninput IR saved to {path}", cmd
            )
        if dump_dir:
            dump_module(module, Path(dump_dir) / f"{i:02d}-{_slug(group[0])}.mlir")
    return take_stats()  # summed per pass over every group
