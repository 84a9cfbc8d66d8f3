"""Weight literals of the PyTorch import (torch_import._literal_hooks): built from the tensors'
bytes, not through ``tensor.tolist()``, with the same IR as torch-mlir's own path and the same
numbers as PyTorch, for every dtype a weight or buffer comes in."""

from __future__ import annotations

import re
import warnings

import torch
from conftest import check_close

import xgen_mlir
from xgen_mlir._mlir import ir
from xgen_mlir._mlir import torch_dialect as torch_d
from xgen_mlir.frontend import import_model
from xgen_mlir.frontend.torch_import import _literal_hooks


class Weights(torch.nn.Module):
    """One weight or buffer of each kind the importer meets."""

    def __init__(self) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.w32 = torch.nn.Parameter(torch.randn(5, 3, generator=g))
        self.w16 = torch.nn.Parameter(torch.randn(5, 3, generator=g).half())
        self.wbf = torch.nn.Parameter(torch.randn(5, 3, generator=g).bfloat16())
        self.wt = torch.nn.Parameter(torch.randn(3, 5, generator=g).t())  # non-contiguous
        self.register_buffer("idx", torch.tensor([4, 0, 2], dtype=torch.int64))
        self.register_buffer("i8", torch.tensor([1, -2, 3], dtype=torch.int8))
        self.register_buffer("mask", torch.tensor([[True, False, True]] * 2))
        self.register_buffer("scale", torch.tensor(1.5))  # 0-d
        self.register_buffer("one", torch.full((1, 1), 0.25))  # one element: a splat
        base = torch.randn(8, 3, generator=g)
        self.register_buffer("lo", base[:4])  # two views of one storage
        self.register_buffer("hi", base[2:8:2])  # ... the second one strided

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x @ self.w32.T + x @ self.w16.float().T + x @ self.wbf.float().T + x @ self.wt.T
        y = y + x @ self.w32.T  # a weight used twice
        y = torch.index_select(y, 1, self.idx) * self.scale * self.one
        y = y + self.lo[:2] - self.hi[1:] + self.i8.float()
        return torch.where(self.mask, y, -y)


def _model() -> tuple[Weights, torch.Tensor]:
    return Weights().eval(), torch.randn(2, 3, generator=torch.Generator().manual_seed(1))


def _torch_dialect(prog: torch.export.ExportedProgram, hooks) -> str:
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table
    from torch_mlir.extras.fx_importer import FxImporter

    ctx = ir.Context()
    torch_d.register_dialect(ctx)
    importer = FxImporter(context=ctx, hooks=hooks)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        importer.import_frozen_program(prog.run_decompositions(get_decomposition_table()))
    return str(importer.module)


def test_literals_are_torch_mlirs_own_without_tolist(monkeypatch):
    """The hook's module is torch-mlir's default one, text and resource bytes alike, and it
    never goes through tolist() (which would be the slow path)."""
    model, x = _model()
    prog = torch.export.export(model, (x,), strict=False)
    want = _torch_dialect(prog, None)

    def no_tolist(self):
        raise AssertionError("tolist() called for a weight the hook should have built")

    monkeypatch.setattr(torch.Tensor, "tolist", no_tolist)
    got = _torch_dialect(prog, _literal_hooks())
    assert got == want
    # Weights stay binary: every literal of more than one element is a resource blob.
    assert len(re.findall(r"dense_resource<torch_tensor_", got)) >= 9
    assert "dialect_resources" in got


def test_weights_of_every_dtype_match_pytorch():
    model, x = _model()
    module = import_model(model, (x,))
    text = str(module)
    assert "dense_resource<torch_tensor_5_3_torch.bfloat16>" in text
    assert "dense_resource<torch_tensor_5_3_torch.float16>" in text
    with torch.no_grad():
        want = model(x).numpy()
    got = xgen_mlir.compile(module)(x).numpy()
    check_close(got, want, atol=1e-5, rtol=1e-5, what="weights of every dtype")


def test_module_does_not_follow_later_weight_changes():
    """The literals are copies: changing the model's weights in place after the import does
    not change what the imported module computes."""
    model, x = _model()
    module = import_model(model, (x,))
    with torch.no_grad():
        want = model(x).numpy()
        for p in model.parameters():
            p.mul_(-3.0)
        for b in model.buffers():
            if b.is_floating_point():
                b.add_(1.0)
    got = xgen_mlir.compile(module)(x).numpy()
    check_close(got, want, atol=1e-5, rtol=1e-5, what="weights changed after the import")


def test_what_the_hook_leaves_to_torch_mlir():
    """Quantized, meta, fake and sparse tensors, dtypes numpy lacks, and non-tensors go to
    torch-mlir's default path (None), which refuses or handles them as before."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    hooks = _literal_hooks()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # quantized tensors are deprecated
        q = torch.quantize_per_tensor(torch.randn(4), 0.1, 0, torch.qint8)
    with FakeTensorMode():
        fake = torch.empty(4)
    sparse = torch.eye(3).to_sparse()
    u16 = torch.zeros(4, dtype=torch.uint16)  # no numpy dtype in torch-mlir's table
    for value in (q, torch.empty(4, device="meta"), fake, sparse, u16, 3, 1.5, None):
        assert hooks.resolve_literal(None, value, None) is None, type(value)
