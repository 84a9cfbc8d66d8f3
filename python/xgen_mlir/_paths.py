"""Where things live: the declarative parts of the project (pipelines/, dialects/) and IREE's
command-line tools.

In a source checkout (editable install) they are top-level folders of the repository; a
wheel carries copies under ``xgen_mlir/_data/``.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from .errors import XGenError

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


def iree_tool(name: str) -> str:
    """Path of an IREE command-line tool shipped with the Python packages."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        raise XGenError(f"{name} not found; install iree-base-runtime (pip)")
    return found
