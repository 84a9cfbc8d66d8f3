"""The ``compilation_info`` attribute xgen_mlir attaches to ops whose tiles it chooses.

IREE's llvm-cpu codegen takes a user's lowering config and pipeline from this attribute on
the dispatch's root op instead of running its own heuristic. Parsed from text so it works in
IREE's bindings (the real hand-off) and in torch-mlir's (lit tests: an opaque attribute of an
unregistered dialect)."""

from __future__ import annotations

from typing import Any


def compilation_info(ir: Any, pipeline: str, **levels: list[int]) -> Any:
    """``levels``: tile sizes per level, e.g. ``distribution=[...]``,
    ``vector_common_parallel=[...]``, ``vector_reduction=[...]``, in that order."""
    config = ", ".join(f"{k} = [{', '.join(map(str, v))}]" for k, v in levels.items())
    return ir.Attribute.parse(
        "#iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<"
        f"{config}>, translation_info = #iree_codegen.translation_info<pipeline = "
        f"#iree_cpu.pipeline<{pipeline}>>>"
    )
