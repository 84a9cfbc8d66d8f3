"""The fused inverted-residual kernel (codegen/inverted_residual.py, built by
benchmarks/bench_inverted_residual_kernel.py) computes the block
(expand + ReLU6, depthwise + ReLU6, project, residual) as numpy does, at both strides, on
shapes with partial expand-pixel steps and a half (8-wide) project vector."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bench_inverted_residual_kernel as proto


@pytest.mark.parametrize(
    ("shape", "rows"),
    [((12, 12, 16, 32, 16, 1), 3), ((16, 16, 16, 48, 24, 2), 2), ((8, 12, 8, 16, 40, 1), 8)],
)
def test_kernel_matches_float64_reference(tmp_path, shape, rows):
    lib = proto.build(shape, rows, tmp_path, openmp=False)
    ops = proto.operands(shape, seed=1)
    ops[0][0, 0, 0] = 40.0  # a ReLU6 that clips
    got = proto.run(lib, "blk_all", shape, ops)
    want = proto.reference(shape, ops)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("shape", "rows", "why"),
    [
        ((12, 12, 16, 40, 24, 1), 3, "40 expanded channels"),
        ((12, 12, 16, 32, 24, 1), 5, "divide"),
        ((12, 12, 16, 32, 20, 1), 3, "20 output channels"),
        ((12, 12, 16, 32, 24, 3), 3, "stride 3"),
    ],
)
def test_refuses_shapes_it_does_not_tile(shape, rows, why):
    with pytest.raises(ValueError, match=why):
        proto.generate(shape, rows)
