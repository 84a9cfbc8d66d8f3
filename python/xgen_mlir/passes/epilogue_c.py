"""The elementwise ops after a generated kernel's layer, translated to C for its epilogue.

A kernel that computes a layer (``xgen-lower-bcsr-kernels``, ``xgen-gemm-kernels``) applies
what IREE would have fused after it to each register tile before storing it: activations
(GELU in both of torch-mlir's forms, ReLU, clamps), scalar scales, and, where the kernel can
read them (``Operands``), per-output-column constants (a NoNorm's or a folded batch norm's
scale and shift) and tensors of the output's shape (a residual add). Taking them keeps the
layer one dispatch, as it was with IREE's code; leaving them would make each a dispatch and a
round trip of the output through memory.

The C is statements on GCC vectors (``v16``; ``codegen.block_sparse.math_c`` for erf, tanh,
exp): ``v`` is the layer's output vector, ``c<i>`` the i-th column constant's vector at the
same columns, ``t<i>`` the i-th tensor's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._mlir import ir
from .consteval import ConstEval
from .generic_util import (
    body,
    body_ops,
    indexing_maps,
    is_elementwise,
    is_identity,
    map_dims,
    num_inputs,
)
from .kernel_match import _BINARY, _CMP, _MINMAX, NoMatch, _splat

_MATH_C = {
    "math.erf": "xg_erf",
    "math.tanh": "xg_tanh",
    "math.exp": "xg_exp",
    "math.roundeven": "xg_roundeven",  # a quantize's rounding
}
_MAX_POWER = 8  # x^n with a constant integer 0 <= n <= this: n - 1 multiplies


@dataclass(frozen=True)
class Operands:
    """The vector operands a kernel's epilogue can read besides its output: constants that
    vary along the output's ``column_dim`` only (the kernel's columns; -1: the last dim),
    and, with ``tensors``, tensors of the output's shape defined before ``layer`` (the
    kernel reads them in place, row-major, so only where the columns are the last dim).
    Reshapes that keep the last dim whole (``[M, N] -> [1, M, N]``, torch-mlir's view back
    to a batch) are followed when the columns are the last dim."""

    layer: ir.Operation
    column_dim: int = -1
    tensors: bool = True
    # tensors broadcast along leading dims (a mask [1, 1, T, T] added to scores [1, H, T, T]):
    # read through their maps, which ``Epilogue.tensor_maps`` keeps for the kernel's offsets
    broadcast: bool = False
    # also follow collapses of the leading dims (NHWC -> [N*H*W, C] rows: the same bytes), for
    # a kernel that applies the epilogue to vectors of the last dim wherever they go
    collapses: bool = False
    # the epilogue may end in a quantize: an op whose body ends in ``fptosi`` to i8 (its last
    # op: the kernel then stores the bytes, ``Epilogue.int8``)
    quantize: bool = False


@dataclass
class Epilogue:
    """What the kernel applies after its layer: C statements (``lines``), the ops they
    replace in order (generics, and the reshapes between them), the column constants
    (``c0``, ``c1``, ...: each [N]) and tensors (``t0``, ...) they read."""

    lines: list[str] = field(default_factory=list)
    ops: list[ir.Operation] = field(default_factory=list)
    columns: list[np.ndarray] = field(default_factory=list)
    tensors: list[ir.Value] = field(default_factory=list)
    tensor_maps: list[ir.AffineMap] = field(default_factory=list)  # each tensor's map
    # the last op is a quantize (``Operands.quantize``): ``v`` is then the integer its
    # ``fptosi`` converts to i8 (the kernel converts it)
    int8: bool = False

    def __bool__(self) -> bool:
        return bool(self.lines)


def scalar_constant(value: ir.Value) -> float | None:
    """The number of a scalar ``arith.constant`` (float or integer), else None."""
    owner = value.owner
    if not isinstance(owner, ir.OpView | ir.Operation):  # a block argument
        return None
    owner = owner.operation
    if owner.name != "arith.constant":
        return None
    attr = owner.attributes["value"]
    if isinstance(attr, ir.FloatAttr):
        return float(ir.FloatAttr(attr).value)
    if isinstance(attr, ir.IntegerAttr):
        return float(ir.IntegerAttr(attr).value)
    return None


class _Inputs:
    """The epilogue's vectors so far: values computed from the layer's output (``env``), and
    the column constants and tensors read, by name."""

    def __init__(self, value: ir.Value, ev: ConstEval, operands: Operands | None) -> None:
        self.env: dict[ir.Value, str] = {value: "v"}
        self.ev = ev
        self.operands = operands
        self.columns: list[tuple[ir.Value, np.ndarray]] = []
        self.tensors: list[ir.Value] = []
        self.maps: list[ir.AffineMap] = []
        self.rank = len(ir.RankedTensorType(value.type).shape)

    def column(self, operand: ir.Value, amap: ir.AffineMap, rank: int) -> str | None:
        """``c<i>`` when ``operand`` is a constant read along the columns only."""
        if self.operands is None:
            return None
        dims = map_dims(amap)
        cdim = self.operands.column_dim % rank
        shape = ir.RankedTensorType(operand.type).shape
        # a dim of size 1 read at a loop dim (the batch of a [1, C, 1, 1] scale) varies not
        if dims is None or [d for i, d in enumerate(dims) if d is not None and shape[i] != 1] != [
            cdim
        ]:
            return None
        for i, (known, _) in enumerate(self.columns):
            if known == operand:
                return f"c{i}"
        value = self.ev.value(operand)
        if value is None or value.size != shape[dims.index(cdim)] or value.size <= 1:
            return None
        self.columns.append((operand, np.asarray(value, np.float32).reshape(-1)))
        return f"c{len(self.columns) - 1}"

    def tensor(self, operand: ir.Value, amap: ir.AffineMap, like: ir.Type) -> str | None:
        """``t<i>`` when ``operand`` is a tensor of the output's shape the kernel can read:
        through the identity map, defined before the layer (so not computed from its
        output), with the columns its last dim."""
        ops = self.operands
        if ops is None or not ops.tensors:
            return None
        if ops.broadcast:
            if not _broadcast_map(amap, operand, like):
                return None
        elif not is_identity(amap) or operand.type != like:
            return None
        if ops.column_dim not in (-1, self.rank - 1):
            return None
        owner = operand.owner
        if isinstance(owner, ir.OpView | ir.Operation):
            if owner.operation.block != ops.layer.block:
                return None
            if not owner.operation.is_before_in_block(ops.layer):
                return None
        elif not isinstance(owner, ir.Block) or owner != ops.layer.block:
            return None
        for i, (known, kmap) in enumerate(zip(self.tensors, self.maps, strict=True)):
            if known == operand and kmap == amap:
                return f"t{i}"
        self.tensors.append(operand)
        self.maps.append(amap)
        return f"t{len(self.tensors) - 1}"

    def readable(self, op: ir.Operation) -> bool:
        """Whether every input of ``op`` is known now: a value of the epilogue, a scalar, a
        column constant or a tensor (registering the last two)."""
        if op.name != "linalg.generic":
            return False
        maps = indexing_maps(op)
        out = op.results[0].type if len(op.results) == 1 else None
        rank = len(ir.RankedTensorType(out).shape) if out is not None else 0
        for v, amap in zip(op.operands[: num_inputs(op)], maps, strict=False):
            if v in self.env or _is_scalar(self.ev, v):
                continue
            if self.column(v, amap, rank) is None and self.tensor(v, amap, out) is None:
                return False
        return True

    def name_of(self, operand: ir.Value, amap: ir.AffineMap, rank: int, like: ir.Type) -> str:
        if operand in self.env and is_identity(amap):
            return self.env[operand]
        # a column constant first; only if it is none a tensor (registering both would pass
        # a constant that broadcasts along the rows twice)
        found = self.column(operand, amap, rank)
        if found is None:
            found = self.tensor(operand, amap, like)
        if found is not None:
            return found
        raise NoMatch("an epilogue input that is neither the layer's output nor a scalar")


def _elementwise_c(op: ir.Operation, inputs: _Inputs, tag: str) -> tuple[list[str], str]:
    """C statements computing elementwise ``op`` from the vectors ``inputs`` names and scalar
    constants, and the name of its result. Beyond ``activation_c``'s ops: constants captured
    from outside the body (torch-mlir's ReLU and erf GELU), their truncf/extf, ``math.erf``
    / ``tanh`` / ``exp`` (``codegen.block_sparse.math_c``) and small integer powers (the
    tanh GELU's ``x^3``)."""
    if not is_elementwise(op):
        raise NoMatch(f"{op.name} is not an elementwise op on the layer's output")
    out_ty = ir.RankedTensorType(op.results[0].type)
    reads = [v for v in op.operands[: num_inputs(op)] if v in inputs.env]
    quantize = (
        inputs.operands is not None
        and inputs.operands.quantize
        and str(out_ty.element_type) == "i8"
        and len(body_ops(op)) >= 2
        and body_ops(op)[-2].name == "arith.fptosi"
    )
    if quantize:  # the f32 values it converts are of the output's shape
        out_ty = ir.RankedTensorType.get(out_ty.shape, ir.F32Type.get(), loc=op.location)
    if str(out_ty.element_type) != "f32" or not any(v.type == out_ty for v in reads):
        raise NoMatch(f"{op.name} is not an elementwise f32 op on the layer's output")
    names: dict[ir.Value, str] = {}
    consts: dict[ir.Value, float] = {}
    args = list(body(op).arguments)
    rank = len(out_ty.shape)
    for operand, amap, arg in zip(
        op.operands[: num_inputs(op)], indexing_maps(op), args, strict=False
    ):
        value = inputs.ev.value(operand) if operand not in inputs.env else None
        if value is not None and value.size == 1:
            consts[arg] = float(value.reshape(()))
            continue
        names[arg] = inputs.name_of(operand, amap, rank, out_ty)

    def name(v: ir.Value) -> str:
        if v in names:
            return names[v]
        c = consts.get(v, scalar_constant(v))
        if c is None:
            raise NoMatch("an epilogue op reads a value the kernel does not have")
        return _splat(c)

    lines: list[str] = []
    for i, bop in enumerate(body_ops(op)):
        out = f"{tag}_{i}"
        if bop.name == "linalg.yield":
            return lines, name(bop.operands[0])
        if bop.name == "arith.constant":
            c = scalar_constant(bop.results[0])
            if c is None:
                raise NoMatch("a non-scalar constant in an epilogue")
            consts[bop.results[0]] = c
            continue
        if bop.name in ("arith.truncf", "arith.extf"):
            c = consts.get(bop.operands[0], scalar_constant(bop.operands[0]))
            if c is None:
                raise NoMatch(f"{bop.name} of a vector (the kernel computes f32 only)")
            consts[bop.results[0]] = float(np.float32(c))
            continue
        if bop.name == "arith.fptosi" and quantize and bop == body_ops(op)[-2]:
            names[bop.results[0]] = name(bop.operands[0])  # the kernel converts the integer
            continue
        ops = [name(v) for v in bop.operands]
        kind = "v16"
        if bop.name == "arith.cmpf":
            pred = ir.IntegerAttr(bop.attributes["predicate"]).value
            if pred not in _CMP:
                raise NoMatch(f"arith.cmpf predicate {pred}")
            expr, kind = _CMP[pred].format(a=ops[0], b=ops[1]), "vi16"
        elif bop.name == "arith.select":
            expr = f"SEL({ops[0]}, {ops[1]}, {ops[2]})"
        elif bop.name in _BINARY:
            expr = f"({ops[0]} {_BINARY[bop.name]} {ops[1]})"
        elif bop.name in _MINMAX:
            expr = _clamp(bop, ops, consts) or _MINMAX[bop.name].format(a=ops[0], b=ops[1])
        elif bop.name == "arith.negf":
            expr = f"(-{ops[0]})"
        elif bop.name in _MATH_C:
            expr = f"{_MATH_C[bop.name]}({ops[0]})"
        elif bop.name in ("math.fpowi", "math.powf"):
            n = consts.get(bop.operands[1], scalar_constant(bop.operands[1]))
            if n is None or n != int(n) or not 0 <= n <= _MAX_POWER:
                raise NoMatch(f"{bop.name} with an exponent other than 0..{_MAX_POWER}")
            expr = " * ".join([ops[0]] * int(n)) if n else "SPLAT(1.0f)"
        else:
            raise NoMatch(
                f"{bop.name} in an epilogue (the kernel translates cmpf, select, addf, subf, "
                "mulf, divf, negf, maximumf, minimumf, erf, tanh, exp, roundeven, integer powers)"
            )
        names[bop.results[0]] = out
        lines.append(f"const {kind} {out} = {expr};")
    raise NoMatch("an epilogue op without a yield")


def _clamp(bop: ir.Operation, ops: list[str], consts: dict[ir.Value, float]) -> str | None:
    """``maximumf`` / ``minimumf`` of a vector and a finite nonzero constant (a quantize's
    clamp to its integer range) as one compare and one select: NaN fails the compare and
    stays, and without a zero bound no -0 / +0 pair can tie. None for any other form."""
    for i in (0, 1):
        c = consts.get(bop.operands[1 - i], scalar_constant(bop.operands[1 - i]))
        if c is not None and np.isfinite(c) and c != 0:
            cmp = "<" if bop.name == "arith.maximumf" else ">"
            a, b = ops[i], ops[1 - i]
            return f"SEL(({a} {cmp} {b}), {b}, {a})"
    return None


def _broadcast_map(amap: ir.AffineMap, operand: ir.Value, like: ir.Type) -> bool:
    """Whether ``operand`` is read through ``amap`` along the output's last dim (the kernel's
    columns: one vector load) and, for its other dims, along output dims in order or
    broadcast (size 1, constant index 0)."""
    dims = map_dims(amap)
    shape = ir.RankedTensorType(operand.type).shape
    out = ir.RankedTensorType(like).shape
    if dims is None or not dims or amap.n_dims != len(out):
        return False
    if dims[-1] != len(out) - 1 or shape[-1] != out[-1]:
        return False
    used = [d for d in dims if d is not None]
    if used != sorted(used):  # no transposes: rows stay rows
        return False
    return all(d is None or shape[i] == out[d] for i, d in enumerate(dims))


def _is_scalar(ev: ConstEval, value: ir.Value) -> bool:
    found = ev.value(value)
    return found is not None and found.size == 1


def _users(value: ir.Value) -> list[ir.Operation]:
    return [u.owner.operation for u in value.uses]


def _keeps_columns(op: ir.Operation, collapses: bool = False) -> bool:
    """A ``tensor.expand_shape`` (with ``collapses``, also a ``collapse_shape``) that splits
    (merges) only the leading dims, so the last (the kernel's columns) and the row-major
    order are unchanged."""
    names = (
        ("tensor.expand_shape", "tensor.collapse_shape") if collapses else ("tensor.expand_shape",)
    )
    if op.name not in names:
        return False
    groups = [list(g) for g in ir.ArrayAttr(op.attributes["reassociation"])]
    if op.name == "tensor.expand_shape":
        last = len(ir.RankedTensorType(op.results[0].type).shape) - 1
    else:
        last = len(ir.RankedTensorType(op.operands[0].type).shape) - 1
    return len(groups[-1]) == 1 and ir.IntegerAttr(groups[-1][0]).value == last


def sums_to_f32(op: ir.Operation) -> ir.Operation | None:
    """The one user of integer contraction ``op``'s result, if it is an elementwise generic
    that only converts those sums to f32 (``sitofp``): where a kernel that computes the sums
    can take the epilogue after it (``epilogue`` on its result)."""
    users = _users(op.results[0])
    if len(users) != 1 or users[0].name != "linalg.generic":
        return None
    convert = users[0]
    if (
        not is_elementwise(convert)
        or len(convert.operands) != 2
        or not all(is_identity(m) for m in indexing_maps(convert))
        or [o.name for o in body_ops(convert)] != ["arith.sitofp", "linalg.yield"]
        or str(ir.RankedTensorType(convert.results[0].type).element_type) != "f32"
    ):
        return None
    return convert


def epilogue(value: ir.Value, ev: ConstEval, operands: Operands | None = None) -> Epilogue:
    """The elementwise ops after ``value`` (a layer's output) that the kernel applies to its
    tile: every op that reads only ``value``, earlier such ops' results, scalar constants
    and (``operands``) column constants and tensors is translated, in dependence order (a
    DAG, so the tanh GELU's separate ops, which read the output three times, fuse too); the
    longest prefix of them that ends in a translated op and whose values are used outside
    it by one value only (the epilogue's result) is taken."""
    inputs = _Inputs(value, ev, operands)
    env = inputs.env
    found: list[tuple[ir.Operation, list[str], int, int]] = []  # op, C, columns, tensors
    seen: set[ir.Operation] = set()
    follow = operands is not None and operands.column_dim in (-1, inputs.rank - 1)
    collapses = operands is not None and operands.collapses
    changed = True
    while changed:
        changed = False
        for v in list(env):
            for user in _users(v):
                if user in seen:
                    continue
                if follow and _keeps_columns(user, collapses):
                    seen.add(user)
                    env[user.results[0]] = env[v]
                    found.append((user, [], len(inputs.columns), len(inputs.tensors)))
                    changed = True
                    continue
                ncol, nten = len(inputs.columns), len(inputs.tensors)
                if not inputs.readable(user):
                    del inputs.columns[ncol:], inputs.tensors[nten:], inputs.maps[nten:]
                    continue  # not yet: another input may join later
                seen.add(user)
                tag = f"e{len(found)}"
                try:
                    lines, out = _elementwise_c(user, inputs, tag)
                except NoMatch:
                    del inputs.columns[ncol:], inputs.tensors[nten:], inputs.maps[nten:]
                    continue
                lines.append(f"const v16 {tag} = {out};")
                env[user.results[0]] = tag
                found.append((user, lines, len(inputs.columns), len(inputs.tensors)))
                changed = True
    for end in range(len(found), 0, -1):
        ops = [op for op, *_ in found[:end]]
        if ops[-1].name != "linalg.generic":
            continue
        inside = set(ops)
        values = [value, *(op.results[0] for op in ops)]
        outside = [v for v in values if any(u not in inside for u in _users(v))]
        if len(outside) == 1 and outside[0] != value and outside[0] == ops[-1].results[0]:
            stmts = [line for _, lines, _, _ in found[:end] for line in lines]
            _, _, ncol, nten = found[end - 1]
            last = ir.RankedTensorType(ops[-1].results[0].type)
            return Epilogue(
                ["{ " + " ".join(stmts) + f" v = {env[outside[0]]}; }}"],
                ops,
                [c for _, c in inputs.columns[:ncol]],
                inputs.tensors[:nten],
                inputs.maps[:nten],
                int8=str(last.element_type) == "i8",
            )
    return Epilogue()
