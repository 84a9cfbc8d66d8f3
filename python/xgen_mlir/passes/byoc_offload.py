"""xgen-byoc-offload: convolutions and matmuls handed to a kernel library (oneDNN) through an
IREE plugin.

Why: a vendor library's convolutions beat IREE's llvm-cpu codegen on some hosts and shapes
(blocked layouts, JIT kernels for the CPU it runs on, AMX and AVX512-BF16 where the CPU has
them: the seeds' BYOC, ``../shared/seeds/002_*``). Which ops gain is a measurement per host
(``xgen_mlir.tune`` records it, ``docs/byoc.md``); this pass offloads what it is told to.

What it matches: ``linalg.conv_2d_nchw_fchw`` (converted to NHWC first, as ``xgen-nhwc-convs``
does, so the transposes around consecutive convs cancel), ``linalg.conv_2d_nhwc_hwcf`` and
``linalg.depthwise_conv_2d_nhwc_hwc``; static shapes, f32, constant weights, an accumulator
init that is a per-channel constant (the bias). A constant-zero ``tensor.pad`` of the input's
H and W becomes the primitive's padding. In the call phase also ``linalg.matmul`` [M,K] x
[K,N] (a Linear layer, as torch-mlir gives it: the weights through a transpose that ConstEval
evaluates) and ``linalg.batch_matmul`` whose right operand is one constant broadcast over the
batch (rows B*M), with static f32 shapes and a constant accumulator per column; a following
``+ bias[n]`` becomes the primitive's bias, a ReLU its post-op. A matmul whose right operand
is not a constant (attention's QK^T and PV) stays with IREE. The integer contractions of a
quantized model (``linalg.conv_2d_nchw_fchw_q``, made NHWC in the layout phase, and
``linalg.quantized_matmul``: int8 source, constant int8 weights with zero point 0, a constant
source zero point, a zero int32 accumulator) become s8 primitives with that zero point; a pad
of the source with the zero point (a real zero) is the conv's padding; the dequantization or
requantization after them goes into the primitive where it can (s8f, s8q). Each offloaded
op becomes a dispatch of up to ``threads`` workgroups calling the import ``xgen_dnnl_conv_...`` /
``xgen_dnnl_matmul_...`` (``byoc/onednn.py``), which the plugin resolves to primitives when
the module loads: each workgroup runs its share of the output rows single-threaded on the
IREE worker that runs it. With ``backend=tuned``, exactly the convs and linear layers
``xgen-winograd-convs`` marked (``byoc.OFFLOAD_ATTR``: measured faster in the library on this
host) are offloaded.

Which ops: with ``backend=onednn``, every match the library accepts (asked through the plugin
itself, so what the runtime would refuse is never emitted), or with ``only`` set, the matches
whose locations it lists (comma separated ``file:line:col``, as the pass's verbose output
names them; the ``cpu`` target's ``offload_only`` option); ``never``: those locations are never
offloaded, whatever the backend or the tuning database says (``offload_never``), reported as
kept; ``backend=none``: none. ``precision=bf16`` rounds the operands to bf16 with f32
accumulation, as the target's ``precision="bf16"`` does for IREE's contractions; with
``activations=bf16`` (the default) the activations between bf16 library ops are then passed
as bf16 tensors (``keep_bf16_between``).

Numerics: f32 sums in the library's order (reassociation only); bf16 as ``precision="bf16"``;
s8 exact (integer sums).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import sys
from collections import Counter
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, replace

import numpy as np

from .._mlir import arith, ir, tensor
from ..analysis.flops import FLOPS_ATTR
from ..byoc import OFFLOAD_ATTR, Backend, backend_named
from ..byoc.onednn import (
    IMPL_FAMILIES,
    INTEGER_COMPUTES,
    MATMUL_SPLITS,
    RUNTIME_ZERO_POINT,
    compute_of,
    conv_split,
    conv_symbol,
    matmul_split,
    matmul_symbol,
    with_bf16_tensors,
    with_uint8_tensors,
)
from ..codegen.dispatch import import_executable_text
from ..diagnostics import location_matches, location_text, warn_fallback
from ..errors import BackendCompileError
from ..irutil import find_func, function_of, ops_named
from ..tunedb import ALGORITHM, REJECTED_IN_MODEL, Record
from .consteval import WEIGHT_ELEMENTS, ConstEval, erf
from .epilogue_c import scalar_constant
from .fold_batchnorm import fold_one
from .generic_util import (
    body,
    body_ops,
    clone_scalar_chain,
    computed_from_constants,
    empty,
    generic,
    has_default_maps,
    indexing_maps,
    is_dynamic,
    is_elementwise,
    is_identity,
    is_zero_constant,
    map_dims,
    num_inputs,
    num_uses,
    producer,
    scalar_chain,
    single_user,
    user_ops,
)
from .kernel_call import element_of, free_symbol, install_kernel
from .kernel_match import bias_add, residual_add
from .nhwc_convs import QUANTIZED_CONVS, to_nhwc
from .quantize_match import int8_quantize, minus_128, quantize_of
from .registry import PassFailure, register_pass

NCHW = ("linalg.conv_2d_nchw_fchw",)
DEPTHWISE = "linalg.depthwise_conv_2d_nhwc_hwc"
NHWC = ("linalg.conv_2d_nhwc_hwcf", DEPTHWISE)
MATMUL = ("linalg.matmul", "linalg.batch_matmul")
# integer contractions (int8 in, int32 out, zero points): what quantized models import as
QUANTIZED = (
    "linalg.conv_2d_nhwc_hwcf_q",
    "linalg.quantized_matmul",
    "linalg.quantized_batch_matmul",
)
# the integer_contractions modes that keep a quantized model's convs integer
INTEGER_CONV_MODES = ("convs", "integer")
UGT = 9  # arith.cmpf predicate: unordered or greater (true for NaN)
# compile() sets a list here around its steps: each op's (location, final decision), so that
# its report names the ops (offload_only / offload_never take these locations)
DECISIONS: ContextVar[list[tuple[str, str]] | None] = ContextVar("xgen_byoc_ops", default=None)


@dataclass
class OffloadOptions:
    backend: str = "none"  # none | onednn | tuned (the convs marked with byoc.OFFLOAD_ATTR)
    only: str = ""  # comma-separated op locations; empty: every match
    never: str = ""  # comma-separated op locations never offloaded (the user forbids them)
    functions: str = ""  # comma-separated function names to look in; empty: all
    precision: str = "fp32"  # the target's precision: bf16 computes in bf16, else f32
    # the target's threads: each offloaded op is split into up to this many workgroups, each
    # running its share single-threaded (byoc/onednn.py, conv_parts)
    threads: int = 1
    # layout: NCHW candidates become NHWC convs (so that xgen-cancel-reshapes, run next,
    # cancels the transposes between them); call: NHWC convs (+ residual add, ReLU) -> calls
    phase: str = "call"
    verbose: bool = False
    # the library's implementation family for the f32/bf16 ops (byoc/onednn.py IMPL_FAMILIES;
    # empty: the library's own first choice); with backend=tuned, each op's record says
    impl: str = ""
    # a matmul's parts along its rows or its columns (byoc/onednn.py, matmul_split); tuned:
    # as this host's record for the model's Linear layers says (split_signature), else count
    split: str = "count"
    # a conv's parts along its rows or its output channels (byoc/onednn.py, conv_split);
    # tuned: as this host's record for the model's convs says, else count
    conv_split: str = "count"
    # in bf16, the activations a library op passes to another: bf16 (written and read as
    # bf16 tensors: keep_bf16_between) or f32 (each op converts its f32 source itself)
    activations: str = "bf16"
    # the target's integer_contractions mode: where it keeps integer convs integer (convs,
    # integer), the call phase makes a quantized model's depthwise convs (f32 on the exact
    # integers, as the ONNX frontend imports them) s8 primitives with their requantization
    # where they read an int8 quantize's integers (``_offload_integer_depthwise``), whatever
    # ``backend=tuned`` marked, unless ``integer_depthwise`` is float (the target's
    # int8_depthwise option)
    integer: str = "float"
    integer_depthwise: str = "library"
    # the bytes of the int8 activations an integer library op reads: uint8 (a uint8
    # quantization's bytes as they are, and an int8 tensor between two library ops written
    # as uint8: ``_uint8_flip``, ``keep_uint8_between``) or int8 (the int8 values for all)
    int8_bytes: str = "uint8"


def _pad_of(x: ir.Value, ev: ConstEval | None = None, value: int = 0) -> tuple[ir.Value, list[int]]:
    """``x``'s unpadded source and [top, left, bottom, right] where ``x`` is a constant-zero
    pad of H and W only (NHWC); else ``x`` and zeros. With ``ev``: a pad with the constant
    ``value`` (an integer conv's source zero point: the real zero) instead."""
    pad = producer(x)
    if pad is None or pad.name != "tensor.pad" or len(pad.operands) > 1:
        return x, [0, 0, 0, 0]
    low = list(ir.DenseI64ArrayAttr(pad.attributes["static_low"]))
    high = list(ir.DenseI64ArrayAttr(pad.attributes["static_high"]))
    ops = list(pad.regions[0].blocks[0].operations)
    if len(ops) != 1 or low[0] or low[3] or high[0] or high[3]:
        return x, [0, 0, 0, 0]
    padding = ops[0].operands[0]
    got = None if ev is None else ev.value(padding)
    if not (is_zero_constant(padding) if ev is None else got is not None and int(got) == value):
        return x, [0, 0, 0, 0]
    return pad.operands[0], [low[1], low[2], high[1], high[2]]


def _not_static_f32(op: ir.Operation) -> str:
    """Why ``op``'s input, weights or result is not a static f32 tensor ("" if they are)."""
    for v in [*op.operands[:2], op.results[0]]:
        ty = ir.RankedTensorType(v.type)
        if any(is_dynamic(s) for s in ty.shape):
            return "kept: dynamic shape"
        if str(ty.element_type) != "f32":
            return f"kept: {ty.element_type} elements, not f32"
    return ""


def not_static_int8(op: ir.Operation) -> str:
    """Why integer contraction ``op``'s source and weights are not static int8 and its result
    not static int32 ("" if they are)."""
    for v, want in zip([*op.operands[:2], op.results[0]], ("i8", "i8", "i32"), strict=True):
        ty = ir.RankedTensorType(v.type)
        if any(is_dynamic(s) for s in ty.shape):
            return "kept: dynamic shape"
        if str(ty.element_type) != want:
            return f"kept: {ty.element_type} elements, not {want}"
    return ""


def quantized_operands(op: ir.Operation, ev: ConstEval) -> tuple[np.ndarray, int | ir.Value] | str:
    """The constant int8 weights ([K,N] for a matmul: one weight for every batch of a
    batch matmul) and the source's zero point (an int, or the i32 value computed at run time
    by dynamic quantization) of integer contraction ``op`` (source, weights, source zero
    point, weights zero point, init), or why the library cannot take it: it needs weights
    with zero point 0 and a zero accumulator."""
    weight = ev.value(op.operands[1])
    if weight is None or weight.dtype != np.int8:
        return "kept: weights not constant int8"
    if op.name == "linalg.quantized_batch_matmul":
        if weight.shape[0] > 1 and not (weight == weight[:1]).all():
            return "kept: constant weights differ per batch"
        weight = weight[0]
    izp, wzp = ev.value(op.operands[2]), ev.value(op.operands[3])
    if wzp is None or int(wzp) != 0:
        return "kept: weights zero point not 0"
    # the init's channel dim: 1 for an NCHW conv, else the last (NHWC conv, matmul columns)
    nchw = op.name in QUANTIZED_CONVS
    rank = len(ir.RankedTensorType(op.results[0].type).shape)
    init = ev.per_channel_init(op.operands[4], 1 if nchw else rank - 1)
    if init is None or init.any():
        return "kept: accumulator init not zero"
    return weight, op.operands[2] if izp is None else int(izp)


# x where a GELU-shaped body is compared with oneDNN's GELU: both signs, the curve's bend,
# its tails; and the tolerance (a few f32 rounding steps: the tanh form differs from the erf
# form by up to 5e-4 of the input, a sigmoid approximation by 2e-2)
_GELU_PROBE = np.concatenate([np.linspace(-6.0, 6.0, 97), [-30.0, -12.0, 12.0, 30.0]])
_GELU_RTOL = 2e-6


def _gelu_reference(x: np.ndarray, form: str) -> np.ndarray:
    if form == "gelu":
        return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)
    return 0.5 * x * (1.0 + np.tanh(inner))


def _activation_of(value: ir.Value) -> ir.Operation | None:
    """The single user of ``value`` if it is an elementwise generic of ``value`` alone, in its
    shape (what a primitive's eltwise post-op can take)."""
    if num_uses(value) != 1:
        return None
    user = next(iter(value.uses)).owner.operation
    if user.name != "linalg.generic" or not is_elementwise(user) or num_inputs(user) != 1:
        return None
    if user.results[0].type != value.type or not is_identity(indexing_maps(user)[0]):
        return None
    return user


def _activation_post_op(end: ir.Operation, ev: ConstEval) -> tuple[ir.Operation, str]:
    """The ReLU or GELU after ``end``'s result, as a matmul primitive's post-op: the op that
    ends it and the post field (``relu``, ``gelu``, ``gelut``), or ``end`` and ``none``."""
    relu = _relu_after(end.results[0])
    if relu is not None:
        return relu, "relu"
    gelu = _gelu_after(end.results[0], ev)
    return gelu if gelu is not None else (end, "none")


def _gelu_form(got: np.ndarray | None) -> str | None:
    """Which GELU form (``gelu``: erf, ``gelut``: tanh) values ``got`` at ``_GELU_PROBE`` are,
    if any."""
    if got is None or got.shape != _GELU_PROBE.shape:
        return None
    for form in ("gelu", "gelut"):
        want = _gelu_reference(_GELU_PROBE, form)
        if np.allclose(got.astype(np.float64), want, rtol=_GELU_RTOL, atol=1e-6):
            return form
    return None


def _gelu_after(value: ir.Value, ev: ConstEval) -> tuple[ir.Operation, str] | None:
    """The op that ends a GELU of ``value``, and which form (``gelu``: erf, ``gelut``: tanh),
    as oneDNN's GELU post-ops compute them: the single user of ``value`` if its body is one,
    or a chain of elementwise generics that are one together (``_gelu_chain_after``). How
    torch-mlir writes the body depends on the model's code (a division or a product by
    1/sqrt 2, ``fpowi`` or ``powf``, the factors in any order), so the body is evaluated
    (``ConstEval.eval_body``) on probe values in f32 and compared with each form; only
    arithmetic of its one input and scalar constants is evaluated, anything else is not a
    GELU."""
    user = _activation_of(value)
    if user is not None and {o.name for o in body_ops(user)} & {"math.erf", "math.tanh"}:
        form = _gelu_form(ev.eval_body(user, [_GELU_PROBE.astype(np.float32)]))
        if form is not None:
            return user, form
    return _gelu_chain_after(value, ev)


# how many ops after a value a GELU written as separate elementwise ops is looked for in (an
# ONNX export's x * 0.5 * (1 + erf(x / sqrt 2)) is five)
_CHAIN_WINDOW = 16


def _gelu_chain_after(value: ir.Value, ev: ConstEval) -> tuple[ir.Operation, str] | None:
    """A GELU of ``value`` written as several elementwise generics (as ONNX exports it: Div,
    Erf, Add, Mul, Mul), each reading values of the chain in its own shape and scalar
    constants: the op that ends it and its form, where every other value of the chain is
    used only inside it (so the chain goes away with the post-op). Evaluated on the probes
    op by op, in program order, over the ops that follow ``value``'s producer."""
    first = producer(value)
    if first is None or not isinstance(value.type, ir.RankedTensorType):
        return None
    first = first.operation
    following = list(first.block.operations)
    at = next(i for i, o in enumerate(following) if o.operation == first)
    probes: dict = {value: _GELU_PROBE.astype(np.float32)}
    chain: list[ir.Operation] = []
    for op in (o.operation for o in following[at + 1 : at + 1 + _CHAIN_WINDOW]):
        args = _chain_args(op, probes, value.type, ev)
        if args is None:
            continue
        got = ev.eval_body(op, args)
        if got is None:
            return None
        chain.append(op)
        probes[op.results[0]] = np.broadcast_to(got, _GELU_PROBE.shape).astype(np.float32)
        inner = [value, *(o.results[0] for o in chain[:-1])]
        closed = all(u.owner.operation in chain for v in inner for u in v.uses)
        form = _gelu_form(got) if closed else None
        if form is not None:
            return op, form
    return None


def _chain_args(
    op: ir.Operation, probes: dict, ty: ir.Type, ev: ConstEval
) -> list[np.ndarray] | None:
    """The probe arrays ``op``'s body is evaluated on, if it belongs to a chain of elementwise
    generics over the values in ``probes`` (each read whole, in type ``ty``; at least one),
    the others scalar constants; else None."""
    if op.name != "linalg.generic" or not is_elementwise(op) or op.results[0].type != ty:
        return None
    maps = indexing_maps(op)
    args: list[np.ndarray] = []
    for i in range(num_inputs(op)):
        v = op.operands[i]
        if v in probes:
            if not is_identity(maps[i]):
                return None
            args.append(probes[v])
            continue
        const = ev.value(v) if ir.RankedTensorType(v.type).rank == 0 else None
        if const is None:
            return None
        args.append(np.asarray(const, dtype=np.float32).reshape(()))
    return args if any(op.operands[i] in probes for i in range(num_inputs(op))) else None


def _relu_after(value: ir.Value) -> ir.Operation | None:
    """The single user of ``value`` if it is a ReLU of it that keeps NaN, as oneDNN's does:
    torch-mlir's ``select(cmpf ugt(x, 0), x, 0)``, or ``maximumf(x, 0)``."""
    user = _activation_of(value)
    if user is None:
        return None
    x = body(user).arguments[0]
    ops = body_ops(user)
    names = [o.name for o in ops]
    if names == ["arith.maximumf", "linalg.yield"]:
        a, b = ops[0].operands
        ok = (a == x and is_zero_constant(b)) or (b == x and is_zero_constant(a))
        return user if ok and ops[1].operands[0] == ops[0].results[0] else None
    if names != ["arith.cmpf", "arith.select", "linalg.yield"]:
        return None
    cmp, sel, yld = ops
    pred = ir.IntegerAttr(cmp.attributes["predicate"]).value
    if pred != UGT or cmp.operands[0] != x or not is_zero_constant(cmp.operands[1]):
        return None
    if (
        sel.operands[0] != cmp.results[0]
        or sel.operands[1] != x
        or not is_zero_constant(sel.operands[2])
    ):
        return None
    return user if yld.operands[0] == sel.results[0] else None


@dataclass
class _Conv:
    """What the library's primitive needs of one NHWC conv."""

    x: ir.Value
    weight: np.ndarray
    bias: np.ndarray
    fields: dict  # conv_symbol's shape arguments, by name


def _conv_of(op: ir.Operation, ev: ConstEval) -> _Conv | str:
    """The primitive's operands and shape fields of NHWC conv ``op``, or why not."""
    weight = ev.value(op.operands[1])
    bias = ev.per_channel_init(op.operands[2], 3)
    if weight is None or weight.dtype != np.float32:
        return "kept: weights not constant f32"
    if bias is None:
        return "kept: accumulator init not a per-channel constant"
    x, pads = _pad_of(op.operands[0])
    n, ih, iw, ic = ir.RankedTensorType(x.type).shape
    _, oh, ow, oc = ir.RankedTensorType(op.results[0].type).shape
    depthwise = op.name == "linalg.depthwise_conv_2d_nhwc_hwc"
    if depthwise and oc != ic:
        return "kept: depthwise channel multiplier"
    fields = _fields(op, (n, ih, iw, ic), (oh, ow, oc), weight.shape[:2], pads)
    fields["groups"] = ic if depthwise else 1
    return _Conv(x, weight, bias.astype(np.float32), fields)


def _fields(
    op: ir.Operation,
    nhwc_in: tuple[int, ...],
    hwc_out: tuple[int, ...],
    kernel: tuple[int, ...],
    pads: list[int],
) -> dict:
    """conv_symbol's shape arguments of conv ``op`` (its strides and dilations read off it)."""
    n, ih, iw, ic = nhwc_in
    oh, ow, oc = hwc_out
    steps = {
        k: [int(v) for v in ir.DenseIntElementsAttr(op.attributes[k])]
        for k in ("strides", "dilations")
    }
    return dict(n=n, ih=ih, iw=iw, ic=ic, oh=oh, ow=ow, oc=oc, kernel=kernel, pads=pads, **steps)


def _conv_split(fields: dict, weights: int, opts: OffloadOptions) -> tuple[int, bool]:
    """conv_split for a conv of conv_symbol's ``fields`` and ``weights`` elements."""
    f = fields
    source = f["n"] * f["ih"] * f["iw"] * f["ic"]
    groups = f.get("groups", 1)
    return conv_split(
        f["n"], f["oh"], f["oc"], source, weights, groups, opts.threads, opts.conv_split
    )


def _compute(opts: OffloadOptions) -> str:
    return "bf16" if opts.precision == "bf16" else "f32"


def _nchw_candidate(op: ir.Operation, ev: ConstEval, opts: OffloadOptions) -> str:
    """Why the library does not take NCHW conv ``op`` (asked with its NHWC form's fields);
    "" if it does."""
    weight = ev.value(op.operands[1])
    if weight is None or weight.dtype != np.float32:
        return "kept: weights not constant f32"
    if ev.per_channel_init(op.operands[2], 1) is None:
        return "kept: accumulator init not a per-channel constant"
    n, ic, ih, iw = ir.RankedTensorType(op.operands[0].type).shape
    _, oc, oh, ow = ir.RankedTensorType(op.results[0].type).shape
    # asked on its padded input with no padding of its own: the same primitive, size for size
    fields = _fields(op, (n, ih, iw, ic), (oh, ow, oc), weight.shape[2:], [0, 0, 0, 0])
    symbol = conv_symbol(_compute(opts), "none", **fields)
    backend = _backend(opts.backend)
    return "" if _can_build(backend, symbol) else f"kept: {backend.name} has no primitive for it"


def _nchw_quantized_candidate(op: ir.Operation, ev: ConstEval, opts: OffloadOptions) -> str:
    """As ``_nchw_candidate``, for an integer conv (``linalg.conv_2d_nchw_fchw_q``)."""
    found = quantized_operands(op, ev)
    if isinstance(found, str):
        return found
    weight, zp = found
    n, ic, ih, iw = ir.RankedTensorType(op.operands[0].type).shape
    _, oc, oh, ow = ir.RankedTensorType(op.results[0].type).shape
    fields = _fields(op, (n, ih, iw, ic), (oh, ow, oc), weight.shape[2:], [0, 0, 0, 0])
    # (a zero point computed at run time, by dynamic quantization, is an operand of the call)
    constant_zp = zp if isinstance(zp, int) else RUNTIME_ZERO_POINT
    symbol = conv_symbol("s8", "none", **fields, zero_point=constant_zp)
    backend = _backend(opts.backend)
    return "" if _can_build(backend, symbol) else f"kept: {backend.name} has no primitive for it"


# an op whose source is computed from constants alone (a recurrent layer's first step on a
# constant initial state): IREE evaluates it at compile time (its const-eval hoists it into
# an initializer), where a kernel library's import cannot run; left to IREE
CONSTANT_SOURCE = "kept: a constant source (IREE computes it at compile time)"


def _offload_quantized(module_op: ir.Operation, op: ir.Operation, ev: ConstEval, opts) -> str:
    """Replace integer conv (NHWC) or matmul ``op`` by the library's s8 primitive: int8
    source and weights, int32 result, the source's zero point; a pad of the source with that
    zero point (a real zero) becomes the conv's padding. What follows goes into the primitive
    where oneDNN computes it: the requantization to the next layer's int8 source (s8q,
    ``_offload_requantized``), or a Linear's dequantization, bias and ReLU/GELU (s8f,
    ``_offload_dequantized_matmul``); anything else stays with IREE, which fuses it."""
    backend = _backend(opts.backend)
    conv = op.name == "linalg.conv_2d_nhwc_hwcf_q"
    if computed_from_constants(op.operands[0]):
        return CONSTANT_SOURCE
    found = quantized_operands(op, ev)
    if isinstance(found, str):
        return found
    weight, zp = found
    # a zero point known at compile time is part of the name; one computed at run time
    # (dynamic quantization) is an operand after the weights, as a tensor<1xi32>
    constant_zp = zp if isinstance(zp, int) else RUNTIME_ZERO_POINT
    if conv:
        x, pads = (
            _pad_of(op.operands[0], ev, zp) if isinstance(zp, int) else (op.operands[0], [0] * 4)
        )
        n, ih, iw, ic = ir.RankedTensorType(x.type).shape
        _, oh, ow, oc = ir.RankedTensorType(op.results[0].type).shape
        fields = _fields(op, (n, ih, iw, ic), (oh, ow, oc), weight.shape[:2], pads)
        parts, columns = _conv_split(fields, weight.size, opts)
        if isinstance(zp, int):
            s8q = functools.partial(
                conv_symbol, "s8q", **fields, zero_point=zp, parts=parts, columns=columns
            )
            requantized = _offload_requantized(
                module_op, op, ev, opts, "conv", s8q, x, weight, parts
            )
            if requantized:
                return requantized
        symbol = conv_symbol(
            "s8", "none", **fields, zero_point=constant_zp, parts=parts, columns=columns
        )
    else:
        if not has_default_maps(op):
            return "kept: transposed or broadcast operand maps"
        flip = _uint8_flip(op.operands[0], zp) if opts.int8_bytes == "uint8" else None
        x = op.operands[0] if flip is None else flip.operands[0]
        source = "s8" if flip is None else "u8"
        if flip is not None:
            with ir.InsertionPoint(op), op.location:
                zp = _plus_128(zp)
            constant_zp = zp if isinstance(zp, int) else RUNTIME_ZERO_POINT
        shape = ir.RankedTensorType(x.type).shape
        m, k, n = int(np.prod(shape[:-1])), shape[-1], weight.shape[1]
        parts, columns = matmul_split(m, n, opts.threads, "s8", opts.split)
        done = ""
        if isinstance(zp, int):
            s8q = functools.partial(
                matmul_symbol,
                f"{source}q",
                m=m,
                k=k,
                n=n,
                zero_point=zp,
                parts=parts,
                columns=columns,
            )
            done = _offload_requantized(module_op, op, ev, opts, "matmul", s8q, x, weight, parts)
        if not done:
            done = _offload_dequantized_matmul(
                module_op, op, ev, opts, (m, k, n), (parts, columns), (x, weight, zp), source
            )
        if done:
            return done
        symbol = matmul_symbol(
            source, "none", m, k, n, zero_point=constant_zp, parts=parts, columns=columns
        )
    if not _can_build(backend, symbol):
        return f"kept: {backend.name} has no primitive for it"
    inputs: list = [x, np.ascontiguousarray(weight).ravel()]
    if not isinstance(zp, int):
        with ir.InsertionPoint(op), op.location:
            inputs.append(_zero_point_tensor(zp))
    kind = "conv" if conv else "matmul"
    _install(module_op, backend, kind, symbol, inputs, op, op, parts)
    return f"-> {backend.name} (int8)"


def _uint8_flip(x: ir.Value, zp: int | ir.Value) -> ir.Operation | None:
    """The ``u - 128`` that makes int8 source ``x`` of an integer matmul from a uint8
    quantization's bytes ``u`` (the ONNX frontend's form of a uint8 DynamicQuantizeLinear or
    QuantizeLinear before an integer contraction), or None. The library then reads ``u`` as
    uint8 with the zero point plus 128 (the same sums, ``(u - 128) - (zp - 128)`` being
    ``u - (zp)``): oneDNN's u8 x s8 kernels, the only ones VNNI has, then need no +128
    compensation of an int8 source, 5-20% of a GPT-2 layer's time on an Intel Xeon with
    VNNI (docs/byoc.md)."""
    flip = producer(x)
    if flip is None or not minus_128(flip):
        return None
    if isinstance(zp, int) and not -128 <= zp <= 127:
        return None
    return flip


def _plus_128(zp: int | ir.Value) -> int | ir.Value:
    """``zp + 128`` (an int, or an i32 scalar built at the insertion point); a run-time zero
    point that is itself ``z - 128`` (how the frontend computes a uint8 one as int8) is ``z``."""
    if isinstance(zp, int):
        return zp + 128
    made = producer(zp)
    if made is not None and made.name == "arith.addi":
        for a, b in (made.operands, reversed(list(made.operands))):
            if scalar_constant(b) == -128:
                return a
    i32 = ir.IntegerType.get_signless(32)
    c128 = arith.ConstantOp(i32, ir.IntegerAttr.get(i32, 128)).result
    return arith.AddIOp(zp, c128).result


def _erase_dead_flips(module_op: ir.Operation) -> None:
    """Erase the uint8 sources' ``- 128`` ops (``_uint8_flip``) the library calls left without
    a reader, so the quantize before each sees its real readers (``xgen-dynamic-quantize-kernels``
    then writes the uint8 bytes as they are)."""
    for op in ops_named(module_op, "linalg.generic"):
        if minus_128(op) and num_uses(op.results[0]) == 0:
            op.erase()


def _converted_sums(result: ir.Value) -> ir.Value | None:
    """``float(result)``, integer contraction ``result``'s int32 sums converted to f32 by an
    elementwise ``sitofp`` that is their single user (what the ONNX frontend imports after a
    MatMulInteger or a QDQ conv), or None."""
    convert = single_user(result)
    if convert is None or not is_elementwise(convert) or num_inputs(convert) != 1:
        return None
    if [o.name for o in body_ops(convert)] != ["arith.sitofp", "linalg.yield"]:
        return None
    y = convert.results[0]
    if not is_identity(indexing_maps(convert)[0]) or str(element_of(y.type)) != "f32":
        return None
    return y


def _combined_with(
    op: ir.Operation, value: ir.Value, body_op: str
) -> tuple[ir.Value, ir.AffineMap] | None:
    """The other operand of ``op`` and its map, if ``op`` is an elementwise generic computing
    ``value <body_op> other`` (either order) with ``value`` read whole, in its own type."""
    if not is_elementwise(op) or num_inputs(op) != 2 or op.results[0].type != value.type:
        return None
    ops = body_ops(op)
    args = list(body(op).arguments)
    if [o.name for o in ops] != [body_op, "linalg.yield"]:
        return None
    if set(ops[0].operands) != {args[0], args[1]} or ops[1].operands[0] != ops[0].results[0]:
        return None
    pos = 0 if op.operands[0] == value else 1
    maps = indexing_maps(op)
    if op.operands[1 - pos] == value or not is_identity(maps[pos]):
        return None
    return op.operands[1 - pos], maps[1 - pos]


def _dequantized_after(result: ir.Value) -> tuple[ir.Operation, ir.Value] | None:
    """The dequantization of integer contraction result ``result`` ([..., N] int32), if it is
    ``float(result) * scale``, a conversion then a product (as the ONNX frontend imports
    MatMulInteger and the Mul after it), with a scale per column (a [N] tensor, as dynamic
    quantization computes it from the source's scale and the weights' per-column ones) or
    one for all (0-d): that product and the scale. Only where nothing else reads the
    conversion (the int32 sums go away)."""
    y = _converted_sums(result)
    mul = None if y is None else single_user(y)
    found = None if y is None or mul is None else _combined_with(mul, y, "arith.mulf")
    if mul is None or found is None:
        return None
    scale, amap = found
    ty = ir.RankedTensorType(scale.type)
    if str(ty.element_type) != "f32":
        return None
    last = len(ir.RankedTensorType(result.type).shape) - 1
    per_column = map_dims(amap) == [last] and len(ty.shape) == 1
    return (mul, scale) if per_column or not ty.shape else None


def _per_column(scale: ir.Value, n: int) -> ir.Value:
    """``scale`` ([N] or 0-d f32) as a [N] tensor: the plugin's scales operand."""
    if ir.RankedTensorType(scale.type).shape == [n]:
        return scale
    return generic(
        [scale],
        [ir.AffineMap.get(1, 0, []), ir.AffineMap.get_identity(1)],
        empty([n], ir.F32Type.get()),
        ["parallel"],
        lambda args: [args[0]],
    ).results[0]


def _offload_dequantized_matmul(
    module_op: ir.Operation,
    op: ir.Operation,
    ev: ConstEval,
    opts,
    sizes: tuple[int, int, int],
    split: tuple[int, bool],
    operands: tuple[ir.Value, np.ndarray, int | ir.Value],
    source: str = "s8",
) -> str:
    """Replace quantized matmul ``op`` and its dequantization (``_dequantized_after``), with
    the bias add and the ReLU or GELU after those where there are, by one s8f primitive
    whose epilogue computes them (int32 sums scaled per column, then the bias and the
    post-op, in f32): the int32 tensor is never written, and no dispatch of IREE's reads it
    back. ``operands``: the source (int8, or uint8 where ``source`` is "u8"), the weights and
    the source's zero point. Returns what happened, or "" where it does not apply (the plain
    integer primitive then takes the op)."""
    found = _dequantized_after(op.results[0])
    if found is None:
        return ""
    backend = _backend(opts.backend)
    x, weight, zp = operands
    m, k, n = sizes
    parts, columns = split
    end, scale = found
    bias = None
    added = bias_add(end, ev)
    if added is not None:
        end, bias = added
    end, post = _activation_post_op(end, ev)
    constant_zp = zp if isinstance(zp, int) else RUNTIME_ZERO_POINT
    symbol = matmul_symbol(
        f"{source}f",
        post,
        m,
        k,
        n,
        zero_point=constant_zp,
        parts=parts,
        columns=columns,
        bias=bias is not None,
    )
    if not _can_build(backend, symbol):
        return ""
    inputs: list = [x, np.ascontiguousarray(weight).ravel()]
    if bias is not None:
        inputs.append(bias.astype(np.float32))
    with ir.InsertionPoint(op), op.location:
        if not isinstance(zp, int):
            inputs.append(_zero_point_tensor(zp))
    with ir.InsertionPoint(end), end.location:
        inputs.append(_per_column(scale, n))
    _install(
        module_op, backend, "matmul", symbol, inputs, op, end, parts, result=end.results[0].type
    )
    fused = "+dequantize" + ("+bias" if bias is not None else "")
    fused += "" if post == "none" else f"+{post}"
    return f"-> {backend.name} (int8 {fused})"


@dataclass
class _Requantize:
    """An integer conv's epilogue as an s8q primitive computes it: ``float(sums) * scale[c]
    (+ bias[c])``, a ReLU where ``relu``, divided by ``out_scale``, rounded to nearest even,
    plus ``zero_point``, saturated to int8; ``end`` the op that writes the int8 result."""

    end: ir.Operation
    scale: np.ndarray
    bias: np.ndarray | None
    relu: bool
    out_scale: float
    zero_point: int
    shape: list[int] = dataclasses.field(default_factory=list)  # the sums' (through reshapes)
    perm: list[int] | None = None  # a transpose before the epilogue or before the quantize
    as_float: bool = False  # the quantize writes its integers as f32 (``quantize_of``)


def _channel_operand(
    op: ir.Operation, value: ir.Value, ev: ConstEval, dim: int, body_op: str
) -> np.ndarray | None:
    """The constant per-channel vector (float64) ``op`` combines ``value`` with through
    ``body_op`` (``arith.mulf``, ``arith.addf``), if ``op`` is exactly that: an elementwise
    generic of ``value`` (identity) and a constant read along loop ``dim`` alone."""
    found = _combined_with(op, value, body_op)
    if found is None:
        return None
    other, amap = found
    dims = map_dims(amap)
    loops = ir.RankedTensorType(value.type).shape
    # (a loop of one, the batch at batch 1, is no broadcast either way)
    if dims is None or [d for d in dims if d is not None and loops[d] > 1] not in ([dim], []):
        return None
    const = ev.value(other)
    if const is None or const.dtype != np.float32:
        return None
    channels = loops[dim]
    if const.size == 1:  # one for all channels
        return np.full(channels, float(const.ravel()[0]))
    return const.astype(np.float64).ravel() if const.size == channels else None


def _through_reshapes(value: ir.Value) -> ir.Value:
    """``value`` after the reshapes that are its single users and keep its last dimension (a
    1x1 conv imported as a matmul, expanded back to NHWC): the same elements in the same
    order, the channels last."""
    while True:
        user = single_user(value)
        if user is None or user.name not in ("tensor.expand_shape", "tensor.collapse_shape"):
            return value
        last = ir.RankedTensorType(value.type).shape[-1]
        if ir.RankedTensorType(user.results[0].type).shape[-1] != last:
            return value
        value = user.results[0]


def _requantized_after(
    result: ir.Value, ev: ConstEval, converted: bool = False
) -> _Requantize | None:
    """The requantization after integer conv or matmul result ``result`` (int32, channels
    last, NHWC for a conv; through reshapes that keep them last), as the ONNX frontend
    imports a QDQ conv followed by its output's
    QuantizeLinear (``converted``: ``result`` is the sums in f32 already, as an integer
    depthwise conv computes them, ``_integer_depthwise_source``):
    the conversion to f32, the product by a constant per-channel scale (the
    source's times the weights'), a constant per-channel bias, optionally a ReLU, then the
    quantize (a transpose back to NCHW before the conversion or before the quantize). Only
    where each step has one user and the clamps are int8's (a ReLU folded into the low
    clamp, at the zero point, is a ReLU); a clamp above (a ReLU6) is not. A quantize that
    writes its integers as floats is taken where only elementwise ops read them, on to
    quantizes (``_only_into_quantizes``: a residual block's dequantize, add, requantize)."""
    result = _through_reshapes(result)
    shape = list(ir.RankedTensorType(result.type).shape)
    channel = len(shape) - 1
    perm = None
    moved = single_user(result)
    if moved is not None and moved.name == "linalg.transpose":  # the epilogue in NCHW
        perm = list(ir.DenseI64ArrayAttr(moved.attributes["permutation"]))
        result, channel = moved.results[0], perm.index(channel)
    y = result if converted else _converted_sums(result)
    if y is None:
        return None
    mul = single_user(y)
    scale = None if mul is None else _channel_operand(mul, y, ev, channel, "arith.mulf")
    if mul is None or scale is None:
        return None
    end: ir.Operation = mul
    bias = None
    add = single_user(end.results[0])
    if add is not None:
        bias = _channel_operand(add, end.results[0], ev, channel, "arith.addf")
        end = add if bias is not None else end
    relu = _relu_after(end.results[0])
    if relu is not None:
        end = relu
    value = end.results[0]
    moved = single_user(value)
    if perm is None and moved is not None and moved.name == "linalg.transpose":
        value, perm = moved.results[0], list(ir.DenseI64ArrayAttr(moved.attributes["permutation"]))
    quantize = single_user(value)
    found = None if quantize is None else quantize_of(quantize)
    as_float = False
    if (
        quantize is not None
        and found is None
        and len(quantize.results) == 1
        and _only_into_quantizes(quantize.results[0])
    ):
        found, as_float = quantize_of(quantize, as_float=True), True
    if quantize is None or found is None:
        return None
    out_scale, zp, low, high = found
    if high != 127 or not (low == -128 or (low == zp and zp > -128)):
        return None
    folded_relu = low == zp and zp > -128
    relu_in = relu is not None or folded_relu
    return _Requantize(quantize, scale, bias, relu_in, out_scale, zp, shape, perm, as_float)


def _only_into_quantizes(value: ir.Value, depth: int = 6) -> bool:
    """Whether everything that reads ``value`` is elementwise and ends, within ``depth``
    steps, in quantizes (to int8, or as floats): the float values stay inside IREE's
    elementwise dispatches (a residual block's dequantize, add and requantize), which fuse
    the conversion back from int8. Not where a conv reads them: IREE's
    conversion of an int8 output back to f32 did not fuse with MobileNetV2's depthwise convs
    (int8 4.51 -> 5.08 ms)."""
    uses = user_ops(value)
    if not uses or depth == 0:
        return False
    for user in uses:
        if user.name != "linalg.generic" or not is_elementwise(user) or len(user.results) != 1:
            return False
        ends = quantize_of(user) or quantize_of(user, as_float=True)
        if ends is None and not _only_into_quantizes(user.results[0], depth - 1):
            return False
    return True


def _integers_as_float(quantize: ir.Operation) -> ir.Operation:
    """Split quantize ``quantize`` that writes its integers as f32 into the quantize to int8
    and a conversion back (``sitofp``: exact, the values are int8's) that its users read.
    Returns the int8 quantize."""
    q = int8_quantize(quantize)
    out = quantize.results[0]
    shape = ir.RankedTensorType(out.type).shape
    with ir.InsertionPoint(quantize), quantize.location:
        back = generic(
            [q.results[0]],
            [ir.AffineMap.get_identity(len(shape))] * 2,
            empty(shape, ir.F32Type.get()),
            ["parallel"] * len(shape),
            lambda args: [arith.SIToFPOp(ir.F32Type.get(), args[0]).result],
        )
    out.replace_all_uses_with(back.results[0])
    quantize.erase()
    return q


def _offload_requantized(
    module_op: ir.Operation,
    op: ir.Operation,
    ev: ConstEval,
    opts,
    kind: str,
    symbol: Callable[..., str],
    x: ir.Value,
    weight: np.ndarray,
    parts: int,
    converted: bool = False,
) -> str:
    """Replace integer conv or matmul ``op`` (``kind``) and its requantization
    (``_requantized_after``, ``converted`` as there) by one s8q primitive writing the int8
    output (``symbol`` names
    it, given the post-op, ``bias`` and ``dst_zero_point``): the output's
    scale folded into the per-channel scales and the bias (``(sums * s[c] + b[c]) / o`` as
    ``sums * (s[c] / o) + b[c] / o``: the same number but for f32 rounding, which can move a
    value within an ulp of a half to the other integer), the ReLU a post-op, the zero point
    and the saturation oneDNN's. The int32 sums are never written. Returns what happened, or
    "" where it does not apply."""
    found = _requantized_after(op.results[0], ev, converted)
    if found is None:
        return ""
    backend = _backend(opts.backend)
    post = "relu" if found.relu else "none"
    name = symbol(post, bias=found.bias is not None, dst_zero_point=found.zero_point)
    if not _can_build(backend, name):
        return ""
    inputs: list = [x, np.ascontiguousarray(weight).ravel()]
    if found.bias is not None:
        inputs.append((found.bias / found.out_scale).astype(np.float32))
    inputs.append((found.scale / found.out_scale).astype(np.float32))
    end = _integers_as_float(found.end) if found.as_float else found.end
    # the call writes int8 in the contraction's layout (through reshapes), channels last
    with op.location:
        i8 = ir.IntegerType.get_signless(8)
        written = ir.RankedTensorType.get(found.shape, i8)
    _install(module_op, backend, kind, name, inputs, op, end, parts, found.perm, result=written)
    fused = "+requantize" + ("+bias" if found.bias is not None else "")
    fused += "+relu" if found.relu else ""
    return f"-> {backend.name} (int8 {fused})"


def _minus_zero_point(value: ir.Value, ev: ConstEval) -> tuple[ir.Value, int] | None:
    """``(x, zp)`` if ``value`` is ``x - zp``, an elementwise generic of ``x`` (read whole)
    and an integer scalar constant: how the ONNX frontend imports the source of a quantized
    depthwise conv (a Cast of the integers, then the Sub of their zero point)."""
    op = producer(value)
    if op is None or not is_elementwise(op) or op.operands[0].type != value.type:
        return None
    ops = body_ops(op)
    args = list(body(op).arguments)
    if [o.name for o in ops] != ["arith.subf", "linalg.yield"] or ops[0].operands[0] != args[0]:
        return None
    if not is_identity(indexing_maps(op)[0]) or ops[1].operands[0] != ops[0].results[0]:
        return None
    zp: float | None = None
    if num_inputs(op) == 2 and ops[0].operands[1] == args[1]:
        const = ev.value(op.operands[1])
        zp = float(const.ravel()[0]) if const is not None and const.size == 1 else None
    elif num_inputs(op) == 1:
        zp = scalar_constant(ops[0].operands[1])
    if zp is None or zp != int(zp):
        return None
    return op.operands[0], int(zp)


def _integer_depthwise_source(
    op: ir.Operation, ev: ConstEval
) -> tuple[ir.Operation, int, list[int]] | str:
    """For f32 depthwise conv ``op`` of a quantized model (the ONNX frontend computes one on
    the exact integer values, ``frontend/onnx_quant.py``): the quantize whose integers (as
    f32, ``quantize_of(as_float=True)``) it reads less their zero point, through a pad with
    zeros (the zero point, in the integers), that zero point and the pads; or why not. Its
    weights must be constant integers of int8 and its accumulator zero."""
    weight = ev.value(op.operands[1])
    if weight is None or weight.dtype != np.float32 or not np.array_equal(weight, np.round(weight)):
        return "kept: weights not integers"
    if weight.min() < -128 or weight.max() > 127:
        return "kept: weights outside int8"
    init = ev.per_channel_init(op.operands[2], 3)
    if init is None or init.any():
        return "kept: accumulator init not zero"
    x, pads = _pad_of(op.operands[0])
    found = _minus_zero_point(x, ev)
    integers, zp = found if found is not None else (x, 0)
    quantize = producer(integers)
    q = None if quantize is None else quantize_of(quantize, as_float=True)
    if quantize is None or q is None:
        return "kept: source not a quantize's integers"
    if q[2] < -128 or q[3] > 127 or not -128 <= zp <= 127:
        return "kept: source outside int8"
    return quantize, zp, pads


def _offload_integer_depthwise(
    module_op: ir.Operation, op: ir.Operation, ev: ConstEval, opts
) -> str:
    """Replace f32 depthwise conv ``op`` on the integers of an int8 quantize
    (``_integer_depthwise_source``) and the requantization after it (``_requantized_after``
    on its f32 sums) by one s8q primitive: int8 source (the quantize made to write int8,
    which then also lets the conv before it write int8: its s8q epilogue), int8 weights, the
    zero point, int8 output. The sums are exact either way (nine int8 products per output),
    so only the requantization's f32 rounding can differ (as ``_offload_requantized``).
    Returns what happened, or why not."""
    found = _integer_depthwise_source(op, ev)
    if isinstance(found, str):
        return found
    quantize, zp, pads = found
    n, ih, iw, ic = ir.RankedTensorType(quantize.results[0].type).shape
    _, oh, ow, oc = ir.RankedTensorType(op.results[0].type).shape
    if oc != ic:
        return "kept: depthwise channel multiplier"
    weight = ev.value(op.operands[1])
    assert weight is not None
    fields = _fields(op, (n, ih, iw, ic), (oh, ow, oc), weight.shape[:2], pads)
    fields["groups"] = ic
    parts, columns = _conv_split(fields, weight.size, opts)
    s8q = functools.partial(
        conv_symbol, "s8q", **fields, zero_point=zp, parts=parts, columns=columns
    )
    source = int8_quantize(quantize)
    args = (source.results[0], weight.astype(np.int8), parts)
    done = _offload_requantized(module_op, op, ev, opts, "conv", s8q, *args, converted=True)
    if not done:
        s8f = functools.partial(
            conv_symbol, "s8f", **fields, zero_point=zp, parts=parts, columns=columns
        )
        done = _offload_dequantized_conv(module_op, op, ev, opts, s8f, *args)
    if not done:
        source.erase()
        return f"kept: {_backend(opts.backend).name} has no primitive for it"
    return done  # (the float integers' chain to the conv went with it, where it was dead)


def _offload_dequantized_conv(
    module_op: ir.Operation,
    op: ir.Operation,
    ev: ConstEval,
    opts,
    symbol: Callable[..., str],
    x: ir.Value,
    weight: np.ndarray,
    parts: int,
) -> str:
    """Replace integer conv ``op`` (its f32 sums, as ``_offload_integer_depthwise`` has them)
    and the dequantization after it, a product by a constant per-channel scale, then a
    per-channel bias and a ReLU where there are, by one s8f primitive (``symbol`` names it,
    given the post-op and ``bias``) writing the f32 result: what follows (a SiLU, a
    squeeze-excite scale) stays with IREE. Returns what happened, or "" where it does not
    apply."""
    y = op.results[0]
    mul = single_user(y)
    scale = None if mul is None else _channel_operand(mul, y, ev, 3, "arith.mulf")
    if mul is None or scale is None:
        return ""
    end: ir.Operation = mul
    add = single_user(end.results[0])
    bias = None if add is None else _channel_operand(add, end.results[0], ev, 3, "arith.addf")
    end = add if add is not None and bias is not None else end
    relu = _relu_after(end.results[0])
    end = relu if relu is not None else end
    post = "none" if relu is None else "relu"
    backend = _backend(opts.backend)
    name = symbol(post, bias=bias is not None)
    if not _can_build(backend, name):
        return ""
    inputs: list = [x, np.ascontiguousarray(weight).ravel()]
    if bias is not None:
        inputs.append(bias.astype(np.float32))
    inputs.append(scale.astype(np.float32))
    _install(module_op, backend, "conv", name, inputs, op, end, parts)
    fused = "+dequantize" + ("+bias" if bias is not None else "") + ("+relu" if relu else "")
    return f"-> {backend.name} (int8 {fused})"


def _zero_point_tensor(zp: ir.Value) -> ir.Value:
    """``zp`` (an i32 scalar) as a ``tensor<1xi32>`` for the call, computed where its inputs
    are: dynamic quantization derives it from a 0-d tensor the model computes (its min and
    max), through ``tensor.extract`` and scalar arith. A ``tensor.from_elements`` of the
    scalar would make the host wait for that value before each call (a device-to-host read);
    the same scalar ops in a one-element ``linalg.generic`` on the 0-d tensors keep it on the
    device. Anything else falls back to ``tensor.from_elements``."""
    one = ir.RankedTensorType.get([1], zp.type)
    found = scalar_chain(zp)
    if found is None:
        return tensor.FromElementsOp(one, [zp]).result
    chain, extracts = found
    sources = list(dict.fromkeys(e.operands[0] for e in extracts))  # the 0-d tensors
    scalar = ir.AffineMap.get(1, 0, [])
    maps = [scalar] * len(sources) + [ir.AffineMap.get_identity(1)]

    def body(args: list[ir.Value]) -> list[ir.Value]:
        mapping = {e.results[0]: args[sources.index(e.operands[0])] for e in extracts}
        clone_scalar_chain(chain, mapping)  # into the body
        return [mapping.get(zp, zp)]

    return generic(sources, maps, empty([1], zp.type), ["parallel"], body).results[0]


def _backend(name: str) -> Backend:
    try:
        return backend_named(name)
    except ValueError as e:  # the user's option: a clear failure, not an internal error
        raise PassFailure(str(e)) from None


def _can_build(backend: Backend, symbol: str) -> bool:
    try:
        return backend.can_build(symbol)
    except BackendCompileError as e:  # no compiler or no oneDNN here
        raise PassFailure(str(e)) from None


@dataclass
class _Installed:
    """An offloaded op as its call was installed: what ``keep_bf16_between`` needs to make
    the call again with other tensor types."""

    call: ir.Operation  # the func.call of its wrapper
    wrapper: str  # the wrapper's symbol: its "_call" function and the import's declaration
    backend: str
    kind: str  # conv | matmul
    symbol: str  # the import name
    parts: int
    residual: int | None  # the operand index of a residual, if it adds one


# byoc_offload sets a list here in its call phase: every call it installs
_INSTALLED: ContextVar[list[_Installed] | None] = ContextVar("xgen_byoc_installed", default=None)


def _install(
    module_op: ir.Operation,
    backend: Backend,
    kind: str,
    symbol: str,
    inputs: list,
    op: ir.Operation,
    end: ir.Operation,
    parts: int,
    perm: list[int] | None = None,
    residual: int | None = None,
    result: ir.Type | None = None,
) -> None:
    """Replace ``op`` .. ``end`` by a call of a dispatch of ``parts`` workgroups calling import
    ``symbol`` on ``inputs`` (values, or arrays that become constants) and ``op``'s result
    (``residual``: the index of the input a post-op adds), or one of type ``result``."""
    result = result or op.results[0].type
    call = _install_call(
        module_op, backend.name, kind, symbol, inputs, result, parts, [op], end, perm
    )
    installed = _INSTALLED.get()
    if installed is not None:
        wrapper = ir.FlatSymbolRefAttr(call.attributes["callee"]).value.removesuffix("_call")
        installed.append(_Installed(call, wrapper, backend.name, kind, symbol, parts, residual))


def _install_call(
    module_op: ir.Operation,
    backend: str,
    kind: str,
    symbol: str,
    inputs: list,
    result: ir.Type,
    parts: int,
    replaced: list[ir.Operation],
    end: ir.Operation,
    perm: list[int] | None = None,
) -> ir.Operation:
    name = free_symbol(module_op, f"xgen_{backend}_{kind}", 0)
    lengths = [
        int(np.prod(ir.RankedTensorType(v.type).shape)) if isinstance(v, ir.Value) else v.size
        for v in inputs
    ]
    out = int(np.prod(ir.RankedTensorType(result).shape))
    elements = [element_of(v) for v in [*inputs, result]]
    return install_kernel(
        module_op,
        name,
        "",
        "",
        inputs,
        result,
        (parts, 1, 1),
        replaced,
        end,
        perm=perm,
        weights_name=f"xgen_{backend}_weights",
        executable=import_executable_text(name, symbol, lengths, out, elements, parts),
    )


def keep_bf16_between(module_op: ir.Operation, installed: list[_Installed]) -> int:
    """Make the activations between bf16 library ops bf16 tensors: an op writes its output
    in bf16 where every user is a bf16 library op reading it as its source or residual (so
    it is rounded exactly where those would round it), and reads its source in bf16 where
    that comes from such an op or from IREE's code (a ``truncf`` IREE fuses into the
    producing dispatch). A library op with f32 output keeps converting its source itself
    (a ``truncf`` of it would be a dispatch of its own), and an f32 residual stays f32.
    Each converted bf16 tensor is half the f32 one's bytes, written once, and the
    consumer's conversion of its source goes away. Returns how many calls changed."""
    # (in the module's order: a call's producers come first, so a call made again reads
    # their new results)
    position = {op.operation: i for i, op in enumerate(ops_named(module_op, "func.call"))}
    bf16 = sorted(
        (c for c in installed if compute_of(c.symbol) == "bf16"),
        key=lambda c: position[c.call.operation],
    )
    by_result = {c.call.results[0]: c for c in bf16}

    def reads_bf16(value: ir.Value) -> bool:  # every user a bf16 op's source or residual
        uses = list(value.uses)
        for use in uses:
            owner = use.owner.operation
            user = by_result.get(owner.results[0]) if len(owner.results) == 1 else None
            if user is None or use.operand_number not in (0, user.residual):
                return False
        return bool(uses)

    out_bf16 = {id(c): reads_bf16(c.call.results[0]) for c in bf16}
    # each op's tensor types (source, residual, output: bf16 or not), and whether its source
    # needs a truncf (IREE's code computes it), all decided before any call is made again
    plans = []
    for c in bf16:
        operands = list(c.call.operands)
        source = by_result.get(operands[0])
        src = out_bf16[id(source)] if source is not None else _computed_by_iree(operands[0])
        res = False
        if c.residual is not None:
            producer_call = by_result.get(operands[c.residual])
            res = producer_call is not None and out_bf16[id(producer_call)]
        if src or res or out_bf16[id(c)]:
            plans.append((c, src, res, out_bf16[id(c)], src and source is None))
    for c, src, res, out, truncf in plans:
        # (an operand from a call made again already is its new bf16 result)
        operands = list(c.call.operands)
        if truncf:
            with ir.InsertionPoint(c.call), c.call.location:
                operands[0] = _to_bf16(operands[0])
        result = ir.RankedTensorType(c.call.results[0].type)
        if out:
            with c.call.location:
                result = ir.RankedTensorType.get(result.shape, ir.BF16Type.get())
        _call_again(module_op, c, with_bf16_tensors(c.symbol, src, res, out), operands, result)
    return len(plans)


def _call_again(
    module_op: ir.Operation, c: _Installed, symbol: str, operands: list, result: ir.Type
) -> None:
    """Replace installed call ``c`` by a call of import ``symbol`` on ``operands`` returning
    ``result`` (other tensor types), its FLOPs kept for the report; ``c`` then names it."""
    decl = find_func(module_op, c.wrapper)
    flops = decl.attributes[FLOPS_ATTR] if FLOPS_ATTR in decl.attributes else None
    call = _install_call(
        module_op, c.backend, c.kind, symbol, operands, result, c.parts, [], c.call
    )
    callee = ir.FlatSymbolRefAttr(call.attributes["callee"]).value.removesuffix("_call")
    if flops is not None:
        find_func(module_op, callee).attributes[FLOPS_ATTR] = flops
    for name in (f"{c.wrapper}_call", c.wrapper):
        find_func(module_op, name).erase()
    c.call, c.symbol, c.wrapper = call, symbol, callee


# ops between a producer and its reader that IREE folds into either (a view of the same data)
_VIEWS = ("tensor.collapse_shape", "tensor.expand_shape")
# ops that only move a tensor's elements (reshapes, and transposes: a pair of them, NHWC to
# NCHW and back, sits between two convs until xgen-cancel-reshapes cancels it), which an
# elementwise step commutes with
_MOVES = (*_VIEWS, "linalg.transpose")


def keep_uint8_between(module_op: ir.Operation, installed: list[_Installed]) -> int:
    """Make the int8 sources of integer library ops uint8 bytes, so that VNNI's u8 x s8 dot
    product needs no compensation of an int8 source (convs 10-35% faster on an Intel Xeon
    with VNNI, docs/byoc.md). A requantizing op (s8q) whose output some integer library op
    reads as its source (directly or through reshapes and transposes) writes it as uint8
    (s8qu, its zero point plus 128: the same numbers), and those readers read it so (u8...);
    its other readers (IREE's code: a residual add's dequantize, a pool) read the int8
    values back through a ``- 128`` IREE fuses into them. A source an elementwise op of
    IREE's computes comes as uint8 bytes from that op (``_uint8_bytes_of``). Left as it is
    where a move of the output has readers of both kinds, a zero point is given at run
    time, or the library cannot build a changed op. Returns how many calls changed."""
    position = {op.operation: i for i, op in enumerate(ops_named(module_op, "func.call"))}
    integer = sorted(
        (c for c in installed if compute_of(c.symbol) in INTEGER_COMPUTES),
        key=lambda c: position[c.call.operation],
    )
    by_call = {c.call.operation: c for c in integer}

    def int8_reader(owner: ir.Operation, operand: int) -> _Installed | None:
        c = by_call.get(owner)
        if c is None or operand != 0 or compute_of(c.symbol)[0] != "s":
            return None
        return None if f"_{RUNTIME_ZERO_POINT}_" in c.symbol else c

    source: set[int] = set()  # the calls that read a uint8 source, by id
    output: dict[int, list[tuple[ir.Operation, int]]] = {}  # uint8 out: their other readers
    for c in integer:
        if compute_of(c.symbol) not in ("s8q", "u8q"):
            continue
        library, others, mixed = _readers_of(c.call.results[0], int8_reader)
        if library and not mixed:
            output[id(c)] = others
            source.update(id(r) for r in library)
    # sources IREE's code computes (an elementwise op's int8 output, through reshapes and
    # transposes): that op computes their uint8 bytes instead (``_uint8_bytes_of``)
    computed: set[int] = set()
    for c in integer:
        if id(c) in source or int8_reader(c.call.operation, 0) is None:
            continue
        root = _through_views(c.call.operands[0])
        made = producer(root)
        if made is None:
            continue
        if made.name == "linalg.generic" and is_elementwise(made) and len(made.results) == 1:
            computed.add(id(c))
    source |= computed
    changed = [c for c in integer if id(c) in source or id(c) in output]
    symbols = {
        id(c): with_uint8_tensors(c.symbol, id(c) in source, id(c) in output) for c in changed
    }
    if any(not _can_build(_backend(c.backend), symbols[id(c)]) for c in changed):
        return 0
    i8 = ir.IntegerType.get_signless(8)
    flips: dict[ir.Value, ir.Value] = {}  # an int8 tensor IREE computes: its uint8 bytes
    for c in changed:  # (in program order: a producer made again first)
        others = output.get(id(c), [])
        result = c.call.results[0].type
        if id(c) in computed:
            root = _through_views(c.call.operands[0])
            if root not in flips:
                with c.call.location:
                    flips.update(_uint8_bytes_of(root, i8))
        operands = list(c.call.operands)
        if id(c) in computed:
            root = _through_views(operands[0])
            with ir.InsertionPoint(c.call), c.call.location:
                operands[0] = _replay_views(operands[0], root, flips[root])
        _call_again(module_op, c, symbols[id(c)], operands, result)
        call = c.call
        by_call[call.operation] = c
        if others:
            with ir.InsertionPoint.after(call), call.location:
                flipped = _minus_128_of(call.results[0], i8)
            for owner, operand in others:
                owner.operands[operand] = flipped
    return len(changed)


def _through_views(value: ir.Value) -> ir.Value:
    """``value`` with the ops that make it by moving another tensor's elements (``_MOVES``)
    peeled."""
    made = producer(value)
    while made is not None and made.name in _MOVES:
        value = made.operands[0]
        made = producer(value)
    return value


def _uint8_bytes_of(value: ir.Value, i8: ir.Type) -> dict[ir.Value, ir.Value]:
    """The uint8 bytes of int8 tensor ``value`` (``value`` + 128) that the elementwise op
    computing it computes instead (its yield plus 128); its other readers read the int8
    values back through a ``- 128``, which IREE fuses into each. (A step + 128 after the op
    instead: where the op has other readers, IREE cloned the op into that step's dispatch,
    MobileNetV2 int8 5 dispatches more.) Returns {the int8 tensor now: its uint8 bytes}."""
    made = producer(value)
    assert made is not None and len(made.results) == 1
    with ir.InsertionPoint.after(made):
        bytes_op = made.clone()
    ops = body(bytes_op).operations
    yield_op = ops[len(ops) - 1]
    with ir.InsertionPoint(yield_op):
        c = arith.ConstantOp(i8, ir.IntegerAttr.get(i8, -128)).result
        yield_op.operands[0] = arith.AddIOp(yield_op.operands[0], c).result
    with ir.InsertionPoint.after(bytes_op):
        values = _minus_128_of(bytes_op.results[0], i8)
    value.replace_all_uses_with(values)
    made.erase()
    return {values: bytes_op.results[0]}


def _replay_views(value: ir.Value, root: ir.Value, new_root: ir.Value) -> ir.Value:
    """The moves that make ``value`` from ``root`` (``_through_views``), made again from
    ``new_root`` (a tensor of ``root``'s type) at the insertion point."""
    views = []
    while value != root:
        view = producer(value)
        assert view is not None
        views.append(view)
        value = view.operands[0]
    out = new_root
    for view in reversed(views):
        made = view.clone()
        made.operands[0] = out
        out = made.results[0]
    return out


def _readers_of(
    value: ir.Value, library_reader: Callable[[ir.Operation, int], _Installed | None]
) -> tuple[list[_Installed], list[tuple[ir.Operation, int]], bool]:
    """Who reads ``value``, directly or through reshapes and transposes (``_MOVES``): the
    library calls that ``library_reader`` names, the other readers as (op, operand index)
    where they read it directly, and whether some other reader reads it through a move."""
    library: list[_Installed] = []
    others: list[tuple[ir.Operation, int]] = []
    mixed = False

    def walk(v: ir.Value, through_view: bool) -> None:
        nonlocal mixed
        for use in list(v.uses):
            owner = use.owner.operation
            if owner.name in _MOVES:
                walk(owner.results[0], True)
            elif (reader := library_reader(owner, use.operand_number)) is not None:
                library.append(reader)
            elif through_view:
                mixed = True
            else:
                others.append((owner, use.operand_number))

    walk(value, False)
    return library, others, mixed


def _minus_128_of(value: ir.Value, i8: ir.Type) -> ir.Value:
    """``value - 128`` elementwise (int8 values from uint8 bytes), built at the insertion
    point."""
    ty = ir.RankedTensorType(value.type)
    identity = ir.AffineMap.get_identity(len(ty.shape))

    def body(args: list[ir.Value]) -> list[ir.Value]:
        c = arith.ConstantOp(i8, ir.IntegerAttr.get(i8, -128)).result
        return [arith.AddIOp(args[0], c).result]

    out = empty(list(ty.shape), i8)
    return generic([value], [identity, identity], out, ["parallel"] * len(ty.shape), body).results[
        0
    ]


def _computed_by_iree(value: ir.Value) -> bool:
    """Whether ``value`` is computed by IREE's code (an op, through reshapes, that is not a
    function's argument, a call of a kernel or library dispatch, or a transpose): a
    ``truncf`` of it then joins the dispatch that computes it. After a kernel's call it would
    be a dispatch of its own, and a transpose may yet be folded into the kernel before it
    (xgen-attention-kernels writes its output in the layout its transposes give)."""
    # (an op's name from its Operation: an OpView's .name may be a "name" attribute)
    while (
        isinstance(value.owner, ir.Operation | ir.OpView) and value.owner.operation.name in _VIEWS
    ):
        value = value.owner.operands[0]
    owner = value.owner
    if not isinstance(owner, ir.Operation | ir.OpView):
        return False
    return owner.operation.name not in ("func.call", "linalg.transpose")


def _to_bf16(value: ir.Value) -> ir.Value:
    """``value`` (an f32 tensor) rounded to bf16, elementwise."""
    shape = ir.RankedTensorType(value.type).shape
    identity = ir.AffineMap.get_identity(len(shape))
    bf16 = ir.BF16Type.get()
    return generic(
        [value],
        [identity, identity],
        empty(shape, bf16),
        ["parallel"] * len(shape),
        lambda args: [arith.TruncFOp(bf16, args[0]).result],
    ).results[0]


def _offload(module_op: ir.Operation, op: ir.Operation, ev: ConstEval, opts) -> str:
    """Replace NHWC conv ``op`` (with the residual add and ReLU after it, where there are)
    by the library's primitive; returns what happened (a count key)."""
    backend = _backend(opts.backend)
    if computed_from_constants(op.operands[0]):
        return CONSTANT_SOURCE
    conv = _conv_of(op, ev)
    if isinstance(conv, str):
        return conv
    y = op.results[0]
    inputs: list = [conv.x, np.ascontiguousarray(conv.weight).ravel(), conv.bias]
    end, perm, post = op, None, "none"
    found = residual_add(y)
    if found is not None:
        add, perm, addend = found
        inputs.append(addend)
        end, post = add, "add"
    residual = len(inputs) - 1 if post == "add" else None
    relu = _relu_after(end.results[0])
    if relu is not None:
        end, post = relu, "addrelu" if post == "add" else "relu"
    parts, columns = _conv_split(conv.fields, conv.weight.size, opts)
    symbol = conv_symbol(
        _compute(opts), post, **conv.fields, parts=parts, impl=opts.impl, columns=columns
    )
    if not _can_build(backend, symbol):
        return f"kept: {backend.name} has no primitive for it"
    _install(module_op, backend, "conv", symbol, inputs, op, end, parts, perm, residual)
    return f"-> {_offloaded_to(backend, opts)}" + ("" if post == "none" else f" (+{post})")


def _offloaded_to(backend: Backend, opts) -> str:
    """The backend, and the implementation family asked for (as in "onednn[jit]")."""
    return backend.name + (f"[{opts.impl}]" if opts.impl else "")


def linear_weights(op: ir.Operation, ev: ConstEval) -> tuple[np.ndarray, np.ndarray] | str:
    """The constant [K,N] weights and the per-column accumulator init [N] (float64) of
    matmul / batch_matmul ``op``, or why not."""
    if not has_default_maps(op):
        return "kept: transposed or broadcast operand maps"
    rhs = ev.value(op.operands[1])
    if rhs is None or rhs.dtype != np.float32:
        return "kept: right operand not a constant"
    batched = op.name == "linalg.batch_matmul"
    if batched:
        if rhs.shape[0] > 1 and not (rhs == rhs[:1]).all():
            return "kept: constant right operand differs per batch"
        rhs = rhs[0]
    init = ev.per_channel_init(op.operands[2], 2 if batched else 1)
    if init is None:
        return "kept: accumulator init not a per-column constant"
    return rhs, init


def _offload_matmul(module_op: ir.Operation, op: ir.Operation, ev: ConstEval, opts) -> str:
    """Replace matmul ``op`` (with the bias add and ReLU after it, where there are) by the
    library's matmul primitive; returns what happened (a count key). A batch_matmul with one
    weight for every batch is one matmul of B*M rows (its row-major input is that matrix)."""
    backend = _backend(opts.backend)
    if computed_from_constants(op.operands[0]):
        return CONSTANT_SOURCE
    found = linear_weights(op, ev)
    if isinstance(found, str):
        return found
    weight, bias = found
    shape = ir.RankedTensorType(op.results[0].type).shape
    k, n = weight.shape
    m = int(np.prod(shape[:-1]))
    if min(m, k, n) == 0:
        return "kept: empty"
    end = op
    added = bias_add(op, ev)
    if added is not None:
        end, bias = added[0], bias + added[1]
    end, post = _activation_post_op(end, ev)
    parts, columns = matmul_split(m, n, opts.threads, _compute(opts), opts.split)
    symbol = matmul_symbol(
        _compute(opts), post, m, k, n, parts=parts, columns=columns, impl=opts.impl
    )
    if not _can_build(backend, symbol):
        return f"kept: {backend.name} has no primitive for it"
    inputs: list = [op.operands[0], np.ascontiguousarray(weight).ravel(), bias.astype(np.float32)]
    _install(module_op, backend, "matmul", symbol, inputs, op, end, parts)
    fused = ("+bias" if added is not None else "") + ("" if post == "none" else f"+{post}")
    return f"-> {_offloaded_to(backend, opts)}" + (f" ({fused})" if fused else "")


def is_integer(op: ir.Operation) -> bool:
    return op.name in QUANTIZED or op.name in QUANTIZED_CONVS


def _locations(text: str) -> set[str]:
    """The ``file:line:col`` locations of a comma-separated option."""
    return {s.strip() for s in text.split(",") if s.strip()}


def byoc_offload(module_op: ir.Operation, opts: OffloadOptions | None = None) -> Counter:
    opts = opts or OffloadOptions()
    counts: Counter[str] = Counter()
    if opts.backend == "none":
        return counts
    tuned = opts.backend == "tuned"
    if not tuned:
        _backend(opts.backend)  # an unknown name is an error naming the known ones
    if opts.impl and opts.impl not in IMPL_FAMILIES:
        raise PassFailure(f"impl '{opts.impl}' is not one of {', '.join(IMPL_FAMILIES)}")
    if opts.phase not in ("layout", "call"):
        raise PassFailure(f"phase '{opts.phase}' is not one of layout, call")
    if opts.integer_depthwise not in ("library", "float"):
        raise PassFailure(
            f"integer-depthwise '{opts.integer_depthwise}' is not one of library, float"
        )
    if opts.activations not in ("bf16", "f32"):
        raise PassFailure(f"activations '{opts.activations}' is not one of bf16, f32")
    if opts.int8_bytes not in ("uint8", "int8"):
        raise PassFailure(f"int8-bytes '{opts.int8_bytes}' is not one of uint8, int8")
    for name, value in (("split", opts.split), ("conv-split", opts.conv_split)):
        if value not in (*MATMUL_SPLITS, "tuned"):
            known = ", ".join(MATMUL_SPLITS)
            raise PassFailure(f"{name} '{value}' is not one of {known}, tuned")
    listed = _locations(opts.only)
    scope = {s.strip() for s in opts.functions.split(",") if s.strip()}
    with module_op.context:
        ev = ConstEval(module_op, WEIGHT_ELEMENTS)
        names = (
            NCHW + tuple(QUANTIZED_CONVS) if opts.phase == "layout" else NHWC + MATMUL + QUANTIZED
        )

        def considered(op: ir.Operation) -> bool:
            if listed and not location_matches(location_text(op.location), listed):
                return False
            if scope and function_of(op) not in scope:
                return False
            return not tuned or OFFLOAD_ATTR in op.attributes

        def considered_integer(op: ir.Operation) -> bool:
            if listed and not location_matches(location_text(op.location), listed):
                return False
            return not scope or function_of(op) in scope

        if opts.phase == "call":
            matmuls = [op for op in ops_named(module_op, *SPLIT_GROUP) if considered(op)]
            convs = [op for op in ops_named(module_op, *CONV_SPLIT_GROUP) if considered(op)]
            opts = replace(
                opts,
                split=_split_decision(matmuls, opts, "matmuls"),
                conv_split=_split_decision(convs, opts, "convs"),
            )
        installed: list[_Installed] = []
        token = _INSTALLED.set(installed)
        try:
            integer_depthwise = opts.integer in INTEGER_CONV_MODES
            if opts.phase == "call" and integer_depthwise and opts.integer_depthwise == "library":
                # (first: then the conv before each one finds its int8 quantize, s8q)
                depthwise = ops_named(module_op, DEPTHWISE)
                _offload_all(module_op, depthwise, considered_integer, ev, opts, counts, True)
            _offload_all(module_op, ops_named(module_op, *names), considered, ev, opts, counts)
            if opts.phase == "call":
                _erase_dead_flips(module_op)
                if opts.int8_bytes == "uint8" and keep_uint8_between(module_op, installed):
                    _erase_dead_flips(module_op)
        finally:
            _INSTALLED.reset(token)
        if opts.phase == "call" and opts.precision == "bf16" and opts.activations == "bf16":
            keep_bf16_between(module_op, installed)
    return counts


def _offload_all(
    module_op: ir.Operation,
    ops: list[ir.Operation],
    considered: Callable[[ir.Operation], bool],
    ev: ConstEval,
    opts: OffloadOptions,
    counts: Counter,
    integer_depthwise: bool = False,
) -> None:
    """``byoc_offload``'s walk: each op it considers offloaded (or kept, and why);
    ``integer_depthwise``: the depthwise convs on integers (``_offload_integer_depthwise``),
    the others left for the main walk."""
    tuned = opts.backend == "tuned"
    forbidden = _locations(opts.never)
    for op in ops:
        where, op_name = location_text(op.location), op.name
        if not considered(op):
            continue
        backend, impl = opts.backend, opts.impl
        if integer_depthwise:  # (no tuned mark: an integer conv's library is oneDNN)
            backend, impl = ("onednn" if tuned else backend), ""
        elif tuned:  # the op's mark: the backend and its implementation family ("onednn:jit")
            backend, _, impl = ir.StringAttr(op.attributes[OFFLOAD_ATTR]).value.partition(":")
        op_opts = replace(opts, backend=backend, impl=impl)
        missing = _backend(backend).unavailable() if tuned else None
        if missing and integer_depthwise:
            continue  # (the main walk warns)
        if forbidden and location_matches(where, forbidden):
            what = "kept: forbidden by never="
        elif missing:  # measured faster once, but this machine cannot build the plugin now
            what = f"kept: {backend} unavailable here"
            warn_fallback(
                f"xgen-byoc-offload: the tuning database says {backend} runs some ops "
                f"faster, but its plugin cannot be built here (it needs {missing}); "
                "they stay with IREE"
            )
        elif why := (not_static_int8 if is_integer(op) else _not_static_f32)(op):
            what = why
        elif opts.phase == "layout" and op_name in QUANTIZED_CONVS:
            what = _nchw_quantized_candidate(op, ev, op_opts)
            if not what:
                done = isinstance(to_nhwc(op, ev), ir.Operation | ir.OpView)
                what = f"-> NHWC for {backend}" if done else "kept: no NHWC form"
        elif opts.phase == "layout":
            fold_one(op, ev)
            what = _nchw_candidate(op, ev, op_opts)
            if not what:
                made = to_nhwc(op, ev)
                done = isinstance(made, ir.Operation | ir.OpView)
                what = f"-> NHWC for {backend}" if done else "kept: no NHWC form"
        elif integer_depthwise:
            what = _offload_integer_depthwise(module_op, op, ev, op_opts)
        elif op_name in QUANTIZED:
            what = _offload_quantized(module_op, op, ev, op_opts)
        elif op_name in MATMUL:
            what = _offload_matmul(module_op, op, ev, op_opts)
        else:
            what = _offload(module_op, op, ev, op_opts)
        if integer_depthwise and not what.startswith("->"):
            continue  # (the main walk's, as an f32 depthwise conv)
        what = what if what.startswith(op_name) else f"{op_name} {what}"
        counts[what] += 1
        log = DECISIONS.get()
        if log is not None and "-> NHWC" not in what:  # (the layout step is not an end)
            log.append((where, what))
        if opts.verbose:
            print(f"xgen-byoc-offload: {where}: {what}", file=sys.stderr)


# The matmuls whose split a tune decides together (the model's Linear layers): whether their
# weights stay in cache from one call to the next is the whole model's question (its weights
# against this host's caches), which a standalone dispatch, always warm, cannot answer.
SPLIT_GROUP = (*MATMUL, "linalg.quantized_matmul", "linalg.quantized_batch_matmul")
# the convs whose split a tune decides together, for the same reason (a conv net's weights)
CONV_SPLIT_GROUP = ("linalg.conv_2d_nhwc_hwcf", "linalg.conv_2d_nhwc_hwcf_q")
SPLIT_ALGORITHM = "matmul split"
CONV_SPLIT_ALGORITHM = "conv split"
SPLIT_PREFIX = "split of"  # a group's signature (and its line in the report) starts so
# each group: its algorithm's name and the target option that sets its direction
SPLIT_GROUPS = {
    "matmuls": (SPLIT_ALGORITHM, "matmul_split"),
    "convs": (CONV_SPLIT_ALGORITHM, "conv_split"),
}


def group_signature(prefix: str, ops: list[ir.Operation], kind: str, precision: str) -> str:
    """The tuning database's signature of a group of a model's ops decided together in the
    model: ``prefix``, their count and ``kind``, the precision and a digest of their operand
    shapes (in the order of the module)."""
    shapes = [[op.name, *(str(v.type) for v in op.operands[:2])] for op in ops]
    digest = hashlib.sha256(json.dumps(shapes).encode()).hexdigest()[:16]
    return f"{prefix} {len(ops)} {kind} {precision} {digest}"


def best_in_model(records: list[Record]) -> tuple[Record | None, str]:
    """Of a group's records, the fastest that won its check in the model (None: none did),
    and what it measured there."""
    won = [r for r in records if r.status == "ok" and not r.detail.startswith(REJECTED_IN_MODEL)]
    if not won:
        return None, ""
    best = min(won, key=lambda r: r.seconds or math.inf)
    return best, f"measured in the model: {_ms(best.baseline_seconds)} -> {_ms(best.seconds)} ms"


def group_use(records: list[Record], algorithm: str, rule: str) -> tuple[str | None, str]:
    """A group decided in the model (``tune()``'s checks of one option for a model's ops):
    of its records of ``algorithm``, the ``use`` of the one that won its check (None: none
    did, the rule ``rule`` stands) and why: what it measured, what the others measured
    where none won, or that none was measured."""
    records = [r for r in records if r.config.get("algorithm") == algorithm]
    best, said = best_in_model(records)
    if best is not None:
        return str(best.config.get("use")), said
    if records:  # measured, and lost its check in the model (or failed)
        lost = "; ".join(f"{r.config.get('use')}: {r.detail or r.status}" for r in records)
        return None, f"the rule, the other measured in the model: {lost}"
    return None, f"unmeasured: the rule ({rule})"


def split_signature(ops: list[ir.Operation], precision: str, kind: str = "matmuls") -> str:
    """The signature of a model's offloadable matmuls (or convs) as a group, for their split."""
    return group_signature(SPLIT_PREFIX, ops, kind, precision)


def split_config(direction: str, kind: str = "matmuls") -> dict[str, str]:
    """The ``algorithm`` record of a measured split direction for a group of matmuls (or
    convs)."""
    return {"kind": ALGORITHM, "algorithm": SPLIT_GROUPS[kind][0], "split": direction}


def _on_columns(op: ir.Operation, opts: OffloadOptions, direction: str) -> bool | None:
    """Whether ``direction`` puts matmul or conv ``op`` on columns (None: not static)."""
    shape = ir.RankedTensorType(op.results[0].type).shape
    if any(d < 0 for d in shape):
        return None
    if op.name in CONV_SPLIT_GROUP:
        x, w = (ir.RankedTensorType(v.type).shape for v in op.operands[:2])
        if any(d < 0 for d in x):
            return None
        n, oh, oc = shape[0], shape[1], shape[3]
        source, weights = int(np.prod(x)), int(np.prod(w))
        return conv_split(n, oh, oc, source, weights, 1, opts.threads, direction)[1]
    rows = int(np.prod(shape[:-1]))
    compute = "s8" if is_integer(op) else _compute(opts)
    return matmul_split(rows, shape[-1], opts.threads, compute, direction)[1]


def _split_decision(ops: list[ir.Operation], opts: OffloadOptions, kind: str) -> str:
    """The direction ``opts.split`` (``opts.conv_split`` for ``kind`` "convs") gives this
    group of matmuls (convs): under ``tuned`` the one this host's records chose for it
    (measured in the model by ``xgen_mlir.tune``; not rejected there), else ``count``.
    Within compile(), where the direction matters (an op of the group may go on columns),
    the decision goes to its report with the others (``report.tuning.choices``), with how
    many of the group it puts on columns (what the tune compares)."""
    from .winograd_convs import CHOICES  # (it imports this module)

    choices = CHOICES.get()
    option = SPLIT_GROUPS[kind][1]
    direction, why = (opts.split if kind == "matmuls" else opts.conv_split), f"the {option} option"
    if not ops:
        return "count" if direction == "tuned" else direction
    if choices is None and direction != "tuned":
        return direction
    signature = split_signature(ops, opts.precision, kind)
    if direction == "tuned":
        records = choices.records.get(signature, []) if choices is not None else []
        best, said = best_in_model(records)
        direction, why = "count", "unmeasured: the rows or columns by count"
        if best is not None:
            direction, why = str(best.config.get("split", "count")), said
        elif records:  # measured, and lost its check in the model (or failed)
            lost = "; ".join(f"{r.config.get('split')}: {r.detail or r.status}" for r in records)
            why = f"the rows or columns by count, the other measured in the model: {lost}"
    if choices is not None:
        columns, could = 0, 0  # how many go on columns, and how many may (there is a choice)
        for op in ops:
            columns += bool(_on_columns(op, opts, direction))
            could += bool(_on_columns(op, opts, "columns"))
        if could:
            decision = f"{direction} ({columns} of {len(ops)} on columns)"
            choices.log.append((signature, decision, why))
    return direction


def _ms(seconds: float | None) -> str:
    return "?" if seconds is None else f"{seconds * 1e3:.3f}"


@register_pass(
    "xgen-byoc-offload",
    "Convolutions and matmuls with constant weights -> calls of a kernel library's primitives "
    "(BYOC).",
    OffloadOptions,
)
def _pass(module_op: ir.Operation, opts: OffloadOptions | None) -> Counter:
    return byoc_offload(module_op, opts)
