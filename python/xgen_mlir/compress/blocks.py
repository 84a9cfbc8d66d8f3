"""Block-based pruning (XGen §2.1.2): blocks of a layer's GEMM view, columns and rows pruned
inside each block.

Every prunable layer is seen as a GEMM weight ``W[out, in]``: a Linear as it is, a conv
(1-D/2-D/3-D, groups=1) as ``[filters, channels * kernel volume]`` (the im2col view, so a
1x1 or 1x1x1 conv is exactly a GEMM over pixels). ``W`` is cut into blocks of ``rows x
cols``; inside each block the weakest columns are removed (all rows of the block skip them),
then the weakest rows over the kept columns. "Weakest" is, by default (``criterion=
"activation"``), the least output energy: a weight's square times the mean square of the input
feature it multiplies, measured with forward hooks on the example (and calibration) inputs,
the activation-aware saliency of Wanda / AWQ. Transformers' hidden states have outlier
features (MiniLM: some 5-21x the median RMS), and a small weight on one of them matters more
than a big one on a quiet feature; ``criterion="weight"`` ranks by weight energy alone. What
is kept in a block is therefore a dense
``kept rows x kept columns`` sub-matrix, the shape the block-sparse kernels consume
(``codegen/block_sparse.py``): a kept column is one input row streamed through the register
tile, a kept row one accumulator of it.

The co-design constraint: the default block is the target's register tile
(``target.block_tile``): ``rows`` = the tile's accumulator rows, ``cols`` = 4 vectors of lanes
(8 x 64 on AVX-512, 4 x 32 on AVX2), so a block's kept rows fill the tile and the per-block
accumulator flush stays small against its kept columns' FMAs.

The structure lives in three persistent buffers of each pruned module (``state_dict`` and
``torch.export`` keep them; the zeros alone are what the compiler reads):

- ``xgen_block_shape`` [2] int32: (rows, cols) of a block;
- ``xgen_block_rows`` [NBR, NBC, rows] bool: kept rows of each block (local index);
- ``xgen_block_cols`` [NBR, NBC, cols] bool: kept columns of each block (local index).

A block keeps rows and columns, or none of either (a removed block). Positions past the
matrix's edge (edge blocks) are never kept.
"""

from __future__ import annotations

import copy
import fnmatch
import math
from collections.abc import Callable, Iterable
from typing import cast

import torch
from torch import nn
from tqdm.auto import tqdm

from ..errors import XGenError
from ..target import block_tile, host_fact

__all__ = [
    "BLOCK_BUFFERS",
    "CRITERIA",
    "attach_blocks",
    "block_mask",
    "check_block_layer",
    "conv1d_to_linear",
    "default_block_shape",
    "default_row_share",
    "gemm_view",
    "input_mean_squares",
    "is_block_pruned",
    "kept_counts",
    "prune_blocks",
]

BLOCK_BUFFERS = ("xgen_block_shape", "xgen_block_rows", "xgen_block_cols")
#: Targets whose block shape comes from the compiling host's facts.
HOST_TARGETS = ("cpu",)

#: How columns and rows are ranked inside a block (see the module docstring).
CRITERIA = ("activation", "weight", "reconstruction")

LayerFilter = Iterable[str] | Callable[[str, nn.Module], bool] | None
_CONVS = (nn.Conv1d, nn.Conv2d, nn.Conv3d)


def _vector_bits(target: str, vector_bits: int | None) -> int:
    if vector_bits is None:
        if target not in HOST_TARGETS:
            raise XGenError(
                f"block pruning for target {target!r}: give block_shape= or vector_bits= "
                f"(the block shape of {HOST_TARGETS} comes from the host's vector width)"
            )
        vector_bits = host_fact("vector_bits")
    return vector_bits or 128


def whole_column_default(vector_bits: int) -> bool:
    """Whether the target's default blocks keep whole columns (``row_share`` 0): on 256- and
    512-bit vectors (AVX2, AVX-512), where the whole-column kernel
    (``codegen/column_sparse.py``) ran every BERT-base shape at 4x faster than blocks of the
    block-sparse kernel's tile (AVX2: 0.70-0.81 of the ideal speedup against 0.44-0.77;
    AVX-512: 15-25% faster per layer in two runs), and MiniLM distilled at 4x to the same
    held-out cosine at the same budget (AVX2's 16x32: 0.674 against 0.675; AVX-512's 32x64:
    0.663 against 0.653, ``docs/block-pruning.md``). 128-bit vectors keep the block-sparse
    kernel's tile: the whole-column blocks are not measured there."""
    return vector_bits in (256, 512)


def default_block_shape(target: str = "cpu", vector_bits: int | None = None) -> tuple[int, int]:
    """(rows, cols) of the target's block, the co-design contract with its kernels: two
    vectors of rows keeping whole columns where :func:`whole_column_default` (16 x 32 on
    AVX2, 32 x 64 with AVX-512), else the block-sparse kernel's register tile
    (``target.block_tile``: 4 x 16 on 128-bit vectors)."""
    bits = _vector_bits(target, vector_bits)
    rows, _, lanes = block_tile(bits)
    if whole_column_default(bits):
        return 2 * lanes, 4 * lanes
    return rows, 4 * lanes


def default_row_share(target: str = "cpu", vector_bits: int | None = None) -> float:
    """The part of a default block's reduction taken by its rows: 0 where the default blocks
    keep whole columns, else 0.5 (rows and columns pruned alike, in log scale)."""
    return 0.0 if whole_column_default(_vector_bits(target, vector_bits)) else 0.5


def conv1d_to_linear(model: nn.Module) -> nn.Module:
    """A copy of ``model`` with every ``transformers`` ``Conv1D`` (GPT-2's attention and MLP
    projections: ``y = x W + b`` with ``W`` [in, out]) replaced by the same ``nn.Linear``
    (``W`` transposed), so block pruning sees them (its GEMM view is [out, in]). The copy's
    state dict has those weights transposed: save and load it as its own architecture."""
    out = copy.deepcopy(model)
    for parent in list(out.modules()):
        for name, child in list(parent.named_children()):
            if type(child).__name__ != "Conv1D" or not hasattr(child, "nf"):
                continue
            w = cast(torch.Tensor, child.weight)
            lin = nn.Linear(w.shape[0], w.shape[1], bias=child.bias is not None)
            with torch.no_grad():
                lin.weight.copy_(w.t())
                if child.bias is not None:
                    cast(torch.Tensor, lin.bias).copy_(cast(torch.Tensor, child.bias))
            setattr(parent, name, lin.to(w.dtype).train(child.training))
    return out


def is_block_pruned(module: nn.Module) -> bool:
    return "xgen_block_rows" in module._buffers


def _weight(module: nn.Module) -> torch.Tensor:
    return cast(torch.Tensor, module.weight)


def gemm_view(weight: torch.Tensor) -> torch.Tensor:
    """``weight`` as the GEMM matrix [out, in * kernel volume] (a view)."""
    return weight.reshape(weight.shape[0], -1)


def _grid(n: int, k: int, br: int, bc: int) -> tuple[int, int]:
    return -(-n // br), -(-k // bc)


def _to_blocks(w: torch.Tensor, br: int, bc: int) -> torch.Tensor:
    """[N, K] -> [NBR, NBC, br, bc], zero-padded at the edges."""
    n, k = w.shape
    nbr, nbc = _grid(n, k, br, bc)
    padded = torch.zeros(nbr * br, nbc * bc, dtype=w.dtype)
    padded[:n, :k] = w
    return padded.reshape(nbr, br, nbc, bc).permute(0, 2, 1, 3)


def _from_blocks(b: torch.Tensor, n: int, k: int) -> torch.Tensor:
    nbr, nbc, br, bc = b.shape
    return b.permute(0, 2, 1, 3).reshape(nbr * br, nbc * bc)[:n, :k]


def attach_blocks(
    module: nn.Module, shape: tuple[int, int], rows: torch.Tensor, cols: torch.Tensor
) -> None:
    """Register (or overwrite) the block structure buffers of ``module``."""
    for name in ("xgen_patterns", "xgen_pattern_ids", "xgen_groups"):
        module._buffers.pop(name, None)
    module.register_buffer("xgen_block_shape", torch.tensor(shape, dtype=torch.int32))
    module.register_buffer("xgen_block_rows", rows.to(torch.bool).clone())
    module.register_buffer("xgen_block_cols", cols.to(torch.bool).clone())


def block_mask(module: nn.Module) -> torch.Tensor:
    """The bool keep-mask of ``module.weight`` its block buffers describe."""

    rows = cast(torch.Tensor, module.xgen_block_rows)
    cols = cast(torch.Tensor, module.xgen_block_cols)
    w = _weight(module)
    n, k = gemm_view(w).shape
    keep = rows[..., :, None] & cols[..., None, :]  # [NBR, NBC, br, bc]
    return _from_blocks(keep, n, k).reshape(w.shape)


def _edge_valid(n: int, k: int, br: int, bc: int) -> tuple[torch.Tensor, torch.Tensor]:
    """[NBR, NBC, br] / [NBR, NBC, bc] bool: positions inside the matrix."""
    nbr, nbc = _grid(n, k, br, bc)
    r = (torch.arange(nbr)[:, None] * br + torch.arange(br)[None, :]) < n
    c = (torch.arange(nbc)[:, None] * bc + torch.arange(bc)[None, :]) < k
    return r[:, None, :].expand(nbr, nbc, br), c[None, :, :].expand(nbr, nbc, bc)


def check_block_layer(name: str, module: nn.Module, error: type[Exception]) -> None:
    """Raise ``error`` naming the layer and block where the weights break the structure."""
    where = f"layer {name!r}"
    shape = cast(torch.Tensor, module.xgen_block_shape)
    rows = cast(torch.Tensor, module.xgen_block_rows)
    cols = cast(torch.Tensor, module.xgen_block_cols)
    w = gemm_view(_weight(module).detach())
    n, k = w.shape
    if shape.shape != (2,) or int(shape.min()) < 1:
        raise error(f"{where}: xgen_block_shape must be two positive sizes, got {shape.tolist()}")
    br, bc = (int(v) for v in shape)
    nbr, nbc = _grid(n, k, br, bc)
    if rows.shape != (nbr, nbc, br) or cols.shape != (nbr, nbc, bc):
        raise error(
            f"{where}: block buffers {tuple(rows.shape)}, {tuple(cols.shape)} do not fit weight "
            f"{tuple(_weight(module).shape)} (GEMM view {n}x{k}) in {br}x{bc} blocks "
            f"(want ({nbr}, {nbc}, {br}) and ({nbr}, {nbc}, {bc}))"
        )
    vr, vc = (v.to(rows.device) for v in _edge_valid(n, k, br, bc))
    if bool((rows & ~vr).any() or (cols & ~vc).any()):
        raise error(f"{where}: a block keeps a row or column past the matrix's edge")
    half = rows.any(-1) != cols.any(-1)
    if bool(half.any()):
        i, j = (int(v) for v in torch.nonzero(half)[0])
        raise error(
            f"{where}: block ({i}, {j}) keeps rows but no columns or columns but no rows "
            "(a removed block keeps neither)"
        )
    mask = gemm_view(block_mask(module))
    nz = w != 0
    bad = nz != mask
    if bool(bad.any()):
        r, c = (int(v) for v in torch.nonzero(bad)[0])
        what = "nonzero outside" if bool(nz[r, c]) else "zero inside"
        raise error(
            f"{where}: weight [row {r}, column {c}] (block ({r // br}, {c // bc})) is {what} "
            f"the block's kept rows x columns ({int(bad.sum())} bad weight(s) in this layer)"
        )


def _matches(name: str, m: nn.Module, spec: LayerFilter) -> bool:
    if callable(spec):
        return bool(spec(name, m))
    return any(fnmatch.fnmatchcase(name, pat) for pat in spec or ())


def _candidates(
    model: nn.Module, shape: tuple[int, int], layers: LayerFilter, exclude: LayerFilter
) -> dict[str, nn.Module]:
    out: dict[str, nn.Module] = {}
    for name, m in model.named_modules():
        if not isinstance(m, (nn.Linear, *_CONVS)):
            continue
        if isinstance(m, _CONVS) and m.groups != 1:
            continue
        if layers is not None and not _matches(name, m, layers):
            continue
        if _matches(name, m, exclude):
            continue
        n, k = gemm_view(_weight(m)).shape
        if n < shape[0] or k < shape[1]:
            continue  # smaller than one block: nothing the kernels could skip
        out[name] = m
    if layers is not None and not callable(layers):
        names = [n for n, _ in model.named_modules()]
        unknown = [p for p in layers if not any(fnmatch.fnmatchcase(n, p) for n in names)]
        if unknown:
            raise XGenError(f"layers= names match no module: {unknown}")
    return out


def _layer_rates(
    chosen: dict[str, nn.Module], rate: float | dict[str, float], allocation: str
) -> dict[str, float]:
    """Per-layer compression rates (>= 1): a dict of globs, one rate for all, or ERK."""
    if isinstance(rate, dict):
        out = {}
        for name in chosen:
            hits = [r for pat, r in rate.items() if fnmatch.fnmatchcase(name, pat)]
            out[name] = float(hits[-1]) if hits else 1.0
        return out
    if allocation == "uniform":
        return {name: float(rate) for name in chosen}
    if allocation != "erk":
        raise XGenError(f"allocation={allocation!r}: use 'uniform' or 'erk'")
    # ERK (RigL): kept fraction proportional to (N + K) / (N K), scaled so the pruned layers
    # keep 1/rate of their weights; a layer keeps at most all of them
    sizes = {name: gemm_view(_weight(m)).shape for name, m in chosen.items()}
    scale = {name: (n + k) / (n * k) for name, (n, k) in sizes.items()}
    total = sum(n * k for n, k in sizes.values())
    want = total / rate
    lo, hi = 0.0, 1 / min(scale.values())
    for _ in range(60):
        mid = (lo + hi) / 2
        kept = sum(min(1.0, mid * scale[x]) * n * k for x, (n, k) in sizes.items())
        lo, hi = (mid, hi) if kept <= want else (lo, mid)
    return {name: 1 / max(min(1.0, lo * scale[name]), 1e-6) for name in chosen}


def _keep_top(score: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """[..., L] scores, [...] counts -> bool mask of each row's ``count`` highest scores."""
    order = score.argsort(dim=-1, descending=True, stable=True)
    rank = torch.empty_like(order)
    rank.scatter_(-1, order, torch.arange(score.shape[-1]).expand_as(order).contiguous())
    return rank < count[..., None]


def kept_counts(rows: int, cols: int, rate: float, row_share: float) -> tuple[int, int]:
    """(kept rows, kept columns) of a ``rows x cols`` block for a ``rate``x reduction: rows
    rounded to the nearest count of ``row_share`` (log scale) of the reduction, then as many
    columns as keep the block at or under ``1 / rate`` of its weights (rounding columns to the
    nearest could keep more: 6 of 8 rows x 43 of 64 columns at 2x is 0.504, over 1/2). At least
    one row and one column (a rate beyond ``rows x cols`` keeps that one weight)."""
    density = 1.0 / rate
    kr = min(rows, max(1, round(rows * density**row_share)))
    # the tiny slack absorbs float error in products that are exactly whole (4x: 32.0)
    kc = min(cols, max(1, math.floor(density * rows * cols / kr + 1e-9)))
    return kr, kc


def block_structure(
    w: torch.Tensor,
    shape: tuple[int, int],
    rate: float,
    row_share: float,
    input_ms: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Kept rows and columns of every block of GEMM matrix ``w`` for a ``rate``x reduction:
    columns by their energy in the block, then rows by their energy over the kept columns.
    ``input_ms`` ([K], the mean square of each GEMM column's input): the energy of a weight is
    then its square times its input's mean square, what it adds to its output's energy (input
    features taken as uncorrelated); without it, its square. ``row_share`` is the part of the
    reduction (in log scale) taken by rows. Every block keeps at most ``1 / rate`` of its
    weights (:func:`kept_counts`), so the layer does too."""
    br, bc = shape
    n, k = w.shape
    sq = w.detach().double().cpu() ** 2
    if input_ms is not None:
        ms = input_ms.detach().double().cpu()
        if ms.shape != (k,):
            raise XGenError(f"input_ms has shape {tuple(ms.shape)}, the GEMM view has {k} columns")
        # a millionth of the mean: columns whose input was always zero rank by weight energy
        # among themselves instead of tying
        scale = ms + 1e-6 * ms.mean() if float(ms.max()) > 0 else torch.ones_like(ms)
        sq = sq * scale[None, :]
    energy = _to_blocks(sq, br, bc)  # [NBR, NBC, br, bc]
    vr, vc = _edge_valid(n, k, br, bc)
    # edge blocks (fewer rows / columns inside the matrix) get their own counts
    nr, nc = vr.sum(-1), vc.sum(-1)
    sizes = list(zip(nr.flatten().tolist(), nc.flatten().tolist(), strict=True))
    counts = {rc: kept_counts(*rc, rate, row_share) for rc in set(sizes)}
    kr_b = torch.tensor([counts[rc][0] for rc in sizes]).reshape(nr.shape)
    kc_b = torch.tensor([counts[rc][1] for rc in sizes]).reshape(nc.shape)
    col_e = energy.sum(-2).masked_fill(~vc, -math.inf)
    cols = _keep_top(col_e, kc_b) & vc
    row_e = (energy * cols[..., None, :]).sum(-1).masked_fill(~vr, -math.inf)
    rows = _keep_top(row_e, kr_b) & vr
    return rows, cols


def _as_args(sample: object) -> tuple[tuple, dict]:
    """A calibration sample as call arguments: a dict (keyword inputs), a tuple / list (one
    item per input) or one tensor (a one-input model)."""
    if isinstance(sample, dict):
        return (), sample
    if isinstance(sample, (tuple, list)):
        return tuple(sample), {}
    return (sample,), {}


@torch.no_grad()
def input_mean_squares(
    model: nn.Module, layers: dict[str, nn.Module], inputs: Iterable[object]
) -> dict[str, torch.Tensor]:
    """{name: [K] float64}: the mean square of each GEMM column's input of every layer in
    ``layers`` (modules of ``model``), over every position of every sample in ``inputs`` (each
    a tuple of ``model``'s inputs, a dict of keyword inputs or one tensor), measured with
    forward pre-hooks. A Linear's column is an input feature; a conv's column (channel,
    kernel offset) gets its channel's mean square over all input positions (exact for 1x1
    convs; the im2col view's zero padding is not counted). A layer no sample reaches, or
    whose inputs hold NaN / Inf, is an error naming it."""
    sums: dict[str, torch.Tensor] = {}
    counts: dict[str, int] = {name: 0 for name in layers}

    def hook(name: str, m: nn.Module) -> Callable:
        def record(_: nn.Module, args: tuple, kwargs: dict) -> None:
            x = (args[0] if args else kwargs["input"]).detach()
            if isinstance(m, _CONVS):
                if x.dim() == len(m.kernel_size) + 1:  # unbatched
                    x = x.unsqueeze(0)
                flat = x.transpose(0, 1).reshape(x.shape[1], -1).t()
            else:
                flat = x.reshape(-1, x.shape[-1])
            part = flat.double().pow(2).sum(0)
            sums[name] = sums[name] + part if name in sums else part
            counts[name] += flat.shape[0]

        return record

    handles = [
        m.register_forward_pre_hook(hook(name, m), with_kwargs=True) for name, m in layers.items()
    ]
    was_training = model.training
    model.eval()
    try:
        for sample in tqdm(inputs, desc="block pruning: input statistics", disable=None):
            args, kwargs = _as_args(sample)
            model(*args, **kwargs)
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    missing = [name for name, c in counts.items() if c == 0]
    if missing:
        raise XGenError(
            f"criterion='activation': {len(missing)} layer(s) to prune never ran on the example "
            f"or calibration inputs, so their inputs cannot be measured: {missing} (give inputs "
            "that reach them, exclude= them, or use criterion='weight')"
        )
    out = {}
    for name, m in layers.items():
        ms = (sums[name] / counts[name]).cpu()
        if not bool(torch.isfinite(ms).all()):
            raise XGenError(
                f"criterion='activation': layer {name!r} had NaN or Inf in its inputs on the "
                "example or calibration inputs"
            )
        kvol = gemm_view(_weight(m)).shape[1] // ms.shape[0]
        out[name] = ms.repeat_interleave(kvol) if kvol > 1 else ms
    return out


@torch.no_grad()
def _project(module: nn.Module) -> None:
    from .structure import TINY

    mask = block_mask(module)
    w = _weight(module)
    w.mul_(mask)
    w.masked_fill_(mask & (w == 0), TINY)


def _refit(
    dense: nn.Module,
    pruned: nn.Module,
    chosen: dict[str, nn.Module],
    samples: list[object],
    damp: float,
    verbose: bool,
    choose: Callable[[str, nn.Module, torch.Tensor], None] | None = None,
) -> None:
    import warnings

    from .refit import refit_layers

    report = refit_layers(
        dense, pruned, chosen, samples, damp=damp, project=_project, choose=choose
    )
    skipped = {n: r["skipped"] for n, r in report.items() if "skipped" in r}
    if skipped:
        warnings.warn(
            f"block pruning: {len(skipped)} of {len(chosen)} layer(s) keep their ranked "
            f"weights, not refitted: "
            + "; ".join(f"{n}: {why}" for n, why in skipped.items())
            + " (give more calibration= samples)",
            stacklevel=3,
        )
    if verbose:
        for n, r in report.items():
            if "skipped" not in r:
                print(
                    f"refit {n}: output error {r['error_before']:.4f} -> {r['error_after']:.4f} "
                    f"({r['positions']} positions)"
                )


def prune_blocks(
    model: nn.Module,
    example_inputs: tuple,
    target: str = "cpu",
    *,
    rate: float | dict[str, float] = 4.0,
    block_shape: tuple[int, int] | dict[str, tuple[int, int]] | None = None,
    row_share: float | None = None,
    allocation: str = "uniform",
    layers: LayerFilter = None,
    exclude: LayerFilter = (),
    vector_bits: int | None = None,
    criterion: str = "activation",
    calibration: Iterable[object] | None = None,
    refit: bool | None = None,
    damp: float = 0.01,
    verbose: bool = False,
) -> nn.Module:
    """Block-prune a deep copy of ``model`` (``compress.prune(..., scheme="block")``).

    ``rate``: weights become this many times fewer in every pruned layer (or a
    ``{glob: rate}`` dict; unmatched layers stay dense); ``allocation``: "uniform" or "erk"
    (big layers pruned harder, the pruned layers together still ``rate``x fewer);
    ``block_shape``: (rows, cols) for all layers or ``{glob: shape}`` (default: the
    target's blocks, :func:`default_block_shape`); ``row_share``: the part of each
    block's reduction (in log scale) taken by removing rows, the rest by columns (default:
    the target's, :func:`default_row_share`, with its default blocks; 0.5 with blocks given:
    0 keeps whole columns).
    ``criterion``: "reconstruction" chooses each layer's columns and rows at its refit, on
    the inputs the already-pruned layers before it give: a weight's square times its column's
    ``1 / [H^-1]_jj`` (:func:`.refit.column_saliency_scale`: what removing it costs once the
    others are refitted, so a column the others predict is cheap); it implies ``refit``.
    "activation" (default) ranks columns and rows by their weights' squares
    times their inputs' mean squares (:func:`input_mean_squares`, over ``example_inputs`` and
    every sample of ``calibration``: tuples of inputs, dicts or tensors); "weight" by the
    weights' squares alone.
    ``refit``: after the structure is chosen, least-squares-refit each layer's kept weights
    and bias, layer after layer, so the pruned model reproduces the dense layers' outputs on
    ``example_inputs`` and ``calibration`` (:mod:`.refit`; ``damp``: its ridge, a fraction of
    the inputs' mean square). Default: on when ``calibration`` is given. A layer whose
    calibration holds no more input positions than its GEMM columns keeps its ranked weights,
    with a warning.
    Candidates: Linear and groups=1 Conv1d/2d/3d layers at least one block big.
    """
    if row_share is None:
        row_share = default_row_share(target, vector_bits) if block_shape is None else 0.5
    if not 0.0 <= row_share <= 1.0:
        raise XGenError(f"row_share={row_share} not in [0, 1]")
    if criterion not in CRITERIA:
        raise XGenError(
            f"criterion={criterion!r}: use 'activation' (weights x input RMS, measured on the "
            "example and calibration inputs), 'weight' (weight magnitude alone) or "
            "'reconstruction' (what removing a column costs once the rest is refitted)"
        )
    if criterion == "reconstruction" and refit is False:
        raise XGenError("criterion='reconstruction' ranks by the refit: it needs refit=True")
    if refit is None:
        refit = calibration is not None or criterion == "reconstruction"
    if calibration is not None and criterion != "activation" and not refit:
        raise XGenError(
            f"calibration= is used by criterion='activation' and refit=True, not by "
            f"criterion={criterion!r} with refit=False"
        )
    if damp < 0:
        raise XGenError(f"damp={damp} must be >= 0")
    calibration = list(calibration or ())
    default = default_block_shape(target, vector_bits) if block_shape is None else None
    pruned = copy.deepcopy(model).eval()
    from .structure import detach

    for m in pruned.modules():
        detach(m)
        for b in BLOCK_BUFFERS:
            m._buffers.pop(b, None)

    def shape_of(name: str) -> tuple[int, int]:
        if isinstance(block_shape, dict):
            hits = [s for pat, s in block_shape.items() if fnmatch.fnmatchcase(name, pat)]
            if hits:
                return (int(hits[-1][0]), int(hits[-1][1]))
            return default or default_block_shape(target, vector_bits)
        if block_shape is not None:
            return (int(block_shape[0]), int(block_shape[1]))
        assert default is not None
        return default

    smallest = (1, 1) if isinstance(block_shape, dict) else shape_of("")
    chosen = _candidates(pruned, smallest, layers, exclude)
    if not chosen:
        raise XGenError(
            "no layer to block-prune (Linear or groups=1 conv layers at least one block big)"
        )
    rates = _layer_rates(chosen, rate, allocation)
    bad = {n: r for n, r in rates.items() if r < 1.0}
    if bad:
        raise XGenError(f"block pruning rates must be >= 1 (1 = dense): {bad}")
    for name in chosen:
        if min(shape_of(name)) < 1:
            raise XGenError(f"{name}: block_shape {shape_of(name)} must be positive")
    input_ms: dict[str, torch.Tensor] = {}
    samples = [example_inputs, *calibration]
    if criterion == "activation":
        input_ms = input_mean_squares(pruned, chosen, samples)
    for name, m in chosen.items():
        w, shape = gemm_view(_weight(m)), shape_of(name)
        rows, cols = block_structure(w, shape, rates[name], row_share, input_ms.get(name))
        attach_blocks(m, shape, rows, cols)
        _project(m)
    choose = None
    if criterion == "reconstruction":
        from .refit import obs_block_structure

        dense_mods = dict(model.named_modules())

        @torch.no_grad()
        def choose(name: str, m: nn.Module, precision: torch.Tensor) -> None:
            # the layer's structure from its dense weights and what its columns cost now
            d = dense_mods[name]
            _weight(m).copy_(_weight(d))
            if m.bias is not None:
                cast(torch.Tensor, m.bias).copy_(cast(torch.Tensor, d.bias))
            shape = shape_of(name)
            rows, cols = obs_block_structure(
                gemm_view(_weight(m)), shape, rates[name], row_share, precision
            )
            attach_blocks(m, shape, rows, cols)
            _project(m)

    if refit:
        _refit(model, pruned, chosen, samples, damp, verbose, choose)
    from .structure import check_structure

    check_structure(pruned)
    with torch.no_grad():
        pruned(*example_inputs)
    if verbose:
        from .description import describe

        print(describe(pruned).summary())
    return pruned
