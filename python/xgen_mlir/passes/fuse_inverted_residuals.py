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
activations, and a 1x1 ``linalg.conv_2d_nhwc_hwcf`` (the project); batch 1, f32, static
shapes, per-channel constant biases (the accumulator inits), every intermediate with one use.
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

from .._mlir import func, ir
from ..analysis.flops import FLOPS_ATTR, op_flops
from ..codegen import dispatch
from ..codegen.dispatch import EXECUTABLE_ATTR
from ..codegen.inverted_residual import BlockSpec, pick_pixels, pick_rows, unsupported
from ..codegen.inverted_residual import generate as generate_block
from ..codegen.toolchain import ToolchainOptions, compile_object
from ..frontend.lowering import format_location
from ..irutil import constant_op, find_func, ops_named, splice_functions
from .cancel_reshapes import transpose_perm
from .consteval import ConstEval
from .generic_util import (
    body,
    body_ops,
    erase_dead_tree,
    indexing_maps,
    is_elementwise,
    is_identity,
    map_dims,
    num_inputs,
    num_uses,
    producer,
    transpose,
)
from .registry import register_pass


@dataclass
class FuseOptions(ToolchainOptions):
    min_expanded_bytes: int = 1 << 20  # fuse blocks whose expanded tensor is at least this
    # also fuse depthwise + project where there is no expand conv to take in (see the docstring)
    without_expand: bool = False
    verbose: bool = False  # print every fused block to stderr


class NoMatch(Exception):
    """The op is not (the end of) a block this pass fuses; the message says why."""


# arith.cmpf predicate -> C on GCC vectors (comparisons are ordered: false on NaN)
_CMP = {
    1: "({a} == {b})", 2: "({a} > {b})", 3: "({a} >= {b})", 4: "({a} < {b})",
    5: "({a} <= {b})", 6: "(({a} < {b}) | ({a} > {b}))", 7: "(({a} == {a}) & ({b} == {b}))",
    8: "~(({a} < {b}) | ({a} > {b}))", 9: "~({a} <= {b})", 10: "~({a} < {b})",
    11: "~({a} >= {b})", 12: "~({a} > {b})", 13: "({a} != {b})",
    14: "~(({a} == {a}) & ({b} == {b}))",
}  # fmt: skip
_BINARY = {"arith.addf": "+", "arith.subf": "-", "arith.mulf": "*", "arith.divf": "/"}


def _splat(x: float) -> str:
    if not np.isfinite(x):
        raise NoMatch(f"non-finite constant {x} in an activation")
    return f"SPLAT({float(np.float32(x)).hex()}f)"


def activation_c(op: ir.Operation, chain: ir.Value, ev: ConstEval) -> str:
    """One C statement applying elementwise ``op`` (whose tensor input is ``chain``) to the
    vector ``v``; NoMatch if its body has an op this does not translate."""
    if op.name != "linalg.generic" or not is_elementwise(op) or len(op.results) != 1:
        raise NoMatch(f"{op.name} is not an elementwise activation")
    ins, maps = list(op.operands[: num_inputs(op)]), indexing_maps(op)
    args = list(body(op).arguments)
    names: dict[ir.Value, str] = {args[-1]: ""}  # the output's block argument must stay unused
    for operand, amap, arg in zip(ins, maps, args, strict=False):
        if operand == chain and is_identity(amap):
            names[arg] = "v"
            continue
        value = ev.value(operand)
        if value is None or value.size != 1:
            raise NoMatch("an activation input that is neither the tensor nor a scalar constant")
        names[arg] = _splat(float(value.reshape(())))
    if "v" not in names.values() or op.results[0].type != chain.type:
        raise NoMatch("an elementwise op that does not map the tensor onto itself")
    lines = []
    for i, bop in enumerate(body_ops(op)):
        if bop.name == "linalg.yield":
            out = names.get(bop.operands[0])
            if not out:
                raise NoMatch("an activation that yields its output argument")
            return "{ " + " ".join(lines) + f" v = {out}; }}"
        if bop.name == "arith.constant":
            attr = bop.attributes["value"]
            if not isinstance(attr, ir.FloatAttr):
                raise NoMatch("a non-float constant in an activation")
            names[bop.results[0]] = _splat(ir.FloatAttr(attr).value)
            continue
        operands = [names.get(v) for v in bop.operands]
        if not all(operands):  # captured from outside, or the output argument
            raise NoMatch(f"{bop.name} reads a value the kernel does not have")
        if bop.name == "arith.cmpf":
            pred = ir.IntegerAttr(bop.attributes["predicate"]).value
            if pred not in _CMP:
                raise NoMatch(f"arith.cmpf predicate {pred}")
            expr, kind = _CMP[pred].format(a=operands[0], b=operands[1]), "vi16"
        elif bop.name == "arith.select":
            expr, kind = f"SEL({operands[0]}, {operands[1]}, {operands[2]})", "v16"
        elif bop.name in _BINARY:
            expr, kind = f"({operands[0]} {_BINARY[bop.name]} {operands[1]})", "v16"
        elif bop.name == "arith.negf":
            expr, kind = f"(-{operands[0]})", "v16"
        else:
            raise NoMatch(f"{bop.name} in an activation (the kernel translates cmpf, select, "
                          "addf, subf, mulf, divf, negf)")  # fmt: skip
        names[bop.results[0]] = f"t{i}"
        lines.append(f"const {kind} t{i} = {expr};")
    raise NoMatch("an activation without a yield")


def _tensor_input(op: ir.Operation, value: ir.Value) -> ir.Value | None:
    """The input of elementwise ``op`` (which produces ``value``) that carries the tensor on:
    the first of ``value``'s type."""
    return next((v for v in op.operands[: num_inputs(op)] if v.type == value.type), None)


def _activations(
    value: ir.Value, ev: ConstEval, ops: list[ir.Operation]
) -> tuple[ir.Value, list[str]]:
    """Walk up from ``value`` through single-use elementwise activations (appended to
    ``ops``): the value they start from and their C statements, first applied first."""
    stmts: list[str] = []
    while True:
        op = producer(value)
        if op is None or op.name != "linalg.generic":
            return value, stmts[::-1]
        if num_uses(value) != 1:
            raise NoMatch("an activation whose result has other uses")
        chain = _tensor_input(op, value)
        if chain is None:
            raise NoMatch("an elementwise op that does not map the tensor onto itself")
        stmts.append(activation_c(op, chain, ev))
        ops.append(op)
        value = chain


def _static_f32(value: ir.Value) -> list[int]:
    ty = ir.RankedTensorType(value.type)
    if str(ty.element_type) != "f32" or not ty.has_static_shape:
        raise NoMatch(f"{ty} is not a static f32 tensor")
    return list(ty.shape)


def _attr_ints(op: ir.Operation, name: str) -> list[int]:
    return list(ir.DenseIntElementsAttr(op.attributes[name]))


def _conv_1x1(op: ir.Operation | None, ev: ConstEval, what: str) -> tuple[np.ndarray, np.ndarray]:
    """The [cin, cout] weights and [cout] bias of a 1x1 NHWC conv with constant filter."""
    if op is None or op.name != "linalg.conv_2d_nhwc_hwcf":
        raise NoMatch(f"the {what} is not a linalg.conv_2d_nhwc_hwcf")
    w = ev.value(op.operands[1])
    if w is None or w.dtype != np.float32 or w.shape[:2] != (1, 1):
        raise NoMatch(f"the {what} conv's filter is not a constant 1x1 f32 filter")
    if _attr_ints(op, "strides") != [1, 1] or _attr_ints(op, "dilations") != [1, 1]:
        raise NoMatch(f"the {what} conv is strided or dilated")
    bias = ev.per_channel_init(op.operands[2], 3)
    if bias is None:
        raise NoMatch(f"the {what} conv's accumulator is not a per-channel constant")
    return w.reshape(w.shape[2:]), bias


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
        value = _tensor_input(op, value)
        if value is None:
            return False
    return False


def match_block(project: ir.Operation, ev: ConstEval, without_expand: bool = False) -> Block:
    """The block ending at ``project`` (a 1x1 conv), or NoMatch; with ``without_expand`` also
    one with no expand conv."""
    wp, bp = _conv_1x1(project, ev, "project")
    ops = [project]
    src, act_d = _activations(project.operands[0], ev, ops)
    dw = producer(src)
    if dw is None or dw.name != "linalg.depthwise_conv_2d_nhwc_hwc":
        raise NoMatch("the project conv's input is not a depthwise conv (through activations)")
    if num_uses(src) != 1:
        raise NoMatch("the depthwise conv's result has other uses")
    wd = ev.value(dw.operands[1])
    if wd is None or wd.dtype != np.float32 or wd.shape[:2] != (3, 3):
        raise NoMatch("the depthwise filter is not a constant 3x3 f32 filter")
    stride = _attr_ints(dw, "strides")
    if stride[0] != stride[1] or _attr_ints(dw, "dilations") != [1, 1]:
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
    n, h, w, cin = _static_f32(x)
    _static_f32(project.results[0])
    if n != 1:
        raise NoMatch(f"batch {n} (the kernel does batch 1)")
    ce, cout = wd.shape[2], wp.shape[1]
    s = stride[0]
    if (expand_weights[0].shape[1] if expand_weights else cin) != ce or wp.shape[0] != ce:
        raise NoMatch("the convs' channel counts do not chain")
    why = unsupported(h, w, cin, ce, cout, s)
    if why:
        raise NoMatch(why)
    weights = [*expand_weights, wd, bd, wp, bp]
    add = residual_add(project, x) if s == 1 and cin == cout else None
    return Block(x, (h, w, cin, ce, cout, s), weights, act_e, act_d, ops, bool(expand_weights),
                 *(add or (None, None)))  # fmt: skip


def _root(value: ir.Value, dims: list[int]) -> tuple[ir.Value, list[int], list[ir.Value]]:
    """Follow ``value`` (its dim k read at loop dim ``dims[k]``) up through transposes: the
    first value that is not a transpose's result, the loop dim each of its dims is read at,
    and the transposed values passed on the way."""
    passed = []
    while (perm := transpose_perm(producer(value))) is not None:
        src = producer(value).operands[0]
        new = [0] * len(perm)
        for i, p in enumerate(perm):  # transpose: result dim i is source dim perm[i]
            new[p] = dims[i]
        passed.append(value)
        value, dims = src, new
    return value, dims, passed


def residual_add(project: ir.Operation, x: ir.Value) -> tuple[ir.Operation, list[int]] | None:
    """The elementwise ``addf`` of ``project``'s result and the block input ``x`` that ends a
    residual block, and the permutation that takes the kernel's NHWC result to the add's
    layout; or None. Transposes are followed on both sides (torch-mlir adds the NCHW views:
    the add may read either tensor through transposes and maps, and write NCHW); they must
    agree element for element, and those between project and add must have no other use."""
    y = project.results[0]
    user = y
    while num_uses(user) == 1:  # project -> (transposes) -> add
        op = next(iter(user.uses)).owner.operation
        if transpose_perm(op) is None:
            break
        user = op.results[0]
    if num_uses(user) != 1:
        return None
    add = next(iter(user.uses)).owner.operation
    if not is_elementwise(add) or num_inputs(add) != 2 or len(add.operands) != 3:
        return None
    ops, args = body_ops(add), list(body(add).arguments)
    if [o.name for o in ops] != ["arith.addf", "linalg.yield"]:
        return None
    if ops[1].operands[0] != ops[0].results[0] or set(ops[0].operands) != set(args[:2]):
        return None
    x_root, x_dims, _ = _root(x, list(range(4)))  # x_dims[k]: the x dim of root dim k
    loops: dict[str, list[int]] = {}
    for value, amap in zip(add.operands[:2], indexing_maps(add)[:2], strict=True):
        dims = map_dims(amap)
        if dims is None or None in dims or len(dims) != 4:
            return None
        root, at, passed = _root(value, dims)
        if root == y and "y" not in loops and all(num_uses(v) == 1 for v in passed):
            loops["y"] = at  # at[j]: the loop dim that reads y's dim j
        elif root == x_root and "x" not in loops:
            lx = [0] * 4
            for k, xd in enumerate(x_dims):
                lx[xd] = at[k]
            loops["x"] = lx
    if loops.get("x") is None or loops.get("x") != loops.get("y"):
        return None
    ly = loops["y"]
    return add, [ly.index(i) for i in range(4)]  # add dim i is y dim perm[i]


def _expand(
    value: ir.Value, ev: ConstEval, ops: list[ir.Operation]
) -> tuple[ir.Value, list[np.ndarray], list[str]]:
    """The block's input, its expand conv's weights and bias, and the activations' C, if
    ``value`` is a single-use 1x1 conv with constant weights through activations (their ops
    appended to ``ops``). Otherwise the block has no expand conv (MobileNetV2's first block):
    ``value`` itself, and the depthwise conv reads it."""
    walked: list[ir.Operation] = []
    try:
        src, act = _activations(value, ev, walked)
        conv = producer(src)
        weights = _conv_1x1(conv, ev, "expand")
    except NoMatch:
        return value, [], []
    if num_uses(src) != 1:
        return value, [], []
    assert conv is not None
    ops += [*walked, conv]
    return conv.operands[0], list(weights), act


def _t(shape: list[int]) -> str:
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


def wrapper_text(spec: BlockSpec, wlen: int) -> str:
    """``@<symbol>_call(x, weights)``: flattens x, calls the kernel, reshapes its result;
    and the kernel's declaration."""
    h, w, cin, cout = spec.h, spec.w, spec.cin, spec.cout
    ho, wo = spec.out_hw
    xin, yout, kin, kw, kout = (_t([1, h, w, cin]), _t([1, ho, wo, cout]), _t([h * w * cin]),
                                _t([wlen]), _t([ho * wo * cout]))  # fmt: skip
    sym = spec.symbol
    return f"""
func.func private @{sym}_call(%x: {xin}, %w: {kw}) -> {yout} {{
  %flat = tensor.collapse_shape %x [[0, 1, 2, 3]] : {xin} into {kin}
  %o = func.call @{sym}(%flat, %w) : ({kin}, {kw}) -> {kout}
  %r = tensor.expand_shape %o [[0, 1, 2, 3]] output_shape [1, {ho}, {wo}, {cout}] : {kout} into {yout}
  return %r : {yout}
}}
func.func private @{sym}({kin}, {kw}) -> {kout}
"""


def _symbol(module_op: ir.Operation, n: int) -> str:
    while True:
        name = f"xgen_inverted_residual_{n}"
        try:
            find_func(module_op, name)
        except KeyError:
            return name
        n += 1


def fuse_block(module_op: ir.Operation, block: Block, symbol: str,
               opts: ToolchainOptions) -> BlockSpec:  # fmt: skip
    """Replace the block (its project conv, or the residual add after it) by a call of its
    generated kernel."""
    h, w, cin, ce, cout, s = block.shape
    rows = pick_rows(h, w, s)
    spec = BlockSpec(symbol, h, w, cin, ce, cout, s, rows, tuple(block.act_expand),
                     tuple(block.act_depthwise), pick_pixels((w - 1) // s + 1) or 1,
                     residual=block.residual is not None, expand=block.expand)  # fmt: skip
    packed = np.concatenate([a.astype(np.float32).ravel() for a in block.weights])
    assert packed.size == spec.offsets["total"]
    obj = compile_object(generate_block(spec), opts.toolchain(), symbol)
    ho, wo = spec.out_hw
    splice_functions(module_op, wrapper_text(spec, packed.size))
    text = dispatch.executable_text(symbol, str(obj), opts.object_format,
                                    [h * w * cin, packed.size], ho * wo * cout,
                                    (spec.bands, 1, 1), ids=1)  # fmt: skip
    decl = find_func(module_op, symbol)
    decl.attributes[EXECUTABLE_ATTR] = ir.StringAttr.get(text)
    replaced = block.ops + ([block.residual] if block.residual else [])
    flops = sum(op_flops(op) for op in replaced)  # what the kernel computes, for reports
    decl.attributes[FLOPS_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), flops)
    end = block.end
    with ir.InsertionPoint(end), end.location:
        wts = constant_op(packed, "xgen_block_weights").result
        call = func.CallOp([block.ops[0].results[0].type], ir.FlatSymbolRefAttr.get(f"{symbol}_call"),
                           [block.x, wts])  # fmt: skip
        result = call.results[0]
        perm = block.residual_perm
        if perm is not None and perm != sorted(perm):  # the add wrote another layout
            result = transpose(result, perm)
    end.results[0].replace_all_uses_with(result)
    old = list(end.operands)
    end.erase()
    erase_dead_tree(old)
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
                block = match_block(project, ev, opts.without_expand)
            except NoMatch as e:
                counts[f"not fused: {e}"] += 1
                continue
            h, w, _cin, ce, _cout, _s = block.shape
            if h * w * ce * 4 < opts.min_expanded_bytes:
                counts["not fused: expanded tensor below min-expanded-bytes"] += 1
                continue
            if not toolchain.available():
                counts[f"not fused: C compiler '{opts.cc}' not found"] += 1
                continue
            where = format_location(project.location)
            symbol = _symbol(module_op, counts["blocks fused"] + 1)
            spec = fuse_block(module_op, block, symbol, opts)
            counts["blocks fused"] += 1
            if spec.residual:
                counts["of them with their residual add"] += 1
            if opts.verbose:
                print(f"xgen-fuse-inverted-residuals: {where}: {spec.h}x{spec.w}x{spec.cin} -> "
                      f"{spec.ce} -> dw s{spec.stride} -> {spec.cout}{' + x' * spec.residual} as {spec.symbol}, "
                      f"{spec.bands} bands of {spec.rows} rows", file=sys.stderr)  # fmt: skip
    if any(k.startswith("not fused: C compiler") for k in counts):
        print(f"xgen-fuse-inverted-residuals: warning: C compiler '{opts.cc}' not found; "
              "inverted-residual blocks stay unfused", file=sys.stderr)  # fmt: skip
    return counts


@register_pass(
    "xgen-fuse-inverted-residuals",
    "expand 1x1 -> act -> depthwise 3x3 -> act -> project 1x1 (NHWC) as one generated kernel.",
    FuseOptions,
)
def _pass(module_op: ir.Operation, opts: FuseOptions | None) -> Counter:
    return fuse_inverted_residuals(module_op, opts)
