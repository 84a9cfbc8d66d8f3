"""The registry of xgen_mlir's named passes and the pass-manager builder.

A pass is either a *Python pass* (a function over the module, run through
``PassManager.add(callable)``) or a *pattern pass* (a set of Python rewrite patterns applied
greedily). Both are registered here under an ``xgen-`` name and can be mixed freely with any
upstream MLIR / torch-mlir pass string in a pipeline. Options are dataclass fields, parsed from
``xgen-name{key=value ...}`` the way MLIR parses pass options.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._mlir import ir, passmanager, rewrite
from ..errors import PipelineError, UnknownNameError

# A Python pass may return what it rewrote ({what: count}); the runner reports it per pass.
PassFn = Callable[[ir.Operation, Any], Mapping[str, int] | None]
PatternFn = Callable[["rewrite.RewritePatternSet", Any], None]


class PassFailure(Exception):
    """Raised inside a Python pass to fail the pipeline with a message."""


@dataclass(frozen=True)
class PassInfo:
    name: str
    summary: str
    kind: str  # "python" or "patterns"
    fn: Callable[..., None]
    options: type | None = None

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
    name: str, summary: str, options: type | None = None
) -> Callable[[PassFn], PassFn]:
    """Decorator: register ``fn(module_op, options)`` as a Python pass."""

    def deco(fn: PassFn) -> PassFn:
        _register(PassInfo(name, summary, "python", fn, options))
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


def _wrap_python(info: PassInfo, opts: Any) -> Callable[[ir.Operation, Any], None]:
    def run(op: ir.Operation, pass_: Any) -> None:
        try:
            with op.context:
                done = info.fn(op, opts)
            if isinstance(done, Mapping) and any(done.values()):
                _STATS.append((info.name, {str(k): int(v) for k, v in done.items() if v}))
        except PassFailure as e:
            _FAILURES.append(f"{info.name}: {e}")
            pass_.signal_pass_failure()

    return run


def _wrap_patterns(info: PassInfo, opts: Any) -> Callable[[ir.Operation, Any], None]:
    def run(op: ir.Operation, pass_: Any) -> None:
        with op.context:
            patterns = rewrite.RewritePatternSet()
            info.fn(patterns, opts)
            rewrite.apply_patterns_and_fold_greedily(op, patterns.freeze())

    return run


_FAILURES: list[str] = []  # messages of Python passes that failed during the last run
_STATS: list[tuple[str, dict[str, int]]] = []  # what Python passes rewrote, in run order


def add_step(pm: passmanager.PassManager, step: str) -> None:
    """Append one pipeline step (ours or upstream) to ``pm``."""
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
    opts = info.parse_options(m.group(2) or "")
    wrap = _wrap_python if info.kind == "python" else _wrap_patterns
    pm.add(wrap(info, opts), name=info.name, argument=info.name, description=info.summary)


def build_pass_manager(ctx: ir.Context, steps: list[str]) -> passmanager.PassManager:
    pm = passmanager.PassManager("builtin.module", ctx)
    for step in steps:
        for sub in split_pipeline(step):
            add_step(pm, sub)
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
