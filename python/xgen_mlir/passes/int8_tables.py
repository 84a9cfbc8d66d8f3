"""xgen-int8-tables: an elementwise function of one int8 tensor, computed through floats with a
transcendental in it (a quantized SiLU, sigmoid, tanh, GELU), becomes a 256-entry table
lookup.

Why: a QDQ model computes an activation between two quantized tensors as floats: the int8
values dequantized, the function (SiLU is ``x * sigmoid(x)``, itself quantized and
dequantized again in between), the result quantized. IREE fuses that into one dispatch, but
each element then costs an ``exp``, three or four divisions and the roundings of two
quantizes. EfficientNet-B0 static int8 (Intel Xeon with VNNI): its SiLU chains were 41
dispatches, 3.7 of 16.6 ms; the largest, over 1.2M elements, 0.9 ms. Whatever the chain
computes, its output depends on the one int8 input alone: 256 possible inputs, so 256
possible outputs, which this pass computes at compile time (``ConstEval.eval_body``, op by
op in f32 as the program does) and reads at run time (``tensor.extract`` of a constant
table at ``x + 128``), one load per element.

What it matches: an elementwise ``linalg.generic`` writing int8 or f32 (the root) whose
operands, through elementwise generics of the same shape read whole (identity maps), reach
exactly one tensor that is not a constant: an int8 tensor of that shape; every other operand
a constant (a scalar or a 0-d tensor, or a broadcast constant the evaluator reads); each op
of the chain used only inside it (so the whole chain goes away); and at least one
transcendental (``math.exp``, ``tanh``, ``erf``, ``log``, ``powf``...) in it: a chain of
adds, products and roundings costs about what a lookup does. Must not fire where a second
tensor comes in (a residual add, a squeeze-excite scale), where an op of the chain is also
read elsewhere, where the body holds anything the evaluator does not compute, or without a
transcendental.

Where the pass has a toolchain (``kernel=true``: the cpu target), the lookup is a generated
kernel (``codegen/table_lookup.py``: ``vpermi2b`` on AVX512-VBMI for an int8 table, 64
elements per two table reads; a gather for an f32 one) instead of IREE's code, which reads the
table one element at a time, in every op an f32 lookup is fused into (EfficientNet-B0 static
int8 on an Intel Xeon: int8 tables 14.07 -> 10.96 ms, f32 ones then 10.52 -> 9.75). A chain
writing f32 whose int8 quantize is inside it (an activation's QDQ pair) is cut there: the
kernel writes the int8, and the dequantize is left to IREE to fuse into the float readers.

Numerics: the table holds the chain's values computed in f32 by numpy, whose ``exp`` and
division round like any correctly rounded libm; IREE's polynomial ``exp`` may differ in the
last bit, which can move a value within an ulp of a rounding boundary to the other integer
(within one output step; as ONNX Runtime, which computes the same chain with its own ``exp``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from .._mlir import arith, ir, tensor
from ..codegen import table_lookup
from ..codegen.toolchain import ToolchainOptions
from ..irutil import ops_named
from .consteval import WEIGHT_ELEMENTS, ConstEval
from .generic_util import (
    TRANSCENDENTAL,
    body_ops,
    empty,
    erase_dead_tree,
    generic,
    indexing_maps,
    is_elementwise,
    is_identity,
    num_inputs,
    producer,
    user_ops,
)
from .kernel_call import install_kernel, shared_object
from .registry import register_pass

TABLE_ELEMENTS = {"i8": "i8", "f32": "f32"}  # the roots' element types taken


@dataclass
class Int8TablesOptions(ToolchainOptions):
    kernel: bool = False  # each lookup as a generated kernel (a C toolchain for the target)


@dataclass
class _Chain:
    ops: list[ir.Operation]  # in program order, the root last
    source: ir.Value  # the one int8 tensor


def _element(value: ir.Value) -> str:
    return str(ir.RankedTensorType(value.type).element_type)


def _chain_of(root: ir.Operation, ev: ConstEval) -> _Chain | str:
    """The elementwise chain ``root`` ends, back to its one int8 source, or why not."""
    shape = ir.RankedTensorType(root.results[0].type).shape
    ops: dict[ir.Operation, None] = {}
    sources: set[ir.Value] = set()
    todo = [root]
    while todo:
        op = todo.pop()
        if op in ops:
            continue
        if not is_elementwise(op):
            return "a non-elementwise op"
        ops[op] = None
        maps = indexing_maps(op)
        for i in range(num_inputs(op)):
            v = op.operands[i]
            if ev.value(v) is not None:
                continue  # a constant
            if not is_identity(maps[i]) or ir.RankedTensorType(v.type).shape != shape:
                return "a tensor read through a broadcast or of another shape"
            made = producer(v)
            if made is not None and made.name == "linalg.generic" and is_elementwise(made):
                todo.append(made)
            else:
                sources.add(v)
    if len(sources) != 1:
        return f"{len(sources)} tensors in, not one"
    (source,) = sources
    if _element(source) != "i8":
        return f"a {_element(source)} tensor in, not int8"
    for op in ops:
        if op != root and any(u not in ops for u in user_ops(op.results[0])):
            return "an op of the chain read elsewhere"
    if not any(o.name in TRANSCENDENTAL for op in ops for o in body_ops(op)):
        return "no transcendental"
    block_order = {o: i for i, o in enumerate(root.block.operations)}
    ordered = sorted(ops, key=lambda o: block_order[o])
    return _Chain(ordered, source)


def _table(chain: _Chain, ev: ConstEval) -> np.ndarray | None:
    """The chain's output for each int8 input, -128 first; None where the evaluator cannot
    compute a body."""
    values: dict[ir.Value, np.ndarray] = {chain.source: np.arange(-128, 128, dtype=np.int8)}
    for op in chain.ops:
        args = []
        for i in range(num_inputs(op)):
            v = op.operands[i]
            if v in values:
                args.append(values[v])
                continue
            const = ev.value(v)
            if const is None or const.size != 1:
                return None  # (a constant per element: not one value per input)
            args.append(const.reshape(()))
        out = ev.eval_body(op, args)
        if out is None:
            return None
        values[op.results[0]] = np.broadcast_to(out, (256,))
    result = values[chain.ops[-1].results[0]]
    want = np.int8 if _element(chain.ops[-1].results[0]) == "i8" else np.float32
    return np.ascontiguousarray(result.astype(want))


def _lookup(root: ir.Operation, source: ir.Value, table: np.ndarray) -> ir.Value:
    """A generic reading ``table[source + 128]`` for each element, in ``root``'s place."""
    out_ty = ir.RankedTensorType(root.results[0].type)
    rank = len(out_ty.shape)
    with ir.InsertionPoint(root), root.location:
        elem = out_ty.element_type
        table_ty = ir.RankedTensorType.get([256], elem)
        attr = ir.DenseElementsAttr.get(table, type=table_ty)
        table_value = arith.ConstantOp(table_ty, attr).result
        i32 = ir.IntegerType.get_signless(32)

        def body(args: list[ir.Value]) -> list[ir.Value]:
            wide = arith.ExtSIOp(i32, args[0]).result
            offset = arith.ConstantOp(i32, ir.IntegerAttr.get(i32, 128)).result
            at = arith.IndexCastOp(ir.IndexType.get(), arith.AddIOp(wide, offset).result)
            return [tensor.ExtractOp(table_value, [at.result]).result]

        made = generic(
            [source],
            [ir.AffineMap.get_identity(rank)] * 2,
            empty(list(out_ty.shape), elem),
            ["parallel"] * rank,
            body,
        )
    return made.results[0]


def _kernel_lookup(
    module_op: ir.Operation,
    chain: _Chain,
    table: np.ndarray,
    opts: Int8TablesOptions,
    made: dict[tuple[str, str], tuple[str, str]],
) -> None:
    """The generated kernel reading ``table`` in the chain's place: one kernel per source and
    result type (the table is an operand), ``made`` the ones installed so far."""
    root = chain.ops[-1]
    out = _element(root.results[0])
    key = (str(chain.source.type), str(root.results[0].type))
    symbol, obj, _ = shared_object(
        module_op,
        made,
        key,
        "xgen_table",
        lambda name: table_lookup.generate(name, out),
        opts.toolchain(),
    )
    n = int(np.prod(ir.RankedTensorType(root.results[0].type).shape))
    install_kernel(
        module_op,
        symbol,
        obj,
        opts.object_format,
        [chain.source, table],
        root.results[0].type,
        (table_lookup.workgroups(n), 1, 1),
        chain.ops,
        root,
        weights_name="xgen_table",
        shared=True,
    )


def _cut_at_int8(chains: list[_Chain]) -> list[_Chain]:
    """Without the chains writing f32 that pass through the int8 root of another (a QDQ
    activation's quantize, then its dequantize): that int8 root becomes a kernel, and the
    dequantize after it, plain arithmetic, stays for IREE to fuse into the ops reading the
    floats. Tabled whole, the f32 lookup would be fused there instead, read element by
    element in each (EfficientNet-B0's squeeze-excite pool and scale both read its SiLU)."""
    int8_roots = {c.ops[-1] for c in chains if _element(c.ops[-1].results[0]) == "i8"}
    return [
        c
        for c in chains
        if _element(c.ops[-1].results[0]) == "i8" or not any(op in int8_roots for op in c.ops)
    ]


def int8_tables(module_op: ir.Operation, opts: Int8TablesOptions | None = None) -> Counter:
    opts = opts or Int8TablesOptions()
    counts: Counter[str] = Counter()
    with module_op.context:
        ev = ConstEval(module_op, WEIGHT_ELEMENTS)
        chains: list[_Chain] = []
        for root in ops_named(module_op, "linalg.generic"):
            if len(root.results) != 1 or not is_elementwise(root):
                continue
            if _element(root.results[0]) not in TABLE_ELEMENTS:
                continue
            chain = _chain_of(root, ev)
            if not isinstance(chain, str):
                chains.append(chain)
        if opts.kernel:
            chains = _cut_at_int8(chains)
        # a chain inside a longer one (SiLU's inner quantize, which writes f32) goes with it
        inner = {op for c in chains for op in c.ops[:-1]}
        made: dict[tuple[str, str], tuple[str, str]] = {}
        for chain in chains:
            root = chain.ops[-1]
            if root in inner:
                continue
            table = _table(chain, ev)
            if table is None:
                counts["not a table: a body the evaluator does not compute"] += 1
                continue
            out = _element(root.results[0])
            if opts.kernel:
                _kernel_lookup(module_op, chain, table, opts, made)
                counts[f"int8 -> {out} chains as table kernels"] += 1
                continue
            looked_up = _lookup(root, chain.source, table)
            root.results[0].replace_all_uses_with(looked_up)
            operands = list(root.operands)
            root.erase()
            erase_dead_tree(operands)
            counts[f"int8 -> {out} chains as tables"] += 1
    return counts


@register_pass(
    "xgen-int8-tables",
    "An elementwise function of one int8 tensor computed through floats with a "
    "transcendental (a quantized SiLU, sigmoid, GELU) -> a 256-entry table lookup.",
    Int8TablesOptions,
)
def _pass(module_op: ir.Operation, opts: Int8TablesOptions | None) -> Counter:
    return int8_tables(module_op, opts)
