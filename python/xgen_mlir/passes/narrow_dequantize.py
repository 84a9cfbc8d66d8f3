"""xgen-narrow-dequantize: a dequantize's ``sitofp(extsi(q) - zp)`` in i64 becomes
``sitofp(q) - zp`` in f32.

Why: torch-mlir lowers a dequantize (and the int8 chain of every QDQ model) as
``arith.extsi %q : i8 to i64``, ``arith.subi`` of the zero point in i64, then
``arith.sitofp : i64 to f32``. x86 has no vector i64 -> f32 conversion before AVX512-DQ, so
on an AVX2 CPU LLVM converts those one element at a time: in EfficientNet-B0 int8 the
requantize + SiLU + requantize dispatch after the first expand conv (12544 x 96 values, two
such conversions each) took 8.4 ms on an AMD Zen 3, most of the model's time.

What it matches: in a ``linalg.generic`` body, ``arith.sitofp`` from i64 (or i32) of
``arith.subi(a, b)`` where ``a`` is an ``extsi``/``extui`` of an integer of at most 16 bits
and ``b`` is either such an extension too or an integer constant below 2^23 in magnitude.
Each side becomes an f32 (``sitofp``/``uitofp`` of the narrow value, or the constant) and one
``subf`` replaces the three ops, which are erased (``xgen-elide-int-roundtrips`` needs a
dequantize's integer read only by its conversion). It must not fire on wider
sources (an i32 tensor: not exact in f32), a non-constant wide operand, or other conversions.

Numerics: exact. Both sides are integers below 2^24 in magnitude, so they and their
difference are exact in f32, as the i64 difference converted to f32 was.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from .._mlir import arith, ir
from ..irutil import ops_named
from .registry import register_pass

NARROW_BITS = 16  # sources of at most this many bits (int8, uint8, int16)
CONSTANT_LIMIT = 1 << 23  # |zero point| below this: source minus it stays below 2^24


@dataclass
class NarrowDequantizeOptions:
    pass


def _int_width(t: ir.Type) -> int | None:
    return t.width if isinstance(t, ir.IntegerType) else None


def _narrow_side(v: ir.Value) -> tuple[str, ir.Value] | int | None:
    """("s"/"u", narrow source) for an extension of a narrow integer, the value of an integer
    constant within ``CONSTANT_LIMIT``, else None."""
    op = v.owner
    if not isinstance(op, ir.OpView):
        return None
    op = op.operation
    if op.name in ("arith.extsi", "arith.extui"):
        width = _int_width(op.operands[0].type)
        if width is not None and width <= NARROW_BITS:
            return ("s" if op.name == "arith.extsi" else "u"), op.operands[0]
        return None
    if op.name == "arith.constant":
        attr = op.attributes["value"]
        if isinstance(attr, ir.IntegerAttr):
            value = attr.value
            if abs(value) < CONSTANT_LIMIT:
                return value
    return None


def _as_f32(side: tuple[str, ir.Value] | int) -> ir.Value:
    f32 = ir.F32Type.get()
    if isinstance(side, int):
        return arith.ConstantOp(f32, ir.FloatAttr.get(f32, float(side))).result
    kind, source = side
    if kind == "s":
        return arith.SIToFPOp(f32, source).result
    return arith.UIToFPOp(f32, source).result


def _rewrite(conv: ir.Operation) -> bool:
    """Rewrite one ``sitofp`` if it matches; returns whether it did."""
    if str(conv.results[0].type) != "f32":
        return False
    sub = conv.operands[0].owner
    if not isinstance(sub, ir.OpView) or sub.operation.name != "arith.subi":
        return False
    sub = sub.operation
    a, b = (_narrow_side(v) for v in sub.operands)
    if not isinstance(a, tuple) or b is None:
        return False
    with ir.InsertionPoint(conv), conv.location:
        diff = arith.SubFOp(_as_f32(a), _as_f32(b)).result
    conv.results[0].replace_all_uses_with(diff)
    conv.erase()
    # the i64 subtraction and extensions, now dead (later passes read the body's uses)
    for op in [sub, *(o.owner.operation for o in sub.operands if isinstance(o.owner, ir.OpView))]:
        if all(not list(r.uses) for r in op.results):
            op.erase()
    return True


def narrow_dequantize(
    module_op: ir.Operation, opts: NarrowDequantizeOptions | None = None
) -> Counter:
    counts: Counter[str] = Counter()
    with module_op.context:
        for generic in ops_named(module_op, "linalg.generic"):
            block = generic.regions[0].blocks[0]
            for op in list(block.operations):
                if op.operation.name == "arith.sitofp" and _rewrite(op.operation):
                    counts["sitofp(extsi(q) - zp) -> sitofp(q) - zp"] += 1
    return counts


@register_pass(
    "xgen-narrow-dequantize",
    "A dequantize's i64 sitofp(extsi(q) - zp) as sitofp(q) - zp in f32 (exact; vectorizes on "
    "AVX2, which has no vector i64 -> f32 conversion).",
    NarrowDequantizeOptions,
)
def _pass(module_op: ir.Operation, opts: NarrowDequantizeOptions | None) -> Counter:
    return narrow_dequantize(module_op, opts)
