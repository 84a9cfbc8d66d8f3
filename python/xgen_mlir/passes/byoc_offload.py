"""xgen-byoc-offload: convolutions handed to a kernel library (oneDNN) through an IREE plugin.

Why: a vendor library's convolutions beat IREE's llvm-cpu codegen on some hosts and shapes
(blocked layouts, JIT kernels for the CPU it runs on, AMX and AVX512-BF16 where the CPU has
them: the seeds' BYOC, ``../shared/seeds/002_*``). Which ops gain is a measurement per host
(``xgen_mlir.tune`` records it, ``docs/byoc.md``); this pass offloads what it is told to.

What it matches: ``linalg.conv_2d_nchw_fchw`` (converted to NHWC first, as ``xgen-nhwc-convs``
does, so the transposes around consecutive convs cancel), ``linalg.conv_2d_nhwc_hwcf`` and
``linalg.depthwise_conv_2d_nhwc_hwc``; static shapes, f32, constant weights, an accumulator
init that is a per-channel constant (the bias). A constant-zero ``tensor.pad`` of the input's
H and W becomes the primitive's padding. Each offloaded conv becomes a dispatch of one
workgroup calling the import ``xgen_dnnl_conv_...`` (``byoc/onednn.py``), which the plugin
resolves to a primitive when the module loads; the library runs its own threads.

Which ops: with ``backend=onednn``, every match the library accepts (asked through the plugin
itself, so what the runtime would refuse is never emitted), or with ``only`` set, the matches
whose locations it lists (comma separated ``file:line:col``, as the pass's verbose output
names them); ``backend=none``: none. ``precision=bf16`` rounds the operands to bf16 with f32
accumulation, as the target's ``precision="bf16"`` does for IREE's contractions.

Numerics: f32 sums in the library's order (reassociation only); bf16 as ``precision="bf16"``.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .._mlir import ir
from ..byoc import backend_named
from ..byoc.onednn import conv_symbol
from ..codegen.dispatch import import_executable_text
from ..diagnostics import format_location
from ..irutil import ops_named
from .consteval import ConstEval
from .fold_batchnorm import fold_one
from .generic_util import is_dynamic, producer
from .kernel_call import free_symbol, install_kernel
from .nhwc_convs import to_nhwc
from .registry import register_pass

NCHW = ("linalg.conv_2d_nchw_fchw",)
NHWC = ("linalg.conv_2d_nhwc_hwcf", "linalg.depthwise_conv_2d_nhwc_hwc")


@dataclass
class OffloadOptions:
    backend: str = "none"  # none | onednn
    only: str = ""  # comma-separated op locations; empty: every match
    precision: str = "fp32"  # the target's precision: bf16 computes in bf16, else f32
    verbose: bool = False


def _pad_of(x: ir.Value) -> tuple[ir.Value, list[int]]:
    """``x``'s unpadded source and [top, left, bottom, right] where ``x`` is a constant-zero
    pad of H and W only (NHWC); else ``x`` and zeros."""
    pad = producer(x)
    if pad is None or pad.name != "tensor.pad" or len(pad.operands) > 1:
        return x, [0, 0, 0, 0]
    low = list(ir.DenseI64ArrayAttr(pad.attributes["static_low"]))
    high = list(ir.DenseI64ArrayAttr(pad.attributes["static_high"]))
    ops = list(pad.regions[0].blocks[0].operations)
    if len(ops) != 1 or low[0] or low[3] or high[0] or high[3]:
        return x, [0, 0, 0, 0]
    value = (
        producer(ops[0].operands[0]) if not isinstance(ops[0].operands[0].owner, ir.Block) else None
    )
    if value is None or value.name != "arith.constant":
        return x, [0, 0, 0, 0]
    attr = value.attributes["value"]
    if not isinstance(attr, ir.FloatAttr) or ir.FloatAttr(attr).value != 0.0:
        return x, [0, 0, 0, 0]
    return pad.operands[0], [low[1], low[2], high[1], high[2]]


def _static_f32(op: ir.Operation) -> bool:
    for v in [op.operands[0], op.results[0]]:
        ty = ir.RankedTensorType(v.type)
        if str(ty.element_type) != "f32" or any(is_dynamic(s) for s in ty.shape):
            return False
    return True


def _offload_nhwc(module_op: ir.Operation, op: ir.Operation, ev: ConstEval, opts) -> str:
    """Replace the NHWC conv ``op`` by the library's; returns what happened (a count key)."""
    backend = backend_named(opts.backend)
    weight = ev.value(op.operands[1])
    bias = ev.per_channel_init(op.operands[2], 3)
    if weight is None or weight.dtype != np.float32:
        return "kept: weights not constant f32"
    if bias is None:
        return "kept: accumulator init not a per-channel constant"
    x, pads = _pad_of(op.operands[0])
    n, ih, iw, ic = ir.RankedTensorType(x.type).shape
    _, oh, ow, oc = ir.RankedTensorType(op.results[0].type).shape
    strides = [int(s) for s in ir.DenseIntElementsAttr(op.attributes["strides"])]
    dilations = [int(d) for d in ir.DenseIntElementsAttr(op.attributes["dilations"])]
    depthwise = op.name == "linalg.depthwise_conv_2d_nhwc_hwc"
    kh, kw = weight.shape[:2]
    if depthwise and oc != ic:
        return "kept: depthwise channel multiplier"
    symbol = conv_symbol(
        "bf16" if opts.precision == "bf16" else "f32",
        "none",
        n,
        ih,
        iw,
        ic,
        oh,
        ow,
        oc,
        (kh, kw),
        strides,
        pads,
        dilations,
        groups=ic if depthwise else 1,
    )
    if not backend.can_build(symbol):
        return f"kept: {backend.name} has no primitive for it"
    op_name = op.name
    name = free_symbol(module_op, f"xgen_{backend.name}_conv", 0)
    w = np.ascontiguousarray(weight, dtype=np.float32).ravel()
    b = bias.astype(np.float32)
    out_len = n * oh * ow * oc
    text = import_executable_text(name, symbol, [n * ih * iw * ic, w.size, b.size], out_len)
    install_kernel(
        module_op,
        name,
        "",
        "",
        [x, w, b],
        op.results[0].type,
        (1, 1, 1),
        [op],
        op,
        weights_name=f"xgen_{backend.name}_weights",
        executable=text,
    )
    return f"{op_name} -> {backend.name}"


def byoc_offload(module_op: ir.Operation, opts: OffloadOptions | None = None) -> Counter:
    opts = opts or OffloadOptions()
    counts: Counter[str] = Counter()
    if opts.backend == "none":
        return counts
    backend_named(opts.backend)  # an unknown name is an error naming the known ones
    listed = {s.strip() for s in opts.only.split(",") if s.strip()}
    with module_op.context:
        ev = ConstEval(module_op)
        for op in ops_named(module_op, *NCHW, *NHWC):
            where = format_location(op.location)
            if listed and where not in listed:
                continue
            if not _static_f32(op):
                counts[f"{op.name} kept: not static f32"] += 1
                continue
            if op.name in NCHW:
                fold_one(op, ev)
                made = to_nhwc(op, ev)
                if not isinstance(made, ir.Operation | ir.OpView):
                    counts[f"{op.name} kept: no NHWC form"] += 1
                    continue
                op = made.operation
            what = _offload_nhwc(module_op, op, ev, opts)
            counts[what] += 1
            if opts.verbose:
                print(f"xgen-byoc-offload: {where}: {what}", file=sys.stderr)
    return counts


@register_pass(
    "xgen-byoc-offload",
    "Convolutions with constant weights -> calls of a kernel library's primitives (BYOC).",
    OffloadOptions,
)
def _pass(module_op: ir.Operation, opts: OffloadOptions | None) -> Counter:
    return byoc_offload(module_op, opts)
