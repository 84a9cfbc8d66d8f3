"""Fusion planning (DNNFusion): plan which ops share a dispatch, then form the regions."""

from __future__ import annotations

from typing import Any

from ..backend.host import has_avx512
from .conv_tiling import ConvTile, tile_conv_groups
from .data_tiling import TilingDecision, plan_data_tiling
from .gemv_tiling import tile_gemvs
from .lowering import TileDecision
from .matmul_tiling import tile_matmuls
from .pad_sharing import PadShare, share_padded_buffers
from .planner import FusionPlan, plan_block
from .regions import wrap_in_region
from .transpose_tiling import tile_transposes

__all__ = [
    "ConvTile", "FusionPlan", "PadShare", "TileDecision", "TilingDecision",
    "form_dispatch_regions", "form_regions", "plan_block", "plan_data_tiling",
    "share_padded_buffers", "tile_conv_groups", "tile_gemvs", "tile_matmuls", "tile_transposes",
    "wrap_in_region",
]  # fmt: skip

FUNC_OPS = ("func.func", "util.func")


def form_dispatch_regions(
    module: Any,
    max_expand: float = 4.0,
    delegate_contractions: bool = True,
    data_tiling: bool = False,
    share_pads: bool = True,
    conv_tiles: bool = False,
    transpose_tiles: bool = False,
    gemv_tiles: bool = False,
    matmul_tiles: bool = False,
) -> list[FusionPlan]:
    """Plan every function body of ``module`` and form its regions (``form_regions``).

    ``data_tiling``: also decide which contractions IREE data-tiles (``plan_data_tiling``);
    the decisions are in each plan's ``tiling``. ``share_pads``: padded values with other
    readers are read from the padded buffer (``pad_sharing``); records in ``pad_shares``.
    ``conv_tiles``: small-image convs get xgen_mlir's tile sizes in regions of their own
    (``conv_tiling``; after pad sharing, whose pads they absorb); records in ``conv_tiles``.
    ``transpose_tiles``: transposes that write a few-element dimension innermost (a CNN's
    NCHW -> NHWC entry) get xgen_mlir's tiles (``transpose_tiling``); records in
    ``transpose_tiles``. ``gemv_tiles``: one-row matmuls against a row-major weight (a
    classifier head) that are not data-tiled get xgen_mlir's tiles (``gemv_tiling``); records
    in ``gemv_tiles``. ``matmul_tiles``: plain matmuls that IREE would vectorize 7 rows at a
    time (M = 196) get 14-row tiles (``matmul_tiling``); records in ``matmul_tiles``. These
    three were measured with AVX-512 vectors: on a host without it IREE keeps its tiles."""
    if not has_avx512():  # the target is the host (the cpu pipeline)
        transpose_tiles = gemv_tiles = matmul_tiles = False
    plans = []
    for fn in module.body.operations:
        fn = fn.operation
        if fn.name not in FUNC_OPS or not len(fn.regions[0].blocks):
            continue
        block = fn.regions[0].blocks[0]
        plan = plan_block(block, max_expand)
        form_regions(plan, delegate_contractions)
        if transpose_tiles:  # before the steps below erase ops the plan's nodes point at
            plan.transpose_tiles = tile_transposes(block, plan)
        if data_tiling:
            plan.tiling = plan_data_tiling(block)
        if gemv_tiles:  # after the data-tiling hints: tiled ones keep IREE's packed layout
            plan.gemv_tiles = tile_gemvs(block)
        if matmul_tiles:
            plan.matmul_tiles = tile_matmuls(block)
        if share_pads:
            plan.pad_shares = share_padded_buffers(block)
        if conv_tiles:
            plan.conv_tiles = tile_conv_groups(plan)
        plans.append(plan)
    return plans


def form_regions(plan: FusionPlan, delegate_contractions: bool = True) -> None:
    """Wrap the plan's groups in dispatch regions; the others are marked ``delegated``.

    Delegated: one-op groups (a region gains nothing over IREE's own choice) and, with
    ``delegate_contractions``, groups rooted at a matmul/conv (measured: IREE folds transposed
    operands and data-tiling encodings into them, which a pre-formed region prevents), except
    groups whose contractions are small matvecs (squeeze-excite): IREE would give a chain of
    them one dispatch per matvec, and it puts an excite matvec and the activation scale after
    it in two dispatches where their data-tiled consumer packs its input in a dispatch of its
    own (EfficientNet-B0's 7x7 blocks; measured same busy time, one dispatch fewer).
    """
    for group, ops in zip(plan.groups, plan.group_ops(), strict=True):
        rooted_at_contraction = group.contractions > group.matvecs  # not only small matvecs
        if (delegate_contractions and rooted_at_contraction) or len(group.members) < 2:
            group.delegated = True
            continue
        wrap_in_region(ops)
