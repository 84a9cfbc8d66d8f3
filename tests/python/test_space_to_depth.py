"""xgen-space-to-depth end to end: YOLOv5/YOLOX's Focus stem (a concat of the image's 2x2
phases) against PyTorch and ONNX Runtime, where the pass rewrites and where it must leave
the concat (lit: tests/lit/passes/space-to-depth.mlir)."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
import torch
from conftest import check_close

import xgen_mlir

REWRITE = "tensor.concat of strided slices as a transpose"


class Focus(torch.nn.Module):
    """The phases in ``order`` (row offset, column offset), then a 3x3 conv and a ReLU."""

    def __init__(self, order: list[tuple[int, int]]) -> None:
        super().__init__()
        self.order = order
        self.conv = torch.nn.Conv2d(3 * len(order), 8, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.cat([x[..., r::2, c::2] for r, c in self.order], 1)
        return torch.relu(self.conv(x))


YOLOV5 = [(0, 0), (1, 0), (0, 1), (1, 1)]  # the order YOLOv5's and YOLOX's Focus use


@pytest.mark.parametrize(
    "order, fires",
    [
        (YOLOV5, True),
        ([(0, 0), (0, 1), (1, 0), (1, 1)], True),  # row-major phases
        ([(0, 0), (1, 1), (0, 1), (1, 0)], False),  # no digit order: a gather
        ([(0, 0), (1, 1)], False),  # two of four phases
    ],
)
def test_focus_matches_pytorch(order, fires):
    torch.manual_seed(len(order))
    model = Focus(order).eval()
    x = torch.randn(1, 3, 16, 12)
    m = xgen_mlir.compile(model, (x,))
    with torch.no_grad():
        want = model(x).numpy()
    check_close(m(x.numpy()), want, atol=1e-5, rtol=1e-5, what=f"Focus {order}")
    counts = m.report.rewrites.get("xgen-space-to-depth", {})
    assert (counts.get(REWRITE, 0) == 1) == fires, counts


def test_onnx_focus_matches_onnxruntime():
    """ONNX Slice ops with steps, as ddddocr's detector has them."""
    import onnx
    import onnxruntime as ort

    torch.manual_seed(0)
    model = Focus(YOLOV5).eval()
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(1, 3, 16, 12),), buf, dynamo=False, input_names=["x"])
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 12)).astype(np.float32)
    m = xgen_mlir.compile(onnx.load_from_string(buf.getvalue()), (x,))
    sess = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    check_close(m(x), sess.run(None, {"x": x})[0], atol=1e-5, rtol=1e-5, what="ONNX Focus")
    assert m.report.rewrites["xgen-space-to-depth"][REWRITE] == 1
