"""Fusion planning (DNNFusion): plan which ops share a dispatch, then form the regions.

The decisions here run as dispatch-phase passes (``passes/dispatch_passes.py``), one pass per
step, on IREE's IR between its global optimizations and its dispatch creation."""

from __future__ import annotations

from .conv_tiling import ConvTile, tile_conv_groups
from .data_tiling import TilingDecision, plan_data_tiling
from .depthwise_tiling import tile_depthwise_groups
from .gemv_tiling import tile_gemvs
from .lowering import TileDecision
from .matmul_tiling import tile_matmuls
from .pad_sharing import PadShare, share_padded_buffers
from .pads import PadPlacement, place_pads
from .planner import DYNAMIC_SHAPES, FusionPlan, plan_block
from .regions import dynamic_shaped, wrap_in_region
from .transpose_tiling import tile_transposes

__all__ = [
    "ConvTile",
    "FusionPlan",
    "PadPlacement",
    "PadShare",
    "TileDecision",
    "TilingDecision",
    "form_regions",
    "place_pads",
    "plan_block",
    "plan_data_tiling",
    "share_padded_buffers",
    "tile_conv_groups",
    "tile_depthwise_groups",
    "tile_gemvs",
    "tile_matmuls",
    "tile_transposes",
    "wrap_in_region",
]

FUNC_OPS = ("func.func", "util.func")


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
        if dynamic_shaped(ops):
            group.delegated, group.why_delegated = True, DYNAMIC_SHAPES
            continue
        wrap_in_region(ops)
