"""Where the declarative parts of the project (pipelines/, dialects/) live.

In a source checkout (editable install) they are top-level folders of the repository; a
wheel carries copies under ``xgen_mlir/_data/``.
"""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def _find(name: str) -> Path:
    for candidate in (_PKG / "_data" / name, _PKG.parents[1] / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"xgen_mlir installation is missing its '{name}/' folder")


def pipelines_dir() -> Path:
    return _find("pipelines")


def dialects_dir() -> Path:
    return _find("dialects")


def repo_root() -> Path:
    return _PKG.parents[1]
