"""Autotuning: the tuning database (concurrent writers, kill -9, foreign and damaged records,
export/import), and a real search on a tiny model over a local Ray cluster of 2 workers whose
records compile() then applies."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from tuning_fixtures import MATMUL

from xgen_mlir import compile as xcompile
from xgen_mlir.tunedb import (
    CONFIRMED,
    MIN_GAIN,
    REJECTED_IN_MODEL,
    HostIdentity,
    Record,
    TuningDB,
    TuningDBError,
    records_for,
)

TILES = {"kind": "tiles", "dist": [16, 32, 0], "vec": [8, 16, 0], "red": [0, 0, 4]}


def _record(sig: str = "matmul_64x32x16_f32#abc", seconds: float = 1e-4, **kw) -> Record:
    config = kw.pop("config", TILES)
    kw.setdefault("detail", CONFIRMED)
    return Record(sig, config, kw.pop("status", "ok"), seconds, kw.pop("base", 2e-4), **kw)


def test_best_record_per_signature_needs_a_confirmed_gain(tmp_path):
    host = HostIdentity.current()
    with TuningDB(tmp_path / "t.db") as db:
        db.add(_record(seconds=1.5e-4, base=2e-4), host)
        faster = {**TILES, "dist": [32, 32, 0]}
        db.add(_record(seconds=1.0e-4, base=2e-4, config=faster), host)
        noise = {**TILES, "dist": [64, 32, 0]}  # within noise of its baseline: never applied
        db.add(
            _record(
                "matmul_8x8x8_f32#def", seconds=1.0e-4 / MIN_GAIN * 1.01, base=1.0e-4, config=noise
            ),
            host,
        )
        db.add(
            _record(seconds=None, status="wrong_numbers", config={**TILES, "red": [0, 0, 1]}), host
        )
        unconfirmed = {**TILES, "dist": [8, 32, 0]}  # the search's own measurement only
        db.add(_record(seconds=1e-5, base=2e-4, config=unconfirmed, detail=""), host)
        best = db.best(host)
    assert set(best) == {"matmul_64x32x16_f32#abc"}
    assert best["matmul_64x32x16_f32#abc"].config == faster


def _writer(path: str, tag: str, n: int) -> None:
    host = HostIdentity.current()
    with TuningDB(path) as db:
        for i in range(n):
            config = {**TILES, "dist": [i + 1, 32, 0]}
            db.add(_record(f"sig-{tag}", config=config), host)


def test_two_concurrent_writers(tmp_path):
    path = tmp_path / "t.db"
    TuningDB(path).close()
    code = "import sys; from test_tuning import _writer; _writer(sys.argv[1], sys.argv[2], 60)"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path])}
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(path), tag], env=env)
        for tag in ("a", "b")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    with TuningDB(path) as db:
        records = db.records()
    assert len(records) == 120
    assert {r.signature for r in records} == {"sig-a", "sig-b"}


def test_kill_9_loses_at_most_the_trial_in_flight(tmp_path):
    path = tmp_path / "t.db"
    code = (
        "import sys, itertools\n"
        "from test_tuning import _record, TILES\n"
        "from xgen_mlir.tunedb import TuningDB, HostIdentity\n"
        "db = TuningDB(sys.argv[1]); host = HostIdentity.current()\n"
        "for i in itertools.count():\n"
        "    db.add(_record(config={**TILES, 'dist': [i + 1, 32, 0]}), host)\n"
        "    print(i + 1, flush=True)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path])}
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True, env=env
    )
    committed = 0
    assert proc.stdout is not None
    while committed < 40:
        committed = int(proc.stdout.readline())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    with TuningDB(path) as db:
        n = len(db.records())
    assert n >= committed  # every trial it reported done is there


def test_foreign_host_records_are_ignored_with_a_warning(tmp_path):
    path = tmp_path / "t.db"
    here = HostIdentity.current()
    other = replace(here, cpu="Some Other CPU", isa=("avx2",))
    with TuningDB(path) as db:
        db.add(_record(), other)
    with pytest.warns(UserWarning, match="only of other hosts.*Some Other CPU"):
        best, _ = records_for(path, here)
    assert best == {}


def test_damaged_record_is_ignored_with_a_warning(tmp_path):
    path = tmp_path / "t.db"
    host = HostIdentity.current()
    with TuningDB(path) as db:
        db.add(_record("sig-good"), host)
        db.add(_record("sig-bad"), host)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE records SET seconds = 1e-9 WHERE signature = 'sig-bad'")
    conn.execute("UPDATE records SET config = 'not json' WHERE signature = 'sig-good'")
    conn.commit()
    conn.close()
    with TuningDB(path) as db, pytest.warns(UserWarning, match="2 damaged tuning record"):
        assert db.best(host) == {}


def test_export_import_between_machines(tmp_path):
    host = HostIdentity.current()
    other = replace(host, cpu="Board CPU", arch="aarch64")
    with TuningDB(tmp_path / "a.db") as db:
        db.add(_record("sig-1"), host)
        db.add(_record("sig-2"), other)
        assert db.export(tmp_path / "r.jsonl") == 2
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    tampered = json.loads(lines[0])
    tampered["seconds"] = 1e-12
    (tmp_path / "bad.jsonl").write_text(json.dumps(tampered) + "\nnot a record\n" + lines[1])
    with TuningDB(tmp_path / "b.db") as db:
        assert db.import_(tmp_path / "r.jsonl") == (2, 0)
        assert {r.signature for r in db.records(host.key)} == {"sig-1"}
        assert len(db.hosts()) == 2
    with TuningDB(tmp_path / "c.db") as db, pytest.warns(UserWarning, match="2 line"):
        assert db.import_(tmp_path / "bad.jsonl") == (1, 2)


def test_not_a_database_is_a_clear_error(tmp_path):
    bad = tmp_path / "t.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(TuningDBError, match="not a usable tuning database"):
        TuningDB(bad)
    with pytest.raises(TuningDBError, match="is a directory"):
        TuningDB(tmp_path)
    with pytest.raises(TuningDBError, match="does not exist"):
        records_for(tmp_path / "missing.db", HostIdentity.current())


# Tests of the contraction search and its configs: no generated GEMM kernel may take the
# layers (the algorithm choices measure it for real, and where it wins the configs go unused).
CONTRACTIONS_ONLY = {"target_options": {"gemm_kernels": "false"}}


class _TwoLayers(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(48, 64)
        self.b = torch.nn.Linear(64, 24)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.nn.functional.gelu(self.a(x)))


def test_local_ray_workers_run_at_normal_priority(monkeypatch):
    """Ray's default worker niceness (15) let any other process take the cores from the
    measurements; the local cluster the tuner starts runs them at nice 0."""
    from xgen_mlir.tuning.workers import RayPool

    monkeypatch.delenv("RAY_worker_niceness", raising=False)
    pool = RayPool(num_cpus=1, threads=1)
    try:
        ray = pool.ray
        niceness = ray.get(ray.remote(num_cpus=1)(lambda: os.nice(0)).remote())
    finally:
        pool.close()
    assert niceness == os.nice(0)


def test_search_on_a_local_ray_cluster_then_compile_applies_it(tmp_path):
    """A real search (tiny budget) over 2 local Ray workers; the records it writes are this
    host's, checked against IREE's config; compile() applies the best; a second run resumes
    without measuring a config twice; the report is written."""
    from xgen_mlir.tuning.measure import MeasureSettings
    from xgen_mlir.tuning.search import tune

    torch.manual_seed(0)
    model = _TwoLayers().eval()
    x = torch.randn(56, 48)
    db = tmp_path / "t.db"
    settings = MeasureSettings(threads=1, rounds=3)
    result = tune(
        model,
        (x,),
        db=db,
        workers=2,
        max_trials=6,
        batch_size=3,
        settings=settings,
        progress=False,
        report=tmp_path / "r.html",
        seed=1,
        **CONTRACTIONS_ONLY,
    )
    assert result.trials >= 6
    assert len(result.ops) == 2 and all(op.trials > 0 for op in result.ops)
    host = HostIdentity.current(threads=1)
    with TuningDB(db) as tdb:
        records = tdb.records()
        assert {r.host_key for r in records} == {host.key}
        assert all(r.status in ("ok", "compile_error", "wrong_numbers") for r in records)
        assert any(r.config["kind"] == "iree" for r in records)  # the baseline is kept
        first = {(r.signature, json.dumps(r.config, sort_keys=True)) for r in records}
        best = tdb.best(host)
    # the tuned module carries exactly the records of the host (1 thread) they were taken on
    # that won in the model; every op has a verdict
    report = result.module.report.tuning
    applied = {s for s, _, _ in report.applied}
    assert set(result.verdicts) == {op.signature for op in result.ops}
    assert applied == {s for s, v in result.verdicts.items() if v.status == "applied"}
    assert applied == set(best), (applied, set(best), report.untuned)
    np.testing.assert_allclose(
        np.asarray(result.module(x)), model(x).detach().numpy(), rtol=1e-4, atol=1e-5
    )
    html = (tmp_path / "r.html").read_text()
    assert "Tuning report" in html and "<svg" in html

    result2 = tune(
        model,
        (x,),
        db=db,
        workers=2,
        max_trials=3,
        batch_size=3,
        settings=settings,
        progress=False,
        measure_model=False,
        seed=2,
        **CONTRACTIONS_ONLY,
    )
    with TuningDB(db) as tdb:
        second = {(r.signature, json.dumps(r.config, sort_keys=True)) for r in tdb.records()}
    new = second - first
    assert result2.trials >= 3 and len(new) >= result2.trials - 2  # only the baselines repeat

    # compile() applies the best records of the host it runs on: the search's were taken
    # with 1 thread, a compile for 2 threads is another host and applies none of them ...
    with TuningDB(db) as tdb:
        tiles = [r for r in tdb.records() if r.status == "ok" and r.config["kind"] == "tiles"]
    compile_host = HostIdentity.current()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = xcompile(model, (x,), tuning_db=db, **CONTRACTIONS_ONLY)
    report = module.report.tuning
    assert report is not None and len(report.applied) + len(report.untuned) == 2
    if compile_host.key != host.key:
        assert report.applied == []
        assert {why for _, why in report.untuned} == {"no record for this host"}
    # ... and a record of its own host (one of the search's configs, stored as a clear win)
    # goes on its op, with the model's numbers unchanged.
    chosen = tiles[0]
    with TuningDB(tmp_path / "mine.db") as mine:
        mine.add(
            replace(chosen, host_key="", seconds=1e-4, baseline_seconds=1e-3, detail=CONFIRMED),
            compile_host,
        )
    module = xcompile(model, (x,), tuning_db=tmp_path / "mine.db", **CONTRACTIONS_ONLY)
    report = module.report.tuning
    assert [(s, c) for s, _, c in report.applied] == [(chosen.signature, chosen.config)]
    assert "1 tuned op signature" in report.source
    np.testing.assert_allclose(
        np.asarray(module(x)), model(x).detach().numpy(), rtol=1e-4, atol=1e-5
    )
    # xgen-compile applies the same record from --tuning-db, and none with --tuning-db none
    from xgen_mlir.tools import xgen_compile

    pt2 = tmp_path / "m.pt2"
    torch.export.save(torch.export.export(model, (x,)), pt2)
    for db_arg, applied in ((str(tmp_path / "mine.db"), 1), ("none", None)):
        out = subprocess.run(
            [sys.executable, "-m", xgen_compile.__name__, str(pt2), "--tuning-db", db_arg]
            + ["--target-option", "gemm_kernels=false"],
            capture_output=True,
            text=True,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        if applied is None:
            assert "tuned configs" not in out.stdout, out.stdout
        else:
            assert f"tuned configs: {applied} op(s) from {tmp_path / 'mine.db'}" in out.stdout


def test_candidates_are_checked_before_they_are_timed():
    """Configs IREE rejects are compile errors, the others are checked against IREE's config
    on the same inputs; data tiling is measured with the weights as compile-time constants."""
    from xgen_mlir._mlir import iree_binding
    from xgen_mlir.fusion.tunable import TuningRequest
    from xgen_mlir.passes.registry import DispatchState
    from xgen_mlir.passes.runner import run_steps
    from xgen_mlir.tuning.measure import MeasureSettings, measure_batch

    ir = iree_binding().ir
    module = ir.Module.parse(MATMUL, ir.Context())
    state = DispatchState(tuning=TuningRequest(collect=True))
    run_steps(module, ["xgen-apply-tuning"], what="test", state=state)
    (task,) = state.tuning.tasks
    assert "{xgen.constant}" in task["module"]  # the weight is marked as the model's constant
    good = {"kind": "tiles", "dist": [16, 16, 0], "vec": [8, 16, 0], "red": [0, 0, 4]}
    bad = {"kind": "tiles", "dist": [16, 16, 0], "vec": [8, 16, 0], "red": [0, 0, -3]}
    flags = ["--iree-hal-target-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=host"]
    out = measure_batch(
        task["module"],
        [good, {"kind": "data-tiled"}, bad],
        flags,
        MeasureSettings(threads=1, rounds=2),
    )
    assert [m.status for m in out] == ["ok", "ok", "compile_error"]
    assert all(m.seconds and m.baseline_seconds for m in out[:2])
    assert out[2].detail


def test_relative_error_catches_wrong_and_non_finite_outputs():
    from xgen_mlir.tuning.child import _relative_error

    ref = np.array([1.0, -2.0, 4.0], dtype=np.float32)
    assert _relative_error(ref.copy(), ref) == 0.0
    assert _relative_error(ref + np.float32(0.4), ref) == pytest.approx(0.1)
    assert _relative_error(np.array([1.0, np.nan, 4.0], np.float32), ref) == float("inf")
    assert _relative_error(ref[:2], ref) == float("inf")


def _two_layer_signatures(model, x):
    """The two tunable signatures of ``model``, the larger op first."""
    module = xcompile(
        model, (x,), tuning_db=False, tuning_collect=True, tuning_threads=1, **CONTRACTIONS_ONLY
    )
    tasks = module.report.tuning.tasks
    assert len(tasks) == 2
    return [(t["signature"], t["description"]) for t in tasks]


def _fake_timer(loser: str, calls: list[set[str]]):
    """A model timing that never looks at a clock: a model holding ``loser``'s record is
    20% slower than the one it is compared with, any other 20% faster."""
    import math

    from xgen_mlir.tuning.search import ModelTiming

    def timer(current, candidate, inputs):
        applied = {s for s, _, _ in candidate.report.tuning.applied}
        calls.append(applied)
        ratio = 1.2 if loser in applied else 0.8
        return ModelTiming(5.0, 5.0 * ratio, [math.log(ratio)] * 10)

    return timer


def test_checks_in_the_model_keep_winners_mark_losers_and_resume(tmp_path):
    """Per-op checks in the model, with the model's timing replaced by a deterministic one:
    a group of both configs loses, is split (nothing stored: the budget allowed one check);
    the next run checks them one by one: the winner is applied and marked CONFIRMED, the
    loser marked REJECTED_IN_MODEL with its ratio and not applied, and the module's report
    says so per op; a third run times nothing (every verdict is in the database)."""
    from xgen_mlir.tuning.measure import MeasureSettings
    from xgen_mlir.tuning.search import APPLIED, CONFIRMED_ALONE, NOT_TRIED, REJECTED, tune

    torch.manual_seed(0)
    model = _TwoLayers().eval()
    x = torch.randn(56, 48)
    (win, win_desc), (lose, lose_desc) = _two_layer_signatures(model, x)
    host = HostIdentity.current(threads=1)
    db = tmp_path / "t.db"
    tiled = {"kind": "data-tiled"}
    with TuningDB(db) as tdb:
        for sig, desc in ((win, win_desc), (lose, lose_desc)):
            base = {"kind": "iree"}
            tdb.add(Record(sig, base, "ok", 1e-4, 1e-4, description=desc), host)
            tdb.add(
                Record(sig, tiled, "ok", 5e-5, 1e-4, description=desc, detail=CONFIRMED_ALONE), host
            )

    def run(timer, **kw):
        return tune(
            model,
            (x,),
            db=db,
            max_trials=0,  # no search: the records above are what it found
            settings=MeasureSettings(threads=1),
            progress=False,
            model_timer=timer,
            **CONTRACTIONS_ONLY,
            **kw,
        )

    calls: list[set[str]] = []
    first = run(_fake_timer(lose, calls), max_model_checks=1)
    assert calls and all(c == {win, lose} for c in calls)  # together; lost; split; no budget
    assert {v.status for v in first.verdicts.values()} == {NOT_TRIED}
    assert first.module.report.tuning.applied == []
    with TuningDB(db) as tdb:
        assert {r.detail for r in tdb.records() if r.config == tiled} == {CONFIRMED_ALONE}

    calls.clear()
    second = run(_fake_timer(lose, calls))
    assert second.model_checks == 2  # the winner alone, then the loser added
    assert calls == [{win}] * 2 + [{win, lose}] * 2 + [{win}] * 2  # the last: the final check
    assert second.verdicts[win].status == APPLIED and second.verdicts[lose].status == REJECTED
    assert second.verdicts[lose].ratio == pytest.approx(1.2)
    report = second.module.report.tuning
    assert [(s, c) for s, _, c in report.applied] == [(win, tiled)]
    (why,) = [w for d, w in report.untuned if d == lose_desc]
    assert why.startswith("rejected in the model") and "ratio 1.200" in why
    with TuningDB(db) as tdb:
        detail = {r.signature: r.detail for r in tdb.records() if r.config == tiled}
        assert detail[win] == CONFIRMED
        assert detail[lose].startswith(REJECTED_IN_MODEL) and "ratio 1.200" in detail[lose]
    np.testing.assert_allclose(
        np.asarray(second.module(x)), model(x).detach().numpy(), rtol=1e-4, atol=1e-5
    )
    # compile() applies what the model accepted, and only that
    module = xcompile(model, (x,), tuning_db=db, tuning_threads=1, **CONTRACTIONS_ONLY)
    assert [s for s, _, _ in module.report.tuning.applied] == [win]

    calls.clear()
    third = run(_fake_timer(lose, calls))
    assert calls == [{win}] * 2  # only the final untuned/tuned comparison: nothing re-checked
    assert third.model_checks == 0
    assert [s for s, _, _ in third.module.report.tuning.applied] == [win]
    assert third.verdicts[lose].status == REJECTED and "earlier run" in third.verdicts[lose].why


def test_model_timing_margin_follows_the_measured_noise():
    """Faster only beyond the noise of the rounds: the same median gain is accepted when the
    rounds agree and refused when they scatter."""
    import math

    from xgen_mlir.tuning.search import ModelTiming

    tight = [math.log(0.97 + 0.002 * (i % 3)) for i in range(20)]
    loose = [math.log(0.97 + 0.08 * ((-1) ** i) * (i % 4)) for i in range(20)]
    assert ModelTiming(5.0, 4.85, tight).faster()
    assert ModelTiming(5.0, 4.85, loose).ratio < 1 and not ModelTiming(5.0, 4.85, loose).faster()
    assert not ModelTiming(5.0, 5.5, [math.log(1.1)] * 20).faster()
    assert ModelTiming(5.0, 5.5, [math.log(1.1)] * 20).slower()
    assert not ModelTiming(5.0, 4.85, loose).slower()  # undecided: more rounds would follow
    merged = ModelTiming(5.0, 4.85, tight[:2]).merge(ModelTiming(5.0, 4.85, tight[2:]))
    assert len(merged.log_ratios) == 20 and merged.faster()


def test_in_model_timing_adds_rounds_while_undecided_and_wins_needs_the_gain():
    """Two sets at least; more while within the noise, up to the cap or the deadline; a
    verdict beyond the noise stops it. ``wins`` also needs the median gain: 2% faster beyond
    the noise is not the 3% an algorithm choice needs."""
    import math
    import time

    from xgen_mlir.tunedb import MIN_GAIN
    from xgen_mlir.tuning.search import ModelTiming, in_model_timing

    def timer(ratios: list[float], calls: list[int]):
        def timed(current, candidate, xs):
            calls.append(1)
            time.sleep(0.01)
            return ModelTiming(5.0, 5.0 * ratios[0], [math.log(r) for r in ratios])

        return timed

    scattered = [0.97 + 0.08 * ((-1) ** i) * (i % 4) for i in range(8)]
    calls: list[int] = []
    t = in_model_timing(None, None, (), 0.0, timer=timer(scattered, calls))
    assert len(calls) == 2 and not (t.faster() or t.slower()) and not t.wins(MIN_GAIN)
    calls = []
    t = in_model_timing(None, None, (), 60.0, time.perf_counter() + 0.2, timer(scattered, calls))
    assert 2 < len(calls) < 60 and len(t.log_ratios) == 8 * len(calls)
    calls = []
    t = in_model_timing(None, None, (), 60.0, timer=timer([0.98] * 8, calls))
    assert len(calls) == 2 and t.faster() and not t.wins(MIN_GAIN)
    t = in_model_timing(None, None, (), 60.0, timer=timer([0.9] * 8, []))
    assert t.wins(MIN_GAIN) and not t.slower()


def _one_config_waiting(tmp_path):
    """_TwoLayers, its input, and a database where the larger op's data-tiled config was
    confirmed alone (2x faster than IREE's) and waits for its check in the model:
    (model, x, signature, description, database, the config)."""
    from xgen_mlir.tuning.search import CONFIRMED_ALONE

    torch.manual_seed(0)
    model = _TwoLayers().eval()
    x = torch.randn(56, 48)
    (sig, desc), _ = _two_layer_signatures(model, x)
    host = HostIdentity.current(threads=1)
    db = tmp_path / "t.db"
    tiled = {"kind": "data-tiled"}
    with TuningDB(db) as tdb:
        tdb.add(Record(sig, {"kind": "iree"}, "ok", 1e-4, 1e-4, description=desc), host)
        tdb.add(
            Record(sig, tiled, "ok", 5e-5, 1e-4, description=desc, detail=CONFIRMED_ALONE), host
        )
    return model, x, sig, desc, db, tiled


def test_a_tuned_model_slower_as_a_whole_is_undone(tmp_path):
    """Each check passed, but the final comparison of the whole tuned model with the
    untuned one says slower beyond the noise: the untuned module comes back and the config
    accepted in this run is undecided again (a later run checks it again)."""
    import math

    from xgen_mlir.tuning.measure import MeasureSettings
    from xgen_mlir.tuning.search import CONFIRMED_ALONE, NOT_TRIED, ModelTiming, tune

    model, x, sig, _, db, tiled = _one_config_waiting(tmp_path)
    calls = []

    def timer(current, candidate, inputs):  # the check's two sets win, the final's lose
        calls.append(1)
        ratio = 0.8 if len(calls) <= 2 else 1.2
        return ModelTiming(5.0, 5.0 * ratio, [math.log(ratio)] * 10)

    result = tune(
        model,
        (x,),
        db=db,
        max_trials=0,
        settings=MeasureSettings(threads=1),
        progress=False,
        model_timer=timer,
        **CONTRACTIONS_ONLY,
    )
    assert len(calls) == 4 and result.model_checks == 1
    assert result.module.report.tuning.applied == []
    assert result.verdicts[sig].status == NOT_TRIED
    assert "as a whole was slower" in result.verdicts[sig].why
    with TuningDB(db) as tdb:
        assert {r.detail for r in tdb.records() if r.config == tiled} == {CONFIRMED_ALONE}


def test_contraction_checks_compile_with_the_choices_already_made(tmp_path):
    """tune() makes the algorithm choices first; every model the contraction checks compile
    (a scratch database of the configs on trial) carries this host's choice records too, so
    a layer the GEMM kernel won stays the kernel's in each check, as in the baseline."""
    from xgen_mlir.passes import winograd_convs as wc
    from xgen_mlir.tuning.choices import _graph_module
    from xgen_mlir.tuning.search import _compile_with

    torch.manual_seed(0)
    model = _TwoLayers().eval()
    x = torch.randn(56, 48)
    host = HostIdentity.current(threads=1)
    cands = wc.candidates(_graph_module(model, (x,), "cpu", {}).operation, offload=True)
    db = tmp_path / "t.db"
    with TuningDB(db) as tdb:  # the kernel won the first layer's choice, lost the second's
        for cand, seconds in zip(cands, (0.5e-3, 2e-3), strict=True):
            tdb.add(Record(cand.signature, wc.gemm_config(), "ok", seconds, 1e-3), host)
    # planned for AVX-512 on any host: on a narrower target the unmeasured layer's prior is
    # the kernel too (test_gemm_kernels.py), and the check is that records carry over
    options = {"target_options": {"offload": "none", "vector_bits": "512"}}
    with_choices = _compile_with(model, (x,), "cpu", host, {}, options, db)
    without = _compile_with(model, (x,), "cpu", host, {}, options)
    kernels = [
        m.report.rewrites.get("xgen-gemm-kernels", {}).get("gemm kernels", 0)
        for m in (with_choices, without)
    ]
    assert kernels == [1, 0], [m.report.rewrites for m in (with_choices, without)]
    np.testing.assert_allclose(
        np.asarray(with_choices(x)), model(x).detach().numpy(), rtol=1e-4, atol=1e-5
    )


def test_a_check_whose_configs_iree_rejects_is_a_compile_failure(tmp_path, monkeypatch):
    """IREE takes a model only without the xgen-apply-tuning step (the compile drops it and
    goes on untuned, with a warning): the check must not time that module as the config's,
    a fake win would be stored as CONFIRMED and break every later compile. The config is
    rejected in the model as not compiling, and nothing is timed."""
    from xgen_mlir.tuning import search
    from xgen_mlir.tuning.measure import MeasureSettings

    model, x, sig, _, db, tiled = _one_config_waiting(tmp_path)
    real = search._compile_with

    def rejecting(model, inputs, target, host, records, options, db_path=None):
        module = real(model, inputs, target, host, records, options, db_path)
        if records:
            module.report.dropped_steps = {"xgen-apply-tuning": "IREE from global-opt failed"}
        return module

    monkeypatch.setattr(search, "_compile_with", rejecting)
    calls: list[set[str]] = []
    result = search.tune(
        model,
        (x,),
        db=db,
        max_trials=0,
        settings=MeasureSettings(threads=1),
        progress=False,
        model_timer=_fake_timer("none", calls),
        # (no algorithm choice either: one measured faster by noise on a loaded host made a
        # new baseline module, whose final comparison was then timed)
        target_options={"gemm_kernels": "false", "offload": "none"},
    )
    assert result.choices == []
    assert calls == []  # nothing timed: neither the check nor a final comparison
    assert result.verdicts[sig].status == search.REJECTED
    assert "does not compile" in result.verdicts[sig].why
    with TuningDB(db) as tdb:
        (rec,) = [r for r in tdb.records() if r.config == tiled]
    assert rec.detail.startswith(REJECTED_IN_MODEL) and "IREE rejected" in rec.detail


A, B, C = "tensor<100x256xf32>", "tensor<256x256xf32>", "tensor<100x256xf32>"


def _accumulating(name: str, twice: bool = False) -> str:
    """A matmul that accumulates into its init argument (IREE computes it in that argument's
    buffer); ``twice``: a wrong variant that returns twice the sum."""
    ret = "%1" if twice else "%0"
    double = f"  %1 = arith.addf %0, %0 : {C}\n" if twice else ""
    return (
        f"func.func @{name}(%a: {A}, %b: {B}, %c: {C}) -> {C} {{\n"
        f"  %0 = linalg.matmul ins(%a, %b : {A}, {B}) outs(%c : {C}) -> {C}\n"
        f"{double}  return {ret} : {C}\n}}\n"
    )


def _accumulating_after(name: str) -> str:
    """The same sum as ``_accumulating``'s into a fresh buffer, the init argument added after
    (it leaves the argument as it was)."""
    return (
        f"func.func @{name}(%a: {A}, %b: {B}, %c: {C}) -> {C} {{\n"
        f"  %z = arith.constant 0.0 : f32\n  %e = tensor.empty() : {C}\n"
        f"  %f = linalg.fill ins(%z : f32) outs(%e : {C}) -> {C}\n"
        f"  %0 = linalg.matmul ins(%a, %b : {A}, {B}) outs(%f : {C}) -> {C}\n"
        f"  %1 = arith.addf %0, %c : {C}\n  return %1 : {C}\n}}\n"
    )


def test_checks_give_each_function_inputs_of_its_own(tmp_path):
    """IREE may compute a matmul's sum in its init argument's buffer. The child checks each
    function on fresh copies of the inputs and copies its output out, so a config that
    computes what ``base`` does matches it (with shared inputs: relative errors of 1, 2, the
    earlier calls' sums added in) and a wrong one does not (with outputs read in place, the
    same memory as ``base``'s: it matched)."""
    from xgen_mlir.tuning.measure import MeasureSettings, _compile, _run_child

    text = "".join(
        [
            _accumulating("base"),
            _accumulating("c0"),
            _accumulating("c1", twice=True),
            _accumulating_after("c2"),
        ]
    )
    flags = ["--iree-hal-target-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=host"]
    vmfb, err = _compile(text, flags, tmp_path, 300.0)
    assert vmfb is not None, err
    rng = np.random.default_rng(0)
    shapes = [(100, 256), (256, 256), (100, 256)]
    inputs = tmp_path / "inputs.npz"
    np.savez(inputs, *(rng.standard_normal(s).astype(np.float32) for s in shapes))
    names = ["base", "c0", "c1", "c2"]
    res, dead, why = _run_child(vmfb, inputs, names, MeasureSettings(threads=1, rounds=1))
    assert dead is None, why
    assert res["base"]["error"] == 0.0 and res["c0"]["error"] == 0.0
    assert res["c1"]["error"] > 0.5
    assert res["c2"]["error"] < 1e-5  # the sum in another order (with shared inputs: 0.5)
    assert set(res["times"]) == {"base", "c0", "c2"}  # the wrong one is never timed


@pytest.mark.parametrize("left", ["none", "one"])
def test_the_choices_get_the_whole_budget_when_no_contraction_is_left(tmp_path, monkeypatch, left):
    """A model whose every contraction a kernel or library took leaves the contraction search
    nothing: the algorithm choices (and their checks in the model) get the whole budget, not
    ``choices_share`` of it (a 3-minute MiniLM tune on AVX2 ended after 64 s, its changed
    choices rejected unchecked); with a contraction left they get their share."""
    from xgen_mlir.tuning import choices, search

    real_collect = search.collect_ops

    def collect(*args, **kw):
        ops, flags, module = real_collect(*args, **kw)
        return (ops[:1] if left == "one" else []), flags, module

    deadlines: list[float] = []

    def fake_choices(current, *args, deadline, **kw):
        deadlines.append(deadline)
        return [], current

    monkeypatch.setattr(search, "collect_ops", collect)
    monkeypatch.setattr(choices, "tune_choices", fake_choices)
    torch.manual_seed(0)
    x = torch.randn(56, 48)
    options = {"target_options": {"gemm_kernels": "false", "offload": "none"}}
    start = __import__("time").perf_counter()
    search.tune(
        _TwoLayers().eval(),
        (x,),
        budget_minutes=2.0,
        db=tmp_path / "t.db",
        max_trials=0,
        measure_model=False,
        progress=False,
        choices_share=0.25,
        **options,
    )
    (deadline,) = deadlines
    share = (deadline - start) / 120.0
    assert share > 0.95 if left == "none" else share < 0.5, share


def test_confirmation_measures_against_the_typical_baseline():
    """A confirming batch whose IREE time came out slow (0.225 ms against 0.145-0.155 in the
    op's other batches) would confirm a 1.5x that is noise: its candidates are measured
    against the op's median baseline instead (their speedups shrink to about 1.0x); a batch
    whose baseline is at or under the median keeps its own; failed results pass as they are."""
    from xgen_mlir.tuning.search import OpProgress, _against_typical_baseline

    op = OpProgress("sig", "desc", 1, None, "", [], {})  # type: ignore[arg-type]
    op.base_samples = [1.45e-4, 1.50e-4, 1.55e-4, 1.48e-4, 1.52e-4, 1.47e-4]
    slow = {
        "results": [
            {"config": {"a": 1}, "status": "ok", "seconds": 1.5e-4, "baseline_seconds": 2.25e-4},
            {
                "config": {"a": 2},
                "status": "wrong_numbers",
                "seconds": None,
                "baseline_seconds": None,
            },
        ]
    }
    got = _against_typical_baseline(op, slow)["results"]
    assert 1.47e-4 <= got[0]["baseline_seconds"] <= 1.52e-4
    assert got[0]["baseline_seconds"] / got[0]["seconds"] < 1.02  # no gain left to confirm
    assert got[1] == slow["results"][1]
    assert slow["results"][0]["baseline_seconds"] == 2.25e-4  # (the batch itself untouched)
    quiet = {
        "results": [{"config": {}, "status": "ok", "seconds": 1e-4, "baseline_seconds": 1.4e-4}]
    }
    assert _against_typical_baseline(op, quiet) == quiet
    assert _against_typical_baseline(op, {"error": "crashed"}) == {"error": "crashed"}
