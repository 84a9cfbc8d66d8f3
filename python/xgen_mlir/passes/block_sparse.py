"""Block-sparse linear layers: raise, compact, and generate kernels (``compress.blocks``).

- ``xgen-raise-block-linear``: a ``linalg.matmul`` with a constant right-hand side (a Linear
  as torch-mlir emits it: ``x @ transpose(W)``, init a zero fill, then its bias add) or a
  1x1 (1x1x1) NCHW (NCDHW) convolution with constant weights, whose weights' zeros make the
  compact block form small enough, becomes ``xgen_sparse.block_linear`` (a conv between
  transposes to and from rows of pixels). The block is the target's register tile
  (``target.block_tile`` of ``vector-bits``: the shape ``compress.prune(scheme="block")``
  prunes to by default). Raised only where profitable: under ``enable=tuned`` (the cpu
  target's ``block_kernels`` default) where this host's record of the layer's block and
  compact density measured the kernel faster than the dense layer (``decide_block``;
  ``tuning/choices.py`` measures it), else by the rule: the compact form keeps at most
  ``max-density`` of the weights; and only with at least ``min-rows`` rows (default: one
  vector of lanes). Every other candidate stays dense and its reason is counted.
- ``xgen-bcsr-compact``: ``block_linear`` -> ``bcsr_linear`` (non-empty blocks only, their
  kept rows and columns, values column by column).
- ``xgen-lower-bcsr-kernels``: ``bcsr_linear`` -> a generated C kernel
  (``codegen/block_sparse.py``) in an IREE dispatch, with the elementwise activations after
  it that translate to C; dense linalg where the C compiler is missing (warned).
- ``xgen-lower-block-to-linalg``: either op -> dense ``linalg.matmul`` (reference semantics
  and fallback); with ``warn=true`` it says once how many block-pruned layers run dense.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._mlir import func, ir, tensor
from ..codegen import column_sparse, dispatch
from ..codegen.block_sparse import (
    TOKEN_VECTORS,
    BcsrSpec,
    generate,
    generate_pack,
    pack_values,
    packed_out_size,
    packed_x_size,
)
from ..codegen.dispatch import EXECUTABLE_ATTR
from ..codegen.toolchain import ToolchainOptions, compile_object
from ..diagnostics import format_location, warn_fallback
from ..dialects import load_xgen_dialects
from ..dialects.block_sparse import (
    BCSR_LINEAR,
    BLOCK_LINEAR,
    BLOCK_OPS,
    bcsr_to_dense,
    block_of,
    tables_of,
    weight_shape,
)
from ..irutil import (
    ConstantReader,
    constant_op,
    find_func,
    function_of,
    ops_named,
    splice_functions,
)
from ..target import block_tile, host_threads, vector_registers
from ..tunedb import ALGORITHM, REJECTED_IN_MODEL, Record, readable_detail
from .consteval import ConstEval
from .epilogue_c import epilogue
from .generic_util import (
    erase_dead_tree,
    i64_array,
    transpose,
)
from .kernel_call import free_symbol, install_kernel
from .kernel_match import NoMatch
from .linear_parts import CONV_1X1, conv_parts, matmul_parts
from .registry import PassFailure, register_pass
from .winograd_convs import (
    BLOCK_ALGORITHM,
    CHOICES,
    MODES,
    TunedChoices,
    allowed_variants,
    conv_signature,
    load_choices,
    matmul_signature,
    variant_name,
)


@dataclass
class RaiseBlockOptions:
    # "true": raise where the compact blocks keep at most ``max_density`` (the rule); "false":
    # none; "tuned": as this host's measurements decide (``decide_block``), the rule for a
    # layer whose block structure was not measured (the target option ``block_kernels``)
    enable: str = "true"
    vector_bits: int = 512  # the target's vector width: the block is its register tile (0: any)
    max_density: float = 0.6  # the rule: the compact blocks keep at most this share (measured)
    min_rows: int = 0  # and at least this many rows (0: one vector of lanes)
    functions: str = ""  # comma-separated function names to look in; empty: all
    db: str = ""  # "tuned" outside compile(): the tuning database ("": the default one)
    threads: int = 0  # "tuned": the thread count the records were measured with (0: this host's)
    # "tuned": the dense routes the compile weighs for a layer left dense, which a measured
    # block kernel must beat (the target's offload and gemm_kernels options and precision)
    offload: str = "none"
    gemm: str = "false"
    precision: str = "fp32"
    verbose: bool = False


# Layers whose compact blocks keep more than this share of the weights are not measured as
# block-sparse kernels (``tuning/choices.py``): the kernel ran a fully dense layer at 0.81-0.86x
# of the dense GEMM kernel (docs/block-pruning.md), and break-even lay at 0.67-0.8 on both
# host types; in ``tuned`` mode such a layer follows the rule.
MEASURED_MAX_DENSITY = 0.9
# A record of a block structure serves a layer whose compact density is within this of its
# own (the records of a model pruned at one rate, rounded to two decimals, serve it and a
# model pruned again at that rate).
DENSITY_MATCH = 0.02


def block_config(block: tuple[int, int], density: float) -> dict[str, Any]:
    """The config of an ``algorithm`` record for a linear layer run as the block-sparse
    kernel with ``block`` tiles keeping ``density`` of its weights; its baseline is the dense
    layer through IREE, as for the dense variants of the same signature."""
    return {
        "kind": ALGORITHM,
        "algorithm": BLOCK_ALGORITHM,
        "compute": "f32",
        "block": [int(block[0]), int(block[1])],
        "density": round(float(density), 2),
    }


def block_records(records: list[Record], block: tuple[int, int], density: float) -> list[Record]:
    """The block-sparse kernel's records among ``records`` that serve a layer of this block
    and compact density."""
    return [
        r
        for r in records
        if r.config.get("algorithm") == BLOCK_ALGORITHM
        and list(r.config.get("block", ())) == list(block)
        and abs(float(r.config.get("density", -1.0)) - density) <= DENSITY_MATCH
    ]


def decide_block(
    records: list[Record], block: tuple[int, int], density: float, dense_allowed: Any
) -> tuple[bool | None, str]:
    """Whether a linear layer with this block structure runs as the block-sparse kernel, from
    this host's records of its signature, and why; None where they do not say (no record of
    this block within ``DENSITY_MATCH`` of this density, or the kernel's measured lead was
    rejected in the model): then the rule decides. The kernel must be faster than the
    direct layer and than each dense variant the compile weighs (``dense_allowed``: the GEMM
    kernel, a library), as measured beside the same direct layer; one that failed its
    measurement (wrong numbers, a crash) is never chosen."""
    mine = block_records(records, block, density)
    if not mine:
        return None, "no measurement of this block structure on this host"
    r = min(mine, key=lambda r: abs(float(r.config["density"]) - density))
    if r.detail.startswith(REJECTED_IN_MODEL):
        return None, f"the block kernel's measured lead not kept: {readable_detail(r.detail)}"
    if r.speedup is None or r.seconds is None or r.baseline_seconds is None:
        detail = f": {r.detail}" if r.detail else ""
        return False, f"the block kernel's measurement: {r.status}{detail}"
    said = (
        f"measured block kernel {r.seconds * 1e3:.3f} ms vs direct "
        f"{r.baseline_seconds * 1e3:.3f} ms ({r.speedup:.2f}x)"
    )
    dense = [
        d
        for d in records
        if dense_allowed(d.config)
        and d.speedup is not None
        and d.seconds is not None
        and not d.detail.startswith(REJECTED_IN_MODEL)
    ]
    best = max(dense, key=lambda d: d.speedup or 0.0, default=None)
    if best is not None and best.seconds is not None and (best.speedup or 0.0) >= r.speedup:
        rival = f"{variant_name(best.config)} {best.seconds * 1e3:.3f} ms ({best.speedup:.2f}x)"
        return False, f"{said}, {rival}: the dense layer faster"
    if r.speedup <= 1.0:
        return False, f"{said}: the dense layer faster"
    return True, said


def block_structure(
    op: ir.Operation, ev: ConstEval, vector_bits: int
) -> tuple[tuple[int, int], float] | None:
    """The block and compact density ``op`` would be raised with (``best_block``), where it
    is a linear layer or 1x1 conv this pass takes with enough rows; else None (the tuner
    asks of every candidate it measures: a Winograd conv, a batched matmul)."""
    if op.name not in ("linalg.matmul", *CONV_1X1):
        return None
    try:
        parts = (conv_parts if op.name in CONV_1X1 else matmul_parts)(op, ev)
    except NoMatch:
        return None
    if _gemm_rows(op) < block_tile(vector_bits or 128)[2]:
        return None
    return best_block(parts["w"], vector_bits)


def _gemm_rows(op: ir.Operation) -> int:
    """Rows of ``op``'s GEMM: a matmul's, or a 1x1 conv's pixels over the batch."""
    rows = ir.RankedTensorType(op.operands[0].type).shape
    return rows[0] if op.name == "linalg.matmul" else int(np.prod([rows[0], *rows[2:]]))


def _signature(op: ir.Operation) -> tuple[str, str] | None:
    """The signature the tuner measures ``op`` under (a 1x1x1 3D conv: none)."""
    if op.name == "linalg.matmul":
        return matmul_signature(op)
    if op.name == "linalg.conv_2d_nchw_fchw":
        return conv_signature(op)
    return None


# A narrower block is taken only where it stores this much less of the weights than the
# widest one within reach: each block costs the kernel its own setup (its case, its rows'
# accumulators loaded and stored), so 4x more blocks of a quarter the columns run slower
# for the same kept weights. Quantizing a block-pruned model rounds a few more small
# weights to zero, and the finest block then stored 1e-5 less: MiniLM 4x in int8 took
# 4 x 8 blocks over 4 x 32 and its block-sparse kernels ran 1.6x slower.
NARROWER_MIN_SAVING = 0.05


def best_block(w: np.ndarray, vector_bits: int) -> tuple[tuple[int, int], float]:
    """The block (the tile's rows x 4, 2 or 1 vectors of columns) whose compact form stores
    the least of ``w``, and that share: a model pruned with narrower blocks than the
    target's default still compacts to what it kept. Of blocks that store about the same
    (within ``NARROWER_MIN_SAVING`` of the least), the widest. ``vector_bits`` 0: the tiles
    of every CPU width (targets without kernels, which only detect block-pruned layers)."""
    widths = [vector_bits] if vector_bits else [128, 256, 512]
    tiles = {(r, c * lanes) for r, _, lanes in map(block_tile, widths) for c in (4, 2, 1)}
    # blocks of one or two vectors of rows that keep all their rows: the whole-column kernel's
    # panels (``codegen/column_sparse.py``), taken only where the weights are such blocks
    tiles |= {
        (v * lanes, c * lanes)
        for _, _, lanes in map(block_tile, widths)
        for v in (2, 1)
        for c in (4, 2, 1)
        if whole_columns(w, (v * lanes, c * lanes))
    }
    # widest first (most columns, then most rows): the first near the least is the one
    found = [
        (tile, compact_density(w, tile)) for tile in sorted(tiles, key=lambda t: (-t[1], -t[0]))
    ]
    least = min(d for _, d in found)
    return next(f for f in found if f[1] <= least * (1 + NARROWER_MIN_SAVING))


def whole_columns(w: np.ndarray, block: tuple[int, int]) -> bool:
    """Whether ``w`` [N, K] is blocks of whole rows' columns: N whole blocks, and every
    block that keeps anything keeps all its rows (as ``compress.prune(scheme="block",
    row_share=0)`` prunes)."""
    br, bc = block
    n, k = w.shape
    if n % br:
        return False
    nbc = -(-k // bc)
    nz = np.zeros((n, nbc * bc), bool)
    nz[:, :k] = w != 0
    rows = nz.reshape(n // br, br, nbc, bc).any(3).sum(1)  # [block-rows, blocks]: kept rows
    return bool(np.all((rows == 0) | (rows == br)))


def compact_density(w: np.ndarray, block: tuple[int, int]) -> float:
    """Share of ``w`` [N, K] the compact blocks store: per block, rows with a nonzero x
    columns with a nonzero."""
    br, bc = block
    n, k = w.shape
    nbr, nbc = -(-n // br), -(-k // bc)
    nz = np.zeros((nbr * br, nbc * bc), bool)
    nz[:n, :k] = w != 0
    b = nz.reshape(nbr, br, nbc, bc)
    rows = b.any(3).sum(1)  # [nbr, nbc]
    cols = b.any(1).sum(2)
    return float((rows * cols).sum()) / max(n * k, 1)


def _raise(op: ir.Operation, parts: dict[str, Any], block: tuple[int, int]) -> None:
    end: ir.Operation = parts["end"]
    f32 = ir.F32Type.get()
    with ir.InsertionPoint(end), end.location:
        w = constant_op(parts["w"].astype(np.float32), "xgen_block_weight").result
        b = constant_op(np.asarray(parts["bias"], np.float32), "xgen_block_bias").result
        x = parts["x"]
        shape = list(ir.RankedTensorType(x.type).shape)
        conv = op.name in CONV_1X1
        if conv:  # N C *S -> N *S C -> (N * S) x C
            rank = len(shape)
            perm = [0, *range(2, rank), 1]
            x = transpose(x, perm)
            m = int(np.prod([shape[0], *shape[2:]]))
            x = tensor.CollapseShapeOp(
                ir.RankedTensorType.get([m, shape[1]], f32),
                x,
                ir.ArrayAttr.get([i64_array(list(range(rank - 1))), i64_array([rank - 1])]),
            ).result
        m = ir.RankedTensorType(x.type).shape[0]
        n = parts["w"].shape[0]
        new = ir.Operation.create(
            BLOCK_LINEAR,
            results=[ir.RankedTensorType.get([m, n], f32)],
            operands=[x, w, b],
            attributes={"block": i64_array(list(block))},
        )
        value = new.results[0]
        if conv:
            out = list(ir.RankedTensorType(end.results[0].type).shape)
            rank = len(out)
            nhwc = [out[0], *out[2:], out[1]]
            value = tensor.ExpandShapeOp(
                ir.RankedTensorType.get(nhwc, f32),
                value,
                ir.ArrayAttr.get([i64_array(list(range(rank - 1))), i64_array([rank - 1])]),
                [],
                nhwc,
            ).result
            value = transpose(value, [0, rank - 1, *range(1, rank - 1)])
    old = list(op.operands)
    if end is not op:
        old += [v for v in end.operands if v != op.results[0]]
    end.results[0].replace_all_uses_with(value)
    end.erase()
    if end is not op:
        op.erase()
    erase_dead_tree(old)


@register_pass(
    "xgen-raise-block-linear",
    "Raise block-pruned constant-weight matmuls and 1x1 convs to xgen_sparse.block_linear "
    "where the compact blocks are small enough.",
    RaiseBlockOptions,
)
def raise_block_linear(module_op: ir.Operation, opts: RaiseBlockOptions | None) -> Counter:
    opts = opts or RaiseBlockOptions()
    mode = str(opts.enable).lower()
    if mode not in MODES:
        raise PassFailure(f"enable={opts.enable!r} is not one of {', '.join(MODES)}")
    counts: Counter[str] = Counter()
    if mode == "false":
        return counts
    load_xgen_dialects(module_op.context)
    min_rows = opts.min_rows or block_tile(opts.vector_bits or 128)[2]
    scope = {f for f in opts.functions.split(",") if f}
    choices = (CHOICES.get() or load_choices(opts.db, opts.threads)) if mode == "tuned" else None
    dense_allowed = allowed_variants("false", opts.offload, opts.precision, opts.gemm)
    with module_op.context:
        ev = ConstEval(module_op)
        for op in ops_named(module_op, "linalg.matmul", *CONV_1X1):
            if scope and function_of(op) not in scope:
                continue
            where = format_location(op.location)
            try:
                parts = (conv_parts if op.name in CONV_1X1 else matmul_parts)(op, ev)
                block, dens = best_block(parts["w"], opts.vector_bits)
                m = _gemm_rows(op)
                if m < min_rows:
                    raise NoMatch(f"{m} rows < {min_rows} (a vector of tokens per tile)")
                _decide(op, block, dens, opts, choices, dense_allowed)
            except NoMatch as e:
                if op.name != "linalg.matmul" or "constant" not in str(e):
                    counts[f"stays dense: {e}"] += 1
                if opts.verbose:
                    print(f"xgen-raise-block-linear: {where}: stays dense: {e}", file=sys.stderr)
                continue
            _raise(op, parts, block)
            counts["raised"] += 1
            if opts.verbose:
                print(
                    f"xgen-raise-block-linear: {where}: raised {parts['w'].shape[0]}x"
                    f"{parts['w'].shape[1]}, {m} rows, compact density {dens:.3f}",
                    file=sys.stderr,
                )
    return counts


def _decide(
    op: ir.Operation,
    block: tuple[int, int],
    dens: float,
    opts: RaiseBlockOptions,
    choices: TunedChoices | None,
    dense_allowed: Any,
) -> None:
    """Raise NoMatch (with the reason) where ``op`` stays dense: by this host's records under
    ``tuned`` (logged in ``choices``), else by the rule (``max_density``)."""
    rule = dens <= opts.max_density
    signed = _signature(op) if choices is not None and dens <= MEASURED_MAX_DENSITY else None
    if choices is None or signed is None:
        if not rule:
            raise NoMatch(f"dense enough: compact blocks keep {dens:.2f} > {opts.max_density}")
        return
    sig, desc = signed
    use, why = decide_block(choices.records.get(sig, []), block, dens, dense_allowed)
    short = "measured faster dense (tuned)" if use is False else ""
    if use is None:
        use = rule
        sign = "<=" if rule else ">"
        why = f"{why}; the rule: compact blocks keep {dens:.2f} {sign} {opts.max_density}"
        short = f"dense enough: compact blocks keep {dens:.2f} > {opts.max_density}"
    what = f"{desc}, {block[0]}x{block[1]} blocks keeping {dens:.2f}"
    choices.log.append((what, f"{BLOCK_ALGORITHM} (f32)" if use else "dense", why))
    if opts.verbose:
        print(f"xgen-raise-block-linear: {what}: {why}", file=sys.stderr)
    if not use:
        raise NoMatch(short)  # (the counts' key: the measured times are in the log)


def bcsr_tables(w: np.ndarray, block: tuple[int, int]) -> tuple[list[np.ndarray], np.ndarray]:
    """Compact tables ([block_offsets, row_offsets, col_offsets, kept_rows, kept_cols]) and
    values of ``w`` [N, K] in ``block`` tiles: the blocks with a nonzero, by block-row then
    block-column; in each, the rows and the columns with a nonzero, rising; its values
    column by column (kept rows x kept columns, zeros where both are kept included)."""
    br, bc = block
    n, k = w.shape
    nbr, nbc = -(-n // br), -(-k // bc)
    padded = np.zeros((nbr * br, nbc * bc), np.float32)
    padded[:n, :k] = w
    tiles = padded.reshape(nbr, br, nbc, bc).transpose(0, 2, 1, 3)  # [nbr, nbc, br, bc]
    nz = tiles != 0
    row_kept, col_kept = nz.any(3), nz.any(2)  # [nbr, nbc, br], [nbr, nbc, bc]
    kept = row_kept.any(2)  # blocks with a nonzero
    row_kept &= kept[..., None]
    col_kept &= kept[..., None]
    bi, _, r = np.nonzero(row_kept)  # C order: block-row, block-column, row
    _, bj, c = np.nonzero(col_kept)
    i32 = np.int32
    bo = np.concatenate([[0], np.cumsum(kept.sum(1))])
    ro = np.concatenate([[0], np.cumsum(row_kept.sum(2)[kept])])
    co = np.concatenate([[0], np.cumsum(col_kept.sum(2)[kept])])
    values = tiles.transpose(0, 1, 3, 2)[col_kept[..., :, None] & row_kept[..., None, :]]
    tables = [np.asarray(t, i32) for t in (bo, ro, co, r + bi * br, c + bj * bc)]
    return tables, np.asarray(values, np.float32)


@register_pass(
    "xgen-bcsr-compact",
    "Compact xgen_sparse.block_linear into bcsr_linear (kept blocks, rows, columns, values).",
)
def bcsr_compact(module_op: ir.Operation, _opts: Any) -> None:
    reader = ConstantReader(module_op)
    for op in ops_named(module_op, BLOCK_LINEAR):
        w = reader.value_of(op.operands[1])
        if w is None:
            continue  # not constant: left for the dense lowering
        br, bc = block_of(op)
        tables, values = bcsr_tables(np.asarray(w, np.float32), (br, bc))
        with ir.InsertionPoint(op), op.location:
            consts = [constant_op(values, "xgen_bcsr_values").result]
            consts += [constant_op(t, "xgen_bcsr_table").result for t in tables]
            new = ir.Operation.create(
                BCSR_LINEAR,
                results=[op.results[0].type],
                operands=[op.operands[0], consts[0], op.operands[2], *consts[1:]],
                attributes={
                    "block": op.attributes["block"],
                    "weight_shape": i64_array(list(w.shape)),
                },
            )
        op.results[0].replace_all_uses_with(new.results[0])
        old = list(op.operands)
        op.erase()
        erase_dead_tree(old)


def _t(shape: list[int]) -> str:
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


def _dense_text(name: str, m: int, n: int, k: int) -> str:
    return f"""
func.func private @{name}(%x: {_t([m, k])}, %w: {_t([k, n])}, %b: {_t([n])}) -> {_t([m, n])} {{
  %e = tensor.empty() : {_t([m, n])}
  %bb = linalg.broadcast ins(%b : {_t([n])}) outs(%e : {_t([m, n])}) dimensions = [0]
  %y = linalg.matmul ins(%x, %w : {_t([m, k])}, {_t([k, n])}) outs(%bb : {_t([m, n])}) -> {_t([m, n])}
  return %y : {_t([m, n])}
}}"""


def lower_to_linalg(module_op: ir.Operation, op: ir.Operation, reader: ConstantReader) -> None:
    """``op`` as a dense matmul + bias (weights rebuilt from the compact storage)."""
    n, k = weight_shape(op)
    m = ir.RankedTensorType(op.operands[0].type).shape[0]
    if op.name == BLOCK_LINEAR:
        w = reader.value_of(op.operands[1])
    else:
        w = bcsr_to_dense(op, reader)
    if w is None:
        raise PassFailure(f"{format_location(op.location)}: {op.name} needs constant weights")
    name = free_symbol(module_op, "xgen_block_dense", 1)
    splice_functions(module_op, _dense_text(name, m, n, k))
    with ir.InsertionPoint(op), op.location:
        wt = constant_op(np.ascontiguousarray(np.asarray(w, np.float32).T), "xgen_dense_weight")
        call = func.CallOp(
            [op.results[0].type],
            ir.FlatSymbolRefAttr.get(name),
            [op.operands[0], wt.result, op.operands[2]],
        )
    op.results[0].replace_all_uses_with(call.results[0])
    old = list(op.operands)
    op.erase()
    erase_dead_tree(old)


@dataclass
class LowerBlockOptions:
    warn: bool = False  # say once that block-pruned layers run dense (targets without kernels)


@register_pass(
    "xgen-lower-block-to-linalg",
    "Lower xgen_sparse block_linear / bcsr_linear to dense linalg.matmul (reference, fallback).",
    LowerBlockOptions,
)
def lower_block_to_linalg(module_op: ir.Operation, opts: LowerBlockOptions | None) -> Counter:
    opts = opts or LowerBlockOptions()
    reader = ConstantReader(module_op)
    ops = ops_named(module_op, *BLOCK_OPS)
    for op in ops:
        lower_to_linalg(module_op, op, reader)
    if ops and opts.warn:
        warn_fallback(
            f"xgen-lower-block-to-linalg: {len(ops)} block-pruned layer(s) run dense on this "
            "target (block-sparse kernels exist for the cpu target only)"
        )
    return Counter({"lowered dense": len(ops)} if ops else {})


@dataclass
class BcsrKernelOptions(ToolchainOptions):
    vector_bits: int = 512  # the target's vector width (the kernel's register tile)
    nan_checks: bool = True  # NaN/Inf inputs at pruned weights give NaN, as dense does
    threads: int = 0  # the threads the module runs on (0: this host's): workgroups balance


def _wrapper_text(spec: BcsrSpec, wlen: int, packed_in: bool) -> str:
    """``<symbol>_call(x, w)``: the pack of x into token tiles (and NaN flags), the kernel.
    ``packed_in``: x comes packed from the kernel before (no pack); ``spec.packed_out``: the
    result is the next kernel's packed x, not ``y[M][N]``."""
    m, k, n = spec.m, spec.k, spec.n
    sym, px = spec.symbol, packed_x_size(spec)
    ny = packed_out_size(spec) if spec.packed_out else m * n
    lines, x_type, packed = [], _t([px]), "%x"
    if not packed_in:
        lines += [
            f"  %flat = tensor.collapse_shape %x [[0, 1]] : {_t([m, k])} into {_t([m * k])}",
            f"  %p = func.call @{sym}_pack(%flat) : ({_t([m * k])}) -> {_t([px])}",
        ]
        x_type, packed = _t([m, k]), "%p"
    lines.append(
        f"  %o = func.call @{sym}({packed}, %w) : ({_t([px])}, {_t([wlen])}) -> {_t([ny])}"
    )
    y_type, result = _t([ny]), "%o"
    if not spec.packed_out:
        y_type, result = _t([m, n]), "%r"
        lines.append(
            f"  %r = tensor.expand_shape %o [[0, 1]] output_shape [{m}, {n}] "
            f": {_t([m * n])} into {_t([m, n])}"
        )
    body = "\n".join(lines)
    pack = "" if packed_in else f"func.func private @{sym}_pack({_t([m * k])}) -> {_t([px])}\n"
    return f"""
func.func private @{sym}_call(%x: {x_type}, %w: {_t([wlen])}) -> {y_type} {{
{body}
  return {result} : {y_type}
}}
{pack}func.func private @{sym}({_t([px])}, {_t([wlen])}) -> {_t([ny])}
"""


@dataclass
class _KernelPlan:
    """What a bcsr_linear op becomes: its kernel's spec, weights and fused epilogue."""

    spec: BcsrSpec
    vals: np.ndarray
    bias: np.ndarray
    act_ops: list[ir.Operation]
    end: ir.Operation  # the op whose result the kernel's call replaces


def _handoffs(plans: list[_KernelPlan | None], ops: list[ir.Operation]) -> dict[int, int]:
    """producer index -> consumer index, where a kernel's result (after its fused epilogue) is
    used only as the x of the next kernel, for the same tokens: the producer then writes its
    output in the consumer's packed layout and the consumer skips its pack (a transformer's
    FFN: up-projection, GELU, down-projection)."""
    index = {op.operation: i for i, op in enumerate(ops)}
    pairs: dict[int, int] = {}
    for i, plan in enumerate(plans):
        if plan is None:
            continue
        uses = list(plan.end.results[0].uses)
        if len(uses) != 1 or uses[0].operand_number != 0:
            continue
        j = index.get(uses[0].owner.operation)
        consumer = plans[j] if j is not None else None
        if j is None or consumer is None or consumer.spec.m != plan.spec.m:
            continue
        pairs[i] = j
    return pairs


def _lower_whole_columns(
    module_op: ir.Operation,
    op: ir.Operation,
    parts: tuple[Any, np.ndarray, np.ndarray],
    ev: ConstEval,
    opts: BcsrKernelOptions,
    workers: int,
) -> Counter:
    """Lower ``op`` (its ``parts``: compact tables, values, bias) to the whole-column kernel
    (``codegen/column_sparse.py``) where every block keeps all its rows and blocks are whole
    vectors of rows; an empty Counter where not (the row-and-column kernel takes it)."""
    tab, vals, bias = parts
    _, _, lanes = block_tile(opts.vector_bits or 128)
    n, k = weight_shape(op)
    br, bc = block_of(op)
    block = (br, bc)
    if not column_sparse.whole_column_panels(n, block, tab.block_offsets, tab.row_offsets, lanes):
        return Counter()
    m = ir.RankedTensorType(op.operands[0].type).shape[0]
    epi = epilogue(op.results[0], ev)
    nv = block[0] // lanes
    rows = min(12, (vector_registers(opts.vector_bits or 128) - nv - 1) // nv)
    symbol = free_symbol(module_op, "xgen_bcsr", 1)
    spec = column_sparse.ColumnSpec(
        symbol, m, n, k, lanes, rows, nv,
        column_sparse.panel_tables(tab.block_offsets, tab.col_offsets, n // block[0]),
        tab.kept_cols, tuple(epi.lines), opts.nan_checks, workers,
    )  # fmt: skip
    obj = compile_object(column_sparse.generate(spec), opts.toolchain(), symbol)
    end = epi.ops[-1] if epi.ops else op
    install_kernel(
        module_op, symbol, str(obj), opts.object_format,
        [op.operands[0], pack_values(vals, bias)], end.results[0].type, spec.grid,
        [op, *epi.ops], end, None, "xgen_bcsr_weights", ids=2,
    )  # fmt: skip
    counts = Counter({"block-sparse kernels": 1, "of them on whole columns": 1})
    if spec.act:
        counts["of them with their activations"] = 1
    return counts


@register_pass(
    "xgen-lower-bcsr-kernels",
    "Lower xgen_sparse.bcsr_linear to generated block-sparse C kernels in IREE dispatches.",
    BcsrKernelOptions,
)
def lower_bcsr_kernels(module_op: ir.Operation, opts: BcsrKernelOptions | None) -> Counter:
    opts = opts or BcsrKernelOptions()
    toolchain = opts.toolchain()
    reader = ConstantReader(module_op)
    ops = ops_named(module_op, BCSR_LINEAR)
    counts: Counter[str] = Counter()
    if ops and not toolchain.available():
        warn_fallback(
            f"xgen-lower-bcsr-kernels: C compiler '{opts.cc}' not found; "
            f"{len(ops)} block-pruned layer(s) run dense instead"
        )
    _, _, lanes = block_tile(opts.vector_bits or 128)
    registers = vector_registers(opts.vector_bits or 128)
    workers = opts.threads or host_threads()
    with module_op.context:
        ev = ConstEval(module_op)
        plans: list[_KernelPlan | None] = []
        rest = []  # the ops not lowered here, one plan each
        for op in ops:
            tab = tables_of(op, reader)
            vals = reader.value_of(op.operands[1])
            bias = reader.value_of(op.operands[2])
            if not toolchain.available() or tab is None or vals is None or bias is None:
                plans.append(None)
                rest.append(op)
                continue
            # blocks keeping whole columns: the dense kernel's way, lowered right here
            done = _lower_whole_columns(module_op, op, (tab, vals, bias), ev, opts, workers)
            counts.update(done)
            if done:
                continue
            rest.append(op)
            n, k = weight_shape(op)
            m = ir.RankedTensorType(op.operands[0].type).shape[0]
            epi = epilogue(op.results[0], ev)
            br, bc = block_of(op)
            spec = BcsrSpec(
                symbol="",
                m=m,
                n=n,
                k=k,
                block=(br, bc),
                lanes=lanes,
                m_vectors=TOKEN_VECTORS,
                block_offsets=tab.block_offsets,
                row_offsets=tab.row_offsets,
                col_offsets=tab.col_offsets,
                kept_rows=tab.kept_rows,
                kept_cols=tab.kept_cols,
                act=tuple(epi.lines),
                nan_checks=opts.nan_checks,
                registers=registers,
                workers=workers,
            )
            end = epi.ops[-1] if epi.ops else op
            plans.append(_KernelPlan(spec, vals, bias, list(epi.ops), end))
        ops = rest
        handoffs = _handoffs(plans, ops)
        for i, j in handoffs.items():
            producer, consumer = plans[i], plans[j]
            assert producer is not None and consumer is not None
            producer.spec.packed_out = True
            consumer.spec.flag_rows = producer.spec.workgroups
        packed_in = set(handoffs.values())
        for i, (op, plan) in enumerate(zip(ops, plans, strict=True)):
            if plan is None:
                lower_to_linalg(module_op, op, reader)
                counts["lowered dense"] += 1
                continue
            spec = plan.spec
            spec.symbol = symbol = free_symbol(module_op, "xgen_bcsr", 1)
            m, k, n = spec.m, spec.k, spec.n
            packed = pack_values(plan.vals, plan.bias)
            obj = compile_object(generate(spec), toolchain, symbol)
            splice_functions(module_op, _wrapper_text(spec, packed.size, i in packed_in))
            px = packed_x_size(spec)
            ny = packed_out_size(spec) if spec.packed_out else m * n
            dispatches = [(symbol, obj, [px, packed.size], ny, spec.workgroups)]
            if i not in packed_in:
                pack_obj = compile_object(generate_pack(spec), toolchain, f"{symbol}_pack")
                dispatches.append(
                    (f"{symbol}_pack", pack_obj, [m * k], px, spec.m_padded // spec.m_tile)
                )
            for name, path, operands, result, groups in dispatches:
                find_func(module_op, name).attributes[EXECUTABLE_ATTR] = ir.StringAttr.get(
                    dispatch.executable_text(
                        name, str(path), opts.object_format, operands, result, (groups, 1, 1), 1
                    )
                )
            end, act_ops = plan.end, plan.act_ops
            with ir.InsertionPoint(end), end.location:
                w = constant_op(packed, "xgen_bcsr_weights").result
                call = func.CallOp(
                    [ir.RankedTensorType.get([ny], ir.F32Type.get())]
                    if spec.packed_out
                    else [op.results[0].type],
                    ir.FlatSymbolRefAttr.get(f"{symbol}_call"),
                    [op.operands[0], w],
                )
            # a producer's packed result becomes its consumer's x (lowered later in this loop:
            # the consumer reads the producer's result, so it comes after it)
            end.results[0].replace_all_uses_with(call.results[0])
            for a in reversed(act_ops):
                a.erase()
            old = list(op.operands)
            op.erase()
            erase_dead_tree(old)
            counts["block-sparse kernels"] += 1
            if spec.act:
                counts["of them with their activations"] += 1
            if spec.packed_out:
                counts["of them handing their output packed to the next"] += 1
    return counts
