"""Loading pipelines declared as data in the top-level ``pipelines/`` folder.

One TOML file per target: ordered steps (our passes or upstream pass strings, each with a
one-line reason) plus that target's IREE backends, flags and fallbacks. Branching logic lives
in passes, never here.

Optional tables (defaults in brackets keep the plain ``cpu.toml`` valid):

* ``[options.NAME]`` with ``default``, ``help`` and optional ``choices``: target options
  substituted into the flags and pass steps as ``${NAME}`` (``string.Template``); users override
  them with ``compile(..., target_options={...})`` / ``xgen-compile --target-option NAME=VALUE``.
  Values are checked before they reach any pipeline text (a plain word: letters, digits and
  ``. , + - _``). A flag that ends in ``=`` after substitution (an empty option) is dropped.
  The value ``auto`` is computed from the target facts by the rule of that name in ``_AUTO``.
  ``[options.NAME.flags]`` maps a value to IREE flags that value adds (after ``[iree] flags``),
  and ``[options.NAME.needs]`` a value to LLVM CPU features of which the target must have one
  (e.g. ``precision = "bf16"`` needs ``avx512bf16`` or ``amx-bf16``); ``compile()`` checks
  them against the resolved target and falls back to the default value with a warning.
* ``[target]``: facts of the machine the module runs on (``target.TargetFacts``: vector_bits,
  l2_bytes, threads), each a number or ``"host"`` (read off the compiling machine: for targets
  that are the host). Steps and flags use them as ``${vector_bits}`` etc. ``target_options``
  may state a fact by its name (``{"vector_bits": "512"}``): the module is then planned for
  such a machine, whatever this one is (a cross compile, or a test of the other host type).
* ``[iree] outputs`` [``["vmfb"]``]: also ``"static-library"`` and ``"vm-c"`` (bare metal).
* ``[dispatch]``: steps run inside IREE's compile, on IREE's IR (``backend/dispatch_stage.py``).
  ``enabled`` [true] (usually ``"${fusion}"``, an option); ``[[dispatch.steps]]`` like
  ``[[steps]]``, plus ``at`` [``"global-optimization"``]: the IREE phase after which the step
  runs (IREE stops there, the steps run, IREE resumes), and ``optional`` [false]: an
  optimization IREE may reject; when the compile fails with it, it is dropped and the compile
  retried; ``required`` [false]: a step the numbers depend on (a workaround for an IREE bug):
  when it cannot run, the compile fails instead of falling back to IREE's own dispatches.
  The passes' own ordering rules (``after``/``requires`` in their registration) are
  checked when the pipeline is built.
* ``[runtime]``: ``devices`` [local-task, local-sync] the module runs on, ``arch`` ["host"] of
  its CPU executables (``none`` for GPU targets), ``emulator`` to run a foreign arch here.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from string import Template

from ._paths import pipelines_dir
from .errors import PipelineError, UnknownNameError
from .target import TargetFacts, host_fact, integer_contractions, matmul_tile_bytes

IREE_PHASES = ("global-optimization", "dispatch-creation")  # where dispatch steps may run


@dataclass(frozen=True)
class Step:
    pass_text: str
    why: str
    at: str = ""  # dispatch steps: the IREE phase they run after
    optional: bool = False  # dispatch steps: dropped (and the compile retried) when IREE fails
    required: bool = False  # dispatch steps: no fallback without it (the numbers depend on it)


@dataclass(frozen=True)
class Fallback:
    drop: tuple[str, ...]
    why: str
    add: tuple[str, ...] = ()  # flags this fallback adds (after dropping)

    def apply(self, flags: list[str]) -> list[str]:
        kept = [f for f in flags if not any(f.split("=", 1)[0] == d for d in self.drop)]
        return kept + [f for f in self.add if f not in kept]


@dataclass(frozen=True)
class TargetOption:
    name: str
    default: str
    help: str = ""
    choices: tuple[str, ...] = ()
    flags: tuple[tuple[str, tuple[str, ...]], ...] = ()  # value -> IREE flags it adds
    needs: tuple[tuple[str, tuple[str, ...]], ...] = ()  # value -> CPU features (any one)
    value: str = "plain"  # what its values may hold: "plain" or "locations" (_SAFE_LOCATIONS)


@dataclass(frozen=True)
class RuntimeSpec:
    devices: tuple[str, ...] = ("local-task", "local-sync")
    arch: str = "host"  # CPU architecture of the executables; "none" for GPU targets
    emulator: str = ""  # user-mode emulator that runs `arch` binaries on another host


# A value that can go into a flag or a pass option as one word.
_SAFE_VALUE = re.compile(r"[\w.,+-]*")
# an option declared ``value = "locations"``: source locations (file:line:col, comma separated),
# only ever passed to pass options, never to IREE's flags
_SAFE_LOCATIONS = re.compile(r"[\w.,+/:-]*")

# Options whose value ``auto`` is computed from the target facts ('' = unknown: the flag that
# uses it is dropped).
_AUTO = {"matmul_tile_bytes": matmul_tile_bytes, "integer_contractions": integer_contractions}


@dataclass(frozen=True)
class Pipeline:
    name: str
    description: str
    steps: tuple[Step, ...]
    backends: tuple[str, ...]
    flags: tuple[str, ...]
    fallbacks: tuple[Fallback, ...] = field(default=())
    path: Path | None = None
    options: tuple[TargetOption, ...] = ()
    outputs: tuple[str, ...] = ("vmfb",)
    runtime: RuntimeSpec = RuntimeSpec()
    option_values: tuple[tuple[str, str], ...] = ()  # set by with_options()
    # [target]: each fact's spec as written ("host" or a number), and the facts once resolved
    fact_specs: tuple[tuple[str, str], ...] = ()
    facts: TargetFacts = field(default_factory=TargetFacts)
    dispatch_steps: tuple[Step, ...] = ()
    dispatch_enabled: str = "true"  # "true"/"false" once resolved; may name an option

    def with_options(self, overrides: dict[str, str] | None = None) -> Pipeline:
        """This pipeline with its ``${option}`` and ``${fact}`` references resolved (defaults +
        overrides; ``host`` facts read off this machine)."""
        known = {o.name: o for o in self.options}
        values = {o.name: o.default for o in self.options}
        fact_specs = dict(self.fact_specs)
        for key, value in (overrides or {}).items():
            if key in fact_specs:  # a target fact stated for another machine (cross compile)
                if not str(value).isdigit():
                    raise PipelineError(
                        f"target '{self.name}': fact {key}={value!r} is not a whole number"
                    )
                fact_specs[key] = str(value)
                continue
            if key not in known:
                raise UnknownNameError(
                    "target option",
                    key,
                    [*known, *fact_specs] or [f"(none: target '{self.name}' takes no options)"],
                )
            value = str(value)
            if known[key].value == "locations":
                if not _SAFE_LOCATIONS.fullmatch(value):
                    raise PipelineError(
                        f"target '{self.name}': option {key}={value!r} is not a list of "
                        "source locations (file:line:col, comma separated; letters, digits "
                        "and . , + - _ / : only: it goes into pass options)"
                    )
            elif not _SAFE_VALUE.fullmatch(value):
                raise PipelineError(
                    f"target '{self.name}': option {key}={value!r} is not a plain value "
                    "(letters, digits and . , + - _ only: it goes into IREE flags and pass "
                    "options)"
                )
            choices = known[key].choices
            if choices and value not in choices:
                raise PipelineError(
                    f"target '{self.name}': option {key}={value!r} is not one of "
                    f"{', '.join(choices)}"
                )
            values[key] = value
        facts = TargetFacts(
            **{
                name: host_fact(name) if spec == "host" else int(spec)
                for name, spec in fact_specs.items()
            }
        )
        for key, value in values.items():
            if value == "auto":
                if key not in _AUTO:
                    raise PipelineError(f"{self.path}: option {key} has no 'auto' rule")
                values[key] = _AUTO[key](facts)
        mapping = {**values, **{n: str(getattr(facts, n)) for n, _ in self.fact_specs}}
        mapping["entry"] = "$entry"  # filled per compile by pass_steps()

        def subst(text: str) -> str:
            try:
                return Template(text).substitute(mapping)
            except KeyError as e:
                raise PipelineError(
                    f"{self.path}: {text!r} uses undeclared option or fact {e}"
                ) from None
            except ValueError as e:
                raise PipelineError(f"{self.path}: {text!r}: {e}") from None

        chosen = [f for o in self.options for f in dict(o.flags).get(values[o.name], ())]
        flags = tuple(f for f in (subst(f) for f in (*self.flags, *chosen)) if not f.endswith("="))
        steps = tuple(replace(s, pass_text=subst(s.pass_text)) for s in self.steps)
        dispatch = tuple(replace(s, pass_text=subst(s.pass_text)) for s in self.dispatch_steps)
        enabled = subst(self.dispatch_enabled)
        if enabled not in ("true", "false"):
            raise PipelineError(f"{self.path}: [dispatch] enabled = {enabled!r}, not true/false")
        arch = subst(self.runtime.arch)
        runtime = RuntimeSpec(self.runtime.devices, arch, subst(self.runtime.emulator))
        return replace(
            self,
            flags=flags,
            steps=steps,
            runtime=runtime,
            facts=facts,
            dispatch_steps=dispatch,
            dispatch_enabled=enabled,
            option_values=tuple(sorted(values.items())),
        )

    def option_value(self, name: str) -> str | None:
        """The resolved value of option ``name`` (None: the target has no such option)."""
        return dict(self._resolved().option_values).get(name)

    def unmet_needs(self, features: set[str]) -> list[tuple[str, str, tuple[str, ...]]]:
        """(option, value, features of which none is in ``features``) for each chosen option
        value whose ``needs`` the target's CPU features do not meet."""
        values = dict(self._resolved().option_values)
        out = []
        for o in self.options:
            need = dict(o.needs).get(values.get(o.name, o.default), ())
            if need and not set(need) & features:
                out.append((o.name, values[o.name], need))
        return out

    def _resolved(self) -> Pipeline:
        return self if self.option_values or not self.options else self.with_options()

    def pass_steps(self, entry: str = "main") -> list[str]:
        """The graph steps' pass texts; ``${option}`` references take their defaults unless
        ``with_options`` resolved them already."""
        return [Template(s.pass_text).substitute(entry=entry) for s in self._resolved().steps]

    def pass_pipeline_text(self, entry: str = "main") -> str:
        return ",".join(self.pass_steps(entry))

    def dispatch_stages(self) -> list[tuple[str, list[Step]]]:
        """The dispatch steps grouped by the IREE phase they run after, in IREE's order;
        empty when ``[dispatch] enabled`` is false."""
        resolved = self._resolved()
        if resolved.dispatch_enabled != "true":
            return []
        return [
            (phase, [s for s in resolved.dispatch_steps if s.at == phase])
            for phase in IREE_PHASES
            if any(s.at == phase for s in resolved.dispatch_steps)
        ]


def available_pipelines() -> list[str]:
    return sorted(p.stem for p in pipelines_dir().glob("*.toml"))


def load_pipeline(name_or_path: str | Path) -> Pipeline:
    """A pipeline by target name (``cpu``) or by path to a ``.toml`` file."""
    path = Path(name_or_path)
    if path.suffix != ".toml":
        path = pipelines_dir() / f"{name_or_path}.toml"
        if not path.is_file():
            raise UnknownNameError("pipeline", str(name_or_path), available_pipelines())
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise PipelineError(f"pipeline file not found: {path}") from None
    except tomllib.TOMLDecodeError as e:
        raise PipelineError(f"{path}: not valid TOML: {e}") from None
    try:
        steps = tuple(Step(s["pass"], s["why"]) for s in data["steps"])
        iree = data["iree"]
        fallbacks = tuple(
            Fallback(tuple(fb.get("drop", ())), fb["why"], tuple(fb.get("add", ())))
            for fb in iree.get("fallbacks", [])
        )
        options = tuple(_option(k, v) for k, v in data.get("options", {}).items())
        facts = tuple((k, _fact(path, k, v)) for k, v in data.get("target", {}).items())
        clash = {n for n, _ in facts} & {o.name for o in options}
        if clash:
            raise PipelineError(f"{path}: {sorted(clash)} both a target fact and an option")
        dispatch = data.get("dispatch", {})
        dispatch_steps = tuple(_dispatch_step(path, s) for s in dispatch.get("steps", []))
        rt = data.get("runtime", {})
        runtime = RuntimeSpec(
            devices=tuple(rt.get("devices", RuntimeSpec.devices)),
            arch=rt.get("arch", "host"),
            emulator=rt.get("emulator", ""),
        )
        return Pipeline(
            name=data["name"],
            description=data.get("description", ""),
            steps=steps,
            backends=tuple(iree["backends"]),
            flags=tuple(iree.get("flags", [])),
            fallbacks=fallbacks,
            path=path,
            options=options,
            outputs=tuple(iree.get("outputs", ["vmfb"])),
            runtime=runtime,
            fact_specs=facts,
            dispatch_steps=dispatch_steps,
            dispatch_enabled=str(dispatch.get("enabled", "true")).lower(),
        )
    except (KeyError, TypeError) as e:
        raise PipelineError(
            f"{path}: malformed pipeline, missing or wrong key {e} (each step needs 'pass' and "
            "'why'; [iree] needs 'backends')"
        ) from None


def _fact(path: Path, name: str, spec: object) -> str:
    if name not in TargetFacts.names():
        raise PipelineError(
            f"{path}: [target] {name} is not a target fact (known: "
            f"{', '.join(TargetFacts.names())})"
        )
    text = str(spec)
    if text != "host" and not text.isdigit():
        raise PipelineError(f"{path}: [target] {name} = {text!r}: a whole number or 'host'")
    return text


def _dispatch_step(path: Path, spec: dict[str, object]) -> Step:
    at = str(spec.get("at", IREE_PHASES[0]))
    if at not in IREE_PHASES:
        raise PipelineError(
            f"{path}: dispatch step {spec.get('pass')!r} at {at!r}: IREE phases are "
            f"{', '.join(IREE_PHASES)}"
        )
    optional, required = bool(spec.get("optional", False)), bool(spec.get("required", False))
    if optional and required:
        raise PipelineError(f"{path}: dispatch step {spec['pass']!r} is both optional and required")
    return Step(str(spec["pass"]), str(spec["why"]), at, optional, required)


def _option(name: str, spec: object) -> TargetOption:
    if isinstance(spec, str):
        return TargetOption(name, spec)
    if not isinstance(spec, dict) or "default" not in spec:
        raise TypeError(f"options.{name} needs a 'default'")
    choices = tuple(str(c) for c in spec.get("choices", ()))
    per_value = {}
    for table in ("flags", "needs"):
        entries = spec.get(table, {})
        if not isinstance(entries, dict) or not all(
            isinstance(v, list) and all(isinstance(x, str) for x in v) for v in entries.values()
        ):
            raise TypeError(f"options.{name}.{table} must map values to lists of strings")
        unknown = [k for k in entries if choices and k not in choices]
        if unknown:
            raise TypeError(f"options.{name}.{table} names values {unknown} not in its choices")
        per_value[table] = tuple((str(k), tuple(v)) for k, v in entries.items())
    value = str(spec.get("value", "plain"))
    if value not in ("plain", "locations"):
        raise TypeError(f"options.{name}.value is {value!r}, not 'plain' or 'locations'")
    if value == "locations" and (choices or per_value["flags"]):
        raise TypeError(f"options.{name}: a 'locations' value takes no choices or flags")
    return TargetOption(
        name,
        str(spec["default"]),
        str(spec.get("help", "")),
        choices,
        per_value["flags"],
        per_value["needs"],
        value,
    )
