"""``xgen-gemm-kernels``: dense linear layers -> xgen_mlir's generated GEMM kernel.

A ``linalg.matmul`` with a constant right-hand side (a Linear as torch-mlir emits it: ``x @
transpose(W)`` from a per-column constant start, then its bias add) becomes one IREE dispatch
of a generated C kernel (``codegen/dense_gemm.py``): weights packed in panels at compile
time, the bias and the elementwise ops after the layer that translate to C (GELU in both of
torch-mlir's forms, ReLU, scalar scales) fused into its epilogue.

Which layers: those ``xgen-winograd-convs`` marked (``KERNEL_ATTR = "gemm"``: measured faster
than IREE's code on this host by ``xgen_mlir.tune``, or every one under the target option
``gemm_kernels=true``), or with ``all=true`` every match (the tuner's measurement slices,
lit tests). ``functions`` limits it to some functions. A marked layer the kernel cannot take
(dynamic shapes, non-f32, weights that are not constants) stays with IREE and is counted with
the reason; where the C compiler is missing, marked layers stay with IREE with a warning.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass

from .._mlir import func, ir
from ..codegen import dispatch
from ..codegen.dense_gemm import GemmSpec, generate, pack_weights
from ..codegen.dispatch import EXECUTABLE_ATTR
from ..codegen.toolchain import ToolchainOptions, compile_object
from ..diagnostics import format_location, warn_fallback
from ..irutil import constant_op, find_func, ops_named, splice_functions
from ..target import gemm_tile
from .block_sparse import _epilogue, _matmul_parts, _t
from .consteval import ConstEval
from .generic_util import erase_dead_tree
from .kernel_call import free_symbol
from .kernel_match import NoMatch
from .registry import register_pass

# The attribute xgen-winograd-convs sets on a linear layer this pass is to lower.
KERNEL_ATTR = "xgen.kernel"
GEMM = "gemm"
# Panels per workgroup the tuner measured best for the layer (absent: the option's)
GROUP_ATTR = "xgen.gemm_group"


@dataclass
class GemmKernelOptions(ToolchainOptions):
    vector_bits: int = 512  # the target's vector width (the kernel's register tile)
    l2_bytes: int = 512 * 1024  # per-core L2: the M block's x rows stay in half of it
    kc: int = 256  # k block
    group: int = 0  # panels per workgroup (0: GemmSpec.group's choice)
    all: bool = False  # every matching layer, not only the marked ones
    functions: str = ""  # comma-separated function names to look in; empty: all
    verbose: bool = False


def _function_of(op: ir.Operation) -> str:
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        parent = parent.parent
    return "" if parent is None else ir.StringAttr(parent.attributes["sym_name"]).value


def _wrapper_text(symbol: str, m: int, n: int, k: int, wlen: int) -> str:
    return f"""
func.func private @{symbol}_call(%x: {_t([m, k])}, %w: {_t([wlen])}) -> {_t([m, n])} {{
  %flat = tensor.collapse_shape %x [[0, 1]] : {_t([m, k])} into {_t([m * k])}
  %o = func.call @{symbol}(%flat, %w) : ({_t([m * k])}, {_t([wlen])}) -> {_t([m * n])}
  %r = tensor.expand_shape %o [[0, 1]] output_shape [{m}, {n}] : {_t([m * n])} into {_t([m, n])}
  return %r : {_t([m, n])}
}}
func.func private @{symbol}({_t([m * k])}, {_t([wlen])}) -> {_t([m * n])}
"""


def _lower(module_op: ir.Operation, op: ir.Operation, ev: ConstEval, opts: GemmKernelOptions):
    """Replace ``op`` (and its bias add and epilogue) by a call of a generated kernel;
    returns whether an epilogue was fused. NoMatch: the kernel cannot take it."""
    parts = _matmul_parts(op, ev)
    end: ir.Operation = parts["end"]
    w, bias = parts["w"], parts["bias"]
    n, k = w.shape
    m = ir.RankedTensorType(op.operands[0].type).shape[0]
    act, act_ops = _epilogue(end.results[0], ev)
    rows, n_vectors, lanes = gemm_tile(opts.vector_bits or 128)
    symbol = free_symbol(module_op, "xgen_gemm", 1)
    l2 = opts.l2_bytes if opts.l2_bytes > 0 else 512 * 1024  # 0: not known
    group = ir.IntegerAttr(op.attributes[GROUP_ATTR]).value if GROUP_ATTR in op.attributes else 0
    spec = GemmSpec(
        symbol, m, n, k, lanes, rows, n_vectors, opts.kc, 0, group or opts.group, l2, tuple(act)
    )
    packed = pack_weights(w, bias, spec.nr)
    obj = compile_object(generate(spec), opts.toolchain(), symbol)
    splice_functions(module_op, _wrapper_text(symbol, m, n, k, packed.size))
    decl = find_func(module_op, symbol)
    decl.attributes[EXECUTABLE_ATTR] = ir.StringAttr.get(
        dispatch.executable_text(
            symbol, str(obj), opts.object_format, [m * k, packed.size], m * n, spec.grid, ids=2
        )
    )
    last = act_ops[-1] if act_ops else end
    with ir.InsertionPoint(last), last.location:
        weights = constant_op(packed, "xgen_gemm_weights").result
        call = func.CallOp(
            [last.results[0].type],
            ir.FlatSymbolRefAttr.get(f"{symbol}_call"),
            [op.operands[0], weights],
        )
    last.results[0].replace_all_uses_with(call.results[0])
    for a in reversed(act_ops):
        a.erase()
    old = list(op.operands)
    if end is not op:
        old += [v for v in end.operands if v != op.results[0]]
        end.erase()
    op.erase()
    erase_dead_tree(old)
    return bool(act)


@register_pass(
    "xgen-gemm-kernels",
    "Lower marked (or, with all=true, every) constant-weight f32 linalg.matmul with its bias "
    "and elementwise epilogue to a generated register-blocked GEMM kernel in an IREE dispatch.",
    GemmKernelOptions,
)
def gemm_kernels(module_op: ir.Operation, opts: GemmKernelOptions | None) -> Counter:
    opts = opts or GemmKernelOptions()
    scope = {f for f in opts.functions.split(",") if f}
    counts: Counter[str] = Counter()
    ops = [
        op
        for op in ops_named(module_op, "linalg.matmul")
        if (opts.all or _marked(op)) and (not scope or _function_of(op) in scope)
    ]
    if not ops:
        return counts
    if not opts.toolchain().available():
        warn_fallback(
            f"xgen-gemm-kernels: C compiler '{opts.cc}' not found; {len(ops)} linear layer(s) "
            "stay with IREE's code"
        )
        return Counter({"kept: no C compiler": len(ops)})
    with module_op.context:
        ev = ConstEval(module_op)
        for op in ops:
            where = format_location(op.location)
            try:
                fused = _lower(module_op, op, ev, opts)
            except NoMatch as e:
                for attr in (KERNEL_ATTR, GROUP_ATTR):
                    if attr in op.attributes:
                        del op.attributes[attr]
                counts[f"kept: {e}"] += 1
                if opts.verbose:
                    print(f"xgen-gemm-kernels: {where}: kept: {e}", file=sys.stderr)
                continue
            counts["gemm kernels"] += 1
            if fused:
                counts["of them with their epilogues"] += 1
            if opts.verbose:
                print(f"xgen-gemm-kernels: {where}: generated kernel", file=sys.stderr)
    return counts


def _marked(op: ir.Operation) -> bool:
    return KERNEL_ATTR in op.attributes and ir.StringAttr(op.attributes[KERNEL_ATTR]).value == GEMM
