"""A dynamic batch as a loop over items at batch 1 (frontend/batch_loop.py, cpu option
``batch_loop``): the proof that items never meet, and the loop's numerics."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import check_close
from torch.export import Dim

import xgen_mlir
from xgen_mlir.frontend import import_model
from xgen_mlir.frontend.batch_loop import BatchAxes, batch_axes
from xgen_mlir.frontend.torch_import import export_program
from xgen_mlir.models import vision

BATCH = ({0: Dim("batch", max=64)},)


def _axes(model: torch.nn.Module, example: torch.Tensor, dynamic=BATCH):
    prog = export_program(model.eval(), (example,), dynamic)
    return batch_axes(import_model(prog), "main")


class _BatchMean(torch.nn.Module):
    """Normalizes over the batch: items meet."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x - x.mean(0, keepdim=True)


class _Flatten(torch.nn.Module):
    """Flattens everything (batch included) into one row: items meet in the reshape."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x).reshape(1, -1).sum(1)


def test_separable_models_are_proven():
    assert _axes(vision.small_cnn(), torch.randn(2, 3, 32, 32)) == BatchAxes((0,), (0,))
    assert _axes(vision.mlp(), torch.randn(2, 64)) == BatchAxes((0,), (0,))


@pytest.mark.parametrize(
    ("model", "shape", "why"),
    [
        (_BatchMean(), (4, 8), "reduces over the batch"),
        (_Flatten(), (4, 8), "merges the batch|reduces over the batch|computes with the batch"),
    ],
)
def test_models_whose_items_meet_are_refused(model, shape, why):
    got = _axes(model, torch.randn(*shape))
    assert isinstance(got, str)
    assert any(w in got for w in why.split("|")), got


def test_two_dynamic_dims_are_refused():
    dyn = ({0: Dim("batch", max=8), 1: Dim("feat", max=64)},)
    got = _axes(torch.nn.Sequential(torch.nn.ReLU()), torch.randn(2, 6), dyn)
    assert isinstance(got, str) and "2 dynamic dims" in got


@pytest.mark.parametrize("name", ["small_cnn", "mlp"])
def test_loop_matches_pytorch_at_every_batch(name):
    model = getattr(vision, name)().eval()
    item = tuple(vision.random_input(name).shape[1:])
    m = xgen_mlir.compile(
        model, (torch.randn(2, *item),), dynamic_shapes=BATCH, target_options={"batch_loop": "true"}
    )
    assert m.report.batch_loop.startswith("a loop over the batch"), m.report.batch_loop
    assert m.signature.inputs[0].shape == (None, *item)
    gen = torch.Generator().manual_seed(0)
    for b in (1, 3, 8):
        x = torch.randn(b, *item, generator=gen)
        with torch.no_grad():
            want = model(x).numpy()
        check_close(m(x.numpy()), want, atol=1e-5, rtol=1e-4, what=f"batch {b}")


def test_a_refused_model_keeps_the_dynamic_code_and_says_why():
    m = xgen_mlir.compile(
        _BatchMean(),
        (torch.randn(4, 8),),
        dynamic_shapes=BATCH,
        target_options={"batch_loop": "true"},
    )
    assert m.report.batch_loop.startswith("not a loop over items:")
    x = np.random.default_rng(0).standard_normal((5, 8)).astype(np.float32)
    check_close(m(x), x - x.mean(0, keepdims=True), atol=1e-5, rtol=1e-4, what="batch mean")


def test_off_by_default():
    m = xgen_mlir.compile(vision.mlp().eval(), (torch.randn(2, 64),), dynamic_shapes=BATCH)
    assert m.report.batch_loop == ""
