"""xgen-integer-in-float: integer contractions (i8 x i8 -> i32, with zero points) computed as
the f32 contraction of the same integers, rounded back to i32.

Why: a quantized model's contractions are only faster in integers where the CPU has an exact
int8 dot product (``target.EXACT_INT8_FLAGS``: AVX512-VNNI, AVX-VNNI, AMX-INT8) and a kernel
that uses it. Without one, x86 int8 kernels either saturate (oneDNN's and ONNX Runtime's
``vpmaddubsw`` adds two u8 x s8 products in int16; xgen_mlir's plugin refuses them) or widen
to int16 (IREE's), and IREE has no fast integer conv at all: on an AVX2-only AMD EPYC (Zen 3)
ResNet-18 int8 ran 996 ms against 21.8 in fp32, each 3x3 integer conv 60-100 ms; MobileNetV2
int8 26.8 against 6.7; MiniLM int8 39.1 against 23.9 (docs/precision.md). As f32 contractions
they take every f32 route the compiler has (Winograd, the generated GEMM kernel, oneDNN's f32
primitives, IREE's tiles), chosen as for an fp32 model.

When (``mode``): ``float`` every integer contraction (``kernel``: every one that
xgen-integer-gemm-kernels, which runs first, left); ``integer`` none; ``convs`` the integer
convs that no kernel library takes (``offload=none`` or no oneDNN here): IREE's integer conv is
the slow one on every host measured (ResNet-18 int8 2285 ms on an AMD Zen 4 with VNNI). The
cpu target's ``integer_contractions=auto`` is ``kernel`` (AVX2, AVX-512) or ``float`` on a
target without an exact int8 dot product and ``convs`` on one with it
(``target.integer_contractions``).

What it matches: ``linalg.conv_2d_nchw_fchw_q``, ``conv_2d_nhwc_hwcf_q``, ``quantized_matmul``
and ``quantized_batch_matmul`` with i8 operands, i32 scalar zero points and an i32 accumulator
that is a constant fill or broadcast (a bias quantized to i32) exact in f32. Each operand
becomes ``sitofp(x) - zp`` (folded to an f32 constant where it is computed from constants: the
weights); a batch matmul by one weight shared by every batch (torch-mlir's Linear and 1x1
conv) becomes one [B*M, K] x [K, N] matmul, the form every f32 GEMM route takes; an
activation read by several contractions (Q, K, V) is converted once, so they still merge; an
input pad whose value is the zero point (the real zero) becomes a zero pad of the converted
input, so the conv has the plain zero-padded form the f32 routes match. The f32 result is
rounded to the nearest integer and converted to i32 (``math.roundeven``, ``arith.fptosi``):
its users are unchanged.
It must not fire on: f32 contractions, weights that are not constants (computed from constants
counts), a one-row matmul (below), any other accumulator, non-i8 operands, a zero point
that is not an i32 scalar, ``mode=integer``; under ``convs``, integer matmuls, and integer convs
a kernel library may take.

Numerics: the operands are exact in f32 (|x - zp| <= 255), each product is exact (< 2^16),
and every partial sum below 2^24 is exact, so the rounded result equals the integer
contraction's bit for bit unless a partial sum passes 2^24 in magnitude (then it is within f32
rounding of it: a relative 6e-8 per addition) or an f32 route's own rounding (Winograd's
transforms) errs by half a unit or more. Tested against IREE's integer code and ONNX Runtime.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from math import prod as math_prod

import numpy as np
from torch_mlir.dialects import math

from .._mlir import arith, ir, linalg, tensor
from ..byoc import ONEDNN
from ..diagnostics import format_location
from ..irutil import constant_op, ops_named
from .consteval import WEIGHT_ELEMENTS, ConstEval
from .generic_util import (
    broadcast,
    empty,
    erase_dead_tree,
    fill,
    generic,
    i64_array,
    mixed_sizes,
    producer,
    zero_pad,
)
from .registry import PassFailure, register_pass

# integer op -> (f32 op builder, whether it is a conv)
FLOAT_OF = {
    "linalg.conv_2d_nchw_fchw_q": ("conv_2d_nchw_fchw", True),
    "linalg.conv_2d_nhwc_hwcf_q": ("conv_2d_nhwc_hwcf", True),
    "linalg.quantized_matmul": ("matmul", False),
    "linalg.quantized_batch_matmul": ("batch_matmul", False),
}
MODES = ("float", "integer", "convs", "kernel")


@dataclass
class IntegerInFloatOptions:
    mode: str = "float"  # float | integer | convs (see the module docstring)
    offload: str = "none"  # the target's offload option: "convs" keeps those a library may take
    # the target's pointwise_matvec option: true, xgen-pointwise-kernels' matrix-vector kernel
    # takes f32 one-row matmuls against constants, so those convert too (IREE never sees one)
    matvec: bool = False
    verbose: bool = False  # print every converted op to stderr


def _identity_map(rank: int) -> ir.AffineMap:
    return ir.AffineMap.get_identity(rank)


def _sizes(value: ir.Value) -> list[int | ir.Value]:
    return mixed_sizes(value, range(len(ir.RankedTensorType(value.type).shape)))


def _float_of(value: ir.Value, zp: ir.Value, zp_value: int | None, ev: ConstEval) -> ir.Value:
    """``sitofp(value) - zp`` as an f32 tensor: folded when ``value`` and the zero point are
    constants (or computed from constants: a transposed weight), else an elementwise
    generic."""
    f32 = ir.F32Type.get()
    if zp_value is not None and producer(value) is not None:
        ints = ev.value(value)  # a constant, or computed from constants (a transpose of one)
        if ints is not None:
            return constant_op((ints.astype(np.float64) - zp_value).astype(np.float32)).result
    rank = len(ir.RankedTensorType(value.type).shape)
    init = empty(_sizes(value), f32)

    def body(args: list[ir.Value]) -> list[ir.Value]:
        x = arith.SIToFPOp(f32, args[0]).result
        if zp_value == 0:
            return [x]
        if zp_value is not None:
            z = arith.ConstantOp(f32, ir.FloatAttr.get(f32, float(zp_value))).result
        else:
            z = arith.SIToFPOp(f32, zp).result
        return [arith.SubFOp(x, z).result]

    maps = [_identity_map(rank)] * 2
    return generic([value], maps, init, ["parallel"] * rank, body).results[0]


def unpadded(x: ir.Value, zp_value: int | None, ev: ConstEval):
    """(source, low, high) where ``x`` is a static ``tensor.pad`` whose value is ``zp_value``
    (the quantized zero); else None."""
    pad = producer(x)
    if zp_value is None or pad is None or pad.name != "tensor.pad" or len(pad.operands) > 1:
        return None
    ops = list(pad.regions[0].blocks[0].operations)
    if len(ops) != 1:
        return None
    got = ev.value(ops[0].operands[0])
    if got is None or int(got) != zp_value:
        return None
    low = list(ir.DenseI64ArrayAttr(pad.attributes["static_low"]))
    high = list(ir.DenseI64ArrayAttr(pad.attributes["static_high"]))
    return pad.operands[0], low, high


def _why_not(op: ir.Operation, ev: ConstEval, matvec: bool = False) -> str:
    """Why ``op`` is not converted ("" if it is a match)."""
    for v in op.operands[:2]:
        if str(ir.RankedTensorType(v.type).element_type) != "i8":
            return "kept: operands are not i8"
    for v in op.operands[2:4]:
        if str(v.type) != "i32":
            return "kept: a zero point is not an i32 scalar"
    if str(ir.RankedTensorType(op.results[0].type).element_type) != "i32":
        return "kept: the result is not i32"
    out = ir.RankedTensorType(op.results[0].type).shape
    if not FLOAT_OF[op.name][1] and math_prod(out[:-1]) == 1 and not matvec:
        # a one-row matmul (a classifier, a squeeze-excite's fc) with no kernel to take its
        # f32 form: IREE rejected xgen_mlir's dispatch steps on it (a data-tiling relayout,
        # map_store, outside the workgroups) and the whole model lost them
        return "kept: one row"
    if ev.value(op.operands[1]) is None:
        # weights computed at run time: IREE's compile crashed on such an f32 matmul (an
        # integer transposed weight with its zero point shifted, computed in the model)
        return "kept: the weights are not constant"
    if _init_of(op, ev) is None:
        return "kept: the accumulator is not a constant fill or broadcast below 2^24"
    return ""


# integers of at most this magnitude are exact in f32
EXACT_IN_F32 = 1 << 24


@dataclass
class _Init:
    """An integer contraction's constant accumulator: a fill of ``value``, or a broadcast of
    ``vector`` along ``dims`` (a bias torch-mlir quantized to i32)."""

    value: int = 0
    vector: np.ndarray | None = None
    dims: list[int] = field(default_factory=list)


def _init_of(op: ir.Operation, ev: ConstEval) -> _Init | None:
    """What integer contraction ``op`` accumulates onto; None for anything but a constant
    fill or broadcast, or for values not exact in f32."""
    init = producer(op.operands[4])
    if init is None:
        return None
    if init.name == "linalg.fill":
        c = ev.value(init.operands[0])
        if c is not None and abs(int(c)) < EXACT_IN_F32:
            return _Init(value=int(c))
    if init.name == "linalg.broadcast":
        vec = ev.value(init.operands[0])
        if vec is not None and np.all(np.abs(vec.astype(np.int64)) < EXACT_IN_F32):
            dims = list(ir.DenseI64ArrayAttr(init.attributes["dimensions"]))
            return _Init(vector=vec, dims=dims)
    return None


def _float_init(init: _Init | None, sizes: list[int | ir.Value]) -> ir.Value:
    """The f32 accumulator holding ``init``'s values, of ``sizes``."""
    assert init is not None, "checked by _why_not"
    f32 = ir.F32Type.get()
    if init.vector is None:
        c = arith.ConstantOp(f32, ir.FloatAttr.get(f32, float(init.value))).result
        return fill(c, empty(sizes, f32))
    folded = constant_op(np.asarray(init.vector, np.float32)).result
    return broadcast(folded, empty(sizes, f32), init.dims)


def library_may_take_convs(offload: str) -> bool:
    """Whether ``convs`` leaves integer convs to a kernel library's s8 primitive (the algorithm
    choice, xgen-winograd-convs' prior or a tune, then decides each): offload on, oneDNN here.
    The tuner asks too, to see the convs as the compile will."""
    return offload != "none" and ONEDNN.unavailable() is None


def _wanted(op: ir.Operation, opts: IntegerInFloatOptions) -> bool:
    if opts.mode in ("float", "kernel"):  # kernel: what xgen-integer-gemm-kernels left
        return True
    if opts.mode == "integer":
        return False
    return FLOAT_OF[op.name][1] and not library_may_take_convs(opts.offload)


def _shared_weight(op: ir.Operation, ev: ConstEval) -> np.ndarray | None:
    """The one [K, N] constant every batch of ``quantized_batch_matmul`` ``op`` multiplies by
    (torch-mlir broadcasts a Linear's or a 1x1 conv's weight over the batch), minus its zero
    point; None if the batches differ, the weights are not constant or a shape is dynamic."""
    init = _init_of(op, ev)
    if op.name != "linalg.quantized_batch_matmul" or init is None or init.vector is not None:
        return None
    types = [ir.RankedTensorType(v.type) for v in (op.operands[0], op.operands[1])]
    if any(ir.ShapedType.is_dynamic_size(d) for t in types for d in t.shape):
        return None
    w, zp = ev.value(op.operands[1]), ev.value(op.operands[3])
    if w is None or zp is None or not np.all(w == w[:1]):
        return None
    return (w[0].astype(np.float64) - int(zp)).astype(np.float32)


def _rounded(acc: ir.Value) -> ir.Value:
    """``fptosi(roundeven(acc))``: the f32 sums of integers back as the i32 accumulator."""
    rank = len(ir.RankedTensorType(acc.type).shape)
    i32 = ir.IntegerType.get_signless(32)

    def body(args: list[ir.Value]) -> list[ir.Value]:
        rounded = math.RoundEvenOp(args[0]).result
        return [arith.FPToSIOp(i32, rounded).result]

    init = empty(_sizes(acc), i32)
    return generic([acc], [_identity_map(rank)] * 2, init, ["parallel"] * rank, body).results[0]


def _as_linear(
    op: ir.Operation, weight: np.ndarray, ev: ConstEval, done: dict[tuple, ir.Value]
) -> ir.Value:
    """Batch matmul ``op`` by one shared weight as the Linear it is: the batches' rows
    collapsed into one [B*M, K] x [K, N] f32 matmul by a constant (the form every f32 GEMM
    route takes: the generated kernel, oneDNN, IREE's data tiling), then expanded back."""
    x, xzp = op.operands[0], op.operands[2]
    xzp_v = ev.value(xzp)
    b, m, k = ir.RankedTensorType(x.type).shape
    n = weight.shape[1]
    i32 = ir.IntegerType.get_signless(32)
    i8 = ir.IntegerType.get_signless(8)
    key = ("rows", x, xzp)  # Q, K and V read one activation: converted once, they still merge
    xf = done.get(key)
    if xf is None:
        rows = tensor.CollapseShapeOp(
            ir.RankedTensorType.get([b * m, k], i8),
            x,
            ir.ArrayAttr.get([i64_array([0, 1]), i64_array([2])]),
        ).result
        xf = done[key] = _float_of(rows, xzp, None if xzp_v is None else int(xzp_v), ev)
    w = constant_op(weight).result
    acc = linalg.matmul(xf, w, outs=[_float_init(_init_of(op, ev), [b * m, n])])
    return tensor.ExpandShapeOp(
        ir.RankedTensorType.get([b, m, n], i32),
        _rounded(acc),
        ir.ArrayAttr.get([i64_array([0, 1]), i64_array([2])]),
        [],
        [b, m, n],
    ).result


def _convert(op: ir.Operation, ev: ConstEval, done: dict[tuple, ir.Value]) -> None:
    """Replace integer contraction ``op`` by its f32 form; ``done``: operands converted so far
    (an activation several contractions read is converted once)."""
    shared = _shared_weight(op, ev)
    if shared is not None:
        with ir.InsertionPoint(op), op.location:
            back = _as_linear(op, shared, ev, done)
        old = list(op.operands)
        op.results[0].replace_all_uses_with(back)
        op.erase()
        erase_dead_tree(old)
        return
    builder, is_conv = FLOAT_OF[op.name]
    x, w, xzp, wzp = op.operands[:4]
    xzp_v, wzp_v = ev.value(xzp), ev.value(wzp)
    xzp_i = None if xzp_v is None else int(xzp_v)
    wzp_i = None if wzp_v is None else int(wzp_v)
    out = op.results[0]
    with ir.InsertionPoint(op), op.location:
        padded = unpadded(x, xzp_i, ev) if is_conv else None
        if padded is not None:
            source, low, high = padded
            xf = zero_pad(_float_of(source, xzp, xzp_i, ev), low, high)
        else:
            xf = done.get((x, xzp))
            if xf is None:
                xf = done[(x, xzp)] = _float_of(x, xzp, xzp_i, ev)
        wf = _float_of(w, wzp, wzp_i, ev)
        init = _float_init(_init_of(op, ev), _sizes(out))
        if is_conv:
            acc = getattr(linalg, builder)(
                xf,
                wf,
                outs=[init],
                strides=list(ir.DenseIntElementsAttr(op.attributes["strides"])),
                dilations=list(ir.DenseIntElementsAttr(op.attributes["dilations"])),
            )
        else:
            acc = getattr(linalg, builder)(xf, wf, outs=[init])
        back = _rounded(acc)
    old = list(op.operands)
    out.replace_all_uses_with(back)
    op.erase()
    erase_dead_tree(old)


def integer_in_float(module_op: ir.Operation, opts: IntegerInFloatOptions | None = None) -> Counter:
    """Convert the integer contractions ``opts.mode`` asks for; returns counts by op name."""
    opts = opts or IntegerInFloatOptions()
    if opts.mode not in MODES:
        raise PassFailure(f"mode={opts.mode!r} is not one of {', '.join(MODES)}")
    counts: Counter[str] = Counter()
    with module_op.context:
        ev = ConstEval(module_op, WEIGHT_ELEMENTS)
        done: dict[tuple, ir.Value] = {}
        for op in ops_named(module_op, *FLOAT_OF):
            where, name = format_location(op.location), op.name
            if not _wanted(op, opts):
                counts[f"{name} kept: mode={opts.mode}"] += 1
                continue
            why = _why_not(op, ev, opts.matvec)
            if why:
                counts[f"{name} {why}"] += 1
                continue
            _convert(op, ev, done)
            counts[f"{name} -> f32"] += 1
            if opts.verbose:
                print(f"xgen-integer-in-float: {where}: {name} -> f32", file=sys.stderr)
    return counts


@register_pass(
    "xgen-integer-in-float",
    "Integer contractions (i8 x i8 -> i32) as f32 contractions of the same integers, rounded "
    "back to i32, where the target has no fast exact integer route.",
    IntegerInFloatOptions,
)
def _pass(module_op: ir.Operation, opts: IntegerInFloatOptions | None) -> Counter:
    return integer_in_float(module_op, opts)
