"""Tuning runners: a batch of candidates compiled for aarch64 and measured with IREE's stock
aarch64 tools under qemu (the plumbing a board over ssh uses), numerics checked against IREE's
own config, a candidate with wrong numbers rejected, records under the device's identity."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from targets_util import need, need_qemu, run_bundle_npy
from tuning_fixtures import MATMUL

from xgen_mlir.errors import XGenError
from xgen_mlir.tunedb import HostIdentity

ARM64 = [
    "--iree-hal-target-backends=llvm-cpu",
    "--iree-llvmcpu-target-triple=aarch64-linux-gnu",
    "--iree-llvmcpu-target-cpu=generic",
    "--iree-llvmcpu-target-cpu-features=+neon",
]
A = {"kind": "tiles", "dist": [16, 16, 0], "vec": [8, 16, 0], "red": [0, 0, 4]}
B = {"kind": "tiles", "dist": [32, 16, 0], "vec": [4, 8, 0], "red": [0, 0, 8]}
C = {"kind": "tiles", "dist": [8, 16, 0], "vec": [8, 8, 0], "red": [0, 0, 2]}


def _qemu():
    from xgen_mlir.tuning.runners import aarch64_tools_dir, make_runner

    need_qemu("aarch64")
    need(
        (aarch64_tools_dir() / "iree-benchmark-module").exists(),
        "IREE's aarch64 runtime tools (runtime_bridge/fetch_runtime.sh aarch64)",
    )
    return make_runner("qemu")


def _standalone() -> str:
    from xgen_mlir._mlir import iree_binding
    from xgen_mlir.fusion.tunable import TuningRequest
    from xgen_mlir.passes.registry import DispatchState
    from xgen_mlir.passes.runner import run_steps

    module = iree_binding().ir.Module.parse(MATMUL, iree_binding().ir.Context())
    state = DispatchState(tuning=TuningRequest(collect=True))
    run_steps(module, ["xgen-apply-tuning"], what="test", state=state)
    (task,) = state.tuning.tasks
    return task["module"]


def _wrong_weights_in(fn: str):
    """batch_module, but ``@fn`` reads other weights than ``base``: a candidate whose
    output differs, as a miscompiled config's would."""
    from xgen_mlir.tuning import measure

    real = measure.batch_module

    def batch(standalone, configs, seed=0):
        text = real(standalone, configs, seed)
        start = text.index(f"func.func @{fn}(")
        load = re.compile(r"util\.global\.load @xgen_w\d+ : (tensor<[^>]*>)")
        m = load.search(text, start)
        assert m is not None
        bad = f"  util.global private @xgen_bad = dense<0.25> : {m.group(1)}\n"
        text = text[: m.start()] + f"util.global.load @xgen_bad : {m.group(1)}" + text[m.end() :]
        line = text.rindex("\n", 0, start) + 1
        return text[:line] + bad + text[line:]

    return batch


def test_qemu_runner_times_candidates_and_rejects_wrong_numbers(monkeypatch):
    from xgen_mlir.tuning import measure
    from xgen_mlir.tuning.measure import MeasureSettings, measure_batch

    runner = _qemu()
    monkeypatch.setattr(measure, "batch_module", _wrong_weights_in("c2"))
    out = measure_batch(
        _standalone(),
        [A, B, C],
        ARM64,
        MeasureSettings(threads=1, rounds=2, min_block_s=0.001),
        runner=runner,
    )
    assert [m.status for m in out] == ["ok", "ok", "wrong_numbers"]
    assert all(m.seconds and m.seconds > 0 and m.baseline_seconds for m in out[:2])
    assert out[0].baseline_seconds == out[1].baseline_seconds  # one base, beside both
    assert "relative error" in out[2].detail and out[2].seconds is None
    assert [m.config for m in out] == [A, B, C]


def test_qemu_runner_records_a_crash_and_never_times_it(monkeypatch):
    """A candidate whose run fails on the device is a runtime_error, the others still count."""
    from xgen_mlir.tuning.measure import MeasureSettings, measure_batch

    runner = _qemu()
    real = runner._call

    def call(tool, common, fn, extra, settings):
        if fn == "c0":  # the device kills this one (as generated code that faults would)
            return real(tool, [*common, "--input=1xf32=0"], fn, extra, settings)
        return real(tool, common, fn, extra, settings)

    monkeypatch.setattr(runner, "_call", call)
    out = measure_batch(
        _standalone(), [A, B], ARM64, MeasureSettings(threads=1, rounds=1), runner=runner
    )
    assert [m.status for m in out] == ["runtime_error", "ok"]
    assert "exit code" in out[0].detail and out[0].seconds is None


def test_qemu_identity_is_the_emulated_device_never_this_host():
    runner = _qemu()
    host = runner.identity(threads=1)
    assert host.arch == "aarch64"
    assert host.cpu.startswith("qemu-aarch64") and "emulated" in host.cpu
    assert "neon" in host.isa or "asimd" in host.isa or "fp-armv8" in host.isa
    assert host.key != HostIdentity.current(threads=1).key
    assert runner.identity(threads=2).threads == 2


def test_runner_specs():
    from xgen_mlir.tuning.runners import LocalRunner, make_runner

    assert isinstance(make_runner(None), LocalRunner)
    assert isinstance(make_runner("local"), LocalRunner)
    ssh = make_runner("ssh://pi@board:2222/opt/iree/bin")
    assert ssh.prefix == ["ssh", "-o", "BatchMode=yes", "-p", "2222", "pi@board"]
    assert ssh.scp_opts == ["-P", "2222"] and ssh.remote == "pi@board"
    assert ssh._tool("iree-run-module") == "/opt/iree/bin/iree-run-module"
    assert make_runner("ssh://pi@board")._tool("iree-run-module") == "iree-run-module"
    with pytest.raises(XGenError, match="unknown runner 'tcp://x'"):
        make_runner("tcp://x")
    if shutil.which("qemu-aarch64-static") is None:
        with pytest.raises(XGenError, match="qemu user mode"):
            make_runner("qemu")


def test_median_of_a_benchmark_report():
    from xgen_mlir.tuning.runners import _median_seconds

    rows = [
        {"run_type": "iteration", "real_time": t, "time_unit": "us"} for t in (30.0, 10.0, 20.0)
    ]
    rows.append({"run_type": "aggregate", "real_time": 99.0, "time_unit": "us"})
    report = "garbage before\n" + __import__("json").dumps({"benchmarks": rows})
    assert _median_seconds(report) == pytest.approx(20e-6)


def test_tune_for_arm64_under_qemu_records_under_the_device_identity(tmp_path):
    """tune(target="arm64", runner="qemu"): a real (tiny) search whose batches are compiled for
    aarch64 and measured under qemu; every record is the emulated device's, so compile() for
    this host finds none of them, and compile(target="arm64", tuning_device="qemu") applies
    the device's, with the module's numbers on the device unchanged."""
    from dataclasses import replace

    import torch

    from xgen_mlir import compile as xcompile
    from xgen_mlir.tunedb import CONFIRMED, TuningDB
    from xgen_mlir.tuning.measure import MeasureSettings
    from xgen_mlir.tuning.search import tune

    device = _qemu().identity(threads=1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(48, 32)).eval()
    x = torch.randn(16, 48)
    db = tmp_path / "t.db"
    result = tune(
        model,
        (x,),
        target="arm64",
        runner="qemu",
        db=db,
        workers=1,
        max_trials=2,
        batch_size=2,
        settings=MeasureSettings(threads=1, rounds=2, min_block_s=0.001),
        progress=False,
    )
    assert result.trials >= 2 and result.host == device.describe()
    with TuningDB(db) as tdb:
        records = tdb.records()
        assert records and {r.host_key for r in records} == {device.key}
        assert any(r.status == "ok" and r.config["kind"] != "iree" for r in records)
    with pytest.warns(UserWarning, match="records only of other hosts .qemu-aarch64"):
        module = xcompile(model, (x,), tuning_db=db, tuning_threads=1)
    assert not module.report.tuning.applied

    # the database knows the device by the runner's name, so a compile for it needs no device
    with TuningDB(db) as tdb:
        assert tdb.device("qemu") == device
    # the device's own record, stored as a clear win, goes on its op when compiling for it
    chosen = next(r for r in records if r.status == "ok" and r.config["kind"] != "iree")
    with TuningDB(tmp_path / "device.db") as mine:
        mine.name_device("qemu", device)
        mine.add(
            replace(chosen, host_key="", seconds=1e-4, baseline_seconds=1e-3, detail=CONFIRMED),
            device,
        )

    def for_arm64(**tuning):
        return xcompile(model, (x,), target="arm64", tuning_db=tmp_path / "device.db", **tuning)

    arm = for_arm64(tuning_device="qemu", tuning_threads=1)
    assert [(s, c) for s, _, c in arm.report.tuning.applied] == [(chosen.signature, chosen.config)]
    assert "qemu-aarch64" in arm.report.tuning.source
    # a compile for the device without naming it applies nothing (another machine's records),
    # nor does one naming a device the database never measured
    plain = for_arm64()
    assert plain.report.tuning is None or not plain.report.tuning.applied
    with pytest.warns(UserWarning, match="no device measured through runner 'ssh://me@b'.*qemu"):
        other = for_arm64(tuning_device="ssh://me@b")
    assert other.report.tuning is None or not other.report.tuning.applied
    bundle = tmp_path / "bundle"
    arm.save_bundle(bundle)
    got = run_bundle_npy(bundle, tmp_path, x.numpy())
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-4, atol=1e-5)
