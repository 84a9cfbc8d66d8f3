"""xgen-add-roundeven: quantize's round-half-to-even as two additions with 2^23, compiled by
IREE for the host, gives torch.round's bits for every kind of f32: ties both ways, -0 and
small negatives (-0), values at and past 2^23 (integers already), the largest finite values,
infinities and NaN."""

from __future__ import annotations

import numpy as np
import torch

import xgen_mlir

EDGES = [
    0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, -0.49999997, 0.0, -0.0, -0.3, 0.3,
    8388607.5, -8388607.5, 8388608.0, -8388609.0, 16777217.0, 4194303.5, 1e30, -1e30,
    3.4028235e38, -3.4028235e38, 1e-45, -1e-45, float("inf"), float("-inf"), float("nan"),
]  # fmt: skip


class Round(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.round(x * 3.0)


def test_round_matches_torch_bit_for_bit() -> None:
    gen = torch.Generator().manual_seed(0)
    rand = torch.cat([torch.randn(4000, generator=gen) * s for s in (1.0, 100.0, 1e6)])
    halves = torch.arange(-600, 600, dtype=torch.float32) / 2  # every tie in [-300, 300)
    x = torch.cat([torch.tensor(EDGES, dtype=torch.float32) / 3.0, rand, halves / 3.0])
    x = x[: len(x) // 8 * 8].reshape(-1, 8)
    compiled = xgen_mlir.compile(Round(), (x,))
    assert compiled.report.rewrites["xgen-add-roundeven"] == {
        "math.roundeven -> (x + 2^23) - 2^23": 1
    }
    got = np.asarray(compiled(x.numpy()))
    want = torch.round(x * 3.0).numpy()
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), list(zip((x * 3.0).numpy()[~same], got[~same], want[~same], strict=True))
