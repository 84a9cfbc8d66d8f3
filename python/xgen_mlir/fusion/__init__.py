"""Fusion planning (DNNFusion): plan which ops share a dispatch, then form the regions."""

from __future__ import annotations

from typing import Any

from ..pipelines import FusionSteps
from .conv_tiling import ConvTile, tile_conv_groups
from .data_tiling import TilingDecision, plan_data_tiling
from .gemv_tiling import tile_gemvs
from .lowering import TileDecision
from .matmul_tiling import takes_seven_rows, tile_matmuls
from .pad_sharing import PadShare, share_padded_buffers
from .pads import PadPlacement, place_pads
from .planner import FusionPlan, plan_block
from .regions import wrap_in_region
from .transpose_tiling import tile_transposes

__all__ = [
    "ConvTile", "FusionPlan", "PadPlacement", "PadShare", "TileDecision", "TilingDecision",
    "form_dispatch_regions", "form_regions", "place_pads", "plan_block", "plan_data_tiling",
    "share_padded_buffers", "tile_conv_groups", "tile_gemvs", "tile_matmuls", "tile_transposes",
    "wrap_in_region",
]  # fmt: skip

FUNC_OPS = ("func.func", "util.func")


def form_dispatch_regions(
    module: Any, max_expand: float = 4.0, steps: FusionSteps | None = None
) -> list[FusionPlan]:
    """Plan every function body of ``module``, form its regions (``form_regions``), then run
    the optional steps ``steps`` asks for (``pipelines.FusionSteps``, a pipeline's
    ``[fusion]`` table), each recording its decisions in the plan:

    - ``transpose_tiles``: transposes that write a few-element dimension innermost (a CNN's
      NCHW -> NHWC entry) get xgen_mlir's tiles (``transpose_tiling``; ``transpose_tiles``).
      First, before the steps below erase ops the plan's nodes point at;
    - ``data_tiling``: which contractions IREE data-tiles (``plan_data_tiling``; ``tiling``),
      leaving plain the 49-row ones ``matmul_tiles`` takes;
    - ``gemv_tiles``: one-row matmuls against a row-major weight (a classifier head) that are
      not data-tiled get xgen_mlir's tiles (``gemv_tiling``; ``gemv_tiles``);
    - ``matmul_tiles``: plain matmuls IREE would vectorize 7 rows at a time under a padded
      transcendental epilogue get 14-row tiles, and 49-row ones (a 7x7 image's 1x1 convs)
      7-row tiles in 16-column workgroups (``matmul_tiling``; ``matmul_tiles``);
    - ``share_pads``: padded values with other readers are read from the padded buffer
      (``pad_sharing``; ``pad_shares``);
    - ``conv_tiles``: small-image convs get xgen_mlir's tiles in regions of their own
      (``conv_tiling``; after pad sharing, whose pads they absorb; ``conv_tiles``);
    - ``depthwise_pads``: zero pads read only by a depthwise conv are left for IREE to compute
      in that conv's dispatch, the others become IREE's fill + insert_slice (``pads``; last,
      on the pads no step above placed; ``pad_placements``). The backend then adds
      ``pads.FLAG``.
    """
    steps = steps or FusionSteps()
    plans = []
    for fn in module.body.operations:
        fn = fn.operation
        if fn.name not in FUNC_OPS or not len(fn.regions[0].blocks):
            continue
        block = fn.regions[0].blocks[0]
        plan = plan_block(block, max_expand)
        form_regions(plan, steps.delegate_contractions)
        if steps.transpose_tiles:
            plan.transpose_tiles = tile_transposes(block, plan)
        if steps.data_tiling:
            plan.tiling = plan_data_tiling(
                block, xgen_tiles=takes_seven_rows if steps.matmul_tiles else None
            )
        if steps.gemv_tiles:  # after the data-tiling hints: tiled ones keep IREE's packed layout
            plan.gemv_tiles = tile_gemvs(block)
        if steps.matmul_tiles:
            plan.matmul_tiles = tile_matmuls(block)
        if steps.share_pads:
            plan.pad_shares = share_padded_buffers(block)
        if steps.conv_tiles:
            plan.conv_tiles = tile_conv_groups(plan)
        if steps.depthwise_pads:
            plan.pad_placements = place_pads(block)
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
