"""Scheduler: several compiled models on one machine, requests with priorities and deadlines.

One dispatcher thread owns the queue. It sleeps on a condition variable (no polling) and
wakes when a request arrives, finishes or is cancelled, or at shutdown. Each started request
runs in its own Python thread, which calls IREE on an executor (executors.py) with the worker
count the dispatcher chose and the OS priority band of the request; the thread waits in IREE
with the GIL released. See docs/scheduler.md for the design and its limits.
"""

from __future__ import annotations

import gc
import itertools
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import UnknownNameError, XGenError
from ..waiting import yielding_to_workers
from .executors import ExecutorPool, cpu_count, take_priority_of, usable_cores
from .models import SchedModel
from .observe import Event, Recorder, render_text, write_json, write_timeline
from .policies import Policy, make_policy


class SchedulerClosedError(XGenError):
    """A request was submitted to a scheduler that is shut down (or shutting down)."""


class DeadlineMissedError(XGenError):
    """With ``drop_late=True``: the request's deadline passed before it could start, so it
    was not run."""


_GC_LOCK = threading.Lock()
_GC_FREEZERS = 0  # schedulers whose warm_up froze the collector and that still run


def _freeze_gc() -> None:
    global _GC_FREEZERS
    with _GC_LOCK:
        _GC_FREEZERS += 1
        gc.collect()
        gc.freeze()


def _unfreeze_gc() -> None:
    """The last freezing scheduler is gone: frozen objects may be collected again (without
    this, objects kept by the runtime's bindings outlive the interpreter's teardown)."""
    global _GC_FREEZERS
    with _GC_LOCK:
        _GC_FREEZERS -= 1
        if _GC_FREEZERS == 0:
            gc.unfreeze()


@dataclass(eq=False)
class Request:
    id: int
    model: str
    arrays: Any
    as_torch: bool
    priority: float
    deadline: float | None  # absolute, seconds since the scheduler started
    rel_deadline: float | None  # the deadline as given, relative to submission
    submitted: float
    weight: float
    lane: str
    future: Future
    graph: str | None = None
    started: float | None = None
    workers: int = 0
    cores: tuple[int, ...] | None = None  # the cores its workers are pinned to
    band: int = 0
    nice: int | None = None
    preempted: list[int] = field(default_factory=list)
    preempted_by: int | None = None
    slack: float | None = None  # EDF: the model's slack for a request without a deadline
    costs: dict[str, float] | None = None  # auto placement: estimated seconds per device


class Scheduler:
    """Runs requests for several models on this machine's cores (and a Vulkan GPU).

    ``policy``: ``"priority"`` (fixed priority with aging, preemptive), ``"edf"`` (earliest
    deadline first, preemptive with deadline-monotonic bands) or ``"fair"`` (weighted fair
    share, not preemptive). ``workers``: CPU workers to hand out (default: the cores this
    process may use). ``nice_step``: the nice value added per priority band below the top one
    (capped at 19). ``idle_band``: the lowest of several bands runs ``SCHED_IDLE`` (only on
    cycles nobody else wants; preempted at once when a better band's worker wakes). ``pin``: a
    request's workers are pinned one per core to the cores it was given (the first ``workers``
    cores of this process's affinity mask are handed out). ``gpu_slots``: requests run at once
    on the Vulkan device. ``drop_late``: a request whose deadline passes before it starts is not
    run; its future gets a DeadlineMissedError (load shedding: under overload, fresh requests
    stay on time instead of every request queueing behind a backlog). ``default_slack``
    (``edf``): seconds after its arrival that a request without a deadline is ordered as if due
    (aging for background work; a model's own ``slack`` wins). ``ewma_alpha``: the weight of a
    new measurement in each (model, device) latency estimate that ``auto`` placement uses.
    """

    def __init__(
        self,
        policy: str | Policy = "priority",
        *,
        workers: int | None = None,
        aging_rate: float | None = None,
        nice_step: int = 10,
        idle_band: bool = True,
        pin: bool = True,
        gpu_slots: int = 1,
        drop_late: bool = False,
        default_slack: float | None = None,
        ewma_alpha: float = 0.25,
    ) -> None:
        options: dict[str, Any] = {} if aging_rate is None else {"aging_rate": aging_rate}
        if default_slack is not None:
            options["default_slack"] = default_slack
        self.policy = make_policy(policy, **options)
        self.workers = workers or cpu_count()
        if self.workers < 1 or gpu_slots < 1:
            raise XGenError("workers and gpu_slots must be >= 1")
        # The cores the workers are pinned to, one each (none when there are more workers
        # than cores this process may use).
        self._cores = usable_cores()[: self.workers] if pin else []
        if len(self._cores) < self.workers:
            self._cores = []
        if not 0 < ewma_alpha <= 1:
            raise XGenError(f"ewma_alpha must be in (0, 1], got {ewma_alpha}")
        self.ewma_alpha = ewma_alpha
        # Latency (run time, seconds) per (model, device): learned from completed requests.
        self._estimates: dict[tuple[str, str], float] = {}
        self.gpu_slots = gpu_slots
        self.nice_step = nice_step
        self.drop_late = drop_late
        import iree.runtime as rt

        self._instance = rt.VmInstance()
        self._models: dict[str, SchedModel] = {}
        self._levels: list[float] = [0.0]
        self._pool = ExecutorPool([0], idle_lowest=idle_band)
        self._cond = threading.Condition(threading.RLock())
        self._queue: list[Request] = []
        self._running: list[Request] = []
        self._ids = itertools.count()
        self._accepting = True
        self._stopping = False
        self._froze_gc = False
        self._t0 = time.monotonic()
        self.recorder = Recorder()
        self._dispatcher = threading.Thread(target=self._loop, name="xgen-scheduler", daemon=True)
        self._dispatcher.start()

    # -- models ----------------------------------------------------------------------------
    def add_model(
        self,
        name: str,
        module: Any,
        *,
        priority: float = 0.0,
        deadline: float | None = None,
        weight: float = 1.0,
        placement: str | None = None,
        max_workers: int | None = None,
        slack: float | None = None,
    ) -> None:
        """Register ``module`` (a CompiledModule, a .vmfb path, a bundle folder, or a Python
        callable for host-side steps) under ``name``. ``priority`` and ``deadline`` (seconds
        after submission) are its requests' defaults; ``weight`` its fair share;
        ``placement`` ``"cpu"`` or ``"vulkan"`` (default: the module's device), or ``"auto"``
        with a list of a CPU and a Vulkan build as ``module`` (the default for such a list):
        each request goes to the device with the least estimated finish time
        (docs/scheduler.md, Placement); ``max_workers`` caps the CPU workers one of its
        requests gets; ``slack`` (``edf``): seconds after arrival that its requests without a
        deadline are ordered as if due (default: the scheduler's ``default_slack``)."""
        if not isinstance(name, str) or not name:
            raise XGenError(f"a model needs a non-empty name; got {name!r}")
        if max_workers is not None and max_workers < 1:
            raise XGenError(f"model '{name}': max_workers must be >= 1")
        with self._cond:
            if name in self._models:
                raise XGenError(f"model '{name}' is already registered")
        m = SchedModel(
            name,
            module,
            priority=priority,
            deadline=deadline,
            weight=weight,
            placement=placement,
            max_workers=max_workers,
            instance=self._instance,
            slack=slack,
        )
        if m.python_fn is not None:
            m.max_workers = 1
        with self._cond:
            self._models[name] = m
            self._levels = self.policy.levels(list(self._models.values()))
            offsets = [min(19, i * self.nice_step) for i in range(len(self._levels))]
            self._pool.nice_offsets = offsets

    @property
    def models(self) -> list[str]:
        return list(self._models)

    def module(self, name: str) -> Any:
        """The CompiledModule registered as ``name`` (None for a Python callable)."""
        if name not in self._models:
            raise UnknownNameError("model", name, list(self._models))
        return self._models[name].module

    def warm_up(self, freeze_gc: bool = True) -> None:
        """Create every executor and VM context a request could use, and run each once, so the
        first measured requests do not pay for them; then time one more run per device (all
        of the model's workers, top band) to seed its latency estimate where none is set.

        ``freeze_gc``: then move every object alive (models, runtimes, imported libraries) to
        the garbage collector's permanent generation (``gc.freeze``), process-wide. A full
        collection stops every Python thread: the dispatcher cannot start a request and no
        call can return. Measured in the mixed workload of docs/scheduler.md: a 118 ms pause
        in a run (237-348 ms ones between runs) that every model's requests waited out, and
        the deadline misses of a run otherwise on time. Frozen objects are never collected,
        so cycles among them that die later stay in memory: pass False in a process that
        keeps building and dropping large object graphs."""
        for m in list(self._models.values()):
            if m.module is None:
                continue
            arrays = m.module.random_inputs()
            top = min(self.workers, m.max_workers or self.workers)
            for lane in m.lanes:
                if lane == "vulkan":
                    m.run("vulkan", self._pool.vulkan(), arrays, False)
                    continue
                for k in range(1, top + 1):
                    for band in range(len(self._levels)):
                        ex = self._pool.get(k, band)
                        ex.pin(tuple(self._cores[:k]) or None)
                        m.run((k, band, 0), ex.device, arrays, False)
            for lane in m.lanes:
                key: Any
                if lane == "vulkan":
                    key, device = "vulkan", self._pool.vulkan()
                else:
                    key, device = (top, 0, 0), self._pool.get(top, 0).device
                t = time.perf_counter()
                m.run(key, device, arrays, False)
                seconds = time.perf_counter() - t
                with self._cond:
                    self._estimates.setdefault((m.name, lane), seconds)
        if freeze_gc and not self._froze_gc:
            self._froze_gc = True
            _freeze_gc()

    # -- latency estimates (auto placement) ------------------------------------------------
    def estimates(self) -> dict[str, dict[str, float]]:
        """The current latency estimates in seconds: ``{model: {device: seconds}}``."""
        with self._cond:
            out: dict[str, dict[str, float]] = {}
            for (model, lane), v in sorted(self._estimates.items()):
                out.setdefault(model, {})[lane] = v
            return out

    def set_estimate(self, model: str, device: str, seconds: float) -> None:
        """Set the latency estimate of ``model`` on ``device`` (``"cpu"`` or ``"vulkan"``):
        prior knowledge, or a test's. Completed requests keep updating it (EWMA)."""
        m = self._models.get(model)
        if m is None:
            raise UnknownNameError("model", model, list(self._models))
        if device not in m.lanes:
            raise XGenError(
                f"model '{model}' does not run on '{device}'; its devices: {', '.join(m.lanes)}"
            )
        if not seconds >= 0:
            raise XGenError(f"a latency estimate must be >= 0 seconds, got {seconds}")
        with self._cond:
            self._estimates[(model, device)] = float(seconds)

    def _learn(self, req: Request, seconds: float) -> None:
        """Fold one completed run into its (model, device) estimate; the first one seeds it.
        The caller holds the lock."""
        key = (req.model, req.lane)
        old = self._estimates.get(key)
        a = self.ewma_alpha
        self._estimates[key] = seconds if old is None else (1 - a) * old + a * seconds

    def _parallel(self, m: SchedModel, lane: str) -> int:
        """Requests that run at once on ``lane``: the GPU slots, or on the CPU the workers
        over the workers one request of ``m`` gets."""
        if lane == "vulkan":
            return self.gpu_slots
        return max(1, self.workers // min(self.workers, m.max_workers or self.workers))

    def _ahead(self, req: Request, m: SchedModel, lane: str, now: float) -> float:
        """Estimated seconds of work on ``lane`` that would run before ``req``: queued
        requests the policy orders first, and what is left of running ones it could not
        preempt. A model not measured on ``lane`` yet counts as 0."""
        key = self.policy.key(req, now)
        band = self.policy.band(req, now, self._levels)
        work = 0.0
        for r in self._queue:
            if r.lane == lane and self.policy.key(r, now) < key:
                work += self._estimates.get((r.model, lane), 0.0)
        for r in self._running:
            if r.lane != lane or r.started is None:
                continue
            if lane == "cpu" and self.policy.preemptive and r.band > band:
                continue  # it would preempt r
            left = self._estimates.get((r.model, lane), 0.0) - (now - r.started)
            work += max(0.0, left)
        return work / self._parallel(m, lane)

    def _place(self, req: Request, m: SchedModel, now: float) -> str:
        """The device for one request of ``m``. One device: it. ``auto``: a device with no
        estimate yet gets one request (a probe; its run seeds the estimate); otherwise the
        device with the least ``estimate + work ahead / parallel slots`` (ties: the CPU).
        The caller holds the lock."""
        if len(m.lanes) == 1:
            return m.lanes[0]
        mine = [r.lane for r in (*self._queue, *self._running) if r.model == m.name]
        measured = [lane for lane in m.lanes if (m.name, lane) in self._estimates]
        for lane in m.lanes:
            if lane not in measured and lane not in mine:
                return lane
        if not measured:  # every device is probing: balance the requests
            return min(m.lanes, key=lambda lane: mine.count(lane))
        costs = {
            lane: self._estimates[(m.name, lane)] + self._ahead(req, m, lane, now)
            for lane in measured
        }
        req.costs = costs
        return min(measured, key=lambda lane: costs[lane])

    # -- requests --------------------------------------------------------------------------
    def now(self) -> float:
        """Seconds since the scheduler started (the clock of deadlines and of the timeline)."""
        return time.monotonic() - self._t0

    def submit(
        self,
        model: str,
        *inputs: Any,
        priority: float | None = None,
        deadline: float | None = None,
    ) -> Future:
        """Queue one call of ``model``; returns a Future of its outputs. ``priority`` and
        ``deadline`` (seconds from now) override the model's defaults. Inputs are checked
        against the module's signature here (InputMismatchError)."""
        return self._submit(model, inputs, priority, deadline, None, internal=False)

    def _submit(
        self,
        model: str,
        inputs: tuple[Any, ...],
        priority: float | None,
        deadline: float | None,
        graph: str | None,
        *,
        internal: bool,
        deadline_at: float | None = None,
    ) -> Future:
        m = self._models.get(model)
        if m is None:
            raise UnknownNameError("model", model, list(self._models))
        arrays, as_torch = m.prepare(inputs)
        fut: Future = Future()
        with self._cond:
            closed = self._stopping if internal else not self._accepting
            if closed:
                raise SchedulerClosedError(
                    f"request for model '{model}': the scheduler is shut down"
                )
            now = self.now()
            if deadline_at is not None:  # a task graph's end-to-end deadline
                rel: float | None = deadline_at - now
            else:
                rel = deadline if deadline is not None else m.deadline
                deadline_at = None if rel is None else now + rel
            req = Request(
                next(self._ids),
                model,
                arrays,
                as_torch,
                m.priority if priority is None else float(priority),
                deadline_at,
                rel,
                now,
                m.weight,
                m.lanes[0],
                fut,
                graph,
                slack=m.slack,
            )
            req.lane = self._place(req, m, now)
            active = {r.model for r in (*self._queue, *self._running)}
            if model not in active:
                self.policy.activate(model, sorted(active))
            self._queue.append(req)
            depth = sum(r.model == model for r in self._queue)
            self.recorder.on_submit(model, depth)
            self._cond.notify_all()
        fut.add_done_callback(lambda f: self._on_done(req, f))
        return fut

    def _on_done(self, req: Request, fut: Future) -> None:
        """A future was cancelled: drop its request from the queue (a running one is not
        interrupted; see docs/scheduler.md)."""
        if not fut.cancelled():
            return
        with self._cond:
            if req in self._queue:
                self._queue.remove(req)
                self._record(req, "cancelled", self.now())
                self._cond.notify_all()

    # -- dispatching -----------------------------------------------------------------------
    def _loop(self) -> None:
        with self._cond:
            while True:
                self._dispatch()
                if self._stopping and not self._queue and not self._running:
                    self._cond.notify_all()
                    return
                self._cond.wait()

    def _dispatch(self) -> None:
        """Start what can start. Candidates are tried in the policy's order; one that cannot
        start (no free worker) lets a later one start only by preempting work of a lower band
        than its own, so the policy's order among equals is kept."""
        progress = True
        while progress:
            progress = False
            now = self.now()
            if self.drop_late:
                self._drop_late(now)
            for lane in ("cpu", "vulkan"):
                ready = [r for r in self._queue if r.lane == lane]
                ready.sort(key=lambda r: self.policy.key(r, now))
                for req in ready:
                    if lane == "cpu":
                        started = self._start_cpu(req, now)
                    else:
                        started = self._start_gpu(req, now)
                    if started:
                        progress = True
                        break
                    if lane != "cpu" or not self.policy.preemptive:
                        break

    def _drop_late(self, now: float) -> None:
        late = [(r, r.deadline) for r in self._queue if r.deadline is not None]
        for r, deadline in late:
            if deadline >= now:
                continue
            self._queue.remove(r)
            if not r.future.set_running_or_notify_cancel():
                self._record(r, "cancelled", now)
                continue
            self._record(r, "dropped", now)
            r.future.set_exception(
                DeadlineMissedError(
                    f"request {r.id} for model '{r.model}': its deadline passed "
                    f"{(now - deadline) * 1e3:.1f} ms before it could start; not run "
                    f"(drop_late=True)"
                )
            )

    def _claim(self, req: Request, now: float) -> bool:
        """Mark the future running; False (and the request dropped) if it was cancelled."""
        self._queue.remove(req)
        if req.future.set_running_or_notify_cancel():
            return True
        self._record(req, "cancelled", now)
        return False

    def _share(self, m: SchedModel) -> int:
        """Workers one request of ``m`` may get when cores are free."""
        cap = min(self.workers, m.max_workers or self.workers)
        if self.policy.name != "fair":
            return cap
        backlog = {r.model for r in (*self._queue, *self._running) if r.lane == "cpu"}
        total = sum(self._models[n].weight for n in backlog) or m.weight
        return max(1, min(cap, int(self.workers * m.weight / total)))

    def _start_cpu(self, req: Request, now: float) -> bool:
        m = self._models[req.model]
        cpu = [r for r in self._running if r.lane == "cpu"]
        free = self.workers - sum(r.workers for r in cpu if r.preempted_by is None)
        want = self._share(m)
        band = self.policy.band(req, now, self._levels)
        victims: list[Request] = []
        if free < want and self.policy.preemptive:
            lower = [r for r in cpu if r.preempted_by is None and r.band > band]
            for v in sorted(lower, key=lambda r: (-r.band, -r.started if r.started else 0)):
                if free >= want:
                    break
                victims.append(v)
                free += v.workers
        if free < 1:
            return False
        if not self._claim(req, now):
            return True
        req.workers, req.band, req.started = min(free, want), band, now
        if self._cores:  # free cores first, then the ones lent by the requests it preempts
            held = {c for r in cpu if r.preempted_by is None for c in (r.cores or ())}
            lent = [c for v in victims for c in (v.cores or ())]
            order = [c for c in self._cores if c not in held] + lent
            req.cores = tuple(order[: req.workers])
        for v in victims:
            v.preempted_by = req.id
            req.preempted.append(v.id)
        self._running.append(req)
        self._spawn(req)
        return True

    def _start_gpu(self, req: Request, now: float) -> bool:
        if sum(r.lane == "vulkan" for r in self._running) >= self.gpu_slots:
            return False
        if not self._claim(req, now):
            return True
        req.workers, req.band, req.started = 0, 0, now
        self._running.append(req)
        self._spawn(req)
        return True

    def _spawn(self, req: Request) -> None:
        t = threading.Thread(target=self._run, args=(req,), name=f"xgen-run-{req.id}", daemon=True)
        t.start()

    def _run(self, req: Request) -> None:
        m = self._models[req.model]
        out: Any = None
        error: BaseException | None = None
        try:
            if m.python_fn is not None:
                out = m.python_fn(*req.arrays)
            elif req.lane == "vulkan":
                out = m.run("vulkan", self._pool.vulkan(), req.arrays, req.as_torch)
            else:
                key, ex = self._pool.acquire(req.workers, req.band)
                try:
                    req.nice = ex.nice
                    ex.pin(req.cores)
                    take_priority_of(ex)  # this thread is the request's: it ends with it
                    with yielding_to_workers(True):
                        out = m.run(key, ex.device, req.arrays, req.as_torch)
                finally:
                    self._pool.release(key)
        except BaseException as e:  # the model's error goes to its future; others go on
            error = e
        finished = self.now()
        if error is None and req.started is not None:
            with self._cond:  # learned before the future resolves: its caller sees it
                self._learn(req, finished - req.started)
        # Resolve the future before the request leaves ``running``: callbacks (task graphs)
        # submit their next steps while the dispatcher still counts this one as in flight.
        if error is None:
            req.future.set_result(out)
        else:
            req.future.set_exception(error)
        with self._cond:
            self._running.remove(req)
            for r in self._running:
                if r.preempted_by == req.id:
                    r.preempted_by = None
            if req.started is not None:
                self.policy.charge(req, finished - req.started, max(1, req.workers))
            self._record(req, "ok" if error is None else "error", finished)
            self._cond.notify_all()

    def _record(self, req: Request, status: str, finished: float) -> None:
        req.arrays = None  # do not keep inputs alive in the log
        self.recorder.on_event(
            Event(
                req.id,
                req.model,
                req.lane,
                status,
                req.submitted,
                req.started,
                finished,
                req.deadline,
                req.workers,
                req.band,
                req.nice,
                list(req.preempted),
                req.graph,
                None if req.costs is None else {k: round(v, 6) for k, v in req.costs.items()},
                None if req.cores is None else list(req.cores),
            )
        )

    # -- observing -------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """Per-model counts, latency/wait percentiles (ms), deadline misses, queue depths and
        worker shares, plus the policy and the executors made."""
        with self._cond:
            queued: dict[str, int] = {}
            running: dict[str, int] = {}
            workers_now: dict[str, int] = {}
            for r in self._queue:
                queued[r.model] = queued.get(r.model, 0) + 1
            for r in self._running:
                running[r.model] = running.get(r.model, 0) + 1
                if r.preempted_by is None:
                    workers_now[r.model] = workers_now.get(r.model, 0) + r.workers
            now = self.now()
            estimates = dict(self._estimates)
        extra = {
            **self.policy.describe(),
            "workers": self.workers,
            "priority_levels": self._levels,
            "nice_offsets": self._pool.nice_offsets,
            "executors": self._pool.describe(),
        }
        out = self.recorder.stats(now, queued, running, workers_now, extra)
        for name, st in out["models"].items():
            m = self._models.get(name)
            if m is None:
                continue
            st["placement"] = m.placement
            st["estimate_ms"] = {
                lane: round(estimates[(name, lane)] * 1e3, 3)
                for lane in m.lanes
                if (name, lane) in estimates
            }
        return out

    def text(self) -> str:
        """The live view (one line per model), as text."""
        return render_text(self.stats())

    def events(self) -> list[dict[str, Any]]:
        return self.recorder.event_dicts()

    def write_stats(self, path: str | Path, extra: dict[str, Any] | None = None) -> Path:
        """Stats and (when recording) every request's event as JSON, written atomically."""
        return write_json(path, {**self.stats(), **(extra or {}), "events": self.events()})

    def write_timeline(self, path: str | Path, title: str | None = None) -> Path:
        """An HTML Gantt chart (inline SVG, no scripts) of the recorded run, atomically."""
        return write_timeline(path, self.events(), self.stats(), title)

    # -- stopping --------------------------------------------------------------------------
    def shutdown(
        self, wait: bool = True, cancel_pending: bool = False, timeout: float | None = None
    ) -> bool:
        """Stop taking requests. Queued requests run (or, with ``cancel_pending``, are
        cancelled); running ones finish (IREE cannot abort a call). With ``wait``, returns
        once every request has resolved (True), or False if ``timeout`` ran out first."""
        with self._cond:
            self._accepting = False
            pending = list(self._queue) if cancel_pending else []
        for r in pending:
            r.future.cancel()
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if not wait:
            return not self._dispatcher.is_alive()
        self._dispatcher.join(timeout)
        if self._dispatcher.is_alive():
            return False
        # nothing runs any more: the Vulkan device's contexts and the device itself can go
        for m in list(self._models.values()):
            m.release("vulkan")
        self._pool.release_vulkan()
        if self._froze_gc:
            self._froze_gc = False
            _unfreeze_gc()
        return True

    def __enter__(self) -> Scheduler:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown(wait=True, cancel_pending=exc[0] is not None)
