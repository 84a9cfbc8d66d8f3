"""xgen-lower-fkw-kernels: xgen_sparse.fkw_conv2d -> generated kernel inside an IREE dispatch.

Each FKW convolution becomes a call to a private wrapper function (upstream tensor/linalg ops:
zero-pad, split rows into stride phases, flatten; call the kernel, which stores the final
[F, OH, OW] layout itself) and a private kernel declaration that carries the text of its ``stream.executable`` (the generated
C object linked into an IREE dispatch). The backend swaps declaration and calls for the
executable and ``flow.dispatch`` ops when it hands the module to IREE (IREE's dialects do not
exist in this MLIR context). Any static batch N (the images one after another in each flat
operand, one workgroup z per image: batch 1 is the same IR and code as before batches were
taken) and strides 1 or 2; other convs (a dynamic batch, other strides) are lowered back to
dense linalg (see ``xgen-lower-sparse-to-linalg``), counted with the reason in the pass's
report and said once in a ``FallbackWarning``. If the target's C compiler is missing, the pass
falls back the same way and says so. A ReLU that is the convolution's only use is applied by
the kernel before its stores (epilogue fusion; batch norm is folded into the weights and bias
before this, by ``xgen-fold-batchnorm{sparse-only=true}``), so it costs no pass over memory.
NaN and Inf inputs give what the dense convolution gives (a pruned weight times NaN or Inf is
NaN): the wrapper sums ``x * 0`` per input row (one reduction over the input, NaN iff a row
holds a NaN or Inf) and passes it to the kernel, which, only if one is NaN, looks at
its tile's inputs and marks the outputs whose skipped taps read one
(``codegen/pattern_kernel.py``); ``nan-checks=false`` leaves that out (pruned taps then ignore
NaN/Inf inputs).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from .._mlir import ir
from ..codegen import dispatch
from ..codegen.dispatch import EXECUTABLE_ATTR
from ..codegen.pattern_kernel import SUPPORTED_STRIDES, KernelSpec, generate
from ..codegen.toolchain import ToolchainOptions, compile_object
from ..diagnostics import warn_fallback
from ..dialects.sparse import FKW_CONV, geometry, patterns_of
from ..irutil import ConstantReader, find_func, ops_named, splice_functions
from ..target import simd_lanes, vector_registers
from .epilogue_c import scalar_constant
from .generic_util import (
    body,
    body_ops,
    indexing_maps,
    is_elementwise,
    is_identity,
    num_inputs,
    num_uses,
)
from .kernel_call import free_symbol
from .lower_sparse_linalg import lower_fkw_to_linalg
from .registry import PassFailure, register_pass

# A dynamic shape (a dynamic batch): the kernels are generated for static shapes, one
# workgroup z per image of a batch known at compile time
DYNAMIC = "dynamic shape (the pattern kernels take a static batch and static sizes)"


@dataclass
class KernelOptions(ToolchainOptions):
    vl: int = 16  # floats per vector register
    # the target's SIMD width; when given, vl is its f32 lanes (16 with AVX-512, 8 with AVX2:
    # 16-float vectors on an AVX2 CPU ran pruned ResNet-18 at 98 ms, 8-float ones at 20.6 ms)
    vector_bits: int = 0
    px: int = 1  # pixel vectors per accumulator row
    tile: int = 8  # pixel chunks per workgroup
    variant: str = "auto"  # kernel formulation: auto | pixels | filters (codegen.choose_variant)
    # NaN/Inf as the dense conv gives them (0 * NaN at a pruned tap is NaN); false: the pruned
    # taps are skipped for NaN/Inf inputs too (no flags reduction, no checks; codegen.pattern_kernel)
    nan_checks: bool = True


def _t(shape: list[int]) -> str:
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


def wrapper_text(spec: KernelSpec, wrapper: str, wlen: int) -> str:
    """The private function that lays the input out for the kernel and calls it."""
    if spec.batch > 1:
        return _batched_wrapper_text(spec, wrapper, wlen)
    d = spec.derived
    c, h, w, f = spec.c, spec.h, spec.w, spec.f
    ph = d["phases"]  # row phases the input is split into (the stride, or 1)
    pt, pl = spec.padding[0], spec.padding[1]
    hq, wp, oh, ow = d["hq"], d["wp"], d["oh"], d["ow"]
    hx = hq * ph
    inlen, full = d["in_len"], d["in_len"] + d["slack"]
    kin, kw_t, kb, kout = _t([full]), _t([wlen]), _t([f]), _t([d["out_len"]])
    if ph == 1:
        layout = f"""  %flat = tensor.collapse_shape %p [[0, 1, 2, 3]] : {_t([1, c, hx, wp])} into {_t([inlen])}
"""
    else:
        layout = f"""  %c = tensor.collapse_shape %p [[0, 1], [2], [3]] : {_t([1, c, hx, wp])} into {_t([c, hx, wp])}
  %e = tensor.expand_shape %c [[0], [1, 2], [3]] output_shape [{c}, {hq}, {ph}, {wp}] : {_t([c, hx, wp])} into {_t([c, hq, ph, wp])}
  %t0 = tensor.empty() : {_t([ph, c, hq, wp])}
  %t = linalg.transpose ins(%e : {_t([c, hq, ph, wp])}) outs(%t0 : {_t([ph, c, hq, wp])}) permutation = [2, 0, 1, 3]
  %flat = tensor.collapse_shape %t [[0, 1, 2, 3]] : {_t([ph, c, hq, wp])} into {_t([inlen])}
"""
    if d["slack"]:
        layout += f"""  %in = tensor.pad %flat low[0] high[{d["slack"]}] {{
  ^bb0(%i: index):
    tensor.yield %z : f32
  }} : {_t([inlen])} to {kin}
"""
    else:
        layout += f"""  %in = tensor.cast %flat : {_t([inlen])} to {kin}
"""
    # NaN/Inf checks: per input row (channel, y), the sum of x * 0 (NaN iff the row holds a NaN
    # or Inf), one read of the input for the whole layer; the kernel looks closer only if any is
    flag_ops, flag_arg, flag_t = "", "", ""
    if spec.nan_checks:
        kf = _t([c * h])
        flag_ops = f"""  %fz = arith.constant dense<0.0> : {_t([c, h])}
  %fr = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d1, d2)>], iterator_types = ["reduction", "parallel", "parallel", "reduction"]}} ins(%x : {_t([1, c, h, w])}) outs(%fz : {_t([c, h])}) {{
  ^bb0(%v: f32, %acc: f32):
    %v0 = arith.mulf %v, %z : f32
    %s = arith.addf %acc, %v0 : f32
    linalg.yield %s : f32
  }} -> {_t([c, h])}
  %flags = tensor.collapse_shape %fr [[0, 1]] : {_t([c, h])} into {kf}
"""
        flag_arg, flag_t = ", %flags", f", {kf}"
    return f"""
func.func private @{wrapper}(%x: {_t([1, c, h, w])}, %w: {kw_t}, %b: {kb}) -> {_t([1, f, oh, ow])} {{
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, {pt}, {pl}] high[0, 0, {hx - h - pt}, {wp - w - pl}] {{
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %z : f32
  }} : {_t([1, c, h, w])} to {_t([1, c, hx, wp])}
{layout}{flag_ops}  %o = func.call @{spec.symbol}(%in, %w, %b{flag_arg}) : ({kin}, {kw_t}, {kb}{flag_t}) -> {kout}
  %r = tensor.expand_shape %o [[0, 1, 2, 3]] output_shape [1, {f}, {oh}, {ow}] : {kout} into {_t([1, f, oh, ow])}
  return %r : {_t([1, f, oh, ow])}
}}
func.func private @{spec.symbol}({kin}, {kw_t}, {kb}{flag_t}) -> {kout}
"""


def _batched_wrapper_text(spec: KernelSpec, wrapper: str, wlen: int) -> str:
    """``wrapper_text`` for N > 1 images: the same layout per image (zero pad, row phases,
    slack), images one after another in the kernel's flat input, flags and output."""
    d = spec.derived
    n, c, h, w, f = spec.batch, spec.c, spec.h, spec.w, spec.f
    ph = d["phases"]
    pt, pl = spec.padding[0], spec.padding[1]
    hq, wp, oh, ow = d["hq"], d["wp"], d["oh"], d["ow"]
    hx = hq * ph
    inlen, full = d["in_len"], d["in_len"] + d["slack"]
    kin, kw_t, kb, kout = _t([n * full]), _t([wlen]), _t([f]), _t([n * d["out_len"]])
    if ph == 1:
        layout = f"""  %img = tensor.collapse_shape %p [[0], [1, 2, 3]] : {_t([n, c, hx, wp])} into {_t([n, inlen])}
"""
    else:
        layout = f"""  %e = tensor.expand_shape %p [[0], [1], [2, 3], [4]] output_shape [{n}, {c}, {hq}, {ph}, {wp}] : {_t([n, c, hx, wp])} into {_t([n, c, hq, ph, wp])}
  %t0 = tensor.empty() : {_t([n, ph, c, hq, wp])}
  %t = linalg.transpose ins(%e : {_t([n, c, hq, ph, wp])}) outs(%t0 : {_t([n, ph, c, hq, wp])}) permutation = [0, 3, 1, 2, 4]
  %img = tensor.collapse_shape %t [[0], [1, 2, 3, 4]] : {_t([n, ph, c, hq, wp])} into {_t([n, inlen])}
"""
    if d["slack"]:
        layout += f"""  %sl = tensor.pad %img low[0, 0] high[0, {d["slack"]}] {{
  ^bb0(%i: index, %j: index):
    tensor.yield %z : f32
  }} : {_t([n, inlen])} to {_t([n, full])}
  %in = tensor.collapse_shape %sl [[0, 1]] : {_t([n, full])} into {kin}
"""
    else:
        layout += f"""  %in = tensor.collapse_shape %img [[0, 1]] : {_t([n, inlen])} into {kin}
"""
    flag_ops, flag_arg, flag_t = "", "", ""
    if spec.nan_checks:  # per image and input row (channel, y): the sum of x * 0
        kf = _t([n * c * h])
        flag_ops = f"""  %fz = arith.constant dense<0.0> : {_t([n, c, h])}
  %fr = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}} ins(%x : {_t([n, c, h, w])}) outs(%fz : {_t([n, c, h])}) {{
  ^bb0(%v: f32, %acc: f32):
    %v0 = arith.mulf %v, %z : f32
    %s = arith.addf %acc, %v0 : f32
    linalg.yield %s : f32
  }} -> {_t([n, c, h])}
  %flags = tensor.collapse_shape %fr [[0, 1, 2]] : {_t([n, c, h])} into {kf}
"""
        flag_arg, flag_t = ", %flags", f", {kf}"
    return f"""
func.func private @{wrapper}(%x: {_t([n, c, h, w])}, %w: {kw_t}, %b: {kb}) -> {_t([n, f, oh, ow])} {{
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, {pt}, {pl}] high[0, 0, {hx - h - pt}, {wp - w - pl}] {{
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %z : f32
  }} : {_t([n, c, h, w])} to {_t([n, c, hx, wp])}
{layout}{flag_ops}  %o = func.call @{spec.symbol}(%in, %w, %b{flag_arg}) : ({kin}, {kw_t}, {kb}{flag_t}) -> {kout}
  %r = tensor.expand_shape %o [[0, 1, 2, 3]] output_shape [{n}, {f}, {oh}, {ow}] : {kout} into {_t([n, f, oh, ow])}
  return %r : {_t([n, f, oh, ow])}
}}
func.func private @{spec.symbol}({kin}, {kw_t}, {kb}{flag_t}) -> {kout}
"""


def executable_text(spec: KernelSpec, obj_path: str, wlen: int, object_format: str) -> str:
    """The stream.executable that links the kernel object into an IREE dispatch: one
    workgroup per (filter group, pixel tile, image)."""
    d, n = spec.derived, spec.batch
    flags = [n * spec.c * spec.h] if spec.nan_checks else []
    return dispatch.executable_text(
        spec.symbol,
        obj_path,
        object_format,
        [n * (d["in_len"] + d["slack"]), wlen, spec.f, *flags],
        n * d["out_len"],
        (d["groups"], d["ntiles"], n),
        ids=3 if n > 1 else 2,
    )


def kernel_spec(
    op: ir.Operation, reader: ConstantReader, symbol: str, opts: KernelOptions
) -> KernelSpec:
    g = geometry(op)
    found = [reader.value_of(op.operands[i]) for i in range(3, 8)]
    tables = [t for t in found if t is not None]
    assert len(tables) == len(found)  # the caller lowers non-constant tables to linalg instead
    return KernelSpec(
        symbol=symbol,
        c=g.c,
        h=g.h,
        w=g.w,
        f=g.f,
        kh=g.kh,
        kw=g.kw,
        strides=(g.strides[0], g.strides[1]),
        padding=tuple(g.padding),  # type: ignore[arg-type]
        patterns=patterns_of(op),
        filter_order=tables[0],
        group_filter_offsets=tables[1],
        group_kernel_offsets=tables[2],
        kernel_channel=tables[3],
        kernel_pattern=tables[4],
        vl=simd_lanes(opts.vector_bits) if opts.vector_bits else opts.vl,
        regs=vector_registers(opts.vector_bits) if opts.vector_bits else 32,
        px=opts.px,
        tile=opts.tile,
        variant=opts.variant,
        nan_checks=opts.nan_checks,
    )


def _dense_reason(op: ir.Operation, reader: ConstantReader) -> str | None:
    """Why the pattern kernel cannot take ``op`` (it is then lowered dense), or None."""
    g = geometry(op)
    if any(ir.ShapedType.is_dynamic_size(v) for v in (g.n, g.c, g.h, g.w)):
        return DYNAMIC
    if not all(reader.value_of(op.operands[i]) is not None for i in range(3, 8)):
        return "the FKW tables are not constants"
    if g.strides[0] != g.strides[1] or g.strides[0] not in SUPPORTED_STRIDES:
        return f"strides {list(g.strides)} (the kernels take equal strides 1 or 2)"
    return None


@register_pass(
    "xgen-lower-fkw-kernels",
    "Lower xgen_sparse.fkw_conv2d to generated C kernels linked into IREE dispatches.",
    KernelOptions,
)
def lower_fkw_kernels(module_op: ir.Operation, opts: KernelOptions | None) -> Counter:
    """Lower every FKW conv to its kernel (or dense linalg where none can take it); returns
    counts of the kernels and of the reasons for the dense ones."""
    opts = opts or KernelOptions()
    toolchain = opts.toolchain()
    reader = ConstantReader(module_op)
    convs = ops_named(module_op, FKW_CONV)
    counts: Counter[str] = Counter()
    if convs and not toolchain.available():
        warn_fallback(
            f"xgen-lower-fkw-kernels: C compiler '{opts.cc}' not found; "
            f"{len(convs)} pattern convolution(s) run dense instead"
        )
    if opts.variant not in ("auto", "pixels", "filters"):
        raise PassFailure(f"variant must be auto, pixels or filters, got '{opts.variant}'")
    for op in convs:
        why = _dense_reason(op, reader)
        if why is None and not toolchain.available():
            why = f"C compiler '{opts.cc}' not found"
        if why is not None:
            lower_fkw_to_linalg(op, reader)
            counts[f"lowered dense: {why}"] += 1
            continue
        g = geometry(op)
        # numbered within the module, never per process: the same model gives the same bytes
        # however many modules this process compiled before (tests/python/test_reproducible.py)
        symbol = free_symbol(module_op, "xgen_fkw_kernel", 1)
        spec = kernel_spec(op, reader, symbol, opts)
        spec.batch = g.n
        relu = relu_consumer(op.results[0])
        spec.relu = relu is not None
        obj = compile_object(generate(spec), toolchain, symbol)
        wlen = spec.derived["weights"]
        splice_functions(module_op, wrapper_text(spec, f"{symbol}_call", wlen))
        decl = find_func(module_op, symbol)
        decl.attributes[EXECUTABLE_ATTR] = ir.StringAttr.get(
            executable_text(spec, str(obj), wlen, opts.object_format)
        )
        with ir.InsertionPoint(op), op.location:
            from .._mlir import func

            call = func.CallOp(
                [op.results[0].type],
                ir.FlatSymbolRefAttr.get(f"{symbol}_call"),
                [op.operands[0], op.operands[1], op.operands[2]],
            )
        if relu is not None:  # the kernel applies it: the elementwise op goes away
            relu.results[0].replace_all_uses_with(call.results[0])
            relu.erase()
        op.results[0].replace_all_uses_with(call.results[0])
        op.erase()
        counts["pattern kernels"] += 1
        if g.n > 1:
            counts[f"of them for a batch of {g.n}"] += 1
    dense = {
        k: v for k, v in counts.items() if k.startswith("lowered dense: ") and "C compiler" not in k
    }
    if dense:
        warn_fallback(
            "xgen-lower-fkw-kernels: pattern convolution(s) run dense, without the pruning's "
            "speedup: " + "; ".join(f"{v} {k[len('lowered dense: ') :]}" for k, v in dense.items())
        )
    return counts


def relu_consumer(value: ir.Value) -> ir.Operation | None:
    """The elementwise ReLU that is ``value``'s only use, if it is one the kernel can apply
    with the same results: ``x ugt 0 ? x : 0`` (torch-mlir's form) or ``maximumf(x, 0)``,
    both of which pass NaN through and give +0 for -0."""
    if num_uses(value) != 1:
        return None
    user = next(iter(value.uses)).owner.operation
    if not is_elementwise(user) or num_inputs(user) != 1 or user.operands[0] != value:
        return None
    if not is_identity(indexing_maps(user)[0]) or user.results[0].type != value.type:
        return None
    x = body(user).arguments[0]
    ops = body_ops(user)[:-1]  # without linalg.yield
    yielded = body_ops(user)[-1].operands[0]

    def zero(v: ir.Value) -> bool:
        return scalar_constant(v) == 0.0

    if len(ops) == 1 and ops[0].name == "arith.maximumf" and yielded == ops[0].results[0]:
        a, b = ops[0].operands
        return user if (a == x and zero(b)) or (b == x and zero(a)) else None
    if len(ops) == 2 and [o.name for o in ops] == ["arith.cmpf", "arith.select"]:
        cmp, sel = ops
        ugt = ir.IntegerAttr(cmp.attributes["predicate"]).value == 9  # arith.CmpFPredicate.UGT
        ok = (
            ugt
            and cmp.operands[0] == x
            and zero(cmp.operands[1])
            and sel.operands[0] == cmp.results[0]
            and sel.operands[1] == x
            and zero(sel.operands[2])
            and yielded == sel.results[0]
        )
        return user if ok else None
    return None
