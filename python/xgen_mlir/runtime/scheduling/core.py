"""Scheduler: several compiled models on one machine, requests with priorities and deadlines.

One dispatcher thread owns the queue. It sleeps on a condition variable (no polling) and
wakes when a request arrives, finishes or is cancelled, or at shutdown. Each started request
runs in its own Python thread, which calls IREE on an executor (executors.py) with the worker
count the dispatcher chose and the OS priority band of the request; the thread waits in IREE
with the GIL released. See docs/scheduler.md for the design and its limits.
"""

from __future__ import annotations

import itertools
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import UnknownNameError, XGenError
from ..waiting import yielding_to_workers
from .executors import ExecutorPool, cpu_count, vulkan_device
from .models import SchedModel
from .observe import Event, Recorder, render_text, write_json, write_timeline
from .policies import Policy, make_policy


class SchedulerClosedError(XGenError):
    """A request was submitted to a scheduler that is shut down (or shutting down)."""


class DeadlineMissedError(XGenError):
    """With ``drop_late=True``: the request's deadline passed before it could start, so it
    was not run."""


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
    band: int = 0
    nice: int | None = None
    preempted: list[int] = field(default_factory=list)
    preempted_by: int | None = None


class Scheduler:
    """Runs requests for several models on this machine's cores (and a Vulkan GPU).

    ``policy``: ``"priority"`` (fixed priority with aging, preemptive), ``"edf"`` (earliest
    deadline first, preemptive with deadline-monotonic bands) or ``"fair"`` (weighted fair
    share, not preemptive). ``workers``: CPU workers to hand out (default: the cores this
    process may use). ``nice_step``: the nice value added per priority band below the top one
    (capped at 19). ``gpu_slots``: requests run at once on the Vulkan device. ``drop_late``:
    a request whose deadline passes before it starts is not run; its future gets a
    DeadlineMissedError (load shedding: under overload, fresh requests stay on time instead
    of every request queueing behind a backlog).
    """

    def __init__(
        self,
        policy: str | Policy = "priority",
        *,
        workers: int | None = None,
        aging_rate: float | None = None,
        nice_step: int = 10,
        gpu_slots: int = 1,
        drop_late: bool = False,
    ) -> None:
        options = {} if aging_rate is None else {"aging_rate": aging_rate}
        self.policy = make_policy(policy, **options)
        self.workers = workers or cpu_count()
        if self.workers < 1 or gpu_slots < 1:
            raise XGenError("workers and gpu_slots must be >= 1")
        self.gpu_slots = gpu_slots
        self.nice_step = nice_step
        self.drop_late = drop_late
        import iree.runtime as rt

        self._instance = rt.VmInstance()
        self._models: dict[str, SchedModel] = {}
        self._levels: list[float] = [0.0]
        self._pool = ExecutorPool([0])
        self._cond = threading.Condition(threading.RLock())
        self._queue: list[Request] = []
        self._running: list[Request] = []
        self._ids = itertools.count()
        self._accepting = True
        self._stopping = False
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
    ) -> None:
        """Register ``module`` (a CompiledModule, a .vmfb path, a bundle folder, or a Python
        callable for host-side steps) under ``name``. ``priority`` and ``deadline`` (seconds
        after submission) are its requests' defaults; ``weight`` its fair share;
        ``placement`` ``"cpu"`` or ``"vulkan"`` (default: the module's device);
        ``max_workers`` caps the CPU workers one of its requests gets."""
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

    def warm_up(self) -> None:
        """Create every executor and VM context a request could use, and run each once, so the
        first measured requests do not pay for them."""
        for m in list(self._models.values()):
            if m.module is None:
                continue
            arrays = m.module.random_inputs()
            if m.placement == "vulkan":
                m.run("vulkan", vulkan_device(), arrays, False)
                continue
            top = min(self.workers, m.max_workers or self.workers)
            for k in range(1, top + 1):
                for band in range(len(self._levels)):
                    ex = self._pool.get(k, band)
                    m.run((k, band), ex.device, arrays, False)

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
                "vulkan" if m.placement == "vulkan" else "cpu",
                fut,
                graph,
            )
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
                out = m.run("vulkan", vulkan_device(), req.arrays, req.as_torch)
            else:
                ex = self._pool.get(req.workers, req.band)
                req.nice = ex.nice
                with yielding_to_workers(True):
                    out = m.run((req.workers, req.band), ex.device, req.arrays, req.as_torch)
        except BaseException as e:  # the model's error goes to its future; others go on
            error = e
        finished = self.now()
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
        extra = {
            **self.policy.describe(),
            "workers": self.workers,
            "priority_levels": self._levels,
            "nice_offsets": self._pool.nice_offsets,
            "executors": self._pool.describe(),
        }
        return self.recorder.stats(now, queued, running, workers_now, extra)

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
        return not self._dispatcher.is_alive()

    def __enter__(self) -> Scheduler:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown(wait=True, cancel_pending=exc[0] is not None)
