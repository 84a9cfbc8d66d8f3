"""The registry of xgen_mlir's named passes and the pass-manager builder.

A pass is either a *Python pass* (a function over the module, run through
``PassManager.add(callable)``) or a *pattern pass* (a set of Python rewrite patterns applied
greedily). Both are registered here under an ``xgen-`` name and can be mixed freely with any
upstream MLIR / torch-mlir pass string in a pipeline. Options are dataclass fields, parsed from
``xgen-name{key=value ...}`` the way MLIR parses pass options.

Passes belong to one of two phases, each with its own MLIR binding:

- ``graph`` passes rewrite linalg-on-tensors in torch-mlir's context (a pipeline's ``[[steps]]``);
- ``dispatch`` passes run inside IREE's compile, on IREE's IR, between the phase where IREE
  stops and where it resumes (``[[dispatch.steps]]``; ``backend/dispatch_stage.py``). They get a
  ``DispatchState`` as a third argument: what earlier dispatch passes decided (the fusion plan)
  and the IREE flags the resumed compile needs.

A pass may state its ordering rules: ``requires`` (passes that must run before it) and
``after`` (passes that, when present, must run before it). ``check_order`` enforces them.
"""

from __future__ import annotations

import dataclasses
import os
import re
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .._mlir import binding_of, ir, rewrite
from ..errors import PipelineError, UnknownNameError

GRAPH, DISPATCH = "graph", "dispatch"

# A Python pass, fn(module_op, options) (a dispatch pass: fn(module_op, options, state)), may
# return what it rewrote ({what: count}); the runner reports it per pass.
PassFn = Callable[..., Mapping[str, int] | None]
PassFnT = TypeVar("PassFnT", bound=PassFn)
PatternFn = Callable[["rewrite.RewritePatternSet", Any], None]


class PassFailure(Exception):
    """Raised inside a Python pass to fail the pipeline with a message."""


@dataclass
class DispatchState:
    """What dispatch passes share during one run of a pipeline's dispatch steps.

    ``iree_flags``: the flags IREE compiles with (read by passes that only make sense with
    one, e.g. data-tiling hints); ``add_flags``/``drop_flags``: what the passes ask the resumed
    compile to add or drop; ``plans``: the fusion plan per function (``fusion.FusionPlan``, set
    by ``xgen-plan-fusion`` and read and extended by the steps after it); ``records``: other
    per-pass results for the report; ``tuning``: the tuned configs ``xgen-apply-tuning`` gives
    (from ``compile()``'s tuning database)."""

    iree_flags: tuple[str, ...] = ()
    add_flags: list[str] = field(default_factory=list)
    drop_flags: list[str] = field(default_factory=list)
    plans: dict[str, Any] = field(default_factory=dict)
    records: dict[str, Any] = field(default_factory=dict)
    tuning: Any = None  # fusion.tunable.TuningRequest: configs to apply, tunables to collect

    def resume_flags(self, flags: list[str]) -> list[str]:
        kept = [f for f in flags if f not in self.drop_flags]
        return kept + [f for f in self.add_flags if f not in kept]


@dataclass(frozen=True)
class PassInfo:
    name: str
    summary: str
    kind: str  # "python" or "patterns"
    fn: PassFn  # a PatternFn for a pattern pass
    options: type | None = None
    phase: str = GRAPH
    requires: tuple[str, ...] = ()  # passes that must run before this one
    after: tuple[str, ...] = ()  # passes that, where present, must run before this one
    iree_flags: tuple[str, ...] = ()  # dispatch passes: IREE resumes with these flags
    only_with_flags: tuple[str, ...] = ()  # dispatch passes: run only when IREE has these
    # dispatch passes: why the step does not apply to this module (read from the state the
    # steps before it left), or None when it does; a step that does not apply is skipped
    only_if: Callable[[DispatchState], str | None] | None = None

    def parse_options(self, text: str) -> Any:
        """Build the options dataclass from 'k=v k2=v2' text (MLIR pass-option syntax)."""
        if self.options is None:
            if text.strip():
                raise PipelineError(f"pass '{self.name}' takes no options (got '{text}')")
            return None
        fields = {f.name: f for f in dataclasses.fields(self.options)}
        values: dict[str, Any] = {}
        for item in text.split():
            key, _, raw = item.partition("=")
            key = key.replace("-", "_")
            if key not in fields:
                raise PipelineError(
                    f"pass '{self.name}' has no option '{key}'; options: {', '.join(fields)}"
                )
            values[key] = _convert(raw, fields[key].type, f"{self.name}{{{key}}}")
        return self.options(**values)


_REGISTRY: dict[str, PassInfo] = {}


def _convert(raw: str, typ: Any, where: str) -> Any:
    typ = typ if isinstance(typ, str) else getattr(typ, "__name__", str(typ))
    try:
        if typ == "bool":
            if raw.lower() not in ("true", "false", "1", "0"):
                raise ValueError(raw)
            return raw.lower() in ("true", "1")
        if typ == "int":
            return int(raw)
        if typ == "float":
            return float(raw)
    except ValueError:
        raise PipelineError(f"bad value '{raw}' for option {where} (expected {typ})") from None
    return raw


def _register(info: PassInfo) -> None:
    if not info.name.startswith("xgen-"):
        raise ValueError(f"xgen_mlir pass names start with 'xgen-': {info.name}")
    if info.name in _REGISTRY:
        raise ValueError(f"pass '{info.name}' is registered twice")
    _REGISTRY[info.name] = info


def register_pass(
    name: str, summary: str, options: type | None = None, **rules: Any
) -> Callable[[PassFnT], PassFnT]:
    """Decorator: register ``fn(module_op, options)`` as a Python pass (``phase="dispatch"``:
    ``fn(module_op, options, state)``). ``rules``: ``phase``, ``requires``, ``after``,
    ``iree_flags``, ``only_with_flags``, ``only_if`` (``PassInfo``)."""

    def deco(fn: PassFnT) -> PassFnT:
        _register(PassInfo(name, summary, "python", fn, options, **rules))
        return fn

    return deco


def register_patterns(
    name: str, summary: str, options: type | None = None
) -> Callable[[PatternFn], PatternFn]:
    """Decorator: register ``fn(pattern_set, options)`` that adds rewrite patterns."""

    def deco(fn: PatternFn) -> PatternFn:
        _register(PassInfo(name, summary, "patterns", fn, options))
        return fn

    return deco


def registered_passes() -> dict[str, PassInfo]:
    from . import builtin  # noqa: F401  (importing registers the built-in passes)

    return dict(_REGISTRY)


def get_pass(name: str) -> PassInfo:
    passes = registered_passes()
    if name not in passes:
        raise UnknownNameError("pass", name, list(passes))
    return passes[name]


_STEP = re.compile(r"^\s*(xgen-[\w-]+)\s*(?:\{(.*)\})?\s*$", re.S)


def split_pipeline(text: str) -> list[str]:
    """Split 'a,b{x=1},func.func(c,d)' at top-level commas."""
    steps, depth, cur = [], 0, ""
    for ch in text:
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
        if ch == "," and depth == 0:
            steps.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        steps.append(cur.strip())
    return steps


def step_name(step: str) -> str | None:
    """The xgen pass a step names (None for an upstream pass string)."""
    m = _STEP.match(step)
    return m.group(1) if m else None


def check_order(steps: list[str]) -> None:
    """Enforce the passes' ordering rules over a whole pipeline (``requires``, ``after``)."""
    names = [step_name(s) for sub in steps for s in split_pipeline(sub)]
    problems = []
    for i, name in enumerate(names):
        if name is None:
            continue
        info = get_pass(name)
        for need in info.requires:
            if need not in names[:i]:
                problems.append(f"{name} needs {need} earlier in the pipeline")
        for before in info.after:
            if before in names[i + 1 :]:
                problems.append(f"{name} must run after {before}, not before it")
    if problems:
        raise PipelineError("pass order: " + "; ".join(problems))


def phase_of(ctx: Any) -> str:
    """The phase whose IR a context holds: IREE's binding -> dispatch, torch-mlir's -> graph."""
    return DISPATCH if binding_of(ctx).name == "iree" else GRAPH


def _wrap_python(
    info: PassInfo, opts: Any, state: DispatchState | None
) -> Callable[[ir.Operation, Any], None]:
    args = (opts, state) if info.phase == DISPATCH else (opts,)

    def run(op: ir.Operation, pass_: Any) -> None:
        try:
            with op.context:
                done = info.fn(op, *args)
            if isinstance(done, Mapping) and any(done.values()):
                _STATS.append((info.name, {str(k): int(v) for k, v in done.items() if v}))
        except PassFailure as e:
            _FAILURES.append(f"{info.name}: {e}")
            pass_.signal_pass_failure()
        except Exception as e:  # a bug in the pass: a clear failure with a reproducer, not a
            # traceback from inside MLIR's pass manager
            if os.environ.get("XGEN_PASS_TRACEBACKS"):  # for whoever debugs a pass
                traceback.print_exc()
            _FAILURES.append(f"{info.name}: internal error: {type(e).__name__}: {e}")
            pass_.signal_pass_failure()

    return run


def _wrap_patterns(
    info: PassInfo, opts: Any, state: DispatchState | None = None
) -> Callable[[ir.Operation, Any], None]:
    def run(op: ir.Operation, pass_: Any) -> None:
        with op.context:
            patterns = rewrite.RewritePatternSet()
            info.fn(patterns, opts)
            rewrite.apply_patterns_and_fold_greedily(op, patterns.freeze())

    return run


_FAILURES: list[str] = []  # messages of Python passes that failed during the last run
_STATS: list[tuple[str, dict[str, int]]] = []  # what Python passes rewrote, in run order


def add_step(pm: Any, step: str, phase: str = GRAPH, state: DispatchState | None = None) -> None:
    """Append one pipeline step (ours or upstream) to ``pm``, a pass manager of ``phase``'s
    binding."""
    m = _STEP.match(step)
    if m is None:
        try:
            pm.add(step)
        except ValueError as e:
            known = ", ".join(sorted(registered_passes()))
            raise PipelineError(
                f"cannot parse pipeline step '{step}': {e}\n(xgen passes: {known}; "
                "anything else must be an upstream MLIR/torch-mlir pass)"
            ) from None
        return
    info = get_pass(m.group(1))
    if info.phase != phase:
        where = {
            GRAPH: "torch-mlir's linalg IR (a pipeline's [[steps]])",
            DISPATCH: "IREE's IR inside its compile (a pipeline's [[dispatch.steps]])",
        }
        raise PipelineError(
            f"pass '{info.name}' is a {info.phase} pass: it runs on {where[info.phase]}, not "
            f"on {where[phase].split(' (')[0]}"
        )
    opts = info.parse_options(m.group(2) or "")
    wrap = _wrap_python if info.kind == "python" else _wrap_patterns
    pm.add(wrap(info, opts, state), name=info.name, argument=info.name, description=info.summary)


def build_pass_manager(ctx: Any, steps: list[str], state: DispatchState | None = None) -> Any:
    """A pass manager over ``steps`` in ``ctx``'s binding (torch-mlir's: graph passes;
    IREE's: dispatch passes, which share ``state``)."""
    phase = phase_of(ctx)
    pm = binding_of(ctx).passmanager.PassManager("builtin.module", ctx)
    state = state if state is not None or phase == GRAPH else DispatchState()
    for step in steps:
        for sub in split_pipeline(step):
            add_step(pm, sub, phase, state)
    return pm


def take_failures() -> list[str]:
    msgs = list(_FAILURES)
    _FAILURES.clear()
    return msgs


def take_stats() -> dict[str, dict[str, int]]:
    """What each Python pass reported rewriting since the last call, summed per pass."""
    out: dict[str, dict[str, int]] = {}
    for name, counts in _STATS:
        merged = out.setdefault(name, {})
        for k, v in counts.items():
            merged[k] = merged.get(k, 0) + v
    _STATS.clear()
    return out
