"""Helpers over linalg-on-tensors shared by the graph-rewriting passes (not a pass).

Reading: who produces a value, how many uses it has, a generic's iterator types and indexing
maps (each map result a loop dimension or the constant 0 of a size-1 broadcast), whether a
generic is elementwise. Building: ``tensor.empty``, ``linalg.fill``, ``linalg.broadcast``,
``linalg.generic`` with a body built by a callback. The rewrite passes (batch-norm folding,
sibling-matmul merging, algebraic simplification, reshape cancellation) all need these; no
pass logic lives here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .._mlir import arith, ir, linalg, tensor
from ..irutil import clone_body, constant_op, defining_op

producer = defining_op  # the op defining a value (None for block arguments)


def computed_from_constants(value: ir.Value) -> bool:
    """Whether ``value`` depends on no block argument (no function input): a constant, or
    computed from constants alone, which IREE's const-eval folds at compile time (even
    through ops ``ConstEval`` does not evaluate, a dynamic quantization's reductions)."""
    seen: set[ir.Operation] = set()
    stack = [value]
    while stack:
        op = producer(stack.pop())
        if op is None:
            return False
        if op not in seen:
            seen.add(op)
            stack.extend(op.operands)
    return True


# Body ops that cost far more than an add or a product: what makes an elementwise chain worth
# a table (``xgen-int8-tables``) or worth not recomputing (``xgen-isolate-broadcast-chains``)
TRANSCENDENTAL = frozenset(
    {"math.exp", "math.exp2", "math.expm1", "math.tanh", "math.erf", "math.log", "math.log1p"}
    | {"math.log2", "math.powf", "math.sqrt", "math.rsqrt", "math.sin", "math.cos", "math.atan"}
)


def producer_named(value: ir.Value, *names: str) -> ir.Operation | None:
    op = producer(value)
    return op if op is not None and op.name in names else None


def is_zero_constant(value: ir.Value) -> bool:
    """Whether ``value`` is an ``arith.constant`` float 0.0 (a pad value, a ReLU's bound)."""
    op = producer(value)
    if op is None or op.name != "arith.constant":
        return False
    attr = op.attributes["value"]
    return isinstance(attr, ir.FloatAttr) and ir.FloatAttr(attr).value == 0.0


def num_uses(value: ir.Value) -> int:
    return sum(1 for _ in value.uses)


def user_ops(value: ir.Value) -> list[ir.Operation]:
    """The operations that read ``value``, one per use."""
    return [u.owner.operation if hasattr(u.owner, "operation") else u.owner for u in value.uses]


def single_user(value: ir.Value) -> ir.Operation | None:
    """The one operation that reads ``value``, if it has exactly one use."""
    users = user_ops(value)
    return users[0] if len(users) == 1 else None


def iterator_types(op: ir.Operation) -> list[str]:
    """'parallel' / 'reduction' for each loop of a linalg.generic."""
    return [str(a).split("<")[1].rstrip(">") for a in ir.ArrayAttr(op.attributes["iterator_types"])]


def indexing_maps(op: ir.Operation) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def map_dims(amap: ir.AffineMap) -> list[int | None] | None:
    """Each result of ``amap`` as its loop dimension, or None for the constant 0 (a size-1
    dimension broadcast along the loops); None if any result is something else."""
    dims: list[int | None] = []
    for expr in amap.results:
        if isinstance(expr, ir.AffineDimExpr):
            dims.append(expr.position)
        elif isinstance(expr, ir.AffineConstantExpr) and expr.value == 0:
            dims.append(None)
        else:
            return None
    used = [d for d in dims if d is not None]
    return dims if len(set(used)) == len(used) else None


def loop_dims(amap: ir.AffineMap) -> list[int] | None:
    """``map_dims`` when every result of ``amap`` is a loop dimension (no constant 0), else
    None."""
    dims = map_dims(amap)
    if dims is None:
        return None
    loops = [d for d in dims if d is not None]
    return loops if len(loops) == len(dims) else None


def is_identity(amap: ir.AffineMap) -> bool:
    dims = map_dims(amap)
    return dims is not None and dims == list(range(amap.n_dims))


def tensor_shape(value: ir.Value) -> list[int] | None:
    ty = value.type
    if not isinstance(ty, ir.RankedTensorType):
        return None
    return list(ty.shape)


def static_i64s(attr: ir.Attribute) -> list[int] | None:
    """A ``DenseI64ArrayAttr`` of static offsets/sizes/strides (a slice's, a pad's) as ints;
    None where one entry is MLIR's dynamic sentinel."""
    vals = [int(x) for x in ir.DenseI64ArrayAttr(attr)]
    return None if any(v < -(2**62) or v > 2**62 for v in vals) else vals


def is_dynamic(size: int) -> bool:
    """Whether a shape entry is MLIR's dynamic-size sentinel (a ``?`` dim)."""
    return bool(ir.ShapedType.is_dynamic_size(size))


def dynamic_dims(value: ir.Value) -> list[int]:
    """The positions of ``value``'s dynamic dims ([] for a static or unranked value)."""
    shape = tensor_shape(value)
    return [i for i, s in enumerate(shape or []) if is_dynamic(s)]


def has_dynamic_shape(*values: ir.Value) -> bool:
    """Whether any of ``values`` is a tensor with a dynamic dim. Passes that only know static
    shapes test their operands and results with it and leave such ops to IREE."""
    return any(dynamic_dims(v) for v in values)


def mixed_sizes(source: ir.Value, dims: Sequence[int]) -> list[int | ir.Value]:
    """``source``'s sizes along ``dims``: static ones as ints, dynamic ones as ``tensor.dim``
    values (built at the current insertion point), the form ``empty`` takes."""
    shape = ir.RankedTensorType(source.type).shape
    out: list[int | ir.Value] = []
    for d in dims:
        if is_dynamic(shape[d]):
            index = arith.ConstantOp(ir.IndexType.get(), d).result
            out.append(tensor.DimOp(source, index).result)
        else:
            out.append(shape[d])
    return out


def body(op: ir.Operation) -> ir.Block:
    return op.regions[0].blocks[0]


def body_ops(op: ir.Operation) -> list[ir.Operation]:
    return [o.operation for o in body(op).operations]


def is_elementwise(op: ir.Operation) -> bool:
    """A linalg.generic with parallel loops only, one result whose map is the identity, and
    inputs read through projected permutations / size-1 broadcasts (no window, no reduction)."""
    if op.name != "linalg.generic" or len(op.results) != 1:
        return False
    if any(t != "parallel" for t in iterator_types(op)):
        return False
    maps = indexing_maps(op)
    return is_identity(maps[-1]) and all(map_dims(m) is not None for m in maps[:-1])


_DEFAULT_MAPS = {
    "linalg.matmul": "[affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> "
    "(d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>]",
    "linalg.batch_matmul": "[affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, "
    "d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]",
}


def has_default_maps(op: ir.Operation) -> bool:
    """False for a named matmul whose ``indexing_maps`` transpose or broadcast an operand
    (then its operands are not laid out as (M, K) x (K, N))."""
    if op.name not in _DEFAULT_MAPS or "indexing_maps" not in op.attributes:
        return True
    return str(op.attributes["indexing_maps"]) == _DEFAULT_MAPS[op.name]


def num_inputs(op: ir.Operation) -> int:
    """How many of a linalg.generic's operands are ``ins`` (the rest are ``outs``)."""
    return len(op.operands) - len(op.results)


def empty(shape: Sequence[int | ir.Value], elem: ir.Type) -> ir.Value:
    """``tensor.empty``; a dynamic dim is given as its size (an index value, see
    ``mixed_sizes``), never as the dynamic sentinel, which has no size to build with."""
    if any(isinstance(s, int) and is_dynamic(s) for s in shape):
        raise ValueError(
            "tensor.empty of a dynamic shape needs the dynamic sizes (mixed_sizes), not '?'"
        )
    return tensor.EmptyOp(list(shape), elem).result


def fill(scalar: ir.Value, init: ir.Value) -> ir.Value:
    op = linalg.FillOp([init.type], [scalar], [init])
    elem = ir.RankedTensorType(init.type).element_type
    block = op.regions[0].blocks.append(scalar.type, elem)
    with ir.InsertionPoint(block):
        linalg.YieldOp([block.arguments[0]])
    return op.results[0]


def broadcast(value: ir.Value, init: ir.Value, dimensions: Sequence[int]) -> ir.Value:
    """``linalg.broadcast`` of ``value`` into ``init``, adding ``dimensions``."""
    op = linalg.BroadcastOp([init.type], value, init, ir.DenseI64ArrayAttr.get(list(dimensions)))
    elem = ir.RankedTensorType(init.type).element_type
    block = op.region.blocks.append(elem, elem)
    with ir.InsertionPoint(block):
        linalg.YieldOp([block.arguments[0]])
    return op.results[0]


def channel_init(
    vec: np.ndarray, shape: Sequence[int | ir.Value], ch_dim: int, elem: ir.Type
) -> ir.Value:
    """An accumulator init holding ``vec[c]`` along ``ch_dim``: a ``linalg.fill`` when all
    entries are equal (the form frontends emit for no bias), else a ``linalg.broadcast`` of
    the constant vector."""
    init = empty(shape, elem)
    if np.all(vec == vec.flat[0]):
        scalar = arith.ConstantOp(elem, ir.FloatAttr.get(elem, float(vec.flat[0]))).result
        return fill(scalar, init)
    vec_op = constant_op(np.ascontiguousarray(vec, np.float32), "xgen_bias")
    return broadcast(vec_op.result, init, [d for d in range(len(shape)) if d != ch_dim])


def i64_array(values: Sequence[int]) -> ir.ArrayAttr:
    """An array of i64 attributes (a reshape's reassociation group, a block shape)."""
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.IntegerAttr.get(i64, v) for v in values])


def iterator_attr(kinds: Sequence[str]) -> ir.ArrayAttr:
    return ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{k}>") for k in kinds])


def generic(
    inputs: Sequence[ir.Value],
    maps: Sequence[ir.AffineMap],
    init: ir.Value,
    kinds: Sequence[str],
    build_body: Callable[[list[ir.Value]], list[ir.Value]],
) -> ir.Operation:
    """A one-result ``linalg.generic``; ``build_body(block_args)`` builds the body at the end
    of the new block and returns the values to yield. ``maps`` has one map per input plus
    the output's."""
    op = linalg.GenericOp(
        [init.type],
        list(inputs),
        [init],
        ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
        iterator_attr(kinds),
    )
    types = [ir.RankedTensorType(v.type).element_type for v in [*inputs, init]]
    block = op.regions[0].blocks.append(*types)
    with ir.InsertionPoint(block):
        linalg.YieldOp(build_body(list(block.arguments)))
    return op.operation


def generic_like(
    op: ir.Operation, inputs: Sequence[ir.Value], maps: Sequence[ir.AffineMap], init: ir.Value
) -> ir.Operation:
    """A copy of elementwise generic ``op`` on other operands/maps (same body), with
    parallel loops over ``init``'s shape."""
    rank = len(ir.RankedTensorType(init.type).shape)
    new = linalg.GenericOp(
        [init.type],
        list(inputs),
        [init],
        ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
        iterator_attr(["parallel"] * rank),
    )
    clone_body(op, new.operation)
    return new.operation


def erase_dead_tree(values: Sequence[ir.Value]) -> None:
    """Erase the producers of ``values`` that are (or become) dead, and theirs in turn.

    Only live ops are ever compared or touched: an op is erased once no result has a use,
    and its operands' producers become candidates."""
    live: list[ir.Operation] = []

    def add(value: ir.Value) -> None:
        op = producer(value)
        if op is not None and not any(op == o for o in live):
            live.append(op)

    for v in values:
        add(v)
    changed = True
    while changed:
        changed = False
        for op in list(live):
            if all(num_uses(r) == 0 for r in op.results):
                live.remove(op)
                operands = list(op.operands)
                op.erase()
                for v in operands:
                    add(v)
                changed = True


def transpose(source: ir.Value, perm: Sequence[int]) -> ir.Value:
    """``linalg.transpose`` of ``source`` (result dim i = source dim perm[i]), with the body
    region the parser would give it (the Python builder leaves it empty)."""
    src = ir.RankedTensorType(source.type)
    ty = ir.RankedTensorType.get([src.shape[p] for p in perm], src.element_type)
    init = empty(mixed_sizes(source, perm), ty.element_type)  # dynamic dims: tensor.dim
    op = linalg.TransposeOp([ty], source, init, ir.DenseI64ArrayAttr.get(list(perm)))
    block = op.region.blocks.append(ty.element_type, ty.element_type)
    with ir.InsertionPoint(block):
        linalg.YieldOp([block.arguments[0]])
    return op.results[0]


def zero_pad(x: ir.Value, low: Sequence[int], high: Sequence[int]) -> ir.Value:
    """``x`` padded with zeros: ``low[d]`` before and ``high[d]`` after each dim (static
    amounts; a dynamic dim must get none and stays dynamic)."""
    return pad_with(x, low, high, 0)


def pad_with(x: ir.Value, low: Sequence[int], high: Sequence[int], value: float) -> ir.Value:
    """``x`` padded with ``value`` (of its element type: an int8 tensor's zero point) as
    ``zero_pad`` pads with zeros."""
    if not any(low) and not any(high):
        return x
    src = ir.RankedTensorType(x.type)
    shape = [
        s if is_dynamic(s) else s + lo + hi for s, lo, hi in zip(src.shape, low, high, strict=True)
    ]
    ty = ir.RankedTensorType.get(shape, src.element_type)
    elem = src.element_type
    attr = (
        ir.IntegerAttr.get(elem, int(value))
        if isinstance(elem, ir.IntegerType)
        else ir.FloatAttr.get(elem, float(value))
    )
    fill_value = arith.ConstantOp(elem, attr).result
    pad = tensor.PadOp(ty, x, [], [], list(low), list(high))
    block = pad.regions[0].blocks.append(*([ir.IndexType.get()] * len(shape)))
    with ir.InsertionPoint(block):
        tensor.YieldOp(fill_value)
    return pad.result


def pad_high(x: ir.Value, extra: Sequence[int]) -> ir.Value:
    """``x`` (NHWC) with ``extra[0]`` zero rows and ``extra[1]`` zero columns after H and W."""
    return zero_pad(x, [0, 0, 0, 0], [0, extra[0], extra[1], 0])


def scalar_chain(v: ir.Value) -> tuple[list[ir.Operation], list[ir.Operation]] | None:
    """How scalar ``v`` is computed from elements of 0-d tensors: the ``arith`` ops between,
    in program order, and the ``tensor.extract`` ops (no indices) they start from. None when
    anything else feeds it (a function argument, an element of a larger tensor) or no
    extract does (constants alone). Dynamic quantization's scale and zero point are such."""
    chain: list[ir.Operation] = []
    extracts: list[ir.Operation] = []

    def visit(x: ir.Value) -> bool:
        o = producer(x)
        if o is None:
            return False
        if o.name == "arith.constant" or any(o == c for c in [*chain, *extracts]):
            return True
        if o.name == "tensor.extract" and len(o.operands) == 1:
            extracts.append(o)
            return True
        if o.name.startswith("arith.") and all(visit(a) for a in o.operands):
            chain.append(o)  # after its operands' producers: program order
            return True
        return False

    return (chain, extracts) if visit(v) and extracts else None


def clone_scalar_chain(
    chain: list[ir.Operation], mapping: dict[ir.Value, ir.Value]
) -> dict[ir.Value, ir.Value]:
    """Clone ``chain`` (``scalar_chain``'s arith ops) at the insertion point, its operands read
    through ``mapping`` (the extracts' results -> their values here), which it extends."""
    for o in chain:
        c = o.clone()
        for i, a in enumerate(o.operands):
            c.operands[i] = mapping.get(a, a)
        mapping[o.results[0]] = c.results[0]
    return mapping
