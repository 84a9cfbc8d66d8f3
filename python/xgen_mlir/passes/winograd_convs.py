"""xgen-winograd-convs: 3x3 stride-1 convolutions as Winograd F(4x4, 3x3) or F(2x2, 3x3).

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
pixel spreads to its whole output tile.

Modes (option ``enable``, the cpu target's ``winograd`` option): ``true`` rewrites every conv it
matches (tile by ``min-tiles``), ``false`` none, ``tuned`` exactly the convs whose measurement
on this host (``tuning/choices.py``, a record of kind ``algorithm`` in the tuning database,
keyed by the conv's signature: shapes, pad, bias and the elementwise epilogue) says Winograd
was at least ``tunedb.MIN_GAIN`` faster than the direct conv, with the tile that won; every
other conv stays direct. ``compile()`` hands the records of the running host through
``CHOICES``; ``xgen-opt`` reads them from ``db`` (default: the default tuning database).

What it matches: ``linalg.conv_2d_nchw_fchw`` and ``linalg.conv_2d_nhwc_hwcf`` with a 3x3
constant f32 filter, unit strides and dilations, static shapes, and an accumulator init that
is a constant fill or a per-channel broadcast (the bias). Everything else is left alone.

Bound: a conv whose transformed filter would exceed ``max-filter-mb`` (default 1024 MB; the
float64 transform needs about three times that while it runs) stays direct, counted as
skipped with the reason, rather than failing the compile with a MemoryError.

Kernel libraries (option ``offload=tuned``): the same records may say a conv, or a linear layer
(a ``linalg.matmul`` / one-weight ``linalg.batch_matmul`` with constant weights), ran faster
offloaded to a kernel library (algorithm ``onednn``, in the compile's compute type); the pass
then marks it (``byoc.OFFLOAD_ATTR``) for ``xgen-byoc-offload``. One pass decides both, since
for a 3x3 conv Winograd and the library compete for the same op.

Transform matrices: the Cook-Toom construction on the points 0, 1, -1, 2, -2, infinity
(F(4x4)) and 0, 1, -1, infinity (F(2x2)), the choices with the smallest constants.
"""

from __future__ import annotations

import functools
import hashlib
import math
import sys
from collections import Counter
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._mlir import arith, ir, linalg, tensor
from ..byoc import OFFLOAD_ATTR, ONEDNN, backend_named
from ..byoc.onednn import matmul_symbol
from ..diagnostics import format_location
from ..errors import BackendCompileError
from ..fusion.conv_tiling import vector_tiles_misfit
from ..fusion.lowering import TILED_FOR_VECTOR_BITS
from ..irutil import constant_op, ops_named
from ..tunedb import (
    ALGORITHM,
    MIN_GAIN,
    REJECTED_IN_MODEL,
    HostIdentity,
    Record,
    choice_records_for,
    readable_detail,
)
from .byoc_offload import (
    best_in_model,
    group_signature,
    is_integer,
    linear_weights,
    not_static_int8,
    quantized_operands,
)
from .consteval import WEIGHT_ELEMENTS, ConstEval
from .gemm_kernels import GEMM, GROUP_ATTR, KERNEL_ATTR, GemmKernelOptions, gemm_parts
from .generic_util import (
    channel_init,
    empty,
    erase_dead_tree,
    fill,
    generic,
    pad_high,
    transpose,
)
from .kernel_match import NoMatch
from .nhwc_convs import TO_NCHW, nhwc_input
from .registry import PassFailure, register_pass

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

# name -> NCHW? (the integer conv of a quantized model: a kernel library's choice only)
_CONVS = {
    "linalg.conv_2d_nchw_fchw": True,
    "linalg.conv_2d_nhwc_hwcf": False,
    "linalg.conv_2d_nchw_fchw_q": True,
}
# Linear layers a kernel library may run instead (offload=tuned only: no Winograd form)
_MATMULS = (
    "linalg.matmul",
    "linalg.batch_matmul",
    "linalg.quantized_matmul",
    "linalg.quantized_batch_matmul",
)


MODES = ("false", "true", "tuned")
# The algorithm name of the generated GEMM kernel's records
GEMM_ALGORITHM = "xgen_gemm"
# ... and of the generated attention kernel's (passes/attention_kernels.py decides those)
ATTENTION_ALGORITHM = "xgen_attention"
# ... and of the block-sparse kernel's (passes/block_sparse.py decides those, before this pass)
BLOCK_ALGORITHM = "xgen_block"


@dataclass
class WinogradOptions:
    # "true": every conv it matches; "false": none; "tuned": those the tuning database's
    # measurement on this host says Winograd wins (the target option `winograd`)
    enable: str = "true"
    min_tiles: int = 16  # "true": rewrite only convs with this many output tiles (4x4, else 2x2)
    verbose: bool = False  # print every rewritten conv (tuned: every decision) to stderr
    max_filter_mb: int = 1024  # leave convs whose transformed filter would be larger direct
    db: str = ""  # "tuned" outside compile(): the tuning database ("": the default one)
    threads: int = 0  # "tuned": the thread count the records were measured with (0: this host's)
    # the target's offload option: "tuned" also weighs each conv's measured BYOC offload
    # (records of algorithm "onednn") and marks the convs it wins (``byoc.OFFLOAD_ATTR``) for
    # xgen-byoc-offload; precision picks the offload records of the matching compute type
    offload: str = "none"
    # the target's gemm_kernels option: "tuned" also weighs each linear layer's measured
    # generated GEMM kernel (records of algorithm "xgen_gemm") and marks the layers it wins
    # (``gemm_kernels.KERNEL_ATTR``) for xgen-gemm-kernels; "true" marks every linear layer
    gemm: str = "false"
    precision: str = "fp32"
    # the target's SIMD width: with offload=tuned, an unmeasured f32 KxK conv starts in the
    # kernel library on a target whose width xgen_mlir's own tiles were not made for
    vector_bits: int = 0
    # the target has bf16 matrix tiles (AMX-BF16): with offload=tuned, an unmeasured bf16
    # Linear layer starts in the kernel library, whose bf16 GEMMs reach them
    bf16_tiles: int = 0
    # with offload=tuned, the model's float convs the library takes as one group (the target
    # option offload_convs): "each" by its own records and priors; "all" every one in the
    # library; "tuned" all of them where xgen_mlir.tune measured that faster in the model
    # (conv_group_signature), else each
    convs: str = "each"


@dataclass
class TunedChoices:
    """What ``enable=tuned`` decides from: this host's ``algorithm`` records per conv
    signature (``tunedb.choice_records_for``); the pass fills ``log`` with each conv's
    decision and why (``compile()`` puts it in ``report.tuning.choices``)."""

    records: dict[str, list[Record]] = field(default_factory=dict)
    source: str = ""
    log: list[tuple[str, str, str]] = field(default_factory=list)  # (conv, decision, why)


# compile() sets this around its graph steps (graph passes have no shared state object).
CHOICES: ContextVar[TunedChoices | None] = ContextVar("xgen_winograd_choices", default=None)


def winograd_config(m: int, kernel: bool = False) -> dict[str, Any]:
    """The config of an ``algorithm`` record for Winograd F(m x m, 3x3), its batched GEMM in
    IREE's code or (``kernel``) in xgen_mlir's generated GEMM kernel; its baseline is the
    direct conv."""
    config = {"kind": ALGORITHM, "algorithm": "winograd", "m": m}
    return {**config, "gemm": GEMM} if kernel else config


def _gemm_kernel(config: dict[str, Any]) -> bool:
    """Whether a Winograd config runs its batched GEMM in the generated kernel."""
    return config.get("gemm") == GEMM


def offload_config(backend: str, compute: str, impl: str = "") -> dict[str, Any]:
    """The config of an ``algorithm`` record for a conv run by a kernel library (BYOC,
    ``passes/byoc_offload.py``) computing in ``compute`` (f32, bf16), as built here (the
    library's version: ``library_matches``), with the library's implementation family
    ``impl`` if one is asked for (byoc/onednn.py ``IMPL_FAMILIES``; else its first choice);
    its baseline is the direct conv through IREE."""
    library = backend_named(backend).library()
    config = {"kind": ALGORITHM, "algorithm": backend, "compute": compute, "library": library}
    return {**config, "impl": impl} if impl else config


def library_matches(config: dict[str, Any]) -> bool:
    """Whether an offload record was measured with the library version the plugin is built
    against here (records of another version, or from before records named it, are not)."""
    try:
        backend = backend_named(str(config.get("algorithm")))
    except ValueError:
        return False
    return bool(config.get("library")) and config.get("library") == backend.library()


def gemm_config(group: int = 0) -> dict[str, Any]:
    """The config of an ``algorithm`` record for a linear layer run by xgen_mlir's generated
    GEMM kernel (``passes/gemm_kernels.py``) with ``group`` panels per workgroup (0: the
    kernel's default); its baseline is IREE's code for the layer."""
    config = {"kind": ALGORITHM, "algorithm": GEMM_ALGORITHM, "compute": "f32"}
    return {**config, "group": group} if group else config


def variant_name(config: dict[str, Any]) -> str:
    if config.get("algorithm") == BLOCK_ALGORITHM:
        r, c = config.get("block", (0, 0))
        return f"{BLOCK_ALGORITHM} {r}x{c} at {float(config.get('density', 0)):.2f}"
    if config.get("algorithm") == "winograd":
        m = int(config.get("m", 0))
        return f"F({m}x{m})" + (" in the GEMM kernel" if _gemm_kernel(config) else "")
    group = f" group={config['group']}" if config.get("group") else ""
    return f"{library_label(config)} {config.get('compute', '')}".strip() + group


def library_label(config: dict[str, Any]) -> str:
    """A record's algorithm, with the implementation family it asked for ("onednn[jit]")."""
    impl = f"[{config['impl']}]" if config.get("impl") else ""
    return f"{config.get('algorithm')}{impl}"


def decide_algorithm(
    records: list[Record], allowed: Any = lambda config: config.get("algorithm") == "winograd"
) -> tuple[dict[str, Any] | None, str]:
    """The variant to compute a conv with (None: IREE's direct conv) from its measurements on
    this host, among the records ``allowed(config)`` admits, and why: the one with the largest
    speedup over the direct conv timed beside it, if at least ``MIN_GAIN``; failed variants
    (wrong numbers, ...) and those rejected in the model are never chosen. A library's
    implementation family asked for by name (``impl``) replaces the library's own choice only
    where it measured ``MIN_GAIN`` faster than that: within the noise, the default stays (a
    0.335 against 0.337 ms "win" otherwise picked oneDNN's older JIT kernels on AMX)."""
    records = [r for r in records if allowed(r.config)]
    if not records:
        return None, "no measurement on this host (xgen_mlir.tune measures it)"
    parts, best, best_speedup = [], None, 0.0
    for r in sorted(
        records, key=lambda r: (str(r.config.get("algorithm")), -int(r.config.get("m", 0)))
    ):
        name = variant_name(r.config)
        if r.speedup is None or r.detail.startswith(REJECTED_IN_MODEL):
            detail = readable_detail(r.detail)
            parts.append(f"{name} {r.status}{': ' + detail if detail else ''}")
            continue
        assert r.seconds is not None and r.baseline_seconds is not None
        parts.append(
            f"{name} {r.seconds * 1e3:.3f} ms vs direct {r.baseline_seconds * 1e3:.3f} ms "
            f"({r.speedup:.2f}x)"
        )
        if r.speedup > best_speedup:
            best, best_speedup = r.config, r.speedup
    measured = "measured " + ", ".join(parts)
    if best is None or best_speedup < MIN_GAIN:
        return None, f"{measured}: below the {MIN_GAIN:.2f}x needed"
    if best.get("impl"):
        default = {k: v for k, v in best.items() if k != "impl"}
        own = [
            r.speedup
            for r in records
            if r.config == default and r.speedup and not r.detail.startswith(REJECTED_IN_MODEL)
        ]
        if own and own[0] >= MIN_GAIN and best_speedup < own[0] * MIN_GAIN:
            return default, f"{measured}: the library's own choice (the rest within the noise)"
    return best, measured


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
    kernel: bool = False,
) -> ir.Value:
    """The conv of the padded NHWC input ``x`` ([N, mTh+2, mTw+2, C]) as transforms and one
    batched GEMM (marked for xgen-gemm-kernels with ``kernel``); returns [N, Ho, Wo, F] with
    ``bias`` added."""
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
    if kernel:
        _mark(m.owner.operation, gemm_config())
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


@dataclass
class Candidate:
    """A conv this pass can rewrite: its signature (the key of its measurements) and the
    output tiles each transform would take."""

    op: ir.Operation
    signature: str
    description: str
    tiles: dict[int, int]  # m -> output tiles of m x m


def _match(op: ir.Operation) -> dict[int, int] | None:
    """The tiles per transform when ``op`` has the shape this pass rewrites (3x3, unit strides
    and dilations, static f32): checked before any weight is read."""
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
    return {t.m: n * -(-ho // t.m) * -(-wo // t.m) for t in TRANSFORMS}


def _filter_mb(op: ir.Operation, t: Transform) -> float:
    channels = 1
    for d in ir.RankedTensorType(op.operands[1].type).shape:
        channels *= d
    return t.a * t.a * (channels // (R * R)) * 4 / 2**20


def _rewrite(
    op: ir.Operation, ev: ConstEval, t: Transform, max_filter_mb: int = 1024, kernel: bool = False
) -> int | str | None:
    """Rewrite ``op`` (it passed ``_match``) with ``t``, its batched GEMM marked for the
    generated kernel with ``kernel``; returns the tile count, why a matching conv was skipped,
    or None when its filter or init is not a constant."""
    if _filter_mb(op, t) > max_filter_mb:
        return f"transformed filter > {max_filter_mb} MB"
    nchw = _CONVS[op.name]
    out_ty = ir.RankedTensorType(op.results[0].type)
    n, ho, wo = (out_ty.shape[0], *out_ty.shape[2:]) if nchw else tuple(out_ty.shape[:3])
    th, tw = -(-ho // t.m), -(-wo // t.m)
    weight = ev.value(op.operands[1])
    bias = ev.per_channel_init(op.operands[2], 1 if nchw else 3)
    if weight is None or weight.dtype != np.float32 or bias is None:
        return None
    hwcf = weight.transpose(2, 3, 1, 0) if nchw else weight
    extra = (th * t.m - ho, tw * t.m - wo)  # rows/cols past the input
    f32 = out_ty.element_type
    with ir.InsertionPoint(op), op.location:
        x = nhwc_input(op.operands[0], extra) if nchw else pad_high(op.operands[0], extra)
        y = _winograd_nhwc(x, t, filter_transform(hwcf, t), bias, (ho, wo), f32, kernel)
        if nchw:
            y = transpose(y, TO_NCHW)
    old = list(op.operands)
    op.results[0].replace_all_uses_with(y)
    op.erase()
    erase_dead_tree(old)
    return n * th * tw


def _owner(v: ir.Value) -> ir.Operation | None:
    o = v.owner
    return o.operation if isinstance(o, ir.OpView) else o if isinstance(o, ir.Operation) else None


def epilogue(op: ir.Operation, limit: int = 8) -> list[ir.Operation]:
    """The elementwise ops after a conv that IREE puts into its dispatch (or Winograd's last
    output transform): each the only reader of the previous, an all-parallel
    ``linalg.generic`` of the conv's result type (a batch norm, a residual add, a ReLU)."""
    chain: list[ir.Operation] = []
    value = op.results[0]
    while len(chain) < limit:
        uses = list(value.uses)
        if len(uses) != 1:
            break
        user = uses[0].owner
        user = user.operation if isinstance(user, ir.OpView) else user
        if user.name != "linalg.generic" or len(user.results) != 1:
            break
        if any("parallel" not in str(k) for k in ir.ArrayAttr(user.attributes["iterator_types"])):
            break
        if user.results[0].type != op.results[0].type:
            break
        chain.append(user)
        value = user.results[0]
    return chain


def _body(op: ir.Operation) -> str:
    names = [o.operation.name.split(".")[-1] for o in op.regions[0].blocks[0].operations]
    return "+".join(n for n in names if n != "yield")


def conv_signature(op: ir.Operation) -> tuple[str, str]:
    """(signature, description) of a conv for its measurements: kind, shapes, whether its
    input is a pad and its init a bias, and its elementwise epilogue (ops and how many other
    tensors they read). Convs with one signature share records, in a model or across
    models; the weights' values are not part of it."""
    nchw = _CONVS[op.name]
    w_shape = ir.RankedTensorType(op.operands[1].type).shape
    out_shape = ir.RankedTensorType(op.results[0].type).shape
    c, f = (w_shape[1], w_shape[0]) if nchw else (w_shape[2], w_shape[3])
    kh, kw = (w_shape[2], w_shape[3]) if nchw else (w_shape[0], w_shape[1])
    ho, wo = (out_shape[2], out_shape[3]) if nchw else (out_shape[1], out_shape[2])
    pad = _owner(op.operands[0])
    init = _owner(_init(op))
    strides = [int(v) for v in ir.DenseIntElementsAttr(op.attributes["strides"])]
    dilations = [int(v) for v in ir.DenseIntElementsAttr(op.attributes["dilations"])]
    # unit strides and dilations add nothing, so that 3x3 stride-1 signatures (Winograd's
    # records) read as before strided convs were measured too
    steps = "" if strides == [1, 1] and dilations == [1, 1] else f" s{strides} d{dilations}"
    parts = [f"conv{kh}x{kw}{steps} {c}->{f} {ho}x{wo}", "nchw" if nchw else "nhwc"]
    if out_shape[0] != 1:
        parts.append(f"n{out_shape[0]}")
    if pad is not None and pad.name == "tensor.pad":
        parts.append("pad")
    if is_integer(op):
        parts.append("int8")
    producers = [pad.name if pad is not None else "arg", init.name if init is not None else "arg"]
    return _signed(op, parts, init, [*producers, *([steps] if steps else [])])


def _signed(
    op: ir.Operation, parts: list[str], init: ir.Operation | None, canonical: list[str]
) -> tuple[str, str]:
    """(signature, description) of a conv or matmul: ``parts`` (the description so far) and
    ``canonical`` (what else tells it apart), plus its bias and elementwise epilogue; the
    signature ends in a digest of the op's types and all of that."""
    if init is not None and init.name == "linalg.broadcast":
        parts.append("+bias")
    epi = epilogue(op)
    if epi:
        parts.append("+" + ",".join(_body(e) for e in epi))
    description = " ".join(parts)
    text = "|".join(
        [
            op.name,
            str(op.operands[0].type),
            str(op.operands[1].type),
            str(op.results[0].type),
            *canonical,
            *(f"{_body(e)}/{len(e.operands)}/{e.attributes['indexing_maps']}" for e in epi),
        ]
    )
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return f"{description.replace(' ', '_')}#{digest}", description


def matmul_signature(op: ir.Operation) -> tuple[str, str]:
    """(signature, description) of a linear layer (a matmul or a batch_matmul with constant
    weights) for its measurements, as ``conv_signature`` for convs: shapes, whether its
    init is a bias, and its elementwise epilogue."""
    lhs = ir.RankedTensorType(op.operands[0].type).shape
    rhs = ir.RankedTensorType(op.operands[1].type).shape
    init = _owner(_init(op))
    rows = "x".join(str(d) for d in lhs[:-1])
    parts = [f"matmul {rows}x{lhs[-1]} * {lhs[-1]}x{rhs[-1]}"]
    if op.name in ("linalg.batch_matmul", "linalg.quantized_batch_matmul"):
        parts[0] = f"batch_{parts[0]} (one weight)"
    if is_integer(op):
        parts.append("int8")
    return _signed(op, parts, init, [init.name if init is not None else "arg"])


def _init(op: ir.Operation) -> ir.Value:
    """A conv's or matmul's accumulator init: its last operand (the integer ops have their
    zero points before it)."""
    return op.operands[len(op.operands) - 1]


def _library_integer(op: ir.Operation, ev: ConstEval) -> bool:
    """Whether integer contraction ``op`` is one xgen-byoc-offload gives a library (static
    int8 in, int32 out, constant int8 weights with zero point 0, a zero init)."""
    return not not_static_int8(op) and not isinstance(quantized_operands(op, ev), str)


def _linear_layer(op: ir.Operation, ev: ConstEval) -> bool:
    """Whether matmul ``op`` is a linear layer a kernel library may take: static f32 and
    what xgen-byoc-offload reads as constant weights and a per-column init (or an integer
    one it takes)."""
    if is_integer(op):
        return _library_integer(op, ev)
    return _static_f32(op) and not isinstance(linear_weights(op, ev), str)


def _library_conv(op: ir.Operation, ev: ConstEval) -> bool:
    """Whether conv ``op`` is one a kernel library may take: static f32 with a constant
    filter and a per-channel init, or an integer conv it takes."""
    if is_integer(op):
        return _library_integer(op, ev)
    if not _static_f32(op) or ev.value(op.operands[1]) is None:
        return False
    return ev.per_channel_init(op.operands[2], 1 if _CONVS[op.name] else 3) is not None


def _static_f32(op: ir.Operation) -> bool:
    types = [ir.RankedTensorType(v.type) for v in (op.operands[0], op.results[0])]
    return all(str(t.element_type) == "f32" and t.has_static_shape for t in types)


def candidates(module_op: ir.Operation, offload: bool = False) -> list[Candidate]:
    """Every conv this pass could rewrite (shape, constant filter and init), with its
    signature: what ``tuning/choices.py`` measures; with ``offload``, also the other static
    f32 convs with a constant filter and init, and the linear layers (a kernel library may
    run them: no tiles)."""
    found = []
    with module_op.context:
        ev = ConstEval(module_op, WEIGHT_ELEMENTS)
        if offload:
            for op in ops_named(module_op, *_MATMULS):
                if _linear_layer(op, ev):
                    found.append(Candidate(op, *matmul_signature(op), {}))
        for op in ops_named(module_op, *_CONVS):
            tiles = _match(op)
            if tiles is None and offload and _library_conv(op, ev):
                tiles = {}
            if tiles is None:
                continue
            nchw = _CONVS[op.name]
            if ev.value(op.operands[1]) is None:
                continue
            if ev.per_channel_init(_init(op), 1 if nchw else 3) is None:
                continue
            sig, desc = conv_signature(op)
            found.append(Candidate(op, sig, desc, tiles))
    return found


def rewrite_conv(
    module_op: ir.Operation,
    op: ir.Operation,
    m: int,
    max_filter_mb: int = 1024,
    kernel: bool = False,
) -> int | str | None:
    """Rewrite one conv of ``module_op`` as F(m x m, 3x3) (a variant to measure), its batched
    GEMM marked for the generated kernel with ``kernel``: its tile count, or why not."""
    t = next(t for t in TRANSFORMS if t.m == m)
    with module_op.context:
        return _rewrite(op, ConstEval(module_op), t, max_filter_mb, kernel)


def f32_compute(precision: str) -> bool:
    """Whether a compile in ``precision`` computes its f32 contractions in f32 (so the f32
    variants and priors apply to them): fp32, and int8, whose float contractions (and the
    integer ones xgen-integer-in-float made f32) stay f32; not bf16, which demotes them."""
    return precision in ("fp32", "int8")


def gemm_in_kernel(opts: WinogradOptions) -> bool:
    """Whether ``enable=true`` runs Winograd's batched GEMMs in xgen_mlir's generated GEMM
    kernel (``passes/gemm_kernels.py``) rather than IREE's batch_matmul: under ``gemm=true``
    in an fp32 compile with a C compiler here. Under ``tuned`` each conv's record says."""
    if not f32_compute(opts.precision) or opts.gemm != "true":
        return False
    return GemmKernelOptions().toolchain().available()


def load_choices(db_option: str, threads: int) -> TunedChoices:
    """A pass's ``tuned`` records outside compile() (``xgen-opt``): this host's algorithm
    records from the database its ``db`` option names ("": the default one), as measured
    with ``threads`` (0: this host's count)."""
    host = HostIdentity.current(threads=threads or None)
    db = Path(db_option) if db_option else None
    try:
        records, note = choice_records_for(db, host)
    except Exception as e:  # a missing or unreadable file named in the option
        raise PassFailure(str(e)) from None
    return TunedChoices(records, note)


def allowed_variants(mode: str, offload: str, precision: str, gemm: str = "false") -> Any:
    """Which records ``tuned`` weighs: Winograd's (unless ``winograd`` is false), with
    ``offload=tuned`` the kernel libraries' that compute in the target's precision (an
    integer contraction's records compute in s8: its signature has its types), and with
    ``gemm=tuned`` the generated GEMM kernel's in an fp32 compile (it computes f32 only)."""
    compute = "bf16" if precision == "bf16" else "f32"

    def allowed(config: dict[str, Any]) -> bool:
        if config.get("algorithm") == "winograd":
            in_kernel = _gemm_kernel(config)
            kernel_ok = gemm != "false" and f32_compute(precision)
            return mode == "tuned" and (not in_kernel or kernel_ok)
        if config.get("algorithm") == GEMM_ALGORITHM:
            return gemm == "tuned" and f32_compute(precision)
        if config.get("algorithm") in (ATTENTION_ALGORITHM, BLOCK_ALGORITHM):
            # not a dense conv's or linear layer's variant: xgen-attention-kernels and
            # xgen-raise-block-linear decide those
            return False
        return (
            offload == "tuned"
            and config.get("compute") in (compute, "s8")
            and library_matches(config)
        )

    return allowed


# The model's float convs a kernel library takes, as one group: whether they run faster all
# in the library than each by its own measurement is the whole model's question (between two
# library convs the layout changes cancel, and a standalone conv's weights stay in cache):
# ResNet-18 fp32 on an Intel Xeon with AMX, 2 threads: 15.5 ms as the priors have it, 13.9
# tuned conv by conv, 10.4 with every conv in oneDNN (docs/tuning.md).
CONV_GROUP_PREFIX = "offload of"
CONV_GROUP_ALGORITHM = "conv group"
CONV_GROUPS = ("each", "all", "tuned")


def conv_group_signature(convs: list[ir.Operation], precision: str) -> str:
    """The tuning database's signature of a model's library convs as a group."""
    return group_signature(CONV_GROUP_PREFIX, convs, "convs", precision)


def _group_compute(precision: str) -> str:
    """The compute type of a group of convs all in oneDNN: bf16 for a bf16 compile where it
    has bf16 primitives, else f32."""
    return "bf16" if precision == "bf16" and _bf16_primitives() else "f32"


def conv_group_config(precision: str) -> dict[str, Any]:
    """The ``algorithm`` record of a group of convs all run by oneDNN."""
    config = offload_config(ONEDNN.name, _group_compute(precision))
    return {**config, "algorithm": CONV_GROUP_ALGORITHM, "backend": ONEDNN.name}


def _conv_group(
    convs: list[ir.Operation], opts: WinogradOptions, choices: TunedChoices | None
) -> tuple[dict[str, Any] | None, str, str]:
    """The offload config every conv of ``convs`` (the model's float library convs) gets as
    a group (None: each its own), why, and the group's signature."""
    signature = conv_group_signature(convs, opts.precision)
    if opts.convs == "all":
        config = offload_config(ONEDNN.name, _group_compute(opts.precision))
        return config, "offload_convs=all", signature
    if opts.convs != "tuned" or choices is None:
        return None, f"offload_convs={opts.convs}", signature
    records = [
        r
        for r in choices.records.get(signature, [])
        if r.config.get("algorithm") == CONV_GROUP_ALGORITHM
        and r.config.get("library") == ONEDNN.library()
    ]
    best, said = best_in_model(records)
    if best is None:
        lost = "; ".join(f"{r.status}{': ' + r.detail if r.detail else ''}" for r in records)
        said = f"all in the library measured in the model: {lost}" if lost else "unmeasured"
        return None, f"each by its own measurement: {said}", signature
    config = offload_config(ONEDNN.name, str(best.config.get("compute", "f32")))
    return config, f"all in the library: {said}", signature


def winograd_convs(module_op: ir.Operation, opts: WinogradOptions | None = None) -> Counter:
    """Rewrite the matching convs the mode asks for; returns counts by op name and tile.
    With ``offload=tuned``, mark the convs whose measured best is a kernel library."""
    opts = opts or WinogradOptions()
    mode = str(opts.enable).lower()
    if mode not in MODES:
        raise PassFailure(f"enable={opts.enable!r} is not one of {', '.join(MODES)}")
    if opts.gemm not in MODES:
        raise PassFailure(f"gemm={opts.gemm!r} is not one of {', '.join(MODES)}")
    counts: Counter[str] = Counter()
    tuned_offload = opts.offload == "tuned"
    tuned_gemm = opts.gemm == "tuned" and f32_compute(opts.precision)
    every_gemm = opts.gemm == "true" and f32_compute(opts.precision)
    if mode == "false" and not (tuned_offload or tuned_gemm or every_gemm):
        return counts
    choices = None
    if mode == "tuned" or tuned_offload or tuned_gemm:
        choices = CHOICES.get() or load_choices(opts.db, opts.threads)
    allowed = allowed_variants(mode, opts.offload, opts.precision, opts.gemm)
    every_kernel = mode == "true" and gemm_in_kernel(opts)
    with module_op.context:
        ev = ConstEval(module_op, WEIGHT_ELEMENTS)
        if every_gemm or ((tuned_offload or tuned_gemm) and choices is not None):
            _mark_linear_layers(module_op, ev, choices, allowed, counts, opts, every_gemm)
        # the convs are this pass's only when Winograd or a tuned offload may take them
        gemm = tuned_gemm or every_gemm
        any_conv = mode != "false" or tuned_offload
        convs = ops_named(module_op, *_CONVS) if any_conv or gemm else []
        if opts.convs not in CONV_GROUPS:
            raise PassFailure(f"convs={opts.convs!r} is not one of {', '.join(CONV_GROUPS)}")
        group: list[ir.Operation] = []
        if tuned_offload and ONEDNN.unavailable() is None:
            group = [op for op in convs if not is_integer(op) and _library_conv(op, ev)]
        if len(group) < 2:  # (one conv: its own measurement is the group's)
            group = []
        group_config, group_why, group_sig = (
            _conv_group(group, opts, choices) if group else (None, "", "")
        )
        group_ids = {id(op) for op in group}
        in_group = group_ids if group_config is not None else set()
        in_library = 0  # how many of the group go to the library (the rest: IREE, Winograd)
        for op in convs:
            where, name = format_location(op.location), op.name
            if id(op) in in_group:
                assert group_config is not None
                _mark(op, group_config)
                in_library += 1
                counts[f"{name} marked for {ONEDNN.name} (the model's convs)"] += 1
                if choices is not None:
                    label = f"{ONEDNN.name} {group_config['compute']}"
                    choices.log.append((conv_signature(op)[1], label, group_why))
                continue
            gemm_conv = gemm and _gemm_conv(op, ev)
            if not any_conv and not gemm_conv:
                continue  # only the GEMM kernel is weighed, and it takes 1x1 convs only
            if every_gemm and gemm_conv:
                _mark(op, gemm_config())
                counts[f"{name} marked for {GEMM_ALGORITHM}"] += 1
                if choices is not None:
                    desc = conv_signature(op)[1]
                    choices.log.append((desc, variant_name(gemm_config()), "gemm_kernels=true"))
                continue
            tiles = _match(op)
            if tiles is None and not ((tuned_offload and _library_conv(op, ev)) or gemm_conv):
                continue
            why, desc = "", name
            t = None
            kernel = False
            if mode == "true" and tiles:
                fits = [t for t in TRANSFORMS if tiles[t.m] >= opts.min_tiles]
                t = fits[0] if fits else None
                kernel = every_kernel
            if t is None and choices is not None:
                if ev.value(op.operands[1]) is None:
                    continue  # not a candidate (not a constant filter): nothing to decide
                if ev.per_channel_init(_init(op), 1 if _CONVS[name] else 3) is None:
                    continue
                sig, desc = conv_signature(op)
                records = choices.records.get(sig, [])
                config, why = decide_algorithm(records, allowed)
                if config is None and not live_records(records, allowed):
                    config, why = unmeasured_prior(op, opts, why)
                algorithm = None if config is None else config.get("algorithm")
                if config is not None and algorithm != "winograd":
                    _mark(op, config)
                    in_library += id(op) in group_ids and algorithm == ONEDNN.name
                    label = f"{library_label(config)} {config.get('compute')}"  # onednn[jit] f32
                    choices.log.append((desc, label, why))
                    counts[f"{name} marked for {algorithm} (tuned)"] += 1
                    if opts.verbose:
                        print(
                            f"xgen-winograd-convs: {where}: {desc}: {algorithm}, {why}",
                            file=sys.stderr,
                        )
                    continue
                if config is None or not tiles:
                    choices.log.append((desc, "direct", why))
                    counts[f"{name} left direct (tuned)"] += 1
                    if opts.verbose:
                        print(
                            f"xgen-winograd-convs: {where}: {desc}: direct, {why}", file=sys.stderr
                        )
                    continue
                t = next(t for t in TRANSFORMS if t.m == int(config["m"]))
                kernel = _gemm_kernel(config)
            if t is None:
                continue
            done = _rewrite(op, ev, t, opts.max_filter_mb, kernel)
            if isinstance(done, str):
                counts[f"{name} skipped: {done}"] += 1
                if choices is not None:
                    choices.log.append((desc, "direct", done))
                if opts.verbose:
                    print(
                        f"xgen-winograd-convs: {where}: {name} left direct: {done}", file=sys.stderr
                    )
            elif done:
                gemm_note = " (GEMM kernel)" if kernel else ""
                counts[f"{name} as F({t.m}x{t.m}, 3x3){gemm_note}"] += 1
                if choices is not None:
                    choices.log.append((desc, f"Winograd F({t.m}x{t.m}, 3x3){gemm_note}", why))
                if opts.verbose:
                    said = f" ({why})" if why else ""
                    what = desc if choices is not None else name
                    print(
                        f"xgen-winograd-convs: {where}: {what} -> Winograd F({t.m}x{t.m}, 3x3), "
                        f"{done} tiles{said}",
                        file=sys.stderr,
                    )
        if group and choices is not None:
            how = "all" if group_config is not None else "each"
            decision = f"{how} ({in_library} of {len(group)} in the library)"
            choices.log.append((group_sig, decision, group_why))
    return counts


# multiply-adds per output (kh x kw x input channels) below which a bf16 compile leaves an
# unmeasured f32 conv with IREE. MobileNetV2's 3x3 stem (27): in oneDNN's bf16 primitive
# 0.26-0.34 ms, in IREE's f32 code 0.12-0.14 ms; the model 3.38-3.62 -> 3.12-3.28 ms,
# EfficientNet-B0 (the same stem) 6.42-6.51 -> 6.21-6.31. ResNet-18's 7x7 stem (147) is
# faster in the library: with it in IREE the model went 11.1-11.2 -> 11.4-11.6 ms (bf16,
# in-process, AMD EPYC Zen 4, 2 threads).
BF16_MIN_REDUCTION = 32


def live_records(records: list[Record], allowed: Any) -> bool:
    """Whether ``records`` hold a verdict on a conv that overrides its prior: an allowed
    variant measured (faster or slower than the direct conv, or failed). Records a tune
    rejected in the model do not: the model they lost to was compiled with the prior, so
    the prior is what the tune kept."""
    return any(allowed(r.config) and not r.detail.startswith(REJECTED_IN_MODEL) for r in records)


def unmeasured_prior(
    op: ir.Operation, opts: WinogradOptions, why: str = ""
) -> tuple[dict[str, Any] | None, str]:
    """What the ``tuned`` options do with conv or linear layer ``op`` before any measurement
    on this host: for an f32 linear layer or 1x1 conv the variant ``_float_linear_prior``
    names; for an f32 3x3 stride-1 conv the Winograd tile ``_winograd_prior`` names; with
    ``offload=tuned`` the library's primitive (the config of its record) for an integer conv
    or linear layer and for the f32 convs ``_float_prior_applies`` names; else None (IREE's
    code); and why (``why`` when no prior applies)."""
    if op.name not in _CONVS and not is_integer(op):
        return _float_linear_prior(op, opts, why)
    if _pointwise_conv(op) and not is_integer(op):
        return _float_linear_prior(op, opts, why)
    winograd = _winograd_prior(op, opts)
    if winograd is not None:
        m = int(winograd["m"])
        return winograd, (
            f"no measurement on this host: a 3x3 stride-1 conv of {WINOGRAD_PRIOR_MIN_CHANNELS}+"
            f" channels starts as Winograd F({m}x{m}) (xgen_mlir.tune decides)"
        )
    if opts.offload != "tuned":
        return None, why
    if is_integer(op):
        return _integer_prior(
            why, "an integer conv" if op.name in _CONVS else "an integer Linear layer"
        )
    prior = _float_prior_applies(op, opts)
    return (None, why) if prior is None else _float_conv_prior(why, *prior)


# the Winograd prior's bounds: input and output channels, output pixels per image
WINOGRAD_PRIOR_MIN_CHANNELS = 64
WINOGRAD_PRIOR_MAX_PIXELS = 56 * 56


def _winograd_prior(op: ir.Operation, opts: WinogradOptions) -> dict[str, Any] | None:
    """The Winograd tile an unmeasured f32 3x3 stride-1 conv starts with under
    ``enable=tuned`` (None: no Winograd prior): the tile ``min_tiles`` picks, for a conv of
    at least ``WINOGRAD_PRIOR_MIN_CHANNELS`` input and output channels and at most
    ``WINOGRAD_PRIOR_MAX_PIXELS`` output pixels, on a target of known vector width.

    Why: it won on every host type measured, against IREE's direct conv and oneDNN's. Tuned,
    ResNet-18's stride-1 3x3 convs (64-512 channels, 56x56 to 7x7) all went Winograd: an AMD
    Zen 4 (1.2-2.5x per conv), an AMD Zen 5 (the model 12.4 -> 8.4 ms), an AVX2-only AMD Zen 3
    (against oneDNN's convs, the model 34.6 -> 25.0 ms) and an Intel Xeon with AMX (24.4 ->
    16.9). Where it lost (Zen 4): the 3-channel stem (0.13x: the transforms are the work) and
    64 -> 64 channels at 112x112 (0.80x: the transformed input, 2.25x the input, leaves the
    caches); hence the bounds (docs/tuning.md). Numerics: within 1e-5 of the output's scale on
    ResNet-18 (``winograd=false`` forbids it); a tune replaces the prior by measurements."""
    if str(opts.enable).lower() != "tuned" or not f32_compute(opts.precision):
        return None
    if opts.vector_bits == 0:
        return None
    tiles = _match(op) if op.name in _CONVS else None
    if not tiles:
        return None
    nchw = _CONVS[op.name]
    w = ir.RankedTensorType(op.operands[1].type).shape
    cout, cin = (w[0], w[1]) if nchw else (w[3], w[2])
    out = ir.RankedTensorType(op.results[0].type).shape
    pixels = out[2] * out[3] if nchw else out[1] * out[2]
    if min(cin, cout) < WINOGRAD_PRIOR_MIN_CHANNELS or pixels > WINOGRAD_PRIOR_MAX_PIXELS:
        return None
    fits = [t for t in TRANSFORMS if tiles[t.m] >= opts.min_tiles]
    if not fits:
        return None
    return winograd_config(fits[0].m, _winograd_kernel_prior(tiles[fits[0].m], opts))


# the rows per batch (output tiles per image) from which Winograd's batched GEMM starts in
# the generated kernel on a target narrower than AVX-512
WINOGRAD_KERNEL_MIN_ROWS = 32


def _winograd_kernel_prior(rows: int, opts: WinogradOptions) -> bool:
    """Whether a Winograd prior runs its batched GEMM (``rows`` rows per batch) in xgen_mlir's
    generated GEMM kernel: on a target narrower than AVX-512 (``gemm=tuned``, a C compiler
    here) for at least ``WINOGRAD_KERNEL_MIN_ROWS`` rows.

    Why: IREE's AVX2 batch_matmul tiles are 8x8 (load-bound, as for the Linear layers in
    ``_float_linear_prior``). Per GEMM in the model profile, kernel / IREE's code, on an AMD
    Zen 3: ResNet-18's 56x56 stage (196 rows) 0.343 / 0.399 ms, 28x28 (49 rows) 0.408 /
    0.565; ddddocr's detector, 96 channels at 169 rows about 1.0 / 2.0 each. With 16 rows
    (ResNet-18's 14x14 and 7x7 stages) IREE's code was level or ahead (0.77 / 0.73, 1.39 /
    1.27): the kernel's 6-row register tile leaves rows idle there. A tune measures both."""
    if (
        opts.vector_bits == TILED_FOR_VECTOR_BITS
        or opts.gemm != "tuned"
        or rows < WINOGRAD_KERNEL_MIN_ROWS
    ):
        return False
    return GemmKernelOptions().toolchain().available()


LINEAR_PRIOR_MIN_ROWS = 16
LINEAR_PRIOR_MIN_WIDTH = 256


def _pointwise_conv(op: ir.Operation) -> bool:
    """A 1x1 stride-1 undilated conv (a GEMM over its pixels)."""
    if op.name not in _CONVS:
        return False
    w = ir.RankedTensorType(op.operands[1].type).shape
    kernel = (w[2], w[3]) if _CONVS[op.name] else (w[0], w[1])
    steps = [*ir.DenseIntElementsAttr(op.attributes["strides"])]
    steps += [*ir.DenseIntElementsAttr(op.attributes["dilations"])]
    return kernel == (1, 1) and all(int(v) == 1 for v in steps)


def _float_linear_prior(
    op: ir.Operation, opts: WinogradOptions, why: str
) -> tuple[dict[str, Any] | None, str]:
    """An f32 Linear layer (constant weights), or (narrower targets only) a 1x1 stride-1 conv,
    of at least ``LINEAR_PRIOR_MIN_ROWS`` rows (tokens, pixels) in an fp32 compile for a
    target of known vector width, with no measurement on this host: the tuner's first
    candidate, by the width.

    - AVX-512 (``offload=tuned``; inputs and outputs at least ``LINEAR_PRIOR_MIN_WIDTH``):
      oneDNN's f32 matmul. Measured in the model, the zoo's BERT-style transformers ran
      faster with their Linear layers in oneDNN (split over IREE's workers) than in IREE's
      data-tiled matmuls: on an AMD Zen 5, MiniLM 9.91 -> 8.87 ms, DistilBERT 30.32 ->
      28.66, BERT-base 61.58 -> 57.15, GPT-2 86.20 -> 82.23 (2 threads); on an Intel Xeon
      with AMX a MiniLM-shaped encoder 13.25 -> 9.26 (docs/byoc.md). MobileBERT's 128-wide
      layers ran slower there (128x128x128 0.011 ms in IREE, 0.035 in oneDNN; the model
      15.2 -> 16.8 ms).
    - Narrower vectors (AVX2; ``gemm_kernels=tuned`` and a C compiler here): xgen_mlir's
      generated GEMM kernel, whose 6x16 register tile IREE's 8x8 AVX2 tile does not reach
      (its loads bound it). Every Linear layer of the model in each, on an AMD Zen 3 (2
      threads): the kernel against IREE's code and oneDNN's, MiniLM 25.4 / 35.3 / 24.9 ms,
      DistilBERT 88.5 / 85.2 / 84.4, MobileBERT (128-wide layers, where oneDNN lost) 45.8 /
      52.2 / 51.4, GPT-2 269.7 / 323.4 / 270.3 (docs/measurements.md, 2026-11-29). The
      same for 1x1 convs, once the kernel's workgroups kept both threads busy: every 1x1
      conv in the kernel against IREE's code, MobileNetV2 5.93 -> 5.30 ms, EfficientNet-B0
      9.70 -> 9.62, and on real ONNX models the PP-OCRv4 recognizer 14.6 -> 11.4, ddddocr's
      detector 46.0 -> 42.1, YOLOv8n 15.8 -> 15.1, the PP-OCRv4 detector 53.3 -> 53.9.

    - bf16 on a target with bf16 matrix tiles (AMX-BF16; ``offload=tuned``, the same sizes):
      oneDNN's bf16 matmul, whose kernels run on the tiles; IREE's bf16 code uses AVX512-BF16
      dot products only. On an Intel Xeon with AMX, MiniLM in bf16 ran 18.30 ms with its
      Linear layers in IREE, 4.58 in oneDNN (fp32: 10.45; 2 threads, docs/precision.md).

    A classifier's one row is reading the weights once: it stays with IREE, as do bf16
    Linear layers on a target without bf16 tiles (IREE's bf16 matmuls were level with
    oneDNN's in the model on an AMD Zen 4, docs/precision.md). A tune replaces the prior by
    measurements."""
    if opts.precision == "bf16" and opts.bf16_tiles:
        return _bf16_tile_prior(op, opts, why)
    pointwise = _pointwise_conv(op)
    if (
        not f32_compute(opts.precision)
        or opts.vector_bits == 0
        or (op.name not in ("linalg.matmul", "linalg.batch_matmul") and not pointwise)
        or not _static_f32(op)
    ):
        return None, why
    lhs = ir.RankedTensorType(op.operands[0].type).shape
    out = ir.RankedTensorType(op.results[0].type).shape
    if pointwise:  # a GEMM over the pixels
        rows = math.prod(out) // out[1 if _CONVS[op.name] else 3]
    else:
        rows = lhs[0] if op.name == "linalg.matmul" else lhs[0] * lhs[1]
    if rows < LINEAR_PRIOR_MIN_ROWS:
        return None, why
    if opts.vector_bits != TILED_FOR_VECTOR_BITS:
        toolchain = GemmKernelOptions().toolchain()
        if opts.gemm != "tuned" or op.name == "linalg.batch_matmul" or not toolchain.available():
            return None, why
        what = "a 1x1 conv" if pointwise else "an f32 Linear layer"
        return gemm_config(), (
            f"no measurement on this host: {what} starts in xgen_mlir's GEMM kernel"
            " (xgen_mlir.tune decides)"
        )
    if pointwise:
        return None, why
    if (
        opts.offload != "tuned"
        or min(lhs[-1], out[-1]) < LINEAR_PRIOR_MIN_WIDTH
        or ONEDNN.unavailable() is not None
    ):
        return None, why
    prior = (
        "no measurement on this host: an f32 Linear layer starts in oneDNN (xgen_mlir.tune decides)"
    )
    return offload_config(ONEDNN.name, "f32"), prior


def _bf16_tile_prior(
    op: ir.Operation, opts: WinogradOptions, why: str
) -> tuple[dict[str, Any] | None, str]:
    """``_float_linear_prior``'s bf16 case: a Linear layer of at least
    ``LINEAR_PRIOR_MIN_ROWS`` rows and ``LINEAR_PRIOR_MIN_WIDTH`` inputs and outputs starts
    in oneDNN's bf16 matmul on a target with bf16 matrix tiles."""
    if (
        opts.offload != "tuned"
        or op.name not in ("linalg.matmul", "linalg.batch_matmul")
        or not _static_f32(op)
        or not _bf16_primitives()
    ):
        return None, why
    lhs = ir.RankedTensorType(op.operands[0].type).shape
    out = ir.RankedTensorType(op.results[0].type).shape
    rows = lhs[0] if op.name == "linalg.matmul" else lhs[0] * lhs[1]
    if rows < LINEAR_PRIOR_MIN_ROWS or min(lhs[-1], out[-1]) < LINEAR_PRIOR_MIN_WIDTH:
        return None, why
    return offload_config(ONEDNN.name, "bf16"), (
        "no measurement on this host: a bf16 Linear layer starts in oneDNN, whose bf16 GEMMs"
        " run on the target's matrix tiles (xgen_mlir.tune decides)"
    )


def _integer_prior(why: str, what: str) -> tuple[dict[str, Any] | None, str]:
    """An integer conv or Linear layer with no measurement on this host: the library's s8
    primitive, the tuner's first candidate (on a CPU without VNNI the offload pass then keeps
    it with IREE, saying why: the plugin makes no s8 primitive there). IREE has no fast path
    for integer KxK convs on x86 (no ukernel: ResNet-18 int8 ran 2285 ms against 79 ms in
    fp32 on the AMD Zen 4, docs/precision.md), where oneDNN's reach VNNI and AMX; and its i8
    matmuls lost to oneDNN's on both AMD hosts measured (dynamic int8 BERT-base: Zen 4 74.8
    against 48.8 ms, Zen 5 65.3 against 23.0; MiniLM 16.6 against 15.6 and 10.7 against 4.6).
    A tune replaces the prior by measurements."""
    if ONEDNN.unavailable() is not None:
        return None, why
    prior = f"no measurement on this host: {what} starts in oneDNN (xgen_mlir.tune decides)"
    return offload_config(ONEDNN.name, "s8"), prior


def _float_prior_applies(op: ir.Operation, opts: WinogradOptions) -> tuple[str, str] | None:
    """Why an unmeasured f32 KxK conv starts in the kernel library, and the compute type it
    starts in (None: it stays with IREE). Three target facts:
    - an fp32 compile for a target of known vector width other than the one xgen_mlir's conv
      and matmul tiles were chosen for (``TILED_FOR_VECTOR_BITS``);
    - on that target, a conv whose shape IREE's vector tiles (one vector of output channels x
      4 to 7 output pixels) do not divide (``conv_tiling.vector_tiles_misfit``);
    - a bf16 compile where oneDNN has bf16 primitives (AVX512-BF16, AMX): IREE's contraction
      demotion leaves its convs f32 (they are generics by then) and its bf16 conv codegen was
      2-3x slower than f32 (docs/precision.md), so the library is the only bf16 conv.
      Except a conv of fewer than ``BF16_MIN_REDUCTION`` multiply-adds per output (a 3x3
      stem on an RGB image): its work is moving the image and the result, and the library's
      bf16 primitive adds two passes over them (the conversions) to IREE's f32 code.
    Only KxK filters (K > 1): a 1x1 conv is a matmul, and the generated kernels take them;
    except in bf16 a strided 1x1 conv (ResNet's downsampling shortcuts), which no generated
    kernel takes: IREE's f32 code ran ResNet-18's three in 0.29 ms, OpenVINO's bf16 0.07 on
    an Intel Xeon with AMX."""
    if opts.vector_bits == 0 or not _static_f32(op):
        return None
    shape = ir.RankedTensorType(op.operands[1].type).shape
    kh, kw = (shape[2], shape[3]) if _CONVS[op.name] else (shape[0], shape[1])
    if max(kh, kw) == 1 and (opts.precision != "bf16" or _pointwise_conv(op)):
        return None
    if opts.precision == "bf16":
        cin = shape[1] if _CONVS[op.name] else shape[2]
        if not _bf16_primitives() or kh * kw * cin < BF16_MIN_REDUCTION:
            return None
        return "in bf16, the only bf16 conv here", "bf16"
    if not f32_compute(opts.precision):
        return None
    if opts.vector_bits != TILED_FOR_VECTOR_BITS:
        return "on a target without xgen_mlir's own tiles", "f32"
    out = ir.RankedTensorType(op.results[0].type).shape
    oc, ow = (out[1], out[3]) if _CONVS[op.name] else (out[3], out[2])
    misfit = vector_tiles_misfit(ow, oc, opts.vector_bits // 32)
    if misfit is None:
        return None
    return f"where IREE's vector tiles do not divide it: {misfit}", "f32"


@functools.cache
def _bf16_primitives() -> bool:
    """Whether oneDNN makes bf16 primitives on this CPU (asked through the plugin, as
    xgen-byoc-offload asks it per op)."""
    if ONEDNN.unavailable() is not None:
        return False
    try:
        return ONEDNN.can_build(matmul_symbol("bf16", "none", 4, 2, 3))
    except BackendCompileError:  # the plugin did not build: xgen-byoc-offload says why
        return False


def _float_conv_prior(why: str, reason: str, compute: str) -> tuple[dict[str, Any] | None, str]:
    """An f32 KxK conv with no measurement on this host where IREE's direct conv has no fast
    path (``reason``, from ``_float_prior_applies``): the library's primitive, the tuner's
    first candidate; oneDNN dispatches to kernels written for the ISA and any shape. On an
    AVX2-only AMD EPYC every 3x3 and 7x7 conv of ResNet-18 ran 1.4-4x faster in oneDNN than
    IREE's direct conv (ResNet-18 82.7 -> 30.7 ms untuned); its 1x1 convs ran slower (0.45 ->
    1.2 ms), so they stay with IREE. On AVX-512, convs IREE's vector tiles do not divide
    (60 output channels; 13- and 26-pixel rows) ran 2-11x faster in oneDNN (docs/tuning.md).
    A tune replaces the prior by measurements."""
    if ONEDNN.unavailable() is not None:
        return None, why
    prior = (
        f"no measurement on this host: an f32 KxK conv starts in oneDNN {reason} "
        "(xgen_mlir.tune decides)"
    )
    return offload_config(ONEDNN.name, compute), prior


def _mark(op: ir.Operation, config: dict[str, Any]) -> None:
    """Mark ``op`` for the variant ``config`` names (other than Winograd, which this pass
    applies itself): the generated GEMM kernel (``KERNEL_ATTR``, with the measured panels per
    workgroup) or a kernel library (``byoc.OFFLOAD_ATTR``)."""
    algorithm = str(config.get("algorithm"))
    if algorithm == GEMM_ALGORITHM:
        op.attributes[KERNEL_ATTR] = ir.StringAttr.get(GEMM)
        if config.get("group"):
            i64 = ir.IntegerType.get_signless(64)
            op.attributes[GROUP_ATTR] = ir.IntegerAttr.get(i64, int(config["group"]))
    else:  # the backend, and the implementation family measured ("onednn:jit")
        impl = f":{config['impl']}" if config.get("impl") else ""
        op.attributes[OFFLOAD_ATTR] = ir.StringAttr.get(algorithm + impl)


def _gemm_conv(op: ir.Operation, ev: ConstEval) -> bool:
    """Whether conv ``op`` is one the GEMM kernel takes (xgen-gemm-kernels' own matching: a
    1x1 stride-1 static f32 conv with a constant filter and a per-channel init)."""
    try:
        gemm_parts(op, ev)
    except NoMatch:
        return False
    return True


def _mark_linear_layers(
    module_op: ir.Operation,
    ev: ConstEval,
    choices: TunedChoices | None,
    allowed: Any,
    counts: Counter,
    opts: WinogradOptions,
    every_gemm: bool = False,
) -> None:
    """Mark the linear layers whose measured best on this host is a kernel library
    (``byoc.OFFLOAD_ATTR``) or the generated GEMM kernel (``KERNEL_ATTR``; with
    ``every_gemm``, every f32 one); the others stay with IREE (a linear layer has no Winograd
    form)."""
    for op in ops_named(module_op, *_MATMULS):
        if not _linear_layer(op, ev):
            continue
        sig, desc = matmul_signature(op)
        config: dict[str, Any] | None
        if every_gemm and op.name == "linalg.matmul" and not is_integer(op):
            config, why = gemm_config(), "gemm_kernels=true: every linear layer"
        elif choices is None:
            continue
        else:
            records = choices.records.get(sig, [])
            config, why = decide_algorithm(records, allowed)
            if config is None and not live_records(records, allowed):
                config, why = unmeasured_prior(op, opts, why)
        if config is None:
            if choices is None:
                continue
            choices.log.append((desc, "IREE", why))
            counts[f"{op.name} left to IREE (tuned)"] += 1
            decision = "IREE"
        else:
            algorithm = str(config.get("algorithm"))
            _mark(op, config)
            decision = f"{algorithm} {config.get('compute')}"
            if choices is not None:
                choices.log.append((desc, decision, why))
            counts[f"{op.name} marked for {algorithm} (tuned)"] += 1
        if opts.verbose:
            where = format_location(op.location)
            print(f"xgen-winograd-convs: {where}: {desc}: {decision}, {why}", file=sys.stderr)


@register_pass(
    "xgen-winograd-convs",
    "3x3 stride-1 convs, constant filters -> Winograd F(4x4/2x2, 3x3): transforms + batched GEMM "
    "(all, none, or the ones measured faster on this host); with offload=tuned, marks the convs "
    "and linear layers measured faster in a kernel library.",
    WinogradOptions,
)
def _pass(module_op: ir.Operation, opts: WinogradOptions | None) -> Counter:
    return winograd_convs(module_op, opts)
