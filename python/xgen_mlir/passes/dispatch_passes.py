"""The dispatch-phase passes: the fusion plan and every tile, pad and pack decision after it.

They run inside IREE's compile, on IREE's IR, where a pipeline's ``[[dispatch.steps]]`` say
(``backend/dispatch_stage.py``), and in ``xgen-opt``, which parses its input with IREE's
bindings when the pipeline names them. The plan lives in the run's ``DispatchState``
(``xgen-plan-fusion`` makes it; the steps after it read it and record their decisions in it
for the report). Each pass prints its decisions to stderr with ``print=true``. Target facts
come as options (``vector-bits``, ``threads``); no pass reads the machine it runs on.

Ordering rules (checked when a pipeline is built): transposes are tiled before pad sharing
and conv tiles erase ops the plan points at; gemv and matmul tiles come after the data-tiling
hints (tiled contractions keep IREE's packed layout); conv tiles after pad sharing, whose pads
they absorb; depthwise pads on the pads no step before placed; depthwise tiles last, taking
into their regions the pads left for their convs' dispatches.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from .._mlir import binding_of
from ..errors import PipelineError
from ..fusion import (
    FUNC_OPS,
    form_regions,
    place_pads,
    plan_block,
    plan_data_tiling,
    share_padded_buffers,
    tile_conv_groups,
    tile_depthwise_groups,
    tile_gemvs,
    tile_matmuls,
    tile_transposes,
)
from ..fusion.accumulator_packs import separate_accumulator_packs
from ..fusion.data_tiling import HINT, SMALL_M
from ..fusion.kernel_results import separate_kernel_result_packs
from ..fusion.lowering import TILED_FOR_VECTOR_BITS
from ..fusion.matmul_tiling import takes_seven_rows
from ..fusion.pads import FLAG as PAD_FLAG
from ..fusion.shared_packs import FLAG as SHARED_PACKS_FLAG
from ..fusion.shared_packs import SharedPacks
from ..fusion.shared_packs import merge_duplicate_outputs as merge_outputs
from ..fusion.tunable import (
    TuningRequest,
    apply_config,
    check_config,
    find_tunables,
    standalone_module,
)
from .generic_util import TRANSCENDENTAL
from .registry import DISPATCH, DispatchState, PassFailure, register_pass

DATA_TILING_FLAG = "--iree-opt-data-tiling"
DEPTHWISE_DIVIDES_FROM_BITS = 512  # IREE's depthwise vector tile divides the width from here
PLAN = "xgen-plan-fusion"


def function_blocks(module_op: Any) -> Iterator[tuple[str, Any]]:
    """(symbol name, body block) of every function with a body, in module order."""
    for fn in module_op.regions[0].blocks[0].operations:
        fn = fn.operation
        if fn.name in FUNC_OPS and len(fn.regions[0].blocks):
            yield str(fn.attributes["sym_name"]).strip('"'), fn.regions[0].blocks[0]


def ops_in(block: Any, name: str, ir: Any) -> list[Any]:
    """The ops named ``name`` nested in ``block``'s function, in walk order."""
    found: list[Any] = []

    def visit(op: Any) -> Any:
        if op.name == name:
            found.append(op)
        return ir.WalkResult.ADVANCE

    block.owner.walk(visit)
    return found


def _show(on: bool, records: list[Any]) -> None:
    for record in records if on else []:
        print(record.describe(), file=sys.stderr)


def _describe(plan: Any, d: Any) -> str:
    node = plan.nodes[d.node]
    verdict = "fuse" if d.taken else "refuse"
    return f"group {d.group}: {d.direction} {node.name} #{d.node}: {verdict}: {d.reason}"


@dataclass
class PlanOptions:
    print: bool = False
    form_regions: bool = False
    delegate_contractions: bool = False
    tag_groups: bool = False  # xgen.fusion_group = N on every planned op (for people)
    max_expand: float = 4.0


@register_pass(
    PLAN,
    "DNNFusion-style fusion plan: groups of ops per dispatch; optionally form their regions.",
    PlanOptions,
    phase=DISPATCH,
)
def plan_fusion(module_op: Any, opts: PlanOptions, state: DispatchState) -> None:
    for name, block in function_blocks(module_op):
        plan = plan_block(block, opts.max_expand)
        state.plans[name] = plan
        if opts.tag_groups:
            ir = binding_of(module_op).ir
            i64 = ir.IntegerType.get_signless(64)
            for node in plan.nodes:
                node.op.attributes["xgen.fusion_group"] = ir.IntegerAttr.get(i64, node.group)
        if opts.print:
            for d in plan.decisions:
                print(_describe(plan, d), file=sys.stderr)
        if opts.form_regions:
            form_regions(plan, opts.delegate_contractions)


@dataclass
class VectorTileOptions:
    print: bool = False
    vector_bits: int = 0  # the target's vector width; the rules fire at TILED_FOR_VECTOR_BITS


def _fires(opts: VectorTileOptions, what: str) -> bool:
    if opts.vector_bits == TILED_FOR_VECTOR_BITS:
        return True
    if opts.print:
        print(
            f"{what}: none: tiles chosen for {TILED_FOR_VECTOR_BITS}-bit vectors, the "
            f"target has {opts.vector_bits or 'unknown'}",
            file=sys.stderr,
        )
    return False


@register_pass(
    "xgen-transpose-tiles",
    "Tiles for transposes that write a few-element dimension innermost (a CNN's entry).",
    VectorTileOptions,
    phase=DISPATCH,
    after=(PLAN,),
)
def transpose_tiles(module_op: Any, opts: VectorTileOptions, state: DispatchState) -> None:
    if not _fires(opts, "transpose tiles"):
        return
    for name, block in function_blocks(module_op):
        plan = state.plans.get(name)
        records = tile_transposes(block, plan)  # points the plan's nodes at the new ops
        if plan is not None:
            plan.transpose_tiles = records
        _show(opts.print, records)


@dataclass
class PrintOptions:
    print: bool = False


@dataclass
class DataTilingOptions:
    print: bool = False
    # leave to xgen-matmul-tiles the 49-row matmuls it takes (where it fires: vector_bits)
    leave_seven_row_matmuls: bool = False
    vector_bits: int = 0


@register_pass(
    "xgen-data-tiling-hints",
    "Decide per contraction whether IREE data-tiles it (only when IREE data-tiles at all).",
    DataTilingOptions,
    phase=DISPATCH,
    after=(PLAN, "xgen-transpose-tiles"),
    only_with_flags=(DATA_TILING_FLAG,),
)
def data_tiling_hints(module_op: Any, opts: DataTilingOptions, state: DispatchState) -> None:
    leave = opts.leave_seven_row_matmuls and opts.vector_bits == TILED_FOR_VECTOR_BITS
    tiled = False
    for name, block in function_blocks(module_op):
        records = plan_data_tiling(block, xgen_tiles=takes_seven_rows if leave else None)
        tiled |= any(t.tiled for t in records)
        if name in state.plans:
            state.plans[name].tiling = records
        if opts.print:
            for t in records:
                print(f"{t.op}: {'tiled' if t.tiled else 'plain'}: {t.reason}", file=sys.stderr)
    if not tiled:  # no op carries the hint: IREE would tile them all, so drop the flag instead
        state.drop_flags.append(DATA_TILING_FLAG)


@register_pass(
    "xgen-separate-accumulator-packs",
    "A reduction region that packs one result as an input does not pack another as an accumulator.",
    PrintOptions,
    phase=DISPATCH,
    after=(PLAN, "xgen-data-tiling-hints"),
    only_with_flags=(DATA_TILING_FLAG,),
)
def separate_accumulators(module_op: Any, opts: PrintOptions, state: DispatchState) -> None:
    for name, block in function_blocks(module_op):
        records = separate_accumulator_packs(block)
        if name in state.plans:
            state.plans[name].accumulator_packs = records
        _show(opts.print, records)


@register_pass(
    "xgen-separate-kernel-result-packs",
    "A data-tiled matmul's input converted from a kernel's reshaped result is packed apart.",
    PrintOptions,
    phase=DISPATCH,
    after=(PLAN, "xgen-data-tiling-hints"),
    only_with_flags=(DATA_TILING_FLAG,),
)
def separate_kernel_packs(module_op: Any, opts: PrintOptions, state: DispatchState) -> None:
    for name, block in function_blocks(module_op):
        done = separate_kernel_result_packs(block)
        if opts.print and done:
            what = f"@{name}: {done} matmul input(s) from kernel results packed apart"
            print(what, file=sys.stderr)


def _tile_pass(name: str, summary: str, tile: Any, field: str) -> None:
    def run(module_op: Any, opts: VectorTileOptions, state: DispatchState) -> None:
        if not _fires(opts, field.replace("_", " ")):
            return
        for fn, block in function_blocks(module_op):
            records = tile(block)
            if fn in state.plans:
                setattr(state.plans[fn], field, records)
            _show(opts.print, records)

    register_pass(
        name, summary, VectorTileOptions, phase=DISPATCH, after=(PLAN, "xgen-data-tiling-hints")
    )(run)


_tile_pass(
    "xgen-gemv-tiles",
    "Tiles for one-row matmuls against a row-major weight (classifier heads) not data-tiled.",
    tile_gemvs,
    "gemv_tiles",
)
_tile_pass(
    "xgen-matmul-tiles",
    "Tiles for plain matmuls IREE vectorizes 7 rows at a time, and for 49-row ones.",
    tile_matmuls,
    "matmul_tiles",
)


@register_pass(
    "xgen-share-pads",
    "Other readers of a padded value read the padded buffer (no copy of the unpadded one).",
    PrintOptions,
    phase=DISPATCH,
    after=(PLAN, "xgen-transpose-tiles", "xgen-gemv-tiles", "xgen-matmul-tiles"),
)
def share_pads(module_op: Any, opts: PrintOptions, state: DispatchState) -> None:
    for name, block in function_blocks(module_op):
        records = share_padded_buffers(block)
        if name in state.plans:
            state.plans[name].pad_shares = records
        _show(opts.print, records)


@dataclass
class ConvTileOptions(VectorTileOptions):
    threads: int = 1  # the target's worker threads: how many workgroups are enough


@register_pass(
    "xgen-conv-tiles",
    "Small-image convs get xgen_mlir's tiles in dispatch regions of their own.",
    ConvTileOptions,
    phase=DISPATCH,
    requires=(PLAN,),
    after=("xgen-transpose-tiles", "xgen-share-pads"),
)
def conv_tiles(module_op: Any, opts: ConvTileOptions, state: DispatchState) -> None:
    if not _fires(opts, "conv tiles"):  # 7 pixels x 32 channels: 14 AVX-512 accumulators
        return
    for name, _ in function_blocks(module_op):
        plan = state.plans[name]
        plan.conv_tiles = tile_conv_groups(plan, max(1, opts.threads))
        _show(opts.print, plan.conv_tiles)


@register_pass(
    "xgen-depthwise-pads",
    "Zero pads read only by a depthwise conv stay pads (IREE computes them in the conv's "
    "dispatch); the others become fill + insert_slice.",
    PrintOptions,
    phase=DISPATCH,
    after=(
        PLAN,
        "xgen-transpose-tiles",
        "xgen-gemv-tiles",
        "xgen-matmul-tiles",
        "xgen-share-pads",
        "xgen-conv-tiles",
    ),
)
def depthwise_pads(module_op: Any, opts: PrintOptions, state: DispatchState) -> None:
    fused = False
    for name, block in function_blocks(module_op):
        records = place_pads(block)
        fused |= any(p.fused for p in records)
        if name in state.plans:
            state.plans[name].pad_placements = records
        _show(opts.print, records)
    if fused:  # the pads left for their depthwise readers: IREE fuses them into those
        state.add_flags.append(PAD_FLAG)


@register_pass(
    "xgen-depthwise-tiles",
    "Depthwise convs get vector tiles that divide their output width (IREE's may not, and "
    "then compiles the conv to scalar code), in dispatch regions of their own.",
    ConvTileOptions,
    phase=DISPATCH,
    requires=(PLAN,),
    after=("xgen-transpose-tiles", "xgen-share-pads", "xgen-conv-tiles", "xgen-depthwise-pads"),
)
def depthwise_tiles(module_op: Any, opts: ConvTileOptions, state: DispatchState) -> None:
    """A tile that divides is a condition of IREE's vectorizer, not a choice measured on one
    host (fusion/depthwise_tiling.py); at 512-bit vectors IREE's own pick already divides
    (widths 7, 14, 15, 28, 112 checked), so its tiles, measured there, stay."""
    if opts.vector_bits >= DEPTHWISE_DIVIDES_FROM_BITS:
        if opts.print:
            print(
                f"depthwise tiles: none: at {opts.vector_bits}-bit vectors IREE's own vector "
                "tile divides the output width",
                file=sys.stderr,
            )
        return
    for name, _ in function_blocks(module_op):
        plan = state.plans[name]
        records = tile_depthwise_groups(plan, max(1, opts.threads), opts.vector_bits)
        plan.conv_tiles = [*plan.conv_tiles, *records]
        _show(opts.print, records)


MERGE = "xgen-merge-duplicate-outputs"


def shared_packs_record(records: dict[str, Any], dropped: dict[str, str]) -> SharedPacks | None:
    """What the report says of multi-reader packs: the merge's record when it ran, why IREE
    rejected it when it was dropped or why the module did not qualify, None when it did not
    apply."""
    if "shared_packs" in records:
        return records["shared_packs"]
    why = next((w for step, w in dropped.items() if step.startswith(MERGE)), None)
    why = why or records.get("skipped", {}).get(MERGE)
    return None if why is None else SharedPacks(False, why=why)


def packs_of_few_rows(state: DispatchState) -> str | None:
    """Why multi-reader packs may not go into their producers here: a packed contraction over
    more than ``SMALL_M`` rows (or a dynamic number). Measured on MiniLM at batch 4 (512
    rows, every Linear layer packed): the module compiled, then overflowed IREE's 128 KB
    worker stack at run time (SIGSEGV; it ran with 2 MB stacks or with the packs separate);
    at 128 rows (every zoo transformer at batch 1) the fused packs run and save dispatches."""
    rows = [d.m for plan in state.plans.values() for d in plan.tiling if d.tiled]
    if any(m is None for m in rows):
        return "a packed contraction has a dynamic number of rows"
    big = max(rows, default=0)
    if big > SMALL_M:
        return (
            f"a packed contraction has {big} rows (> {SMALL_M}): fused there, IREE's packs "
            "overflowed its 128 KB worker stacks at run time"
        )
    return None


@register_pass(
    MERGE,
    "After IREE's dispatch creation with multi-reader packs fused: one output per packed value.",
    PrintOptions,
    phase=DISPATCH,
    iree_flags=(SHARED_PACKS_FLAG,),
    only_with_flags=(DATA_TILING_FLAG,),
    only_if=packs_of_few_rows,
)
def merge_duplicate_outputs(module_op: Any, opts: PrintOptions, state: DispatchState) -> None:
    merged = merge_outputs(module_op)
    state.records["shared_packs"] = SharedPacks(True, merged)
    if opts.print:
        print(f"merged {merged} duplicate dispatch outputs", file=sys.stderr)


# Ops whose result IREE may write straight into a padded buffer (the pad's interior) when a
# tensor.pad reads it; block arguments and constants are copied by a pad dispatch anyway.
_COMPUTED = ("linalg.", "tensor.collapse_shape", "tensor.expand_shape")


@register_pass(
    "xgen-isolate-pad-sources",
    "A zero pad of a computed value reads it through util.optimization_barrier, so IREE pads "
    "in a copy dispatch instead of storing the producer's result into the padded buffer.",
    PrintOptions,
    phase=DISPATCH,
)
def isolate_pad_sources(module_op: Any, opts: PrintOptions, state: DispatchState) -> None:
    """Why: IREE 3.13's SPIR-V codegen vectorizes the producer's stores into the padded
    buffer's interior (offset 1 along W) as if the offset were a multiple of the vector width:
    the store index is floored, and a 1x1 conv -> pad -> depthwise conv (MobileNetV2's
    blocks) gives wrong numbers on llvmpipe (docs/targets.md). The copy dispatch IREE makes
    for a pad of a barrier's result stores element by element, and is right."""
    ir = binding_of(module_op.context).ir
    isolated = 0
    dynamic: list[str] = []
    with module_op.context:
        for name, block in function_blocks(module_op):
            for pad in ops_in(block, "tensor.pad", ir):
                source = pad.operands[0]
                owner = source.owner
                if not isinstance(owner, ir.Operation) and hasattr(owner, "operation"):
                    owner = owner.operation
                if not isinstance(owner, ir.Operation) or not owner.name.startswith(_COMPUTED):
                    continue
                ty = source.type
                if any(ty.is_dynamic_dim(i) for i in range(ty.rank)):
                    # IREE cannot reify a dynamic size through the barrier ("tensor.dim
                    # unexpected during shape cleanup"), and left as it is the pad meets the
                    # bug above: MobileNetV2 at a dynamic batch returned garbage (relative
                    # error 1.3). Refused, never wrong numbers.
                    dynamic.append(str(pad.location))
                    continue
                with ir.InsertionPoint(pad), pad.location:
                    barrier = ir.Operation.create(
                        "util.optimization_barrier", results=[source.type], operands=[source]
                    )
                pad.operands[0] = barrier.results[0]
                isolated += 1
                if opts.print:
                    print(f"xgen-isolate-pad-sources: {name}: {pad.location}", file=sys.stderr)
    if dynamic:
        shown = "; ".join(dynamic[:3]) + (
            f"; ... {len(dynamic) - 3} more" if len(dynamic) > 3 else ""
        )
        raise PassFailure(
            f"{len(dynamic)} zero pad(s) of a computed tensor with a "
            f"dynamic size ({shown}): IREE's SPIR-V codegen stores into a padded buffer one "
            "element off (docs/targets.md), and such a pad cannot be moved out of its way. "
            "Compile this model for vulkan with static shapes (no dynamic_shapes)."
        )
    state.records["isolated_pads"] = isolated


@dataclass
class ApplyTuningOptions:
    print: bool = False
    records: str = ""  # a JSON file {signature: config} (xgen-opt, tests); compile() uses state


def _read_records(path: str) -> dict[str, Any]:
    import json

    try:
        data = json.loads(open(path, encoding="utf-8").read())
    except (OSError, ValueError) as e:
        raise PipelineError(f"xgen-apply-tuning: cannot read records {path}: {e}") from None
    if not isinstance(data, dict):
        raise PipelineError(f"xgen-apply-tuning: {path} is not a JSON object of configs")
    return data


@register_pass(
    "xgen-apply-tuning",
    "Contractions whose signature has a tuned record get its compilation_info (or IREE's own "
    "tiles); with collect, each tunable's standalone module is kept for a tuner.",
    ApplyTuningOptions,
    phase=DISPATCH,
    after=(
        PLAN,
        "xgen-data-tiling-hints",
        "xgen-gemv-tiles",
        "xgen-matmul-tiles",
        "xgen-conv-tiles",
        "xgen-depthwise-pads",
    ),
)
def apply_tuning(module_op: Any, opts: ApplyTuningOptions, state: DispatchState) -> None:
    """Runs after the hand tile rules: a record overrides them, and a tuner sees their choice
    as the prior. A record that does not fit the op (another loop count) is not applied."""
    request = state.tuning if state.tuning is not None else TuningRequest()
    if opts.records:
        request.configs = {**request.configs, **_read_records(opts.records)}
    request.applied, request.untuned, request.tasks = [], [], []
    # no flags known (xgen-opt): the IR is taken as it is, data-tiled records apply
    can_data_tile = DATA_TILING_FLAG in state.iree_flags or not state.iree_flags
    hinted = False
    for _, block in function_blocks(module_op):
        tunables, skipped = find_tunables(block)
        request.untuned.extend(skipped)
        for t in tunables:
            config = request.configs.get(t.signature)
            why = None if config is None else check_config(config, len(t.sizes))
            if why is None and config is not None and config["kind"] == "data-tiled":
                if not can_data_tile:
                    why = "data-tiled record, but this compile has no data tiling (a fallback)"
            if config is None:
                request.untuned.append((t.description, "no record for this host"))
            elif why is not None:
                request.untuned.append((t.description, f"record not applied: {why}"))
            else:
                apply_config(t.op, config)
                request.applied.append((t.signature, t.description, config))
            hinted |= HINT in t.op.operation.attributes
            if opts.print:
                verdict = "tuned" if config is not None and why is None else "untuned"
                print(f"{t.signature}: {verdict}", file=sys.stderr)
            if request.collect:
                try:
                    module = standalone_module(t)
                except ValueError as e:  # the op cannot be cut out: it stays untuned
                    request.untuned.append((t.description, f"not measurable alone: {e}"))
                    continue
                request.tasks.append(
                    {
                        "signature": t.signature,
                        "description": t.description,
                        "module": module,
                        "prior": t.current,
                        "prior_why": t.prior_why,
                        "tunable": replace(t, op=None),
                    }
                )
    if (
        DATA_TILING_FLAG in state.iree_flags and request.applied
    ):  # the flag follows the hints, as in the hints pass
        if hinted or _any_hint(module_op):
            while DATA_TILING_FLAG in state.drop_flags:
                state.drop_flags.remove(DATA_TILING_FLAG)
        elif DATA_TILING_FLAG not in state.drop_flags:
            state.drop_flags.append(DATA_TILING_FLAG)
    state.records["tuning"] = request


def _any_hint(module_op: Any) -> bool:
    return any(
        HINT in op.operation.attributes
        for _, block in function_blocks(module_op)
        for op in block.operations
    )


# A chain is isolated where its consumer reads it broadcast to this many times its elements
BROADCAST_ISOLATE = 64
_CHAIN_DEPTH = 16  # how many elementwise ops back a chain is followed


def _owner_op(value: Any) -> Any:
    owner = value.owner
    return owner.operation if hasattr(owner, "operation") else owner


def _elementwise_chain_costly(value: Any) -> bool:
    """Whether ``value`` is computed by elementwise generics (through reshapes) of its size
    alone, back to something that is not a linalg op (a library call's dispatch, an
    argument), with a transcendental among them. A chain that reaches a contraction (f32
    squeeze-excite's matvecs) is the fusion plan's to decide (its matvec rule)."""
    size = _elements(value.type)
    todo, seen, costly = [value], 0, False
    while todo:
        v = todo.pop()
        op = _owner_op(v)
        if not hasattr(op, "name"):
            continue  # a block argument
        if op.name in ("tensor.expand_shape", "tensor.collapse_shape"):
            todo.append(op.operands[0])
            continue
        if op.name == "arith.constant" or not op.name.startswith("linalg."):
            continue
        if op.name != "linalg.generic" or seen >= _CHAIN_DEPTH:
            return False
        kinds = [str(a) for a in op.attributes["iterator_types"]]
        if any("reduction" in k for k in kinds) or _elements(op.results[0].type) != size:
            return False
        seen += 1
        body = op.regions[0].blocks[0].operations
        costly = costly or any(o.name in TRANSCENDENTAL for o in body)
        n_in = len(op.operands) - 1
        todo.extend(op.operands[i] for i in range(n_in))
    return costly


def _elements(ty: Any) -> int:
    n = 1
    for d in ty.shape:
        n *= d
    return n


@register_pass(
    "xgen-isolate-broadcast-chains",
    "An elementwise chain with a transcendental on a small tensor that a consumer reads "
    "broadcast reaches it through util.optimization_barrier, so IREE's elementwise fusion "
    "does not compute it again for every element of the consumer.",
    PrintOptions,
    phase=DISPATCH,
)
def isolate_broadcast_chains(module_op: Any, opts: PrintOptions, state: DispatchState) -> None:
    """Why: IREE's elementwise fusion (dispatch creation's preprocessing) inlines a producer
    generic into a consumer that reads it through a broadcast, so the producer's body runs
    once per element of the consumer. An int8 squeeze-excite (EfficientNet-B0): the
    excite's dequantize, sigmoid and requantize of 144 values, between two library calls,
    inlined into the scale of a 56x56x144 activation: 16 such dispatches, 2.9 ms of 14.9.
    Behind a barrier the chain is one small dispatch and the scale reads its 144 values.
    Only where the consumer is elementwise, the broadcast is at least ``BROADCAST_ISOLATE``
    times the chain's size and the chain holds a transcendental (an add or a product is
    cheaper to recompute than a dispatch)."""
    ir = binding_of(module_op.context).ir
    isolated = 0
    with module_op.context:
        for name, block in function_blocks(module_op):
            barriers: dict[Any, Any] = {}
            for op in ops_in(block, "linalg.generic", ir):
                kinds = [str(a) for a in op.attributes["iterator_types"]]
                if any("reduction" in k for k in kinds) or len(op.results) != 1:
                    continue
                wide = _elements(op.results[0].type)
                for i in range(len(op.operands) - 1):
                    v = op.operands[i]
                    if not isinstance(v.type, ir.RankedTensorType) or not v.type.has_static_shape:
                        continue
                    if _elements(v.type) * BROADCAST_ISOLATE > wide:
                        continue
                    if v not in barriers and not _elementwise_chain_costly(v):
                        continue
                    if v not in barriers:
                        with ir.InsertionPoint(op), op.location:
                            barriers[v] = ir.Operation.create(
                                "util.optimization_barrier", results=[v.type], operands=[v]
                            )
                        isolated += 1
                        if opts.print:
                            print(
                                f"xgen-isolate-broadcast-chains: {name}: {v.type} into "
                                f"{op.results[0].type}",
                                file=sys.stderr,
                            )
                    op.operands[i] = barriers[v].results[0]
    state.records["isolated_broadcast_chains"] = isolated
