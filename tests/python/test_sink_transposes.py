"""xgen-cancel-reshapes' sinking rule end to end: a PP-OCR-style FPN level (1x1 convs in the
GEMM kernel, which computes NHWC, a residual squeeze-excite scale and the upsampled coarser
level added in NCHW, then a 3x3 conv) against PyTorch, with the transposes between the
kernels gone (lit: tests/lit/passes/cancel-reshapes-sink.mlir)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from conftest import compile_and_check


class FPNLevel(torch.nn.Module):
    """``out = conv3x3(rse(in1x1(fine)) + upsample(rse(in1x1(coarse))))``, where ``rse(x) = x
    + x * hardsigmoid(fc(pool(x)))`` is PP-OCRv4's residual squeeze-excite."""

    def __init__(self, c_in: int = 16, c: int = 32) -> None:
        super().__init__()
        self.fine = torch.nn.Conv2d(c_in, c, 1)
        self.coarse = torch.nn.Conv2d(c_in, c, 1)
        self.fc1 = torch.nn.Conv2d(c, c // 4, 1)
        self.fc2 = torch.nn.Conv2d(c // 4, c, 1)
        self.out = torch.nn.Conv2d(c, 8, 3, padding=1)

    def rse(self, x: torch.Tensor) -> torch.Tensor:
        s = self.fc2(torch.relu(self.fc1(x.mean((2, 3), keepdim=True))))
        return x + x * F.hardsigmoid(s)

    def forward(self, fine: torch.Tensor, coarse: torch.Tensor) -> torch.Tensor:
        top = self.rse(self.coarse(coarse))
        n, c, h, w = top.shape  # nearest 2x upsampling in the form the ONNX frontend gives
        up = top[:, :, :, None, :, None].expand(n, c, h, 2, w, 2).reshape(n, c, 2 * h, 2 * w)
        return self.out(self.rse(self.fine(fine)) + up)


def _compile_fpn_level(seed: int, opts: dict[str, str]) -> dict[str, int]:
    """Compile ``FPNLevel`` with ``opts``, its convs left NCHW (``nhwc_convs=depthwise``: the
    kernels' NHWC among IREE's NCHW, the case the rule is for), check it against PyTorch,
    return the pass's counts."""
    opts = {"nhwc_convs": "depthwise", **opts}
    torch.manual_seed(seed)
    model = FPNLevel().eval()
    fine, coarse = torch.randn(1, 16, 16, 16), torch.randn(1, 16, 8, 8)
    m = compile_and_check(model, (fine, coarse), atol=1e-5, rtol=1e-4, target_options=opts)
    return m.report.rewrites.get("xgen-cancel-reshapes", {})


def test_fpn_level_runs_nhwc_between_kernels_and_matches_pytorch():
    counts = _compile_fpn_level(0, {"gemm_kernels": "true", "offload": "none", "winograd": "false"})
    assert counts.get("sunk-transpose", 0) >= 4, counts
    assert counts.get("collapse-of-transpose", 0) >= 1, counts


def test_without_kernels_nothing_is_sunk():
    """IREE's own code for every conv leaves no transposes between them to move."""
    counts = _compile_fpn_level(
        1, {"gemm_kernels": "false", "offload": "none", "winograd": "false"}
    )
    assert counts.get("sunk-transpose", 0) == 0, counts
