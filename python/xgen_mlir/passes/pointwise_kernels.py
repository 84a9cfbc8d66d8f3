"""xgen-pointwise-kernels: 1x1 convs over few pixels as generated kernels without a row tile.

Why: IREE's data tiling computes a matmul in tiles of ``row-tile`` rows (16 for f32 on
AVX-512), so a 1x1 conv over a 7x7 image (49 rows) does the work of 64: MobileNetV2's
seven 7x7 1x1 convs run at 140-160 of the 205 GFLOP/s sgemm rate. The kernel
(``codegen/pointwise.py``) blocks the rows by a divisor of M instead and runs at the FMA peak
on one core. It fires where the padding IREE would add is at least ``min-padding`` of M
(49 rows: 31%; 196 rows: 6%, left to IREE).

What it matches (NHWC, after ``xgen-nhwc-convs``): ``linalg.conv_2d_nhwc_hwcf`` with a 1x1
constant filter, stride 1, a per-channel constant bias (the accumulator init), batch 1,
static f32; then the single-use elementwise activations after it that translate to C
(``kernel_match.activation_c``: comparisons with the IR's predicates, select, arithmetic),
and an add of another tensor of the same shape (a residual), followed through torch-mlir's
layout transposes. A conv followed by an elementwise op the kernel cannot take (e.g.
EfficientNet's SiLU, which has exp) stays with IREE, which fuses that op into its dispatch.
The conv, activations and add become one call; the add's layout is restored with a
transpose of the kernel's result where it was not NHWC.

Numerics: each output is a dot product summed over k in order, then the activation and the
add as the IR has them.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .._mlir import ir
from ..codegen.pointwise import PointwiseSpec, generate, pack_weights, unsupported
from ..codegen.toolchain import ToolchainOptions, compile_object
from ..frontend.lowering import format_location
from ..irutil import ops_named
from .consteval import ConstEval
from .generic_util import is_elementwise, num_uses
from .kernel_call import free_symbol, install_kernel
from .kernel_match import NoMatch, activation_c, conv_1x1, residual_add, static_f32, tensor_input
from .registry import register_pass


@dataclass
class PointwiseOptions(ToolchainOptions):
    row_tile: int = 16  # rows of IREE's data-tiled matmul tile on this target
    min_padding: float = 0.1  # fire where IREE pads M by at least this fraction of M
    verbose: bool = False  # print every replaced conv to stderr


@dataclass
class Match:
    conv: ir.Operation
    spec_args: tuple[int, int, int]  # m, k, n
    weights: np.ndarray  # [k, n]
    bias: np.ndarray  # [n]
    act: list[str]
    replaced: list[ir.Operation]  # conv, activations, add: for the FLOPs count
    end: ir.Operation  # the op whose result the call's result replaces
    residual: ir.Value | None  # the other addend, NHWC
    perm: list[int] | None  # the add's layout (dim i is NHWC dim perm[i])


def padding(m: int, row_tile: int) -> float:
    """The fraction of ``m`` that tiles of ``row_tile`` rows add. Fewer rows than a tile get
    IREE's narrow tiles (1, 2, 4, 8 rows) and no kernel: a squeeze-excite block's convs on
    one pooled pixel are matrix-vector products that IREE runs as such."""
    return (-m % row_tile) / m if m > row_tile else 0.0


def match_conv(conv: ir.Operation, ev: ConstEval) -> Match:
    """The conv with the activations and residual add it takes in, or NoMatch."""
    w, b = conv_1x1(conv, ev, "pointwise")
    n_, h, wd, k = static_f32(conv.operands[0])
    shape = static_f32(conv.results[0])
    if n_ != 1:
        raise NoMatch(f"batch {n_} (the kernel does batch 1)")
    m, n = h * wd, shape[3]
    why = unsupported(m, k, n)
    if why:
        raise NoMatch(why)
    replaced, act = [conv], []
    value = conv.results[0]
    while num_uses(value) == 1:  # the activations after it, as far as they translate
        op = next(iter(value.uses)).owner.operation
        if not is_elementwise(op) or tensor_input(op, op.results[0]) != value:
            break
        try:
            stmt = activation_c(op, value, ev)
        except NoMatch:
            break
        act.append(stmt)
        replaced.append(op)
        value = op.results[0]
    end, residual, perm = replaced[-1], None, None
    add = residual_add(value)
    if add is not None:
        end, perm, residual = add
        replaced.append(end)
    elif num_uses(value) == 1 and is_elementwise(next(iter(value.uses)).owner.operation):
        # IREE fuses an elementwise consumer into the conv's dispatch; the kernel would
        # leave it a dispatch of its own
        raise NoMatch("an elementwise op after it that the kernel does not translate")
    return Match(conv, (m, k, n), w, b, act, replaced, end, residual, perm)


def replace(module_op: ir.Operation, match: Match, symbol: str,
            opts: ToolchainOptions) -> PointwiseSpec:  # fmt: skip
    """Replace the conv (with its activations and add) by a call of its generated kernel."""
    m, k, n = match.spec_args
    spec = PointwiseSpec(symbol, m, k, n, tuple(match.act), match.residual is not None)
    packed = pack_weights(match.weights, match.bias, spec)
    obj = compile_object(generate(spec), opts.toolchain(), symbol)
    inputs = [match.conv.operands[0], packed] + ([match.residual] if match.residual else [])
    install_kernel(module_op, symbol, str(obj), opts.object_format, inputs,
                   match.conv.results[0].type, (spec.panels, 1, 1), match.replaced, match.end,
                   match.perm, "xgen_pointwise_weights")  # fmt: skip
    return spec


def pointwise_kernels(module_op: ir.Operation, opts: PointwiseOptions | None = None) -> Counter:
    """Replace every 1x1 conv IREE would pad by at least ``min_padding``; returns counts of
    the replaced convs and of the reasons others were not."""
    opts = opts or PointwiseOptions()
    toolchain = opts.toolchain()
    counts: Counter[str] = Counter()
    with module_op.context:
        ev = ConstEval(module_op)
        for conv in ops_named(module_op, "linalg.conv_2d_nhwc_hwcf"):
            try:
                shape = static_f32(conv.results[0])
            except NoMatch:
                continue
            m = shape[1] * shape[2]
            if padding(m, opts.row_tile) < opts.min_padding:
                continue
            try:
                match = match_conv(conv, ev)
            except NoMatch as e:
                counts[f"not replaced: {e}"] += 1
                continue
            if not toolchain.available():
                counts[f"not replaced: C compiler '{opts.cc}' not found"] += 1
                continue
            where = format_location(conv.location)
            symbol = free_symbol(module_op, "xgen_pointwise", counts["convs replaced"] + 1)
            spec = replace(module_op, match, symbol, opts)
            counts["convs replaced"] += 1
            if spec.act:
                counts["of them with their activations"] += 1
            if spec.residual:
                counts["of them with a residual add"] += 1
            if opts.verbose:
                extra = " + activation" * bool(spec.act) + " + residual" * spec.residual
                print(f"xgen-pointwise-kernels: {where}: {m} rows x {spec.k} -> {spec.n}{extra} "
                      f"as {symbol}, {spec.panels} panels", file=sys.stderr)  # fmt: skip
    if any(k.startswith("not replaced: C compiler") for k in counts):
        print(f"xgen-pointwise-kernels: warning: C compiler '{opts.cc}' not found; "
              "1x1 convs stay with IREE", file=sys.stderr)  # fmt: skip
    return counts


@register_pass(
    "xgen-pointwise-kernels",
    "1x1 convs (+ activations, + residual add) over few pixels as generated C kernels.",
    PointwiseOptions,
)
def _pass(module_op: ir.Operation, opts: PointwiseOptions | None) -> Counter:
    return pointwise_kernels(module_op, opts)
