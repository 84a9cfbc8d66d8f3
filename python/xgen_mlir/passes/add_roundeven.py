"""xgen-add-roundeven: ``math.roundeven`` on f32 as two additions with a power of two.

Why: IREE's llvm-cpu codegen expands ``math.roundeven`` into integer bit manipulation (the
exponent, a shifted mask, compares and blends: about 40 vector instructions per vector of 8)
instead of the one rounding instruction x86 has. Every quantize rounds, and an int8 model
rounds two or three times per value between contractions (the integer accumulator computed in
f32, the requantized output): in MobileNetV2 int8 on an AMD Zen 3 the requantize chain after
the first expand conv (12544 x 96 values, two roundevens) took 3.2 ms, more than the conv.

The rewrite: for |x| < 2^23, ``(x + c) - c`` with ``c = copysign(2^23, x)`` is x rounded to an
integer in the FPU's rounding (to nearest, ties to even: the sum lies in [2^23, 2^24), where
the f32 spacing is 1); |x| >= 2^23 (and Inf) is an integer already and NaN fails the compare,
so both keep x; a final ``copysign(result, x)`` gives -0 for x in (-0.5, -0], as roundeven
does. Exact for every f32, no flags: ``x + c - c`` folds only under reassociation, which
neither xgen_mlir nor IREE asks for (the test compiles it and compares bits).

Matches ``math.roundeven`` on scalar f32 (inside ``linalg.generic`` bodies, where the graph's
elementwise math lives); must not fire on other types (f16, bf16, f64: other spacings), on
vectors, or on other rounding ops (``math.round`` rounds half away from zero).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from .._mlir import arith, ir
from ..irutil import ops_named
from .registry import register_pass

TWO_23 = float(1 << 23)  # from here on every f32 is an integer


@dataclass
class AddRoundevenOptions:
    pass


def _math(name: str, *operands: ir.Value) -> ir.Value:
    op = ir.Operation.create(name, results=[operands[0].type], operands=list(operands))
    return op.results[0]


def _rewrite(op: ir.Operation) -> None:
    x = op.operands[0]
    f32 = x.type
    with ir.InsertionPoint(op), op.location:
        limit = arith.ConstantOp(f32, ir.FloatAttr.get(f32, TWO_23)).result
        c = _math("math.copysign", limit, x)
        r = arith.SubFOp(arith.AddFOp(x, c).result, c).result
        small = arith.CmpFOp(arith.CmpFPredicate.OLT, _math("math.absf", x), limit).result
        y = arith.SelectOp(small, r, x).result
        out = _math("math.copysign", y, x)
    op.results[0].replace_all_uses_with(out)
    op.erase()


def add_roundeven(module_op: ir.Operation, opts: AddRoundevenOptions | None = None) -> Counter:
    counts: Counter[str] = Counter()
    with module_op.context:
        for op in ops_named(module_op, "math.roundeven"):
            if str(op.results[0].type) == "f32":
                _rewrite(op)
                counts["math.roundeven -> (x + 2^23) - 2^23"] += 1
    return counts


@register_pass(
    "xgen-add-roundeven",
    "f32 math.roundeven as (x + copysign(2^23, x)) - copysign(2^23, x) (exact; IREE expands "
    "roundeven into bit manipulation instead of one rounding instruction).",
    AddRoundevenOptions,
)
def _pass(module_op: ir.Operation, opts: AddRoundevenOptions | None) -> Counter:
    return add_roundeven(module_op, opts)
