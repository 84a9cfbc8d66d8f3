"""xgen-winograd-convs: 3x3 stride-1 convolutions as Winograd F(4x4, 3x3) or F(2x2, 3x3)
(opt-in).

Why: a strength reduction of the conv itself. Each m x m output tile of a 3x3 conv needs
(m+2)^2 multiplies per (input, output) channel pair instead of 9 m^2 (36 instead of 144 for
m = 4, 16 instead of 36 for m = 2): the tile's input patch and the filter are taken to a
transformed domain (``V = Bt d B``, ``U = G g Gt``), multiplied there elementwise, which over
the input channels is one batched GEMM ``[(m+2)^2, tiles, C] x [(m+2)^2, C, F]``, and brought
back (``Y = At M A``). The filter transform runs here, in float64, once (the weights are
constants); the input and output transforms are linalg.generics.

Which tile: F(4x4) when the output has at least ``min-tiles`` 4x4 tiles, else F(2x2) when it
has that many 2x2 tiles, else the conv stays direct. Few tiles make the GEMM a few-row one that
streams the (m+2)^2/9 times larger transformed filter: measured on this project's 2-core
AVX-512 VM, ResNet-18's 7x7x512 convs took 1.65 ms as F(4x4) (4 tiles) against ~1.45 ms
direct and ~1.0 ms as F(2x2) (16 tiles). Per conv in the model (direct -> Winograd, ms):
56x56x64 1.11 -> ~0.55, 28x28x128 1.07 -> ~0.55, 14x14x256 1.17 -> ~0.75, 7x7x512 1.45 -> ~1.1.

Size: the transformed filter is (m+2)^2/9 times the original (4x for F(4x4), 1.8x for F(2x2));
ResNet-18's module grows from 46.8 to 97.1 MB.

Numerics: exact in real arithmetic, not in float. The transforms multiply by constants such
as 1/6 and sum up to 36 terms, so results differ from the direct conv by more than float
reassociation (measured on one 14x14x256 conv: max |error| 3e-4 on outputs of magnitude 19,
against 3e-5 for the direct conv, both against a float64 reference). Inf or NaN in one input
pixel spreads to its whole output tile. Hence the cpu pipeline runs this pass only when the
user opts in (``target_options={"winograd": "true"}``).

What it matches: ``linalg.conv_2d_nchw_fchw`` and ``linalg.conv_2d_nhwc_hwcf`` with a 3x3
constant f32 filter, unit strides and dilations, static shapes, and an accumulator init that
is a constant fill or a per-channel broadcast (the bias). Everything else is left alone.

Bound: a conv whose transformed filter would exceed ``max-filter-mb`` (default 1024 MB; the
float64 transform needs about three times that while it runs) stays direct, counted as
skipped with the reason, rather than failing the compile with a MemoryError.

Transform matrices: the Cook-Toom construction on the points 0, 1, -1, 2, -2, infinity
(F(4x4)) and 0, 1, -1, infinity (F(2x2)), the choices with the smallest constants.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .._mlir import arith, ir, linalg, tensor
from ..diagnostics import format_location
from ..irutil import constant_op, ops_named
from .consteval import ConstEval
from .generic_util import (
    channel_init,
    empty,
    erase_dead_tree,
    fill,
    generic,
    pad_high,
    transpose,
)
from .nhwc_convs import TO_NCHW, nhwc_input
from .registry import register_pass

R = 3  # filter size


@dataclass(frozen=True)
class Transform:
    """F(m x m, 3x3): ``bt`` (a x a), ``g`` (a x 3), ``at`` (m x a), a = m + 2."""

    m: int
    bt: np.ndarray
    g: np.ndarray
    at: np.ndarray

    @property
    def a(self) -> int:
        return self.m + R - 1


F4 = Transform(
    4,
    np.array(
        [
            [4, 0, -5, 0, 1, 0],
            [0, -4, -4, 1, 1, 0],
            [0, 4, -4, -1, 1, 0],
            [0, -2, -1, 2, 1, 0],
            [0, 2, -1, -2, 1, 0],
            [0, 4, 0, -5, 0, 1],
        ],
        np.float64,
    ),
    np.array([[6, 0, 0], [-4, -4, -4], [-4, 4, -4], [1, 2, 4], [1, -2, 4], [0, 0, 24]]) / 24.0,
    np.array(
        [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]],
        np.float64,
    ),
)
F2 = Transform(
    2,
    np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.float64),
    np.array([[2, 0, 0], [1, 1, 1], [1, -1, 1], [0, 0, 2]]) / 2.0,
    np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.float64),
)
TRANSFORMS = (F4, F2)  # tried in this order: the larger tile saves more multiplies

_CONVS = {"linalg.conv_2d_nchw_fchw": True, "linalg.conv_2d_nhwc_hwcf": False}  # name -> NCHW?


@dataclass
class WinogradOptions:
    enable: bool = True  # the pipeline's opt-in switch (target option `winograd`)
    min_tiles: int = 16  # rewrite only convs with this many output tiles (4x4, else 2x2)
    verbose: bool = False  # print every rewritten conv to stderr
    max_filter_mb: int = 1024  # leave convs whose transformed filter would be larger direct


def filter_transform(weight_hwcf: np.ndarray, t: Transform = F4) -> np.ndarray:
    """``U[a*A+b, c, f] = (G g Gt)[a, b]`` per (c, f), in float64, rounded once to f32."""
    u = np.einsum("ai,ijcf,bj->abcf", t.g, weight_hwcf.astype(np.float64), t.g)
    return np.ascontiguousarray(u.reshape(t.a * t.a, *u.shape[2:]), np.float32)


def _dim(i: int) -> ir.AffineExpr:
    return ir.AffineDimExpr.get(i)


def _const(c: int) -> ir.AffineExpr:
    return ir.AffineConstantExpr.get(c)


def _map(n: int, exprs: list[ir.AffineExpr]) -> ir.AffineMap:
    return ir.AffineMap.get(n, 0, exprs)


def _taps(
    inputs: list[tuple[ir.Value, ir.AffineMap]],
    coeffs: list[ir.Value],
    coeff_dim: int,
    init: ir.Value,
    accumulate: bool = False,
) -> ir.Value:
    """One all-parallel generic: ``out = sum_k x_k * coeff_k[loop coeff_dim]`` (plus ``init``'s
    value when ``accumulate``).

    Each transform step is a 1-D transform along one axis of the tile: reads of the same
    tensor at (m+2) tap offsets (each a slice), weighted by one column of the transform
    matrix. Written as parallel loops (not a reduction), so IREE vectorizes it along the
    channels like any elementwise op; IREE can put the elementwise ops after the conv
    (bias, batch norm, ReLU) into the output transform's last dispatch."""
    rank = len(ir.RankedTensorType(init.type).shape)
    cmap = _map(rank, [_dim(coeff_dim)])
    maps = (
        [m for _, m in inputs] + [cmap] * len(coeffs) + [_map(rank, [_dim(i) for i in range(rank)])]
    )
    k = len(inputs)

    def build(args: list[ir.Value]) -> list[ir.Value]:
        acc = args[-1] if accumulate else None
        for x, c in zip(args[:k], args[k : 2 * k], strict=True):
            term = arith.MulFOp(x, c).result
            acc = term if acc is None else arith.AddFOp(acc, term).result
        return [acc]

    op = generic([v for v, _ in inputs] + coeffs, maps, init, ["parallel"] * rank, build)
    return op.results[0]


def _slice(
    src: ir.Value, offsets: list[int], sizes: list[int], strides: list[int], drop: int | None = None
) -> ir.Value:
    """A static ``tensor.extract_slice``; ``drop``: a size-1 dim left out of the result."""
    elem = ir.RankedTensorType(src.type).element_type
    shape = [d for i, d in enumerate(sizes) if i != drop]
    return tensor.ExtractSliceOp(
        ir.RankedTensorType.get(shape, elem), src, [], [], [], offsets, sizes, strides
    ).result


def _columns(matrix: np.ndarray) -> list[ir.Value]:
    return [
        constant_op(np.ascontiguousarray(matrix[:, k], np.float32), "xgen_winograd").result
        for k in range(matrix.shape[1])
    ]


def _winograd_nhwc(
    x: ir.Value,
    t: Transform,
    u: np.ndarray,
    bias: np.ndarray,
    out_hw: tuple[int, int],
    f32: ir.Type,
) -> ir.Value:
    """The conv of the padded NHWC input ``x`` ([N, mTh+2, mTw+2, C]) as transforms and one
    batched GEMM; returns [N, Ho, Wo, F] with ``bias`` added."""
    n, hp, wp, c = ir.RankedTensorType(x.type).shape
    m_out, a_in = t.m, t.a
    th, tw = (hp - 2) // m_out, (wp - 2) // m_out
    f = u.shape[2]
    zero = arith.ConstantOp(f32, ir.FloatAttr.get(f32, 0.0)).result
    bt_cols, at_cols = _columns(t.bt), _columns(t.at)

    # Every step reads its operand through strided/offset slices, so all indexing maps are
    # projected permutations (what linalg's vectorizer needs; a map such as 4*th + i makes
    # IREE emit scalar loops: measured 0.25 ms for the 56x56x64 input step, scalar FMAs).
    # m = m_out, a = a_in = m + 2 below.
    # V1[n, a, th, w, c] = sum_i Bt[a, i] * x[n, m*th + i, w, c]
    loops = _map(5, [_dim(0), _dim(2), _dim(3), _dim(4)])
    rows = [(_slice(x, [0, i, 0, 0], [n, th, wp, c], [1, m_out, 1, 1]), loops) for i in range(a_in)]
    v1 = _taps(rows, bt_cols, 1, empty([n, a_in, th, wp, c], f32))
    # V[a, b, n, th, tw, c] = sum_j Bt[b, j] * V1[n, a, th, m*tw + j, c]
    loops = _map(6, [_dim(2), _dim(0), _dim(3), _dim(4), _dim(5)])
    cols = [
        (_slice(v1, [0, 0, 0, j, 0], [n, a_in, th, tw, c], [1, 1, 1, m_out, 1]), loops)
        for j in range(a_in)
    ]
    v = _taps(cols, bt_cols, 1, empty([a_in, a_in, n, th, tw, c], f32))
    tiles = n * th * tw
    v = tensor.CollapseShapeOp(
        ir.RankedTensorType.get([a_in * a_in, tiles, c], f32), v, [[0, 1], [2, 3, 4], [5]]
    ).result
    # M[ab, t, f] = sum_c V[ab, t, c] * U[ab, c, f]
    u_val = constant_op(u, "xgen_winograd_filter").result
    acc = fill(zero, empty([a_in * a_in, tiles, f], f32))
    m = linalg.batch_matmul(v, u_val, outs=[acc])
    expanded = [a_in, a_in, n, th, tw, f]
    m = tensor.ExpandShapeOp(
        ir.RankedTensorType.get(expanded, f32), m, [[0, 1], [2, 3, 4], [5]], [], expanded
    ).result
    # Y1[p, b, n, th, tw, f] = sum_a At[p, a] * M[a, b, n, th, tw, f]
    loops = _map(6, [_dim(i) for i in range(1, 6)])
    rows = [
        (_slice(m, [a, 0, 0, 0, 0, 0], [1, a_in, n, th, tw, f], [1] * 6, drop=0), loops)
        for a in range(a_in)
    ]
    y1 = _taps(rows, at_cols, 0, empty([m_out, a_in, n, th, tw, f], f32))
    # Y[n, th, p, tw, q, f] = bias[f] + sum_b At[q, b] * Y1[p, b, n, th, tw, f]
    loops = _map(6, [_dim(2), _dim(0), _dim(1), _dim(3), _dim(5)])
    cols = [
        (_slice(y1, [0, b, 0, 0, 0, 0], [m_out, 1, n, th, tw, f], [1] * 6, drop=1), loops)
        for b in range(a_in)
    ]
    init = channel_init(bias.astype(np.float32), [n, th, m_out, tw, m_out, f], 5, f32)
    y = _taps(cols, at_cols, 4, init, accumulate=True)
    full = [n, th * m_out, tw * m_out, f]
    y = tensor.CollapseShapeOp(
        ir.RankedTensorType.get(full, f32), y, [[0], [1, 2], [3, 4], [5]]
    ).result
    ho, wo = out_hw
    if (ho, wo) != (full[1], full[2]):  # the last tile row/column ran past the output
        y = _slice(y, [0, 0, 0, 0], [n, ho, wo, f], [1, 1, 1, 1])
    return y


def _rewrite(
    op: ir.Operation, ev: ConstEval, min_tiles: int, max_filter_mb: int = 1024
) -> tuple[Transform, int] | str | None:
    """Rewrite ``op`` if it matches; returns the transform used and the tile count, or why a
    matching conv was skipped."""
    nchw = _CONVS[op.name]
    out_ty = ir.RankedTensorType(op.results[0].type)
    in_ty = ir.RankedTensorType(op.operands[0].type)
    if str(out_ty.element_type) != "f32" or not (
        out_ty.has_static_shape and in_ty.has_static_shape
    ):
        return None
    strides = list(ir.DenseIntElementsAttr(op.attributes["strides"]))
    dilations = list(ir.DenseIntElementsAttr(op.attributes["dilations"]))
    w_shape = ir.RankedTensorType(op.operands[1].type).shape
    kh, kw = (w_shape[2], w_shape[3]) if nchw else (w_shape[0], w_shape[1])
    if (kh, kw) != (R, R) or strides != [1, 1] or dilations != [1, 1]:
        return None
    n, ho, wo = (out_ty.shape[0], *out_ty.shape[2:]) if nchw else tuple(out_ty.shape[:3])
    fits = [t for t in TRANSFORMS if n * -(-ho // t.m) * -(-wo // t.m) >= min_tiles]
    if not fits:
        return None
    t = fits[0]
    th, tw = -(-ho // t.m), -(-wo // t.m)
    channels = 1
    for d in w_shape:
        channels *= d
    filter_mb = t.a * t.a * (channels // (R * R)) * 4 / 2**20
    if filter_mb > max_filter_mb:
        return f"transformed filter > {max_filter_mb} MB"
    weight = ev.value(op.operands[1])
    bias = ev.per_channel_init(op.operands[2], 1 if nchw else 3)
    if weight is None or weight.dtype != np.float32 or bias is None:
        return None
    hwcf = weight.transpose(2, 3, 1, 0) if nchw else weight
    extra = (th * t.m - ho, tw * t.m - wo)  # rows/cols past the input
    f32 = out_ty.element_type
    with ir.InsertionPoint(op), op.location:
        x = nhwc_input(op.operands[0], extra) if nchw else pad_high(op.operands[0], extra)
        y = _winograd_nhwc(x, t, filter_transform(hwcf, t), bias, (ho, wo), f32)
        if nchw:
            y = transpose(y, TO_NCHW)
    old = list(op.operands)
    op.results[0].replace_all_uses_with(y)
    op.erase()
    erase_dead_tree(old)
    return t, n * th * tw


def winograd_convs(module_op: ir.Operation, opts: WinogradOptions | None = None) -> Counter:
    """Rewrite every matching conv; returns counts by op name and tile."""
    opts = opts or WinogradOptions()
    counts: Counter[str] = Counter()
    if not opts.enable:
        return counts
    with module_op.context:
        ev = ConstEval(module_op)
        for op in ops_named(module_op, *_CONVS):
            where, name = format_location(op.location), op.name
            done = _rewrite(op, ev, opts.min_tiles, opts.max_filter_mb)
            if isinstance(done, str):
                counts[f"{name} skipped: {done}"] += 1
                if opts.verbose:
                    print(
                        f"xgen-winograd-convs: {where}: {name} left direct: {done}", file=sys.stderr
                    )
            elif done:
                t, tiles = done
                counts[f"{name} as F({t.m}x{t.m}, 3x3)"] += 1
                if opts.verbose:
                    print(
                        f"xgen-winograd-convs: {where}: {name} -> Winograd F({t.m}x{t.m}, 3x3), "
                        f"{tiles} tiles",
                        file=sys.stderr,
                    )
    return counts


@register_pass(
    "xgen-winograd-convs",
    "3x3 stride-1 convs, constant filters -> Winograd F(4x4/2x2, 3x3): transforms + batched GEMM.",
    WinogradOptions,
)
def _pass(module_op: ir.Operation, opts: WinogradOptions | None) -> Counter:
    return winograd_convs(module_op, opts)
