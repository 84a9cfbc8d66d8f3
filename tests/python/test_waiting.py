"""The caller waits for CPU task-system calls in SCHED_BATCH (runtime/waiting.py)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
import torch
from conftest import compile_and_check

import xgen_mlir
from xgen_mlir.models import vision
from xgen_mlir.runtime import waiting

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux scheduler")


@pytest.fixture(scope="module")
def mlp():
    model = vision.mlp()
    x = torch.randn(1, 64, generator=torch.Generator().manual_seed(0))
    return x, compile_and_check(model, (x,), atol=1e-5, rtol=1e-5)


@linux_only
def test_batch_inside_the_block_and_restored_after():
    assert os.sched_getscheduler(0) == os.SCHED_OTHER
    with waiting.yielding_to_workers() as switched:
        assert switched
        assert os.sched_getscheduler(0) == os.SCHED_BATCH
    assert os.sched_getscheduler(0) == os.SCHED_OTHER


@linux_only
def test_restored_when_the_call_raises():
    with pytest.raises(RuntimeError):
        with waiting.yielding_to_workers():
            raise RuntimeError("call failed")
    assert os.sched_getscheduler(0) == os.SCHED_OTHER


@linux_only
def test_disabled_or_other_policies_are_left_alone():
    with waiting.yielding_to_workers(enabled=False) as switched:
        assert not switched and os.sched_getscheduler(0) == os.SCHED_OTHER
    os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))  # the user's own choice
    try:
        with waiting.yielding_to_workers() as switched:
            assert not switched
        assert os.sched_getscheduler(0) == os.SCHED_BATCH  # not "restored" to OTHER
    finally:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def test_a_refused_switch_waits_the_ordinary_way(monkeypatch):
    def refuse(*_):
        raise PermissionError("sandbox")

    monkeypatch.setattr(os, "sched_setscheduler", refuse)
    with waiting.yielding_to_workers() as switched:
        assert not switched


def _policies_during_calls(monkeypatch, module, x):
    seen = []
    real = os.sched_setscheduler

    def record(pid, policy, param):
        seen.append(policy)
        real(pid, policy, param)

    monkeypatch.setattr(os, "sched_setscheduler", record)
    out = module(x)
    module.benchmark(x, runs=2, warmup=1)
    return seen, out


@linux_only
def test_calls_on_the_task_system_wait_in_batch_and_match(monkeypatch, mlp, tmp_path):
    x, module = mlp
    seen, out = _policies_during_calls(monkeypatch, module, x)
    assert seen == [os.SCHED_BATCH, os.SCHED_OTHER] * 4  # one call + 1 warm-up + 2 runs
    path = module.save(tmp_path / "m.vmfb")
    plain = xgen_mlir.load(path, yield_to_workers=False)
    seen_plain, out_plain = _policies_during_calls(monkeypatch, plain, x)
    assert seen_plain == []
    np.testing.assert_array_equal(np.asarray(out), np.asarray(out_plain))
    sync = xgen_mlir.load(path, device="local-sync")  # runs inline: nothing to wait for
    seen_sync, out_sync = _policies_during_calls(monkeypatch, sync, x)
    assert seen_sync == []
    np.testing.assert_allclose(np.asarray(out_sync), np.asarray(out), rtol=1e-6, atol=1e-6)
