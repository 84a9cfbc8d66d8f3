"""xgen-op-stats: count ops by name (an analysis; the IR is not changed).

Used by reports and by people reading a pipeline's effect; prints a table to stderr (so it
never mixes with the IR on stdout). The counts are also returned by ``count_ops``.
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any

from .._mlir import ir
from .registry import register_pass

_STRUCTURAL = {"builtin.module", "func.func", "func.return", "linalg.yield"}


def count_ops(module_op: ir.Operation, include_nested: bool = False) -> Counter[str]:
    """Ops by name; ops inside linalg bodies are skipped unless ``include_nested``."""
    counts: Counter[str] = Counter()

    def visit(op: ir.Operation) -> ir.WalkResult:
        parent = op.parent
        nested = parent is not None and parent.name.startswith("linalg.")
        if op.name not in _STRUCTURAL and (include_nested or not nested):
            counts[op.name] += 1
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    return counts


@register_pass("xgen-op-stats", "Print op counts by name to stderr (analysis only).")
def op_stats(module_op: ir.Operation, _opts: Any) -> None:
    counts = count_ops(module_op)
    print(f"xgen-op-stats: {sum(counts.values())} ops", file=sys.stderr)
    for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {n:6d}  {name}", file=sys.stderr)
