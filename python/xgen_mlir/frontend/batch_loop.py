"""A dynamic batch as a loop over one item: static code (and every generated kernel) per item.

A model compiled with a dynamic batch runs IREE's dynamic-shape code for every layer, and none
of xgen_mlir's generated kernels (pattern convs, inverted-residual blocks, pointwise kernels),
which need static sizes: MobileNetV2 at batch 4 ran 3x behind ONNX Runtime that way. When
the batch items never meet (no op reduces, mixes or indexes along the batch), the model at a
dynamic batch is the same as the model at batch 1 applied to each item. So the module becomes
``@entry`` (dynamic batch) = a loop over the items, slicing each input, calling
``@entry__item`` (the model imported at batch 1, compiled like any static model) and
inserting each result.

``batch_axes`` proves the "never meet" part on the dynamically shaped import: it follows the
batch axis from the inputs through every op and accepts only ops that carry it as a parallel
loop (structured ops), a reshape group of its own, an unpadded pad dim, or a shape
computation; anything else is a reason, and the compile keeps the dynamic code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .._mlir import ir

STRUCTURED_OPAQUE = ("linalg.softmax",)  # linalg ops without indexing maps we could read


@dataclass(frozen=True)
class BatchAxes:
    """Which dim of each input and result is the batch (None: the tensor has no batch)."""

    inputs: tuple[int | None, ...]
    results: tuple[int | None, ...]


def _entry(module: ir.Module, entry: str) -> ir.Operation:
    for op in module.body.operations:
        op = op.operation
        if op.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == entry:
            return op
    raise KeyError(entry)


def _dynamic_dims(ty: ir.Type) -> list[int]:
    if not isinstance(ty, ir.RankedTensorType):
        return []
    shaped = ir.RankedTensorType(ty)
    return [d for d in range(shaped.rank) if ir.ShapedType.is_dynamic_size(shaped.shape[d])]


def _maps(op: ir.Operation) -> list[ir.AffineMap] | None:
    from ..analysis.mapping_types import indexing_maps

    return indexing_maps(op)


def _uses_dim(expr: ir.AffineExpr, loop: int) -> bool:
    return re.search(rf"\bd{loop}\b", str(expr)) is not None


class _Refused(Exception):
    pass


def batch_axes(module: ir.Module, entry: str = "main") -> BatchAxes | str:
    """The batch axes of ``entry`` if every op keeps the batch items apart, else the reason
    (naming the op) they may meet. The batch is every input's dynamic dim; an input may have
    at most one, and inputs without one must be static."""
    try:
        return _batch_axes(_entry(module, entry))
    except _Refused as e:
        return str(e)


def _where(op: ir.Operation) -> str:
    from ..diagnostics import format_location

    return f"{op.name} at {format_location(op.location)}"


def _batch_axes(func: ir.Operation) -> BatchAxes:
    block = func.regions[0].blocks[0]
    axis: dict[ir.Value, int | None] = {}
    batch_sizes: list[ir.Value] = []  # index values that are the batch size (tensor.dim)
    inputs: list[int | None] = []
    for i, arg in enumerate(block.arguments):
        dyn = _dynamic_dims(arg.type)
        if len(dyn) > 1:
            raise _Refused(f"input {i} has {len(dyn)} dynamic dims (a batch loop takes one)")
        inputs.append(dyn[0] if dyn else None)
        axis[arg] = dyn[0] if dyn else None
    if all(a is None for a in inputs):
        raise _Refused("no input has a dynamic dim")

    def get(value: ir.Value, op: ir.Operation) -> int | None:
        if value in axis:
            return axis[value]
        if any(value == b for b in batch_sizes):
            raise _Refused(f"{_where(op)} computes with the batch size")
        if _dynamic_dims(value.type):
            raise _Refused(f"{_where(op)} reads a dynamic tensor of unknown origin")
        return None

    def is_batch_size(value: ir.Value) -> bool:
        return any(value == b for b in batch_sizes)

    results: list[int | None] = []
    for op in block.operations:
        op = op.operation
        name = op.name
        if name == "func.return":
            results = [get(v, op) for v in op.operands]
            if any(r is None for r in results):
                raise _Refused("a result without the batch dim (it would be computed per item)")
            continue
        if name == "arith.constant" or (
            not any(axis.get(v) is not None or is_batch_size(v) for v in op.operands)
            and not any(_dynamic_dims(r.type) for r in op.results)
            and not any(_dynamic_dims(v.type) for v in op.operands)
        ):
            for r in op.results:
                axis[r] = None
            continue
        if name == "tensor.dim":
            src, index = op.operands[0], op.operands[1]
            owner = index.owner
            owner = getattr(owner, "operation", owner)
            if getattr(owner, "name", "") != "arith.constant":
                raise _Refused(f"{_where(op)}: a dim index that is not a constant")
            d = ir.IntegerAttr(owner.attributes["value"]).value
            if get(src, op) != d:
                raise _Refused(f"{_where(op)} reads a size that is not the batch")
            batch_sizes.append(op.results[0])
            continue
        if name == "tensor.empty":
            dyn = _dynamic_dims(op.results[0].type)
            if len(dyn) != 1 or len(list(op.operands)) != 1 or not is_batch_size(op.operands[0]):
                raise _Refused(f"{_where(op)}: a tensor sized by something else than the batch")
            axis[op.results[0]] = dyn[0]
            continue
        if name in ("tensor.collapse_shape", "tensor.expand_shape"):
            a = get(op.operands[0], op)
            if a is None:
                for r in op.results:
                    axis[r] = None
                continue
            if any(not is_batch_size(v) for v in list(op.operands)[1:]):
                raise _Refused(f"{_where(op)}: an output size computed from the batch")
            groups = [
                [ir.IntegerAttr(d).value for d in ir.ArrayAttr(g)]
                for g in ir.ArrayAttr(op.attributes["reassociation"])
            ]
            src_ty = ir.RankedTensorType(op.operands[0].type)
            collapse = name == "tensor.collapse_shape"
            wide_ty = src_ty if collapse else ir.RankedTensorType(op.results[0].type)
            for g_index, group in enumerate(groups):
                batch_pos = a if collapse else None
                if collapse and a not in group:
                    continue
                if not collapse and g_index != a:
                    continue
                others = [d for d in group if d != batch_pos]
                dyn = [d for d in group if ir.ShapedType.is_dynamic_size(wide_ty.shape[d])]
                if len(dyn) != 1 or any(wide_ty.shape[d] != 1 for d in others if d not in dyn):
                    raise _Refused(f"{_where(op)} merges the batch with another dim")
                axis[op.results[0]] = g_index if collapse else dyn[0]
            if op.results[0] not in axis:
                raise _Refused(f"{_where(op)}: lost the batch dim")
            continue
        if name == "tensor.pad":
            a = get(op.operands[0], op)
            low = ir.DenseI64ArrayAttr(op.attributes["static_low"])
            high = ir.DenseI64ArrayAttr(op.attributes["static_high"])
            if len(list(op.operands)) != 1 or (a is not None and (low[a] or high[a])):
                raise _Refused(f"{_where(op)} pads the batch dim (or by computed amounts)")
            axis[op.results[0]] = a
            continue
        if name == "tensor.cast":
            axis[op.results[0]] = get(op.operands[0], op)
            continue
        if name.startswith("linalg.") and name not in STRUCTURED_OPAQUE:
            _structured(op, axis, get)
            continue
        raise _Refused(f"{_where(op)}: an op the batch loop does not know")
    return BatchAxes(tuple(inputs), tuple(results))


def _structured(op: ir.Operation, axis: dict, get) -> None:  # type: ignore[type-arg]
    """A linalg op keeps items apart when one parallel loop reads every operand's batch dim,
    writes the result's, and indexes nothing else."""
    maps = _maps(op)
    if maps is None:
        raise _Refused(f"{_where(op)}: indexing maps unknown")
    operands = list(op.operands)
    if len(maps) != len(operands):
        raise _Refused(f"{_where(op)}: operands and maps differ")
    axes = [get(v, op) for v in operands]
    loops = set()
    for a, amap in zip(axes, maps, strict=True):
        if a is None:
            continue
        expr = amap.results[a]
        if not isinstance(expr, ir.AffineDimExpr):
            raise _Refused(f"{_where(op)} indexes the batch dim with arithmetic")
        loops.add(expr.position)
    if not loops:
        for r in op.results:
            axis[r] = None
        return
    if len(loops) != 1:
        raise _Refused(f"{_where(op)} reads batch dims through different loops")
    loop = loops.pop()
    if "iterator_types" in op.attributes:
        kinds = [str(k) for k in ir.ArrayAttr(op.attributes["iterator_types"])]
        if "parallel" not in kinds[loop]:
            raise _Refused(f"{_where(op)} reduces over the batch")
    for a, amap in zip(axes, maps, strict=True):
        for pos, expr in enumerate(amap.results):
            if pos != a and _uses_dim(expr, loop):
                raise _Refused(f"{_where(op)} reads the batch loop at another dim")
    for inner in op.regions[0].blocks[0].operations if op.regions else []:
        if inner.operation.name == "linalg.index":
            if ir.IntegerAttr(inner.operation.attributes["dim"]).value == loop:
                raise _Refused(f"{_where(op)} computes with the batch index")
    n_out = len(op.results)
    for r, amap, value in zip(op.results, maps[-n_out:], operands[-n_out:], strict=True):
        at = [
            i
            for i, e in enumerate(amap.results)
            if isinstance(e, ir.AffineDimExpr) and e.position == loop
        ]
        if len(at) != 1:
            raise _Refused(f"{_where(op)} reduces over the batch")
        if axis.get(value, at[0]) != at[0]:
            raise _Refused(f"{_where(op)}: its init's batch dim is elsewhere")
        axis[r] = at[0]


def _item_slice(item_type: str, axis: int, context: ir.Context) -> str:
    """``[offsets] [sizes] [strides]`` of item ``%i`` along ``axis`` of a tensor whose one
    item has type ``item_type``."""
    shape = list(ir.RankedTensorType(ir.Type.parse(item_type, context)).shape)
    offsets = ", ".join("%i" if d == axis else "0" for d in range(len(shape)))
    ones = ", ".join("1" for _ in shape)
    return f"[{offsets}] [{', '.join(map(str, shape))}] [{ones}]"


def wrap_items(
    module: ir.Module,
    entry: str,
    axes: BatchAxes,
    dynamic_types: list[str],
    result_types: list[str],
) -> None:
    """Rename ``module``'s ``entry`` (imported at batch 1) to ``<entry>__item`` and add an
    ``entry`` over the dynamic types that loops over the items. ``dynamic_types`` /
    ``result_types``: the dynamic entry's input and result types (text)."""
    item = _entry(module, entry)
    item_name = f"{entry}__item"
    item.attributes["sym_name"] = ir.StringAttr.get(item_name, module.context)
    item.attributes["sym_visibility"] = ir.StringAttr.get("private", module.context)
    item.attributes["no_inline"] = ir.UnitAttr.get(module.context)
    ftype = ir.FunctionType(ir.TypeAttr(item.attributes["function_type"]).value)
    item_in = [str(t) for t in ftype.inputs]
    item_out = [str(t) for t in ftype.results]
    first = next(i for i, a in enumerate(axes.inputs) if a is not None)
    lines = [
        "%c0 = arith.constant 0 : index",
        "%c1 = arith.constant 1 : index",
        f"%cb = arith.constant {axes.inputs[first]} : index",
        f"%n = tensor.dim %a{first}, %cb : {dynamic_types[first]}",
    ]
    for j, ty in enumerate(result_types):
        lines.append(f"%e{j} = tensor.empty(%n) : {ty}")
    inits = ", ".join(f"%acc{j} = %e{j}" for j in range(len(result_types)))
    body = []
    call_args = []
    for i, (ty, a) in enumerate(zip(dynamic_types, axes.inputs, strict=True)):
        if a is None:
            call_args.append(f"%a{i}")
            continue
        where = _item_slice(item_in[i], a, module.context)
        body.append(f"  %x{i} = tensor.extract_slice %a{i}{where} : {ty} to {item_in[i]}")
        call_args.append(f"%x{i}")
    outs = ", ".join(f"%y{j}" for j in range(len(item_out)))
    body.append(
        f"  {outs} = func.call @{item_name}({', '.join(call_args)}) : "
        f"({', '.join(item_in)}) -> ({', '.join(item_out)})"
    )
    yields = []
    for j, (ty, a) in enumerate(zip(result_types, axes.results, strict=True)):
        assert a is not None
        where = _item_slice(item_out[j], a, module.context)
        body.append(
            f"  %u{j} = tensor.insert_slice %y{j} into %acc{j}{where} : {item_out[j]} into {ty}"
        )
        yields.append(f"%u{j}")
    res_list = ", ".join(result_types)
    rs = ", ".join(f"%r#{j}" for j in range(len(result_types))) if len(result_types) > 1 else "%r"
    count = f":{len(result_types)}" if len(result_types) > 1 else ""
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(dynamic_types))
    text = (
        f"func.func @{entry}({params}) -> ({res_list}) {{\n  "
        + "\n  ".join(lines)
        + f"\n  %r{count} = scf.for %i = %c0 to %n step %c1 iter_args({inits}) -> ({res_list}) {{\n"
        + "\n".join(body)
        + f"\n    scf.yield {', '.join(yields)} : {res_list}\n  }}\n"
        + f"  return {rs} : {res_list}\n}}\n"
    )
    # the snippet declares the item function so that it verifies; only the loop moves over
    decl = f"func.func private @{item_name}({', '.join(item_in)}) -> ({', '.join(item_out)})\n"
    snippet = ir.Module.parse(decl + text, module.context)
    loop = list(snippet.body.operations)[-1].operation
    loop.move_before(module.body.operations[0])
