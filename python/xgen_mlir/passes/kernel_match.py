"""Matching helpers shared by the passes that replace ops with generated C kernels.

They recognise what a kernel can take in and say why not (``NoMatch``): a 1x1 NHWC conv with
constant weights and per-channel bias, chains of elementwise activations (translated op by op
into C on 16-float vectors, so NaN, -0 and the comparison predicates behave as in the IR),
and the residual add that follows a conv, through torch-mlir's layout transposes.
``arith.maximumf`` / ``minimumf`` (what ``xgen-nan-minmax`` makes of clamp, relu6, hardtanh,
maximum and minimum) are written out in C so that NaN propagates as in MLIR and PyTorch.
"""

from __future__ import annotations

import numpy as np

from .._mlir import ir
from .cancel_reshapes import transpose_perm
from .consteval import ConstEval
from .generic_util import (
    body,
    body_ops,
    indexing_maps,
    is_elementwise,
    is_identity,
    loop_dims,
    map_dims,
    num_inputs,
    num_uses,
    producer,
)


class NoMatch(Exception):
    """The op is not (the end of) a block this pass fuses; the message says why."""


# arith.cmpf predicate -> C on GCC vectors (comparisons are ordered: false on NaN)
_CMP = {
    1: "({a} == {b})",
    2: "({a} > {b})",
    3: "({a} >= {b})",
    4: "({a} < {b})",
    5: "({a} <= {b})",
    6: "(({a} < {b}) | ({a} > {b}))",
    7: "(({a} == {a}) & ({b} == {b}))",
    8: "~(({a} < {b}) | ({a} > {b}))",
    9: "~({a} <= {b})",
    10: "~({a} < {b})",
    11: "~({a} >= {b})",
    12: "~({a} > {b})",
    13: "({a} != {b})",
    14: "~(({a} == {a}) & ({b} == {b}))",
}
_BINARY = {"arith.addf": "+", "arith.subf": "-", "arith.mulf": "*", "arith.divf": "/"}
# arith.maximumf / minimumf as MLIR defines them: NaN if either operand is NaN, and -0 < +0
# (C's fmaxf / a vector max instruction return the other operand for a NaN). Equal operands:
# the bitwise and (max) / or (min) of the two, which picks +0 / -0 from a pair of zeros.
_MINMAX = {
    "arith.maximumf": "SEL((({a} > {b}) | ({a} != {a})), {a}, SEL((({a} < {b}) | ({b} != {b})), "
    "{b}, (v16)((vi16){a} & (vi16){b})))",
    "arith.minimumf": "SEL((({a} < {b}) | ({a} != {a})), {a}, SEL((({a} > {b}) | ({b} != {b})), "
    "{b}, (v16)((vi16){a} | (vi16){b})))",
}


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
    lines: list[str] = []
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
        elif bop.name in _MINMAX:
            expr, kind = _MINMAX[bop.name].format(a=operands[0], b=operands[1]), "v16"
        elif bop.name == "arith.negf":
            expr, kind = f"(-{operands[0]})", "v16"
        else:
            raise NoMatch(
                f"{bop.name} in an activation (the kernel translates cmpf, select, "
                "addf, subf, mulf, divf, negf, maximumf, minimumf)"
            )
        names[bop.results[0]] = f"t{i}"
        lines.append(f"const {kind} t{i} = {expr};")
    raise NoMatch("an activation without a yield")


def tensor_input(op: ir.Operation, value: ir.Value) -> ir.Value | None:
    """The input of elementwise ``op`` (which produces ``value``) that carries the tensor on:
    the first of ``value``'s type."""
    return next((v for v in op.operands[: num_inputs(op)] if v.type == value.type), None)


def activations_up(
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
        chain = tensor_input(op, value)
        if chain is None:
            raise NoMatch("an elementwise op that does not map the tensor onto itself")
        stmts.append(activation_c(op, chain, ev))
        ops.append(op)
        value = chain


def static_f32(value: ir.Value) -> list[int]:
    ty = ir.RankedTensorType(value.type)
    if str(ty.element_type) != "f32" or not ty.has_static_shape:
        raise NoMatch(f"{ty} is not a static f32 tensor")
    return list(ty.shape)


def attr_ints(op: ir.Operation, name: str) -> list[int]:
    return list(ir.DenseIntElementsAttr(op.attributes[name]))


def conv_1x1(
    op: ir.Operation | None, ev: ConstEval, what: str, filter_value: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The [cin, cout] weights and [cout] bias of a 1x1 NHWC conv with constant filter (or
    with ``filter_value``, the constant the caller found behind a computed filter)."""
    if op is None or op.name != "linalg.conv_2d_nhwc_hwcf":
        raise NoMatch(f"the {what} is not a linalg.conv_2d_nhwc_hwcf")
    w = ev.value(op.operands[1]) if filter_value is None else filter_value
    if w is None or w.dtype != np.float32 or w.shape[:2] != (1, 1):
        raise NoMatch(f"the {what} conv's filter is not a constant 1x1 f32 filter")
    if attr_ints(op, "strides") != [1, 1] or attr_ints(op, "dilations") != [1, 1]:
        raise NoMatch(f"the {what} conv is strided or dilated")
    bias = ev.per_channel_init(op.operands[2], 3)
    if bias is None:
        raise NoMatch(f"the {what} conv's accumulator is not a per-channel constant")
    return w.reshape(w.shape[2:]), bias


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


def residual_add(
    y: ir.Value, x: ir.Value | None = None
) -> tuple[ir.Operation, list[int], ir.Value] | None:
    """The elementwise ``addf`` that adds ``y`` (NHWC; its only use, through transposes) and
    another tensor: the add, the permutation that takes NHWC to the add's layout (add dim i
    is NHWC dim perm[i]), and the other addend in NHWC. With ``x``, the other addend must be
    ``x`` element for element (a block's input); without, any tensor whose element at each
    position of the add is the same NHWC position of a tensor of ``y``'s type. Transposes
    are followed on both sides (torch-mlir adds the NCHW views: the add may read either
    tensor through transposes and maps, and write NCHW); those between ``y`` and the add must
    have no other use. None if there is no such add."""
    user = y
    while num_uses(user) == 1:  # y -> (transposes) -> add
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
    x_root, x_dims, _ = _root(x, list(range(4))) if x is not None else (None, [], [])
    loops: dict[str, list[int]] = {}
    addend = x
    for value, amap in zip(add.operands[:2], indexing_maps(add)[:2], strict=True):
        dims = loop_dims(amap)
        if dims is None or len(dims) != 4:
            return None
        root, at, passed = _root(value, dims)
        if root == y and "y" not in loops and all(num_uses(v) == 1 for v in passed):
            loops["y"] = at  # at[j]: the loop dim that reads y's dim j
        elif x is not None and root == x_root and "x" not in loops:
            lx = [0] * 4
            for k, xd in enumerate(x_dims):  # x_dims[k]: the x dim of root dim k
                lx[xd] = at[k]
            loops["x"] = lx
        elif x is None and root != y and root.type == y.type and "x" not in loops:
            loops["x"], addend = at, root
    if loops.get("x") is None or loops.get("x") != loops.get("y") or addend is None:
        return None
    ly = loops["y"]
    return add, [ly.index(i) for i in range(4)], addend


def bias_add(mm: ir.Operation, ev: ConstEval) -> tuple[ir.Operation, np.ndarray] | None:
    """The single user of ``mm`` if it is ``result + bias[n]`` with a constant f32 bias along
    the last dim (a linear layer's bias, as torch-mlir adds it after the matmul): that add
    and the bias (float64)."""
    res = mm.results[0]
    if num_uses(res) != 1:
        return None
    user = next(iter(res.uses)).owner.operation
    if not is_elementwise(user) or len(user.operands) != 3 or user.results[0].type != res.type:
        return None
    ops = body_ops(user)
    args = list(user.regions[0].blocks[0].arguments)
    if len(ops) != 2 or ops[0].name != "arith.addf" or ops[1].operands[0] != ops[0].results[0]:
        return None
    if list(ops[0].operands) not in ([args[0], args[1]], [args[1], args[0]]):
        return None
    pos = 0 if user.operands[0] == res else 1
    maps = indexing_maps(user)
    last = len(ir.RankedTensorType(res.type).shape) - 1
    if user.operands[1 - pos] == res or not is_identity(maps[pos]):
        return None
    if map_dims(maps[1 - pos]) != [last]:
        return None
    bias = ev.value(user.operands[1 - pos])
    return None if bias is None or bias.dtype != np.float32 else (user, bias.astype(np.float64))
