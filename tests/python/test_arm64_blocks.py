"""Block-pruned models on the arm64 target: the cpu target's block-sparse kernels (the
row-and-column kernel and the whole-column kernel, portable vector C) cross-compiled for
NEON's 4-float vectors, run under qemu against the pruned PyTorch model."""

from __future__ import annotations

import warnings

import numpy as np
import torch
from targets_util import need_aarch64_runtime, run_bundle, run_bundle_npy
from torch import nn

import xgen_mlir
from xgen_mlir import compress, errors


def _rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-12))


def _arm64(model: nn.Module, x: torch.Tensor, **options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = xgen_mlir.compile(model, (x,), target="arm64", target_options=options or None)
    fallbacks = [str(w.message) for w in caught if issubclass(w.category, errors.FallbackWarning)]
    assert not fallbacks, fallbacks
    return compiled, compiled.report.rewrites


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(96, 256), nn.GELU(), nn.Linear(256, 80)).eval()


def test_block_kernels_on_neon_under_qemu(tmp_path) -> None:
    """Blocks of NEON's tile (4 x 16, rows and columns pruned) and whole-column blocks
    (8 x 16): each kernel form, a token count that is not a whole tile, GELU fused, and a NaN
    in one row giving NaN in that row only (as the dense product does)."""
    need_aarch64_runtime()
    model, x = _mlp(), torch.randn(37, 96)
    x[5, 11] = float("nan")
    for block, row_share, whole_columns in [((4, 16), 0.5, 0), ((8, 16), 0.0, 2)]:
        pruned = compress.prune(
            model, (x.nan_to_num(),), scheme="block", rate=4.0, block_shape=block,
            row_share=row_share,
        )  # fmt: skip
        compiled, rw = _arm64(pruned, x)
        kernels = rw["xgen-lower-bcsr-kernels"]
        assert kernels["block-sparse kernels"] == 2, kernels
        assert kernels["of them with their activations"] == 1, kernels
        assert kernels.get("of them on whole columns", 0) == whole_columns, kernels
        got = run_bundle_npy(compiled.save_bundle(tmp_path / f"b{block[0]}"), tmp_path, x.numpy())
        with torch.no_grad():
            want = pruned(x).numpy()
        assert np.isnan(got[5]).all() and not np.isnan(np.delete(got, 5, 0)).any()
        assert _rel(np.delete(got, 5, 0), np.delete(want, 5, 0)) < 1e-5


def test_block_pruned_1x1_convs_on_neon_under_qemu(tmp_path) -> None:
    """1x1 convs (a conv net's GEMM view) block-pruned and compiled to the NEON kernels."""
    need_aarch64_runtime()
    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Conv2d(16, 64, 1), nn.ReLU(), nn.Conv2d(64, 48, 1), nn.ReLU(), nn.Conv2d(48, 32, 1)
    ).eval()
    x = torch.randn(1, 16, 7, 9)
    pruned = compress.prune(net, (x,), scheme="block", rate=4.0, block_shape=(4, 16))
    compiled, rw = _arm64(pruned, x)
    assert rw["xgen-lower-bcsr-kernels"]["block-sparse kernels"] == 3
    got = run_bundle_npy(compiled.save_bundle(tmp_path / "b"), tmp_path, x.numpy())
    assert _rel(got, pruned(x).detach().numpy()) < 1e-5


def test_block_kernels_option_on_arm64() -> None:
    """block_kernels=false compiles every layer dense; a layer whose compact blocks keep
    more than block_max_density stays dense, with its reason."""
    model, x = _mlp(), torch.randn(16, 96)
    pruned = compress.prune(model, (x,), scheme="block", rate=4.0, block_shape=(4, 16))
    _, rw = _arm64(pruned, x, block_kernels="false")
    assert "xgen-lower-bcsr-kernels" not in rw or not rw["xgen-lower-bcsr-kernels"]
    _, rw = _arm64(pruned, x, block_max_density="0.1")
    reasons = rw["xgen-raise-block-linear"]
    assert sum(v for k, v in reasons.items() if k.startswith("stays dense: dense enough")) == 2


def test_block_pruned_tiny_bert_under_qemu(tmp_path) -> None:
    """A 2-layer BERT (hidden size 32) block-pruned 4x in whole-column blocks of 8 x 16: its
    12 Linear layers in the NEON kernels, the model within 1e-4 of the pruned PyTorch model
    under qemu."""
    from xgen_mlir.models.transformers_zoo import bert_tiny

    need_aarch64_runtime()
    model, example = bert_tiny()
    pruned = compress.prune(
        model, example, scheme="block", rate=4.0, block_shape=(8, 16), row_share=0.0,
        layers=lambda name, m: isinstance(m, nn.Linear) and ".encoder.layer." in f".{name}",
    )  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = xgen_mlir.compile(pruned, example, target="arm64")
    assert not [w for w in caught if issubclass(w.category, errors.FallbackWarning)]
    kernels = compiled.report.rewrites["xgen-lower-bcsr-kernels"]
    assert kernels["block-sparse kernels"] == kernels["of them on whole columns"] == 12, kernels
    args = []
    for i, e in enumerate(example):
        np.save(tmp_path / f"in{i}.npy", e.numpy())
        args.append(f"--input=@{tmp_path / f'in{i}.npy'}")
    run_bundle(compiled.save_bundle(tmp_path / "b"), *args, f"--output=@{tmp_path / 'out.npy'}")
    with torch.no_grad():
        out = pruned(*example)
    want = (out[0] if isinstance(out, tuple) else out).numpy()
    assert _rel(np.load(tmp_path / "out.npy"), want) < 1e-4
