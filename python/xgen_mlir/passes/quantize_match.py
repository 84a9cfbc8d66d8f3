"""Matchers and builders for the quantize and dequantize steps of a QDQ model as the ONNX
frontend imports them (elementwise generics with scalar constants), shared by the passes that
move those steps: ``xgen-byoc-offload`` (into a library call's epilogue) and
``xgen-quantized-max-pool`` (a pool onto the int8 values)."""

from __future__ import annotations

import itertools

from .._mlir import arith, ir, linalg
from .epilogue_c import scalar_constant
from .generic_util import (
    body,
    body_ops,
    empty,
    indexing_maps,
    is_elementwise,
    is_identity,
    num_inputs,
)


def quantize_of(op: ir.Operation, as_float: bool = False) -> tuple[float, int, float, float] | None:
    """``(scale, zero point, low, high)`` if elementwise generic ``op`` is the frontend's
    QuantizeLinear to int8 of its one input: ``fptosi(min(max(roundeven(x / scale) + zp,
    low), high))`` (the clamps in either order) with scalar constants; ``as_float``: the
    same without the ``fptosi``, the integers written as f32 (``xgen-elide-int-roundtrips``
    left a quantize that only a dequantize reads so)."""
    if not is_elementwise(op) or num_inputs(op) != 1:
        return None
    elem = str(ir.RankedTensorType(op.results[0].type).element_type)
    if elem != ("f32" if as_float else "i8"):
        return None
    ops = body_ops(op)
    names = [o.name for o in ops]
    clamps = {"arith.maximumf", "arith.minimumf"}
    tail = ["linalg.yield"] if as_float else ["arith.fptosi", "linalg.yield"]
    if len(ops) != 5 + len(tail) or names[:3] != ["arith.divf", "math.roundeven", "arith.addf"]:
        return None
    if set(names[3:5]) != clamps or names[5:] != tail:
        return None
    x = body(op).arguments[0]
    div, rnd, add, c1, c2 = ops[:5]
    chain = [(div, x), (rnd, div.results[0]), (add, rnd.results[0]), (c1, add.results[0])]
    chain += [(o, prev.results[0]) for prev, o in itertools.pairwise(ops[3:])]
    if as_float:
        chain = chain[:-1]  # (the yield of the clamped value)
    if any(o.operands[0] != v for o, v in chain):
        return None
    bounds = {o.name: scalar_constant(o.operands[1]) for o in (c1, c2)}
    found = [scalar_constant(div.operands[1]), scalar_constant(add.operands[1])]
    found += [bounds["arith.maximumf"], bounds["arith.minimumf"]]
    if any(v is None for v in found):
        return None
    scale, zp, low, high = (float(v) for v in found if v is not None)
    if zp != int(zp) or not scale > 0:
        return None
    return scale, int(zp), low, high


def dequantize_of(op: ir.Operation, of_int8: bool = False) -> tuple[float, float] | None:
    """``(s, zp)`` if ``op`` is an elementwise generic ``(x - zp) * s`` of one f32 input with
    scalar constants (constants defined in its body too) and ``s > 0``; with ``of_int8``,
    ``(sitofp(q) - zp) * s`` of one int8 input instead."""
    if op.name != "linalg.generic" or not is_elementwise(op) or num_inputs(op) != 1:
        return None
    ops = [o for o in body_ops(op) if o.name != "arith.constant"]
    x = body(op).arguments[0]
    if of_int8:
        if str(ir.RankedTensorType(op.operands[0].type).element_type) != "i8":
            return None
        if not ops or ops[0].name != "arith.sitofp" or ops[0].operands[0] != x:
            return None
        x, ops = ops[0].results[0], ops[1:]
    if [o.name for o in ops] != ["arith.subf", "arith.mulf", "linalg.yield"]:
        return None
    sub, mul, _ = ops
    if sub.operands[0] != x or mul.operands[0] != sub.results[0]:
        return None
    zp, s = scalar_constant(sub.operands[1]), scalar_constant(mul.operands[1])
    if zp is None or s is None or not float(s) > 0:
        return None
    return float(s), float(zp)


def int8_quantize(quantize: ir.Operation) -> ir.Operation:
    """A copy of ``quantize``, a quantize that writes its integers as f32 (``quantize_of``
    with ``as_float``), that converts them to int8 (``fptosi``), placed before it."""
    i8 = ir.IntegerType.get_signless(8)
    shape = ir.RankedTensorType(quantize.results[0].type).shape
    with ir.InsertionPoint(quantize), quantize.location:
        q = linalg.GenericOp(
            [ir.RankedTensorType.get(shape, i8)],
            [quantize.operands[0]],
            [empty(shape, i8)],
            quantize.attributes["indexing_maps"],
            quantize.attributes["iterator_types"],
        )
        block = q.regions[0].blocks.append(ir.F32Type.get(), i8)
        mapping = {body(quantize).arguments[0]: block.arguments[0]}
        with ir.InsertionPoint(block):
            ops = body_ops(quantize)
            for o in ops[:-1]:
                made = o.clone()
                for i, operand in enumerate(o.operands):
                    if operand in mapping:
                        made.operands[i] = mapping[operand]
                mapping[o.results[0]] = made.results[0]
            linalg.YieldOp([arith.FPToSIOp(i8, mapping[ops[-1].operands[0]]).result])
    return q.operation


def minus_128(op: ir.Operation | None) -> bool:
    """Whether ``op`` is an elementwise ``x - 128`` (``x + -128``) of one int8 tensor: how the
    frontend makes a uint8 quantization's bytes an int8 tensor (the same number less 128)."""
    if op is None or not is_elementwise(op) or num_inputs(op) != 1:
        return False
    if not is_identity(indexing_maps(op)[0]):
        return False
    if any(str(ir.RankedTensorType(v.type).element_type) != "i8" for v in op.operands):
        return False
    ops = [o for o in body_ops(op) if o.name != "arith.constant"]
    if [o.name for o in ops] != ["arith.addi", "linalg.yield"]:
        return False
    (x, _) = body(op).arguments
    add = ops[0]
    if x not in add.operands or ops[1].operands[0] != add.result:
        return False
    other = add.operands[1] if add.operands[0] == x else add.operands[0]
    c = scalar_constant(other)
    return c is not None and int(c) % 256 == 128
