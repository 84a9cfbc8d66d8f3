"""The same model with the same options compiles to the same bytes: in two fresh processes (other
hash seeds, so no set or dict order can leak), with cold kernel caches in other folders (so no
path or temporary name can leak into a generated kernel's object), through the ONNX frontend
and with every kind of generated C kernel (pattern convs, inverted residuals, pointwise)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import torch
from torch import nn

import xgen_mlir
from xgen_mlir import compress

_COMPILE = """
import sys, xgen_mlir
options = {"inverted_residual_min_bytes": "0"}
xgen_mlir.compile(sys.argv[1], target_options=options).save(sys.argv[2])
"""


class _Net(nn.Module):
    """A pattern-prunable 3x3 conv, a MobileNet block (expand, depthwise, project) and a head."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(16, 32, 3, padding=1)
        self.block = nn.Sequential(
            nn.Conv2d(32, 96, 1), nn.ReLU6(), nn.Conv2d(96, 96, 3, padding=1, groups=96),
            nn.ReLU6(), nn.Conv2d(96, 32, 1),
        )  # fmt: skip
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        x = x + self.block(x)
        return self.head(x.mean((2, 3)))


def _compile_in_fresh_process(onnx_path, out, cache, seed: str) -> str:
    env = dict(os.environ, XGEN_CACHE_DIR=str(cache), PYTHONHASHSEED=seed)
    proc = subprocess.run(
        [sys.executable, "-c", _COMPILE, str(onnx_path), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return hashlib.sha256(out.read_bytes()).hexdigest()


def test_two_compiles_are_byte_identical(tmp_path):
    torch.manual_seed(0)
    x = torch.randn(1, 16, 24, 24)
    model = compress.prune(_Net().eval(), (x,), target="cpu", connectivity=0.5)
    onnx_path = tmp_path / "net.onnx"
    torch.onnx.export(model, (x,), str(onnx_path), dynamo=False)
    compiled = xgen_mlir.compile(
        str(onnx_path),
        target_options={"inverted_residual_min_bytes": "0"},
        dump_ir=tmp_path / "ir",
    )
    final = sorted((tmp_path / "ir").iterdir())[-1].read_text()
    for kernel in ("xgen_fkw_kernel_", "xgen_inverted_residual_", "xgen_pointwise_"):
        assert kernel in final, f"the model no longer exercises {kernel}*"
    # and again in this process: nothing a compile leaves behind (a kernel counter, a cache)
    # may change the next compile's bytes
    again = xgen_mlir.compile(str(onnx_path), target_options={"inverted_residual_min_bytes": "0"})
    assert again.vmfb == compiled.vmfb, "a second compile in one process differs"
    first = _compile_in_fresh_process(onnx_path, tmp_path / "a.vmfb", tmp_path / "c1", "1")
    second = _compile_in_fresh_process(onnx_path, tmp_path / "b.vmfb", tmp_path / "c2", "2")
    assert first == second, "two compiles of one model differ"
    assert first == hashlib.sha256(compiled.vmfb).hexdigest(), "in-process compile differs"
