"""MLIR diagnostics for people: collected instead of printed, locations as ``file:line:col``.

Every layer reports errors with these (frontends, passes, the fusion stage), so they live
below all of them. They work on a context or location from either MLIR binding (torch-mlir's
or IREE's): both expose the same diagnostic API.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .errors import XGenError


@contextmanager
def captured_diagnostics(ctx: Any) -> Iterator[list[str]]:
    """Collect MLIR diagnostics as strings instead of letting them print to stderr."""
    messages: list[str] = []

    def handler(d: Any) -> bool:
        messages.append(f"{d.location}: {d.message}")
        return True

    h = ctx.attach_diagnostic_handler(handler)
    try:
        yield messages
    finally:
        h.detach()


def format_location(loc: Any) -> str:
    """'file:line:col' (or the fused/named location's text) for a human."""
    text = str(loc)
    if text.startswith("loc(") and text.endswith(")"):
        text = text[4:-1]
    return text.replace('"', "")


_FRAME = re.compile(r"([^\s()\"]+):(\d+):(\d+)")


def location_text(loc: Any) -> str:
    """A location for a human, its call chain as "inner at outer" ('file:line:col' for a
    plain one): torch-mlir's locations are call sites, the library's line (conv.py) at the
    model's line that called it."""
    text = format_location(loc)
    if text.startswith("callsite("):
        return " at ".join(f"{m[1]}:{m[2]}:{m[3]}" for m in _FRAME.finditer(text))
    return text


def location_matches(text: str, wanted: set[str]) -> bool:
    """Whether a location (``location_text``) names one of ``wanted``: the whole text, or any
    frame of it as 'file:line:col', where ``file`` may be given as a trailing part of the
    path ("model.py:20:0" names ".../src/model.py:20:0")."""
    if text in wanted:
        return True
    for m in _FRAME.finditer(text):
        frame = f"{m[1]}:{m[2]}:{m[3]}"
        if any(frame == w or frame.endswith("/" + w) for w in wanted):
            return True
    return False


def warn_fallback(message: str) -> None:
    """Say, once per message, that a step fell back (``errors.FallbackWarning``)."""
    from .errors import FallbackWarning

    warnings.warn(message, FallbackWarning, stacklevel=3)


# Entry (function) names a module, a manifest and run.sh can carry safely: an MLIR bare
# identifier without the characters that break its ABI declaration, a shell word or a path.
# Here, below every layer that names an entry (passes, the compiler, the runtime, bundles).
ENTRY_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.$-]*")
ENTRY_NAME_DESCRIPTION = (
    "a letter or '_', then letters, digits, '_', '.', '$' or '-' (like [A-Za-z_][A-Za-z0-9_.$-]*)"
)
MAX_ENTRY_NAME = 256


def check_entry_name(name: object) -> str:
    """Return ``name`` if it is a safe entry-function name, else raise :class:`XGenError`.

    One rule for the compiler (naming the function it emits), ``load()`` and bundles: an empty
    name, or one with ``/ ; ' " `` `` or spaces, would make invalid IR, an unreadable ABI
    declaration (so no call-time input checks) and a broken run.sh or manifest."""
    if not isinstance(name, str):
        raise XGenError(f"entry name must be a string, got {type(name).__name__}")
    if len(name) > MAX_ENTRY_NAME or not ENTRY_NAME.fullmatch(name):
        raise XGenError(f"invalid entry name {name!r}: it must be {ENTRY_NAME_DESCRIPTION}")
    return name


# Packages that only an optional extra of pyproject.toml installs are imported through this,
# inside the function that needs them: a plain `pip install xgen-mlir` then imports every
# module, and using such a function says which extra to install.
def optional_import(module: str, extra: str, needed_for: str) -> Any:
    """Import ``module`` (e.g. ``"lightgbm"``, ``"PIL.Image"``), which the extra ``extra`` of
    the package installs; if it is missing, raise :class:`XGenError` saying what needs it and
    ``pip install 'xgen-mlir[EXTRA]'``."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        package = module.split(".")[0]
        raise XGenError(
            f"{needed_for} needs the optional package {package!r}, which a plain "
            f"`pip install xgen-mlir` leaves out: pip install 'xgen-mlir[{extra}]' "
            f"(importing it failed: {e})"
        ) from None
