"""Padded values with other readers: those readers read the padded buffer's interior instead.

A ``tensor.pad`` whose source ``v`` has other users costs a copy. The producer writes ``v``,
then a separate dispatch copies it into the zero-bordered buffer. ResNet's residuals are the
case: the next block's 3x3 conv reads the value padded, its residual add reads it plain
(ResNet-18: 8 of IREE's 32 dispatches are these copies).

The fix: the other readers read ``extract_slice(pad(v))`` at offset ``low``, which holds exactly
``v``'s elements. Then ``v`` has one user, the pad. IREE turns a single-use pad into a fill
plus an insert_slice, and the producer's dispatch writes straight into the padded buffer, so
no copy is left. The elements read are the same ones, so the result is bit-exact whatever
the padding value. A reader that is itself a static ``extract_slice`` of ``v`` (the strided
input of a downsampling 1x1 conv) becomes one slice of the padded buffer, its offsets
shifted by ``low``.

The slice reads ``pad(v)`` through an ``iree_tensor_ext.compute_barrier.start``. Without it,
IREE's canonicalizer folds ``extract_slice(insert_slice(v))`` back to ``v`` once the pad has
become an insert_slice, and the copy comes back. IREE removes the barriers after it has
formed the dispatch regions, and the slice is cloned into the reading dispatch by then.

This runs after the regions are formed, on the function's top block. A reader inside a
planned region gets its slice inside that region.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..analysis.mapping_types import ir_of
from ..irutil import defining_op
from .regions import within

BARRIER = "iree_tensor_ext.compute_barrier.start"
REGION = "flow.dispatch.region"


@dataclass
class PadShare:
    value: str  # the padded value's producer, e.g. "linalg.generic" or "flow.dispatch.region"
    padded_type: str
    readers: int  # readers moved onto the padded buffer
    taken: bool
    reason: str

    def describe(self) -> str:
        verdict = "share" if self.taken else "keep copy"
        return f"pad of {self.value} -> {self.padded_type}: {verdict}: {self.reason}"


def share_padded_buffers(block: Any) -> list[PadShare]:
    """Rewrite every eligible multi-use padded value in ``block`` (see the module docstring)."""
    pads = [op.operation for op in block.operations if op.operation.name == "tensor.pad"]
    records = []
    for pad in pads:
        value = pad.operands[0]
        readers = [u.owner.operation for u in value.uses if u.owner.operation != pad]
        if not readers:
            continue  # single use: IREE already writes the producer's result in place
        why = _refusal(pad, value, readers, block)
        producer = defining_op(value)
        record = PadShare(
            producer.name if producer is not None else "a function argument",
            str(pad.results[0].type),
            0,
            why is None,
            why or "",
        )
        if why is None:
            record.readers = _rewrite(pad, value, readers, producer)
            record.reason = f"{record.readers} other reader(s) read the padded buffer's interior"
        records.append(record)
    return records


def _refusal(pad: Any, value: Any, readers: list[Any], block: Any) -> str | None:
    if len(pad.operands) != 1:
        return "dynamic padding amounts"
    if not ir_of(pad).RankedTensorType(value.type).has_static_shape:
        return "a dynamic shape"
    if any(d < 0 for d in _ints(pad.attributes["static_low"])):
        return "negative low padding"
    fn = pad.parent.operation
    producer = defining_op(value)
    if producer is None or producer.parent is None or producer.parent.operation != fn:
        return "the value is not produced in this block (nothing writes it in place)"
    for reader in readers:
        if reader.name == "tensor.pad":
            return "the value is padded twice"
        if not (reader.name.startswith("linalg.") or reader.name == "tensor.extract_slice"):
            if not _in_linalg_body(reader):
                return f"a reader is {reader.name}, not a tensor computation"
    # The padding value (captured by the pad's body) must exist where the pad moves to.
    order = {op.operation: i for i, op in enumerate(block.operations)}
    for inner in pad.regions[0].blocks[0].operations:
        for v in inner.operation.operands:
            owner = defining_op(v)
            if owner is None or within(owner, {pad}):
                continue
            if order.get(_top_level(owner, fn), -1) > order[producer]:
                return "the padding value is defined after the padded value"
    return None


def _rewrite(pad: Any, value: Any, readers: list[Any], producer: Any) -> int:
    ir = ir_of(pad)
    pad.move_after(producer)
    low = _ints(pad.attributes["static_low"])
    shape = list(ir.RankedTensorType(value.type).shape)
    padded = pad.results[0]
    with pad.location, ir.InsertionPoint(pad):
        barrier = ir.Operation.create(BARRIER, results=[padded.type], operands=[padded])
    barrier.move_after(pad)
    view = barrier.results[0]
    for reader in readers:
        at = _insertion_anchor(reader)
        with reader.location, ir.InsertionPoint(at):
            if reader.name == "tensor.extract_slice" and len(reader.operands) == 1:
                attrs = reader.attributes
                offsets = _ints(attrs["static_offsets"])
                offsets = [o + d for o, d in zip(offsets, low, strict=True)]
                sizes, strides = _ints(attrs["static_sizes"]), _ints(attrs["static_strides"])
                new = _slice(ir, view, reader.results[0].type, offsets, sizes, strides)
                reader.results[0].replace_all_uses_with(new.results[0])
                reader.erase()
                continue
            new = _slice(ir, view, value.type, low, shape, [1] * len(shape))
            for i, operand in enumerate(reader.operands):
                if operand == value:
                    reader.operands[i] = new.results[0]
    return len(readers)


def _slice(ir: Any, source: Any, result_type: Any, offsets, sizes, strides) -> Any:
    def arr(xs):
        return ir.DenseI64ArrayAttr.get([int(x) for x in xs])

    return ir.Operation.create(
        "tensor.extract_slice",
        results=[result_type],
        operands=[source],
        attributes={
            "static_offsets": arr(offsets),
            "static_sizes": arr(sizes),
            "static_strides": arr(strides),
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 0, 0, 0]),
        },
    )


def _insertion_anchor(reader: Any) -> Any:
    """The op before which a reader's slice goes: the reader itself, or for a read inside a
    linalg body, the linalg op (a slice inside a dispatch region stays in that region)."""
    op = reader
    while _in_linalg_body(op):
        op = op.parent.operation
    return op


def _in_linalg_body(op: Any) -> bool:
    parent = op.parent
    return parent is not None and parent.operation.name.startswith("linalg.")


def _top_level(op: Any, fn: Any) -> Any:
    """``op`` itself or its ancestor that sits directly in ``fn``'s body."""
    while op.parent is not None and op.parent.operation != fn:
        op = op.parent.operation
    return op


def _ints(attr: Any) -> list[int]:
    return [int(x) for x in attr]
