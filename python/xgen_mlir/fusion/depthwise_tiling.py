"""Tiles for channels-last depthwise convs whose vector tile divides the output width.

IREE's llvm-cpu heuristic gives a depthwise conv a vector tile of a few output pixels x one
vector of channels and decomposes it to 1-D convs. When that pixel tile does not divide the
output width, the remainder is a tile of dynamic size that the decomposition does not vectorize,
and the whole op is compiled to scalar code. Its pick does not look at divisibility: on an
AVX2 target it chose 2 pixels for widths 7, 15, 21, 25, 49 and 55 (no packed FMA in the
object), but 1 or 3 for 9, 11 and 13. MobileNetV2's 7x7x960 3x3 conv then ran in 0.47-0.61 ms;
with a dividing tile, 0.06-0.07 ms (`iree-benchmark-module`, 2 threads, AMD EPYC Zen 3).

At 512-bit vectors its pick is a divisor (7 of 7, 14 and 28, 5 of 15, 4 of 112: checked
on MobileNetV2's shapes for an AVX-512 CPU), so ``xgen-depthwise-tiles`` fires below that
width only. There every static f32 depthwise conv gets tiles:
  vector: the largest divisor of the output width up to 8 pixels x one vector of channels;
  reduction: one filter row, its whole width (IREE's decomposition needs that);
  workgroup: rows of the whole output width, up to 64 pixels, x up to 64 channels, narrowed
    until every thread has two workgroups.
The conv is re-batched and put in a region of its own with its epilogue, as ``conv_tiling``
does for dense convs (IREE drops a config on a batchless conv). The zero pad it reads joins
the region where ``pads.place_pads`` leaves it for the reader's dispatch (3x3 windows), so
that decision stands; the other pads stay outside (``xgen-depthwise-pads``, run before, has
made them fill + insert_slice, written in place by their producers).
"""

from __future__ import annotations

from typing import Any

from ..analysis.mapping_types import ir_of
from .conv_tiling import ConvGeometry, ConvTile, tile_conv_groups
from .pads import depthwise_strides, stays_in_reader

KIND = "depthwise conv"
MAX_VECTOR_PIXELS = 8  # accumulators: pixels x one vector of channels each
MAX_WORKGROUP_PIXELS = 64
MAX_WORKGROUP_CHANNELS = 64


def depthwise_geometry(op: Any) -> ConvGeometry | None:
    """The shape of a batchless channels-last f32 depthwise conv generic (what IREE's global
    optimizations leave); None for anything else (dense, dilated, dynamic, other types)."""
    op = op.operation
    stride = depthwise_strides(op)
    if stride is None or len(op.results) != 1:
        return None
    body = [o.operation.name for o in op.regions[0].blocks[0].operations]
    if body != ["arith.mulf", "arith.addf", "linalg.yield"]:
        return None
    ir = ir_of(op)
    types = [ir.RankedTensorType(v.type) for v in [*op.operands, *op.results]]
    if any(str(t.element_type) != "f32" or not t.has_static_shape for t in types):
        return None
    oh, ow, c = types[3].shape
    kh, kw, _ = types[1].shape
    return ConvGeometry(oh, ow, c, kh, kw, 1, stride)


def _largest_divisor(n: int, limit: int, step: int = 1) -> int | None:
    """The largest multiple of ``step`` up to ``limit`` that divides ``n``."""
    return max((d for d in range(step, limit + 1, step) if n % d == 0), default=None)


def choose_depthwise_tiles(
    g: ConvGeometry, threads: int, vector_bits: int
) -> tuple[list[list[int]] | None, str]:
    """[distribution, vector, reduction] tile sizes over (n, oh, ow, c, kh, kw), or None and
    the reason IREE's own are kept."""
    lanes = vector_bits // 32
    if lanes < 1:
        return None, "the target's vector width is unknown"
    if g.oc % lanes:
        return None, f"{g.oc} channels: not a multiple of the {lanes}-lane vector"
    owt = _largest_divisor(g.ow, MAX_VECTOR_PIXELS)
    ohd = _largest_divisor(g.oh, max(1, MAX_WORKGROUP_PIXELS // g.ow)) or 1
    ocd = _largest_divisor(g.oc, max(lanes, MAX_WORKGROUP_CHANNELS), lanes) or lanes
    while (g.oh // ohd) * (g.oc // ocd) < 2 * threads:  # every thread busy
        if ocd > lanes and (narrower := _largest_divisor(g.oc, ocd - lanes, lanes)):
            ocd = narrower
        elif ohd > 1:
            ohd = _largest_divisor(g.oh, ohd - 1) or 1
        else:
            break
    assert owt is not None  # 1 divides every width
    tiles = [[0, ohd, g.ow, ocd, 0, 0], [1, 1, owt, lanes, 0, 0], [0, 0, 0, 0, 1, g.kw]]
    return tiles, f"{owt}-pixel vectors divide the {g.ow}-wide output (IREE's may not: scalar code)"


def _converts_types(ops: list[Any]) -> bool:
    """Some op of the group reads or writes a tensor of another element type than f32 (an
    int8 model's dequantize before the conv or quantize after it)."""
    ir = ir_of(ops[0])
    for op in ops:
        for v in [*op.operands, *op.results]:
            if isinstance(v.type, ir.RankedTensorType):
                if str(ir.RankedTensorType(v.type).element_type) != "f32":
                    return True
    return False


def _decision(
    op: Any, group: list[Any], threads: int, vector_bits: int
) -> tuple[str, list[list[int]] | None, str] | None:
    geom = depthwise_geometry(op)
    if geom is None:
        return None
    tiles, why = choose_depthwise_tiles(geom, threads, vector_bits)
    if tiles is not None and _converts_types(group):
        # MobileNetV2 int8 (f32 depthwise on integer values, a quantize after it): IREE
        # rejected these dispatches with the tiles ("large vector sizes") on an AVX2 host
        tiles, why = None, "its dispatch converts element types (int8): IREE rejected the tiles"
    name = f"{geom.oh}x{geom.ow}x{geom.oc} {geom.kh}x{geom.kw}"
    sh, sw = geom.stride
    if (sh, sw) != (1, 1):
        name += f" s{sh}" if sh == sw else f" s{sh}x{sw}"
    return name, tiles, why


def tile_depthwise_groups(plan: Any, threads: int, vector_bits: int) -> list[ConvTile]:
    """``conv_tiling.tile_conv_groups`` for the plan's depthwise convs."""
    return tile_conv_groups(
        plan,
        threads,
        lambda op, group: _decision(op, group, threads, vector_bits),
        KIND,
        stays_in_reader,
    )
