"""Tiles for layout transposes that write a dimension of a few elements innermost.

A CNN imported from PyTorch keeps one NCHW -> NHWC transpose at its entry (``xgen-nhwc-convs``
or IREE's channels-last rewrite: the others cancel): a 3x224x224 image becomes 224x224x3.
IREE's heuristic vectorizes it over (c, h, w) as 16 x 1 x 16: a 16-lane vector of which the
3 channels fill 3 lanes, the rest masked. The dispatch took 0.13-0.18 ms in MobileNetV2,
EfficientNet-B0 and ResNet-18 (``benchmarks/profile_dispatches.py``): 600 KB moved at ~4
GB/s, 3% of MobileNetV2's busy time.

Here such a transpose gets its loops in the input's order (the input map is the identity; IREE
normalizes transposes to that order itself, and its tiles refer to the normalized loops) and
these tiles:
  vector: the whole small dimension x 16 along the input's contiguous dimension (a 3 x 16
    register transpose, then 48 contiguous floats stored), 1 elsewhere;
  workgroup: both of those whole, ``ROWS`` (8) of the next dimension out, 1 elsewhere.
Measured in MobileNetV2 (same module, only this op's config changed, two alternating runs):
0.134-0.178 ms -> 0.028-0.034 ms. Tried and slower: 16 rows x 32 lanes (0.038-0.041 ms),
64 lanes (0.048-0.052), 1 channel x 16 lanes (0.047-0.066), vectors along the output's
order (0.09-0.28).

What it matches: a ``linalg.generic`` that only copies its one input to its one output
through two different permutation maps (static shapes), not inside a dispatch region, whose
output's innermost dimension has at most ``SMALL`` (4: image channels; only 3 was measured)
elements and is not the input's innermost, and that reads the function's input (a transpose
of a computed tensor may join its producer's dispatch, which these tiles do not fit). Other
transposes keep IREE's tiles.
"""

from __future__ import annotations

from typing import Any

from ..analysis.mapping_types import dim_positions, indexing_maps, ir_of, loop_sizes
from ..irutil import clone_body
from .lowering import TileDecision, compilation_info

SMALL = 4  # widest innermost output dimension handled (image channels)
LANES = 16  # f32 lanes of an AVX-512 vector along the input's contiguous dimension
ROWS = 8  # rows of the next dimension out per workgroup (224 rows -> 28 workgroups)
PIPELINE = "DoubleTilingExpert"


def _permutation(amap: Any, ir: Any) -> list[int] | None:
    dims = dim_positions(ir, amap)
    if dims is None or sorted(dims) != list(range(amap.n_dims)):
        return None
    return dims


def _copy_transpose(op: Any) -> tuple[list[int], list[int]] | None:
    """(input map, output map) as loop permutations if ``op`` is a pure permuting copy."""
    op = op.operation
    if op.name != "linalg.generic" or len(op.operands) != 2 or len(op.results) != 1:
        return None
    ir = ir_of(op)
    if any("parallel" not in str(k) for k in op.attributes["iterator_types"]):
        return None
    body = list(op.regions[0].blocks[0].operations)
    block = op.regions[0].blocks[0]
    if len(body) != 1 or body[0].operands[0] != block.arguments[0]:
        return None  # computes something: not a layout change
    maps = indexing_maps(op)
    types = [ir.RankedTensorType(v.type) for v in (op.operands[0], op.results[0])]
    if maps is None or not all(t.has_static_shape for t in types):
        return None
    found = [_permutation(m, ir) for m in maps]
    perms = [p for p in found if p is not None]
    if len(perms) != len(found) or perms[0] == perms[1]:
        return None
    return perms[0], perms[1]


def choose_tiles(
    in_perm: list[int],
    out_perm: list[int],
    sizes: dict[int, int],
) -> tuple[list[list[int]] | None, str]:
    """[distribution, vector] over the loops in the input's order, or None and why not."""
    rank = len(in_perm)
    inner_in = rank - 1  # loops in input order: loop i walks input dim i
    inner_out = in_perm.index(out_perm[-1])  # the input dim that is the output's innermost
    small = sizes[in_perm[inner_out]]
    if inner_out == inner_in:
        return None, "same innermost dimension on both sides (a plain row copy)"
    if small > SMALL:
        return None, f"innermost output dimension of {small} (> {SMALL}): IREE's vectors fit"
    contiguous = sizes[in_perm[inner_in]]
    dist, vec = [1] * rank, [1] * rank
    dist[inner_out] = vec[inner_out] = small
    dist[inner_in], vec[inner_in] = contiguous, min(LANES, contiguous)
    rows = max((i for i in range(rank) if i not in (inner_in, inner_out)), default=None)
    if rows is not None:
        dist[rows] = min(ROWS, sizes[in_perm[rows]])
    return [dist, vec], f"{small}-wide innermost output: {small} x {vec[inner_in]} vectors"


def tile_transposes(block: Any, plan: Any = None) -> list[TileDecision]:
    """Give every matching transpose in ``block`` (not in a dispatch region) the tiles of
    ``choose_tiles``, rewriting it with its loops in the input's order (``plan``'s nodes are
    pointed at the new op). One record per permuting copy seen."""
    nodes = {n.op.operation: n for n in plan.nodes} if plan is not None else {}
    records = []
    for op in list(block.operations):
        found = _copy_transpose(op)
        if found is None:
            continue
        op = op.operation
        in_perm, out_perm = found
        ir = ir_of(op)
        types = [ir.RankedTensorType(v.type) for v in (op.operands[0], op.results[0])]
        name = " -> ".join("x".join(map(str, t.shape)) for t in types)
        tiles, why = choose_tiles(in_perm, out_perm, loop_sizes(op))
        if tiles is not None and not _reads_an_input(op):
            tiles, why = None, "reads a computed tensor: IREE may fuse it into its producer"
        dist, vec = tiles or (None, None)
        records.append(TileDecision("transpose", name, dist, vec, why))
        if tiles is not None:
            node = nodes.get(op)
            new = _rewrite(op, in_perm, out_perm, tiles)
            if node is not None:
                node.op = new
    return records


# ops between the function's input and its first use that only pass it on (IREE's import
# and compute barrier, reshapes)
_VIEWS = (
    "tensor.collapse_shape",
    "tensor.expand_shape",
    "tensor.reshape",
    "hal.tensor.import",
    "iree_tensor_ext.compute_barrier.start",
)


def _reads_an_input(op: Any) -> bool:
    """Whether transpose ``op`` reads the function's input (through reshapes and its import):
    the dispatch it forms is its own. A transpose of a computed tensor (a pool's 4x4 output
    back to NCHW) may be fused into its producer's dispatch, whose root then carries this
    op's tiles, loops it does not have: IREE fails to build that dispatch's pipeline."""
    ir = ir_of(op)
    value = op.operands[0]
    while isinstance(value.owner, ir.Operation | ir.OpView):
        owner = value.owner.operation  # (an OpView's .name may be its "name" attribute)
        if owner.name not in _VIEWS or not owner.operands:
            return False
        value = owner.operands[0]
    return True  # a block argument


def _rewrite(op: Any, in_perm: list[int], out_perm: list[int], tiles: list[list[int]]) -> Any:
    """Replace ``op`` by the same copy with loop i = input dim i, carrying the tiles."""
    ir = ir_of(op)
    rank = len(in_perm)
    out_map = [in_perm.index(loop) for loop in out_perm]
    dims = ", ".join(f"d{i}" for i in range(rank))
    maps = [f"({dims}) -> ({dims})", f"({dims}) -> ({', '.join(f'd{i}' for i in out_map)})"]
    with op.location, ir.InsertionPoint(op):  # the location gives the context
        attrs = {
            "indexing_maps": ir.ArrayAttr.get(
                [ir.Attribute.parse(f"affine_map<{m}>") for m in maps]
            ),
            "iterator_types": ir.ArrayAttr.get(
                [ir.Attribute.parse("#linalg.iterator_type<parallel>")] * rank
            ),
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 1]),
            "compilation_info": compilation_info(
                ir, PIPELINE, distribution=tiles[0], vector_common_parallel=tiles[1]
            ),
        }
        new = ir.Operation.create(
            "linalg.generic",
            results=[op.results[0].type],
            operands=list(op.operands),
            attributes=attrs,
            regions=1,
        )
        clone_body(op, new)
    op.results[0].replace_all_uses_with(new.results[0])
    op.erase()
    return new
