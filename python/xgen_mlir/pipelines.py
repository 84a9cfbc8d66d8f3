"""Loading pipelines declared as data in the top-level ``pipelines/`` folder.

One TOML file per target: ordered steps (our passes or upstream pass strings, each with a
one-line reason) plus that target's IREE backends, flags and fallbacks. Branching logic lives
in passes, never here.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ._paths import pipelines_dir
from .errors import PipelineError, UnknownNameError


@dataclass(frozen=True)
class Step:
    pass_text: str
    why: str


@dataclass(frozen=True)
class Fallback:
    drop: tuple[str, ...]
    why: str

    def apply(self, flags: list[str]) -> list[str]:
        return [f for f in flags if not any(f.split("=", 1)[0] == d for d in self.drop)]


@dataclass(frozen=True)
class Pipeline:
    name: str
    description: str
    steps: tuple[Step, ...]
    backends: tuple[str, ...]
    flags: tuple[str, ...]
    fallbacks: tuple[Fallback, ...] = field(default=())
    path: Path | None = None

    def pass_steps(self, entry: str = "main") -> list[str]:
        return [s.pass_text.replace("$entry", entry) for s in self.steps]

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
            Fallback(tuple(fb["drop"]), fb["why"]) for fb in iree.get("fallbacks", [])
        )
        return Pipeline(
            name=data["name"],
            description=data.get("description", ""),
            steps=steps,
            backends=tuple(iree["backends"]),
            flags=tuple(iree.get("flags", [])),
            fallbacks=fallbacks,
            path=path,
        )
    except (KeyError, TypeError) as e:
        raise PipelineError(
            f"{path}: malformed pipeline, missing or wrong key {e} (each step needs 'pass' and "
            "'why'; [iree] needs 'backends')"
        ) from None
