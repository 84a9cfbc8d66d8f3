"""Per-contraction data-tiling decisions, instead of IREE's all-or-nothing flag.

``--iree-opt-data-tiling`` packs the operands of *every* matmul-like op into tiled layouts
(``iree_encoding``). That pays on few-row GEMMs, where IREE's plain tiling under-uses the
vector units, but it has two costs the flag does not weigh:

* the activation pack lands in the producer's dispatch. When the producer is a depthwise conv
  (MobileNetV2's project convs), that dispatch gets 2-3x slower: 56x56x144 depthwise 0.40 ms
  with the fused pack vs 0.14 ms without (one thread);
* a producer with two consumers (a residual) cannot take the pack at all, so IREE adds a
  pack dispatch of its own (MobileNetV2: 11 of its 66 dispatches).

Measured on this CPU (IREE 3.13, same module with and without data tiling; MobileNetV2 on one
thread, MobileBERT on two):

========================  =========  =========  ==========
contraction M x N x K     tiled ms   plain ms   producer
========================  =========  =========  ==========
MobileBERT 128x512x128    0.079      0.122      matmul
MobileBERT 128x128x512    0.078      0.100      matmul
MobileNetV2 49x160x960    0.212      0.585      depthwise
MobileNetV2 1x1000x1280   0.410      0.619      pool
MobileNetV2 196x96x576    0.215      0.200      depthwise
MobileNetV2 3136x24x144   0.264      0.330      depthwise (+0.26 ms in it when tiled)
MobileNetV2 196x576x96    0.216      0.216      residual (+ a pack dispatch when tiled)
========================  =========  =========  ==========

So the rule: leave tiny contractions (EfficientNet's squeeze-excite matvecs, 1x48x1152; a
batch matmul's work counts all its batches) plain; tile when M <= ``small_m`` (few rows) or
when both N and K are >= ``big`` (a large GEMM, where IREE's default is kept because nothing
here measured otherwise); leave the rest plain. Exceptions that stay plain (``decide``): a
result padded for a conv, a strided-slice input, and a neighbouring spatial pool (two or more
reduced loops; a LayerNorm/softmax row reduction does not count).

IREE's ``AnnotateDataTilingHints`` pass does nothing when any op already carries the hint, so
setting it on the chosen ops is the whole mechanism. When no op is chosen the caller must drop
the flag (IREE would otherwise tile everything).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import prod
from typing import Any

from .._mlir import iree_binding

HINT = "iree.opt.data_tiling"
SMALL_M = 128
BIG = 512
MIN_WORK = 1 << 20  # batch*M*N*K below this: packing costs more than it can save
# Batch matmuls with this many batches (Winograd's 36) of >= SMALL_M/4 rows stay plain:
# 36x49x128x128 0.33 ms plain vs 0.41 ms + a 0.06 ms pack tiled; with 16 rows tiling won
# (36x16x256x256: 0.46 + 0.03 vs 0.55 ms). Attention's batch matmuls (4-12 heads) are not
# affected.
MANY_BATCHES = 32


@dataclass
class TilingDecision:
    op: str  # op name and location, for people
    m: int | None  # None: a dynamic size
    n: int | None
    k: int | None
    tiled: bool
    reason: str
    batch: int | None = 1  # a batch matmul's batch size (attention heads)


def decide(
    m: int | None,
    n: int | None,
    k: int | None,
    small_m: int = SMALL_M,
    big: int = BIG,
    padded: bool = False,
    sliced: bool = False,
    after_reduction: bool = False,
    batch: int | None = 1,
    reduced: bool = False,
    image_rows: bool = True,
) -> tuple[bool, str]:
    """Whether a contraction of M x N x K should be data-tiled, and why.

    ``reduced``: its operands are bf16 or f16 (``precision="bf16"``). IREE's bf16 dot products
    come only through its data-tiled ``mmt4d`` path; plain, the same contraction converts and
    multiplies element by element (MobileNetV2's 196x576x96 1x1 conv in bf16: 0.37 ms plain
    against 0.11 tiled, f32 0.11), so every one that is not tiny and not next to a pool is
    tiled, whatever the f32 rules below say.

    ``image_rows``: its rows span several loops (a 1x1 conv's H and W). The rule that leaves
    many-row GEMMs with a small N or K plain was measured on those (MobileNetV2's 1x1 convs,
    the table above); a GEMM over one row loop (a Linear layer's tokens) keeps IREE's default,
    tiled: MiniLM at batch 4 (512x384x384, 512x1536x384, ...) ran 67-68 ms plain against
    59-60 ms tiled.

    ``padded``: its result is zero-padded for a convolution (through elementwise ops). Tiled,
    the unpacked result cannot take the pad into its dispatch: one more dispatch, for no
    measured gain (MobileNetV2's 7x7 expand convs, 49x960x160: 0.186 ms tiled, 0.197 plain).
    ``sliced``: its input is an ``extract_slice`` (ResNet-18's stride-2 downsample convs):
    tiled, ResNet-18 ran 2 more dispatches (34 instead of 32) to save 0.08 ms of ~25.

    A dynamic size (None: a dynamic batch or sequence length) counts as unbounded: only the
    rules that hold at every size decide (a large N x K GEMM is tiled whatever its M; few rows
    cannot be promised). Before, every contraction of a model with a dynamic sequence length
    ran plain."""
    if m is None or n is None or k is None or batch is None:
        return _decide_dynamic(m, n, k, big, padded, sliced, after_reduction)
    if batch * m * n * k < MIN_WORK:
        shape = f"{batch}x{m}x{n}x{k}" if batch > 1 else f"{m}x{n}x{k}"
        return (
            False,
            f"tiny ({shape} < {MIN_WORK} multiply-adds): packing costs more than it saves",
        )
    if after_reduction:
        return False, "next to a reduction (a pool): IREE fails to compile the pack fused into it"
    if reduced:
        return True, "bf16/f16 operands: IREE's dot-product microkernels need the packed layout"
    if padded and not (n >= big and k >= big):
        return False, "its result is padded for a conv: tiled, the pad needs a dispatch of its own"
    if sliced and not (n >= big and k >= big):
        return False, (
            "its input is a strided slice (a strided 1x1 conv): tiled, the pack needs a dispatch "
            "of its own and the conv sharing the input loses its fused pad"
        )
    if batch >= MANY_BATCHES and m >= small_m // 4:
        return False, (
            f"{batch} batches of M={m} rows (a Winograd conv's GEMMs): plain tiling is faster "
            "than packing every batch"
        )
    if m <= small_m:
        return True, f"few rows (M={m} <= {small_m}): packed tiles keep the vector units busy"
    if n >= big and k >= big:
        return True, f"large GEMM (N={n}, K={k} >= {big}): IREE's default kept"
    if not image_rows:
        return True, f"M={m} rows of one loop (tokens, not pixels): IREE's default kept"
    return False, (
        f"M={m} rows with N={n}/K={k}: plain tiling is as fast, and the activation pack "
        "would slow its producer or need a dispatch of its own"
    )


def row_loops(op: Any) -> int:
    """How many loops make up the rows (M) of contraction ``op``: two or more for a 1x1 conv
    over an image (H and W), one for a matmul over tokens."""
    dims = iree_binding().linalg.infer_contraction_dimensions(op.opview)
    return 0 if dims is None else len(dims.m)


def gemm_shape(op: Any) -> tuple[int | None, int | None, int | None, int | None] | None:
    """(M, N, K, batch) of a contraction IREE can data-tile, else None; a dynamic size is
    None.

    Several M (or N) loops count as one of their product: IREE collapses them (a 1x1 conv's
    H and W) before it data-tiles. Several K loops (a KxK conv) are not tiled by IREE. The
    batch (1 for a plain matmul) counts in the work: MiniLM's 12 heads of 128x32x128 are 6M
    multiply-adds, and 10x slower plain."""
    linalg = iree_binding().linalg

    from ..analysis.mapping_types import loop_sizes

    view = op.opview
    if not linalg.isa_contraction_op(view):
        return None
    dims = linalg.infer_contraction_dimensions(view)
    if dims is None or len(dims.k) != 1:
        return None
    if len(dims.batch) > 1 or not (len(dims.m) or len(dims.n)):
        return None
    sizes = loop_sizes(op)

    def size(loops: Any) -> int | None:
        vals = [sizes.get(int(d)) for d in loops]
        known = [v for v in vals if v is not None]
        return None if len(known) != len(vals) else prod(known)

    return size(dims.m), size(dims.n), size(dims.k), size(dims.batch)


def _decide_dynamic(
    m: int | None,
    n: int | None,
    k: int | None,
    big: int,
    padded: bool,
    sliced: bool,
    after_reduction: bool,
) -> tuple[bool, str]:
    """``decide`` for a contraction with dynamic sizes (None): tiled only when both N and K
    are large (or unbounded) and nothing next to it forbids the pack."""
    shape = "x".join("?" if v is None else str(v) for v in (m, n, k))
    if after_reduction:
        return False, "next to a reduction (a pool): IREE fails to compile the pack fused into it"
    if padded or sliced:
        return False, f"dynamic {shape} next to a conv's pad or strided slice: left plain"
    if (n is None or n >= big) and (k is None or k >= big):
        return True, f"large GEMM ({shape}, N and K unbounded or >= {big}): tiled at any M"
    return False, f"dynamic {shape}: its work is unknown, left plain (IREE's default tiling)"


def _iterators(op: Any) -> list[str]:
    ir = iree_binding().ir

    return [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]


def _reduction_loops(op: Any) -> int:
    return sum("reduction" in t for t in _iterators(op))


def _has_reduction(op: Any) -> bool:
    return _reduction_loops(op) > 0


def _is_pool(op: Any) -> bool:
    """A ``linalg.generic`` global pool: a reduction over two or more loops (H and W) that is
    not a GEMM IREE data-tiles, even when written as a multiply-accumulate (EfficientNet-B0
    folds its SiLU into the pool). A row reduction over one loop (LayerNorm, softmax) is not
    a pool: IREE compiles packs next to those, and GPT-2's projections lose 40% tiled -> plain
    (128x768x3072: 3.5 ms tiled, 5.7 ms plain). Nor is a reduction to a scalar (a dynamic
    quantization's min/max of a whole tensor): a pool keeps its batch and channel loops.
    Counting those made every int8 GEMM of a dynamically quantized BERT-base plain."""
    return (
        op.name == "linalg.generic"
        and _reduction_loops(op) >= 2
        and _reduction_loops(op) < len(_iterators(op))
        and gemm_shape(op) is None
    )


def reduced_operands(op: Any) -> bool:
    """Whether the inputs of contraction ``op`` are 16-bit floats (bf16 / f16)."""
    ir = iree_binding().ir

    types = [ir.RankedTensorType(v.type).element_type for v in op.operands[:-1]]
    return bool(types) and all(isinstance(t, (ir.BF16Type, ir.F16Type)) for t in types)


def feeds_pad(op: Any) -> bool:
    """Whether ``op``'s result reaches a ``tensor.pad`` through single-use elementwise ops
    (a bias/activation epilogue) and reshapes."""
    from ..analysis.mapping_types import MappingType, classify

    value = op.results[0]
    for _ in range(8):
        uses = list(value.uses)
        if len(uses) != 1:
            return False
        user = uses[0].owner.operation
        if user.name == "tensor.pad":
            return True
        reshape = user.name in ("tensor.expand_shape", "tensor.collapse_shape")
        mapping = classify(user)
        if not reshape and (mapping is None or mapping.type != MappingType.ONE_TO_ONE):
            return False
        value = user.results[0]
    return False


def reads_reduction(op: Any) -> bool:
    """Whether ``op``'s first input comes (through reshapes and a one-input elementwise op)
    from a reduction IREE does not data-tile itself (a global pool): the pack would be fused
    into that reduction's dispatch, which IREE 3.13 fails to compile ("large vector sizes",
    EfficientNet-B0's classifier)."""
    ir = iree_binding().ir

    value = op.operands[0]
    for _ in range(6):
        owner = value.owner
        if isinstance(owner, ir.Block):
            return False
        if owner.name in ("tensor.expand_shape", "tensor.collapse_shape"):
            value = owner.operands[0]
            continue
        if owner.name == "flow.dispatch.region":  # a region the planner formed: look inside
            ret = owner.regions[0].blocks[0].operations[-1]
            value = ret.operands[ir.OpResult(value).result_number]
            continue
        if _is_pool(owner):
            return True
        # look through a one-input elementwise op (input + init: the pool's divide) only
        if owner.name != "linalg.generic" or len(owner.operands) != 2 or _has_reduction(owner):
            return False
        value = owner.operands[0]
    return False


def feeds_reduction(op: Any) -> bool:
    """Whether ``op``'s result reaches a non-GEMM reduction (a global pool) through
    parallel ops: tiled, the unpack lands in that reduction's dispatch, which IREE 3.13
    fails to compile ("large vector sizes", EfficientNet-B0's last 1x1 conv)."""
    frontier, seen = [op.results[0]], 0
    while frontier and seen < 16:
        value = frontier.pop()
        for use in value.uses:
            user = use.owner.operation
            seen += 1
            if user.name in ("tensor.expand_shape", "tensor.collapse_shape"):
                frontier.extend(user.results)
                continue
            if _is_pool(user):
                return True
            if user.name != "linalg.generic" or _has_reduction(user):
                continue
            frontier.extend(user.results)  # elementwise (or a transposing copy): follow
    return False


def reads_slice(op: Any) -> bool:
    """Whether an input of ``op`` comes straight from a strided ``tensor.extract_slice`` (a
    stride-2 1x1 conv); unit-stride slices (attention's Q/K/V out of one merged GEMM) pack
    like any other operand."""
    ir = iree_binding().ir

    for value in op.operands[:-1]:
        owner = value.owner
        if isinstance(owner, ir.Block) or owner.name != "tensor.extract_slice":
            continue
        strides = ir.DenseI64ArrayAttr(owner.attributes["static_strides"])
        if any(s != 1 for s in strides):
            return True
    return False


def _runs(ir: Any, amap: Any, groups: list[list[int]]) -> list[list[int]] | None:
    """Result positions of ``amap`` grouped so each loop group is one run, or None when a
    group is split, reordered or partly absent (then the op cannot be collapsed)."""
    dims = []
    for expr in amap.results:
        if not isinstance(expr, ir.AffineDimExpr):
            return None
        dims.append(expr.position)
    runs, i = [], 0
    while i < len(dims):
        group = next((g for g in groups if dims[i] in g), None)
        if group is None:
            runs.append([i])
            i += 1
            continue
        if dims[i : i + len(group)] != group:
            return None
        runs.append(list(range(i, i + len(group))))
        i += len(group)
    return runs


def collapse_to_gemm(op: Any) -> Any:
    """Rewrite a ``linalg.generic`` contraction with several M (or N) loops, such as a 1x1
    conv over H and W, into one with a single M and N loop between reshapes; returns the new
    op (or ``op`` itself when there is nothing to collapse or it cannot be).

    Why: IREE collapses these loops itself before it data-tiles, and the new op it builds
    drops discardable attributes, the data-tiling hint among them (measured: MobileNetV2's
    7x7 project convs lost the hint). Collapsing first keeps the hint on the op IREE tiles,
    and the tiles xgen_mlir gives it (``matmul_tiling``). In IREE's or torch-mlir's bindings."""
    from ..analysis.mapping_types import indexing_maps, ir_of, linalg_of, tensor_of

    ir, linalg, tensor = ir_of(op), linalg_of(op), tensor_of(op)

    if op.name != "linalg.generic" or len(op.results) != 1:
        return op
    if any(
        isinstance(v.type, ir.RankedTensorType) and not ir.RankedTensorType(v.type).has_static_shape
        for v in op.operands
    ):
        return op  # a dynamic size: the reshapes would need its runtime value
    dims = linalg.infer_contraction_dimensions(op.opview)
    maps = indexing_maps(op)
    out_map = maps[-1] if maps else None
    if dims is None or out_map is None:
        return op
    assert maps is not None  # out_map was read off it
    order = {
        e.position: i for i, e in enumerate(out_map.results) if isinstance(e, ir.AffineDimExpr)
    }
    groups = [sorted((int(d) for d in g), key=lambda d: order.get(d, -1)) for g in (dims.m, dims.n)]
    groups = [g for g in groups if len(g) > 1]
    if not groups or any(d not in order for g in groups for d in g):
        return op
    maybe_runs = [_runs(ir, m, groups) for m in maps]
    runs = [r for r in maybe_runs if r is not None]
    if len(runs) != len(maybe_runs):
        return op
    n_loops = maps[0].n_dims
    new_index, kinds, n_new = {}, [], 0
    iters = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
    for d in range(n_loops):
        group = next((g for g in groups if d in g), None)
        if group is not None and d != group[0]:
            continue
        for member in group or [d]:
            new_index[member] = n_new
        kinds.append(iters[d])
        n_new += 1
    # groups must be adjacent loops too, or the map to the new loops is not a permutation
    if any(g != list(range(g[0], g[0] + len(g))) for g in groups):
        return op

    def collapse(value: Any, amap: Any, run: list[list[int]]) -> tuple[Any, Any]:
        ty = ir.RankedTensorType(value.type)
        shape = [prod(ty.shape[i] for i in r) for r in run]
        exprs = [ir.AffineDimExpr.get(new_index[amap.results[r[0]].position]) for r in run]
        new_map = ir.AffineMap.get(n_new, 0, exprs)
        if all(len(r) == 1 for r in run):
            return value, new_map
        new_ty = ir.RankedTensorType.get(shape, ty.element_type)
        return tensor.CollapseShapeOp(new_ty, value, run).result, new_map

    with ir.InsertionPoint(op), op.location:
        operands, new_maps = [], []
        for value, amap, run in zip(op.operands, maps, runs, strict=True):
            v, m = collapse(value, amap, run)
            operands.append(v)
            new_maps.append(ir.AffineMapAttr.get(m))
        n_in = len(operands) - 1
        out_ty = ir.RankedTensorType(operands[-1].type)
        new = linalg.GenericOp(
            [out_ty],
            operands[:n_in],
            operands[n_in:],
            ir.ArrayAttr.get(new_maps),
            ir.ArrayAttr.get([ir.Attribute.parse(k) for k in kinds]),
        )
        op.regions[0].blocks[0].append_to(new.regions[0])
        old_ty = ir.RankedTensorType(op.results[0].type)
        result = new.results[0]
        if len(runs[-1]) != len(old_ty.shape):
            result = tensor.ExpandShapeOp(old_ty, result, runs[-1], [], old_ty.shape).result
    op.results[0].replace_all_uses_with(result)
    op.erase()
    return new.operation


def plan_data_tiling(
    block: Any,
    small_m: int = SMALL_M,
    big: int = BIG,
    xgen_tiles: Callable[[Any], bool] | None = None,
) -> list[TilingDecision]:
    """Decide every top-level contraction of ``block`` and set the hint on the tiled ones.
    ``xgen_tiles``: a predicate for ops a tile rule of xgen_mlir takes instead (left plain)."""
    ir = iree_binding().ir

    from ..diagnostics import format_location

    decisions = []
    for op in list(block.operations):
        op = op.operation
        if not op.name.startswith("linalg.") or HINT in op.attributes:
            continue
        shape = gemm_shape(op)
        if shape is None:
            continue
        m, n, k, batch = shape
        reduced = reduced_operands(op)
        if xgen_tiles is not None and not reduced and xgen_tiles(op):  # f32-measured tiles
            where = format_location(op.location)
            why = "xgen_mlir's tiles instead (matmul_tiling: faster than packing, measured)"
            decisions.append(TilingDecision(f"{op.name} at {where}", m, n, k, False, why, batch))
            continue
        tiled, why = decide(
            m,
            n,
            k,
            small_m=small_m,
            big=big,
            padded=feeds_pad(op),
            sliced=reads_slice(op),
            after_reduction=reads_reduction(op) or feeds_reduction(op),
            batch=batch,
            reduced=reduced,
            image_rows=row_loops(op) > 1,
        )
        if tiled:
            op = collapse_to_gemm(op)
            op.attributes[HINT] = ir.UnitAttr.get(op.context)
        where = format_location(op.location)
        decisions.append(TilingDecision(f"{op.name} at {where}", m, n, k, tiled, why, batch))
    return decisions
