"""MLIR diagnostics for people: collected instead of printed, locations as ``file:line:col``.

Every layer reports errors with these (frontends, passes, the fusion stage), so they live
below all of them. They work on a context or location from either MLIR binding (torch-mlir's
or IREE's): both expose the same diagnostic API.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


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


def warn_fallback(message: str) -> None:
    """Say, once per message, that a step fell back (``errors.FallbackWarning``)."""
    from .errors import FallbackWarning

    warnings.warn(message, FallbackWarning, stacklevel=3)
