"""xgen-transposed-convs: a transposed convolution as one small conv per output phase, not a
dense conv over an input that is mostly inserted zeros.

Why: torch-mlir lowers ``ConvTranspose`` (ONNX) / ``conv_transpose2d`` (PyTorch) with stride
``s`` as ``tensor.insert_slice`` of the input into a zero tensor at stride ``s`` followed by a
stride-1 ``linalg.conv_2d_nchw_fchw`` with the flipped filter. That conv multiplies
``s*s - 1`` of every ``s*s`` input values that are zero, and its input, ``s*s`` times the size
of the real one, is transposed and padded before it. PP-OCRv4's text detector (DBNet) ends
in two 2x2 stride-2 ConvTransposes: 35 of its 87 ms of dispatches on the 2-core EPYC.

The rewrite: output row ``y = s*u + a`` (phase ``a``) is reached only by the filter taps
``ky`` with ``(a + ky - p) % s == 0`` (``p``: where the insert starts), each reading input row
``u + (a + ky - p) / s``. Each phase is therefore a small conv over the real input (shifted:
a zero pad or a slice) with its own taps. Where every phase has the same number of taps
reading the same input rows (a 2x2 stride-2 ConvTranspose, any kernel equal to its stride),
all phases are one conv with ``s*s*F`` filters; otherwise (a 4x4 stride-2 pad-1 one) one conv
per phase, concatenated. ``tensor.expand_shape`` + a transpose + ``collapse_shape``
interleave the phases into ``[N, F, s*OHp, s*OWp]``. For a 2x2 stride-2 ConvTranspose that is
a 1x1 conv (a GEMM) and a depth-to-space shuffle.

Exactness: each input value is multiplied by exactly the weights it met before (the taps of
its phase; no zero weight is added), and the inserted zeros times finite weights added
nothing; only the order of the sum changes. It does not fire (counted in the report, with the
reason) when the output size is not a multiple of the stride (output_padding) or a phase has
no tap, the zero tensor is not all zeros, the insert is partial or strided along
batch/channels, the filter is not a finite constant, the conv has its own stride or
dilation, or shapes are dynamic.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .._mlir import ir, linalg, tensor
from ..diagnostics import format_location
from ..irutil import constant_op, ops_named
from .consteval import WEIGHT_ELEMENTS, ConstEval
from .generic_util import (
    channel_init,
    erase_dead_tree,
    has_dynamic_shape,
    is_zero_constant,
    num_uses,
    producer,
    tensor_shape,
    transpose,
    zero_pad,
)
from .registry import register_pass


@dataclass
class TransposedConvsOptions:
    verbose: bool = False  # print each rewrite (or why a candidate was left) to stderr


@dataclass(frozen=True)
class Phases:
    """One spatial dim: stride, the taps of each phase, and the first input row each phase
    reads (``r0[a]``; tap j of phase a reads ``u + r0[a] + j``)."""

    stride: int
    taps: list[list[int]]
    r0: list[int]

    @property
    def uniform(self) -> bool:
        """Every phase has as many taps, reading the same rows: one conv serves them all."""
        return len({(len(t), r) for t, r in zip(self.taps, self.r0, strict=True)}) == 1


def _phases(size_out: int, kernel: int, stride: int, start: int) -> Phases | str:
    """The phase split of one dim, or why there is none."""
    if size_out % stride:
        return f"output size {size_out} not a multiple of the stride {stride}"
    taps, r0 = [], []
    for a in range(stride):
        t = [k for k in range(kernel) if (a + k - start) % stride == 0]
        if not t:
            return f"phase {a} has no tap"
        taps.append(t)
        r0.append((a + t[0] - start) // stride)
    return Phases(stride, taps, r0)


def _zero_fill(value: ir.Value) -> bool:
    """Whether ``value`` is a tensor of zeros (``linalg.fill`` of 0.0 or a zero splat)."""
    op = producer(value)
    if op is not None and op.name == "linalg.fill":
        return is_zero_constant(op.operands[0])
    if op is None or op.name != "arith.constant":
        return False
    attr = op.attributes["value"]
    return (
        isinstance(attr, ir.DenseElementsAttr)
        and attr.is_splat
        and isinstance(attr.get_splat_value(), ir.FloatAttr)
        and ir.FloatAttr(attr.get_splat_value()).value == 0.0
    )


def _static(attr_name: str, op: ir.Operation) -> list[int]:
    return list(ir.DenseI64ArrayAttr(op.attributes[attr_name]))


def _window(x: ir.Value, dim: int, start: int, length: int) -> ir.Value:
    """Rows ``start .. start+length`` of ``x`` along ``dim``, zero outside ``x``."""
    ty = ir.RankedTensorType(x.type)
    shape = list(ty.shape)
    lo = max(0, -start)
    begin, end = max(0, start), min(shape[dim], start + length)
    hi = length - lo - (end - begin)
    if (begin, end) != (0, shape[dim]):
        offsets, sizes = [0] * len(shape), list(shape)
        offsets[dim], sizes[dim] = begin, end - begin
        sliced = ir.RankedTensorType.get(sizes, ty.element_type)
        x = tensor.ExtractSliceOp(sliced, x, [], [], [], offsets, sizes, [1] * len(shape)).result
        shape = sizes
    low, high = [0] * len(shape), [0] * len(shape)
    low[dim], high[dim] = lo, hi
    x = zero_pad(x, low, high)
    return x


def rewrite_one(op: ir.Operation, ev: ConstEval) -> tuple[bool, str | None]:
    """Rewrite conv ``op`` if its input is a zero tensor with the real input inserted at a
    stride; returns (rewritten, what happened), None when the input is no such insert."""
    ins = producer(op.operands[0])
    if ins is None or ins.name != "tensor.insert_slice":
        return False, None
    strides = _static("static_strides", ins)
    if len(strides) != 4 or max(strides[2:]) < 2:
        return False, None
    x, dest, out = ins.operands[0], ins.operands[1], op.results[0]
    if has_dynamic_shape(x, dest, op.operands[1], out):
        return False, "left: dynamic shapes"
    x_shape, z_shape, w_shape = tensor_shape(x), tensor_shape(dest), tensor_shape(op.operands[1])
    o_shape = tensor_shape(out)
    assert x_shape and z_shape and w_shape and o_shape  # ranked and static (checked above)
    for attr, what in (("strides", "its own stride"), ("dilations", "a dilation")):
        if attr in op.attributes and list(ir.DenseIntElementsAttr(op.attributes[attr])) != [1, 1]:
            return False, f"left: the conv has {what}"
    offsets, sizes = _static("static_offsets", ins), _static("static_sizes", ins)
    if ins.operands[2:] or offsets[:2] != [0, 0] or strides[:2] != [1, 1]:
        return False, "left: the insert is offset, dynamic or strided along batch/channels"
    if sizes != x_shape or sizes[:2] != z_shape[:2]:
        return False, "left: a partial insert"
    if not _zero_fill(dest):
        return False, "left: the tensor the input is inserted into is not all zeros"
    if num_uses(ins.results[0]) != 1:
        return False, "left: the zero-inserted tensor has other uses"
    n, f, oh, ow = o_shape
    kh, kw = w_shape[2:]
    split = [
        _phases(o, k, s, p)
        for o, k, s, p in ((oh, kh, strides[2], offsets[2]), (ow, kw, strides[3], offsets[3]))
    ]
    why = next((s for s in split if isinstance(s, str)), None)
    if why is not None:
        return False, f"left: {why}"
    ph, pw = split
    assert isinstance(ph, Phases) and isinstance(pw, Phases)
    w = ev.value(op.operands[1])
    if w is None or not np.all(np.isfinite(w)):
        return False, "left: the filter is not a finite constant"
    init = ev.per_channel_init(op.operands[2], 1)
    if init is None:
        return False, "left: the conv's init is not a per-channel constant"
    sh, sw = ph.stride, pw.stride
    c = x_shape[1]
    ohp, owp = oh // sh, ow // sw
    elem = ir.RankedTensorType(out.type).element_type
    # one conv per phase group: all phases at once where they share taps and rows, else one
    # per phase (its own taps over its own window), concatenated in (a, b, f) order
    groups = (
        [(list(range(sh)), list(range(sw)))]
        if ph.uniform and pw.uniform
        else [([a], [b]) for a in range(sh) for b in range(sw)]
    )
    with ir.InsertionPoint(op), op.location:
        parts = []
        for rows, cols in groups:
            filt = np.stack([w[:, :, ph.taps[a]][:, :, :, pw.taps[b]] for a in rows for b in cols])
            th, tw = filt.shape[3], filt.shape[4]
            filt = np.ascontiguousarray(filt.reshape(-1, c, th, tw)).astype(w.dtype)
            xin = _window(x, 2, ph.r0[rows[0]], ohp + th - 1)
            xin = _window(xin, 3, pw.r0[cols[0]], owp + tw - 1)
            n_out = filt.shape[0]
            zinit = channel_init(
                np.tile(init.astype(w.dtype), n_out // f), [n, n_out, ohp, owp], 1, elem
            )
            cst = constant_op(filt, "xgen_tconv_filter").result
            parts.append(
                linalg.conv_2d_nchw_fchw(xin, cst, outs=[zinit], strides=[1, 1], dilations=[1, 1])
            )
        z = parts[0]
        if len(parts) > 1:
            z_ty = ir.RankedTensorType.get([n, sh * sw * f, ohp, owp], elem)
            z = tensor.ConcatOp(z_ty, 1, parts).result
        six = [n, sh, sw, f, ohp, owp]
        z = tensor.ExpandShapeOp(
            ir.RankedTensorType.get(six, elem), z, [[0], [1, 2, 3], [4], [5]], [], six
        ).result
        y = transpose(z, [0, 3, 4, 1, 5, 2])  # [N, F, OHp, sh, OWp, sw]
        y = tensor.CollapseShapeOp(
            ir.RankedTensorType.get([n, f, oh, ow], elem), y, [[0], [1], [2, 3], [4, 5]]
        ).result
    out.replace_all_uses_with(y)
    op.erase()
    erase_dead_tree([ins.results[0]])
    taps = "x".join(str(len(t)) for t in (ph.taps[0], pw.taps[0]))
    how = f"one conv of {taps} taps" if len(groups) == 1 else f"{len(groups)} convs"
    return True, f"{sh}x{sw}-strided {kh}x{kw} transposed conv {c}->{f}: {sh * sw} phases, {how}"


def transposed_convs(
    module_op: ir.Operation, opts: TransposedConvsOptions | None = None
) -> Counter:
    """Rewrite every matching conv; returns counts by what happened."""
    opts = opts or TransposedConvsOptions()
    counts: Counter[str] = Counter()
    with module_op.context:
        ev = ConstEval(module_op, WEIGHT_ELEMENTS)
        for op in ops_named(module_op, "linalg.conv_2d_nchw_fchw"):
            where = format_location(op.location)
            rewritten, done = rewrite_one(op, ev)
            if done is None:
                continue
            counts["linalg.conv_2d_nchw_fchw as phases" if rewritten else done] += 1
            if opts.verbose:
                print(f"xgen-transposed-convs: {where}: {done}", file=sys.stderr)
    return counts


@register_pass(
    "xgen-transposed-convs",
    "a transposed conv (a conv over a zero-inserted input) as one conv per output phase over "
    "the real input, interleaved: no products with inserted zeros.",
    TransposedConvsOptions,
)
def _pass(module_op: ir.Operation, opts: TransposedConvsOptions | None) -> Counter:
    return transposed_convs(module_op, opts)
