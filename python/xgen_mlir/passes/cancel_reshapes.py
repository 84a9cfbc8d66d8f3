"""xgen-cancel-reshapes: cancel reshape/transpose pairs that upstream canonicalize leaves.

Why: layout ops cost a copy (transposes) or block fusion (reshapes between elementwise ops),
and frontends emit them in pairs. What upstream ``canonicalize`` already removes, checked
with ``xgen-opt -p 'func.func(canonicalize)'`` on this MLIR: back-to-back
``expand_shape``/``collapse_shape`` pairs (composed or cancelled), back-to-back named
``linalg.transpose`` pairs, and identity-copy generics. This pass does the rest:

1. **Sandwiches**: ``reshape -> elementwise ops -> inverse reshape`` (and the same with a
   transpose and its inverse): the elementwise ops run on the original layout and both
   layout ops go. torch-mlir emits this around the GELU of BERT's and GPT-2's MLP
   (``matmul 2-D -> expand to 3-D -> gelu -> collapse to 2-D -> matmul``; GPT-2's tanh GELU
   is eight generics reading the expanded value three times). The elementwise ops between
   the pair must form a closed region (no result used outside it but by the closing op);
   inputs from outside must be scalars for reshapes (rank-0 or constant maps), any projected
   permutation for transposes (its dimensions are renamed). Upstream does this only inside
   the elementwise-fusion pass (reshape propagation), not in canonicalize. For a transpose,
   region values may also be read outside by reductions, which then read the source layout
   through a permuted map: a squeeze-excite block pools the SiLU output its project conv
   reads. Run again after ``xgen-nhwc-convs``, this keeps EfficientNet-B0's SE blocks NHWC
   (one thread: its depthwise dispatches wrote NCHW, 0.46 -> 0.26 ms at 112x112x32).
2. **Transpose-as-generic**: a ``linalg.generic`` that only permutes its input (what some
   frontends emit for ``permute``) next to another transpose, named or generic: composed
   into one named transpose, or nothing when the permutations cancel. (Upstream's
   ``linalg-specialize-generic-ops`` would name it, but it also turns every elementwise
   generic into named ops, which the other passes do not read.)
3. **Unit-dimension transposes**: a transpose that only moves size-1 dimensions is a
   reshape; it becomes ``collapse_shape`` + ``expand_shape``, which canonicalize then
   composes or cancels with the reshapes around it.

4. **Sinking** (``sink=true``, the run after the generated-kernel passes): a transpose moves
   below the generics that read it, so that it meets its inverse. The kernels (GEMM, oneDNN)
   compute NHWC and hand back NCHW through a transpose; an FPN then adds each level to the
   upsampled coarser one in NCHW, and each next kernel transposes back to NHWC. IREE fuses
   those transposes into the adds, which then read one operand with a stride of H*W floats
   (the PP-OCRv4 detector: ``elementwise_80x2x80x2x96`` 3.4 ms). A generic whose large inputs
   are all transposes of one layout runs in that layout instead (its loops reordered, its
   small inputs -- a bias, a squeeze-excite scale -- read through renamed maps) and its
   result is transposed back for its users; a broadcasting generic (a nearest upsample's
   ``h -> (h, 2)``) keeps each new loop after the loop it repeats. ``collapse_shape`` of a
   transpose becomes a transpose of the collapsed source where the groups allow. It does not
   fire where another large input is in the generic's own layout (that read would become
   the strided one), where the transposed inputs disagree, on reductions, dynamic shapes, or
   where no user of the result could take the transpose further (it would only move).

No rule renames or reorders the loops of a generic whose body reads them (``linalg.index``:
an average pool's border divisor, a gather's coordinates): that would change what it computes.

Numerics: exact (only data movement changes).
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from dataclasses import dataclass
from functools import cmp_to_key

from .._mlir import ir, tensor
from ..irutil import ops_where
from .generic_util import (
    body_ops,
    empty,
    erase_dead_tree,
    generic_like,
    has_dynamic_shape,
    i64_array,
    indexing_maps,
    is_dynamic,
    is_elementwise,
    is_identity,
    iterator_types,
    loop_dims,
    map_dims,
    mixed_sizes,
    num_inputs,
    producer,
    tensor_shape,
    transpose,
)
from .registry import register_pass

_RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape")


@dataclass
class CancelOptions:
    verbose: bool = False  # print the counts to stderr
    sink: bool = False  # rule 4: move transposes below the generics that read them


def transpose_perm(op: ir.Operation | None) -> list[int] | None:
    """The permutation of a named ``linalg.transpose`` or of a generic that only permutes its
    one input (``out[i...] = in[perm...]``), else None."""
    if op is None:
        return None
    if op.name == "linalg.transpose":
        return list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
    if op.name != "linalg.generic" or num_inputs(op) != 1 or len(op.results) != 1:
        return None
    ops = body_ops(op)
    if len(ops) != 1 or ops[0].operands[0] != op.regions[0].blocks[0].arguments[0]:
        return None
    if any(k != "parallel" for k in iterator_types(op)):
        return None
    in_map, out_map = indexing_maps(op)
    dims = loop_dims(in_map)
    if not is_identity(out_map) or dims is None:
        return None
    if sorted(dims) != list(range(len(dims))) or len(dims) != out_map.n_dims:
        return None
    # out[d0..dn] = in[dims]: input dim k is loop dims[k], so output dim i reads input dim
    # inverse(dims)[i] -- the named op's `permutation` convention.
    perm = [0] * len(dims)
    for k, d in enumerate(dims):
        perm[d] = k
    return perm


def _named_transpose(source: ir.Value, perm: list[int], result_type: ir.Type) -> ir.Value:
    value = transpose(source, perm)
    assert value.type == result_type, (value.type, result_type)
    return value


def _replace(op: ir.Operation, value: ir.Value) -> None:
    operands = list(op.operands)
    op.results[0].replace_all_uses_with(value)
    op.erase()
    erase_dead_tree(operands)


def cancel_generic_transpose_pair(op: ir.Operation) -> bool:
    """Rule 2: transpose(transpose(x)) where at least one of them is a generic."""
    outer = transpose_perm(op)
    inner_op = producer(op.operands[0]) if outer is not None else None
    inner = transpose_perm(inner_op)
    if inner is None:
        return False
    assert outer is not None and inner_op is not None  # else inner would be None
    if op.name == inner_op.name == "linalg.transpose":
        return False  # named pairs are canonicalize's
    composed = [inner[i] for i in outer]
    source = inner_op.operands[0]
    if composed == list(range(len(composed))):
        _replace(op, source)
        return True
    with ir.InsertionPoint(op), op.location:
        new = _named_transpose(source, composed, op.results[0].type)
    _replace(op, new)
    return True


def _is_layout(op: ir.Operation) -> bool:
    return op.name in _RESHAPES or transpose_perm(op) is not None


def _region_before(
    closing: ir.Operation,
) -> tuple[list[ir.Operation], ir.Operation, list[tuple[ir.Operation, int]]] | None:
    """The elementwise ops on the paths from one layout op to ``closing`` (in IR order), that
    layout op (the first one found that ``closing`` inverts) and the escaping reads, or None.

    Backward from ``closing``'s input through elementwise ops of the same shape; then forward
    from a candidate opening within them. The region must be closed: every result of it (and
    the opening's) is used only inside it, ``closing`` taking the last -- except, for a
    transpose, by other transposes back (more closing ops) and by reductions that can read the
    source layout through a permuted map (the escaping reads, as (op, operand number)): a
    squeeze-excite block pools the value that its project conv reads (ONNX imports pool it
    with a named pool behind its own transpose back)."""
    shape = ir.RankedTensorType(closing.operands[0].type).shape
    back: set[ir.Operation] = set()
    openings: list[ir.Operation] = []
    work = [closing.operands[0]]
    while work:
        prod = producer(work.pop())
        if prod is None or prod in back or prod in openings:
            continue
        if _is_layout(prod):
            openings.append(prod)
        elif (
            is_elementwise(prod)
            and not reads_loop_indices(prod)
            and ir.RankedTensorType(prod.results[0].type).shape == shape
        ):
            back.add(prod)
            work.extend(list(prod.operands)[: num_inputs(prod)])
    for opening in openings:
        if not _inverse(opening, closing):
            continue
        region: set[ir.Operation] = set()
        frontier = [opening.results[0]]
        while frontier:
            for use in frontier.pop().uses:
                user = use.owner.operation
                if user in back and user not in region:
                    region.add(user)
                    frontier.append(user.results[0])
        last = producer(closing.operands[0])
        if last not in region:
            continue
        inside = region | {closing}
        escaping: list[tuple[ir.Operation, int]] = []
        for op in [opening, *region]:
            for use in op.results[0].uses:
                user = use.owner.operation
                if user in inside:
                    continue
                if opening.name in _RESHAPES:
                    break
                closes = transpose_perm(user) is not None and _inverse(opening, user)
                if not (closes or _takes_permuted_read(user, use.operand_number)):
                    break
                escaping.append((user, use.operand_number))
            else:
                continue
            break
        else:
            if any(
                transpose_perm(u) is not None and closing.is_before_in_block(u) for u, _ in escaping
            ):
                continue  # the last closing op rewrites them all (the callers walk in IR order)
            return sorted(region, key=cmp_to_key(_ir_order)), opening, escaping
    return None


def _takes_permuted_read(user: ir.Operation, operand: int) -> bool:
    """Whether ``user`` can read a region value in the source layout through a permuted
    indexing map: an input of a ``linalg.generic`` that reduces (its output is smaller, so the
    permuted read is the only layout cost; elementwise readers are left to the sandwich)."""
    if user.name != "linalg.generic" or operand >= num_inputs(user):
        return False
    reads = map_dims(indexing_maps(user)[operand])
    return "reduction" in iterator_types(user) and reads is not None


def _ir_order(a: ir.Operation, b: ir.Operation) -> int:
    return -1 if a.is_before_in_block(b) else 1


def _inverse(opening: ir.Operation, closing: ir.Operation) -> bool:
    """Whether ``closing`` undoes ``opening`` (the source shape back, inverse reassociation
    or permutation). The element type may differ: the elementwise ops between may convert
    (an int8 model quantizes between a conv's transpose back to NCHW and the next layer's
    transpose to NHWC)."""
    after = ir.RankedTensorType(closing.results[0].type)
    before = ir.RankedTensorType(opening.operands[0].type)
    if after.shape != before.shape:
        return False
    if closing.name in _RESHAPES:
        same = str(closing.attributes["reassociation"]) == str(opening.attributes["reassociation"])
        return {closing.name, opening.name} == set(_RESHAPES) and same
    outer, inner = transpose_perm(closing), transpose_perm(opening)
    if inner is None:
        return False
    assert outer is not None  # callers pass a layout op: not a reshape, so a transpose
    return [inner[i] for i in outer] == list(range(len(outer)))


def cancel_sandwich(op: ir.Operation) -> str | None:
    """Rule 1: ``op`` closes ``layout -> elementwise region -> op`` and undoes the layout."""
    if not _is_layout(op):
        return None
    found = _region_before(op)
    if found is None:
        return None
    region, opening, escaping = found
    source = opening.operands[0]
    rename = transpose_perm(opening)  # region loop dim i is source dim rename[i]
    rank = len(ir.RankedTensorType(source.type).shape)
    moved = set(region) | {opening}
    plans = []
    for r in region:
        ins = list(r.operands)[: num_inputs(r)]
        maps = []
        for v, amap in zip(ins, indexing_maps(r), strict=False):
            m = _moved_map(amap, rename, rank, is_link=producer(v) in moved)
            if m is None:
                return None
            maps.append(m)
        plans.append((r, ins, [*maps, ir.AffineMap.get_identity(rank)]))
    new_value = {opening.results[0]: source}
    inits: dict[str, ir.Value] = {}  # one tensor.empty per element type
    # Each copy goes where its original is, so escaping readers (which may come before the
    # closing op) see it defined.
    for r, ins, maps in plans:
        with ir.InsertionPoint(r), op.location:
            elem = ir.RankedTensorType(r.results[0].type).element_type
            if str(elem) not in inits:  # a dynamic size: tensor.dim of the source, which
                # dominates every region op (they all read the opening's result)
                inits[str(elem)] = empty(mixed_sizes(source, range(rank)), elem)
            init = inits[str(elem)]
            copy = generic_like(r, [new_value.get(v, v) for v in ins], maps, init)
            new_value[r.results[0]] = copy.results[0]
    closings, pooled = [op], False
    for user, number in escaping:
        if transpose_perm(user) is not None:  # another transpose back: one more closing op
            closings.append(user)
        else:
            assert rename is not None  # reads escape only a transpose's region (_region_before)
            _read_permuted(user, number, new_value[user.operands[number]], rename)
            pooled = True
    roots = []  # erased together once every closing is gone (they may share producers)
    for closing in closings:
        roots.extend(list(closing.operands))
        closing.results[0].replace_all_uses_with(new_value[closing.operands[0]])
        closing.erase()
    erase_dead_tree(roots)
    if pooled:
        return "transpose-with-pooled-reads"
    return "transpose" if rename is not None else "reshape"


def _inverse_perm(perm: list[int]) -> list[int]:
    """``q`` with ``q[perm[i]] = i``."""
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return inverse


def _read_permuted(user: ir.Operation, number: int, value: ir.Value, rename: list[int]) -> None:
    """Make input ``number`` of generic ``user`` read ``value`` (the source layout) where it
    read the region's layout: source dim ``rename[i]`` is region dim ``i``."""
    maps = indexing_maps(user)
    old = maps[number]
    inverse = _inverse_perm(rename)
    maps[number] = ir.AffineMap.get(old.n_dims, old.n_symbols, [old.results[i] for i in inverse])
    user.operands[number] = value
    user.attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])


def _moved_map(
    amap: ir.AffineMap, rename: list[int] | None, rank: int, is_link: bool
) -> ir.AffineMap | None:
    """``amap`` (over the chain's loops) re-expressed over the source layout's loops."""
    if is_link:  # a value of the region itself: read elementwise
        return ir.AffineMap.get_identity(rank) if is_identity(amap) else None
    dims = map_dims(amap)
    if dims is None:
        return None
    if rename is None:  # reshape: only scalars (no loop dims) carry over unchanged
        if any(d is not None for d in dims):
            return None
        return ir.AffineMap.get(rank, 0, [ir.AffineConstantExpr.get(0) for _ in dims])
    exprs = [
        ir.AffineConstantExpr.get(0) if d is None else ir.AffineDimExpr.get(rename[d]) for d in dims
    ]
    return ir.AffineMap.get(rank, 0, exprs)


def unit_transpose_to_reshape(op: ir.Operation) -> bool:
    """Rule 3: a transpose that only moves size-1 dims becomes collapse + expand."""
    perm = transpose_perm(op)
    if perm is None:
        return False
    src_ty = ir.RankedTensorType(op.operands[0].type)
    out_ty = ir.RankedTensorType(op.results[0].type)
    moved = [p for p in perm if src_ty.shape[p] != 1]
    if moved != sorted(moved) or perm == list(range(len(perm))):
        return False
    core = [s for s in src_ty.shape if s != 1]
    with ir.InsertionPoint(op), op.location:
        mid_ty = ir.RankedTensorType.get(core, src_ty.element_type)
        collapsed = tensor.CollapseShapeOp(
            mid_ty, op.operands[0], _squeeze_groups(list(src_ty.shape))
        ).result
        sizes = mixed_sizes(op.operands[0], perm)  # result dim i is source dim perm[i]
        expanded = tensor.ExpandShapeOp(
            out_ty,
            collapsed,
            _squeeze_groups(list(out_ty.shape)),
            [v for v in sizes if not isinstance(v, int)],  # the dynamic sizes
            list(out_ty.shape),
        ).result
    _replace(op, expanded)
    return True


def _squeeze_groups(shape: list[int]) -> ir.ArrayAttr:
    """Reassociation grouping ``shape``'s dims onto its non-unit dims (each unit dim joins
    the next non-unit dim, trailing ones the last)."""
    groups: list[list[int]] = []
    pending: list[int] = []
    for d, size in enumerate(shape):
        pending.append(d)
        if size != 1:
            groups.append(pending)
            pending = []
    if pending:
        if groups:
            groups[-1].extend(pending)
        # all dims are 1: no groups (collapse to / expand from a rank-0 tensor)
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get(
        [ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in g]) for g in groups]
    )


def reads_loop_indices(op: ir.Operation) -> bool:
    """Whether a generic's body reads its loop indices (``linalg.index``: an average pool's
    border divisor, a gather's coordinates). Renaming or reordering its loops would change
    what those indices mean, so the layout rules leave such a generic alone."""
    return any(o.name == "linalg.index" for o in body_ops(op))


def _transposed_input(value: ir.Value, amap: ir.AffineMap) -> list[int] | None:
    """For a generic input that is a transpose's result, read through a projected
    permutation: the loops in the order of the transpose's source layout, else None."""
    perm = transpose_perm(producer(value))
    dims = loop_dims(amap)
    if perm is None or dims is None:
        return None
    inverse = _inverse_perm(perm)
    return [dims[inverse[s]] for s in range(len(perm))]


# a non-transposed input up to this fraction of the output's elements is "small": reading it
# through a renamed map costs little (a bias, a squeeze-excite scale)
_SMALL_INPUT = 1 / 8


def _sink_order(op: ir.Operation) -> tuple[list[int], list[int]] | None:
    """Rule 4's plan for generic ``op``: (the new loop order, the inputs that are transposes
    to read at their source), or None where the rule does not apply."""
    if op.name != "linalg.generic" or len(op.results) != 1 or reads_loop_indices(op):
        return None
    maps = indexing_maps(op)
    out_shape = tensor_shape(op.results[0])
    if (
        any(t != "parallel" for t in iterator_types(op))
        or not is_identity(maps[-1])
        or out_shape is None
        or any(is_dynamic(d) for d in out_shape)
    ):
        return None
    n = len(out_shape)
    elements = max(1, math.prod(out_shape))
    order: list[int] | None = None
    taken: list[int] = []
    for i, (v, amap) in enumerate(zip(list(op.operands)[: num_inputs(op)], maps, strict=False)):
        shape = tensor_shape(v)
        if shape is None or any(is_dynamic(d) for d in shape) or map_dims(amap) is None:
            return None
        source_order = _transposed_input(v, amap)
        if source_order is None:
            if math.prod(shape) > elements * _SMALL_INPUT:
                return None  # a large input in the generic's own layout
            continue
        if order is not None and source_order != order:
            return None  # transposed inputs of different layouts
        order = source_order
        taken.append(i)
    if order is None:
        return None
    # each loop no transposed input reads (a broadcast's new dim) follows the loop before it
    leading = [d for d in range(n) if d not in order and not any(e in order for e in range(d))]
    follow: dict[int, list[int]] = {d: [] for d in order}
    for d in range(n):
        if d not in order and d not in leading:
            follow[max(e for e in range(d) if e in order)].append(d)
    new_order = leading + [d for base in order for d in [base, *follow[base]]]
    return new_order, taken


def _sinks_further(value: ir.Value) -> bool:
    """Whether some user of ``value`` (the sunk generic's result, transposed back) takes the
    transpose further: its inverse (they cancel), a generic rule 4 applies to with it, or a
    collapse_shape."""
    for use in value.uses:
        user = use.owner.operation
        if user.name == "tensor.collapse_shape" or transpose_perm(user) is not None:
            return True
        if (
            user.name == "linalg.generic"
            and use.operand_number < num_inputs(user)
            and all(t == "parallel" for t in iterator_types(user))
            and is_identity(indexing_maps(user)[-1])
            and loop_dims(indexing_maps(user)[use.operand_number]) is not None
        ):
            return True
    return False


def sink_transpose(op: ir.Operation) -> bool:
    """Rule 4 on a generic: run it in its transposed inputs' source layout."""
    plan = _sink_order(op)
    if plan is None:
        return False
    new_order, taken = plan
    identity = new_order == list(range(len(new_order)))
    if not identity and not _sinks_further(op.results[0]):
        return False
    n = len(new_order)
    position = {d: k for k, d in enumerate(new_order)}  # old loop -> new loop
    maps = indexing_maps(op)
    ins = list(op.operands)[: num_inputs(op)]
    new_ins, new_maps = [], []
    for i, (v, amap) in enumerate(zip(ins, maps, strict=False)):
        if i in taken:
            source = producer(v)
            assert source is not None
            v = source.operands[0]
            dims = _transposed_input(ins[i], amap)
            assert dims is not None
            exprs = [ir.AffineDimExpr.get(position[d]) for d in dims]
            new_maps.append(ir.AffineMap.get(len(new_order), 0, exprs))
        else:  # a small input: its loops renamed, as the sandwich rule renames them
            renamed = _moved_map(amap, [position[d] for d in range(n)], n, is_link=False)
            assert renamed is not None  # _sink_order checked its map
            new_maps.append(renamed)
        new_ins.append(v)
    shape = tensor_shape(op.results[0])
    assert shape is not None
    elem = ir.RankedTensorType(op.results[0].type).element_type
    with ir.InsertionPoint(op), op.location:
        init = empty([shape[d] for d in new_order], elem)
        copy = generic_like(
            op, new_ins, [*new_maps, ir.AffineMap.get_identity(len(new_order))], init
        )
        result = copy.results[0]
        if not identity:
            result = transpose(result, [position[d] for d in range(len(new_order))])
    _replace(op, result)
    return True


def collapse_of_transpose(op: ir.Operation) -> bool:
    """Rule 4 on ``collapse_shape(transpose(x))``: ``transpose(collapse_shape(x))`` when each
    group of the collapse is a run of consecutive dims of ``x`` in order."""
    if op.name != "tensor.collapse_shape":
        return False
    inner = producer(op.operands[0])
    perm = transpose_perm(inner)
    if perm is None or inner is None or inner.name != "linalg.transpose":
        return False
    if has_dynamic_shape(op.operands[0]):
        return False
    groups = [
        [int(ir.IntegerAttr(d).value) for d in g]
        for g in ir.ArrayAttr(op.attributes["reassociation"])
    ]
    runs = [[perm[d] for d in g] for g in groups]  # each group's dims of x
    if any(r != list(range(r[0], r[0] + len(r))) for r in runs if r):
        return False
    by_start = sorted(range(len(runs)), key=lambda g: runs[g][0])
    source = inner.operands[0]
    src_shape = tensor_shape(source)
    assert src_shape is not None
    if sorted(d for r in runs for d in r) != list(range(len(src_shape))):
        return False
    new_groups = [runs[g] for g in by_start]
    elem = ir.RankedTensorType(source.type).element_type
    collapsed_shape = [math.prod(src_shape[d] for d in g) for g in new_groups]
    with ir.InsertionPoint(op), op.location:
        collapsed = tensor.CollapseShapeOp(
            ir.RankedTensorType.get(collapsed_shape, elem),
            source,
            ir.ArrayAttr.get([i64_array(g) for g in new_groups]),
        ).result
        # result group j is collapsed group by_start.index(j)
        result = transpose(collapsed, [by_start.index(j) for j in range(len(groups))])
    assert result.type == op.results[0].type, (result.type, op.results[0].type)
    _replace(op, result)
    return True


def cancel_reshapes(module_op: ir.Operation, opts: CancelOptions | None = None) -> Counter:
    """Apply the rules until nothing changes; returns counts by rule."""
    with module_op.context:
        opts = opts or CancelOptions()
        counts: Counter[str] = Counter()
        layout = ("linalg.transpose", "linalg.generic", *_RESHAPES)
        for _ in range(8):
            changed = False
            for op in ops_where(module_op, lambda o: o.name in layout):
                kind = cancel_sandwich(op)
                if kind is not None:
                    counts[f"{kind}-sandwich"] += 1
                elif cancel_generic_transpose_pair(op):
                    counts["generic-transpose-pair"] += 1
                elif unit_transpose_to_reshape(op):
                    counts["unit-transpose"] += 1
                elif opts.sink and op.name == "linalg.generic" and sink_transpose(op):
                    counts["sunk-transpose"] += 1
                elif opts.sink and collapse_of_transpose(op):
                    counts["collapse-of-transpose"] += 1
                else:
                    continue
                changed = True
            if not changed:
                break
        if opts.verbose:
            fired = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "nothing"
            print(f"xgen-cancel-reshapes: {fired}", file=sys.stderr)
        return counts


@register_pass(
    "xgen-cancel-reshapes",
    "Cancel reshape/transpose pairs canonicalize leaves (around elementwise ops, generic "
    "transposes, unit-dim transposes).",
    CancelOptions,
)
def _pass(module_op: ir.Operation, opts: CancelOptions | None) -> Counter:
    return cancel_reshapes(module_op, opts)
