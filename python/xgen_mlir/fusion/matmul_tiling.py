"""Tiles for plain (not data-tiled) matmuls IREE vectorizes 7 rows at a time, where it shows.

IREE's CPU heuristic picks the vector tile's row count among divisors of M so that no tile is
partial: for M = 196 (a 14x14 image's pixels, EfficientNet-B0's and MobileNetV2's 14x14
stages) it takes 7 rows x 16 columns. Seven accumulators are fewer than AVX-512 needs to hide
its FMA latency (two pipes x four cycles), and the workgroups split N as well, so each loads
its rows of A more than once. Where the epilogue is costly too (a SiLU: exp + divide per
element, EfficientNet-B0's expand convs), those 1x1 convs ran at ~100 GFLOP/s against ~200
for a large sgemm.

Here they get 14 rows x 16 columns per vector step (14 accumulators) and workgroups of 14 rows
x all of N. Measured in EfficientNet-B0 (``benchmarks/profile_dispatches.py``, two alternating
runs): SiLU expand convs 14x14x672x112 0.28-0.29 -> 0.17-0.19 ms and 14x14x480x80 0.13 ->
0.09. Not matched because not clearly better: convs without a transcendental epilogue
(EfficientNet-B0's project convs, whose rows are read transposed: 5-10% faster; MobileNetV2's
ReLU6 convs, already ~200 GFLOP/s: up to 10% slower); one matmul at a time, M =
3136 or 784 with N = 24-40 (IREE's 8-row tiles), K = 24 (0.16 -> 0.34 ms: a partial 16-wide k
step); 8 x 32 vectors (0.45-0.51 against 0.31-0.34), 16 x 16 with 32-row workgroups
(0.40-0.49).

What it matches: a contraction with one reduced loop k, one operand indexed by (k, n) with n
the result's innermost loop (the weight), the other by k and the row loops; M (the product of
the row loops) a multiple of 14 but not of 8, the innermost row loop a multiple of 14; N and
K multiples of 16 and at least 64; its only reader an elementwise op that computes a
transcendental (``math`` dialect: exp, tanh, ...) and whose result is zero-padded (for the
next depthwise conv, as in every EfficientNet-B0 block); not data-tiled, not inside a dispatch
region, and without tiles of its own. The pad matters: without it IREE collapses the image's
rows into one loop in its dispatch and rebuilds the op without these tiles (seen on a 1x1 conv
whose result went straight to the output), so they are only given where they stay.
"""

from __future__ import annotations

from math import prod
from typing import Any

from ..analysis.mapping_types import indexing_maps, ir_of, loop_sizes
from .lowering import TileDecision, tile_contractions

ROWS = 14  # vector rows (accumulators); IREE's heuristic gives 7 when M is 7 x an odd number
LANES = 16
K_STEP = 16
MIN_NK = 64
PIPELINE = "DoubleTilingExpert"
_BODY = ("arith.mulf", "arith.addf")


def _matmul_loops(op: Any) -> tuple[list[int], int, int, dict[int, int]] | None:
    """(row loops, n loop, k loop, loop sizes) of a contraction against a (k, n) weight."""
    op = op.operation
    if not op.name.startswith("linalg.") or len(op.results) != 1 or len(op.operands) != 3:
        return None
    maps = indexing_maps(op)
    if maps is None or not op.regions or not len(op.regions[0].blocks):
        return None
    ir = ir_of(op)
    dims = [[e.position if isinstance(e, ir.AffineDimExpr) else None for e in m.results]
            for m in maps]  # fmt: skip
    if any(None in d for d in dims):
        return None
    out = dims[2]
    reduced = [d for d in range(maps[2].n_dims) if d not in out]
    body = [o.operation.name for o in op.regions[0].blocks[0].operations][:-1]
    if len(reduced) != 1 or sorted(body) != sorted(_BODY) or out != sorted(out):
        return None
    k, n = reduced[0], out[-1]
    rows = out[:-1]
    sizes = loop_sizes(op)
    if len(sizes) != maps[2].n_dims or not rows:
        return None
    weight = [i for i in (0, 1) if dims[i] == [k, n]]
    if len(weight) != 1 or sorted(dims[1 - weight[0]]) != sorted([*rows, k]):
        return None
    return rows, n, k, sizes


def _padded_transcendental_epilogue(op: Any) -> bool:
    """Whether ``op``'s only reader is an elementwise op computing a ``math`` function whose
    result is only read by a ``tensor.pad`` (which keeps IREE from collapsing the rows)."""
    uses = list(op.results[0].uses)
    if len(uses) != 1:
        return False
    user = uses[0].owner.operation
    if user.name != "linalg.generic" or not user.regions:
        return False
    kinds = [str(k) for k in user.attributes["iterator_types"]]
    body = [o.operation.name for o in user.regions[0].blocks[0].operations]
    readers = [u.owner.operation.name for u in user.results[0].uses]
    return (
        all("parallel" in k for k in kinds)
        and any(n.startswith("math.") for n in body)
        and readers == ["tensor.pad"]
    )


def choose_tiles(rows: list[int], n: int, k: int, sizes: dict[int, int], costly: bool,
                 ) -> tuple[list[list[int]] | None, str]:  # fmt: skip
    """[distribution, vector, reduction] over the op's loops, or None and why not.
    ``costly``: the epilogue computes a transcendental."""
    m = prod(sizes[r] for r in rows)
    inner = rows[-1]
    if m % ROWS or m % 8 == 0:
        return None, f"M = {m}: not 14 x an odd number (IREE's 7-row tiles; measured only there)"
    if sizes[inner] % ROWS:
        return None, f"innermost row loop of {sizes[inner]} is not a multiple of {ROWS}"
    if sizes[n] % LANES or sizes[k] % K_STEP or min(sizes[n], sizes[k]) < MIN_NK:
        return None, (f"N = {sizes[n]}, K = {sizes[k]}: not multiples of 16 of at least "
                      f"{MIN_NK} (partial or short vector steps measured slower)")  # fmt: skip
    if not costly:
        return None, "no padded transcendental epilogue: not clearly faster, or tiles IREE drops"
    loops = len(sizes)
    dist, vec, red = [1] * loops, [1] * loops, [0] * loops
    dist[inner], vec[inner] = ROWS, ROWS
    dist[n], vec[n] = sizes[n], LANES
    dist[k], vec[k], red[k] = 0, 0, K_STEP
    return [dist, vec, red], (f"{ROWS} rows x {LANES} columns per step (IREE's: 7 rows) "
                              "under a transcendental epilogue")  # fmt: skip


def _match(op: Any) -> tuple[str, tuple[Any, ...]] | None:
    found = _matmul_loops(op)
    if found is None:
        return None
    rows, n, k, sizes = found
    name = f"{prod(sizes[r] for r in rows)}x{sizes[n]}x{sizes[k]}"
    return name, (*found, _padded_transcendental_epilogue(op.operation))


def tile_matmuls(block: Any) -> list[TileDecision]:
    """Give every matching plain matmul in ``block`` (not in a dispatch region) the tiles of
    ``choose_tiles`` as its ``compilation_info``. One record per contraction against a
    (k, n) weight seen."""
    return tile_contractions(block, "matmul", _match, choose_tiles, PIPELINE)
