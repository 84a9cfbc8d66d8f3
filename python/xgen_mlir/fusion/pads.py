"""Where a zero pad is computed: in its depthwise reader's dispatch, or written in place.

IREE's own form of a constant ``tensor.pad`` is ``fill`` + ``insert_slice``: it fills the whole
padded buffer (a ``fill_buffer`` command, on one thread, every call), then the producer's
dispatch writes the interior. MobileNetV2 has 18 such pads, 17.5 MB of fills per call; in IREE's
profile they are the gaps between dispatches: 0.61 ms per call, against 0.10 ms when the pads
go into their readers.

With ``--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops`` (``FLAG``), a pad
with one reader joins the reader's dispatch instead, which reads the unpadded tensor and makes
the zeros per tile. That pays for 3x3 depthwise convs, which read little per output
(MobileNetV2 per call, alternating: p10 4.77 -> 4.42 ms, median 5.14 -> 4.71). It does not for
dense 3x3 convs, whose tiles re-read their padded windows many times (ResNet-18 with the flag
for all pads: p10 20.2 -> 22.4 ms), nor for 5x5 depthwise convs (EfficientNet-B0's: 0.90 ->
1.49 ms per call in all). So ``place_pads`` leaves for IREE to fuse only the pads whose one
reader is a 3x3 depthwise conv, and turns every other one into IREE's own fill + insert_slice
form here, on which the flag has no effect. A 3x3 pooling op's pad (a max pool's -inf)
stays too: ResNet's stem pool reads the output of a library call (the offloaded stem conv),
which cannot write into a filled buffer, so the fill form cost a fill and a whole copy
(ResNet-18 in bf16 on an Intel Xeon: pad 0.12 + pool 0.09 ms -> 0.11 for both). Also
turned: a pad of a matmul that got xgen_mlir's tiles (``matmul_tiling``): IREE keeps them
only while the result is written into the padded buffer. The result is bit-identical either way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..analysis.mapping_types import ir_of
from ..irutil import defining_op

FLAG = "--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops"

# loops (oh, ow, c, kh, kw): input (oh * s + kh, ow * s + kw, c), filter (kh, kw, c), output
_DW_INPUT = re.compile(
    r"^\(d0, d1, d2, d3, d4\) -> \(d0(?: \* (\d+))? \+ d3, d1(?: \* (\d+))? \+ d4, d2\)$"
)
_DW_FILTER = "(d0, d1, d2, d3, d4) -> (d3, d4, d2)"
_POOL_WINDOW = "(d0, d1, d2, d3, d4) -> (d3, d4)"  # a pooling op's window operand
_DW_OUTPUT = "(d0, d1, d2, d3, d4) -> (d0, d1, d2)"


@dataclass
class PadPlacement:
    padded_type: str
    reader: str
    fused: bool  # left as a pad for IREE to compute inside the reader's dispatch
    reason: str

    @property
    def taken(self) -> bool:
        return self.fused

    def describe(self) -> str:
        where = "in the reader's dispatch" if self.fused else "written in place (fill)"
        return f"pad -> {self.padded_type} read by {self.reader}: {where}: {self.reason}"


def depthwise_strides(op: Any) -> tuple[int, int] | None:
    """The (h, w) strides of a channels-last 2-D depthwise conv as IREE's global
    optimizations leave it: a generic over (oh, ow, c, kh, kw) reading input
    (oh*s + kh, ow*s + kw, c) and filter (kh, kw, c); None for any other op."""
    op = op.operation
    if op.name != "linalg.generic" or len(op.operands) != 3:
        return None
    maps = [
        str(m).removeprefix("affine_map<").removesuffix(">") for m in op.attributes["indexing_maps"]
    ]
    match = _DW_INPUT.match(maps[0])
    if match is None or maps[1:] != [_DW_FILTER, _DW_OUTPUT]:
        return None
    return int(match.group(1) or 1), int(match.group(2) or 1)


def is_depthwise_conv(op: Any) -> bool:
    return depthwise_strides(op) is not None


def is_pooling(op: Any) -> bool:
    """A channels-last 2-D pooling op as IREE's global optimizations leave it: a generic like
    a depthwise conv's whose second operand is the window alone (kh, kw)."""
    op = op.operation
    if op.name != "linalg.generic" or len(op.operands) != 3:
        return False
    maps = [
        str(m).removeprefix("affine_map<").removesuffix(">") for m in op.attributes["indexing_maps"]
    ]
    return _DW_INPUT.match(maps[0]) is not None and maps[1:] == [_POOL_WINDOW, _DW_OUTPUT]


def place_pads(block: Any) -> list[PadPlacement]:
    """Decide every pad at ``block``'s top level (see the module docstring); pads inside
    dispatch regions are already placed by the steps that formed them."""
    records = []
    for pad in [op.operation for op in block.operations if op.operation.name == "tensor.pad"]:
        padded = str(pad.results[0].type)
        reader, fuse, why = _placement(pad)
        if not fuse and pad_to_insert_slice(pad) is None:
            why = "not a static constant pad: left to IREE"
        records.append(PadPlacement(padded, reader, fuse, why))
    return records


def stays_in_reader(pad: Any) -> bool:
    """Whether ``pad`` is one this module leaves for its reader's dispatch (a static pad read
    only by a 3x3 depthwise conv or pooling op whose producer has no xgen_mlir tiles)."""
    pad = pad.operation
    return pad.name == "tensor.pad" and _placement(pad)[1] and _static_constant(pad) is not None


def _placement(pad: Any) -> tuple[str, bool, str]:
    """(who reads ``pad``, whether it stays a pad for its reader's dispatch, why)."""
    users = [u.owner.operation for u in pad.results[0].uses]
    pool = len(users) == 1 and is_pooling(users[0])
    if len(users) != 1 or not (pool or is_depthwise_conv(users[0])):
        reader = users[0].name if len(users) == 1 else f"{len(users)} readers"
        return (
            reader,
            False,
            "not read by a depthwise conv or a pooling op alone (fused pads made ResNet-18's "
            "dense convs 10% slower)",
        )
    kh, kw = ir_of(pad).RankedTensorType(users[0].operands[1].type).shape[:2]
    reader = f"{'pooling' if pool else 'depthwise conv'} {kh}x{kw}"
    if (kh, kw) != (3, 3):
        why = "wider windows: fused pads made EfficientNet-B0's 5x5 convs 65% slower"
    elif _has_xgen_tiles(pad.operands[0]):
        why = "its producer has xgen_mlir's tiles: IREE keeps them only if written in place"
    else:
        return reader, True, "reads little per output: zeros per tile beat a whole-buffer fill"
    return reader, False, why


def _has_xgen_tiles(value: Any, depth: int = 3) -> bool:
    """``value`` comes, through at most ``depth`` linalg ops (an epilogue), from an op that
    carries xgen_mlir's tile sizes (``compilation_info``, set by ``matmul_tiling``)."""
    op = defining_op(value)
    if op is None or not op.name.startswith("linalg."):
        return False
    if "compilation_info" in op.attributes:
        return True
    return depth > 1 and any(_has_xgen_tiles(v, depth - 1) for v in op.operands)


def _static_constant(pad: Any) -> Any | None:
    """The ``arith.constant`` a static ``tensor.pad`` pads with; None for other pads."""
    padded = ir_of(pad).RankedTensorType(pad.results[0].type)
    if len(pad.operands) != 1 or not padded.has_static_shape:
        return None
    body = [o.operation for o in pad.regions[0].blocks[0].operations]
    constant = defining_op(body[-1].operands[0]) if len(body) == 1 else None
    return constant if constant is not None and constant.name == "arith.constant" else None


def pad_to_insert_slice(pad: Any) -> Any | None:
    """Replace a static ``tensor.pad`` with a constant padding value by
    ``insert_slice(source, fill)`` (IREE's own form of a pad, which the producer's dispatch
    writes in place into the filled buffer); returns the insert_slice, or None (unchanged)
    for other pads."""
    pad = pad.operation
    constant = _static_constant(pad)
    if constant is None:
        return None
    ir = ir_of(pad)
    padded = ir.RankedTensorType(pad.results[0].type)
    value = pad.operands[0]
    low = [int(v) for v in pad.attributes["static_low"]]
    shape = list(ir.RankedTensorType(value.type).shape)
    with pad.location, ir.InsertionPoint(pad):
        empty = ir.Operation.create("tensor.empty", results=[padded], operands=[])
        fill = ir.Operation.create(
            "linalg.fill",
            results=[padded],
            operands=[constant.results[0], empty.results[0]],
            attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 1])},
            regions=1,
        )
        block = fill.regions[0].blocks.append(padded.element_type, padded.element_type)
        with ir.InsertionPoint(block):
            ir.Operation.create("linalg.yield", operands=[block.arguments[0]])
        insert = ir.Operation.create(
            "tensor.insert_slice",
            results=[padded],
            operands=[value, fill.results[0]],
            attributes={
                "static_offsets": ir.DenseI64ArrayAttr.get(low),
                "static_sizes": ir.DenseI64ArrayAttr.get(shape),
                "static_strides": ir.DenseI64ArrayAttr.get([1] * len(shape)),
                "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 1, 0, 0, 0]),
            },
        )
    pad.results[0].replace_all_uses_with(insert.results[0])
    pad.erase()
    return insert
