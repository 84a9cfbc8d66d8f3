"""xgen-algebraic-simplify: rewrite elementwise math by its algebraic properties.

Why: frontends emit one ``linalg.generic`` per framework op, so ``A*C + A*B`` is three
full-size ops and ``prod(exp(A))`` an exp per element; DNNFusion's graph rewriting (seed
text 001, "mathematical-property-based graph rewriting") replaces such expressions by cheaper
equivalent ones before fusion: fewer ops, fewer FLOPs, fewer intermediates.

How: an elementwise generic's body (parallel loops, identity output map, inputs through
identity or broadcast maps; ops ``addf subf mulf divf negf sqrt exp``) is read as an
expression tree whose leaves are its inputs. A rule may look one op further up: an input
produced by another such generic with exactly that one use (and the same iteration space)
is read as its expression, so the two-generic forms torch-mlir emits match as well as fused
bodies. Splat constants (operands or captured scalars) are leaves with a value. When a rule
fires, the root generic is replaced by one new generic computing the rewritten tree (the
absorbed single-use producers die); when none fires, nothing changes.

Rules and their safety class (``unsafe-math=true`` enables the unsafe ones):

==========================  ====================================  ==========================
rule                        rewrite                               class
==========================  ====================================  ==========================
identity                    x*1, 1*x, x/1, x+(-0.0), x-(+0.0)     exact (bit for bit)
                            -> x
double-negation             -(-x) -> x                            exact
identity (signed zero)      x+(+0.0), x-(-0.0) -> x               unsafe: -0.0+0.0 is +0.0
distributive                A*C + A*B -> A*(C+B), also ``-``;     reassociation when A is a
                            C/A + B/A -> (C+B)/A                  finite (for ``/``: nonzero)
                                                                  constant, else unsafe
sqrt-product                (A*sqrt(B)) * (sqrt(B)*C) -> A*B*C    unsafe
                            (any product with two sqrt(B))
reduce-prod-exp             prod_k exp(A) -> exp(sum_k A)         unsafe
==========================  ====================================  ==========================

"Reassociation" means what float reassociation may change: rounding (so the sign of an
exact-zero result too) and whether an intermediate overflows; NaN and Inf inputs give the
same NaN/Inf results. Distribution over a runtime factor does not: A=inf, C=0, B=1 gives
NaN + inf = NaN before and inf * 1 = inf after; with a finite constant A it does, so only
that case is on by default (division also needs A != 0: 1/0 + 0/0 is NaN, (1+0)/0 is inf).
``sqrt(B)*sqrt(B) -> B`` turns the NaN of a negative B into B; ``prod(exp)`` overflows to
inf (or underflows to 0) where ``exp(sum)`` does not: exp(100)*exp(-100) is inf in f32,
exp(0) is 1. ``x*1 -> x`` ignores only NaN payloads (sNaN quieting), as LLVM does.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Union

from .._mlir import arith, ir
from ..irutil import ops_named
from .generic_util import (
    body_ops,
    empty,
    erase_dead_tree,
    fill,
    generic,
    indexing_maps,
    is_elementwise,
    iterator_types,
    map_dims,
    num_inputs,
    num_uses,
    producer,
)
from .registry import register_pass

_OPS = {
    "arith.addf",
    "arith.subf",
    "arith.mulf",
    "arith.divf",
    "arith.negf",
    "math.sqrt",
    "math.exp",
}


@dataclass
class SimplifyOptions:
    unsafe_math: bool = False  # also the rules that change NaN/Inf results (see docstring)
    verbose: bool = False  # print the rule counts to stderr


@dataclass(frozen=True)
class Leaf:
    value: ir.Value
    dims: tuple[int | None, ...]  # indexing map results: loop dim, or None for a size-1 dim


@dataclass(frozen=True)
class Const:
    bits: str  # float.hex of the value: +0.0 and -0.0 differ

    @property
    def value(self) -> float:
        return float.fromhex(self.bits)


@dataclass(frozen=True)
class Node:
    name: str
    args: tuple[Tree, ...]


Tree = Union[Leaf, Const, Node]  # noqa: UP007  (the dataclasses above are used at runtime)


def const(value: float) -> Const:
    return Const(float(value).hex())


class Simplifier:
    """Reads generics as trees, applies the rules, writes the result back."""

    def __init__(self, opts: SimplifyOptions) -> None:
        self.opts = opts
        self.loops = 0  # rank of the generic being simplified
        self.counts: Counter[str] = Counter()
        self.rules: list[Callable[[Node], Tree | None]] = [
            self.identity,
            self.double_negation,
            self.distributive,
            self.sqrt_product,
        ]

    # -- reading ------------------------------------------------------------------------
    def tree_of(self, op: ir.Operation) -> Tree | None:
        """The expression a supported elementwise generic yields, or None."""
        if not is_elementwise(op):
            return None
        elem = ir.RankedTensorType(op.results[0].type).element_type
        if not isinstance(elem, ir.FloatType):
            return None
        n_in = num_inputs(op)
        maps = indexing_maps(op)
        args = list(op.regions[0].blocks[0].arguments)
        env: dict[ir.Value, Tree] = {}
        for i in range(n_in):
            dims = map_dims(maps[i])
            assert dims is not None  # is_elementwise checked the input maps
            env[args[i]] = self.leaf(op.operands[i], tuple(dims))
        for inner in body_ops(op):
            if inner.name == "linalg.yield":
                return env.get(inner.operands[0])
            if inner.name == "arith.constant":
                value = self.scalar_const(inner.results[0])
                if value is None:
                    return None
                env[inner.results[0]] = value
                continue
            if inner.name not in _OPS or inner.results[0].type != elem:
                return None
            found = [env.get(v) or self.scalar_const(v) for v in inner.operands]
            operands = [o for o in found if o is not None]
            if len(operands) != len(found):
                return None  # the output block argument or a non-constant capture
            env[inner.results[0]] = Node(inner.name, tuple(operands))
        return None

    def leaf(self, value: ir.Value, dims: tuple[int | None, ...]) -> Tree:
        splat = self.splat_value(value)
        return const(splat) if splat is not None else Leaf(value, dims)

    def splat_value(self, value: ir.Value) -> float | None:
        op = producer(value)
        if op is None or op.name != "arith.constant":
            return None
        attr = op.attributes["value"]
        if isinstance(attr, ir.DenseElementsAttr) and attr.is_splat:
            return float(attr.get_splat_value().value)
        return None

    def scalar_const(self, value: ir.Value) -> Const | None:
        op = producer(value)
        if op is None or op.name != "arith.constant" or not isinstance(value.type, ir.FloatType):
            return None
        return const(ir.FloatAttr(op.attributes["value"]).value)

    def look(self, t: Tree, loops: int) -> Tree:
        """``t`` itself, or for an input produced by a single-use elementwise generic over the
        same loops (identity map) the expression that generic computes."""
        if not isinstance(t, Leaf) or t.dims != tuple(range(loops)) or num_uses(t.value) != 1:
            return t
        op = producer(t.value)
        if op is None or op.name != "linalg.generic":
            return t
        return self.tree_of(op) or t

    # -- rules ---------------------------------------------------------------------------
    def identity(self, n: Node) -> Tree | None:
        a = n.args
        one = [isinstance(x, Const) and x.value == 1.0 for x in a]
        if n.name == "arith.mulf" and any(one):
            self.counts["identity"] += 1
            return a[1] if one[0] else a[0]
        if n.name == "arith.divf" and one[1]:
            self.counts["identity"] += 1
            return a[0]
        zero = [isinstance(x, Const) and x.value == 0.0 for x in a]
        neg = [
            z and isinstance(x, Const) and math.copysign(1.0, x.value) < 0
            for z, x in zip(zero, a, strict=True)
        ]
        unsafe = self.opts.unsafe_math
        if n.name == "arith.addf" and any(zero):
            i = 0 if zero[0] else 1
            if neg[i] or unsafe:
                self.counts["identity" if neg[i] else "identity-signed-zero"] += 1
                return a[1 - i]
        if n.name == "arith.subf" and zero[1] and (not neg[1] or unsafe):
            self.counts["identity" if not neg[1] else "identity-signed-zero"] += 1
            return a[0]
        return None

    def double_negation(self, n: Node) -> Tree | None:
        if n.name != "arith.negf":
            return None
        inner = self.look(n.args[0], self.loops)
        if isinstance(inner, Node) and inner.name == "arith.negf":
            self.counts["double-negation"] += 1
            return inner.args[0]
        return None

    def distributive(self, n: Node) -> Tree | None:
        if n.name not in ("arith.addf", "arith.subf"):
            return None
        x, y = (self.look(t, self.loops) for t in n.args)
        if not (isinstance(x, Node) and isinstance(y, Node) and x.name == y.name):
            return None
        if x.name == "arith.mulf":
            for i in (0, 1):
                for j in (0, 1):
                    common = x.args[i]
                    if common == y.args[j] and self.factor_ok(common, division=False):
                        self.counts["distributive"] += 1
                        rest = Node(n.name, (x.args[1 - i], y.args[1 - j]))
                        return Node("arith.mulf", (common, rest))
        if x.name == "arith.divf" and x.args[1] == y.args[1]:
            if self.factor_ok(x.args[1], division=True):
                self.counts["distributive"] += 1
                return Node("arith.divf", (Node(n.name, (x.args[0], y.args[0])), x.args[1]))
        return None

    def factor_ok(self, factor: Tree, division: bool) -> bool:
        """Default: a finite (for division nonzero) constant factor; any with unsafe-math."""
        if self.opts.unsafe_math:
            return True
        if not isinstance(factor, Const):
            return False
        return math.isfinite(factor.value) and (factor.value != 0.0 or not division)

    def sqrt_product(self, n: Node) -> Tree | None:
        if n.name != "arith.mulf" or not self.opts.unsafe_math:
            return None
        factors = self.flatten_product(n)
        roots = [self.sqrt_arg(f) for f in factors]
        for i in range(len(factors)):
            for j in range(i + 1, len(factors)):
                root = roots[i]
                if root is not None and root == roots[j]:
                    self.counts["sqrt-product"] += 1
                    rest = factors[:i] + [root] + factors[i + 1 : j] + factors[j + 1 :]
                    out = rest[0]
                    for f in rest[1:]:
                        out = Node("arith.mulf", (out, f))
                    return out
        return None

    def flatten_product(self, t: Tree) -> list[Tree]:
        t = self.look(t, self.loops)
        if isinstance(t, Node) and t.name == "arith.mulf":
            return self.flatten_product(t.args[0]) + self.flatten_product(t.args[1])
        return [t]

    def sqrt_arg(self, t: Tree) -> Tree | None:
        """B for a factor that is sqrt(B): a sqrt node, or an input produced by an elementwise
        sqrt generic read through an identity map (any number of uses: it is not absorbed)."""
        if isinstance(t, Node):
            return t.args[0] if t.name == "math.sqrt" else None
        if not isinstance(t, Leaf) or t.dims != tuple(range(self.loops)):
            return None
        op = producer(t.value)
        if op is None or op.name != "linalg.generic":
            return None
        tree = self.tree_of(op)
        return tree.args[0] if isinstance(tree, Node) and tree.name == "math.sqrt" else None

    # -- driving -------------------------------------------------------------------------
    def simplify(self, t: Tree) -> tuple[Tree, bool]:
        if not isinstance(t, Node):
            return t, False
        parts = [self.simplify(a) for a in t.args]
        changed = any(c for _, c in parts)
        t = Node(t.name, tuple(p for p, _ in parts))
        for rule in self.rules:
            out = rule(t)  # a rule that fires counts itself
            if out is not None:
                out, _ = self.simplify(out)
                return out, True
        return t, changed

    def run_generic(self, op: ir.Operation) -> bool:
        tree = self.tree_of(op)
        if not isinstance(tree, Node):
            return False
        self.loops = len(ir.RankedTensorType(op.results[0].type).shape)
        new, changed = self.simplify(tree)
        if not changed:
            return False
        operands = list(op.operands)
        with ir.InsertionPoint(op), op.location:
            result = emit(new, op)
        op.results[0].replace_all_uses_with(result)
        op.erase()
        erase_dead_tree(operands)
        return True

    def match_reduce_prod_exp(self, op: ir.Operation) -> tuple[Leaf, ir.Operation] | None:
        """(A, the init fill) if ``op`` is a product reduction, starting from 1, of exp(A)
        computed by a single-use elementwise generic."""
        kinds = iterator_types(op)
        if "reduction" not in kinds or len(op.operands) != 2 or len(op.results) != 1:
            return None
        ops = body_ops(op)
        args = list(op.regions[0].blocks[0].arguments)
        if len(ops) != 2 or ops[0].name != "arith.mulf" or set(ops[0].operands) != set(args):
            return None
        if ops[1].operands[0] != ops[0].results[0] or args[0] == args[1]:
            return None
        init = producer(op.operands[1])
        if init is None or init.name != "linalg.fill":
            return None
        if self.scalar_const(init.operands[0]) != const(1):
            return None
        x = op.operands[0]
        exp_op = producer(x)
        if exp_op is None or num_uses(x) != 1:
            return None
        tree = self.tree_of(exp_op)
        if not isinstance(tree, Node) or tree.name != "math.exp":
            return None
        a = tree.args[0]
        loops = len(ir.RankedTensorType(x.type).shape)
        if not isinstance(a, Leaf) or a.dims != tuple(range(loops)):
            return None
        return a, init

    def run_reduce_prod_exp(self, op: ir.Operation) -> bool:
        """prod over reduction loops of exp(A) -> exp(sum of A) (unsafe-math only)."""
        found = self.match_reduce_prod_exp(op)
        if found is None:
            return False
        a, init = found
        maps, kinds = indexing_maps(op), iterator_types(op)
        out_ty = ir.RankedTensorType(op.results[0].type)
        elem = out_ty.element_type
        with ir.InsertionPoint(op), op.location:
            zero = arith.ConstantOp(elem, ir.FloatAttr.get(elem, 0.0)).result
            acc = fill(zero, init.operands[1])
            total = generic(
                [a.value], maps, acc, kinds, lambda b: [arith.AddFOp(b[0], b[1]).result]
            )
            ident = ir.AffineMap.get_identity(len(out_ty.shape))
            result = generic(
                [total.results[0]],
                [ident, ident],
                empty(out_ty.shape, elem),
                ["parallel"] * len(out_ty.shape),
                lambda b: [_create("math.exp", [b[0]])],
            )
        operands = list(op.operands)
        op.results[0].replace_all_uses_with(result.results[0])
        op.erase()
        erase_dead_tree(operands)
        self.counts["reduce-prod-exp"] += 1
        return True

    def run(self, module_op: ir.Operation) -> None:
        for _ in range(4):  # a rewrite can expose another one level up
            changed = False
            for op in ops_named(module_op, "linalg.generic"):
                if self.opts.unsafe_math and self.run_reduce_prod_exp(op):
                    changed = True
                elif self.run_generic(op):
                    changed = True
            if not changed:
                return


def _create(name: str, operands: list[ir.Value]) -> ir.Value:
    return ir.Operation.create(name, results=[operands[0].type], operands=operands).results[0]


def emit(tree: Tree, root: ir.Operation) -> ir.Value:
    """A value computing ``tree`` over ``root``'s iteration space: an input itself when the
    tree is just one (same type), else one new elementwise generic."""
    out_ty = ir.RankedTensorType(root.results[0].type)
    loops = len(out_ty.shape)
    if isinstance(tree, Leaf) and tree.dims == tuple(range(loops)) and tree.value.type == out_ty:
        return tree.value
    leaves: list[Leaf] = []
    _collect(tree, leaves)
    elem = out_ty.element_type

    def amap(dims: tuple[int | None, ...]) -> ir.AffineMap:
        exprs = [
            ir.AffineConstantExpr.get(0) if d is None else ir.AffineDimExpr.get(d) for d in dims
        ]
        return ir.AffineMap.get(loops, 0, exprs)

    def body(args: list[ir.Value]) -> list[ir.Value]:
        memo: dict[Tree, ir.Value] = dict(zip(leaves, args[: len(leaves)], strict=True))

        def value(t: Tree) -> ir.Value:
            if t not in memo:
                if isinstance(t, Const):
                    memo[t] = arith.ConstantOp(elem, ir.FloatAttr.get(elem, t.value)).result
                else:
                    assert isinstance(t, Node)  # every leaf is in memo (_collect)
                    memo[t] = _create(t.name, [value(a) for a in t.args])
            return memo[t]

        return [value(tree)]

    maps = [amap(leaf.dims) for leaf in leaves] + [ir.AffineMap.get_identity(loops)]
    op = generic(
        [leaf.value for leaf in leaves], maps, empty(out_ty.shape, elem), ["parallel"] * loops, body
    )
    return op.results[0]


def _collect(t: Tree, out: list[Leaf]) -> None:
    if isinstance(t, Leaf):
        if t not in out:
            out.append(t)
    elif isinstance(t, Node):
        for a in t.args:
            _collect(a, out)


def algebraic_simplify(module_op: ir.Operation, opts: SimplifyOptions | None = None) -> Counter:
    """Apply the rules everywhere; returns how often each fired."""
    with module_op.context:
        simplifier = Simplifier(opts or SimplifyOptions())
        simplifier.run(module_op)
        if simplifier.opts.verbose:
            fired = ", ".join(f"{k} {v}" for k, v in sorted(simplifier.counts.items())) or "nothing"
            print(f"xgen-algebraic-simplify: {fired}", file=sys.stderr)
        return simplifier.counts


@register_pass(
    "xgen-algebraic-simplify",
    "Algebraic rewrites of elementwise generics (identities, distributivity, DNNFusion's table).",
    SimplifyOptions,
)
def _pass(module_op: ir.Operation, opts: SimplifyOptions | None) -> Counter:
    return algebraic_simplify(module_op, opts)
