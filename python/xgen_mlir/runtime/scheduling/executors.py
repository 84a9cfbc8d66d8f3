"""IREE devices with their own task executors: a worker count and an OS priority per executor.

IREE's ``local-task`` driver creates its task executors (one worker thread per group) when the
*driver* is created, from the process-wide ``--task_topology_*`` flags; every device made from
that driver shares them. ``iree.runtime.get_driver`` caches one driver per name, but the
binding's ``create_hal_driver`` makes a fresh one. So an executor of ``k`` workers is: set
``--task_topology_group_count=k``, create a driver, set the flag back to 0 (IREE's default:
one worker per core), make a device. Each executor is made once and reused.

The worker threads exist from the driver's creation (named ``iree-worker-N``; the device adds
an ``iree-poller``/proactor thread). They are found by comparing the process's threads before
and after, and get the executor's OS priority (a nice value, raised relative to the caller):
this is how lower-priority work yields the cores to higher-priority work *while it runs*,
since IREE's runtime cannot pause an invocation between dispatches (docs/scheduler.md).
Raising a thread's nice needs no privileges; lowering it again does (EPERM for an
unprivileged user, measured), so an executor keeps its nice for life and requests of
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


def cpu_count() -> int:
    """The cores this process may use (its affinity mask), not the machine's total."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


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


@dataclass
class CpuExecutor:
    """One local-task driver and device: ``workers`` threads at nice offset ``nice_offset``."""

    workers: int
    nice_offset: int
    driver: Any = None
    device: Any = None
    thread_ids: list[int] = field(default_factory=list)
    nice: int | None = None

    @classmethod
    def create(cls, workers: int, nice_offset: int) -> CpuExecutor:
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
        ex.nice = renice(new, nice_offset)
        return ex


class ExecutorPool:
    """CPU executors keyed by (workers, priority band), created on first use, then reused."""

    def __init__(self, nice_offsets: list[int]) -> None:
        self.nice_offsets = nice_offsets
        self._lock = threading.Lock()
        self._executors: dict[tuple[int, int], CpuExecutor] = {}
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

    def get(self, workers: int, band: int) -> CpuExecutor:
        key = (workers, band)
        with self._lock:
            ex = self._executors.get(key)
            if ex is None:
                offset = self.nice_offsets[min(band, len(self.nice_offsets) - 1)]
                ex = self._executors[key] = CpuExecutor.create(workers, offset)
            return ex

    def describe(self) -> list[dict[str, Any]]:
        with self._lock:
            return [
                {
                    "workers": w,
                    "band": b,
                    "nice": ex.nice,
                    "threads": len(ex.thread_ids),
                }
                for (w, b), ex in sorted(self._executors.items())
            ]
