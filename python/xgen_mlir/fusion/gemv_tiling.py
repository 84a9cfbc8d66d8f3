"""Tiles for one-row matmuls against a row-major weight (a classifier head's gemv).

A CNN's classifier is y = x W^T + b with x one row: 1 x 1000 x 1280 in MobileNetV2 and
EfficientNet-B0, 1 x 1000 x 512 in ResNet-18. It reads a 2-5 MB weight once, so it should run
at memory speed. IREE's heuristic vectorizes it as 25 weight rows x 16 k per step (25 divides
1000): 25 accumulators plus 25 loads do not fit AVX-512's 32 registers. In MobileNetV2 it took
0.28-0.44 ms (the largest dispatch after the convs; ONNX Runtime: 0.134 ms).

Here it gets 16 rows x 16 k per step (16 accumulators, 16 loads), 32 rows per workgroup.
Measured in MobileNetV2 (same module, only this op's config changed, two alternating
``benchmarks/profile_dispatches.py`` runs): IREE's 0.28-0.44 ms -> 0.15-0.21 ms. Workgroups of
16 or 64 rows measured the same as 32; slower: 32 k per step (0.31 ms), 8 rows x 64 k
(0.34-0.37), 25 rows in 10- to 100-row workgroups (0.27-0.31).

What it matches: a contraction with one reduced loop whose result has one non-unit dimension
(n), one operand indexed (n, k) with k innermost (the weight) and the other a single row or
vector over k; at least ``MIN_ROWS`` rows and k a multiple of 16; not data-tiled (IREE packs
those into its own layout), not inside a dispatch region (a planner region's root tiles come
from IREE), and without tiles of its own. Others keep IREE's tiles.
"""

from __future__ import annotations

from typing import Any

from ..analysis.mapping_types import dim_positions, indexing_maps, ir_of, loop_sizes
from .lowering import TileDecision, tile_contractions

ROWS = 16  # weight rows per vector step (16 accumulators)
K_STEP = 16  # reduction elements per step: one AVX-512 vector of f32
WORKGROUP_ROWS = 32
MIN_ROWS = 256  # below this the weight is small and IREE's tiles were not measured against
PIPELINE = "DoubleTilingExpert"
_BODY = ("arith.mulf", "arith.addf")


def _gemv_loops(op: Any) -> tuple[int, int, dict[int, int]] | None:
    """(n loop, k loop, loop sizes) if ``op`` is a one-row contraction against an (n, k)
    weight, else None."""
    op = op.operation
    if not op.name.startswith("linalg.") or len(op.results) != 1 or len(op.operands) != 3:
        return None
    kinds = (
        [str(k) for k in op.attributes["iterator_types"]]
        if ("iterator_types" in op.attributes)
        else None
    )
    maps = indexing_maps(op)
    if maps is None:
        return None
    ir = ir_of(op)
    if kinds is None:  # a named op (linalg.matmul): reduced loops are those the result skips
        out = {e.position for e in maps[2].results if isinstance(e, ir.AffineDimExpr)}
        kinds = ["parallel" if d in out else "reduction" for d in range(maps[2].n_dims)]
    reduced = [i for i, k in enumerate(kinds) if "reduction" in k]
    body = [o.operation.name for o in op.regions[0].blocks[0].operations][:-1]
    if len(reduced) != 1 or sorted(body) != sorted(_BODY):
        return None
    k = reduced[0]
    sizes = loop_sizes(op)
    found = [dim_positions(ir, m) for m in maps]
    dims = [d for d in found if d is not None]
    if len(dims) != len(found) or len(sizes) != len(kinds):
        return None
    wide = [d for d in dims[2] if sizes[d] != 1]
    if len(wide) != 1:
        return None
    n = wide[0]
    weight = [i for i in (0, 1) if [d for d in dims[i] if sizes[d] != 1] == [n, k]]
    if len(weight) != 1 or dims[weight[0]][-1] != k:
        return None
    row = dims[1 - weight[0]]
    if [d for d in row if sizes[d] != 1] != [k]:
        return None
    return n, k, sizes


def choose_tiles(n: int, k: int, sizes: dict[int, int]) -> tuple[list[list[int]] | None, str]:
    """[distribution, vector, reduction] over the op's loops, or None and why not."""
    if sizes[n] < MIN_ROWS:
        return None, f"{sizes[n]} rows (< {MIN_ROWS}): a small weight, IREE's tiles kept"
    if sizes[k] % K_STEP:
        return None, f"k = {sizes[k]} is not a multiple of {K_STEP}"
    loops = len(sizes)
    dist, vec, red = [0] * loops, [1] * loops, [0] * loops
    dist[n], vec[n], vec[k], red[k] = WORKGROUP_ROWS, ROWS, 0, K_STEP
    why = f"{ROWS} rows x {K_STEP} k per step (IREE's: more accumulators than registers)"
    return [dist, vec, red], why


def _match(op: Any) -> tuple[str, tuple[Any, ...]] | None:
    found = _gemv_loops(op)
    if found is None:
        return None
    n, k, sizes = found
    return f"1x{sizes[n]}x{sizes[k]}", found


def tile_gemvs(block: Any) -> list[TileDecision]:
    """Give every matching gemv in ``block`` (not in a dispatch region) the tiles of
    ``choose_tiles`` as its ``compilation_info``. One record per one-row contraction seen."""
    return tile_contractions(block, "gemv", _match, choose_tiles, PIPELINE)
