"""xgen-dynamic-quantize-kernels: a dynamic quantization's min/max and quantize as generated
kernels (``codegen/dynamic_quantize.py``).

Why: a dynamically quantized Linear layer reads its input three times before the integer
matmul: a full max and min reduction (which give the scale and zero point) and the quantize
by them. IREE makes the reductions two dispatches that each split the tensor in 16 rows,
a third to finish them, and the quantize one more with a division and the rounding per
element. MobileBERT dynamic int8 on an Intel Xeon (2 threads): 289 quantizations, 6.5 of
30 ms; a 128x512 input's about 40 us, as long as the matmul that reads it.

What it matches:
- full reductions (every loop a reduction, a 0-d result) of one static f32 tensor of at
  least ``MIN_ELEMENTS`` whose body is ``maximumf`` or ``minimumf`` of the element and the
  accumulator, onto a constant: a max and a min of the same tensor become one kernel that
  reads it once (either alone, a kernel too). Each workgroup writes its chunk's pair; more
  than one chunk is finished by a ``linalg.reduce`` over the chunks.
- an elementwise generic writing int8 from a static f32 tensor of at least
  ``MIN_ELEMENTS`` read whole and a 0-d f32 scale computed at run time (and a 0-d int8
  zero point): ``fpto[su]i(clamp(roundeven(x / scale) + float(zp), lo, hi))``, the clamp's
  bounds within the output type's range. An ``x - 128`` of its bytes that is the only
  reader (the frontend's uint8 -> int8 for a library's s8 source) goes into the kernel.

Must not fire on: a quantize by a constant scale (a static quantization: IREE fuses it into
the op that writes its input), reductions over some dimensions only (a softmax's row max),
sums and other bodies, an accumulator that is not a constant, dynamic shapes, small
tensors, a quantize body with anything else in it.

Numerics: the same IEEE operations in the same order (``vdivps``, not a reciprocal), so the
same values; a NaN anywhere makes the min and the max NaN, as ``maximumf`` does.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from .._mlir import func, ir, tensor
from ..codegen import dispatch, dynamic_quantize
from ..codegen.dispatch import EXECUTABLE_ATTR
from ..codegen.toolchain import ToolchainOptions
from ..irutil import find_func, ops_named, splice_functions
from .consteval import WEIGHT_ELEMENTS, ConstEval
from .epilogue_c import scalar_constant
from .generic_util import (
    body,
    body_ops,
    erase_dead_tree,
    i64_array,
    indexing_maps,
    is_elementwise,
    is_identity,
    iterator_types,
    num_inputs,
    producer_named,
    single_user,
)
from .kernel_call import install_kernel, shared_object
from .quantize_match import minus_128
from .registry import register_pass

MIN_ELEMENTS = 4096  # below this a dispatch's fixed cost is most of the time either way

_EXTREMES = {"arith.maximumf": "max", "arith.minimumf": "min"}


@dataclass
class DynamicQuantizeOptions(ToolchainOptions):
    enable: bool = True


def _static_f32(value: ir.Value) -> list[int] | None:
    ty = ir.RankedTensorType(value.type)
    if str(ty.element_type) != "f32" or not ty.has_static_shape:
        return None
    return list(ty.shape)


def _extreme(op: ir.Operation, ev: ConstEval) -> tuple[str, ir.Value, float] | None:
    """``("max" | "min", source, init)`` for a full max/min reduction onto a constant."""
    if op.name != "linalg.generic" or num_inputs(op) != 1 or len(op.results) != 1:
        return None
    source, init = op.operands[0], op.operands[1]
    shape = _static_f32(source)
    if shape is None or int(np.prod(shape)) < MIN_ELEMENTS:
        return None
    if ir.RankedTensorType(op.results[0].type).shape != []:
        return None
    if any(t != "reduction" for t in iterator_types(op)) or not is_identity(indexing_maps(op)[0]):
        return None
    ops = body_ops(op)
    if len(ops) != 2 or ops[0].name not in _EXTREMES or ops[1].name != "linalg.yield":
        return None
    x, acc = body(op).arguments
    if {ops[0].operands[0], ops[0].operands[1]} != {x, acc} or ops[1].operands[0] != ops[0].result:
        return None
    start = ev.value(init)
    if start is None or start.size != 1:
        return None
    return _EXTREMES[ops[0].name], source, float(start.reshape(()))


def _minmax_wrapper(symbol: str, n: int, groups: int) -> str:
    """``@<symbol>_call(x: tensor<n x f32>) -> (max, min)``: the kernel's per-chunk pairs,
    finished by a ``linalg.reduce`` where there is more than one chunk."""
    pairs = f"tensor<{2 * groups}xf32>"
    lines = [f"  %p = func.call @{symbol}(%a) : (tensor<{n}xf32>) -> {pairs}"]
    g = groups
    if g == 1:
        for k, name in enumerate(("max", "min")):
            lines.append(
                f"  %s{k} = tensor.extract_slice %p[{k}] [1] [1] : {pairs} to tensor<1xf32>"
            )
            lines.append(
                f"  %{name} = tensor.collapse_shape %s{k} [] : tensor<1xf32> into tensor<f32>"
            )
    else:
        grid = f"tensor<{g}x2xf32>"
        lines.append(
            f"  %v = tensor.expand_shape %p [[0, 1]] output_shape [{g}, 2] : {pairs} into {grid}"
        )
        lines.append("  %e = tensor.empty() : tensor<f32>")
        for k, (name, op, start) in enumerate(
            (("max", "maximumf", "0xFF800000"), ("min", "minimumf", "0x7F800000"))
        ):
            part = f"tensor<{g}xf32>"
            lines += [
                f"  %c{k} = tensor.extract_slice %v[0, {k}] [{g}, 1] [1, 1] : {grid} to {part}",
                f"  %i{k} = arith.constant {start} : f32",
                f"  %z{k} = linalg.fill ins(%i{k} : f32) outs(%e : tensor<f32>) -> tensor<f32>",
                f"  %{name} = linalg.reduce ins(%c{k} : {part}) outs(%z{k} : tensor<f32>)",
                "    dimensions = [0] (%in: f32, %acc: f32) {",
                f"      %r = arith.{op} %in, %acc : f32",
                "      linalg.yield %r : f32",
                "    }",
            ]
    body_text = "\n".join(lines)
    return f"""
func.func private @{symbol}_call(%a: tensor<{n}xf32>) -> (tensor<f32>, tensor<f32>) {{
{body_text}
  return %max, %min : tensor<f32>, tensor<f32>
}}
func.func private @{symbol}(tensor<{n}xf32>) -> {pairs}
"""


def _flat(source: ir.Value) -> ir.Value:
    """``source`` collapsed to one dimension (as it is, if it has one)."""
    shape = list(ir.RankedTensorType(source.type).shape)
    if len(shape) == 1:
        return source
    return tensor.CollapseShapeOp(
        ir.RankedTensorType.get([int(np.prod(shape))], ir.F32Type.get()),
        source,
        ir.ArrayAttr.get([i64_array(list(range(len(shape))))]),
    ).result


def _minmax_kernels(
    module_op: ir.Operation, opts: DynamicQuantizeOptions, ev: ConstEval
) -> Counter:
    counts: Counter[str] = Counter()
    made: dict[Any, tuple[str, str]] = {}  # one kernel per size and start values
    by_source: dict[ir.Value, dict[str, tuple[ir.Operation, float]]] = {}
    for op in ops_named(module_op, "linalg.generic"):
        found = _extreme(op, ev)
        if found is None:
            continue
        kind, source, start = found
        by_source.setdefault(source, {}).setdefault(kind, (op, start))
    order = {o: i for i, o in enumerate(ops_named(module_op, "linalg.generic"))}
    for source, kinds in by_source.items():
        ops = [op for op, _ in kinds.values()]
        if len({op.block for op in ops}) != 1:
            continue
        n = int(np.prod(_static_f32(source) or [0]))
        max_init = kinds["max"][1] if "max" in kinds else float("-inf")
        min_init = kinds["min"][1] if "min" in kinds else float("inf")
        symbol, obj, new = shared_object(
            module_op,
            made,
            (n, max_init, min_init),
            "xgen_minmax",
            partial(dynamic_quantize.minmax, max_init=max_init, min_init=min_init),
            opts.toolchain(),
        )
        if new:
            groups = dynamic_quantize.partials(n)
            splice_functions(module_op, _minmax_wrapper(symbol, n, groups))
            decl = find_func(module_op, symbol)
            decl.attributes[EXECUTABLE_ATTR] = ir.StringAttr.get(
                dispatch.executable_text(
                    symbol, obj, opts.object_format, [n], 2 * groups, (groups, 1, 1), ids=1
                )
            )
        first = min(ops, key=lambda o: order[o])
        with ir.InsertionPoint(first), first.location:
            call = func.CallOp(
                [ir.RankedTensorType.get([], ir.F32Type.get())] * 2,
                ir.FlatSymbolRefAttr.get(f"{symbol}_call"),
                [_flat(source)],
            )
        for kind, (op, _) in kinds.items():
            op.results[0].replace_all_uses_with(call.results[0 if kind == "max" else 1])
            old = list(op.operands)
            op.erase()
            erase_dead_tree(old)
        counts[f"{' and '.join(sorted(kinds))} of a tensor as one kernel"] += 1
    return counts


@dataclass
class _Quantize:
    op: ir.Operation
    x: ir.Value
    scale: ir.Value
    zp: ir.Value | None
    zp_signed: bool
    out_signed: bool
    low: float
    high: float


def _quantize(op: ir.Operation, ev: ConstEval) -> _Quantize | None:
    """The quantize by a run-time scale (and zero point) that ``op`` is, or None."""
    if not is_elementwise(op) or str(ir.RankedTensorType(op.results[0].type).element_type) != "i8":
        return None
    maps = indexing_maps(op)
    args = body(op).arguments
    tensors, scalars = [], []
    for i in range(num_inputs(op)):
        v = op.operands[i]
        if ir.RankedTensorType(v.type).shape == []:
            scalars.append(i)
        elif is_identity(maps[i]) and _static_f32(v) is not None:
            tensors.append(i)
        else:
            return None
    if len(tensors) != 1 or len(scalars) not in (1, 2):
        return None
    x_at = tensors[0]
    if int(np.prod(_static_f32(op.operands[x_at]) or [0])) < MIN_ELEMENTS:
        return None
    ops = [o for o in body_ops(op) if o.name != "arith.constant"]
    yield_op = ops[-1]
    conv = producer_named(yield_op.operands[0], "arith.fptoui", "arith.fptosi")
    if conv is None:
        return None
    out_signed = conv.name == "arith.fptosi"
    bounds: dict[str, float] = {}
    used = {yield_op, conv}
    v = conv.operands[0]
    for _ in range(2):  # maximumf(v, low) and minimumf(v, high), in either order
        clamp = producer_named(v, *_EXTREMES)
        if clamp is None:
            return None
        a, b = clamp.operands
        c, v = (
            (scalar_constant(b), a) if scalar_constant(b) is not None else (scalar_constant(a), b)
        )
        if c is None or _EXTREMES[clamp.name] in bounds:
            return None
        bounds[_EXTREMES[clamp.name]] = c
        used.add(clamp)
    low, high = bounds["max"], bounds["min"]
    if not (-128 if out_signed else 0) <= low <= high <= (127 if out_signed else 255):
        return None
    zp, zp_signed = None, False
    add = producer_named(v, "arith.addf")
    if add is not None:
        used.add(add)
        rounded, widened = add.operands
        cast = producer_named(widened, "arith.uitofp", "arith.sitofp")
        if cast is None:
            rounded, widened = widened, rounded
            cast = producer_named(widened, "arith.uitofp", "arith.sitofp")
        if cast is None or cast.operands[0] not in args:
            return None
        used.add(cast)
        zp_at = list(args).index(cast.operands[0])
        zp = op.operands[zp_at]
        zp_signed = cast.name == "arith.sitofp"
        v = rounded
    rnd = producer_named(v, "math.roundeven")
    div = rnd and producer_named(rnd.operands[0], "arith.divf")
    if rnd is None or div is None or div.operands[0] != args[x_at]:
        return None
    used |= {rnd, div}
    if div.operands[1] not in args:
        return None
    scale_at = list(args).index(div.operands[1])
    scale = op.operands[scale_at]
    if scale_at not in scalars or str(ir.RankedTensorType(scale.type).element_type) != "f32":
        return None
    if ev.value(scale) is not None:
        return None  # a static quantization (IREE fuses it into its producer)
    if zp is not None and (
        str(ir.RankedTensorType(zp.type).element_type) != "i8" or zp_at not in scalars
    ):
        return None
    if len(scalars) != (2 if zp is not None else 1) or len(used) != len(ops):
        return None
    return _Quantize(op, op.operands[x_at], scale, zp, zp_signed, out_signed, low, high)


def _quantize_kernels(
    module_op: ir.Operation, opts: DynamicQuantizeOptions, ev: ConstEval
) -> Counter:
    counts: Counter[str] = Counter()
    made: dict[Any, tuple[str, str]] = {}  # one kernel per shape and form
    found = [q for op in ops_named(module_op, "linalg.generic") if (q := _quantize(op, ev))]
    for q in found:
        n = int(np.prod(_static_f32(q.x) or [0]))
        user = single_user(q.op.results[0])
        flip = minus_128(user)
        end = user if flip and user is not None else q.op
        source = partial(
            dynamic_quantize.quantize,
            low=q.low,
            high=q.high,
            zp_signed=q.zp_signed,
            out_signed=q.out_signed,
            flip=flip,
        )
        # (the wrapper's signature: the shapes as they are)
        types = (str(q.x.type), str(q.zp.type) if q.zp is not None else "")
        key = (*types, q.low, q.high, q.zp_signed, q.out_signed, flip)
        symbol, obj, _ = shared_object(
            module_op,
            made,
            key,
            "xgen_quantize",
            source,
            opts.toolchain(),
        )
        zp = q.zp if q.zp is not None else np.zeros(1, np.int8)
        install_kernel(
            module_op,
            symbol,
            obj,
            opts.object_format,
            [q.x, q.scale, zp],
            end.results[0].type,
            (dynamic_quantize.quantize_workgroups(n), 1, 1),
            [q.op],
            end,
            weights_name="xgen_quantize_zero_point",
            shared=True,
        )
        counts["quantizes by a run-time scale as kernels" + (" (with -128)" if flip else "")] += 1
    return counts


def dynamic_quantize_kernels(
    module_op: ir.Operation, opts: DynamicQuantizeOptions | None = None
) -> Counter:
    opts = opts or DynamicQuantizeOptions()
    if not opts.enable:
        return Counter()
    with module_op.context:
        ev = ConstEval(module_op, WEIGHT_ELEMENTS)
        counts = _minmax_kernels(module_op, opts, ev)
        counts.update(_quantize_kernels(module_op, opts, ev))
    return counts


@register_pass(
    "xgen-dynamic-quantize-kernels",
    "A dynamic quantization's max and min (one pass over the tensor) and its quantize by the "
    "run-time scale as generated kernels.",
    DynamicQuantizeOptions,
)
def _pass(module_op: ir.Operation, opts: DynamicQuantizeOptions | None) -> Counter:
    return dynamic_quantize_kernels(module_op, opts)
