"""Pattern-pruned models through the cpu pipeline: raised to xgen_sparse, FKW-compacted,
generated kernels inside IREE dispatches -- and numerically the pruned PyTorch model.

Tolerances: fp32; the kernels sum the kept taps in FKW order (per pattern run) rather than
PyTorch's order, so results differ by float reassociation only: atol/rtol 1e-4 on unit-scale
activations.
"""

from __future__ import annotations

import re

import pytest
import torch
from conftest import check_close

import xgen_mlir
from xgen_mlir import compress
from xgen_mlir.models import vision


def _kernel_count(ir_dir) -> int:
    """Pattern-conv kernels declared after xgen-lower-fkw-kernels (not the other passes' C
    kernels, e.g. a classifier head's)."""
    lowered = next(p for p in sorted(ir_dir.iterdir()) if "lower-fkw-kernels" in p.name)
    return len(re.findall(r"func\.func private @xgen_fkw_kernel_\d+\(", lowered.read_text()))


class Mixed(torch.nn.Module):
    """3x3 stride 1 and 2, a 5x5, a bias-free conv, ReLU in between; 32..64 channels."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.b = torch.nn.Conv2d(32, 32, 3, stride=2, padding=1, bias=False)
        self.c = torch.nn.Conv2d(32, 48, 5, padding=2)
        self.d = torch.nn.Conv2d(48, 32, 3, stride=2, padding=0)

    def forward(self, x):
        x = torch.relu(self.a(x))
        x = torch.relu(self.b(x))
        return self.d(torch.relu(self.c(x)))


@pytest.mark.parametrize("vector_bits", [256, 512])
def test_pruned_convnet_uses_pattern_kernels_and_matches(tmp_path, vector_bits):
    """Either vector width on any x86 host (GCC splits a wider vector): with AVX-512's 16
    lanes a group of 16 filters is one vector; with AVX2's 8 it is two, so the stride-2 convs'
    filter-vectorised kernels hold two accumulators per pixel and the pixel-vectorised ones
    run each group as two blocks of 8 filters (AVX2's 16 registers)."""
    torch.manual_seed(0)
    x = torch.randn(1, 16, 23, 23)  # odd sizes: padded columns and phase planes must line up
    model = compress.prune(Mixed().eval(), (x,), target="cpu", connectivity=0.5)
    cache = tmp_path / "cache"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XGEN_CACHE_DIR", str(cache))
        module = xgen_mlir.compile(
            model,
            (x,),
            dump_ir=tmp_path / "ir",
            target_options={"vector_bits": str(vector_bits)},
        )
    check_close(module(x).numpy(), model(x).detach().numpy(), atol=1e-4, rtol=1e-4, what="mixed")
    assert _kernel_count(tmp_path / "ir") == 4
    sources = [p.read_text() for p in (cache / "kernels").glob("*.c")]
    heads = [src.splitlines()[0] for src in sources if "xgen_fkw_kernel" in src.splitlines()[0]]
    assert len(heads) == 4, heads
    # 16 lanes: every conv here is narrow (fewer than 32 output columns) or stride 2, so
    # filter-vectorised; 8 lanes: the two stride-2 ones (two vectors per pixel pay only there)
    assert sum("filter-vectorised" in h for h in heads) == (2 if vector_bits == 256 else 4), heads
    if vector_bits == 256:
        assert all(
            "vf acc[8][PX]" in src for src in sources if "group_32(" in src or "group_16(" in src
        )


class ConvBnRelu(torch.nn.Module):
    """conv -> eval batch norm (non-trivial statistics) -> relu, twice (stride 1 and 2)."""

    def __init__(self) -> None:
        super().__init__()
        self.c1, self.n1 = (
            torch.nn.Conv2d(16, 32, 3, padding=1, bias=False),
            torch.nn.BatchNorm2d(32),
        )
        self.c2, self.n2 = torch.nn.Conv2d(32, 32, 3, 2, padding=1), torch.nn.BatchNorm2d(32)
        for n in (self.n1, self.n2):
            n.running_mean.uniform_(-1, 1)
            n.running_var.uniform_(0.5, 2.0)
            n.weight.data.uniform_(-1.5, 1.5)  # negative scales flip which outputs ReLU keeps
            n.bias.data.uniform_(-0.5, 0.5)

    def forward(self, x):
        return torch.relu(self.n2(self.c2(torch.relu(self.n1(self.c1(x))))))


def test_conv_bn_relu_runs_as_one_kernel_per_conv(tmp_path):
    """Epilogue fusion: the norm folds into the pattern weights and bias, the ReLU runs in the
    kernel, so no elementwise op is left after the kernels -- and the numbers still match."""
    torch.manual_seed(0)
    x = torch.randn(1, 16, 21, 21)
    model = compress.prune(ConvBnRelu().eval(), (x,), target="cpu", connectivity=0.5)
    module = xgen_mlir.compile(model, (x,), dump_ir=tmp_path)
    with torch.no_grad():
        want = model(x).numpy()
    check_close(module(x).numpy(), want, atol=1e-4, rtol=1e-4, what="conv-bn-relu")
    assert _kernel_count(tmp_path) == 2
    lowered = next(p for p in sorted(tmp_path.iterdir()) if "lower-fkw-kernels" in p.name)
    main = lowered.read_text().split("func.func @main", 1)[1]
    assert "linalg.generic" not in main, main


def test_dense_model_gets_no_kernels(tmp_path):
    torch.manual_seed(0)
    x = torch.randn(1, 16, 12, 12)
    model = Mixed().eval()
    module = xgen_mlir.compile(model, (x,), dump_ir=tmp_path)
    check_close(module(x).numpy(), model(x).detach().numpy(), atol=1e-4, rtol=1e-4, what="dense")
    assert _kernel_count(tmp_path) == 0


@pytest.mark.slow
def test_pruned_resnet18_matches_pruned_pytorch(tmp_path):
    x = vision.random_input("resnet18")
    model = compress.prune(vision.resnet18(), (x,), target="cpu", connectivity=0.5)
    module = xgen_mlir.compile(model, (x,), dump_ir=tmp_path)
    with torch.no_grad():
        want = model(x)
    got = module(x)
    check_close(got.numpy(), want.numpy(), atol=2e-4, rtol=1e-4, what="pruned resnet18")
    assert torch.equal(got.topk(5).indices, want.topk(5).indices)
    # every 3x3 conv (16) and the 7x7 stem were pruned; all of them run pattern kernels
    assert _kernel_count(tmp_path) == 17


def test_pruned_convnet_pattern_kernels_on_arm64_under_qemu(tmp_path):
    """The same generated C, cross-compiled for NEON, linked into aarch64 dispatches."""
    import shutil

    from targets_util import need, need_qemu, run_bundle_npy

    need_qemu("aarch64")
    need(
        shutil.which("aarch64-linux-gnu-gcc") is not None,
        "the aarch64 cross compiler (apt-get install gcc-aarch64-linux-gnu)",
    )
    torch.manual_seed(0)
    x = torch.randn(1, 16, 13, 13)
    model = compress.prune(Mixed().eval(), (x,), target="cpu", connectivity=0.5)
    module = xgen_mlir.compile(model, (x,), target="arm64", dump_ir=tmp_path / "ir")
    assert _kernel_count(tmp_path / "ir") == 4
    got = run_bundle_npy(module.save_bundle(tmp_path / "b"), tmp_path, x.numpy())
    check_close(got, model(x).detach().numpy(), atol=1e-4, rtol=1e-4, what="arm64 kernels")
