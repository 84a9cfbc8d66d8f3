"""xgen-scalar-operands: a scalar that a ``linalg.generic`` reads from outside, computed from
elements of 0-d tensors (``tensor.extract`` and scalar arith), is computed in its body from
those tensors, which become inputs of the generic.

Why: dynamic quantization computes an activation's scale and zero point as 0-d tensors (from
its min and max) and reads them with ``tensor.extract``; the quantize generic uses the scalars
in its body. IREE passes such a captured scalar to the dispatch as a push constant, which it
reads on the host (``flow.tensor.load``): the host waits for the device to finish before each
quantize, once per quantized Linear, every call (MiniLM int8: 36 times). Read as an input
through a map with no results, the 0-d tensor stays on the device, in the dispatch.

What it matches: a ``linalg.generic`` whose body uses a value defined outside it that
``generic_util.scalar_chain`` traces to ``tensor.extract``s without indices (elements of 0-d
tensors) through ``arith`` ops and constants (quantization: ``extui`` of the zero point). The
generic is rebuilt with those tensors as more inputs (map ``(d0, ...) -> ()``), the arith
ops cloned at the start of its body on the new block arguments; what is left outside dies
in the next canonicalize.

It must not fire on: an extract with indices (an element of a larger tensor: a gather), a
captured value computed from anything else (a function argument, index math) or from
constants alone, ops other than ``linalg.generic``.

Numerics: exact (the same element, read on the device).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from .._mlir import ir, linalg
from ..fusion.tunable import captured_values, clone_remapped
from ..irutil import ops_named
from .generic_util import clone_scalar_chain, scalar_chain
from .registry import register_pass


@dataclass
class ScalarOperandsOptions:
    pass


def _captured_scalars(op: ir.Operation) -> list[ir.Value]:
    """The values ``op``'s body reads from outside that ``scalar_chain`` traces to elements
    of 0-d tensors."""
    return [v for v in captured_values(ir, op) if scalar_chain(v) is not None]


def _rebuild(op: ir.Operation, scalars: list[ir.Value]) -> None:
    """``op`` again with the 0-d tensors ``scalars`` are computed from as extra inputs, and
    that computation at the start of its body; then erased."""
    with op.location:
        _rebuild_at(op, scalars)


def _rebuild_at(op: ir.Operation, scalars: list[ir.Value]) -> None:
    chains = [scalar_chain(v) for v in scalars]
    extracts = [e for c in chains if c is not None for e in c[1]]
    sources = list(dict.fromkeys(e.operands[0] for e in extracts))
    n_in = len(op.operands) - len(op.results)
    ins, outs = list(op.operands[:n_in]), list(op.operands[n_in:])
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    scalar_map = ir.AffineMap.get(maps[0].n_dims, 0, [])
    new_maps = maps[:n_in] + [scalar_map] * len(sources) + maps[n_in:]
    with ir.InsertionPoint(op):
        new = linalg.GenericOp(
            [r.type for r in op.results],
            [*ins, *sources],
            outs,
            ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in new_maps]),
            op.attributes["iterator_types"],
        )
    old_block = op.regions[0].blocks[0]
    args = list(old_block.arguments)
    types = [a.type for a in args[:n_in]]
    types += [ir.RankedTensorType(s.type).element_type for s in sources]
    types += [a.type for a in args[n_in:]]
    block = new.regions[0].blocks.append(*types)
    new_args = list(block.arguments)
    # what the body reads from outside stays as it is, except the scalars computed here
    mapping = {v: v for v in captured_values(ir, op) if v not in scalars}
    mapping.update(zip(args[:n_in], new_args[:n_in], strict=True))
    mapping.update(zip(args[n_in:], new_args[n_in + len(sources) :], strict=True))
    for e in extracts:
        mapping[e.results[0]] = new_args[n_in + sources.index(e.operands[0])]
    with ir.InsertionPoint(block):
        for c in chains:
            if c is not None:
                clone_scalar_chain([o for o in c[0] if o.results[0] not in mapping], mapping)
        for o in old_block.operations:
            clone_remapped(ir, o.operation, mapping)
    for old, res in zip(op.results, new.results, strict=True):
        old.replace_all_uses_with(res)
    op.erase()


def scalar_operands(module_op: ir.Operation, opts: ScalarOperandsOptions | None = None) -> Counter:
    counts: Counter[str] = Counter()
    with module_op.context:
        for op in ops_named(module_op, "linalg.generic"):
            scalars = _captured_scalars(op)
            if scalars:
                _rebuild(op, scalars)
                counts["linalg.generic: scalar from 0-d tensors -> inputs"] += len(scalars)
    return counts


@register_pass(
    "xgen-scalar-operands",
    "A 0-d tensor's element read by a linalg.generic through tensor.extract -> an input of "
    "the generic (no host read of the scalar).",
    ScalarOperandsOptions,
)
def _pass(module_op: ir.Operation, opts: ScalarOperandsOptions | None) -> Counter:
    return scalar_operands(module_op, opts)
