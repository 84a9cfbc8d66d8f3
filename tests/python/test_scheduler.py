"""The co-scheduling runtime (xgen_mlir.runtime.scheduler): order, preemption, aging, EDF,
fair share, cancellation, errors, shutdown, task graphs, Vulkan placement, observability and
the xgen-serve CLI. Orders and counts only, never wall-clock thresholds: a "gate" model (a
Python callable that blocks on an Event) holds the only worker while requests queue up, so
the order they start in is decided by the policy alone."""

from __future__ import annotations

import json
import math
import threading
from concurrent.futures import CancelledError

import numpy as np
import pytest
import torch
from conftest import check_close
from targets_util import need_vulkan

import xgen_mlir
from xgen_mlir.errors import InputMismatchError, UnknownNameError
from xgen_mlir.models import vision
from xgen_mlir.runtime.scheduler import (
    DeadlineMissedError,
    FairShare,
    Scheduler,
    SchedulerClosedError,
    TaskGraph,
)
from xgen_mlir.runtime.scheduling.policies import EarliestDeadlineFirst, PriorityAging


@pytest.fixture(scope="module")
def mlp():
    torch.manual_seed(0)
    model = vision.mlp().eval()
    x = vision.random_input("mlp")
    with torch.no_grad():
        want = model(x).numpy()
    return model, x.numpy(), want, xgen_mlir.compile(model, (x,))


@pytest.fixture(scope="module")
def head():
    """A second tiny model (Linear 10 -> 3) for the task graph."""
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(10, 3), torch.nn.Tanh()).eval()
    x = torch.randn(1, 10)
    return model, xgen_mlir.compile(model, (x,))


@pytest.fixture(scope="module")
def mlp_vulkan(mlp):
    """The mlp's Vulkan build (Mesa's llvmpipe in CI)."""
    need_vulkan()
    model, x, _, _ = mlp
    return xgen_mlir.compile(model, (torch.from_numpy(x),), target="vulkan")


class Gate:
    """A model that blocks until opened: it holds a worker while others queue."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.open = threading.Event()

    def __call__(self, *args):
        self.entered.set()
        assert self.open.wait(60), "gate never opened"
        return np.zeros(1, np.float32)


def _started(sched, model=None):
    evs = [e for e in sched.events() if e["started"] is not None]
    evs.sort(key=lambda e: (e["started"], e["id"]))
    return [e for e in evs if model is None or e["model"] == model]


def _hold(sched, gate, name="gate", **kw):
    fut = sched.submit(name, **kw)
    assert gate.entered.wait(30)
    return fut


def test_priority_order_and_results(mlp):
    _, x, want, module = mlp
    gate = Gate()
    with Scheduler("priority", workers=1, aging_rate=0.0) as s:
        s.add_model("gate", gate, priority=10)
        s.add_model("low", module, priority=0)
        s.add_model("high", module, priority=5)
        g = _hold(s, gate)
        futs = []
        for _ in range(3):
            futs.append(("low", s.submit("low", x)))
            futs.append(("high", s.submit("high", x)))
        gate.open.set()
        g.result(30)
        for _, f in futs:
            check_close(f.result(30), want, atol=1e-5, rtol=1e-5, what="scheduled mlp")
    order = [e["model"] for e in _started(s) if e["model"] != "gate"]
    assert order == ["high"] * 3 + ["low"] * 3
    st = s.stats()["models"]
    assert st["low"]["completed"] == 3 and st["high"]["completed"] == 3


def test_torch_in_torch_out(mlp):
    _, x, want, module = mlp
    with Scheduler() as s:
        s.add_model("m", module)
        out = s.submit("m", torch.from_numpy(x)).result(30)
    assert isinstance(out, torch.Tensor)
    check_close(out.numpy(), want, atol=1e-5, rtol=1e-5, what="torch in, torch out")


def test_higher_band_preempts_running_lower_band(mlp):
    """A high-priority request starts while a low-priority one holds the only worker (the low
    one keeps running, on lower-OS-priority threads) and finishes before it."""
    _, x, want, module = mlp
    gate = Gate()
    with Scheduler("priority", workers=1, aging_rate=0.0) as s:
        s.add_model("gate", gate, priority=0)
        s.add_model("high", module, priority=5)
        g = _hold(s, gate)
        out = s.submit("high", x).result(30)  # would hang without preemption
        assert not g.done()
        gate.open.set()
        g.result(30)
    check_close(out, want, atol=1e-5, rtol=1e-5, what="preempting request")
    high = _started(s, "high")[0]
    gate_ev = _started(s, "gate")[0]
    assert high["preempted"] == [gate_ev["id"]]
    assert high["band"] < gate_ev["band"]
    assert s.stats()["preemptions"] == 1


def test_same_band_waits_and_fair_never_preempts(mlp):
    _, x, _, module = mlp
    for policy, prio in (("priority", 0), ("fair", 5)):
        gate = Gate()
        with Scheduler(policy, workers=1) as s:
            s.add_model("gate", gate, priority=0)
            s.add_model("m", module, priority=prio)
            g = _hold(s, gate)
            f = s.submit("m", x)
            with pytest.raises(TimeoutError):
                f.result(0.3)  # cannot start: same band (priority) / no preemption (fair)
            gate.open.set()
            g.result(30)
            f.result(30)
        assert _started(s)[-1]["model"] == "m" and s.stats()["preemptions"] == 0


def test_one_model_twice_at_once_gets_two_contexts(mlp):
    """Requests of one model on one executor may run at once (two free workers, one each):
    each gets its own VM context (a context is not for concurrent calls), so every result is
    that of its own input."""
    model, x, _, module = mlp
    gate = Gate()
    with Scheduler("priority", workers=3) as s:
        s.add_model("gate", gate, priority=1)
        s.add_model("m", module, max_workers=1)
        g = _hold(s, gate)
        futs = [s.submit("m", x * k) for k in range(1, 21)]
        outs = [f.result(60) for f in futs]
        gate.open.set()
        g.result(30)
    with torch.no_grad():
        for k, out in zip(range(1, 21), outs, strict=True):
            ref = model(torch.from_numpy(x * k)).numpy()
            check_close(out, ref, atol=1e-4, rtol=1e-4, what=f"request {k}")
    assert all(e["workers"] == 1 for e in _started(s, "m"))


def test_lower_nice_executors_and_worker_caps():
    s = Scheduler("priority", workers=2)
    try:
        s.add_model("a", lambda: 0, priority=1)
        s.add_model("b", lambda: 0, priority=0)
        one = s._pool.get(1, 0)
        two = s._pool.get(2, 1)
        from xgen_mlir.runtime.scheduling.executors import _comm

        assert sum(_comm(t).startswith("iree-worker") for t in one.thread_ids) == 1
        assert sum(_comm(t).startswith("iree-worker") for t in two.thread_ids) == 2
        assert s._pool.get(2, 1) is two  # made once, reused
        import os

        base = os.getpriority(os.PRIO_PROCESS, 0)
        if base + 10 <= 19:
            assert two.nice == base + 10
            assert all(os.getpriority(os.PRIO_PROCESS, t) == base + 10 for t in two.thread_ids)
    finally:
        s.shutdown()


def test_lowest_band_runs_idle_and_a_call_thread_takes_its_band():
    """Three priority levels: band 1 niced, band 2 (the lowest) SCHED_IDLE; a thread that
    waits for a call takes its executor's nice. idle_band=False keeps nice 19 only."""
    import os

    from xgen_mlir.runtime.scheduling.executors import take_priority_of

    for idle_band in (True, False):
        s = Scheduler("priority", workers=2, idle_band=idle_band)
        try:
            for p in (2, 1, 0):
                s.add_model(f"p{p}", lambda: 0, priority=p)
            top, mid, low = (s._pool.get(1, b) for b in (0, 1, 2))
            policies = {os.sched_getscheduler(t) for t in low.thread_ids}
            assert low.idle is idle_band
            assert policies == ({os.SCHED_IDLE} if idle_band else {os.SCHED_OTHER})
            assert not mid.idle and not top.idle
            assert {os.sched_getscheduler(t) for t in mid.thread_ids} == {os.SCHED_OTHER}
            assert [e["idle"] for e in s._pool.describe()] == [False, False, idle_band]
            seen = []

            def call_thread(ex=mid, seen=seen):
                take_priority_of(ex)
                seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

            t = threading.Thread(target=call_thread)
            t.start()
            t.join()
            assert mid.nice is not None and seen == [mid.nice]
            assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) < mid.nice
        finally:
            s.shutdown()


def test_requests_at_once_get_their_own_executors_and_cores(mlp):
    """Two requests of one (workers, band) running at once never share an executor's threads,
    and each request's workers are pinned to cores of their own, within this process's
    affinity mask."""
    import os

    _, x, _, module = mlp
    s = Scheduler("priority", workers=2)
    try:
        s.add_model("m", module, max_workers=1)
        k1, a = s._pool.acquire(1, 0)
        k2, b = s._pool.acquire(1, 0)
        assert k1 != k2 and a is not b
        s._pool.release(k1)
        assert s._pool.acquire(1, 0) == (k1, a)  # a free one is reused
        s._pool.release(k1)
        s._pool.release(k2)
        futs = [s.submit("m", x) for _ in range(4)]
        for f in futs:
            f.result(60)
    finally:
        s.shutdown()
    cores = [e["cores"] for e in _started(s, "m")]
    mask = sorted(os.sched_getaffinity(0))
    if len(mask) < 2:  # fewer cores than workers: nothing is pinned
        assert all(c is None for c in cores)
        return
    assert all(c is not None and len(c) == 1 and c[0] in mask[:2] for c in cores)
    pinned = {tuple(ex["cores"]) for ex in s._pool.describe() if ex["cores"] is not None}
    assert pinned <= {(c,) for c in mask[:2]}


def test_warm_up_freezes_the_collector_until_shutdown(mlp):
    """A full collection would stop every request: warm_up freezes what is alive, shutdown
    lets it be collected again; freeze_gc=False leaves the collector alone."""
    import gc

    _, x, _, module = mlp
    assert gc.get_freeze_count() == 0
    with Scheduler("priority", workers=1) as s:
        s.add_model("m", module)
        s.warm_up()
        assert gc.get_freeze_count() > 0
        s.submit("m", x).result(60)
    assert gc.get_freeze_count() == 0
    with Scheduler("priority", workers=1) as s:
        s.add_model("m", module)
        s.warm_up(freeze_gc=False)
        assert gc.get_freeze_count() == 0


def test_aging_orders_an_old_low_request_first(mlp):
    _, x, _, module = mlp
    orders = {}
    for rate in (0.0, 1000.0):  # 1000 levels/s: 5 levels after 5 ms of waiting
        gate = Gate()
        with Scheduler("priority", workers=1, aging_rate=rate) as s:
            s.add_model("gate", gate, priority=10)
            s.add_model("low", module, priority=0)
            s.add_model("high", module, priority=5)
            g = _hold(s, gate)
            s.submit("low", x)
            threading.Event().wait(0.05)  # the low request has waited >= 50 ms
            for _ in range(3):
                s.submit("high", x)
            gate.open.set()
            g.result(30)
        orders[rate] = [e["model"] for e in _started(s) if e["model"] != "gate"]
    assert orders[0.0] == ["high"] * 3 + ["low"]
    assert orders[1000.0] == ["low"] + ["high"] * 3


def test_no_starvation_under_a_continuous_high_priority_stream(mlp):
    """One worker, a high-priority request always queued: with aging the low one finishes
    while the stream goes on (counted in high completions, bounded by the cap)."""
    _, x, _, module = mlp
    cap = 400
    with Scheduler("priority", workers=1, aging_rate=200.0) as s:
        s.add_model("low", module, priority=0)
        s.add_model("high", module, priority=5)
        done_high = [0]
        low_done = threading.Event()

        def again(_=None):
            done_high[0] += 1
            if not low_done.is_set() and done_high[0] < cap:
                s.submit("high", x).add_done_callback(again)

        s.submit("high", x).add_done_callback(again)
        s.submit("high", x).add_done_callback(again)  # two in flight: one always queued
        low = s.submit("low", x)
        low.add_done_callback(lambda _: low_done.set())
        low.result(60)
        highs_before_low = done_high[0]
    assert highs_before_low < cap


def test_edf_order(mlp):
    _, x, _, module = mlp
    gate = Gate()
    with Scheduler("edf", workers=1) as s:
        s.add_model("gate", gate, deadline=600.0)  # never itself late, however loaded the host
        s.add_model("m", module)
        g = _hold(s, gate)
        ids = {}
        for d in (5.0, 1.0, None, 3.0):
            ids[s.submit("m", x, deadline=d)] = d
        gate.open.set()
        g.result(30)
        for f in ids:
            f.result(30)
    deadlines = [e["deadline"] for e in _started(s, "m")]
    rel = [
        None if d is None else round(d - e["submitted"], 3)
        for e, d in zip(_started(s, "m"), deadlines, strict=True)
    ]
    assert rel == [1.0, 3.0, 5.0, None]


def test_fair_share_alternates_and_charges_by_weight(mlp):
    _, x, _, module = mlp
    gate = Gate()
    with Scheduler("fair", workers=1) as s:
        s.add_model("gate", gate)
        s.add_model("a", module)
        s.add_model("b", module)
        g = _hold(s, gate)
        futs = [s.submit("a", x) for _ in range(3)] + [s.submit("b", x) for _ in range(3)]
        gate.open.set()
        g.result(30)
        for f in futs:
            f.result(30)
    first_two = {e["model"] for e in _started(s)[1:3]}
    assert first_two == {"a", "b"}  # b does not wait for all of a's requests
    # The accounting itself: service per weight decides, and a returning model cannot bank.
    p = FairShare()
    from types import SimpleNamespace as NS

    p.charge(NS(model="a", weight=1.0), 1.0, 2)
    p.charge(NS(model="b", weight=4.0), 1.0, 2)
    assert p.service == {"a": 2.0, "b": 0.5}
    p.activate("c", ["a", "b"])
    assert p.service["c"] == 0.5


def test_cancel_a_queued_request(mlp):
    _, x, want, module = mlp
    gate = Gate()
    with Scheduler(workers=1) as s:
        s.add_model("gate", gate, priority=10)
        s.add_model("m", module)
        g = _hold(s, gate)
        futs = [s.submit("m", x) for _ in range(3)]
        assert futs[1].cancel()
        gate.open.set()
        g.result(30)
        check_close(futs[0].result(30), want, atol=1e-5, rtol=1e-5, what="first")
        check_close(futs[2].result(30), want, atol=1e-5, rtol=1e-5, what="third")
    with pytest.raises(CancelledError):
        futs[1].result()
    m = s.stats()["models"]["m"]
    assert (m["completed"], m["cancelled"]) == (2, 1)
    assert len(_started(s, "m")) == 2


def test_drop_late_sheds_requests_past_their_deadline(mlp):
    _, x, want, module = mlp
    gate = Gate()
    with Scheduler("edf", workers=1, drop_late=True) as s:
        s.add_model("gate", gate, deadline=600.0)  # never itself late, however loaded the host
        s.add_model("m", module)
        g = _hold(s, gate)
        late = s.submit("m", x, deadline=0.01)
        on_time = s.submit("m", x, deadline=600.0)
        no_deadline = s.submit("m", x)
        threading.Event().wait(0.05)  # the first one's deadline has passed
        gate.open.set()
        g.result(30)
        with pytest.raises(DeadlineMissedError, match="deadline passed"):
            late.result(30)
        for f in (on_time, no_deadline):
            check_close(f.result(30), want, atol=1e-5, rtol=1e-5, what="kept")
    m = s.stats()["models"]["m"]
    assert (m["completed"], m["dropped_late"], m["deadline_misses"]) == (2, 1, 1)
    assert len(_started(s, "m")) == 2


def test_a_model_that_raises(mlp):
    _, x, want, module = mlp

    def broken(*_):
        raise ValueError("broken model")

    with Scheduler(workers=1) as s:
        s.add_model("bad", broken)
        s.add_model("good", module)
        futs = [s.submit("bad"), s.submit("good", x), s.submit("bad"), s.submit("good", x)]
        for f in futs[0::2]:
            with pytest.raises(ValueError, match="broken model"):
                f.result(30)
        for f in futs[1::2]:
            check_close(f.result(30), want, atol=1e-5, rtol=1e-5, what="good after bad")
    st = s.stats()["models"]
    assert (st["bad"]["failed"], st["good"]["completed"]) == (2, 2)


def test_bad_requests_are_refused_at_submit(mlp):
    _, x, _, module = mlp
    with Scheduler() as s:
        s.add_model("m", module)
        with pytest.raises(InputMismatchError, match="expected shape"):
            s.submit("m", np.zeros((2, 3), np.float32))
        with pytest.raises(UnknownNameError, match="nope"):
            s.submit("nope", x)
        with pytest.raises(xgen_mlir.XGenError, match="already registered"):
            s.add_model("m", module)


def test_shutdown_with_requests_in_flight(mlp):
    _, x, want, module = mlp
    # Cancel what is queued: every future resolves, the running one with its result.
    gate = Gate()
    s = Scheduler(workers=1)
    s.add_model("gate", gate, priority=10)
    s.add_model("m", module)
    g = _hold(s, gate)
    futs = [s.submit("m", x) for _ in range(5)]
    assert s.shutdown(wait=False, cancel_pending=True) is False  # the gate still runs
    with pytest.raises(SchedulerClosedError):
        s.submit("m", x)
    gate.open.set()
    assert s.shutdown(wait=True, timeout=60)
    assert g.result(0) is not None
    assert all(f.cancelled() for f in futs)
    # Drain: queued requests still run.
    gate = Gate()
    s = Scheduler(workers=1)
    s.add_model("gate", gate, priority=10)
    s.add_model("m", module)
    g = _hold(s, gate)
    futs = [s.submit("m", x) for _ in range(5)]
    threading.Timer(0.1, gate.open.set).start()
    assert s.shutdown(wait=True, timeout=60)
    for f in futs:
        check_close(f.result(0), want, atol=1e-5, rtol=1e-5, what="drained")


def test_task_graph_fan_out_with_end_to_end_deadline(mlp, head):
    _, x, want, module = mlp
    hmodel, hmodule = head
    with Scheduler("edf") as s:
        s.add_model("features", module)
        s.add_model("head", hmodule)
        g = TaskGraph(s, "pipeline", deadline=5.0)
        g.node("features", "features")
        g.node(
            "head",
            "head",
            after=["features"],
            inputs=lambda features: [(features,), (features * 2).astype(np.float32)],
        )
        with pytest.raises(xgen_mlir.XGenError, match="undeclared"):
            g.node("x", "head", after=["later"], inputs=lambda later: later)
        runs = [g.submit(x) for _ in range(3)]
        outs = [r.result(60) for r in runs]
    with torch.no_grad():
        want_heads = [hmodel(torch.from_numpy(want * k)).numpy() for k in (1, 2)]
    for out in outs:
        check_close(out["features"], want, atol=1e-5, rtol=1e-5, what="graph features")
        assert len(out["head"]) == 2
        for got, w in zip(out["head"], want_heads, strict=True):
            check_close(got, w, atol=1e-5, rtol=1e-5, what="graph head")
    ev = s.events()
    assert sum(e["graph"] == "pipeline" for e in ev) == 9  # 3 runs x (1 + 2 fan-out)
    # Every request of a run carries the run's end-to-end deadline; heads start after features.
    for e in ev:
        assert e["deadline"] is not None
    gst = s.stats()["graphs"]["pipeline"]
    assert gst["completed"] == 3 and gst["failed"] == 0


def test_task_graph_error_reaches_the_run(mlp):
    _, x, _, module = mlp

    def broken(*_):
        raise RuntimeError("crop failed")

    with Scheduler() as s:
        s.add_model("features", module)
        s.add_model("crop", broken)
        g = TaskGraph(s, "p")
        g.node("features", "features").node(
            "crop", "crop", after=["features"], inputs=lambda features: features
        )
        with pytest.raises(RuntimeError, match="crop failed"):
            g.submit(x).result(60)
        assert s.stats()["graphs"]["p"]["failed"] == 1


def test_observability_json_and_timeline(mlp, tmp_path):
    _, x, _, module = mlp
    with Scheduler(workers=1) as s:
        s.add_model("m", module, deadline=60.0)
        for f in [s.submit("m", x) for _ in range(4)]:
            f.result(30)
        text = s.text()
        js = s.write_stats(tmp_path / "stats.json")
        page = s.write_timeline(tmp_path / "t.html")
    data = json.loads(js.read_text())
    m = data["models"]["m"]
    assert m["completed"] == 4 and m["deadlines"] == 4 and m["deadline_misses"] == 0
    assert m["latency_ms"]["p50"] <= m["latency_ms"]["p99"] <= m["latency_ms"]["max"]
    assert m["queue_depth_max"] >= 1 and len(data["events"]) == 4
    assert "m" in text and "p99 ms" in text
    html = page.read_text()
    assert html.count("<rect") == 2 * 4 and "<script" not in html and "<svg" in html


def test_vulkan_placement(mlp, mlp_vulkan):
    _, x, want, cpu_module = mlp
    vk = mlp_vulkan
    with Scheduler() as s:
        s.add_model("gpu", vk)
        s.add_model("cpu", cpu_module)
        futs = [s.submit("gpu", x), s.submit("cpu", x), s.submit("gpu", x)]
        outs = [f.result(120) for f in futs]
    for out in outs:
        check_close(out, want, atol=1e-5, rtol=1e-5, what="vulkan placement")
    lanes = {e["model"]: e["lane"] for e in s.events()}
    assert lanes == {"gpu": "vulkan", "cpu": "cpu"}
    with Scheduler() as s, pytest.raises(xgen_mlir.XGenError, match="vulkan"):
        s.add_model("wrong", cpu_module, placement="vulkan")


def test_xgen_serve_cli(mlp, tmp_path, capsys):
    from xgen_mlir.tools.xgen_serve import main

    _, _, _, module = mlp
    module.save(tmp_path / "mlp.vmfb")
    (tmp_path / "s.toml").write_text(
        'policy = "priority"\nduration = 1\n'
        '[[models]]\nname = "fast"\npath = "mlp.vmfb"\nrate = 20\npriority = 1\n'
        "deadline_ms = 1000\n"
        '[[models]]\nname = "batch"\npath = "mlp.vmfb"\nbackground = true\n'
    )
    rc = main(
        [
            str(tmp_path / "s.toml"),
            "--no-live",
            "--json",
            str(tmp_path / "o.json"),
            "--html",
            str(tmp_path / "o.html"),
        ]
    )
    assert rc == 0
    data = json.loads((tmp_path / "o.json").read_text())
    assert data["models"]["fast"]["completed"] >= 1 and data["models"]["batch"]["completed"] >= 1
    assert data["models"]["fast"]["failed"] == 0
    assert "<svg" in (tmp_path / "o.html").read_text()
    assert "fast" in capsys.readouterr().out
    (tmp_path / "bad.toml").write_text('polcy = "x"\n[[models]]\nname = "a"\n')
    assert main([str(tmp_path / "bad.toml"), "--no-live"]) == 2
    err = capsys.readouterr().err
    assert "3 problem(s)" in err and "unknown key 'polcy'" in err and "'path'" in err


def test_priority_policy_unit():
    from types import SimpleNamespace as NS

    p = PriorityAging(aging_rate=1.0)
    levels = [5.0, 2.0, 0.0]
    old, new = NS(priority=0.0, submitted=0.0, id=0), NS(priority=5.0, submitted=9.0, id=1)
    assert p.key(old, 9.5) < p.key(new, 9.5)  # aged 9.5 levels: starts first
    assert [p.band(r, 9.5, levels) for r in (old, new)] == [2, 0]  # bands stay by base priority
    assert p.band(NS(priority=3.0), 0.0, levels) == 1


def _stream_with_one_background(module, x, slack, cap):
    """One worker; deadline requests (far deadlines: never late, however loaded the host) with
    one always queued; one request without a deadline submitted into the stream. Returns the
    started events in start order."""
    with Scheduler("edf", workers=1, default_slack=slack) as s:
        s.add_model("stream", module, deadline=600.0)
        s.add_model("background", module)
        done = [0]
        bg_done = threading.Event()

        def again(_=None):
            done[0] += 1
            if not bg_done.is_set() and done[0] < cap:
                s.submit("stream", x).add_done_callback(again)

        s.submit("stream", x).add_done_callback(again)
        s.submit("stream", x).add_done_callback(again)  # two in flight: one always queued
        bg = s.submit("background", x)
        bg.add_done_callback(lambda _: bg_done.set())
        bg.result(120)
    return _started(s)


def test_edf_no_deadline_request_finishes_under_a_continuous_deadline_stream(mlp):
    """EDF aging: a request without a deadline is ordered as if due ``default_slack`` after
    its arrival. With slack 0 it starts at the next free worker although deadline requests
    keep arriving (and runs on while they preempt it); with an infinite slack (plain EDF) it
    starts only once the stream has ended."""
    _, x, _, module = mlp
    evs = _stream_with_one_background(module, x, 0.0, 10**6)  # the stream stops once bg is done
    bg = next(e for e in evs if e["model"] == "background")
    before = [e for e in evs if e["model"] == "stream" and e["started"] < bg["started"]]
    # Only requests submitted before it started before it (however loaded the host) ...
    assert all(e["submitted"] <= bg["submitted"] for e in before)
    # ... and the stream went on while it ran (deadline requests preempt it).
    assert any(bg["started"] < e["started"] < bg["finished"] for e in evs if e is not bg)
    cap = 60
    plain = [e["model"] for e in _stream_with_one_background(module, x, math.inf, cap)]
    assert plain[-1] == "background" and plain.count("stream") >= cap


def test_edf_implicit_deadlines_order(mlp):
    """A request without a deadline ranks at arrival + slack: its model's ``slack``, else
    the scheduler's ``default_slack``; it is never a deadline miss or dropped as late. (A
    deadline request ranked after one without would still preempt it once it runs: any
    deadline has a better band than none; the policy unit below checks that order.)"""
    _, x, _, module = mlp
    gate = Gate()
    with Scheduler("edf", workers=1, default_slack=20.0, drop_late=True) as s:
        s.add_model("gate", gate, deadline=600.0)
        s.add_model("m", module)
        s.add_model("bg", module, slack=5.0)
        g = _hold(s, gate)
        futs = [
            s.submit("m", x),  # arrival + 20 s
            s.submit("bg", x),  # arrival + 5 s
            s.submit("m", x, deadline=1.0),
        ]
        gate.open.set()
        g.result(30)
        for f in futs:
            f.result(60)
    order = [(e["model"], e["deadline"] is not None) for e in _started(s)[1:]]
    assert order == [("m", True), ("bg", False), ("m", False)]
    st = s.stats()
    assert st["default_slack_s"] == 20.0
    assert st["models"]["bg"]["deadline_misses"] == 0 and st["models"]["bg"]["dropped_late"] == 0
    with pytest.raises(xgen_mlir.XGenError, match="takes no option.*default_slack"):
        Scheduler("priority", default_slack=1.0)
    with pytest.raises(xgen_mlir.XGenError, match="default_slack must be >= 0"):
        Scheduler("edf", default_slack=-1.0)
    from types import SimpleNamespace as NS

    p = EarliestDeadlineFirst(default_slack=2.0)
    none = NS(deadline=None, submitted=1.0, id=0, slack=None)
    assert p.key(none, 0.0) < p.key(NS(deadline=3.5, submitted=0.0, id=1), 0.0)
    assert p.key(NS(deadline=None, submitted=1.0, id=2, slack=9.0), 0.0)[0] == 10.0


def test_auto_placement_follows_the_estimates_and_the_load(mlp, mlp_vulkan):
    """``auto``: each request goes to the device with the least estimate + work ahead; the
    estimates are injected (no wall-clock), then learned (EWMA) from the requests' runs.
    Results match PyTorch on both devices."""
    _, x, want, cpu_module = mlp
    gate = Gate()
    with Scheduler("priority", workers=1, aging_rate=0.0, ewma_alpha=0.5) as s:
        s.add_model("gate", gate, priority=10)
        s.add_model("auto", [cpu_module, mlp_vulkan])  # both builds: auto by default
        outs = []
        s.set_estimate("auto", "cpu", 0.001)
        s.set_estimate("auto", "vulkan", 0.5)
        outs.append(s.submit("auto", x).result(120))  # idle: the faster device, the CPU
        s.set_estimate("auto", "cpu", 0.5)
        s.set_estimate("auto", "vulkan", 0.001)
        outs.append(s.submit("auto", x).result(120))  # idle: the faster device, Vulkan
        # The CPU is busy (the gate holds its only worker, estimated at 1000 s): the request
        # goes to the slower but idle Vulkan device and finishes while the gate still runs.
        s.set_estimate("gate", "cpu", 1000.0)
        s.set_estimate("auto", "cpu", 0.001)
        s.set_estimate("auto", "vulkan", 0.5)
        g = _hold(s, gate)
        outs.append(s.submit("auto", torch.from_numpy(x)).result(120).numpy())
        assert not g.done()
        gate.open.set()
        g.result(30)
        est = s.estimates()["auto"]
    lanes = [e["lane"] for e in _started(s, "auto")]
    assert lanes == ["cpu", "vulkan", "vulkan"]
    for out, lane in zip(outs, lanes, strict=True):
        check_close(out, want, atol=1e-5, rtol=1e-5, what=f"auto placement on {lane}")
    costs = [e["costs"] for e in _started(s, "auto")]
    assert costs[0]["cpu"] < costs[0]["vulkan"] and costs[1]["vulkan"] < costs[1]["cpu"]
    assert costs[2]["cpu"] > 900.0 > costs[2]["vulkan"]  # the gate's work ahead counted
    st = s.stats()["models"]["auto"]
    assert st["runs_per_device"] == {"cpu": 1, "vulkan": 2}
    assert st["placement"] == "auto" and set(st["estimate_ms"]) == {"cpu", "vulkan"}
    run = _started(s, "auto")[2]["finished"] - _started(s, "auto")[2]["started"]
    assert est["vulkan"] == pytest.approx(0.5 * 0.5 + 0.5 * run, abs=1e-9)  # EWMA, alpha 0.5


def test_auto_placement_learns_probes_and_warm_up_seeds(mlp, mlp_vulkan):
    """Without estimates, each device gets one probe request whose run seeds its estimate;
    later runs fold in with weight ``ewma_alpha``; warm_up() seeds both devices."""
    _, x, want, cpu_module = mlp
    gate = Gate()
    with Scheduler("priority", workers=1, aging_rate=0.0, ewma_alpha=0.5) as s:
        s.add_model("gate", gate, priority=10)
        s.add_model("auto", [mlp_vulkan, cpu_module], placement="auto")
        g = _hold(s, gate)
        first = s.submit("auto", x)  # probes the CPU: queued behind the gate
        second = s.submit("auto", x)  # the CPU is being probed: probes Vulkan, runs now
        check_close(second.result(120), want, atol=1e-5, rtol=1e-5, what="vulkan probe")
        assert not first.done()
        assert set(s.estimates()["auto"]) == {"vulkan"}
        seeded = s.estimates()["auto"]["vulkan"]
        third = s.submit("auto", x)  # Vulkan measured, the CPU still probing: Vulkan
        check_close(third.result(120), want, atol=1e-5, rtol=1e-5, what="vulkan")
        gate.open.set()
        g.result(30)
        check_close(first.result(120), want, atol=1e-5, rtol=1e-5, what="cpu probe")
        learned = s.estimates()["auto"]
    evs = _started(s, "auto")
    assert [e["lane"] for e in evs] == ["vulkan", "vulkan", "cpu"]
    runs = [e["finished"] - e["started"] for e in evs]
    assert seeded == pytest.approx(runs[0], abs=1e-9)
    assert learned["vulkan"] == pytest.approx(0.5 * runs[0] + 0.5 * runs[1], abs=1e-9)
    assert learned["cpu"] == pytest.approx(runs[2], abs=1e-9)
    with Scheduler(workers=1) as s:
        s.add_model("auto", [cpu_module, mlp_vulkan])
        s.warm_up()
        est = s.estimates()["auto"]
        assert set(est) == {"cpu", "vulkan"} and min(est.values()) > 0


def test_auto_placement_refuses_what_it_cannot_place(mlp, head):
    _, _, _, module = mlp
    with Scheduler() as s:
        with pytest.raises(xgen_mlir.XGenError, match="'auto' needs a CPU and a Vulkan build"):
            s.add_model("a", module, placement="auto")
        with pytest.raises(xgen_mlir.XGenError, match="two builds for the cpu"):
            s.add_model("b", [module, head[1]])
        with pytest.raises(xgen_mlir.XGenError, match="unknown placement 'gpu'"):
            s.add_model("c", module, placement="gpu")
        s.add_model("m", module)
        with pytest.raises(xgen_mlir.XGenError, match="does not run on 'vulkan'"):
            s.set_estimate("m", "vulkan", 0.1)
        assert s.models == ["m"]


def test_auto_placement_refuses_builds_with_other_inputs(mlp_vulkan, head):
    with Scheduler() as s, pytest.raises(xgen_mlir.XGenError, match="take different inputs"):
        s.add_model("x", [head[1], mlp_vulkan])


def test_xgen_serve_scenario_placement_and_slack_keys(tmp_path):
    from xgen_mlir.tools.xgen_serve import read_scenario

    (tmp_path / "s.toml").write_text(
        'policy = "edf"\ndefault_slack_ms = 2000\n'
        '[[models]]\nname = "a"\npath = ["a_cpu.vmfb", "a_vk.vmfb"]\nplacement = "auto"\n'
        "rate = 5\nslack_ms = 500\n"
    )
    data = read_scenario(tmp_path / "s.toml")
    assert data["models"][0]["path"] == ["a_cpu.vmfb", "a_vk.vmfb"]
    (tmp_path / "bad.toml").write_text(
        'default_slack_ms = "x"\n[[models]]\nname = "a"\npath = [1]\nrate = 1\nslack_ms = "y"\n'
    )
    with pytest.raises(xgen_mlir.XGenError, match="3 problem") as e:
        read_scenario(tmp_path / "bad.toml")
    assert "'path' (a string, or a list" in str(e.value) and "default_slack_ms" in str(e.value)
