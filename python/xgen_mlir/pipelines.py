"""Loading pipelines declared as data in the top-level ``pipelines/`` folder.

One TOML file per target: ordered steps (our passes or upstream pass strings, each with a
one-line reason) plus that target's IREE backends, flags and fallbacks. Branching logic lives
in passes, never here.

Optional tables (defaults in brackets keep the plain ``cpu.toml`` valid):

* ``[options.NAME]`` with ``default``, ``help`` and optional ``choices``: target options
  substituted into the flags and pass steps as ``${NAME}``; users override them with
  ``compile(..., target_options={...})`` / ``xgen-compile --target-option NAME=VALUE``. A flag
  that ends in ``=`` after substitution (an empty option) is dropped. The value ``auto`` is
  read off the host by the probe of that name in ``_AUTO`` (``backend/host.py``).
* ``[iree] outputs`` [``["vmfb"]``]: also ``"static-library"`` and ``"vm-c"`` (bare metal).
* ``[fusion]``: ``plan`` [false] lets xgen_mlir's fusion planner form the dispatch regions
  (``backend/fusion_stage.py``); ``delegate_contractions`` [true] leaves matmul/conv-rooted
  groups to IREE; ``plan_data_tiling`` [true] decides per contraction whether IREE data-tiles
  it (``fusion/data_tiling.py``; only when the flags ask for data tiling); ``share_pads``
  [true] lets the other readers of a padded value read the padded buffer, so no copy is
  needed (``fusion/pad_sharing.py``); ``conv_tiles`` [false] gives small-image convs
  xgen_mlir's tile sizes (``fusion/conv_tiling.py``); ``transpose_tiles`` [false] does the same
  for transposes that write a few-element dimension innermost (``fusion/transpose_tiling.py``),
  ``gemv_tiles`` [false] for one-row matmuls such as a classifier head (``fusion/gemv_tiling.py``),
  ``matmul_tiles`` [false] for plain matmuls IREE vectorizes 7 rows at a time and for 49-row
  ones it would data-tile (``fusion/matmul_tiling.py``). All but ``plan`` are read into one
  ``FusionSteps``.
* ``[runtime]``: ``devices`` [local-task, local-sync] the module runs on, ``arch`` ["host"] of
  its CPU executables (``none`` for GPU targets), ``emulator`` to run a foreign arch here.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from ._paths import pipelines_dir
from .errors import PipelineError, UnknownNameError


@dataclass(frozen=True)
class FusionSteps:
    """Which of the fusion planner's optional steps run: a pipeline's ``[fusion]`` table
    (the keys of the same names; ``data_tiling`` is ``plan_data_tiling``). The planner
    (``fusion.form_dispatch_regions``) and the backend stage (``backend/fusion_stage.py``) take
    it whole, so a new step is one field here and one line in the planner."""

    delegate_contractions: bool = True
    data_tiling: bool = True
    share_pads: bool = True
    conv_tiles: bool = False
    transpose_tiles: bool = False
    gemv_tiles: bool = False
    matmul_tiles: bool = False
    depthwise_pads: bool = False
    shared_packs: bool = False  # a backend step (backend/shared_packs.py), not a planner one

    @classmethod
    def from_table(cls, table: dict[str, object]) -> FusionSteps:
        keys = {f: f for f in cls.__dataclass_fields__} | {"data_tiling": "plan_data_tiling"}
        defaults = cls()
        return cls(**{f: bool(table.get(key, getattr(defaults, f))) for f, key in keys.items()})


@dataclass(frozen=True)
class Step:
    pass_text: str
    why: str


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


@dataclass(frozen=True)
class RuntimeSpec:
    devices: tuple[str, ...] = ("local-task", "local-sync")
    arch: str = "host"  # CPU architecture of the executables; "none" for GPU targets
    emulator: str = ""  # user-mode emulator that runs `arch` binaries on another host


_OPTION_REF = re.compile(r"\$\{(\w+)\}")


def _auto_matmul_tile_bytes() -> str:
    from .backend.host import matmul_tile_bytes

    return matmul_tile_bytes()


# Options whose value ``auto`` is measured on the host at compile time ('' = unknown: the flag
# that uses it is dropped).
_AUTO = {"matmul_tile_bytes": _auto_matmul_tile_bytes}


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
    fusion_plan: bool = False
    fusion: FusionSteps = FusionSteps()

    def with_options(self, overrides: dict[str, str] | None = None) -> Pipeline:
        """This pipeline with its ``${option}`` references resolved (defaults + overrides)."""
        known = {o.name: o for o in self.options}
        values = {o.name: o.default for o in self.options}
        for key, value in (overrides or {}).items():
            if key not in known:
                raise UnknownNameError(
                    "target option",
                    key,
                    list(known) or [f"(none: target '{self.name}' takes no options)"],
                )
            value = str(value)
            choices = known[key].choices
            if choices and value not in choices:
                raise PipelineError(
                    f"target '{self.name}': option {key}={value!r} is not one of "
                    f"{', '.join(choices)}"
                )
            values[key] = value
        for key, value in values.items():
            if value == "auto":
                if key not in _AUTO:
                    raise PipelineError(f"{self.path}: option {key} has no 'auto' probe")
                values[key] = _AUTO[key]()

        def subst(text: str) -> str:
            def one(m: re.Match[str]) -> str:
                if m.group(1) not in values:
                    raise PipelineError(f"{self.path}: flag {text!r} uses undeclared option "
                                        f"'{m.group(1)}'")  # fmt: skip
                return values[m.group(1)]

            return _OPTION_REF.sub(one, text)

        flags = tuple(f for f in (subst(f) for f in self.flags) if not f.endswith("="))
        steps = tuple(replace(s, pass_text=subst(s.pass_text)) for s in self.steps)
        arch = subst(self.runtime.arch)
        runtime = RuntimeSpec(self.runtime.devices, arch, subst(self.runtime.emulator))
        return replace(self, flags=flags, steps=steps, runtime=runtime,
                       option_values=tuple(sorted(values.items())))  # fmt: skip

    def pass_steps(self, entry: str = "main") -> list[str]:
        """The steps' pass texts; ``${option}`` references take their defaults unless
        ``with_options`` resolved them already."""
        resolved = self if self.option_values or not self.options else self.with_options()
        return [s.pass_text.replace("$entry", entry) for s in resolved.steps]

    def pass_pipeline_text(self, entry: str = "main") -> str:
        return ",".join(self.pass_steps(entry))


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
            fusion_plan=bool(data.get("fusion", {}).get("plan", False)),
            fusion=FusionSteps.from_table(data.get("fusion", {})),
        )
    except (KeyError, TypeError) as e:
        raise PipelineError(
            f"{path}: malformed pipeline, missing or wrong key {e} (each step needs 'pass' and "
            "'why'; [iree] needs 'backends')"
        ) from None


def _option(name: str, spec: object) -> TargetOption:
    if isinstance(spec, str):
        return TargetOption(name, spec)
    if not isinstance(spec, dict) or "default" not in spec:
        raise TypeError(f"options.{name} needs a 'default'")
    return TargetOption(name, str(spec["default"]), str(spec.get("help", "")),
                        tuple(str(c) for c in spec.get("choices", ())))  # fmt: skip
