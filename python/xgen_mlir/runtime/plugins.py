"""Executable plugins a module needs (BYOC offload: ``byoc/``), found and loaded.

A module whose dispatches call a kernel library records the plugins in its entry's
reflection (``xgen.plugins``: backend names). IREE registers plugins when a local driver is
created, from the process-wide ``--executable_plugin`` flag, and ``iree.runtime`` caches its
drivers; so a module that needs plugins gets a device of a fresh driver made after the flag
names them (one per driver name and plugin set, reused). The flag stays set: drivers created
later (the scheduler's executors) load the plugins too; so every file is checked (it exists
and loads as an executable plugin) before it is flagged, since a bad one would make every
later driver fail.
"""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path
from typing import Any

from ..errors import ModuleLoadError

REFLECTION_KEY = "xgen.plugins"  # comma-separated backend names

# IREE's flags (parse_flags) are process-wide: whoever sets them and creates a driver holds
# this (the scheduler's executors too).
FLAG_LOCK = threading.Lock()
_FLAGGED: list[str] = []  # plugin paths given to --executable_plugin, in order
_DEVICES: dict[tuple[str, tuple[str, ...]], Any] = {}


def plugin_paths(names: str, given: dict[str, str] | None, source: str) -> list[str]:
    """The plugin file for each backend in ``names`` (``given[name]``, else built or found
    in the kernel cache); a ModuleLoadError naming what is missing and how to get it."""
    from ..byoc import backend_named

    paths = []
    for name in [n for n in names.split(",") if n]:
        if given and name in given:
            paths.append(checked_plugin(name, given[name], source))
            continue
        try:
            backend = backend_named(name)
        except ValueError as e:
            raise ModuleLoadError(f"{source}: needs the executable plugin of {e}") from None
        why = backend.unavailable()
        if why:
            raise ModuleLoadError(
                f"{source}: its dispatches call {name} (BYOC offload), whose IREE executable "
                f"plugin cannot be built here: this machine needs {why}; or pass the plugin "
                f"file: load(..., plugins={{'{name}': PATH}}), or load the module's bundle"
            )
        paths.append(checked_plugin(name, backend.plugin(), source))
    return paths


def runtime_library(name: str, carried: bool = False) -> str:
    """What backend ``name``'s plugin loads from the system ("" if unknown or nothing);
    ``carried``: once a bundle carries ``carried_libraries(name)`` beside it."""
    backend = _backend(name)
    return backend.runtime_library(carried=carried) if backend else ""


def carried_libraries(name: str) -> list[Path]:
    """The shared libraries backend ``name``'s plugin loads that a bundle copies beside it."""
    backend = _backend(name)
    return backend.carried_libraries() if backend else []


def _backend(name: str) -> Any:
    """The offload backend called ``name`` (None: unknown here)."""
    from ..byoc import backend_named

    try:
        return backend_named(name)
    except ValueError:
        return None


# the symbol every IREE executable plugin exports (iree/hal/local/executable_plugin.h)
QUERY_SYMBOL = "iree_hal_executable_plugin_query"


def checked_plugin(name: str, path: str | os.PathLike[str], source: str) -> str:
    """``path`` made absolute, once it is known to load here as an executable plugin: a file
    that does not, given to IREE's process-wide flag, would make every later driver fail."""
    full = os.path.abspath(os.fspath(path))
    where = f"{source}: the executable plugin for {name} (BYOC offload)"
    if not os.path.isfile(full):
        why = "is not a file" if os.path.exists(full) else "does not exist"
        raise ModuleLoadError(
            f"{where}, {full}, {why}; give the plugin's .so (a bundle carries it; "
            f"xgen_mlir builds it where g++ and oneDNN are installed)"
        )
    try:
        lib = ctypes.CDLL(full)
    except OSError as e:
        needs = runtime_library(name)
        hint = f"; it needs {needs}" if needs and needs.split(",")[0] in str(e) else ""
        raise ModuleLoadError(f"{where}, {full}, cannot be loaded: {e}{hint}") from None
    if not hasattr(lib, QUERY_SYMBOL):
        raise ModuleLoadError(
            f"{where}, {full}, is not an IREE executable plugin (no {QUERY_SYMBOL})"
        )
    return full


def device_with_plugins(driver: str, paths: list[str]) -> Any:
    """A device of driver ``driver`` whose executable loaders resolve imports with ``paths``."""
    from iree.runtime import _binding

    with FLAG_LOCK:
        for p in paths:
            if p not in _FLAGGED:
                _binding.parse_flags(f"--executable_plugin={p}")
                _FLAGGED.append(p)
        key = (driver, tuple(_FLAGGED))
        if key not in _DEVICES:
            try:
                _DEVICES[key] = _binding.create_hal_driver(driver).create_default_device()
            except Exception as e:
                raise ModuleLoadError(
                    f"cannot create device '{driver}' with executable plugins {paths}: {e}"
                ) from None
        return _DEVICES[key]
