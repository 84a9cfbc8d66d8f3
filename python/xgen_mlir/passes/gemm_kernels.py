"""``xgen-gemm-kernels``: dense linear layers -> xgen_mlir's generated GEMM kernel.

A ``linalg.matmul`` with a constant right-hand side (a Linear as torch-mlir emits it: ``x @
transpose(W)`` from a per-column constant start, then its bias add), or a 1x1 stride-1 conv
with constant weights (NHWC: its pixels are the rows; NCHW: transposed to NHWC and back,
which xgen-cancel-reshapes cannot remove this late) becomes one IREE dispatch
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
from typing import Any

import numpy as np

from .._mlir import func, ir, tensor
from ..codegen import dispatch
from ..codegen.dense_gemm import GemmSpec, generate, pack_weights
from ..codegen.dispatch import EXECUTABLE_ATTR
from ..codegen.toolchain import ToolchainOptions, compile_object
from ..diagnostics import format_location, warn_fallback
from ..irutil import constant_op, find_func, function_of, ops_named, splice_functions
from ..target import gemm_tile
from .block_sparse import _conv_parts, _epilogue, _matmul_parts, _t
from .consteval import ConstEval
from .generic_util import erase_dead_tree, transpose
from .kernel_call import free_symbol
from .kernel_match import NoMatch
from .registry import register_pass

# The attribute xgen-winograd-convs sets on a linear layer this pass is to lower.
KERNEL_ATTR = "xgen.kernel"
GEMM = "gemm"
# Panels per workgroup the tuner measured best for the layer (absent: the option's)
GROUP_ATTR = "xgen.gemm_group"
NCHW_CONV = "linalg.conv_2d_nchw_fchw"
NHWC_CONV = "linalg.conv_2d_nhwc_hwcf"


@dataclass
class GemmKernelOptions(ToolchainOptions):
    vector_bits: int = 512  # the target's vector width (the kernel's register tile)
    l2_bytes: int = 512 * 1024  # per-core L2: the M block's x rows stay in half of it
    kc: int = 256  # k block
    group: int = 0  # panels per workgroup (0: GemmSpec.group's choice)
    all: bool = False  # every matching layer, not only the marked ones
    functions: str = ""  # comma-separated function names to look in; empty: all
    verbose: bool = False


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


def gemm_parts(op: ir.Operation, ev: ConstEval) -> dict[str, Any]:
    """What the kernel computes ``op`` from (input, weights [N, K], bias, the op its result
    leaves), or NoMatch with why it cannot."""
    if op.name == "linalg.matmul":
        return _matmul_parts(op, ev)
    if op.name in (NHWC_CONV, NCHW_CONV):
        return _conv_parts(op, ev)
    raise NoMatch(f"{op.name} is not a linear layer or a 1x1 conv")


def _rows(x: ir.Value, nchw: bool) -> ir.Value:
    """A conv input as rows of pixels [N*H*W, C] (NCHW: transposed to NHWC first)."""
    if nchw:
        x = transpose(x, [0, 2, 3, 1])
    shape = list(ir.RankedTensorType(x.type).shape)
    ty = ir.RankedTensorType.get([int(np.prod(shape[:3])), shape[3]], ir.F32Type.get())
    return tensor.CollapseShapeOp(ty, x, _reassociation()).result


def _image(y: ir.Value, out: list[int], nchw: bool) -> ir.Value:
    """Rows of pixels [N*H*W, F] back to the conv's output layout ``out``."""
    nhwc = [out[0], out[2], out[3], out[1]] if nchw else out
    ty = ir.RankedTensorType.get(nhwc, ir.F32Type.get())
    y = tensor.ExpandShapeOp(ty, y, _reassociation(), [], nhwc).result
    return transpose(y, [0, 3, 1, 2]) if nchw else y


def _reassociation() -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    groups = [[0, 1, 2], [3]]
    return ir.ArrayAttr.get(
        [ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in g]) for g in groups]
    )


def _lower(module_op: ir.Operation, op: ir.Operation, ev: ConstEval, opts: GemmKernelOptions):
    """Replace ``op`` (and its bias add and epilogue) by a call of a generated kernel;
    returns whether an epilogue was fused. NoMatch: the kernel cannot take it."""
    parts = gemm_parts(op, ev)
    end: ir.Operation = parts["end"]
    w, bias = parts["w"], parts["bias"]
    n, k = w.shape
    conv = op.name != "linalg.matmul"
    shape = list(ir.RankedTensorType(op.operands[0].type).shape)
    m = int(np.prod(shape)) // k if conv else shape[0]
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
        x = _rows(parts["x"], op.name == NCHW_CONV) if conv else parts["x"]
        call = func.CallOp(
            [ir.RankedTensorType.get([m, n], ir.F32Type.get())],
            ir.FlatSymbolRefAttr.get(f"{symbol}_call"),
            [x, weights],
        )
        result = call.results[0]
        if conv:
            out = list(ir.RankedTensorType(last.results[0].type).shape)
            result = _image(result, out, op.name == NCHW_CONV)
    last.results[0].replace_all_uses_with(result)
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
        for op in ops_named(module_op, "linalg.matmul", NCHW_CONV, NHWC_CONV)
        if (opts.all or _marked(op)) and (not scope or function_of(op) in scope)
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
