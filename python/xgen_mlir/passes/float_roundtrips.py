"""xgen-elide-int-roundtrips: an integer tensor that is only ever converted back to f32 stays
f32.

Why: a quantized model computed in f32 (``xgen-integer-in-float``) still stores every
quantized activation as an integer tensor between two float computations: the quantize ends
in ``fptosi`` (an i8 tensor), the next layer's dequantize starts with ``sitofp``, and each
contraction's f32 result is rounded to i32 and converted straight back. Each such tensor is
a dispatch boundary IREE keeps and a kernel epilogue (``epilogue_c``, f32 only) stops at: in
MobileNetV2 int8 on an AMD Zen 3, 63 elementwise dispatches took 43% of the time. Where the
value converted is already an integer the integer type can hold, ``sitofp(fptosi(v)) == v``,
so the conversions go and the tensor is f32.

What it matches: a ``linalg.generic`` of parallel loops with one result of iN (N <= 32) whose
body yields ``arith.fptosi(v)`` with ``v`` f32, never reads its output, and where ``v`` is
proven an integer (``math.roundeven`` / ``round`` / ``floor`` / ``ceil`` / ``trunc``,
``sitofp`` / ``uitofp``, integer constants, and ``addf``, ``subf``, ``mulf``, ``negf``,
``maximumf``, ``minimumf``, ``select`` of integers) within iN's range (interval arithmetic
through the same ops; for i32 an integer suffices: outside the range ``fptosi`` is poison).
Every use of the result, through ``tensor.expand_shape`` / ``collapse_shape`` and
``linalg.transpose``, must be an input of a ``linalg.generic`` that uses its element only in
``arith.sitofp`` to f32. Then the producer yields ``v`` into an f32 tensor, the views are
rebuilt on it and each consumer reads ``v`` where it converted. It must not fire on: a value
not proven an integer, a range wider than the type (i8 without its clamp), a use that is not a
conversion to f32 (an integer contraction, ``uitofp``, a function result), an op that reads its
output.

Numerics: exact; the value each consumer computed with is the same f32.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from .._mlir import ir, linalg
from ..irutil import clone_body, ops_named
from .epilogue_c import scalar_constant
from .generic_util import body, body_ops, empty, iterator_types, mixed_sizes, transpose
from .registry import register_pass

_ROUNDING = ("math.roundeven", "math.round", "math.floor", "math.ceil", "math.trunc")
_VIEWS = ("tensor.expand_shape", "tensor.collapse_shape", "linalg.transpose")
Interval = tuple[float, float]
_ANY: Interval = (-math.inf, math.inf)


@dataclass
class ElideOptions:
    pass


def _int_range(t: ir.Type, signed: bool) -> Interval | None:
    if not isinstance(t, ir.IntegerType):
        return None
    n = ir.IntegerType(t).width
    return (-(2.0 ** (n - 1)), 2.0 ** (n - 1) - 1) if signed else (0.0, 2.0**n - 1)


def _product(a: Interval, b: Interval) -> Interval:
    ends = [x * y for x in a for y in b if not (math.isinf(x) or math.isinf(y))]
    if len(ends) < 4:
        return _ANY
    return min(ends), max(ends)


def integer_range(value: ir.Value, memo: dict | None = None) -> Interval | None:
    """The interval holding ``value`` (a scalar in a generic body) if it is proven an integer,
    else None."""
    memo = {} if memo is None else memo
    if value in memo:
        return memo[value]
    memo[value] = None  # no cycles in SSA, but be safe
    owner = value.owner
    op = owner.operation if isinstance(owner, ir.OpView | ir.Operation) else None
    found: Interval | None = None
    if op is not None:
        name = op.name
        args = [integer_range(v, memo) for v in op.operands] if name.startswith("arith.") else []
        if name == "arith.constant":
            c = scalar_constant(value)
            found = (c, c) if c is not None and math.isfinite(c) and c == int(c) else None
        elif name in _ROUNDING:
            inner = integer_range(op.operands[0], memo)
            found = (inner[0] - 1, inner[1] + 1) if inner else _ANY
        elif name in ("arith.sitofp", "arith.uitofp"):
            found = _int_range(op.operands[0].type, name == "arith.sitofp")
        elif name == "arith.select" and args[1] and args[2]:
            found = (min(args[1][0], args[2][0]), max(args[1][1], args[2][1]))
        elif name == "arith.negf" and args[0]:
            found = (-args[0][1], -args[0][0])
        elif len(args) == 2 and (x := args[0]) is not None and (y := args[1]) is not None:
            (a0, a1), (b0, b1) = x, y
            if name == "arith.addf":
                found = (a0 + b0, a1 + b1)
            elif name == "arith.subf":
                found = (a0 - b1, a1 - b0)
            elif name == "arith.mulf":
                found = _product(x, y)
            elif name in ("arith.maximumf", "arith.maxnumf"):
                found = (max(a0, b0), max(a1, b1))
            elif name in ("arith.minimumf", "arith.minnumf"):
                found = (min(a0, b0), min(a1, b1))
    memo[value] = found
    return found


def _converted(op: ir.Operation) -> ir.Value | None:
    """The f32 value ``op`` (an elementwise generic of an integer result) converts with
    ``fptosi``, if it is proven an integer the result type holds."""
    if op.name != "linalg.generic" or len(op.results) != 1:
        return None
    if any(k != "parallel" for k in iterator_types(op)):
        return None
    out_ty = ir.RankedTensorType(op.results[0].type).element_type
    bounds = _int_range(out_ty, True)
    if bounds is None or ir.IntegerType(out_ty).width > 32:
        return None
    blk = body(op)
    if any(True for _ in blk.arguments[-1].uses):  # reads its output
        return None
    yielded = body_ops(op)[-1].operands[0]
    conv = yielded.owner
    if not isinstance(conv, ir.OpView | ir.Operation) or conv.operation.name != "arith.fptosi":
        return None
    v = conv.operation.operands[0]
    if str(v.type) != "f32":
        return None
    found = integer_range(v)
    if found is None:
        return None
    if ir.IntegerType(out_ty).width < 32 and not (bounds[0] <= found[0] and found[1] <= bounds[1]):
        return None
    return v


def _consumers(value: ir.Value) -> list[tuple[ir.Operation, int]] | None:
    """(op, operand index) for every use of ``value``, through views, if each is a generic
    input whose element is used only by ``sitofp`` to f32; else None."""
    found: list[tuple[ir.Operation, int]] = []
    for use in value.uses:
        user = use.owner.operation
        if user.name in _VIEWS and use.operand_number == 0:
            inner = _consumers(user.results[0])
            if inner is None:
                return None
            found.append((user, 0))
            found += inner
            continue
        if user.name != "linalg.generic":
            return None
        n_in = len(user.operands) - len(user.results)
        if use.operand_number >= n_in:
            return None
        arg = body(user).arguments[use.operand_number]
        for u in arg.uses:
            o = u.owner.operation
            if o.name != "arith.sitofp" or str(o.results[0].type) != "f32":
                return None
        found.append((user, use.operand_number))
    return found or None


def _with_f32(ty: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(ir.RankedTensorType(ty).shape, ir.F32Type.get())


def _float_producer(op: ir.Operation, v: ir.Value) -> ir.Value:
    """A copy of ``op`` that yields ``v`` (its fptosi's operand) into an f32 tensor."""
    n_in = len(op.operands) - 1
    rank = len(ir.RankedTensorType(op.results[0].type).shape)
    init = empty(mixed_sizes(op.operands[-1], range(rank)), ir.F32Type.get())
    new = linalg.GenericOp(
        [init.type],
        list(op.operands[:n_in]),
        [init],
        op.attributes["indexing_maps"],
        op.attributes["iterator_types"],
    )
    types = [a.type for a in body(op).arguments[:n_in]] + [ir.F32Type.get()]
    yielded = body_ops(op)[-1].operands[0]
    clone_body(op, new, types, lambda o: len(o.results) == 1 and o.results[0] == yielded)
    return new.results[0]


def _float_view(view: ir.Operation, source: ir.Value) -> ir.Value:
    """``view`` rebuilt on the f32 ``source``."""
    if view.name == "linalg.transpose":
        perm = list(ir.DenseI64ArrayAttr(view.attributes["permutation"]))
        return transpose(source, perm)
    new = ir.Operation.create(
        view.name,
        results=[_with_f32(view.results[0].type)],
        operands=[source, *view.operands[1:]],
        attributes={name: view.attributes[name] for name in view.attributes},
    )
    return new.results[0]


def _float_consumer(op: ir.Operation, indices: set[int], source: ir.Value) -> None:
    """Replace generic ``op`` by a copy reading f32 ``source`` as its inputs ``indices``, each
    input's element used where it was converted."""
    n_in = len(op.operands) - len(op.results)
    operands = [source if i in indices else v for i, v in enumerate(op.operands)]
    new = linalg.GenericOp(
        [r.type for r in op.results],
        operands[:n_in],
        operands[n_in:],
        op.attributes["indexing_maps"],
        op.attributes["iterator_types"],
    )
    old = body(op)
    types = [ir.F32Type.get() if i in indices else a.type for i, a in enumerate(old.arguments)]
    converted = {old.arguments[i] for i in indices}
    clone_body(op, new, types, lambda o: o.name == "arith.sitofp" and o.operands[0] in converted)
    for a, b in zip(op.results, new.results, strict=True):
        a.replace_all_uses_with(b)
    op.erase()


def _rebuild(value: ir.Value, source: ir.Value) -> None:
    """Every use of integer ``value`` (checked by ``_consumers``) moved to f32 ``source``."""
    users: list[tuple[ir.Operation, set[int]]] = []
    for use in value.uses:
        user = use.owner.operation
        for known, indices in users:
            if known == user:
                indices.add(use.operand_number)
                break
        else:
            users.append((user, {use.operand_number}))
    for user, indices in users:
        with ir.InsertionPoint(user), user.location:
            if user.name in _VIEWS:
                view = _float_view(user, source)
                _rebuild(user.results[0], view)
                user.erase()
            else:
                _float_consumer(user, indices, source)


def elide_int_roundtrips(module_op: ir.Operation, opts: ElideOptions | None = None) -> Counter:
    """Rewrite every match; latest first, so a consumer that is itself a match (a requantize
    reading a dequantize) is analysed while its input is still the integer it converts."""
    counts: Counter[str] = Counter()
    with module_op.context:
        for op in reversed(ops_named(module_op, "linalg.generic")):
            v = _converted(op)
            if v is None or _consumers(op.results[0]) is None:
                continue
            width = ir.IntegerType(ir.RankedTensorType(op.results[0].type).element_type).width
            with ir.InsertionPoint(op), op.location:
                source = _float_producer(op, v)
            _rebuild(op.results[0], source)
            op.erase()
            counts[f"i{width} tensors kept f32"] += 1
    return counts


@register_pass(
    "xgen-elide-int-roundtrips",
    "An integer tensor only converted back to f32 (sitofp(fptosi(v)) of an integer v the type "
    "holds: a quantized model computed in f32) stays f32: exact, and no dispatch boundary.",
    ElideOptions,
)
def _pass(module_op: ir.Operation, opts: ElideOptions | None) -> Counter:
    return elide_int_roundtrips(module_op, opts)
