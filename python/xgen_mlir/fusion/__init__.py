"""Fusion planning (DNNFusion): plan which ops share a dispatch, then form the regions."""

from __future__ import annotations

from typing import Any

from .planner import FusionPlan, plan_block
from .regions import wrap_in_region

__all__ = ["FusionPlan", "form_dispatch_regions", "plan_block", "wrap_in_region"]

FUNC_OPS = ("func.func", "util.func")


def form_dispatch_regions(
    module: Any, max_expand: float = 4.0, delegate_contractions: bool = True
) -> list[FusionPlan]:
    """Plan every function body of ``module`` and wrap each group in a dispatch region.

    ``delegate_contractions``: groups rooted at a matmul/conv are left for IREE to form
    (measured: IREE folds transposed operands into the contraction's maps and its data-tiling
    encodings, which a pre-formed region prevents); the plan still records them.
    """
    plans = []
    for fn in module.body.operations:
        fn = fn.operation
        if fn.name not in FUNC_OPS or not len(fn.regions[0].blocks):
            continue
        plan = plan_block(fn.regions[0].blocks[0], max_expand)
        for group, ops in zip(plan.groups, plan.group_ops(), strict=True):
            if (delegate_contractions and group.contractions) or len(group.members) < 2:
                group.delegated = True  # a one-op region gains nothing over IREE's choice
                continue
            wrap_in_region(ops)
        plans.append(plan)
    return plans
