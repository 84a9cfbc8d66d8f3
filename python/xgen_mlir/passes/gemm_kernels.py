"""``xgen-gemm-kernels``: dense linear layers -> xgen_mlir's generated GEMM kernel.

A ``linalg.matmul`` with a constant right-hand side (a Linear as torch-mlir emits it: ``x @
transpose(W)`` from a per-column constant start, then its bias add), or a 1x1 stride-1 conv
with constant weights (NHWC: its pixels are the rows; NCHW: transposed to NHWC and back,
which xgen-cancel-reshapes cannot remove this late) becomes one IREE dispatch
of a generated C kernel (``codegen/dense_gemm.py``): weights packed in panels at compile
time, the bias and the elementwise ops after the layer that translate to C fused into its
epilogue (``epilogue_c.py``: GELU in both of torch-mlir's forms, ReLU, scalar and
per-channel scales and shifts, a residual add).

A ``linalg.batch_matmul`` with a constant right-hand side of one matrix per batch (Winograd's
GEMM, ``[a*a, tiles, C] x [a*a, C, F]``) becomes one dispatch of the same kernel over a third
workgroup id, when marked (never under ``all``: that is for linear layers).

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

from .._mlir import ir
from ..codegen.dense_gemm import GemmSpec, generate, pack_weights
from ..codegen.toolchain import ToolchainOptions, compile_object
from ..diagnostics import format_location, warn_fallback
from ..irutil import function_of, ops_named
from ..target import gemm_tile, host_threads
from .consteval import ConstEval
from .epilogue_c import Epilogue, Operands, epilogue
from .generic_util import has_default_maps, transpose
from .kernel_call import free_symbol, install_kernel
from .kernel_match import NoMatch
from .linear_parts import conv_parts, matmul_parts
from .registry import register_pass

# The attribute xgen-winograd-convs sets on a linear layer this pass is to lower.
KERNEL_ATTR = "xgen.kernel"
GEMM = "gemm"
# Panels per workgroup the tuner measured best for the layer (absent: the option's)
GROUP_ATTR = "xgen.gemm_group"
NCHW_CONV = "linalg.conv_2d_nchw_fchw"
NHWC_CONV = "linalg.conv_2d_nhwc_hwcf"
BATCH_MATMUL = "linalg.batch_matmul"


@dataclass
class GemmKernelOptions(ToolchainOptions):
    vector_bits: int = 512  # the target's vector width (the kernel's register tile)
    l2_bytes: int = 512 * 1024  # per-core L2: the M block's x rows stay in half of it
    kc: int = 256  # k block
    group: int = 0  # panels per workgroup (0: GemmSpec.group's choice)
    threads: int = 0  # the threads the module runs on (0: this host's)
    all: bool = False  # every matching layer, not only the marked ones
    functions: str = ""  # comma-separated function names to look in; empty: all
    verbose: bool = False


def gemm_parts(op: ir.Operation, ev: ConstEval) -> dict[str, Any]:
    """What the kernel computes ``op`` from (input, weights [N, K], bias, the op its result
    leaves), or NoMatch with why it cannot."""
    if op.name == "linalg.matmul":
        return matmul_parts(op, ev)
    if op.name in (NHWC_CONV, NCHW_CONV):
        return conv_parts(op, ev)
    if op.name == BATCH_MATMUL:
        return _batch_parts(op, ev)
    raise NoMatch(f"{op.name} is not a linear layer or a 1x1 conv")


def _batch_parts(op: ir.Operation, ev: ConstEval) -> dict[str, Any]:
    """A batched GEMM with one constant f32 matrix per batch on the right, [B, K, N], and a
    zero accumulator: its input, weights [B, N, K] and a zero bias."""
    ty = ir.RankedTensorType(op.results[0].type)
    lhs = ir.RankedTensorType(op.operands[0].type)
    if not (ty.has_static_shape and lhs.has_static_shape):
        raise NoMatch("dynamic shape (the kernels take static shapes)")
    if str(ty.element_type) != "f32" or str(lhs.element_type) != "f32":
        raise NoMatch("not f32 (the kernels compute f32 only)")
    if not has_default_maps(op):
        raise NoMatch("a batched matmul with transposing or broadcasting maps")
    rhs = ev.value(op.operands[1])
    if rhs is None or rhs.dtype != np.float32 or rhs.ndim != 3:
        raise NoMatch("the right-hand side is not a constant f32 matrix per batch")
    init = ev.per_channel_init(op.operands[2], 2)
    if init is None or init.any():
        raise NoMatch("the accumulator is not zero")
    w = np.ascontiguousarray(rhs.transpose(0, 2, 1))
    return {"x": op.operands[0], "w": w, "bias": init, "end": op}


def _lower(
    module_op: ir.Operation, op: ir.Operation, ev: ConstEval, opts: GemmKernelOptions
) -> Epilogue:
    """Replace ``op`` (and its bias add and epilogue) by a call of a generated kernel;
    returns the epilogue it fused. NoMatch: the kernel cannot take it."""
    parts = gemm_parts(op, ev)
    end: ir.Operation = parts["end"]
    w, bias = parts["w"], parts["bias"]
    batched = op.name == BATCH_MATMUL
    batch = w.shape[0] if batched else 1
    n, k = w.shape[-2:]
    conv = op.name in (NCHW_CONV, NHWC_CONV)
    nchw = op.name == NCHW_CONV
    shape = list(ir.RankedTensorType(op.operands[0].type).shape)
    m = int(np.prod(shape)) // k if conv else shape[-2]
    # the kernel's columns are the output's channels: the last dim, but NCHW's dim 1
    epi = (
        Epilogue()
        if batched
        else epilogue(end.results[0], ev, Operands(op, column_dim=1 if nchw else -1))
    )
    rows, n_vectors, lanes = gemm_tile(opts.vector_bits or 128)
    symbol = free_symbol(module_op, "xgen_gemm", 1)
    l2 = opts.l2_bytes if opts.l2_bytes > 0 else 512 * 1024  # 0: not known
    group = ir.IntegerAttr(op.attributes[GROUP_ATTR]).value if GROUP_ATTR in op.attributes else 0
    spec = GemmSpec(
        symbol, m, n, k, lanes, rows, n_vectors, opts.kc, 0, group or opts.group, l2,
        tuple(epi.lines), len(epi.columns), len(epi.tensors), batch,
        opts.threads or host_threads(),
    )  # fmt: skip
    packed = (
        np.concatenate([pack_weights(wb, bias, spec.nr) for wb in w])
        if batched
        else pack_weights(w, bias, spec.nr, epi.columns)
    )
    obj = compile_object(generate(spec), opts.toolchain(), symbol)
    last = epi.ops[-1] if epi.ops else end
    out_type = ir.RankedTensorType(last.results[0].type)
    x, perm = parts["x"], None
    if nchw:  # rows of pixels in, NHWC out, transposed back to NCHW
        with ir.InsertionPoint(last), last.location:
            x = transpose(x, [0, 2, 3, 1])
            b, f, h, wd = out_type.shape
            out_type = ir.RankedTensorType.get([b, h, wd, f], out_type.element_type)
        perm = [0, 3, 1, 2]
    replaced = [op, *([end] if end is not op else []), *epi.ops]
    install_kernel(
        module_op,
        symbol,
        str(obj),
        opts.object_format,
        [x, packed, *epi.tensors],
        out_type,
        spec.grid,
        replaced,
        last,
        perm,
        "xgen_gemm_weights",
        ids=spec.ids,
    )
    return epi


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
        for op in ops_named(module_op, "linalg.matmul", NCHW_CONV, NHWC_CONV, BATCH_MATMUL)
        if (_marked(op) or (opts.all and op.name != BATCH_MATMUL))
        and (not scope or function_of(op) in scope)
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
            if fused.columns:
                counts["epilogues with per-channel constants"] += 1
            if fused.tensors:
                counts["epilogues reading a tensor (a residual)"] += 1
            if opts.verbose:
                print(f"xgen-gemm-kernels: {where}: generated kernel", file=sys.stderr)
    return counts


def _marked(op: ir.Operation) -> bool:
    return KERNEL_ATTR in op.attributes and ir.StringAttr(op.attributes[KERNEL_ATTR]).value == GEMM
