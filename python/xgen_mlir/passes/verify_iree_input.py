"""xgen-verify-iree-input: check that only IREE-accepted dialects remain.

The last step of every pipeline before IREE. The accepted dialects live in
``dialects/iree_input_contract.toml`` (declarative, shared with the docs). Reports every
offending op at once -- name, count, source location -- instead of IREE's first error deep
inside its input conversion. Does not check types or op semantics.
"""

from __future__ import annotations

import functools
import tomllib
from typing import Any

from .._mlir import ir
from .._paths import dialects_dir
from ..diagnostics import format_location
from ..errors import UnsupportedOp, UnsupportedOpsError
from ..irutil import TORCH_BOOKKEEPING_PREFIXES, leftover_torch_ops
from .registry import PassFailure, register_pass


@functools.cache
def contract() -> tuple[frozenset[str], frozenset[str]]:
    with open(dialects_dir() / "iree_input_contract.toml", "rb") as f:
        data = tomllib.load(f)
    return frozenset(data["dialects"]), frozenset(data.get("forbidden_ops", {}))


def offending_ops(module_op: ir.Operation) -> list[UnsupportedOp]:
    dialects, forbidden = contract()
    bad: list[UnsupportedOp] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        name = op.name
        if name.split(".", 1)[0] not in dialects or name in forbidden:
            bad.append(UnsupportedOp(name, format_location(op.location)))
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    # Constants/list builders of a foreign dialect only feed its real ops: listing them is noise.
    real = [o for o in bad if not o.name.startswith(TORCH_BOOKKEEPING_PREFIXES)]
    return real or bad


@register_pass(
    "xgen-verify-iree-input", "Fail, listing every op, if ops outside IREE's input dialects remain."
)
def verify_iree_input(module_op: ir.Operation, _opts: Any) -> None:
    bad = offending_ops(module_op)
    if bad:
        raise PassFailure(str(UnsupportedOpsError(bad, stage="the hand-off to IREE")))


__all__ = ["leftover_torch_ops", "offending_ops", "verify_iree_input"]
