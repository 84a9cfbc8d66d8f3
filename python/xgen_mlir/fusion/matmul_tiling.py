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

**Seven-row images (M = 49).** The 7x7 stage of MobileNetV2 and EfficientNet-B0 (their last
1x1 convs, M = 49 pixels) gets 7 rows x 16 columns per vector step and workgroups of all 49
rows x 16 columns, for any epilogue, instead of data tiling (``plan_data_tiling`` leaves the op
plain when ``takes_seven_rows`` says this rule takes it). Packing pads 49 rows to 64 and puts the
activation pack into the producer (a depthwise conv 3x slower with it: 0.012 -> 0.04 ms), and
IREE's plain tiles for 49x160x960 give 16 workgroups of a slow shape. Measured on a chain of
eight 1x1 convs with constant weights (``profile_dispatches.py``, best of four alternating
rounds, ms per conv):

==============  =========  ==========  ============  ==============
conv M x N x K  IREE plain  data-tiled  these tiles   49 x 64 groups
==============  =========  ==========  ============  ==============
49x960x160      0.109      0.139       0.080         0.098
49x160x960      0.321      0.108       0.071         0.084
==============  =========  ==========  ============  ==============

and ~175 GFLOP/s against ~125 (data-tiled) for 49x1152x192 / 49x1280x320 chains. In
MobileNetV2 (alternating profiles) its 7x7 stage went 1.26 -> ~1.10 ms with two dispatches
fewer (the depthwise convs lost their fused packs, 0.03 -> 0.014 ms each), EfficientNet-B0's
head conv 49x1280x320 0.40-0.48 -> 0.27-0.33 ms. Not taken:

- a result padded for the next depthwise conv (the expand convs): there IREE keeps the row
  loops, and its own 7 x 16 tiles in 64-column workgroups ran 0.10-0.11 ms against 0.12-0.13
  with 16-column ones in MobileNetV2;
- a large GEMM, N and K >= 512 (ResNet-50's 7x7 stage): its packed weights stream better
  from memory (a chain of 49x2048x512 / 49x512x2048 convs: 0.85 / 0.80 ms data-tiled against
  1.00 / 0.94 with these tiles);
- an activation read channels-first, (k, rows) (EfficientNet-B0's project convs, after its
  squeeze-excite scale): data-tiled, its pack is written once by the producer; with these
  tiles the 49x192x1152 convs ran 0.17-0.18 ms against 0.16.

**Narrow outputs (N = 24, 40, 56: a multiple of 8, not of 16).** IREE vectorizes N with
16-wide vectors, so N = 24 is one full and one half-empty vector per step. Here: 8 rows x 8
columns per step (eight 8-wide accumulators, no partial vector), workgroups of 64 rows x all
of N, when M is a multiple of 64, the activation is read row-major and the result is not
padded for a conv. MobileNetV2's 56x56 project convs (3136x24 from K = 96 or 144) are the
case; measured (``profile_dispatches.py``, two threads, a chain of four 3136x24x96 + bias /
3136x96x24 + ReLU6 pairs with constant weights, two rounds, ms per project conv): IREE's
8 x 16 steps 0.108-0.114, 8 x 8 0.093-0.096, 16 x 8 0.097-0.099, 4 x 8 0.114-0.120, 8 x 24
0.20-0.23; 128- or 256-row workgroups (a partial last one) 0.19-0.22; 32-row ones 0.088-0.096.

Where the result is not padded, IREE would collapse the two row loops and rebuild the op
without the tiles; the op is collapsed to one row loop first (``collapse_to_gemm``), so the
tiles it gets are the ones IREE keeps.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import prod
from typing import Any

from ..analysis.mapping_types import dim_positions, indexing_maps, ir_of, loop_sizes
from .lowering import TileDecision, tile_contractions

ROWS = 14  # vector rows (accumulators); IREE's heuristic gives 7 when M is 7 x an odd number
SEVEN_ROW_M = 49  # a 7x7 image's pixels: 7-row vectors, workgroups of all rows x 16 columns
SEVEN = 7
LANES = 16
K_STEP = 16
MIN_NK = 64
NARROW = 8  # vector columns for N = 8 (mod 16): no partial 16-wide vector
NARROW_MAX_N = 56
NARROW_ROWS = 64  # rows per workgroup (M must be a multiple: a partial one measured 2x slower)
BIG = 512  # N and K both this large: a big GEMM, whose packed weights stream better
PIPELINE = "DoubleTilingExpert"
_BODY = ("arith.mulf", "arith.addf")


@dataclass(frozen=True)
class MatmulLoops:
    """A contraction against a (k, n) weight: its loops and what surrounds it."""

    rows: list[int]  # the row (M) loops, outermost first
    n: int
    k: int
    sizes: dict[int, int]
    k_inner: bool  # the activation is read with k innermost (row-major), not (k, rows)
    costly: bool = False  # its only reader computes a transcendental, then a pad reads that
    padded: bool = False  # the result is zero-padded for a conv, through elementwise ops

    @property
    def m(self) -> int:
        return prod(self.sizes[r] for r in self.rows)


def _matmul_loops(op: Any) -> MatmulLoops | None:
    """The loops of a contraction against a (k, n) weight, else None."""
    op = op.operation
    if not op.name.startswith("linalg.") or len(op.results) != 1 or len(op.operands) != 3:
        return None
    maps = indexing_maps(op)
    if maps is None or not op.regions or not len(op.regions[0].blocks):
        return None
    ir = ir_of(op)
    found = [dim_positions(ir, m) for m in maps]
    dims = [d for d in found if d is not None]
    if len(dims) != len(found):
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
    return MatmulLoops(rows, n, k, sizes, k_inner=dims[1 - weight[0]][-1] == k)


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


def _short_steps(loops: MatmulLoops) -> str | None:
    n, k = loops.sizes[loops.n], loops.sizes[loops.k]
    if n % LANES or k % K_STEP or min(n, k) < MIN_NK:
        return (
            f"N = {n}, K = {k}: not multiples of 16 of at least {MIN_NK} (partial or "
            "short vector steps measured slower)"
        )
    return None


def choose_tiles(loops: MatmulLoops) -> tuple[list[list[int]] | None, str]:
    """[distribution, vector, reduction] over the op's loops, or None and why not."""
    rows, n, k, sizes, m = loops.rows, loops.n, loops.k, loops.sizes, loops.m
    inner = rows[-1]
    if m == SEVEN_ROW_M:
        return _seven_row_tiles(loops)
    if _is_narrow(loops):
        return _narrow_tiles(loops)
    if m % ROWS or m % 8 == 0:
        return None, f"M = {m}: not 14 x an odd number (IREE's 7-row tiles; measured only there)"
    if sizes[inner] % ROWS:
        return None, f"innermost row loop of {sizes[inner]} is not a multiple of {ROWS}"
    if (short := _short_steps(loops)) is not None:
        return None, short
    if not loops.costly:
        return None, "no padded transcendental epilogue: not clearly faster, or tiles IREE drops"
    n_loops = len(sizes)
    dist, vec, red = [1] * n_loops, [1] * n_loops, [0] * n_loops
    dist[inner], vec[inner] = ROWS, ROWS
    dist[n], vec[n] = sizes[n], LANES
    dist[k], vec[k], red[k] = 0, 0, K_STEP
    return [dist, vec, red], (
        f"{ROWS} rows x {LANES} columns per step (IREE's: 7 rows) under a transcendental epilogue"
    )


def _seven_row_tiles(loops: MatmulLoops) -> tuple[list[list[int]] | None, str]:
    rows, sizes = loops.rows, loops.sizes
    if loops.padded:
        return None, (
            "49 rows padded for a conv: IREE's tiles (7 x 16, 64-column workgroups) "
            "measured faster than 16-column ones"
        )
    if not loops.k_inner:
        return None, (
            "49 rows read channels-first (k, rows): data tiling packs them once, "
            "measured faster than these tiles"
        )
    if sizes[rows[-1]] % SEVEN:
        return None, f"innermost row loop of {sizes[rows[-1]]} is not a multiple of {SEVEN}"
    if (short := _short_steps(loops)) is not None:
        return None, short
    if min(sizes[loops.n], sizes[loops.k]) >= BIG:
        return None, (
            f"a large GEMM (N, K >= {BIG}): packed weights measured faster "
            "(49x2048x512: 0.85 against 1.00 ms)"
        )
    n_loops = len(sizes)
    dist, vec, red = [0] * n_loops, [0] * n_loops, [0] * n_loops
    for r in rows:
        dist[r], vec[r] = sizes[r], 1
    vec[rows[-1]] = SEVEN
    dist[loops.n], vec[loops.n] = LANES, LANES
    red[loops.k] = K_STEP
    why = (
        f"{SEVEN_ROW_M} rows: {SEVEN} rows x {LANES} columns per step, workgroups of all "
        f"rows x {LANES} columns (not data-tiled)"
    )
    return [dist, vec, red], why


def _is_narrow(loops: MatmulLoops) -> bool:
    n = loops.sizes[loops.n]
    return n % LANES != 0 and n % NARROW == 0 and n <= NARROW_MAX_N


def _narrow_refusal(loops: MatmulLoops) -> str | None:
    """Why the narrow-N rule leaves a narrow op to IREE (whatever its row loops), or None."""
    n = loops.sizes[loops.n]
    if loops.m % NARROW_ROWS:
        return f"N = {n}, M = {loops.m}: M is not a multiple of {NARROW_ROWS} rows"
    if not loops.k_inner or loops.padded:
        return f"N = {n}: activation read channels-first, or result padded for a conv"
    return None


def _narrow_tiles(loops: MatmulLoops) -> tuple[list[list[int]] | None, str]:
    sizes, n = loops.sizes, loops.sizes[loops.n]
    if (why := _narrow_refusal(loops)) is not None:
        return None, why
    if len(loops.rows) != 1:
        return None, f"N = {n}: {len(loops.rows)} row loops (IREE would rebuild the op)"
    n_loops = len(sizes)
    dist, vec, red = [0] * n_loops, [0] * n_loops, [0] * n_loops
    dist[loops.rows[0]], vec[loops.rows[0]] = NARROW_ROWS, NARROW
    dist[loops.n], vec[loops.n] = n, NARROW
    red[loops.k] = K_STEP
    return [dist, vec, red], (
        f"N = {n}: {NARROW} rows x {NARROW} columns per step (IREE's: "
        f"16-wide, half empty), {NARROW_ROWS}-row workgroups"
    )


def takes_narrow(op: Any) -> bool:
    """Whether the narrow-N rule tiles ``op`` once its row loops are collapsed into one."""
    loops = _matmul_loops(op)
    if loops is None or not _is_narrow(loops):
        return False
    return _narrow_refusal(_in_context(op, loops)) is None


def _in_context(op: Any, loops: MatmulLoops) -> MatmulLoops:
    """``loops`` with what the op's readers say: a costly epilogue, a padded result."""
    from .data_tiling import feeds_pad

    op = op.operation
    return replace(loops, costly=_padded_transcendental_epilogue(op), padded=feeds_pad(op))


def takes_seven_rows(op: Any) -> bool:
    """Whether this rule tiles ``op`` as a 49-row matmul, which data tiling then leaves plain."""
    loops = _matmul_loops(op)
    if loops is None or loops.m != SEVEN_ROW_M:  # most contractions: no need to look further
        return False
    return _seven_row_tiles(_in_context(op, loops))[0] is not None


def _match(op: Any) -> tuple[str, tuple[Any, ...]] | None:
    loops = _matmul_loops(op)
    if loops is None:
        return None
    return f"{loops.m}x{loops.sizes[loops.n]}x{loops.sizes[loops.k]}", (_in_context(op, loops),)


def tile_matmuls(block: Any) -> list[TileDecision]:
    """Give every matching plain matmul in ``block`` (not in a dispatch region) the tiles of
    ``choose_tiles`` as its ``compilation_info``. One record per contraction against a
    (k, n) weight seen."""
    from .data_tiling import HINT, collapse_to_gemm

    for op in list(block.operations):  # ops IREE would collapse: collapse them first
        op = op.operation
        if HINT not in op.attributes and (takes_seven_rows(op) or takes_narrow(op)):
            collapse_to_gemm(op)
    return tile_contractions(block, "matmul", _match, choose_tiles, PIPELINE)
