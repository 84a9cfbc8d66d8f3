"""Turn a fusion plan into ``flow.dispatch.region`` ops: one region = one IREE dispatch.

IREE keeps dispatch regions it finds in its input and forms its own only for ops outside
them (STACK.md item 5), so wrapping each planned group makes the plan the dispatch layout.
Built with generic ``Operation.create`` so it works in IREE's bindings (the real hand-off)
and in torch-mlir's (lit tests, where ``flow`` is an unregistered dialect).
"""

from __future__ import annotations

from typing import Any

from ..analysis.mapping_types import ir_of
from ..irutil import defining_op


def wrap_in_region(ops: list[Any], attrs: dict[str, Any] | None = None) -> Any:
    """Move ``ops`` (one block, program order, a convex set) into a new dispatch region.

    Results used outside the group become the region's results; ops between the group's
    first and last op that depend on the group are moved after the region. Static shapes
    only (``dynamic_shaped``): a dynamic-shaped group is refused with a ValueError.
    """
    ops = [o.operation for o in ops]
    if dynamic_shaped(ops):
        raise ValueError("wrap_in_region: a group with dynamic shapes (leave it to IREE)")
    ir = ir_of(ops[0])
    block_ops = [o.operation for o in ops[0].block.operations]
    pos = {o: i for i, o in enumerate(block_ops)}
    ops.sort(key=lambda o: pos[o])
    members = set(ops)
    first, last = pos[ops[0]], pos[ops[-1]]
    # In-between ops that consume group values (directly or not) must follow the region.
    tainted = set(members)
    to_move = []
    for o in block_ops[first : last + 1]:
        if o in members:
            continue
        if any(defining_op(v) in tainted for v in o.operands):
            tainted.add(o)
            if any(within(u.owner.operation, members) for r in o.results for u in r.uses):
                members.add(o)  # glue between members (a reshape the planner looked through)
                ops.append(o)
            else:
                to_move.append(o)
    # A chain of reshapes as glue (collapse_shape -> expand_shape): the first link was judged
    # before its reader joined the group; pull in each moved reshape a member reads, until
    # none is left. (Any other op a member reads is a plan that is not convex: left to fail
    # verification, and the compile falls back to IREE's own dispatches.)
    pulled = True
    while pulled:
        pulled = False
        for o in list(to_move):
            if o.name not in _RESHAPES:
                continue
            if any(within(u.owner.operation, members) for r in o.results for u in r.uses):
                to_move.remove(o)
                members.add(o)
                ops.append(o)
                pulled = True
    ops.sort(key=lambda o: pos[o])
    escaping = []
    for o in ops:
        for r in o.results:
            if any(not within(u.owner.operation, members) for u in r.uses):
                escaping.append(r)
    anchor = ops[-1]
    with anchor.location, ir.InsertionPoint(anchor):
        region_op = ir.Operation.create(
            "flow.dispatch.region",
            results=[v.type for v in escaping],
            operands=[],
            attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, 0])},
            regions=2,
        )
    for k, v in (attrs or {}).items():
        region_op.attributes[k] = v
    body = region_op.regions[0].blocks.append()
    region_op.move_after(anchor)
    for o in ops:
        o.detach_from_parent()
        body.append(o)
    with anchor.location, ir.InsertionPoint(body):
        ir.Operation.create("flow.return", operands=escaping)
    for v, res in zip(escaping, region_op.results, strict=True):
        v.replace_all_uses_except(res, _users_inside(v, members, region_op))
    prev = region_op
    for o in to_move:
        o.move_after(prev)
        prev = o
    return region_op


_RESHAPES = ("tensor.collapse_shape", "tensor.expand_shape")


def dynamic_shaped(ops: list[Any]) -> bool:
    """Whether any of ``ops`` reads or writes a tensor with a dynamic dim. A region of them
    would need the dynamic sizes of its results as operands (``flow.dispatch.region``'s
    result dims), which ``wrap_in_region`` does not compute: such groups stay IREE's."""
    for op in ops:
        op = op.operation
        for v in [*op.operands, *op.results]:
            shape = getattr(v.type, "shape", None)
            if shape is not None and any(v.type.is_dynamic_dim(i) for i in range(len(shape))):
                return True
    return False


def within(op: Any, members: set[Any]) -> bool:
    """``op`` is one of ``members`` or nested inside one (e.g. in a linalg body)."""
    while op is not None:
        if op in members:
            return True
        op = op.parent
        if op is not None:
            op = op.operation
    return False


def _users_inside(value: Any, members: set[Any], region_op: Any) -> list[Any]:
    return [
        u.owner.operation for u in value.uses if within(u.owner.operation, members | {region_op})
    ]
