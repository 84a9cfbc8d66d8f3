"""The ``compilation_info`` attribute xgen_mlir attaches to ops whose tiles it chooses.

IREE's llvm-cpu codegen takes a user's lowering config and pipeline from this attribute on
the dispatch's root op instead of running its own heuristic. Parsed from text so it works in
IREE's bindings (the real hand-off) and in torch-mlir's (lit tests: an opaque attribute of an
unregistered dialect)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# The vector width the transpose, gemv, matmul and conv tile rules were chosen and measured for
# (16 f32 lanes). Their passes fire only on targets of this width (the ``vector-bits`` option,
# from the pipeline's target facts); elsewhere IREE keeps its own tiles.
TILED_FOR_VECTOR_BITS = 512


def compilation_info(ir: Any, pipeline: str, **levels: list[int]) -> Any:
    """``levels``: tile sizes per level, e.g. ``distribution=[...]``,
    ``vector_common_parallel=[...]``, ``vector_reduction=[...]``, in that order."""
    config = ", ".join(f"{k} = [{', '.join(map(str, v))}]" for k, v in levels.items())
    return ir.Attribute.parse(
        "#iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<"
        f"{config}>, translation_info = #iree_codegen.translation_info<pipeline = "
        f"#iree_cpu.pipeline<{pipeline}>>>"
    )


@dataclass
class TileDecision:
    """One op xgen_mlir considered tiling itself: its kind and shape, and the tiles given to
    IREE (``taken``) or why IREE keeps its own."""

    kind: str  # "transpose", "gemv", "matmul"
    op: str  # its shape, for people
    distribution: list[int] | None
    vector: list[int] | None
    reason: str
    reduction: list[int] | None = None

    @property
    def taken(self) -> bool:
        return self.distribution is not None

    def describe(self) -> str:
        if not self.taken:
            return f"{self.kind} {self.op}: IREE's tiles: {self.reason}"
        red = f" reduction {self.reduction}" if self.reduction is not None else ""
        return (
            f"{self.kind} {self.op}: tiles workgroup {self.distribution} vector "
            f"{self.vector}{red}: {self.reason}"
        )


def tile_contractions(
    block: Any, kind: str, match: Callable[[Any], Any], choose: Callable[..., Any], pipeline: str
) -> list[TileDecision]:
    """The loop the gemv and matmul rules share: for every op of ``block`` (not inside a
    dispatch region) that ``match`` returns ``(shape name, choose's arguments)`` for, record a
    decision, and unless IREE data-tiles it or it has tiles already, attach ``choose``'s
    ``[distribution, vector, reduction]`` as its ``compilation_info``."""
    from ..analysis.mapping_types import ir_of
    from .data_tiling import HINT

    records = []
    for op in block.operations:
        found = match(op)
        if found is None:
            continue
        op = op.operation
        name, args = found
        if HINT in op.attributes:
            records.append(TileDecision(kind, name, None, None, "data-tiled: IREE packs it"))
            continue
        if "compilation_info" in op.attributes:
            records.append(TileDecision(kind, name, None, None, "already has tiles"))
            continue
        tiles, why = choose(*args)
        if tiles is None:
            records.append(TileDecision(kind, name, None, None, why))
            continue
        records.append(TileDecision(kind, name, tiles[0], tiles[1], why, tiles[2]))
        with op.location:  # the location gives the context
            op.attributes["compilation_info"] = compilation_info(
                ir_of(op),
                pipeline,
                distribution=tiles[0],
                vector_common_parallel=tiles[1],
                vector_reduction=tiles[2],
            )
    return records
