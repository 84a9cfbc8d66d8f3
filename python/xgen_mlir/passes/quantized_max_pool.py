"""xgen-quantized-max-pool: a max pool between a dequantize and a quantize of the same scale
and zero point pools the int8 values themselves.

Why: a QDQ model pools a quantized activation as floats: the conv's output quantized (to
floats holding integers: ``xgen-elide-int-roundtrips``, as only the dequantize reads them),
dequantized, padded with -inf, pooled, and quantized again with the same parameters.
ResNet-18's stem pool (static int8, Intel Xeon with AMX): the stem's int32 sums dequantized
and requantized by IREE (0.15 ms) and the pool over 3.2 MB of f32 (0.11 ms). A dequantize
``(q - zp) * s`` with ``s > 0`` keeps the order of its inputs, so the maximum of the
dequantized window is the dequantized maximum, and quantizing it again with the same ``s``
and ``zp`` gives back that integer. So the first quantize writes int8, the pool takes the
int8 values (padded with -128, which no window's maximum is below), and its result replaces
the second quantize's; the conv before it can then requantize in its library call
(``xgen-byoc-offload``: s8q).

What it matches: ``linalg.pooling_nhwc_max`` / ``pooling_nchw_max`` whose input is a
``tensor.pad`` by a constant (or no pad) of an elementwise ``(x - zp) * s`` (scalar
constants, ``s > 0``) of a quantize to floats (the frontend's QuantizeLinear without the
``fptosi``: clamps within int8), each the single user of the one before, or of an int8
tensor (``(sitofp(q) - zp) * s``: a generated kernel that requantized itself); whose init is a fill
with a constant at most the smallest dequantized value; and whose single user is a quantize
to int8 with the same ``s`` and ``zp`` and clamps -128 and 127. It must not fire on another
scale or zero point after the pool, a pool that is not a max, a dequantize or quantize read by
anything else, or a pad above the smallest value (a window of padding alone would then differ).

Numerics: exact.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from .._mlir import arith, ir, linalg, tensor
from ..irutil import ops_named
from .epilogue_c import scalar_constant
from .generic_util import body, empty, fill, producer, single_user
from .quantize_match import dequantize_of, int8_quantize, quantize_of
from .registry import register_pass

MAX_POOLS = ("linalg.pooling_nhwc_max", "linalg.pooling_nchw_max")


@dataclass
class QuantizedMaxPoolOptions:
    pass


def _constant_float(value: ir.Value) -> float | None:
    found = scalar_constant(value)
    return None if found is None else float(found)


def _fill_value(value: ir.Value) -> float | None:
    """The constant ``value`` is filled with (a ``linalg.fill`` of a scalar constant)."""
    op = producer(value)
    if op is None or op.name != "linalg.fill":
        return None
    return _constant_float(op.operands[0])


@dataclass
class _Found:
    fq: ir.Operation | None  # the quantize to floats (None: the dequantize reads int8)
    dq: ir.Operation  # the dequantize
    pad: ir.Operation | None
    q: ir.Operation  # the quantize to int8 after the pool


def _match(pool: ir.Operation) -> _Found | None:
    """What ``pool`` pools, if it matches (module doc)."""
    padded = pool.operands[0]
    pad = producer(padded)
    source = padded
    if pad is not None and pad.name == "tensor.pad":
        source = pad.operands[0]
        if single_user(source) is None:
            return None
    else:
        pad = None
    dq = producer(source)
    if dq is None:
        return None
    direct = dequantize_of(dq, of_int8=True)  # of an int8 tensor: a kernel's requantized output
    found = direct or dequantize_of(dq)
    if found is None or single_user(dq.results[0]) is None:
        return None
    s, zp = found
    fq = None
    if direct is None:
        fq = producer(dq.operands[0])
        fq_found = None if fq is None else quantize_of(fq, as_float=True)
        if fq is None or fq_found is None or single_user(fq.results[0]) is None:
            return None
        if fq_found[2] < -128 or fq_found[3] > 127:
            return None
    lowest = (-128 - zp) * s
    if pad is not None:
        yielded = body(pad).operations[0].operands[0] if len(body(pad).operations) == 1 else None
        value = None if yielded is None else _constant_float(yielded)
        if value is None or value > lowest:
            return None
    init = _fill_value(pool.operands[2])
    if init is None or init > lowest:
        return None
    q = single_user(pool.results[0])
    q_found = None if q is None else quantize_of(q)
    if q is None or q_found is None:
        return None
    q_scale, q_zp, low, high = q_found
    if (q_scale, float(q_zp)) != (s, zp) or (low, high) != (-128, 127):
        return None
    return _Found(fq, dq, pad, q)


def _rewrite(pool: ir.Operation, found: _Found) -> None:
    i8 = ir.IntegerType.get_signless(8)
    values = int8_quantize(found.fq).results[0] if found.fq else found.dq.operands[0]
    with ir.InsertionPoint(pool), pool.location:
        lowest = arith.ConstantOp(i8, ir.IntegerAttr.get(i8, -128)).result
        if found.pad is not None:
            shape = ir.RankedTensorType(found.pad.results[0].type).shape
            new_pad = tensor.PadOp(
                ir.RankedTensorType.get(shape, i8),
                values,
                [],
                [],
                found.pad.attributes["static_low"],
                found.pad.attributes["static_high"],
            )
            block = new_pad.regions[0].blocks.append(*[ir.IndexType.get()] * len(shape))
            with ir.InsertionPoint(block):
                tensor.YieldOp(lowest)
            values = new_pad.result
        out_shape = ir.RankedTensorType(pool.results[0].type).shape
        init = fill(lowest, empty(out_shape, i8))
        build = (
            linalg.pooling_nhwc_max if pool.name.endswith("nhwc_max") else linalg.pooling_nchw_max
        )
        pooled = build(
            values,
            pool.operands[1],
            outs=[init],
            strides=list(ir.DenseIntElementsAttr(pool.attributes["strides"])),
            dilations=list(ir.DenseIntElementsAttr(pool.attributes["dilations"])),
        )
    found.q.results[0].replace_all_uses_with(pooled)
    for op in (found.q, pool, found.pad, found.dq, found.fq):
        if op is not None:
            op.erase()


def quantized_max_pool(module_op: ir.Operation) -> Counter:
    counts: Counter[str] = Counter()
    with module_op.context:
        for pool in ops_named(module_op, *MAX_POOLS):
            found = _match(pool)
            if found is None:
                continue
            _rewrite(pool, found)
            counts["max pools on int8"] += 1
    return counts


@register_pass(
    "xgen-quantized-max-pool",
    "A max pool between a dequantize and a quantize of the same scale and zero point pools "
    "the int8 values (exact: a dequantize keeps the order).",
    QuantizedMaxPoolOptions,
)
def _pass(module_op: ir.Operation, opts: QuantizedMaxPoolOptions | None) -> Counter:
    return quantized_max_pool(module_op)
