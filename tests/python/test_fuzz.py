"""The fuzz campaign's short run (tests/fuzz/campaign.py): mutated lit MLIR, ONNX files and
.vmfb modules through xgen-opt, compile() and load()+call, each in its own process. None may
end in a traceback, a signal in a process we started, or a hang; no temp folder may be left."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))
import campaign


@pytest.mark.parametrize(
    "code, outcome",
    [
        ("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", "signal"),
        ("raise IndexError('deep inside')", "traceback"),
        ("import time; time.sleep(30)", "hang"),
        ("raise SystemExit('xgen-opt: error: bad input')", "clean_error"),
        ("pass", "accepted"),
    ],
)
def test_the_campaign_tells_each_outcome_apart(tmp_path, code, outcome):
    rc, _, err, timed_out = campaign._run([sys.executable, "-c", code], {}, tmp_path, 3)
    assert campaign._outcome(rc, err, timed_out)[0] == outcome


def test_mutations_are_deterministic_per_seed():
    seed = campaign.mlir_seeds()[0]
    runs = [
        [
            m(campaign.random.Random(f"0:{i}"), seed.data)
            for i, m in enumerate(campaign.TEXT_MUTATIONS)
        ]
        for _ in range(2)
    ]
    assert runs[0] == runs[1]
    assert all(data != seed.data for _, data in runs[0])


@pytest.mark.slow
def test_short_fuzz_run_has_no_tracebacks_signals_hangs_or_leftovers(tmp_path):
    run = campaign.Campaign(tmp_path, seed=0, jobs=1, progress=False)
    run.run(20)  # every kind of case (at least 3 each): xgen-opt, compile-mlir, -onnx, run-vmfb
    summary = run.summary()
    totals = summary["totals"]
    table = run.table()
    assert totals["traceback"] == totals["signal"] == totals["hang"] == 0, table
    assert summary["temp_leftovers"] == [], table
    assert totals["clean_error"] > 0, table  # the mutants reached the checks that refuse
    assert set(summary["counts"]) == set(campaign.KINDS), table
    # Whether some of 20 mutants of seed 0 are accepted depends on the corpus (each lit file
    # added moves the draws); the accepting path is checked on the seeds themselves.
    controls = run.controls()
    assert controls and all(c.outcome == "accepted" for c in controls), controls
