"""xgen-set-entry-point: give the model's entry function a stable public name.

Frontends name the entry differently (torch-mlir: the requested name; ONNX: the graph's name,
which may hold spaces and dots). Users and ``iree-run-module --function=`` need one known
name, ``main`` unless asked otherwise. Runs first in every pipeline. Fails when the module has
several public functions and none has the requested name (it will not guess), and on a name
that is empty or not symbol-safe (``diagnostics.check_entry_name``): no invalid IR is printed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._mlir import ir
from ..diagnostics import check_entry_name
from ..errors import XGenError
from .registry import PassFailure, register_pass


@dataclass
class SetEntryPointOptions:
    name: str = "main"


def public_functions(module_op: ir.Operation) -> list[ir.Operation]:
    funcs = []
    for op in module_op.regions[0].blocks[0].operations:
        op = op.operation
        if op.name != "func.func":
            continue
        vis = op.attributes["sym_visibility"] if "sym_visibility" in op.attributes else None
        if vis is None or ir.StringAttr(vis).value == "public":
            funcs.append(op)
    return funcs


@register_pass(
    "xgen-set-entry-point",
    "Rename the single public function to the entry name (default 'main').",
    SetEntryPointOptions,
)
def set_entry_point(module_op: ir.Operation, opts: SetEntryPointOptions | None) -> None:
    name = (opts or SetEntryPointOptions()).name
    try:
        check_entry_name(name)
    except XGenError as e:
        raise PassFailure(str(e)) from None
    funcs = public_functions(module_op)
    names = [ir.StringAttr(f.attributes["sym_name"]).value for f in funcs]
    if name in names:
        return
    if len(funcs) != 1:
        raise PassFailure(
            f"cannot choose the entry function '{name}': public functions are "
            f"{names or 'none'}; name one of them as the entry"
        )
    # Symbol uses (calls) of a public entry are rare; refuse rather than leave dangling refs.
    old = names[0]
    if f"@{old}" in _call_targets(module_op):
        raise PassFailure(f"entry function '{old}' is called from inside the module")
    funcs[0].attributes["sym_name"] = ir.StringAttr.get(name)


def _call_targets(module_op: ir.Operation) -> set[str]:
    targets: set[str] = set()

    def visit(op: Any) -> ir.WalkResult:
        if op.name == "func.call":
            targets.add(str(op.attributes["callee"]))
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    return targets
