"""The VNNI int8 pattern kernel (xgen-int8-pattern-kernels) on compiled models: the same
numbers as ONNX Runtime on the same quantized file, at stride 1 and 2, with biases, groups of
fewer than 16 filters, a filter count that is no multiple of 16, and a batch of 3. Where the
host has no VNNI the same compiles run the convs another way (the pass must not fire), same
numbers."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
from conftest import check_close, int8_reference, vnni_pattern_kernels
from onnx import numpy_helper

import xgen_mlir
from xgen_mlir import compress


class _Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.c2 = torch.nn.Conv2d(16, 24, 3, stride=2, padding=1)
        self.c3 = torch.nn.Conv2d(24, 40, 3, padding=1)
        self.c4 = torch.nn.Conv2d(40, 16, 3, stride=2, padding=0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.c1(x))
        x = torch.relu(self.c2(x))
        x = self.c3(x)  # no activation: the next conv's input zero point is not -128
        return self.c4(x)


def _step(proto: onnx.ModelProto) -> float:
    inits = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    node = next(n for n in proto.graph.node if proto.graph.output[0].name in n.output)
    return float(inits[node.input[1]])


@pytest.mark.parametrize(("offload", "batch"), [("none", 1), ("tuned", 1), ("none", 3)])
def test_pruned_int8_convs_in_the_vnni_kernel_equal_onnx_runtime(offload: str, batch: int) -> None:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(batch, 3, 23, 21, generator=gen)
    cal = [torch.randn(batch, 3, 23, 21, generator=gen) for _ in range(3)]
    pruned = compress.prune(_Net().eval(), (x[:1],), group_size=8, connectivity=0.5).eval()
    quantized = compress.quantize(pruned, x, calibration=cal)
    compiled = xgen_mlir.compile(
        quantized,
        None,
        precision="int8",
        precision_check=False,
        target_options={"offload": offload, "integer_contractions": "convs"},
    )
    got = np.asarray(compiled(x.numpy()))
    want = int8_reference(quantized, {quantized.graph.input[0].name: x.numpy()})
    # the integer sums are exact: any difference is a rounding tie of the requantize
    check_close(got, want, atol=_step(quantized) * 1.001, rtol=0, what="int8 vs ORT")
    assert np.mean(got == want) > 0.99
    done = compiled.report.rewrites.get("xgen-int8-pattern-kernels", {})
    if vnni_pattern_kernels():
        assert done == {"int8 pattern kernels": 4, "of them with their requantize": 4}, done
    else:
        assert not done, done
