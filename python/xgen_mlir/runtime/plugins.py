"""Executable plugins a module needs (BYOC offload: ``byoc/``), found and loaded.

A module whose dispatches call a kernel library records the plugins in its entry's
reflection (``xgen.plugins``: backend names). IREE registers plugins when a local driver is
created, from the process-wide ``--executable_plugin`` flag, and ``iree.runtime`` caches its
drivers; so a module that needs plugins gets a device of a fresh driver made after the flag
names them (one per driver name and plugin set, reused). The flag stays set: drivers created
later (the scheduler's executors) load the plugins too.
"""

from __future__ import annotations

import threading
from typing import Any

from ..errors import ModuleLoadError

REFLECTION_KEY = "xgen.plugins"  # comma-separated backend names

_LOCK = threading.Lock()
_FLAGGED: list[str] = []  # plugin paths given to --executable_plugin, in order
_DEVICES: dict[tuple[str, tuple[str, ...]], Any] = {}


def plugin_paths(names: str, given: dict[str, str] | None, source: str) -> list[str]:
    """The plugin file for each backend in ``names`` (``given[name]``, else built or found
    in the kernel cache); a ModuleLoadError naming what is missing and how to get it."""
    from ..byoc import backend_named

    paths = []
    for name in [n for n in names.split(",") if n]:
        if given and name in given:
            paths.append(str(given[name]))
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
        paths.append(str(backend.plugin()))
    return paths


def device_with_plugins(driver: str, paths: list[str]) -> Any:
    """A device of driver ``driver`` whose executable loaders resolve imports with ``paths``."""
    from iree.runtime import _binding

    with _LOCK:
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
