"""Tile sizes for small-image convolutions, chosen by xgen_mlir and handed to IREE's codegen.

IREE's CPU heuristic tiles a channels-last conv with vectors of 7-8 output pixels x 16
channels (7-8 accumulator registers) and distributes one output row x 64 channels per
workgroup. On a 7x7 or 14x14 image that gives each workgroup 7-14 output pixels to reuse a
3x3xCx64 filter slice over, so the convs become filter-bandwidth bound: ResNet-18's 7x7x512
3x3 convs ran at 114 GFLOP/s and its 14x14x256 ones at 169, against 205-220 for the same
convs at 28x28 and 56x56 (benchmarks/profile_dispatches.py, 2026-11-21).

The tiles used here (measured one conv at a time, interleaved, on this 2-core AVX-512 CPU):
  workgroup: up to 7 output rows x the whole row x 64 channels (the filter slice is read
    once per 49-98 pixels);
  vector: 7 pixels x 32 channels = 14 zmm accumulators, two FMA chains per weight load;
  reduction: 4 input channels per step.
  7x7x512 s1: 1.80 -> 1.19 ms; 14x14x256 s1: 1.29 -> 1.11; 7x7x512 s2: 0.72 -> 0.62;
  14x14x256 s2: 0.67 -> 0.58; 28x28 and 56x56: within 2% of IREE's own (so left to IREE).

Two IREE details make this more than setting an attribute:
- IREE folds the conv's unit batch away, and its codegen puts it back
  (``InsertBatchDimForBatchlessConvPass``) after it has read the user's config, rebuilding
  the op without it. So the conv is re-batched here (7-d, N = 1) inside a dispatch region
  that the planner forms, where IREE's unit-dim folding does not reach.
- IREE fuses a ``tensor.insert_slice`` into a fill (a ``tensor.pad`` of the conv's result for
  the next conv) only into regions it forms itself; for ours it would copy. So a constant pad
  that is the result's only reader becomes ``fill`` + ``insert_slice``, and the insert_slice
  goes into the region: the conv writes straight into the padded buffer, as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..analysis.mapping_types import MappingType, classify, ir_of
from ..irutil import clone_body, defining_op
from .lowering import TileDecision, compilation_info
from .pads import pad_to_insert_slice
from .regions import wrap_in_region

MAX_PIXELS = 196  # 14x14; at 28x28 and 56x56 IREE's own tiles were within 2% (measured)
PIPELINE = "ConvTileAndDecomposeExpert"

_INPUT_MAP = re.compile(
    r"^\(d0, d1, d2, d3, d4, d5\) -> \(d0(?: \* (\d+))? \+ d3, d1(?: \* (\d+))? \+ d4, d5\)$"
)
_FILTER_MAP = "(d0, d1, d2, d3, d4, d5) -> (d3, d4, d5, d2)"
_OUTPUT_MAP = "(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2)"


@dataclass
class ConvGeometry:
    oh: int
    ow: int
    oc: int
    kh: int
    kw: int
    ic: int
    stride: tuple[int, int]

    def __str__(self) -> str:
        s = f" s{self.stride[0]}" if self.stride != (1, 1) else ""
        return f"{self.oh}x{self.ow}x{self.oc} {self.kh}x{self.kw}x{self.ic}{s}"


@dataclass
class ConvTile(TileDecision):
    """A ``TileDecision`` for a conv, plus how many of its result's pads it writes in place."""

    pads_absorbed: int = 0
    input_pad: bool = False  # the pad the conv reads is computed in its dispatch

    @property
    def conv(self) -> str:
        return self.op

    def describe(self) -> str:
        pads = f"; {self.pads_absorbed} pad(s) written in place" if self.pads_absorbed else ""
        pads += "; its input's pad computed in its dispatch" if self.input_pad else ""
        return super().describe() + pads


def conv_geometry(op: Any) -> ConvGeometry | None:
    """The shape of a batchless channels-last 2-D conv generic (what IREE's global
    optimizations leave: input HxWxC, filter KHxKWxCxF, output OHxOWxF, multiply-add body);
    None for anything else (depthwise, dilated, grouped, other bodies)."""
    op = op.operation
    if op.name != "linalg.generic" or len(op.operands) != 3 or len(op.results) != 1:
        return None
    kinds = [str(a) for a in op.attributes["iterator_types"]]
    if [("reduction" in k) for k in kinds] != [False] * 3 + [True] * 3:
        return None
    maps = [
        str(m).removeprefix("affine_map<").removesuffix(">") for m in op.attributes["indexing_maps"]
    ]
    match = _INPUT_MAP.match(maps[0])
    if match is None or maps[1] != _FILTER_MAP or maps[2] != _OUTPUT_MAP:
        return None
    body = [o.operation.name for o in op.regions[0].blocks[0].operations]
    if body != ["arith.mulf", "arith.addf", "linalg.yield"]:
        return None
    ir = ir_of(op)
    out = list(ir.RankedTensorType(op.results[0].type).shape)
    kh, kw, ic, oc = ir.RankedTensorType(op.operands[1].type).shape
    if any(ir.ShapedType.is_dynamic_size(d) for d in [*out, kh, kw, ic, oc]):
        return None  # the tile rules need every size
    stride = (int(match.group(1) or 1), int(match.group(2) or 1))
    return ConvGeometry(out[0], out[1], oc, kh, kw, ic, stride)


# Output pixels of a row per register tile (IREE's heuristic takes 7-8, choose_tiles 4-7)
VECTOR_PIXELS = range(4, 8)


def vector_tiles_misfit(ow: int, oc: int, vector_floats: int) -> str | None:
    """Why the register tiles of a channels-last conv (``vector_floats`` output channels x
    4 to 7 output pixels of a row: IREE's heuristic with one vector, ``choose_tiles`` with
    two) do not divide a conv with output rows of ``ow`` pixels and ``oc`` channels, or None
    where they do. Such a conv is left with remainder loops: on AVX-512, PP-OCRv4's 1x3 convs
    to 60 channels ran at 3-8 GFLOP/s, and ddddocr's 3x3 convs on 13- and 26-pixel rows 2-3x
    slower than oneDNN's."""
    if oc % vector_floats:
        return f"{oc} output channels are not a multiple of the {vector_floats}-float vector"
    if not any(ow % d == 0 for d in VECTOR_PIXELS):
        return f"output rows of {ow} pixels have no divisor in 4..7"
    return None


def choose_tiles(g: ConvGeometry, threads: int) -> tuple[list[list[int]] | None, str]:
    """[distribution, vector, reduction] tile sizes over (n, oh, ow, oc, kh, kw, ic), or None
    and the reason IREE's own are kept."""
    if g.oh * g.ow > MAX_PIXELS:
        return None, f"{g.oh}x{g.ow} output: above 14x14 IREE's tiles were as fast (measured)"
    if g.ic % 4:
        return None, f"{g.ic} input channels: not a multiple of the 4-channel reduction step"
    misfit = vector_tiles_misfit(g.ow, g.oc, 32)  # a 7 x 32-channel tile: two vectors wide
    if misfit is not None:
        return None, misfit
    owt = max(d for d in VECTOR_PIXELS if g.ow % d == 0)
    ohd = max(d for d in range(1, 8) if g.oh % d == 0)
    ocd = 64 if g.oc % 64 == 0 else 32
    # Enough workgroups to keep every thread busy: narrow the channel tile, then the rows.
    while (g.oh // ohd) * (g.oc // ocd) < 2 * threads:
        if ocd > 32:
            ocd //= 2
        elif ohd > 1:
            ohd = max(d for d in range(1, ohd) if g.oh % d == 0)
        else:
            break
    tiles = [[0, ohd, g.ow, ocd, 0, 0, 0], [1, 1, owt, 32, 0, 0, 0], [0, 0, 0, 0, 1, 1, 4]]
    return tiles, f"{g.oh}x{g.ow} output: filter reuse per workgroup (IREE's: one row)"


def _conv_decision(op: Any, threads: int) -> tuple[str, list[list[int]] | None, str] | None:
    geom = conv_geometry(op)
    if geom is None:
        return None
    tiles, why = choose_tiles(geom, threads)
    return str(geom), tiles, why


def tile_conv_groups(
    plan: Any,
    threads: int,
    decide: Callable[[Any, list[Any]], tuple[str, list[list[int]] | None, str] | None]
    | None = None,
    kind: str = "conv",
    input_pad: Callable[[Any], bool] | None = None,
) -> list[ConvTile]:
    """For every delegated group rooted at a conv that gets tiles (``decide``, given an op and
    its group's ops: the conv's name, its ``[distribution, vector, reduction]`` tiles or None,
    and why; None for an op that is not its kind of conv; by default
    ``choose_tiles`` on dense convs): re-batch the conv with the tiles attached, let the region
    absorb its results' constant pads, and wrap the group in a region (the group is no longer
    delegated). ``input_pad``: whether the pad the conv reads goes into the region too (IREE
    then makes its zeros per tile). Returns one record per conv-rooted group."""
    if decide is None:
        decide = lambda op, _: _conv_decision(op, threads)  # noqa: E731
    records = []
    group_ops = list(zip(plan.groups, plan.group_ops(), strict=True))
    grouped = {o.operation for g, ops in group_ops if len(g.members) > 1 for o in ops}
    for group, ops in group_ops:
        if not group.delegated or not group.contractions or group.why_delegated:
            continue  # delegated for a reason of its own (dynamic shapes): IREE's
        ops = [o.operation for o in ops]
        found = [(o, decide(o, ops)) for o in ops]
        convs = [(o, d) for o, d in found if d is not None]
        if len(convs) != 1:
            continue
        conv, (name, tiles, why) = convs[0]
        dist, vec, red = tiles or (None, None, None)
        record = ConvTile(kind, name, dist, vec, why, red)
        records.append(record)
        if tiles is None:
            continue
        node = next(plan.nodes[i] for i in group.members if plan.nodes[i].op.operation == conv)
        others = [o for o in ops if o != conv]
        pad = defining_op(conv.operands[0])
        pad = pad if pad is not None and input_pad is not None and input_pad(pad) else None
        rebatched = _rebatch(conv, tiles)
        node.op = rebatched[2]  # the plan keeps pointing at live IR
        members = others + rebatched + ([pad] if pad is not None else [])
        slices = []
        for op in list(members):
            for result in op.results:
                insert = _pad_as_insert_slice(result, input_pad)
                if insert is not None:
                    slices.append(insert)
                reorder = _layout_change(result, members, grouped)
                if reorder is not None:  # IREE fuses it into its own conv dispatches too
                    members.append(reorder)
        record.pads_absorbed = len(slices)
        record.input_pad = pad is not None
        wrap_in_region(members + slices)
        group.delegated = False
    return records


def conv_compilation_info(ir: Any, tiles: list[list[int]]) -> Any:
    dist, vec, red = tiles
    return compilation_info(
        ir, PIPELINE, distribution=dist, vector_common_parallel=vec, vector_reduction=red
    )


def _rebatch(conv: Any, tiles: list[list[int]]) -> list[Any]:
    """Replace the batchless conv (6-d dense, 5-d depthwise) by expand_shape -> the conv with
    a unit batch loop first (tiles attached) -> collapse_shape; returns the new ops."""
    ir = ir_of(conv)
    x, w, init = conv.operands
    with conv.location, ir.InsertionPoint(conv):
        xt, ot = ir.RankedTensorType(x.type), ir.RankedTensorType(init.type)
        x4, i4 = _expand(ir, x, xt), _expand(ir, init, ot)
        # Every loop moves up one; the input and the output gain the batch as d0, the filter
        # does not (a dense conv's and a depthwise conv's maps alike).
        results = [
            re.sub(
                r"d(\d+)",
                lambda m: f"d{int(m.group(1)) + 1}",
                str(m).removeprefix("affine_map<").removesuffix(">").split(" -> ")[1],
            )
            for m in conv.attributes["indexing_maps"]
        ]
        old_kinds = [str(k) for k in conv.attributes["iterator_types"]]
        dims = "(" + ", ".join(f"d{i}" for i in range(len(old_kinds) + 1)) + ") -> "
        maps = [
            dims + "(d0, " + results[0][1:],
            dims + results[1],
            dims + "(d0, " + results[2][1:],
        ]
        kinds = ["parallel"] + ["reduction" if "reduction" in k else "parallel" for k in old_kinds]
        affine = [ir.Attribute.parse(f"affine_map<{m}>") for m in maps]
        attrs = {
            "indexing_maps": ir.ArrayAttr.get(affine),
            "iterator_types": ir.ArrayAttr.get(
                [ir.Attribute.parse(f"#linalg.iterator_type<{k}>") for k in kinds]
            ),
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([2, 1]),
            "compilation_info": conv_compilation_info(ir, tiles),
        }
        new = ir.Operation.create(
            "linalg.generic", results=[i4.type], operands=[x4, w, i4], attributes=attrs, regions=1
        )
        clone_body(conv, new)
        collapse = ir.Operation.create(
            "tensor.collapse_shape",
            results=[ot],
            operands=[new.results[0]],
            attributes={"reassociation": _reassociation(ir)},
        )
    conv.results[0].replace_all_uses_with(collapse.results[0])
    conv.erase()
    return [defining_op(x4), defining_op(i4), new, collapse]


def _reassociation(ir: Any) -> Any:
    """The unit batch joins the first dimension."""
    return ir.Attribute.parse("[[0, 1], [2], [3]]")


def _expand(ir: Any, value: Any, ty: Any) -> Any:
    shape = [1, *ty.shape]
    return ir.Operation.create(
        "tensor.expand_shape",
        results=[ir.RankedTensorType.get(shape, ty.element_type)],
        operands=[value],
        attributes={
            "reassociation": _reassociation(ir),
            "static_output_shape": ir.DenseI64ArrayAttr.get(shape),
        },
    ).results[0]


def _layout_change(value: Any, members: list[Any], grouped: set[Any]) -> Any | None:
    """``value``'s only reader if it is an elementwise op that stores in another layout (the
    epilogue + transpose back to NCHW at a model's output or before a flatten). The planner
    keeps those out of contraction groups (IREE's matmul codegen rejects them), but IREE fuses
    them into its own conv dispatches, so the region must too, or they cost a dispatch. Not
    when the planner grouped it with other ops (``grouped``), nor when it is already in a
    region: that group keeps it."""
    uses = list(value.uses)
    if len(uses) != 1:
        return None
    user = uses[0].owner.operation
    if (
        user in members
        or user in grouped
        or user.name not in ("linalg.generic", "linalg.transpose")
        # already in a dispatch region of its own (an earlier step wrapped it: EfficientNet
        # int8's dequantize-and-transpose after a depthwise conv)
        or user.block != value.owner.operation.block
    ):
        return None
    mapping = classify(user)  # a reduction would be Many-to-Many
    layout = (MappingType.REORGANIZE, MappingType.SHUFFLE)
    if mapping is None or mapping.type not in layout or len(user.results) != 1:
        return None
    return user


def _pad_as_insert_slice(value: Any, keep: Callable[[Any], bool] | None = None) -> Any | None:
    """If ``value``'s only reader is a static constant ``tensor.pad`` (and not one ``keep``
    leaves for its own reader's dispatch), replace it by IREE's own form,
    ``insert_slice(value, fill)``, and return the insert_slice."""
    uses = list(value.uses)
    if len(uses) != 1 or uses[0].owner.operation.name != "tensor.pad":
        return None
    pad = uses[0].owner.operation
    if keep is not None and keep(pad):
        return None
    return pad_to_insert_slice(pad)
