"""xgen-fuse-inverted-residuals: expand 1x1 -> act -> depthwise 3x3 -> act -> project 1x1 as one
generated kernel inside one IREE dispatch.

Why: a MobileNet inverted-residual block is three Many-to-Many ops, and IREE's codegen puts
one contraction root in a dispatch (STACK.md item 5), so the expanded tensor (6x the block's
input) is written by the expand conv, read and rewritten by the depthwise conv, and read by
the project conv. Where it is larger than the caches, the depthwise conv between them runs
at memory speed and gains nothing from a second core: MobileNetV2's block 2 depthwise conv
(56x56x96, stride 2) takes 0.19 ms on one thread and on two. The kernel
(``codegen/inverted_residual.py``) keeps 16 expanded channels of a band of rows in a stack
buffer and never writes the expanded tensor at all.

What it matches (NHWC, after ``xgen-nhwc-convs``): ``linalg.conv_2d_nhwc_hwcf`` with a 1x1
constant filter (the expand), elementwise activations, a zero ``tensor.pad`` of 1 on H and W,
``linalg.depthwise_conv_2d_nhwc_hwc`` 3x3 with stride 1 or 2 and constant filter,
activations, and a 1x1 ``linalg.conv_2d_nhwc_hwcf`` (the project); any static batch (one
workgroup per band and image), f32, static shapes (a dynamic batch is counted as not fused,
with that reason, and left to IREE), per-channel constant biases (the accumulator inits),
every intermediate with one use.
Where the project's result (through transposes) is only added to the block's input, element
for element in whatever layout the add works (torch-mlir adds the NCHW views), that add is
taken in as well: the kernel starts its output from bias + input, and the add disappears.
An activation is a ``linalg.generic`` on the tensor and scalar constants whose body uses
``arith.cmpf``/``select``/``addf``/``subf``/``mulf``/``divf``/``negf``; it is translated op
by op into C (ordered and unordered comparisons as the IR says), so NaN and -0 come out as
the model's ops give them. Only blocks whose expanded tensor has at least
``min-expanded-bytes`` are fused (smaller ones stay in cache, and IREE's three dispatches are
as fast: measured, see the pipeline). A block that matches but is not fused is counted with
the reason.

With ``without-expand=true`` a block with no expand conv to take in (MobileNetV2's first
block, or one whose expanded tensor has other readers) is fused too: the kernel reads the
padded tensor's source and does the depthwise and project convs. Off by default: on
MobileNetV2's first block (112x112x32 -> 16) it saves only the depthwise output's round trip,
and measured slower than IREE's two dispatches (0.24 against 0.16 ms per call, in a profile
with warm caches) and no faster in the model.

Numerics: the same products summed in another order (float reassociation only).
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .._mlir import ir
from ..codegen.inverted_residual import (
    VL,
    BlockSpec,
    bf16_unsupported,
    pack_weights,
    pick_pixels,
    pick_rows,
    unsupported,
)
from ..codegen.inverted_residual import generate as generate_block
from ..codegen.toolchain import ToolchainOptions, compile_object
from ..diagnostics import format_location, warn_fallback
from ..irutil import ops_named
from ..target import simd_lanes
from .consteval import ConstEval
from .generic_util import (
    body_ops,
    is_elementwise,
    num_inputs,
    num_uses,
    producer,
)
from .kernel_call import free_symbol, install_kernel
from .kernel_match import (
    NoMatch,
    activations_up,
    attr_ints,
    conv_1x1,
    residual_add,
    static_f32,
    tensor_input,
)
from .pointwise_kernels import f32_only
from .registry import register_pass


@dataclass
class FuseOptions(ToolchainOptions):
    vector_bits: int = 512  # the target's SIMD width: the kernels' vectors and channel block
    min_expanded_bytes: int = 1 << 20  # fuse blocks whose expanded tensor is at least this
    # also fuse depthwise + project where there is no expand conv to take in (see the docstring)
    without_expand: bool = False
    verbose: bool = False  # print every fused block to stderr
    # bf16: expand and project as bf16 dot products on 512-bit targets (codegen docstring)
    precision: str = "fp32"


def _zero_pad_1(op: ir.Operation | None) -> None:
    if op is None or op.name != "tensor.pad" or len(op.operands) != 1:
        raise NoMatch("the depthwise conv's input is not a static tensor.pad")
    low = list(ir.DenseI64ArrayAttr(op.attributes["static_low"]))
    high = list(ir.DenseI64ArrayAttr(op.attributes["static_high"]))
    if low != [0, 1, 1, 0] or high != [0, 1, 1, 0]:
        raise NoMatch(f"the depthwise conv's padding is low {low} high {high}, not 1 on H and W")
    yielded = body_ops(op)[-1].operands[0]
    pad_op = producer(yielded)
    value = None
    if pad_op is not None and pad_op.name == "arith.constant":
        attr = pad_op.attributes["value"]
        value = ir.FloatAttr(attr).value if isinstance(attr, ir.FloatAttr) else None
    if value != 0.0 or np.signbit(value):
        raise NoMatch("the depthwise conv's padding is not +0.0")


@dataclass
class Block:
    """One matched block: its input, the ops it replaces, and the kernel's weights."""

    x: ir.Value
    batch: int
    shape: tuple[int, int, int, int, int, int]  # h, w, cin, ce, cout, stride
    weights: list[np.ndarray]  # we, be, wd, bd, wp, bp
    act_expand: list[str]
    act_depthwise: list[str]
    ops: list[ir.Operation]  # the ops the kernel replaces
    expand: bool  # False: no expand conv; the depthwise conv reads x
    residual: ir.Operation | None = None  # the add of x that ends the block, taken in too
    residual_perm: list[int] | None = None  # the add's layout: its dim i is NHWC dim perm[i]

    @property
    def end(self) -> ir.Operation:
        """The op whose result the kernel's result replaces."""
        return self.residual or self.ops[0]


def reads_depthwise(conv: ir.Operation) -> bool:
    """Whether ``conv``'s input comes from a depthwise conv through elementwise ops only: a
    candidate block end, whose refusal is worth reporting."""
    value = conv.operands[0]
    for _ in range(8):
        op = producer(value)
        if op is None or op.name == "linalg.depthwise_conv_2d_nhwc_hwc":
            return op is not None
        if op.name != "linalg.generic" or not is_elementwise(op):
            return False
        chain = tensor_input(op, value)
        if chain is None and num_inputs(op) == 1:  # a cast: an fp16 / bf16 model's truncf
            chain = op.operands[0]
        if chain is None:
            return False
        value = chain
    return False


def match_block(
    project: ir.Operation, ev: ConstEval, without_expand: bool = False, vl: int = VL
) -> Block:
    """The block ending at ``project`` (a 1x1 conv), or NoMatch; with ``without_expand`` also
    one with no expand conv."""
    f32_only(project)  # an fp16 / bf16 model's blocks stay with IREE, with that reason
    wp, bp = conv_1x1(project, ev, "project")
    ops = [project]
    src, act_d = activations_up(project.operands[0], ev, ops)
    dw = producer(src)
    if dw is None or dw.name != "linalg.depthwise_conv_2d_nhwc_hwc":
        raise NoMatch("the project conv's input is not a depthwise conv (through activations)")
    if num_uses(src) != 1:
        raise NoMatch("the depthwise conv's result has other uses")
    wd = ev.value(dw.operands[1])
    if wd is None or wd.dtype != np.float32 or wd.shape[:2] != (3, 3):
        raise NoMatch("the depthwise filter is not a constant 3x3 f32 filter")
    stride = attr_ints(dw, "strides")
    if stride[0] != stride[1] or attr_ints(dw, "dilations") != [1, 1]:
        raise NoMatch(f"depthwise strides {stride} or its dilation")
    bd = ev.per_channel_init(dw.operands[2], 3)
    if bd is None:
        raise NoMatch("the depthwise conv's accumulator is not a per-channel constant")
    pad = producer(dw.operands[0])
    _zero_pad_1(pad)
    assert pad is not None
    if num_uses(dw.operands[0]) != 1:
        raise NoMatch("the padded tensor has other uses")
    ops += [dw, pad]
    x, expand_weights, act_e = _expand(pad.operands[0], ev, ops)
    if not expand_weights and not without_expand:
        raise NoMatch("no expand conv (single-use, 1x1, constant) before the depthwise conv")
    n, h, w, cin = static_f32(x)
    static_f32(project.results[0])
    ce, cout = wd.shape[2], wp.shape[1]
    s = stride[0]
    if (expand_weights[0].shape[1] if expand_weights else cin) != ce or wp.shape[0] != ce:
        raise NoMatch("the convs' channel counts do not chain")
    why = unsupported(h, w, cin, ce, cout, s, vl)
    if why:
        raise NoMatch(why)
    weights = [*expand_weights, wd, bd, wp, bp]
    add = residual_add(project.results[0], x) if s == 1 and cin == cout else None
    return Block(
        x,
        n,
        (h, w, cin, ce, cout, s),
        weights,
        act_e,
        act_d,
        ops,
        bool(expand_weights),
        *(add[:2] if add else (None, None)),
    )


def _expand(
    value: ir.Value, ev: ConstEval, ops: list[ir.Operation]
) -> tuple[ir.Value, list[np.ndarray], list[str]]:
    """The block's input, its expand conv's weights and bias, and the activations' C, if
    ``value`` is a single-use 1x1 conv with constant weights through activations (their ops
    appended to ``ops``). Otherwise the block has no expand conv (MobileNetV2's first block):
    ``value`` itself, and the depthwise conv reads it."""
    walked: list[ir.Operation] = []
    try:
        src, act = activations_up(value, ev, walked)
        conv = producer(src)
        weights = conv_1x1(conv, ev, "expand")
    except NoMatch:
        return value, [], []
    if num_uses(src) != 1:
        return value, [], []
    assert conv is not None
    ops += [*walked, conv]
    return conv.operands[0], list(weights), act


def fuse_block(module_op: ir.Operation, block: Block, symbol: str, opts: FuseOptions) -> BlockSpec:
    """Replace the block (its project conv, or the residual add after it) by a call of its
    generated kernel."""
    h, w, cin, ce, cout, s = block.shape
    vl = simd_lanes(opts.vector_bits)
    rows = pick_rows(h, w, s, vl=vl)
    spec = BlockSpec(
        symbol,
        h,
        w,
        cin,
        ce,
        cout,
        s,
        rows,
        tuple(block.act_expand),
        tuple(block.act_depthwise),
        pick_pixels((w - 1) // s + 1) or 1,
        residual=block.residual is not None,
        expand=block.expand,
        batch=block.batch,
        vl=vl,
        bf16=opts.precision == "bf16" and bf16_unsupported(cin, block.expand, vl) is None,
    )
    packed = pack_weights(block.weights, spec)
    obj = compile_object(generate_block(spec), opts.toolchain(), symbol)
    install_kernel(
        module_op,
        symbol,
        str(obj),
        opts.object_format,
        [block.x, packed],
        block.ops[0].results[0].type,
        (spec.bands, block.batch, 1),
        block.ops + ([block.residual] if block.residual else []),
        block.end,
        block.residual_perm,
        "xgen_block_weights",
        ids=2 if block.batch > 1 else 1,
    )
    return spec


def fuse_inverted_residuals(module_op: ir.Operation, opts: FuseOptions | None = None) -> Counter:
    """Fuse every matching block; returns counts of fused blocks and of the reasons others
    that reached a depthwise conv were not."""
    opts = opts or FuseOptions()
    toolchain = opts.toolchain()
    counts: Counter[str] = Counter()
    with module_op.context:
        ev = ConstEval(module_op)
        # In program order: a fused block's expand conv (erased with it) was visited before.
        for project in ops_named(module_op, "linalg.conv_2d_nhwc_hwcf"):
            if not reads_depthwise(project):
                continue
            try:
                block = match_block(project, ev, opts.without_expand, simd_lanes(opts.vector_bits))
            except NoMatch as e:
                counts[f"not fused: {e}"] += 1
                continue
            h, w, _cin, ce, _cout, _s = block.shape
            if block.batch * h * w * ce * 4 < opts.min_expanded_bytes:  # all images' in IREE
                counts["not fused: expanded tensor below min-expanded-bytes"] += 1
                continue
            if not toolchain.available():
                counts[f"not fused: C compiler '{opts.cc}' not found"] += 1
                continue
            where = format_location(project.location)
            symbol = free_symbol(module_op, "xgen_inverted_residual", counts["blocks fused"] + 1)
            spec = fuse_block(module_op, block, symbol, opts)
            counts["blocks fused"] += 1
            if spec.batch > 1:
                counts[f"of them for a batch of {spec.batch}"] += 1
            if spec.residual:
                counts["of them with their residual add"] += 1
            if opts.verbose:
                print(
                    f"xgen-fuse-inverted-residuals: {where}: {spec.h}x{spec.w}x{spec.cin} -> "
                    f"{spec.ce} -> dw s{spec.stride} -> {spec.cout}{' + x' * spec.residual} as {spec.symbol}, "
                    f"{spec.bands} bands of {spec.rows} rows",
                    file=sys.stderr,
                )
    if any(k.startswith("not fused: C compiler") for k in counts):
        warn_fallback(
            f"xgen-fuse-inverted-residuals: C compiler '{opts.cc}' not found; "
            "inverted-residual blocks stay unfused"
        )
    return counts


@register_pass(
    "xgen-fuse-inverted-residuals",
    "expand 1x1 -> act -> depthwise 3x3 -> act -> project 1x1 (NHWC) as one generated kernel.",
    FuseOptions,
)
def _pass(module_op: ir.Operation, opts: FuseOptions | None) -> Counter:
    return fuse_inverted_residuals(module_op, opts)
