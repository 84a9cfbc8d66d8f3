"""Shared helpers for the pytest suite: compile a model and compare it with PyTorch."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest
import torch

import xgen_mlir


def max_abs_err(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


def check_close(got: np.ndarray, want: np.ndarray, *, atol: float, rtol: float, what: str) -> None:
    """Assert |got - want| <= atol + rtol*|want| elementwise, with a readable failure."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    ok = np.abs(got - want) <= atol + rtol * np.abs(want)
    assert ok.all(), (
        f"{what}: {int((~ok).sum())} of {ok.size} elements off; max abs err "
        f"{max_abs_err(got, want):.3e} (atol {atol}, rtol {rtol})"
    )


def compile_and_check(model, inputs, *, atol: float, rtol: float, **options):
    """Compile with xgen_mlir (cpu) and compare with PyTorch eager; returns the module."""
    with torch.no_grad():
        want = model(*inputs)
    module = xgen_mlir.compile(model, inputs, **options)
    got = module(*inputs)
    assert isinstance(got, torch.Tensor), "torch inputs must give torch outputs"
    check_close(got.numpy(), want.numpy(), atol=atol, rtol=rtol, what=type(model).__name__)
    return module


@pytest.fixture(autouse=True)
def _limit_torch_threads():
    # IREE's workers and PyTorch's pool would fight over the 2 cores otherwise.
    torch.set_num_threads(1)
    yield


@pytest.fixture
def tmpdir_env(tmp_path, monkeypatch):
    """A fresh, empty temp directory for everything the test (and xgen_mlir) makes."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.delenv("XGEN_KEEP_TEMPS", raising=False)
    return tmp
