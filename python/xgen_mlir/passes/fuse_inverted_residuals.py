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

An int8 model computed in f32 (``xgen-integer-in-float``, ``xgen-elide-int-roundtrips``) has
its blocks in another form, also matched (``match_rows_block``): its 1x1 convs are
``linalg.matmul`` on NHWC rows (``[N*H*W, C]``: the same bytes), reached through expand and
collapse reshapes, and the ops between the layers requantize with per-channel constants; they
are translated by ``epilogue_c`` (which reads such constants) and the kernel loads them per
block of channels. No residual add there (an int8 model adds after requantizing).

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
from dataclasses import dataclass, field

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
from .epilogue_c import Operands, epilogue
from .generic_util import (
    body_ops,
    has_default_maps,
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
    # bf16: expand and project as bf16 dot products on 512-bit targets (codegen docstring),
    # but for a target with bf16 matrix tiles (AMX-BF16), where they lost to the f32 kernel
    # (as the pointwise kernels did: PointwiseOptions.bf16_kernels)
    precision: str = "fp32"
    bf16_tiles: int = 0


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
    # the activations' per-channel constants (c0, c1, ...), each [ce]
    cols_expand: list[np.ndarray] = field(default_factory=list)
    cols_depthwise: list[np.ndarray] = field(default_factory=list)

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


def _depthwise(dw: ir.Operation, ev: ConstEval) -> tuple[np.ndarray, np.ndarray, int, ir.Operation]:
    """The depthwise conv's constant 3x3 filter, per-channel bias and stride, and the
    single-use zero pad of 1 it reads; NoMatch otherwise."""
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
    return wd, bd, stride[0], pad


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
    wd, bd, s, pad = _depthwise(dw, ev)
    ops += [dw, pad]
    x, expand_weights, act_e = _expand(pad.operands[0], ev, ops)
    if not expand_weights and not without_expand:
        raise NoMatch("no expand conv (single-use, 1x1, constant) before the depthwise conv")
    n, h, w, cin = static_f32(x)
    static_f32(project.results[0])
    ce, cout = wd.shape[2], wp.shape[1]
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


def _matmul_1x1(op: ir.Operation | None, ev: ConstEval, what: str) -> tuple[np.ndarray, np.ndarray]:
    """The [cin, cout] weights and [cout] bias of ``op``, a ``linalg.matmul`` of NHWC rows by
    a constant: a 1x1 conv as xgen-integer-in-float writes an int8 model's."""
    if op is None or op.name != "linalg.matmul" or not has_default_maps(op):
        raise NoMatch(f"the {what} is not a plain linalg.matmul")
    w = ev.value(op.operands[1])
    if w is None or w.dtype != np.float32 or w.ndim != 2:
        raise NoMatch(f"the {what} matmul's weights are not a constant f32 matrix")
    bias = ev.per_channel_init(op.operands[2], 1)
    if bias is None:
        raise NoMatch(f"the {what} matmul's accumulator is not a per-column constant")
    return w, bias


def _up_to(value: ir.Value, name: str, reshape: str) -> ir.Operation | None:
    """The ``name`` op ``value`` is computed from through elementwise generics (the input
    that carries the tensor on: ``tensor_input``) and ``reshape`` ops, or None."""
    for _ in range(16):
        op = producer(value)
        if op is None or op.name == name:
            return op
        if op.name == reshape:
            value = op.operands[0]
            continue
        if op.name != "linalg.generic" or not is_elementwise(op):
            return None
        chain = tensor_input(op, op.results[0])
        if chain is None:
            return None
        value = chain
    return None


def _chain_to(start: ir.Value, end: ir.Value, ev: ConstEval, layer: ir.Operation, rows: bool):
    """The elementwise ops from ``start`` (a layer's result) to ``end`` as epilogue C on
    vectors of channels: their ops, C statements and per-channel constants. ``rows``: the
    chain may collapse NHWC to rows on the way."""
    if start == end:
        return [], (), []
    epi = epilogue(start, ev, Operands(layer, column_dim=-1, tensors=False, collapses=rows))
    if not epi or epi.ops[-1].results[0] != end:
        raise NoMatch("the ops between the convs do not all translate to the kernel's C")
    return list(epi.ops), tuple(epi.lines), list(epi.columns)


def match_rows_block(project: ir.Operation, ev: ConstEval, vl: int = VL) -> Block:
    """The block ending at ``project``, a ``linalg.matmul`` of NHWC rows by a constant (an int8
    model computed in f32: its 1x1 convs are matmuls on collapsed NHWC rows, and its
    activations requantize with per-channel constants), or NoMatch. The expand is such a
    matmul too, the kernel's input its rows (the same bytes as NHWC); no residual add (an
    int8 model adds after requantizing)."""
    f32_only(project)
    wp, bp = _matmul_1x1(project, ev, "project")
    a = project.operands[0]
    dw = _up_to(a, "linalg.depthwise_conv_2d_nhwc_hwc", "tensor.collapse_shape")
    if dw is None:
        raise NoMatch("the project's rows are not a depthwise conv's (through activations)")
    ops_d, act_d, cols_d = _chain_to(dw.results[0], a, ev, dw, rows=True)
    if num_uses(a) != 1:
        raise NoMatch("the project's input has other uses")
    wd, bd, s, pad = _depthwise(dw, ev)
    src = pad.operands[0]
    if num_uses(src) != 1:
        raise NoMatch("the expanded tensor has other uses")
    expand = _up_to(src, "linalg.matmul", "tensor.expand_shape")
    we, be = _matmul_1x1(expand, ev, "expand")
    assert expand is not None
    ops_e, act_e, cols_e = _chain_to(expand.results[0], src, ev, expand, rows=False)
    x = expand.operands[0]
    n, h, w, ce = static_f32(src)
    rows_x = static_f32(x)
    cin, cout = we.shape[0], wp.shape[1]
    if rows_x != [n * h * w, cin] or we.shape[1] != ce or wd.shape[2] != ce or wp.shape[0] != ce:
        raise NoMatch("the convs' channel counts or rows do not chain")
    static_f32(project.results[0])
    why = unsupported(h, w, cin, ce, cout, s, vl)
    if why:
        raise NoMatch(why)
    ops = [project, *ops_d[::-1], dw, pad, *ops_e[::-1], expand]
    block = Block(
        x,
        n,
        (h, w, cin, ce, cout, s),
        [we, be, wd, bd, wp, bp],
        list(act_e),
        list(act_d),
        ops,
        True,
    )
    block.cols_expand, block.cols_depthwise = cols_e, cols_d
    return block


def reads_depthwise_rows(mm: ir.Operation) -> bool:
    """Whether matmul ``mm``'s rows come from a depthwise conv (through elementwise ops and a
    collapse to rows): a candidate int8 block end."""
    return (
        _up_to(mm.operands[0], "linalg.depthwise_conv_2d_nhwc_hwc", "tensor.collapse_shape")
        is not None
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
        bf16=opts.precision == "bf16"
        and not opts.bf16_tiles
        and not (block.cols_expand or block.cols_depthwise)
        and bf16_unsupported(cin, block.expand, vl) is None,
        cols_expand=len(block.cols_expand),
        cols_depthwise=len(block.cols_depthwise),
    )
    packed = pack_weights(block.weights, spec, [*block.cols_expand, *block.cols_depthwise])
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
        # Then the blocks of an int8 model computed in f32, whose 1x1 convs are matmuls.
        vl = simd_lanes(opts.vector_bits)
        candidates = [
            (op, lambda op: match_block(op, ev, opts.without_expand, vl))
            for op in ops_named(module_op, "linalg.conv_2d_nhwc_hwcf")
            if reads_depthwise(op)
        ] + [
            (op, lambda op: match_rows_block(op, ev, vl))
            for op in ops_named(module_op, "linalg.matmul")
            if reads_depthwise_rows(op)
        ]
        for project, match in candidates:
            try:
                block = match(project)
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
