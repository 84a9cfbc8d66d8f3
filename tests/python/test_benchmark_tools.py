"""The profiling tools under benchmarks/: ONNX Runtime's per-node profile, its pairing with
our per-dispatch profile, and the scheduling policy of the profiled child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import harness  # noqa: E402
import ort_node_profile  # noqa: E402
import profile_dispatches  # noqa: E402


def _node(op: str, ms: float, name: str) -> dict:
    return {"node": name, "op": op, "ms": ms}


def _dispatch(kind: str, ms: float, key: str) -> dict:
    return {"kind": kind, "ms": ms, "key": key}


def test_pairs_compute_nodes_with_compute_dispatches_in_order():
    nodes = [_node("Conv", 0.4, "c0"), _node("Flatten", 0.01, "f"), _node("Gemm", 0.2, "g")]
    ours = {
        "rows": [
            _dispatch("transpose", 0.03, "t"),
            _dispatch("conv (dense)", 0.3, "d_conv"),
            _dispatch("fc / gemv (M=1)", 0.1, "d_fc"),
        ]
    }
    paired = ort_node_profile.pair(nodes, ours)
    assert [(n["node"], r["key"]) for n, r in paired] == [("c0", "d_conv"), ("g", "d_fc")]


def test_does_not_pair_lists_of_different_length():
    nodes = [_node("Conv", 0.4, "c0"), _node("Conv", 0.2, "c1")]
    ours = {"rows": [_dispatch("matmul (1x1 conv, fc, linear)", 0.3, "d")]}
    why = ort_node_profile.pair(nodes, ours)
    assert isinstance(why, str) and "2 ORT compute nodes against 1" in why


def test_profiles_an_onnx_file_and_pairs_it(tmp_path):
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 1)
    ).eval()
    path = tmp_path / "m.onnx"
    with torch.no_grad():
        torch.onnx.export(
            model, (torch.randn(1, 3, 16, 16),), str(path), opset_version=17, dynamo=False
        )
    ours = tmp_path / "ours.json"
    ours.write_text(
        json.dumps(
            {
                "device": "local-task",
                "threads": 1,
                "rows": [
                    _dispatch("conv (dense)", 0.01, "main_dispatch_0_conv"),
                    _dispatch("matmul (1x1 conv, fc, linear)", 0.01, "main_dispatch_1_matmul"),
                ],
            }
        )
    )
    out = tmp_path / "ort.json"
    rc = ort_node_profile.main(
        [
            str(path),
            "--threads",
            "1",
            "--iters",
            "3",
            "--calls",
            "5",
            "--against",
            str(ours),
            "--json",
            str(out),
        ]
    )
    assert rc == 0
    result = json.loads(out.read_text())
    assert result["node_sum_ms"] > 0 and result["end_to_end_ms"]["calls"] == 5
    assert sum(1 for n in result["nodes"] if n["op"] in ort_node_profile.COMPUTE) == 2
    assert [p["dispatch"] for p in result["paired"]] == [
        "main_dispatch_0_conv",
        "main_dispatch_1_matmul",
    ]


def test_missing_onnx_file_is_reported(tmp_path):
    with pytest.raises(SystemExit, match="no such file"):
        ort_node_profile.main([str(tmp_path / "absent.onnx")])


@pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="Linux scheduling policies only")
def test_profiled_child_runs_as_a_batch_thread():
    probe = "import os; print(os.sched_getscheduler(0))"
    r = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        preexec_fn=profile_dispatches._as_batch_thread,
        check=True,
    )
    assert int(r.stdout) == os.SCHED_BATCH


def test_time_blocks_rotates_and_settles_before_every_block(monkeypatch):
    """Each block follows a pause (another runtime's spinning threads must not be billed to
    the next system), and the first system of a round rotates."""
    events: list[str] = []
    monkeypatch.setattr(harness.time, "sleep", lambda s: events.append(f"sleep {s}"))
    systems = {"a": lambda: events.append("a"), "b": lambda: events.append("b")}
    out = harness.time_blocks(systems, rounds=2, block=2, warmup=1, settle_s=0.25)
    timed = events[2:]  # after one warm-up call each
    assert timed == [
        "sleep 0.25",
        "a",
        "a",
        "sleep 0.25",
        "b",
        "b",
        "sleep 0.25",
        "b",
        "b",
        "sleep 0.25",
        "a",
        "a",
    ]
    assert out["a"]["runs"] == out["b"]["runs"] == 4
    assert out["a"]["min_ms"] <= out["a"]["median_ms"] <= out["a"]["p90_ms"] + 1e-9


def test_results_files_name_the_host_and_its_measured_rates(tmp_path, monkeypatch):
    """Every results file says what CPU it ran on and what a matmul reaches there, measured in
    the run (never a constant from another machine); the HTML report shows the same."""
    import host

    monkeypatch.setattr(
        host, "matmul_gflops", lambda dtype, threads, n=256, calls=2: 12.5 if dtype else None
    )
    host.describe.cache_clear()
    out = tmp_path / "r.json"
    harness.write_results(out, {"rows": [1]}, threads=1)
    rec = json.loads(out.read_text())
    assert rec["rows"] == [1]
    assert rec["host"]["cpu_model"] and rec["host"]["threads"] == 1
    # bf16 is measured only where the CPU has a native bf16 GEMM (emulated, it takes minutes),
    # int8 where it has an exact int8 dot product
    native = host.has_any(host.NATIVE_BF16_FLAGS)
    want_bf16 = 12.5 if native else None
    want_int8 = 12.5 if host.has_any(host.EXACT_INT8_FLAGS) else None
    rates = {"float32": 12.5, "bfloat16": want_bf16, "int8": want_int8}
    assert rec["host"]["matmul_gflops"] == rates
    assert set(rec["host"]["isa_flags"]) <= set(host.ISA_OF_INTEREST)
    from xgen_mlir.report import render

    page = render("m", {"host": rec["host"], "systems": {}})
    assert "float32 12.5 GFLOP/s" in page and rec["host"]["cpu_model"] in page
    host.describe.cache_clear()


def test_matmul_rate_is_measured_here():
    import host

    rate = host.matmul_gflops("float32", threads=1, n=128, calls=2)
    assert rate is not None and rate > 0.1
    rate = host.matmul_gflops("int8", threads=1, n=128, calls=2)  # int8 sums in int32
    assert rate is not None and rate > 0.1


def test_dispatch_profile_counts_the_submissions_of_a_host_loop():
    """A model whose entry loops on the host (one submission per iteration) has more than
    one submission per call: those dispatches are reported per call, not dropped."""

    def event(sub: int, index: int, key: str, us: float) -> dict:
        start = sub * 1_000_000 + index * 1000
        return {
            "submission_id": sub,
            "command_index": index,
            "key": key,
            "workgroup_count": [1, 1, 1],
            "duration_ns": int(us * 1000),
            "tile_duration_sum_ns": int(us * 1000),
            "start_host_time_ns": start,
            "end_host_time_ns": start + int(us * 1000),
        }

    events, sub = [], 0
    for _call in range(4):
        sub += 1
        events += [event(sub, i, k, 100) for i, k in enumerate(["conv_a", "conv_b", "fc_c"])]
        for _step in range(5):  # the loop: 5 iterations of 2 dispatches
            sub += 1
            events += [event(sub, 0, "loop_matmul", 50), event(sub, 1, "loop_gates", 10)]
    agg = profile_dispatches.aggregate(events, {})
    assert [r["key"] for r in agg["rows"]] == ["conv_a", "conv_b", "fc_c"]
    other = {r["key"]: r for r in agg["other_submissions"]}
    assert set(other) == {"loop_matmul", "loop_gates"}
    assert other["loop_matmul"]["per_call"] == 5
    assert abs(other["loop_matmul"]["ms"] - 0.25) < 1e-9


def test_kernel_ab_times_two_variants_both_link_orders_and_compares_outputs(tmp_path):
    """ab_bcsr_kernels.py: one binary per link order, the same numbers from both variants
    where only the chunk size differs, and a modified generator loaded from a file."""
    import ab_bcsr_kernels

    variant = tmp_path / "variant.py"
    variant.write_text((Path(ab_bcsr_kernels.in_tree.__file__)).read_text())
    out = tmp_path / "ab.json"
    argv = ["--shapes", "16x64x64", "--rounds", "3", "--iters", "1", "--json", str(out)]
    assert ab_bcsr_kernels.main([*argv, "--b", "chunk_bytes=4096", "--b-source", str(variant)]) == 0
    result = json.loads(out.read_text())
    assert [r["linked first"] for r in result["rows"]] == ["A", "B"]
    assert all(r["max |A - B|"] == 0 and r["B/A median"] > 0 for r in result["rows"])
    assert result["b"] == {"fields": {"chunk_bytes": "4096"}, "source": str(variant)}
    assert result["host"]["cpu_model"]
