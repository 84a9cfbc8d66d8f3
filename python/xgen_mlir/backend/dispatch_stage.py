"""Compile through IREE with a pipeline's dispatch steps: stop IREE, run the steps, resume.

A pipeline's ``[[dispatch.steps]]`` name the IREE phase they run after (``at``). For each such
phase in IREE's order, IREE compiles up to it (``--compile-to``, bytecode out), the steps run
on its IR in IREE's bindings (``passes.runner.run_steps``: upstream IREE passes and xgen
dispatch passes alike), and IREE resumes from it (``--compile-from``). The passes share one
``DispatchState``: the fusion plan, and the flags they ask the resumed compile to add or drop.

A step marked ``optional`` is an optimization IREE may reject: when IREE fails after the
steps, the latest optional step is dropped and the compile retried from the first stop (its
IR is kept), until none is left; once IREE takes the module, each step dropped before the last
one is tried again, and kept if IREE takes it back. A step whose pass needs IREE flags the
compile lacks (``only_with_flags``) is skipped.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._mlir import iree_binding
from .._paths import iree_tool
from ..diagnostics import warn_fallback
from ..errors import PipelineError
from ..passes.registry import DispatchState, get_pass, step_name
from ..passes.runner import run_steps
from ..pipelines import Step


@dataclass
class StagedCompile:
    vmfb: bytes
    plans: list[Any]  # fusion.FusionPlan per function, detached from the IR
    seconds: dict[str, float]
    records: dict[str, Any] = field(default_factory=dict)  # DispatchState.records
    dropped: dict[str, str] = field(default_factory=dict)  # optional step -> why it was dropped


class DispatchStageError(Exception):
    """One of the staged compile's steps failed (the caller falls back to plain IREE).

    ``stage``: "before-steps" when IREE failed before any step ran (the flags are at fault,
    not the steps), "steps" when a step failed or left IR that does not verify, "after-steps"
    when IREE rejected what the steps made."""

    def __init__(self, message: str, stage: str = "after-steps") -> None:
        super().__init__(message)
        self.stage = stage


def error_lines(stderr: str, limit: int = 8) -> list[str]:
    """IREE's ``error:`` lines, or when it printed none its other lines, notes left out: the
    real error, not the warnings printed before it (IREE's f64 demotion warning is 6 lines)."""
    lines = [ln for ln in stderr.splitlines() if ln.strip() and "note:" not in ln]
    return ([ln for ln in lines if "error:" in ln] or lines)[:limit]


def _run(cmd: list[str], what: str, stage: str = "after-steps") -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise DispatchStageError(f"{what} failed:\n" + "\n".join(error_lines(proc.stderr)), stage)


def _info(step: Step) -> Any:
    name = step_name(step.pass_text)
    return get_pass(name) if name else None


def _applies(step: Step, flags: list[str], state: DispatchState) -> bool:
    """Whether ``step`` runs: IREE has the flags it needs, and its ``only_if`` (given the
    state the steps before it left) finds nothing against it; that reason goes to
    ``state.records["skipped"]``."""
    info = _info(step)
    if info is None:
        return True
    if not all(f in flags for f in info.only_with_flags):
        return False
    if info.only_if is not None:
        why = info.only_if(state)
        if why is not None:
            state.records.setdefault("skipped", {})[info.name] = why
            return False
    return True


def _pass_flags(steps: list[Step]) -> list[str]:
    return [f for s in steps if (info := _info(s)) is not None for f in info.iree_flags]


def compile_with_dispatch_steps(
    src: Path,
    backends: list[str],
    flags: list[str],
    work: Path,
    stages: list[tuple[str, list[Step]]],
    keep_temps: bool | None = None,
    tuning: Any = None,
) -> StagedCompile:
    """``stages``: ``Pipeline.dispatch_stages()``, (IREE phase, steps) in IREE's order.
    ``keep_temps``: a failing step keeps its input IR as a reproducer (``run_steps``)."""
    seconds: dict[str, float] = {}
    target = [f"--iree-hal-target-backends={b}" for b in backends]
    first_phase = stages[0][0]
    first = work / f"at-{first_phase}.mlirbc"
    t = time.perf_counter()
    _run(
        [
            iree_tool("iree-compile"),
            str(src),
            *target,
            *flags,
            f"--compile-to={first_phase}",
            "--emit-mlir-bytecode",
            "-o",
            str(first),
        ],
        f"IREE up to {first_phase}",
        "before-steps",
    )
    seconds[f"iree_to_{first_phase}"] = time.perf_counter() - t
    optional = [s for _, steps in stages for s in steps if s.optional]
    dropped: dict[str, str] = {}
    try:
        while True:
            try:
                staged = _attempt(
                    first, target, flags, work, stages, set(dropped), seconds, keep_temps, tuning
                )
            except DispatchStageError as e:
                left = [s for s in optional if s.pass_text not in dropped]
                if e.stage != "after-steps" or not left:
                    raise
                dropped[left[-1].pass_text] = str(e).splitlines()[0][:300]
                continue
            # the last drop made IREE take the module; the ones before it may be innocent
            for step in list(dropped)[:-1]:
                trial = {k: v for k, v in dropped.items() if k != step}
                try:
                    staged = _attempt(
                        first, target, flags, work, stages, set(trial), seconds, keep_temps, tuning
                    )
                except DispatchStageError:
                    continue
                dropped = trial
            staged.dropped = dict(dropped)
            for step, why in dropped.items():
                warn_fallback(
                    f"optional dispatch step '{step}' dropped (IREE rejected the module "
                    f"with it: {why}); the compile went on without it"
                )
            return staged
    finally:
        for path in work.glob("at-*.mlirbc"):
            path.unlink(missing_ok=True)  # each holds the weights


def _attempt(
    first: Path,
    target: list[str],
    flags: list[str],
    work: Path,
    stages: list[tuple[str, list[Step]]],
    skipped: set[str],
    seconds: dict[str, float],
    keep_temps: bool | None,
    tuning: Any = None,
) -> StagedCompile:
    ir = iree_binding().ir
    compile_tool = iree_tool("iree-compile")
    state = DispatchState(iree_flags=tuple(flags), tuning=tuning)
    run_flags, pass_flags = list(flags), []
    current, phase_now = first, stages[0][0]
    for k, (phase, steps) in enumerate(stages):
        active = [s for s in steps if s.pass_text not in skipped and _applies(s, run_flags, state)]
        if k > 0:
            if not active:
                continue
            pass_flags += [f for f in _pass_flags(active) if f not in pass_flags]
            nxt = work / f"at-{phase}.mlirbc"
            t = time.perf_counter()
            _run(
                [
                    compile_tool,
                    str(current),
                    *target,
                    *run_flags,
                    *pass_flags,
                    f"--compile-from={phase_now}",
                    f"--compile-to={phase}",
                    "--emit-mlir-bytecode",
                    "-o",
                    str(nxt),
                ],
                f"IREE from {phase_now} to {phase}",
            )
            seconds[f"iree_to_{phase}"] = seconds.get(f"iree_to_{phase}", 0.0) + (
                time.perf_counter() - t
            )
            current, phase_now = nxt, phase
        t = time.perf_counter()
        module = ir.Module.parse(current.read_bytes(), ir.Context())
        try:
            run_steps(
                module,
                [s.pass_text for s in active],
                what=f"dispatch steps at {phase}",
                state=state,
                keep_temps=keep_temps,
            )
            module.operation.verify()
        except PipelineError as e:  # short, but with the reproducer when one was kept
            text = str(e)
            if len(text) > 2000:
                tail = f"\n...\nreproduce with:\n  {e.reproducer}" if e.reproducer else ""
                text = text[: 2000 - len(tail)] + tail
            raise DispatchStageError(text, "steps") from None
        except ir.MLIRError as e:  # a step's bug: never hand IREE broken IR
            raise DispatchStageError(
                f"the steps left IR that does not verify: {str(e)[:500]}", "steps"
            ) from None
        current = work / f"at-{phase}.steps.mlirbc"
        with open(current, "wb") as f:
            module.operation.write_bytecode(f)
        del module
        run_flags = state.resume_flags(run_flags)
        seconds["dispatch_steps"] = seconds.get("dispatch_steps", 0.0) + time.perf_counter() - t
    out = work / "staged.vmfb"
    t = time.perf_counter()
    try:
        _run(
            [
                compile_tool,
                str(current),
                *target,
                *run_flags,
                *pass_flags,
                f"--compile-from={phase_now}",
                "-o",
                str(out),
            ],
            f"IREE from {phase_now}",
        )
        vmfb = out.read_bytes()
    finally:
        out.unlink(missing_ok=True)
        seconds["iree_codegen"] = seconds.get("iree_codegen", 0.0) + time.perf_counter() - t
    plans = [p.detach() for p in state.plans.values()]
    return StagedCompile(vmfb, plans, seconds, state.records)
