"""xgen-transposed-convs end to end: transposed convs against PyTorch and ONNX Runtime, in the
cases the pass rewrites and in those it must leave (lit: tests/lit/passes/transposed-convs.mlir)."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
import torch
from conftest import check_close

import xgen_mlir

PHASES = "linalg.conv_2d_nchw_fchw as phases"


def _tconv(k: int, s: int, p: int = 0, out_pad: int = 0, bias: bool = True) -> torch.nn.Module:
    torch.manual_seed(k * 10 + s)
    conv = torch.nn.ConvTranspose2d(6, 5, k, stride=s, padding=p, output_padding=out_pad, bias=bias)
    return torch.nn.Sequential(conv, torch.nn.ReLU()).eval()


@pytest.mark.parametrize(
    "k, s, p, out_pad, fires",
    [
        (2, 2, 0, 0, True),  # DBNet / U-Net upsampling: a 1x1 conv and a depth-to-space
        (6, 3, 0, 0, True),  # 2x2 taps per phase
        (4, 2, 1, 0, True),  # phases read different input rows: one conv per phase
        (3, 2, 1, 1, True),  # phases of 2 and 1 taps, output_padding 1: one conv per phase
        (3, 2, 1, 0, False),  # an odd output size: the phases would differ in size
    ],
)
def test_transposed_conv_matches_pytorch(k, s, p, out_pad, fires):
    model = _tconv(k, s, p, out_pad)
    x = torch.randn(1, 6, 9, 11)
    m = xgen_mlir.compile(model, (x,))
    with torch.no_grad():
        want = model(x).numpy()
    check_close(m(x.numpy()), want, atol=1e-5, rtol=1e-5, what=f"ConvTranspose k{k} s{s} p{p}")
    counts = m.report.rewrites.get("xgen-transposed-convs", {})
    assert (counts.get(PHASES, 0) == 1) == fires, counts


def test_inf_input_stays_inf_as_in_pytorch():
    """Each input meets the same weights as before: an Inf input gives +-Inf, not NaN."""
    model = _tconv(2, 2, bias=False)[0]
    x = torch.randn(1, 6, 4, 4)
    x[0, 2, 1, 3] = float("inf")
    m = xgen_mlir.compile(model, (x,))
    with torch.no_grad():
        want = model(x).numpy()
    got = np.asarray(m(x.numpy()))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    fin = np.isfinite(want)
    check_close(got[fin], want[fin], atol=1e-5, rtol=1e-5, what="finite outputs")


def test_onnx_conv_transpose_matches_onnxruntime():
    import onnx
    import onnxruntime as ort

    model = _tconv(2, 2)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(1, 6, 9, 11),), buf, dynamo=False, input_names=["x"])
    x = np.random.default_rng(0).standard_normal((1, 6, 9, 11)).astype(np.float32)
    m = xgen_mlir.compile(onnx.load_from_string(buf.getvalue()), (x,))
    sess = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    check_close(m(x), sess.run(None, {"x": x})[0], atol=1e-5, rtol=1e-5, what="ONNX ConvTranspose")
    assert m.report.rewrites["xgen-transposed-convs"][PHASES] == 1
