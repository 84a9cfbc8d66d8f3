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
    if found is None:  # the wheel unpacked onto sys.path without its console scripts
        found = _in_iree_package(name)
    if found is None:
        raise XGenError(f"{name} not found; install iree-base-runtime (pip)")
    return found


def _in_iree_package(name: str) -> str | None:
    """The binary itself, inside IREE's runtime or compiler package (its console script only
    wraps it); found without importing either package."""
    import importlib.util

    for package in ("iree._runtime_libs", "iree.compiler._mlir_libs"):
        try:
            spec = importlib.util.find_spec(package)
        except ModuleNotFoundError:
            continue
        for folder in spec.submodule_search_locations or () if spec else ():
            binary = Path(folder) / name
            if binary.is_file():
                return str(binary)
    return None
