"""``xgen-integer-gemm-kernels``: int8 linear layers -> an exact 16-bit multiply-add kernel.

A ``linalg.quantized_matmul`` with a constant right-hand side, or a
``linalg.quantized_batch_matmul`` whose batches all multiply by one constant (torch-mlir's
int8 Linear), with i8 operands, i32 scalar zero points (the input's may be computed at run
time: dynamic quantization) and a constant per-column accumulator start (zeros, or a bias
quantized to i32), becomes:

- ``x16 = extsi(x) - zx`` as int16, one elementwise op per input and zero point (Q, K and V
  read one conversion; IREE fuses it into the op that quantizes ``x``), padded with a zero
  input where K is odd;
- one IREE dispatch of the generated kernel (``codegen/int16_gemm.py``) on ``x16``, the
  weights less their zero point packed as 16-bit pairs, and the start. Where the op's one
  user converts its i32 result to f32 (the dequantize's ``sitofp``), the kernel also takes
  that and the elementwise ops after it that translate to C (``epilogue_c.py``: the scale,
  computed at run time from the input's, the bias, GELU, a residual add): its f32 output
  replaces the last of them, so the dequantized output never goes through memory as i32 and
  needs no dispatch of its own. Otherwise its i32 result replaces the op's.

Why: on a CPU without an exact int8 dot product (AVX2: no VNNI) the alternatives are the f32
contraction of the same integers (``xgen-integer-in-float``, f32's rate) or IREE's integer
matmul (widened to int16, slower than f32 there); ``vpmaddwd`` does twice f32's multiply-adds
per instruction, exactly. Measured in docs/precision.md.

It runs before ``xgen-integer-in-float``, which then sees only what this pass left. When
(``mode``, the cpu target's option ``integer_contractions``): ``kernel`` every match; any
other mode none. It must not fire on: f32 matmuls, integer convs (and 1x1 convs as torch-mlir
writes them, batch matmuls over an image's collapsed rows: a conv net's int8 1x1 convs in f32
join its fused kernels and GEMM epilogues, which take the requantize steps between layers;
MobileNetV2 int8 ran 9.8 ms that way and 14.6 with them here), operands that are not i8,
weights that are not constants (or differ between batches), a zero point of the weights that
is not a constant, an accumulator that is not a constant per column, dynamic shapes, a target
without 256-bit vectors, weights more than 255 from their zero point, or block-pruned weights
that ``xgen-raise-block-linear``'s rule (``block_kernels``, ``max_density``) would run
sparse: those stay integer contractions for ``xgen-integer-in-float``, whose f32 form the
block-sparse kernel takes (under ``block_kernels=tuned`` the rule decides here, not the
records).
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass
from math import prod

import numpy as np

from .._mlir import arith, ir, tensor
from ..codegen.dense_gemm import GemmSpec
from ..codegen.int16_gemm import MAX_OPERAND, generate, pack_weights
from ..codegen.toolchain import ToolchainOptions, compile_object
from ..diagnostics import format_location, warn_fallback
from ..irutil import function_of, ops_named
from ..target import INT16_KERNEL_VECTOR_BITS, gemm_tile, host_threads, simd_lanes
from .block_sparse import best_block
from .consteval import WEIGHT_ELEMENTS, ConstEval
from .epilogue_c import Epilogue, Operands, epilogue, sums_to_f32
from .generic_util import (
    empty,
    generic,
    i64_array,
    is_identity,
    mixed_sizes,
    producer,
    zero_pad,
)
from .integer_in_float import MODES
from .kernel_call import free_symbol, install_kernel
from .kernel_match import NoMatch
from .registry import PassFailure, register_pass

OPS = ("linalg.quantized_matmul", "linalg.quantized_batch_matmul")


@dataclass
class IntegerGemmKernelOptions(ToolchainOptions):
    mode: str = "kernel"  # the target option integer_contractions, resolved: kernel fires
    # the target's block_kernels and block_max_density: a block-pruned layer that
    # xgen-raise-block-linear's rule would raise is left to it (as an f32 contraction)
    block_kernels: str = "false"
    max_density: float = 0.6
    vector_bits: int = 256  # the target's vector width: 256 (AVX2) or 512 (AVX-512BW)
    l2_bytes: int = 512 * 1024  # per-core L2: the M block's x rows stay in half of it
    kc: int = 256  # k block (even)
    threads: int = 0  # the threads the module runs on (0: this host's)
    functions: str = ""  # comma-separated function names to look in; empty: all
    verbose: bool = False


@dataclass
class _Parts:
    x: ir.Value  # [..., M, K] i8
    zx: ir.Value  # i32 scalar
    w: np.ndarray  # [N, K] int32, less the weights' zero point
    start: np.ndarray  # [N] int64, the accumulator's start


def _parts(op: ir.Operation, ev: ConstEval, opts: IntegerGemmKernelOptions) -> _Parts:
    """What the kernel computes ``op`` from, or NoMatch with why it cannot."""
    x, w, zx, zw, acc = op.operands[:5]
    bits = opts.vector_bits
    types = [ir.RankedTensorType(v.type) for v in (x, w, acc)]
    if any(not t.has_static_shape for t in types):
        raise NoMatch("dynamic shape (the kernels take static shapes)")
    if any(str(t.element_type) != "i8" for t in types[:2]):
        raise NoMatch("operands are not i8")
    if str(types[2].element_type) != "i32" or str(zx.type) != "i32" or str(zw.type) != "i32":
        raise NoMatch("the zero points or the result are not i32")
    if _image_rows(x):
        raise NoMatch(
            "a 1x1 conv over image rows (its f32 form joins the conv net's fused kernels)"
        )
    weights, zero = ev.value(w), ev.value(zw)
    if weights is None or zero is None:
        raise NoMatch("the weights or their zero point are not constant")
    if weights.ndim == 3:  # one [K, N] per batch: a Linear only if every batch has the same
        if not np.all(weights == weights[:1]):
            raise NoMatch("the batches multiply by different weights")
        weights = weights[0]
    shifted = weights.T.astype(np.int32) - np.int32(zero)  # int32: GPT-2's head is 38.6 M
    if np.abs(shifted).max(initial=0) > MAX_OPERAND:
        raise NoMatch(f"weights more than {MAX_OPERAND} from their zero point")
    rank = len(types[2].shape)
    if opts.block_kernels != "false" and prod(types[2].shape[:-1]) >= simd_lanes(bits):
        block, density = best_block(shifted, bits)
        if density <= opts.max_density:
            raise NoMatch(
                f"block-pruned ({block[0]}x{block[1]} blocks keep {density:.2f}): the "
                "block-sparse kernel takes its f32 form"
            )
    start = ev.per_channel_init(acc, rank - 1)
    if start is None:
        raise NoMatch("the accumulator is not a constant per column")
    return _Parts(x, zx, shifted, np.asarray(start, np.float64).astype(np.int64))


def _dequantize_epilogue(
    op: ir.Operation, ev: ConstEval
) -> tuple[Epilogue, list[ir.Operation], tuple[int, ...]]:
    """The f32 epilogue the kernel can take after ``op``: its result's one user converting it
    to f32 (``sitofp``, an elementwise generic of nothing else) and the ops after that which
    ``epilogue_c`` translates, with the ops they replace and the indices of the tensors that
    hold one row (a dequantize scale: the input's scale times each column's, computed at run
    time). An empty epilogue where there is none, or where a tensor is read otherwise than
    whole or as one row."""
    none: tuple[Epilogue, list[ir.Operation], tuple[int, ...]] = (Epilogue(), [], ())
    conv = sums_to_f32(op)
    if conv is None:
        return none
    epi = epilogue(conv.results[0], ev, Operands(op, broadcast=True))
    if not epi:
        return none
    rows: list[int] = []
    for i, (t, amap) in enumerate(zip(epi.tensors, epi.tensor_maps, strict=True)):
        ty = ir.RankedTensorType(t.type)
        if str(ty.element_type) != "f32":
            return none
        if prod(ty.shape[:-1]) == 1:
            rows.append(i)
        elif not is_identity(amap):
            return none
    return epi, [conv, *epi.ops], tuple(rows)


def _image_rows(x: ir.Value) -> bool:
    """Whether ``x`` is an image's pixels collapsed into rows (torch-mlir's 1x1 conv as a
    batch matmul: NHWC [1, H, W, C] -> [H, W, C]), not a Linear layer's tokens."""
    op = producer(x)
    return (
        op is not None
        and op.name == "tensor.collapse_shape"
        and len(ir.RankedTensorType(op.operands[0].type).shape) == 4
    )


def _as_int16(x: ir.Value, zx: ir.Value, k_even: int) -> ir.Value:
    """``extsi(x) - zx`` as int16 rows [M, K] (all leading dims collapsed), a zero input
    appended where K is odd (``k_even`` = K + 1)."""
    shape = list(ir.RankedTensorType(x.type).shape)
    i16, i32 = ir.IntegerType.get_signless(16), ir.IntegerType.get_signless(32)
    if len(shape) != 2:
        i8 = ir.RankedTensorType(x.type).element_type
        rows = ir.RankedTensorType.get([prod(shape[:-1]), shape[-1]], i8)
        groups = [i64_array(list(range(len(shape) - 1))), i64_array([len(shape) - 1])]
        x = tensor.CollapseShapeOp(rows, x, ir.ArrayAttr.get(groups)).result

    def body(args: list[ir.Value]) -> list[ir.Value]:
        wide = arith.ExtSIOp(i32, args[0]).result
        return [arith.TruncIOp(i16, arith.SubIOp(wide, zx).result).result]

    identity = ir.AffineMap.get_identity(2)
    init = empty(mixed_sizes(x, range(2)), i16)
    out = generic([x], [identity, identity], init, ["parallel"] * 2, body).results[0]
    k = ir.RankedTensorType(x.type).shape[1]
    return zero_pad(out, [0, 0], [0, k_even - k])


def _lower(
    module_op: ir.Operation,
    op: ir.Operation,
    ev: ConstEval,
    opts: IntegerGemmKernelOptions,
    converted: dict[tuple, ir.Value],
) -> Epilogue:
    """Replace ``op`` (with the dequantize epilogue it can take) by the kernel's call."""
    parts = _parts(op, ev, opts)
    n, k = parts.w.shape
    k_even = k + k % 2
    w = np.pad(parts.w, [(0, 0), (0, k_even - k)])
    m = prod(ir.RankedTensorType(op.results[0].type).shape[:-1])
    epi, fused, one_row = _dequantize_epilogue(op, ev)
    last = fused[-1] if fused else op
    out_type = ir.RankedTensorType(last.results[0].type)
    rows, n_vectors, lanes = gemm_tile(opts.vector_bits)
    symbol = free_symbol(module_op, "xgen_igemm", 1)
    l2 = opts.l2_bytes if opts.l2_bytes > 0 else 512 * 1024
    spec = GemmSpec(
        symbol, m, n, k_even, lanes, rows, n_vectors, opts.kc + opts.kc % 2, 0, 0, l2,
        tuple(epi.lines), len(epi.columns), len(epi.tensors),
        workers=opts.threads or host_threads(),
    )  # fmt: skip
    weights, start = pack_weights(w, parts.start, spec.nr, epi.columns)
    obj = compile_object(generate(spec, one_row), opts.toolchain(), symbol)
    key = (parts.x, parts.zx)
    with ir.InsertionPoint(op), op.location:
        x16 = converted.get(key)
        if x16 is None:
            x16 = converted[key] = _as_int16(parts.x, parts.zx, k_even)
    install_kernel(
        module_op,
        symbol,
        str(obj),
        opts.object_format,
        [x16, weights, start, *epi.tensors],
        out_type,
        spec.grid,
        [op, *fused],
        last,
        weights_name="xgen_igemm_weights",
        ids=spec.ids,
    )
    return epi


@register_pass(
    "xgen-integer-gemm-kernels",
    "Lower int8 linear layers (quantized matmuls by constant weights) to a generated exact "
    "16-bit multiply-add kernel (vpmaddwd) in an IREE dispatch.",
    IntegerGemmKernelOptions,
)
def integer_gemm_kernels(module_op: ir.Operation, opts: IntegerGemmKernelOptions | None) -> Counter:
    opts = opts or IntegerGemmKernelOptions()
    if opts.mode not in MODES:
        raise PassFailure(f"mode={opts.mode!r} is not one of {', '.join(MODES)}")
    scope = {f for f in opts.functions.split(",") if f}
    ops = [op for op in ops_named(module_op, *OPS) if not scope or function_of(op) in scope]
    counts: Counter[str] = Counter()
    if not ops or opts.mode != "kernel":
        return counts
    if opts.vector_bits not in INT16_KERNEL_VECTOR_BITS:
        return Counter({f"kept: no 16-bit kernel for {opts.vector_bits}-bit vectors": len(ops)})
    if not opts.toolchain().available():
        warn_fallback(
            f"xgen-integer-gemm-kernels: C compiler '{opts.cc}' not found; {len(ops)} int8 "
            "linear layer(s) stay with the other routes"
        )
        return Counter({"kept: no C compiler": len(ops)})
    with module_op.context:
        ev = ConstEval(module_op, WEIGHT_ELEMENTS)
        converted: dict[tuple, ir.Value] = {}
        for op in ops:
            where = format_location(op.location)
            try:
                fused = _lower(module_op, op, ev, opts, converted)
            except NoMatch as e:
                counts[f"kept: {e}"] += 1
                if opts.verbose:
                    print(f"xgen-integer-gemm-kernels: {where}: kept: {e}", file=sys.stderr)
                continue
            counts["int16 kernels"] += 1
            if fused:
                counts["of them with their dequantize epilogues"] += 1
            if opts.verbose:
                print(f"xgen-integer-gemm-kernels: {where}: generated kernel", file=sys.stderr)
    return counts
