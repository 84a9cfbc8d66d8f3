"""xgen-nan-minmax: max/min written as ``cmpf`` + ``select`` become NaN-propagating.

Why: torch-mlir lowers ``torch.clamp``, ``relu6``, ``hardtanh``, ``torch.maximum`` and
``torch.minimum`` to ``arith.cmpf`` + ``arith.select`` in ``linalg.generic`` bodies, e.g.
``maximum(a, b)`` as ``a ogt b ? a : b`` and ``clamp(x, min=lo)`` as ``x ult lo ? lo : x``. On
a NaN such a select picks one operand whatever it holds, so ``maximum(NaN, 1)`` is 1 and
``clamp(NaN, -1, 1)`` is -1, where PyTorch gives NaN. This pass rewrites exactly those selects
to forms that give NaN for a NaN operand (and the same value as before otherwise):

- ``select(cmpf(P, a, b), a, b)`` or ``select(cmpf(P, a, b), b, a)`` with P one of ``ogt oge
  olt ole ugt uge ult ule`` computes max(a, b) or min(a, b) for numbers (which one follows
  from P's direction and the operand order). It becomes ``arith.maximumf`` /
  ``arith.minimumf`` (NaN if either operand is NaN, per MLIR's semantics), when that is exact:
- where one operand is a scalar constant c (not NaN; an ``arith.constant`` in the body or a
  splat constant tensor input of the generic) and the select already gives NaN for a NaN x
  (the unordered predicate picks x, or the ordered one falls back to x), nothing changes:
  torch-mlir's ReLU ``x ugt 0 ? x : 0`` and relu6's upper bound ``6 olt y ? 6 : y`` stay.
- where maximumf / minimumf would change a signed zero (the select picks -0 for max(-0, +0) or
  +0 for min: e.g. ``clamp(x, min=0)`` is ``x ult 0 ? 0 : x`` and keeps -0, as PyTorch does)
  the predicate's ordered/unordered form is flipped instead: the same select on numbers, and
  on a NaN it now picks x. With c != 0 no zero tie exists and maximumf/minimumf are exact.
- with two tensor operands (``torch.maximum(a, b)``) it is maximumf / minimumf: -0 is then
  below +0, where PyTorch's answer for max(-0, +0) depends on its vectorisation (its scalar
  and AVX paths disagree); NaN is NaN in both.

Left alone: selects between other values, ``cmpf`` with other predicates (eq, ne, ord, ...),
integer compares, compares with ``nnan``/``fast`` fast-math flags, two constant operands, and
anything outside all-parallel (elementwise) ``linalg.generic`` bodies (an argmax reduction's
select stays as it is). Runs first in every pipeline, so the passes after it (and the C
kernels that translate activations, ``kernel_match.activation_c``) see the NaN-propagating
forms.
"""

from __future__ import annotations

import math
from collections import Counter

from .._mlir import arith, ir
from ..irutil import ops_named
from .generic_util import iterator_types, num_inputs, producer
from .registry import register_pass

_GT = {2, 3, 9, 10}  # ogt oge ugt uge
_LT = {4, 5, 11, 12}  # olt ole ult ule
_UNORDERED = {9, 10, 11, 12}
_NONSTRICT = {3, 5, 10, 12}  # true on a tie
_FLOAT_TYPES = {"f16", "bf16", "f32", "f64"}


def _scalar_constant(value: ir.Value, generic: ir.Operation) -> float | None:
    """The value of a scalar constant: an ``arith.constant`` float, or a block argument of
    ``generic`` whose input is a splat constant tensor; None for anything else."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        index = ir.BlockArgument(value).arg_number
        if index >= num_inputs(generic):
            return None
        op = producer(generic.operands[index])
        if op is None or op.name != "arith.constant":
            return None
        attr = op.attributes["value"]
        if isinstance(attr, ir.DenseElementsAttr) and attr.is_splat:
            splat = attr.get_splat_value()
            return float(ir.FloatAttr(splat).value) if isinstance(splat, ir.FloatAttr) else None
        return None
    op = owner.operation
    if op.name != "arith.constant" or not isinstance(op.attributes["value"], ir.FloatAttr):
        return None
    return float(ir.FloatAttr(op.attributes["value"]).value)


def _fast_nnan(cmp: ir.Operation) -> bool:
    if "fastmath" not in cmp.attributes:
        return False
    flags = str(cmp.attributes["fastmath"])
    return "nnan" in flags or "fast>" in flags


def _rewrite(sel: ir.Operation, generic: ir.Operation, counts: Counter) -> None:
    cond = sel.operands[0].owner
    if isinstance(cond, ir.Block):
        return
    cmp = cond.operation
    if cmp.name != "arith.cmpf" or _fast_nnan(cmp):
        return
    pred = ir.IntegerAttr(cmp.attributes["predicate"]).value
    a, b = cmp.operands[0], cmp.operands[1]
    p, q = sel.operands[1], sel.operands[2]
    if pred not in _GT | _LT or a == b or str(a.type) not in _FLOAT_TYPES:
        return
    if not ((p == a and q == b) or (p == b and q == a)):
        return
    is_max = (pred in _GT) == (p == a)
    nan_pick = p if pred in _UNORDERED else q  # what the select gives when a compare is NaN
    tie_pick = p if pred in _NONSTRICT else q  # ... and for equal numbers (-0 vs +0)
    ca, cb = _scalar_constant(a, generic), _scalar_constant(b, generic)
    if ca is not None and cb is not None:
        return  # constant folding's business
    c = ca if ca is not None else cb
    if c is not None and not math.isnan(c):
        x, cv = (b, a) if ca is not None else (a, b)
        if nan_pick == x:
            return  # already NaN for a NaN x (a constant bound is never NaN)
        neg_zero = math.copysign(1.0, c) < 0
        # maximumf(-0, +0) = +0 and minimumf = -0: exact unless the select picks the other
        exact = c != 0.0 or (tie_pick == cv) == (neg_zero != is_max)
        if not exact:  # same select on numbers; on a NaN it now picks x
            flipped = pred - 7 if pred in _UNORDERED else pred + 7
            with ir.InsertionPoint(sel), sel.location:
                new_cmp = arith.CmpFOp(flipped, a, b)
            sel.operands[0] = new_cmp.result
            if not list(cmp.results[0].uses):
                cmp.erase()
            counts["select-predicate-flipped"] += 1
            return
    with ir.InsertionPoint(sel), sel.location:
        new = (arith.MaximumFOp if is_max else arith.MinimumFOp)(a, b)
    sel.results[0].replace_all_uses_with(new.result)
    sel.erase()
    if not list(cmp.results[0].uses):
        cmp.erase()
    counts["maximumf" if is_max else "minimumf"] += 1


def nan_minmax(module_op: ir.Operation) -> Counter:
    """Rewrite every max/min select of elementwise generics; returns what was rewritten."""
    counts: Counter = Counter()
    with module_op.context:
        for generic in ops_named(module_op, "linalg.generic"):
            if any(t != "parallel" for t in iterator_types(generic)):
                continue
            body = generic.regions[0].blocks[0]
            selects = [o.operation for o in body.operations if o.operation.name == "arith.select"]
            for sel in selects:
                _rewrite(sel, generic, counts)
    return counts


@register_pass(
    "xgen-nan-minmax",
    "Max/min selects (clamp, relu6, hardtanh, maximum, minimum) as NaN-propagating ops, as in "
    "PyTorch.",
)
def _pass(module_op: ir.Operation, _opts: None) -> Counter:
    return nan_minmax(module_op)
