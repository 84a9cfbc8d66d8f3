"""Refit the weights a block-pruned layer keeps, so that it reproduces the dense layer.

Pruning by ranking alone keeps the surviving weights as they were; but once some inputs are
gone, the best weights for the rest are not the old ones. For each pruned layer, in the order
the model runs them, this solves a least-squares problem on calibration inputs (the
layer-wise reconstruction of OBS / SparseGPT, here with the block structure fixed):

    minimise || W_dense x_dense + b_dense  -  (W' x_pruned + b') ||^2  over the kept W', b'

where ``x_dense`` is what the layer sees in the dense model and ``x_pruned`` what it sees in
the model whose earlier layers are already pruned and refitted. Fitting the dense model's
*output* from the pruned model's *input* also repairs the error that arrives from the layers
before. The bias (when the layer has one) is a free variable too: it absorbs the mean that
removed rows and columns used to add.

Every output row's kept columns are fixed by the structure, and rows with the same kept
columns (most rows of a block row) share one solve: ``(H[S,S] + damp) W'[R,S]^T =
G[S,:] W~[R,:]^T`` with ``H = X~_p^T X~_p`` and ``G = X~_p^T X~_d`` (inputs with a constant
1 appended for the bias). Only the second moments ``H`` and ``G`` are kept, so memory is two
``(K+1)^2`` matrices per layer whatever the calibration size. ``damp`` is a fraction of the
mean diagonal of ``H`` (GPTQ's 1%), added to the weight entries only: it keeps the solve
well posed where an input barely varies and pulls little otherwise.

A layer's calibration must hold more input positions than its GEMM columns; one with fewer
keeps its ranked weights (fitting K unknowns per row to fewer samples would fit the noise).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

__all__ = [
    "execution_order",
    "im2col",
    "input_precision",
    "obs_block_structure",
    "refit_groups",
    "refit_layers",
]

_CONVS = (nn.Conv1d, nn.Conv2d, nn.Conv3d)


def im2col(module: nn.Module, x: torch.Tensor) -> torch.Tensor | None:
    """``module``'s input ``x`` as GEMM rows [positions, K] matching ``gemm_view(weight)``'s
    columns (a conv's column is (channel, kernel offset), row-major); None where the layer's
    input cannot be unrolled here (a non-zero padding mode)."""
    if not isinstance(module, _CONVS):
        return x.reshape(-1, x.shape[-1])
    nd = len(module.kernel_size)
    if x.dim() == nd + 1:
        x = x.unsqueeze(0)
    if module.padding_mode != "zeros" or isinstance(module.padding, str):
        return None
    pads: list[int] = []
    for p in reversed(module.padding):
        pads += [p, p]
    x = F.pad(x, pads)
    out = [
        (x.shape[2 + d] - module.dilation[d] * (module.kernel_size[d] - 1) - 1) // module.stride[d]
        + 1
        for d in range(nd)
    ]
    taps = []
    for offset in _offsets(module.kernel_size):
        index: list[slice] = [slice(None), slice(None)]
        for d in range(nd):
            start = offset[d] * module.dilation[d]
            index.append(
                slice(start, start + module.stride[d] * (out[d] - 1) + 1, module.stride[d])
            )
        taps.append(x[tuple(index)])
    cols = torch.stack(taps, dim=2)  # [N, C, kvol, *out]
    n, c, kvol = cols.shape[:3]
    return cols.reshape(n, c * kvol, -1).transpose(1, 2).reshape(-1, c * kvol)


def _offsets(kernel: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    if not kernel:
        yield ()
        return
    for i in range(kernel[0]):
        for rest in _offsets(kernel[1:]):
            yield (i, *rest)


def _call(model: nn.Module, sample: object) -> None:
    from .blocks import _as_args

    args, kwargs = _as_args(sample)
    model(*args, **kwargs)


class _Stop(Exception):
    """Raised from a hook once every input a pass needs is captured: the rest of the forward
    is not needed."""


@contextmanager
def _capture(modules: dict[str, nn.Module], sink: dict[str, list[torch.Tensor]], stop: bool):
    """Append every input ``modules`` see to ``sink[name]`` while the block runs; with
    ``stop``, end the forward (:class:`_Stop`) once each module has had its input."""

    def hook(name: str) -> Callable:
        def record(_: nn.Module, args: tuple, kwargs: dict) -> None:
            sink.setdefault(name, []).append((args[0] if args else kwargs["input"]).detach())
            if stop and len(sink) == len(modules):
                raise _Stop

        return record

    handles = [m.register_forward_pre_hook(hook(n), with_kwargs=True) for n, m in modules.items()]
    try:
        yield
    except _Stop:
        pass
    finally:
        for h in handles:
            h.remove()


@torch.no_grad()
def refit_groups(
    model: nn.Module, layers: dict[str, nn.Module], sample: object
) -> list[tuple[list[str], bool]]:
    """``layers``' names in the order ``model`` first calls them on ``sample``, grouped: a
    layer joins the group before it when it reads the very same input tensor (attention's
    query, key and value projections), so refitting one cannot change the others' inputs and
    one pass measures them all. Each group says whether its layers run once per forward (then
    a pass may stop as soon as they have their inputs). Layers never called come last, alone."""
    calls: dict[str, int] = {}
    first: dict[str, tuple] = {}
    order: list[str] = []
    alive: list[torch.Tensor] = []  # no input's memory is reused for a later one meanwhile

    def hook(name: str) -> Callable:
        def record(_: nn.Module, args: tuple, kwargs: dict) -> None:
            calls[name] = calls.get(name, 0) + 1
            if name not in first:
                x = args[0] if args else kwargs["input"]
                alive.append(x)
                first[name] = (x.data_ptr(), tuple(x.shape), tuple(x.stride()))
                order.append(name)

        return record

    handles = [m.register_forward_pre_hook(hook(n), with_kwargs=True) for n, m in layers.items()]
    try:
        _call(model, sample)
    finally:
        for h in handles:
            h.remove()
    groups: list[list[str]] = []
    for name in order:
        if groups and first[groups[-1][0]] == first[name]:
            groups[-1].append(name)
        else:
            groups.append([name])
    out = [(g, all(calls[n] == 1 for n in g)) for g in groups]
    return out + [([n], False) for n in layers if n not in calls]


def execution_order(model: nn.Module, layers: dict[str, nn.Module], sample: object) -> list[str]:
    """``layers``' names in the order ``model`` first calls them on ``sample`` (layers it never
    calls last, in module order)."""
    return [n for group, _ in refit_groups(model, layers, sample) for n in group]


def _augmented(module: nn.Module, x: torch.Tensor) -> torch.Tensor | None:
    rows = im2col(module, x)
    if rows is None:
        return None
    rows = rows.double()
    if module.bias is None:
        return rows
    return torch.cat([rows, torch.ones(rows.shape[0], 1, dtype=rows.dtype)], dim=1)


Moments = tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]


@torch.no_grad()
def _moments(
    dense: nn.Module,
    pruned: nn.Module,
    names: list[str],
    samples: list[object],
    stop: bool,
) -> dict[str, Moments | None]:
    """{name: (H, G, D, positions)} of layers ``names`` over ``samples``: the second moments
    of the pruned inputs, pruned against dense inputs, and dense inputs (a bias column
    appended when the layer has one); None for a layer whose input cannot be unrolled or that
    never ran. ``stop``: each forward ends once the layers have their inputs."""
    d_mods, p_mods = dict(dense.named_modules()), dict(pruned.named_modules())
    acc: dict[str, list] = {n: [None, None, None, 0] for n in names}
    bad: set[str] = set()
    for sample in samples:
        got: dict[str, list[torch.Tensor]] = {}
        want: dict[str, list[torch.Tensor]] = {}
        with _capture({n: p_mods[n] for n in names}, got, stop):
            _call(pruned, sample)
        with _capture({n: d_mods[n] for n in names}, want, stop):
            _call(dense, sample)
        for name in names:
            a = acc[name]
            for xp, xd in zip(got.get(name, []), want.get(name, []), strict=True):
                ap = _augmented(p_mods[name], xp.cpu())
                ad = _augmented(d_mods[name], xd.cpu())
                if ap is None or ad is None:
                    bad.add(name)
                    break
                for i, (u, v) in enumerate(((ap, ap), (ap, ad), (ad, ad))):
                    a[i] = u.T @ v if a[i] is None else a[i] + u.T @ v
                a[3] += ap.shape[0]
    return {
        n: None if n in bad or acc[n][0] is None else (acc[n][0], acc[n][1], acc[n][2], acc[n][3])
        for n in names
    }


@torch.no_grad()
def _solve(
    module: nn.Module,
    dense_module: nn.Module,
    mask: torch.Tensor,
    moments: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    damp: float,
) -> tuple[float, float]:
    """Refit ``module``'s kept weights (and bias) in place from the moments; returns the
    layer's relative output error on the calibration (before, after)."""
    from .blocks import gemm_view

    h, g, _ = moments
    w = gemm_view(cast(torch.Tensor, module.weight).detach()).double().cpu()
    wd = gemm_view(cast(torch.Tensor, dense_module.weight).detach()).double().cpu()
    keep = gemm_view(mask).cpu()
    n, k = w.shape
    has_bias = module.bias is not None
    if has_bias:
        bias = cast(torch.Tensor, module.bias).detach().double().cpu()
        w_aug = torch.cat([w, bias[:, None]], dim=1)
        wd_aug = torch.cat(
            [wd, cast(torch.Tensor, dense_module.bias).detach().double().cpu()[:, None]], dim=1
        )
        keep = torch.cat([keep, torch.ones(n, 1, dtype=torch.bool)], dim=1)
    else:
        w_aug, wd_aug = w, wd
    target = g @ wd_aug.T  # [K+1, N]: X~_p^T Y_dense
    lam = damp * float(torch.diagonal(h)[:k].mean()) if k else 0.0
    reg = torch.zeros(h.shape[0], dtype=h.dtype)
    reg[:k] = max(lam, 1e-12)
    fitted = torch.zeros_like(w_aug)
    groups: dict[bytes, list[int]] = {}
    for r in range(n):
        groups.setdefault(bytes(keep[r].numpy().tobytes()), []).append(r)
    for rows_list in groups.values():
        rows = torch.tensor(rows_list)
        cols = torch.nonzero(keep[rows[0]]).flatten()
        if cols.numel() == 0:
            continue
        a = h[cols][:, cols] + torch.diag(reg[cols])
        b = target[cols][:, rows]
        sol = torch.linalg.solve(a, b)  # [|S|, |R|]
        fitted[rows[:, None], cols[None, :]] = sol.T
    before = _output_error(w_aug, wd_aug, moments)
    after = _output_error(fitted, wd_aug, moments)
    if not math.isfinite(after) or after > before:
        return before, before  # the ranked weights were better: keep them
    dtype = cast(torch.Tensor, module.weight).dtype
    weight = cast(torch.Tensor, module.weight)
    weight.copy_(fitted[:, :k].reshape(weight.shape).to(dtype))
    if has_bias:
        cast(torch.Tensor, module.bias).copy_(fitted[:, k].to(dtype))
    return before, after


def _output_error(
    w: torch.Tensor, wd: torch.Tensor, moments: tuple[torch.Tensor, torch.Tensor, torch.Tensor]
) -> float:
    """||W~ x~_p - W~_d x~_d||^2 / ||W~_d x~_d||^2 summed over the calibration positions."""
    h, g, d = moments
    ref = (wd @ d @ wd.T).trace()
    err = (w @ h @ w.T).trace() - 2 * (w @ g @ wd.T).trace() + ref
    return float(err / ref) if float(ref) > 0 else 0.0


def input_precision(h: torch.Tensor, k: int, count: int, damp: float) -> torch.Tensor:
    """[K, K]: the inverse of the layer inputs' second moment per position, damped as the
    refit is, with the mean taken out when the layer has a bias (the bias refits the mean).
    Removing column j of an output and refitting the rest costs ``w_j^2 / P_jj`` (OBS)."""
    hf = h[:k, :k]
    if h.shape[0] > k:  # the bias column: the Schur complement, i.e. centred inputs
        hf = hf - torch.outer(h[:k, k], h[:k, k]) / count
    lam = damp * float(torch.diagonal(hf).mean()) if k else 0.0
    return torch.linalg.inv((hf + max(lam, 1e-12) * torch.eye(k, dtype=hf.dtype)) / count)


def obs_block_structure(
    w: torch.Tensor,
    shape: tuple[int, int],
    rate: float,
    row_share: float,
    precision: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Kept rows and columns of every block of GEMM matrix ``w`` [N, K] for a ``rate``x
    reduction, chosen by what they cost the layer's output once the rest is refitted (the
    Optimal Brain Surgeon, greedy): in each block, the column whose removal costs least
    (``sum over the block's rows of w^2 / P_cc``, ``precision`` P = H^-1) goes first, the
    block's other weights and P are updated as if refitted, and again until the block keeps
    its count; then the rows whose remaining weights cost least to remove (``w_S^T (P_SS)^-1
    w_S``) go. Unlike a per-column score, this sees that of two inputs that predict each
    other only one may go. Counts as :func:`.blocks.kept_counts` gives them."""
    from .blocks import _edge_valid, _grid, _keep_top, _to_blocks, kept_counts

    br, bc = shape
    n, k = w.shape
    nbr, nbc = _grid(n, k, br, bc)
    wb = _to_blocks(w.detach().double().cpu(), br, bc)  # [NBR, NBC, br, bc]
    vr, vc = _edge_valid(n, k, br, bc)
    p_full = precision.double().cpu()
    rows_out = torch.zeros(nbr, nbc, br, dtype=torch.bool)
    cols_out = torch.zeros(nbr, nbc, bc, dtype=torch.bool)
    eye = torch.eye(bc, dtype=torch.float64)
    for j in range(nbc):
        idx = torch.arange(j * bc, min((j + 1) * bc, k))
        m = eye.clone()
        m[: len(idx), : len(idx)] = p_full[idx][:, idx]
        m = m.expand(nbr, bc, bc).clone()
        wj = wb[:, j].clone()  # [NBR, br, bc]
        alive = vc[:, j].clone()  # [NBR, bc]
        counts = [
            kept_counts(int(vr[i, j].sum()), int(vc[i, j].sum()), rate, row_share)
            for i in range(nbr)
        ]
        kr = torch.tensor([c[0] for c in counts])
        kc = torch.tensor([c[1] for c in counts])
        ar = torch.arange(nbr)
        while True:
            active = alive.sum(-1) > kc
            if not bool(active.any()):
                break
            d = torch.diagonal(m, dim1=-2, dim2=-1)
            score = (wj**2).sum(1) / d
            score = score.masked_fill(~alive, math.inf)
            c = score.argmin(-1)  # [NBR]
            mc = m[ar, :, c]  # [NBR, bc]: column c of P (= row c, symmetric)
            dc = m[ar, c, c][:, None]
            wc = wj[ar, :, c]  # [NBR, br]
            upd = active[:, None, None]
            wj = torch.where(upd, wj - (wc / dc)[:, :, None] * mc[:, None, :], wj)
            m = torch.where(upd, m - mc[:, :, None] * mc[:, None, :] / dc[:, :, None], m)
            alive[ar[active], c[active]] = False
        cols_out[:, j] = alive
        # rows: the cost of removing each row's remaining weights in this block
        keep = alive[:, None, :] & alive[:, :, None]
        sub = torch.where(keep, m, eye.expand_as(m))
        wk = wj * alive[:, None, :]
        cost = (wk @ torch.linalg.inv(sub) * wk).sum(-1)  # [NBR, br]
        cost = cost.masked_fill(~vr[:, j], -math.inf)
        rows_out[:, j] = _keep_top(cost, kr) & vr[:, j]
    return rows_out, cols_out


def refit_layers(
    dense: nn.Module,
    pruned: nn.Module,
    layers: dict[str, nn.Module],
    samples: Iterable[object],
    *,
    damp: float = 0.01,
    project: Callable[[nn.Module], None],
    choose: Callable[[str, nn.Module, torch.Tensor], None] | None = None,
) -> dict[str, dict]:
    """Refit every layer of ``layers`` (modules of ``pruned``, already structured) in the
    order ``pruned`` runs them; ``dense`` is the unpruned model with the same module names.
    ``project`` re-applies a layer's mask after its refit. ``choose(name, module,
    precision)``, when given, (re)chooses a layer's structure just before its refit, from the
    dense weights and :func:`input_precision` of the inputs the layer now sees. Returns
    {name: {"positions", "error_before", "error_after"} or {"skipped": why}}."""
    from .blocks import block_mask, gemm_view

    samples = list(samples)
    report: dict[str, dict] = {}
    was = (dense.training, pruned.training)
    dense.eval()
    pruned.eval()
    dense_mods = dict(dense.named_modules())
    try:
        groups = refit_groups(pruned, layers, samples[0])
        bar = tqdm(total=len(layers), desc="block pruning: refit", disable=None)
        for names, stop in groups:
            for name, moments in _moments(dense, pruned, names, samples, stop).items():
                bar.update()
                m = layers[name]
                k = gemm_view(cast(torch.Tensor, m.weight)).shape[1]
                if moments is None:
                    report[name] = {
                        "skipped": "its input cannot be unrolled (padding mode) or it never ran"
                    }
                    continue
                h, g, d, count = moments
                if count <= k + 1:
                    report[name] = {
                        "skipped": f"{count} calibration positions for {k} weights per output"
                    }
                    continue
                if choose is not None:
                    choose(name, m, input_precision(h, k, count, damp))
                before, after = _solve(m, dense_mods[name], block_mask(m), (h, g, d), damp)
                project(m)
                report[name] = {"positions": count, "error_before": before, "error_after": after}
        bar.close()
    finally:
        dense.train(was[0])
        pruned.train(was[1])
    return report
