"""Every generated C kernel at batch 1, 2 and 4 (issue 31, item 2): pattern-pruned convs,
1x1 pointwise convs and matrix-vector heads, fused inverted-residual blocks. Each test checks
that the kernel fired at that batch (the pass's report counts, not a silent dense fallback)
and that the results are PyTorch's; and where a kernel cannot take the batch (a dynamic one),
that the pass says so and warns once.

Tolerances: fp32; the kernels sum in another order than PyTorch (float reassociation only).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from conftest import check_close
from test_nan_propagation import check_same

import xgen_mlir
from xgen_mlir import compress
from xgen_mlir.errors import FallbackWarning

BATCHES = (1, 2, 4)


def _rewrites(module, name: str) -> dict[str, int]:
    return module.report.rewrites.get(name, {})


# ---------------------------------------------------------------------------------------------
# pattern-pruned convs (xgen-lower-fkw-kernels): the image is the dispatch's workgroup z


class ResBlockNet(torch.nn.Module):
    """A stem (3x3 stride 1, the "pixels" kernel), a ResNet basic block with a stride-2
    downsample (3x3 stride 2 + 1x1 shortcut: the "filters" kernel) and a 5x5 on the narrow
    output; batch norm and ReLU as ResNet has them."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(16, 32, 3, padding=1, bias=False)
        self.bn0 = torch.nn.BatchNorm2d(32)
        self.c1 = torch.nn.Conv2d(32, 32, 3, stride=2, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(32)
        self.c2 = torch.nn.Conv2d(32, 32, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(32)
        self.down = torch.nn.Conv2d(32, 32, 1, stride=2, bias=False)
        self.c3 = torch.nn.Conv2d(32, 32, 5, padding=2)

    def forward(self, x):
        x = torch.relu(self.bn0(self.stem(x)))
        y = self.bn2(self.c2(torch.relu(self.bn1(self.c1(x)))))
        x = torch.relu(y + self.down(x))
        return self.c3(x)


@pytest.fixture(scope="module")
def pruned_block():
    torch.manual_seed(0)
    model = ResBlockNet().eval()
    with torch.no_grad():  # batch norm with statistics that are not the identity
        for bn in (model.bn0, model.bn1, model.bn2):
            bn.running_mean.uniform_(-0.2, 0.2)
            bn.running_var.uniform_(0.5, 1.5)
            bn.weight.uniform_(0.5, 1.5)
    x = torch.randn(1, 16, 21, 21)  # odd sizes: padded columns and row phases must line up
    return compress.prune(model, (x,), target="cpu", connectivity=0.5)


@pytest.mark.parametrize("batch", BATCHES)
def test_pattern_kernels_take_the_batch(pruned_block, batch):
    torch.manual_seed(batch)
    x = torch.randn(batch, 16, 21, 21)
    module = xgen_mlir.compile(pruned_block, (x,))
    done = _rewrites(module, "xgen-lower-fkw-kernels")
    assert done.get("pattern kernels") == 4, done
    assert not any(k.startswith("lowered dense") for k in done), done
    if batch > 1:
        assert done.get(f"of them for a batch of {batch}") == 4, done
    with torch.no_grad():
        want = pruned_block(x).numpy()
    check_close(module(x).numpy(), want, atol=1e-4, rtol=1e-4, what=f"batch {batch}")


def test_pattern_kernels_nan_inf_per_image(pruned_block):
    """NaN / Inf in one image of a batch of 2 give NaN exactly where PyTorch's dense conv of
    the pruned weights does, in that image only; the other image stays finite."""
    torch.manual_seed(3)
    x = torch.randn(2, 16, 21, 21)
    module = xgen_mlir.compile(pruned_block, (x,))
    assert _rewrites(module, "xgen-lower-fkw-kernels").get("of them for a batch of 2") == 4
    for points in (
        [((1, 3, 10, 10), float("nan"))],
        [((0, 0, 0, 0), float("inf")), ((1, 15, 20, 7), float("nan"))],
        [((0, 5, 4, 17), float("-inf"))],
    ):
        xp = x.clone()
        for idx, v in points:
            xp[idx] = v
        with torch.no_grad():
            want = pruned_block(xp).numpy()
        got = module(xp).numpy()
        check_same(got, want, f"batch 2, {points}")
        hit = {idx[0] for idx, _ in points}
        for img in {0, 1} - hit:
            assert np.isfinite(got[img]).all(), f"image {img} has no NaN/Inf input"


class Dense3x3(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c = torch.nn.Conv2d(16, 32, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.c(x))


def test_dynamic_batch_pattern_convs_stay_dense_with_one_warning():
    """A dynamic batch: the pattern kernels are generated for a static one, so the pruned conv
    runs dense, the report says why, and one FallbackWarning says so."""
    torch.manual_seed(0)
    x = torch.randn(2, 16, 12, 12)
    model = compress.prune(Dense3x3().eval(), (x,), target="cpu", connectivity=0.5)
    batch = torch.export.Dim("batch", min=1, max=16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = xgen_mlir.compile(model, (x,), dynamic_shapes=({0: batch},))
    done = _rewrites(module, "xgen-raise-pattern-conv")
    assert any("dynamic" in k for k in done), module.report.rewrites
    said = [
        w for w in caught if issubclass(w.category, FallbackWarning) and "dynamic" in str(w.message)
    ]
    assert len(said) == 1, [str(w.message) for w in caught]
    for n in (1, 3):
        xn = torch.randn(n, 16, 12, 12)
        with torch.no_grad():
            want = model(xn).numpy()
        check_close(module(xn).numpy(), want, atol=1e-4, rtol=1e-4, what=f"dynamic batch {n}")


# ---------------------------------------------------------------------------------------------
# pointwise kernels (xgen-pointwise-kernels): a batch's images are more rows of the product


class PointwiseNet(torch.nn.Module):
    """MobileNetV2's 7x7 tail shape at 5x5 (25, 50 or 100 rows: padded by IREE's 16-row tiles
    at every batch here): 1x1 stem, expand + ReLU6, depthwise, project, residual add; then
    a global pool and a linear head (a matrix-vector product for fewer than 4 images)."""

    def __init__(self, c: int = 32, ce: int = 64) -> None:
        super().__init__()
        nn = torch.nn
        self.stem = nn.Conv2d(c, c, 1)
        self.expand = nn.Sequential(nn.Conv2d(c, ce, 1), nn.ReLU6())
        self.dw = nn.Sequential(nn.Conv2d(ce, ce, 3, 1, 1, groups=ce), nn.ReLU6())
        self.project = nn.Conv2d(ce, c, 1)
        self.head = nn.Linear(c, 10)

    def forward(self, x):
        x = self.stem(x)
        x = x + self.project(self.dw(self.expand(x)))
        return self.head(x.mean((2, 3)))


@pytest.mark.parametrize("batch", BATCHES)
def test_pointwise_kernels_take_the_batch(batch):
    torch.manual_seed(0)
    model = PointwiseNet().eval()
    x = torch.randn(batch, 32, 5, 5)
    # planned for 16-row data tiles (AVX-512), which pad every batch's rows (25, 50, 100) by
    # 10% or more; IREE's 8-row AVX2 tiles would pad 100 rows by 4% only (no kernel)
    module = xgen_mlir.compile(model, (x,), target_options={"vector_bits": "512"})
    done = _rewrites(module, "xgen-pointwise-kernels")
    assert done.get("convs replaced") == 3, done
    assert done.get("of them with a residual add") == 1, done
    # the head's rows are the batch: a matrix-vector product below 4, IREE's matmul from 4
    assert done.get("matrix-vector products replaced") == (1 if batch < 4 else None), done
    with torch.no_grad():
        want = model(x).numpy()
    check_close(module(x).numpy(), want, atol=1e-4, rtol=1e-4, what=f"batch {batch}")


# ---------------------------------------------------------------------------------------------
# inverted-residual blocks (xgen-fuse-inverted-residuals): workgroup y is the image


def _inverted_residual(cin: int, ce: int, cout: int, stride: int) -> torch.nn.Sequential:
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(cin, ce, 1, bias=False),
        nn.BatchNorm2d(ce),
        nn.ReLU6(),
        nn.Conv2d(ce, ce, 3, stride, 1, groups=ce, bias=False),
        nn.BatchNorm2d(ce),
        nn.ReLU6(),
        nn.Conv2d(ce, cout, 1, bias=False),
        nn.BatchNorm2d(cout),
    )


class TwoBlocks(torch.nn.Module):
    """Two MobileNetV2 blocks whose expanded tensor (32x32x288 floats, 1.2 MB) is above the
    default fusion threshold at batch 1: stride 1 with its residual add, then stride 2."""

    def __init__(self) -> None:
        super().__init__()
        self.a = _inverted_residual(48, 288, 48, 1)
        self.b = _inverted_residual(48, 288, 64, 2)

    def forward(self, x):
        return self.b(x + self.a(x))


@pytest.fixture(scope="module")
def two_blocks():
    torch.manual_seed(0)
    model = TwoBlocks().eval()
    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.5, 0.5)
                mod.running_var.uniform_(0.5, 2.0)
    return model


@pytest.mark.parametrize("batch", BATCHES)
def test_inverted_residual_kernels_take_the_batch(two_blocks, batch):
    torch.manual_seed(batch)
    x = torch.randn(batch, 48, 32, 32)
    module = xgen_mlir.compile(two_blocks, (x,))
    done = _rewrites(module, "xgen-fuse-inverted-residuals")
    assert done.get("blocks fused") == 2, done
    assert done.get("of them with their residual add") == 1, done
    if batch > 1:
        assert done.get(f"of them for a batch of {batch}") == 2, done
    with torch.no_grad():
        want = two_blocks(x).numpy()
    check_close(module(x).numpy(), want, atol=1e-4, rtol=1e-4, what=f"batch {batch}")
