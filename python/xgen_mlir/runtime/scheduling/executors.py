"""IREE devices with their own task executors: a worker count and an OS priority per executor.

IREE's ``local-task`` driver creates its task executors (one worker thread per group) when the
*driver* is created, from the process-wide ``--task_topology_*`` flags; every device made from
that driver shares them. ``iree.runtime.get_driver`` caches one driver per name, but the
binding's ``create_hal_driver`` makes a fresh one. So an executor of ``k`` workers is: set
``--task_topology_group_count=k``, create a driver, set the flag back to 0 (IREE's default:
one worker per core), make a device. Each executor is made once and reused.

The worker threads exist from the driver's creation (named ``iree-worker-N``; the device adds
an ``iree-poller``/proactor thread). They are found by comparing the process's threads before
and after, and get the executor's OS priority (a nice value, raised relative to the caller;
for the lowest band of several, ``SCHED_IDLE``): this is how lower-priority work yields the
cores to higher-priority work *while it runs*, since IREE's runtime cannot pause an
invocation between dispatches (docs/scheduler.md). A nice value is only a weight: a nice-19
worker that holds a core keeps it for its time slice when a nice-0 worker wakes, and each
of the high-priority model's dispatches waits for its slowest worker. A ``SCHED_IDLE``
thread is preempted at once by any other thread that wakes on its core. Raising a thread's
nice, or making it ``SCHED_IDLE``, needs no privileges; undoing either does (EPERM for an
unprivileged user, measured), so an executor keeps its priority for life and requests of
another priority band run on another executor.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ...errors import ModuleLoadError
from ..plugins import FLAG_LOCK


def usable_cores() -> list[int]:
    """The ids of the cores this process may use (its affinity mask), in order (empty where
    unknown)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return []


def cpu_count() -> int:
    """The cores this process may use, not the machine's total."""
    return len(usable_cores()) or max(1, os.cpu_count() or 1)


def _threads() -> set[int]:
    try:
        return {int(t) for t in os.listdir("/proc/self/task")}
    except OSError:  # not Linux: thread priorities are not set
        return set()


def _comm(tid: int) -> str:
    try:
        with open(f"/proc/self/task/{tid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def _new_iree_threads(before: set[int]) -> list[int]:
    """Threads started since ``before`` that are IREE's: not Python threads, and named
    ``iree-*`` once they have named themselves (a new thread sets its name after it starts,
    so the name is read again for a short while)."""
    py = {t.native_id for t in threading.enumerate()}
    new = _threads() - before - py
    for _ in range(20):
        if all(_comm(t).startswith("iree-") for t in new):
            break
        time.sleep(0.005)
    return sorted(t for t in new if _comm(t).startswith("iree-") or _comm(t) == "python")


def renice(thread_ids: list[int], offset: int) -> int | None:
    """Raise the nice value of ``thread_ids`` by ``offset`` over the caller's (at most 19).
    Returns the nice applied, or None where the OS refused or has no per-thread nice."""
    if offset <= 0 or not thread_ids or not hasattr(os, "setpriority"):
        return None
    base = os.getpriority(os.PRIO_PROCESS, 0)  # Linux: the calling thread's nice
    nice = min(19, base + offset)
    try:
        for tid in thread_ids:
            os.setpriority(os.PRIO_PROCESS, tid, nice)
    except OSError:
        return None
    return nice


def make_idle(thread_ids: list[int]) -> bool:
    """Put ``thread_ids`` in ``SCHED_IDLE``: they run on cycles no other thread wants and
    are preempted as soon as one wakes. False where the OS refused or lacks the policy."""
    if not thread_ids or not hasattr(os, "SCHED_IDLE"):
        return False
    try:
        for tid in thread_ids:
            os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
    except OSError:
        return False
    return True


def take_priority_of(executor: CpuExecutor) -> None:
    """Give the calling thread ``executor``'s nice value, for the rest of its life.

    The thread that waits for a call belongs to the call's band: at the end of a call it
    spins until the worker that woke it marks itself done (runtime/waiting.py), and at nice
    0 beside a niced or idle worker it would hold a core that the top band's workers need
    (measured: MobileNetV2 beside ResNet-18 and BERT-base ran 8-10 ms instead of 4.3). The
    thread keeps a nice value even for an idle executor, so Python work it does while
    holding the GIL never waits behind every other thread."""
    if executor.nice is None or not hasattr(os, "setpriority"):
        return
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), executor.nice)
    except OSError:
        pass


@dataclass
class CpuExecutor:
    """One local-task driver and device: ``workers`` threads at nice offset ``nice_offset``,
    in ``SCHED_IDLE`` when ``idle``."""

    workers: int
    nice_offset: int
    driver: Any = None
    device: Any = None
    thread_ids: list[int] = field(default_factory=list)
    nice: int | None = None
    idle: bool = False
    pinned: tuple[int, ...] | None = None
    worker_ids: list[int] = field(default_factory=list)  # thread_ids less the device's poller

    def pin(self, cores: tuple[int, ...] | None) -> None:
        """Pin worker ``i`` to ``cores[i]`` (no-op when already there, or ``cores`` is None).

        IREE's own default executor pins one worker per core; executors made from a group
        count do not, and unpinned workers of several executors migrate between cores (their
        caches with them): MobileNetV2 alone through the scheduler 4.1-4.9 ms median
        unpinned, 3.8 pinned, and beside ResNet-18 and BERT-base 4.7-4.9 against 3.2-3.4."""
        if cores is None or cores == self.pinned or not hasattr(os, "sched_setaffinity"):
            return
        workers = self.worker_ids
        if len(workers) != len(cores):
            return
        try:
            for tid, core in zip(workers, cores, strict=True):
                os.sched_setaffinity(tid, {core})
        except OSError:
            return
        self.pinned = cores

    @classmethod
    def create(cls, workers: int, nice_offset: int, idle: bool = False) -> CpuExecutor:
        from iree.runtime import _binding

        with FLAG_LOCK:  # executors are created one at a time, beside plugin devices
            before = _threads()
            _binding.parse_flags(f"--task_topology_group_count={workers}")
            try:
                driver = _binding.create_hal_driver("local-task")
            except Exception as e:
                raise ModuleLoadError(
                    f"cannot create an IREE local-task executor of {workers} workers: {e}"
                ) from None
            finally:
                _binding.parse_flags("--task_topology_group_count=0")
            device = driver.create_default_device()
            new = _new_iree_threads(before)
        ex = cls(workers, nice_offset, driver, device, new)
        ex.worker_ids = [t for t in new if _comm(t).startswith("iree-worker")]
        ex.nice = renice(new, nice_offset)
        ex.idle = idle and make_idle(new)
        return ex


class ExecutorPool:
    """CPU executors keyed by (workers, priority band, instance), created on first use, then
    reused. Two requests running at once never share an executor (``acquire``): on one they
    would share its ``workers`` threads and leave the cores they were given idle. With
    ``idle_lowest``, the lowest of several bands runs ``SCHED_IDLE``."""

    def __init__(self, nice_offsets: list[int], idle_lowest: bool = True) -> None:
        self.nice_offsets = nice_offsets
        self.idle_lowest = idle_lowest
        self._lock = threading.Lock()
        self._executors: dict[tuple[int, int, int], CpuExecutor] = {}
        self._busy: set[tuple[int, int, int]] = set()
        self._vulkan: Any = None

    def vulkan(self) -> Any:
        """The shared Vulkan device, held by the pool until ``release_vulkan`` (a lease,
        ``targets.vulkan_lease``: not the process's cached device, whose watcher thread
        would outlive the scheduler)."""
        from ..targets import vulkan_lease

        with self._lock:
            if self._vulkan is None:
                self._vulkan = vulkan_lease()
            return self._vulkan.device

    def release_vulkan(self) -> None:
        """Drop the pool's reference to its Vulkan device (it ends with its last user)."""
        with self._lock:
            self._vulkan = None

    def get(self, workers: int, band: int, instance: int = 0) -> CpuExecutor:
        key = (workers, band, instance)
        with self._lock:
            ex = self._executors.get(key)
            if ex is None:
                last = len(self.nice_offsets) - 1
                offset = self.nice_offsets[min(band, last)]
                idle = self.idle_lowest and last > 0 and band >= last
                ex = self._executors[key] = CpuExecutor.create(workers, offset, idle)
            return ex

    def acquire(self, workers: int, band: int) -> tuple[tuple[int, int, int], CpuExecutor]:
        """An executor of ``workers`` threads in ``band`` that no running request holds (made
        when every one is held); give it back with ``release``."""
        with self._lock:
            i = 0
            while (workers, band, i) in self._busy:
                i += 1
            key = (workers, band, i)
            self._busy.add(key)
        try:
            return key, self.get(*key)
        except BaseException:
            self.release(key)
            raise

    def release(self, key: tuple[int, int, int]) -> None:
        with self._lock:
            self._busy.discard(key)

    def describe(self) -> list[dict[str, Any]]:
        with self._lock:
            return [
                {
                    "workers": w,
                    "band": b,
                    "instance": i,
                    "nice": ex.nice,
                    "idle": ex.idle,
                    "threads": len(ex.thread_ids),
                    "cores": None if ex.pinned is None else list(ex.pinned),
                }
                for (w, b, i), ex in sorted(self._executors.items())
            ]
