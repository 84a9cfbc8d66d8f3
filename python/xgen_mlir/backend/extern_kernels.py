"""Materialize generated kernels for IREE: declarations -> stream.executable + flow.dispatch.

Our passes run in torch-mlir's MLIR context, which has no IREE dialects, so a lowered kernel is
a private ``func.func`` declaration carrying its executable's text (``xgen.executable``) and
plain ``func.call``s. At the hand-off this module prints the IR, puts each executable in place
of its declaration and turns each call into a ``flow.dispatch`` of that executable (IREE keeps
pre-formed dispatches as they are). Modules without generated kernels go to IREE unchanged, as
bytecode.
"""

from __future__ import annotations

import io
import re

from .._mlir import ir

EXECUTABLE_ATTR = "xgen.executable"


def collect_executables(module: ir.Module) -> dict[str, str]:
    """Remove and return {kernel symbol: executable text} from the module's declarations."""
    found: dict[str, str] = {}
    for op in module.body.operations:
        op = op.operation
        if op.name == "func.func" and EXECUTABLE_ATTR in op.attributes:
            name = ir.StringAttr(op.attributes["sym_name"]).value
            found[name] = ir.StringAttr(op.attributes[EXECUTABLE_ATTR]).value
            del op.attributes[EXECUTABLE_ATTR]
    return found


def materialize(module: ir.Module) -> str | None:
    """IREE input text with kernels materialized, or None if the module has none."""
    executables = collect_executables(module)
    if not executables:
        return None
    buf = io.StringIO()
    module.operation.print(file=buf)
    text = buf.getvalue()
    for name in executables:
        text = re.sub(rf"^\s*func\.func private @{name}\(.*\n", "", text, flags=re.M)
        text = re.sub(rf"\b(?:func\.)?call @{name}\(", f"flow.dispatch @{name}_ex::@{name}(", text)
    first_nl = text.index("\n", text.index("module"))
    return text[: first_nl + 1] + "\n".join(executables.values()) + text[first_nl + 1 :]
