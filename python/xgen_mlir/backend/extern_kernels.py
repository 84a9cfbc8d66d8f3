"""Materialize generated kernels for IREE: declarations -> stream.executable + flow.dispatch.

Our passes run in torch-mlir's MLIR context, which has no IREE dialects, so a lowered kernel is
a private ``func.func`` declaration carrying its executable's text (``xgen.executable``) and
plain ``func.call``s. At the hand-off the module crosses to IREE's own MLIR bindings as
bytecode (weights stay binary: no text round trip of hundreds of MB), and each declaration is
replaced by its executable plus a definition whose body is one ``flow.dispatch`` of it (IREE
keeps pre-formed dispatches as they are and inlines the call). Modules without generated
kernels go to IREE unchanged.
"""

from __future__ import annotations

import io
from pathlib import Path

from .._mlir import ir, iree_binding
from ..codegen.dispatch import EXECUTABLE_ATTR


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


def _dispatching_definition(name: str, fn_type: str) -> str:
    """``func.func private @name(...)`` whose body dispatches the executable ``@name_ex``."""
    ins_text, out_text = fn_type.split(") -> ", 1)
    ins = [t.strip() for t in ins_text.lstrip("(").split(", ")]
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(ins))
    vals = ", ".join(f"%a{i}" for i in range(len(ins)))
    return (
        f"func.func private @{name}({args}) -> {out_text} {{\n"
        f"  %r = flow.dispatch @{name}_ex::@{name}({vals}) : ({', '.join(ins)}) -> {out_text}\n"
        f"  return %r : {out_text}\n}}\n"
    )


def materialize(module: ir.Module, path: Path) -> bool:
    """Write IREE's input (bytecode) to ``path`` with kernels materialized; False if none."""
    executables = collect_executables(module)
    if not executables:
        return False
    iree_ir = iree_binding().ir

    buf = io.BytesIO()
    module.operation.write_bytecode(buf)
    ctx = iree_ir.Context()
    target = iree_ir.Module.parse(buf.getvalue(), ctx)
    body = target.body
    decls = {}
    for op in body.operations:
        op = op.operation
        if op.name == "func.func":
            name = iree_ir.StringAttr(op.attributes["sym_name"]).value
            if name in executables:
                decls[name] = op
    for name, text in executables.items():
        decl = decls[name]
        fn_type = str(iree_ir.TypeAttr(decl.attributes["function_type"]).value)
        snippet = iree_ir.Module.parse(text + _dispatching_definition(name, fn_type), ctx)
        for new_op in list(snippet.body.operations):
            new_op.operation.move_before(decl)
        decl.erase()
    with open(path, "wb") as f:
        target.operation.write_bytecode(f)
    return True
