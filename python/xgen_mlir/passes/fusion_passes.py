"""xgen-mapping-types and xgen-plan-fusion: the fusion analysis and planner as passes.

The compile path runs the planner on IREE's IR between its global optimizations and dispatch
creation (backend/fusion_stage.py); these passes run the same code on linalg-on-tensors in
``xgen-opt`` so people (and lit tests) can see its decisions on small IR:

- ``xgen-mapping-types`` tags every tensor op with ``xgen.mapping = "<type>"`` and, with
  ``print=true``, prints one line per op (type and reason) to stderr.
- ``xgen-plan-fusion`` tags every planned op with ``xgen.fusion_group = N`` and prints the
  decisions to stderr with ``print=true``; ``form-regions=true`` also wraps each group in a
  ``flow.dispatch.region`` (shown as an unregistered op in torch-mlir's context), exactly as
  the backend does, ``delegate-contractions`` as in the pipeline's ``[fusion]`` table;
  ``share-pads=true`` then lets the other readers of a padded value read the padded buffer
  (``fusion/pad_sharing.py``; its decisions print as ``pad of ...`` lines);
  ``conv-tiles=true`` (with ``form-regions``) gives small-image convs xgen_mlir's tile sizes in
  regions of their own (``fusion/conv_tiling.py``; ``conv ...`` lines; ``threads`` stands in
  for the host's thread count, which decides how many workgroups are enough);
  ``transpose-tiles=true`` gives transposes that write a few-element dimension innermost
  xgen_mlir's tiles (``fusion/transpose_tiling.py``; ``transpose ...`` lines);
  ``gemv-tiles=true`` does the same for one-row matmuls against a row-major weight
  (``fusion/gemv_tiling.py``; ``gemv ...`` lines); ``matmul-tiles=true`` for plain matmuls
  IREE vectorizes 7 rows at a time under a transcendental epilogue and for 49-row ones
  (``fusion/matmul_tiling.py``; ``matmul ...`` lines); ``depthwise-pads=true``, last, leaves
  the zero pads read only by a depthwise conv as pads and turns the others into fill +
  insert_slice (``fusion/pads.py``; ``pad -> ...`` lines).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import partial
from typing import Any

from .._mlir import ir
from ..analysis import classify
from ..fusion import (
    form_regions,
    place_pads,
    plan_block,
    share_padded_buffers,
    tile_conv_groups,
    tile_gemvs,
    tile_matmuls,
    tile_transposes,  # fmt: skip
)
from ..irutil import ops_named
from .registry import register_pass


@dataclass
class MappingOptions:
    print: bool = False


@register_pass(
    "xgen-mapping-types",
    "Tag tensor ops with their DNNFusion mapping type (analysis; IR otherwise unchanged).",
    MappingOptions,
)
def mapping_types(module_op: ir.Operation, opts: MappingOptions) -> None:
    for fn in ops_named(module_op, "func.func"):
        for block in fn.regions[0].blocks:
            for op in block.operations:
                mapping = classify(op)
                if mapping is None:
                    continue
                op.attributes["xgen.mapping"] = ir.StringAttr.get(mapping.type.value)
                if opts.print:
                    print(f"{op.name}: {mapping.type.value} ({mapping.reason})", file=sys.stderr)


@dataclass
class PlanOptions:
    print: bool = False
    form_regions: bool = False
    delegate_contractions: bool = False
    share_pads: bool = False
    conv_tiles: bool = False
    transpose_tiles: bool = False
    gemv_tiles: bool = False
    matmul_tiles: bool = False
    depthwise_pads: bool = False
    threads: int = 0
    max_expand: float = 4.0


def _describe(plan: Any, d: Any) -> str:
    node = plan.nodes[d.node]
    verdict = "fuse" if d.taken else "refuse"
    return f"group {d.group}: {d.direction} {node.name} #{d.node}: {verdict}: {d.reason}"


@register_pass(
    "xgen-plan-fusion",
    "DNNFusion-style fusion plan: tag ops with their group; optionally form dispatch regions.",
    PlanOptions,
)
def plan_fusion(module_op: ir.Operation, opts: PlanOptions) -> None:
    for fn in ops_named(module_op, "func.func"):
        if not len(fn.regions[0].blocks):
            continue
        plan = plan_block(fn.regions[0].blocks[0], opts.max_expand)
        for node in plan.nodes:
            node.op.attributes["xgen.fusion_group"] = ir.IntegerAttr.get(
                ir.IntegerType.get_signless(64), node.group
            )
        if opts.print:
            for d in plan.decisions:
                print(_describe(plan, d), file=sys.stderr)
        block = fn.regions[0].blocks[0]
        # In the backend's order (fusion.form_dispatch_regions): transposes before pad sharing
        # and conv tiles erase ops the plan points at; gemvs and matmuls after data tiling.
        steps = [
            (opts.transpose_tiles, partial(tile_transposes, block, plan)),
            (opts.gemv_tiles, partial(tile_gemvs, block)),
            (opts.matmul_tiles, partial(tile_matmuls, block)),
            (opts.share_pads, partial(share_padded_buffers, block)),
        ]
        if opts.form_regions or any(on for on, _ in steps):
            module_op.context.allow_unregistered_dialects = True  # flow, iree_tensor_ext: IREE's
        if opts.form_regions:
            form_regions(plan, opts.delegate_contractions)
        for on, step in steps:
            for record in step() if on else []:
                if opts.print:
                    print(record.describe(), file=sys.stderr)
        if opts.conv_tiles and opts.form_regions:
            for tile in tile_conv_groups(plan, opts.threads or None):
                if opts.print:
                    print(tile.describe(), file=sys.stderr)
        for placement in place_pads(block) if opts.depthwise_pads else []:
            if opts.print:
                print(placement.describe(), file=sys.stderr)
