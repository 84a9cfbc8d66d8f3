"""NaN and Inf come out where PyTorch puts them (issue 33, items 5 and 6).

(a) Pattern-pruned convs run as generated C kernels that skip the pruned (zero) weights; the
dense convolution multiplies them too, and ``0 * NaN`` and ``0 * Inf`` are NaN. The kernels
check their inputs for NaN/Inf and mark the outputs whose skipped taps read one, so the result
is the dense one. (b) clamp / relu6 / hardtanh / maximum / minimum: torch-mlir lowers them to
``cmpf`` + ``select``, which picks a bound (or the other operand) for NaN; PyTorch propagates
NaN, and so does the IR after ``xgen-nan-minmax`` (also inside the generated C kernels that
take such activations in).

Comparison: NaN positions equal, Inf positions and signs equal, the finite values close.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import xgen_mlir
from xgen_mlir import compress

NAN, INF = float("nan"), float("inf")


def check_same(got: np.ndarray, want: np.ndarray, what: str, atol: float = 1e-4) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, what
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{what}: NaN positions")
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want), err_msg=f"{what}: +Inf")
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want), err_msg=f"{what}: -Inf")
    fin = np.isfinite(want)
    np.testing.assert_allclose(got[fin], want[fin], atol=atol, rtol=1e-4, err_msg=what)


def _poison(x: torch.Tensor, points: list[tuple[tuple[int, ...], float]]) -> torch.Tensor:
    x = x.clone()
    for idx, v in points:
        x[idx] = v
    return x


# ---------------------------------------------------------------------------------------------
# (a) pattern kernels


class Convs(torch.nn.Module):
    """A wide stride-1 3x3 (the "pixels" kernel), a stride-2 3x3 and a 5x5 on a narrow image
    (the "filters" kernel), a bias-free one, ReLU after the first two."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.b = torch.nn.Conv2d(32, 32, 3, stride=2, padding=1, bias=False)
        self.c = torch.nn.Conv2d(32, 32, 5, padding=2)

    def forward(self, x):
        return self.c(torch.relu(self.b(torch.relu(self.a(x)))))


def _kernels(ir_dir) -> int:
    lowered = next(p for p in sorted(ir_dir.iterdir()) if "lower-fkw-kernels" in p.name)
    return len(re.findall(r"func\.func private @xgen_fkw_kernel_\d+\(", lowered.read_text()))


@pytest.fixture(scope="module")
def pruned_convs():
    torch.manual_seed(0)
    x = torch.randn(1, 16, 36, 36)
    model = compress.prune(Convs().eval(), (x,), target="cpu", connectivity=0.5)
    return model, x


def test_pattern_kernels_nan_inf_as_dense(pruned_convs, tmp_path):
    model, x = pruned_convs
    module = xgen_mlir.compile(model, (x,), dump_ir=tmp_path)
    assert _kernels(tmp_path) == 3
    cases = {
        "nan": [((0, 3, 10, 11), NAN)],
        "+inf": [((0, 0, 0, 0), INF)],
        "-inf and nan": [((0, 5, 35, 20), -INF), ((0, 15, 17, 2), NAN)],
        "clean": [],
    }
    for what, points in cases.items():
        xp = _poison(x, points)
        with torch.no_grad():
            want = model(xp).numpy()
        got = module(xp).numpy()
        check_same(got, want, f"pattern kernels, {what}")
        if points:  # the case is not vacuous: the dense conv spreads NaN over many outputs
            assert np.isnan(want).sum() > 10, what


def test_pattern_kernels_nan_checks_off_is_opt_in(pruned_convs):
    """``pattern_nan_checks=false`` keeps the old behaviour (no NaN from pruned taps)."""
    model, x = pruned_convs
    module = xgen_mlir.compile(model, (x,), target_options={"pattern_nan_checks": "false"})
    xp = _poison(x, [((0, 3, 10, 11), NAN)])
    with torch.no_grad():
        want = model(xp).numpy()
    got = module(xp).numpy()
    assert np.isnan(got).sum() < np.isnan(want).sum()
    check_same(module(x).numpy(), model(x).detach().numpy(), "finite input, checks off")


# ---------------------------------------------------------------------------------------------
# (b) clamp / relu6 / hardtanh / maximum / minimum


class MinMax(torch.nn.Module):
    def forward(self, x, y):
        f = torch.nn.functional
        return (
            torch.clamp(x, -1.0, 2.0),
            f.relu6(x),
            f.hardtanh(x, -0.5, 0.5),
            torch.maximum(x, y),
            torch.minimum(x, y),
            torch.clamp(x, min=0.0),
            torch.clamp(x, max=0.5),
            torch.relu(x),
        )


NAMES = ["clamp", "relu6", "hardtanh", "maximum", "minimum", "clamp_min0", "clamp_max", "relu"]


def test_min_max_ops_propagate_nan_like_pytorch():
    torch.manual_seed(0)
    x, y = torch.randn(2, 33) * 4, torch.randn(2, 33) * 4
    x[0, :6] = torch.tensor([NAN, INF, -INF, NAN, 0.0, -0.0])
    y[0, :6] = torch.tensor([1.0, -3.0, NAN, NAN, -0.0, 0.0])
    y[1, 7], y[1, 9] = INF, -INF
    model = MinMax().eval()
    module = xgen_mlir.compile(model, (x, y))
    with torch.no_grad():
        want = model(x, y)
    got = module(x, y)
    for name, g, w in zip(NAMES, got, want, strict=True):
        check_same(g.numpy(), w.numpy(), name)
        assert np.isnan(w.numpy()).any(), name  # every op sees a NaN
    rewrites = module.report.rewrites["xgen-nan-minmax"]
    assert rewrites["maximumf"] >= 4 and rewrites["minimumf"] >= 3, rewrites


class PointwiseClamp(torch.nn.Module):
    """1x1 convs over 7x7 pixels (generated pointwise kernels) with hardtanh, relu6 and clamp
    after them. (A depthwise conv makes the cpu pipeline go NHWC, where the pointwise kernels
    apply.)"""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Conv2d(32, 48, 1)
        self.dw = torch.nn.Conv2d(48, 48, 3, padding=1, groups=48)
        self.b = torch.nn.Conv2d(48, 32, 1)
        self.c = torch.nn.Conv2d(32, 64, 1)

    def forward(self, x):
        f = torch.nn.functional
        x = self.dw(f.hardtanh(self.a(x), -1.0, 2.0))
        x = f.relu6(self.b(x))
        return torch.clamp(self.c(x), -0.25, 0.5)


def test_pointwise_kernel_activations_keep_nan():
    torch.manual_seed(0)
    model = PointwiseClamp().eval()
    x = torch.randn(1, 32, 7, 7)
    module = xgen_mlir.compile(model, (x,))
    done = module.report.rewrites["xgen-pointwise-kernels"]
    # a's hardtanh and b's relu6 run in the kernels (c's clamp is after the layout transpose)
    assert done["convs replaced"] == 3 and done["of them with their activations"] == 2, done
    xp = _poison(x, [((0, 3, 2, 4), NAN), ((0, 0, 0, 0), INF), ((0, 9, 6, 6), -INF)])
    with torch.no_grad():
        want = model(xp).numpy()
    check_same(module(xp).numpy(), want, "pointwise kernels")
    assert np.isnan(want).sum() >= 64


class Block(torch.nn.Module):
    """MobileNetV2's inverted residual (expand, depthwise, project; ReLU6 after the first two),
    fused into one generated kernel."""

    def __init__(self) -> None:
        super().__init__()
        n = torch.nn
        self.body = n.Sequential(
            n.Conv2d(16, 64, 1, bias=False),
            n.BatchNorm2d(64),
            n.ReLU6(),
            n.Conv2d(64, 64, 3, 1, 1, groups=64, bias=False),
            n.BatchNorm2d(64),
            n.ReLU6(),
            n.Conv2d(64, 16, 1, bias=False),
            n.BatchNorm2d(16),
        )

    def forward(self, x):
        return x + self.body(x)


def test_inverted_residual_kernel_relu6_keeps_nan():
    torch.manual_seed(0)
    model = Block().eval()
    x = torch.randn(1, 16, 12, 12)
    module = xgen_mlir.compile(model, (x,), target_options={"inverted_residual_min_bytes": "0"})
    assert module.report.rewrites["xgen-fuse-inverted-residuals"].get("blocks fused") == 1
    xp = _poison(x, [((0, 3, 5, 7), NAN), ((0, 0, 0, 0), INF), ((0, 8, 11, 3), -INF)])
    with torch.no_grad():
        want = model(xp).numpy()
    check_same(module(xp).numpy(), want, "inverted-residual kernel")
    assert np.isnan(want).sum() >= 9 * 16
