"""Measurement workers on a Ray cluster: local by default (Ray starts one on this machine),
or ``address`` to join a cluster of machines of the host type being tuned for.

Each batch is a Ray task asking for as many CPUs as the module's threads, so a node never
times two batches at once (they would share its cores and both measure wrong), while a
cluster of N nodes measures N batches at a time (``runner``: each worker measures on a
foreign device instead, ``tuning.runners``). Workers only measure; the driver writes
every result to the one database, with the identity of the host that measured it.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from typing import Any

from ..diagnostics import optional_import
from .measure import MeasureSettings, measure_batch


def _measure_remote(
    standalone: str,
    configs: list[dict[str, Any]],
    flags: list[str],
    settings: dict[str, Any],
    elem_bits: int,
    runner: str | None = None,
) -> dict[str, Any]:
    from .runners import make_runner

    ms = MeasureSettings(**settings)
    device = make_runner(runner)
    try:
        out = measure_batch(standalone, configs, flags, ms, elem_bits, runner=device)
        results = [asdict(m) for m in out]
        error = ""
    except Exception as e:  # the baseline itself failed: the op is left untuned
        results, error = [], f"{type(e).__name__}: {e}"[:500]
    return {
        "host": device.identity(ms.threads).to_json(),
        "results": results,
        "error": error,
    }


class RayPool:
    """Submit measurement batches, collect finished ones."""

    def __init__(
        self,
        address: str | None = None,
        num_cpus: int | None = None,
        threads: int = 1,
        runner: str | None = None,
    ) -> None:
        ray = optional_import("ray", "tune", "tuning (it measures on a Ray cluster)")
        self.ray = ray
        self.started = False
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {
                "include_dashboard": False,
                "log_to_driver": False,
                "logging_level": "error",
            }
            if address:
                ray.init(address=address, **kwargs)
            else:
                # Ray runs its workers at nice 15 by default: any other process on the
                # machine then takes the cores from the measurements and the compiles they
                # start (in CI, beside a busy test worker, a 45 s search took 20 minutes).
                # A cluster joined by address keeps its own setting: start its nodes with
                # RAY_worker_niceness=0.
                os.environ.setdefault("RAY_worker_niceness", "0")
                ray.init(num_cpus=num_cpus, **kwargs)
            self.started = True
        self.threads = threads
        self.runner = runner  # tuning.runners spec: where each batch runs (None: the worker)
        self._fn = ray.remote(num_cpus=threads, max_retries=0)(_measure_remote)
        self.inflight: dict[Any, Any] = {}

    @property
    def capacity(self) -> int:
        if self.runner not in (None, "", "local"):
            return 1  # one device: a batch timed beside another would share its cores
        cpus = int(self.ray.cluster_resources().get("CPU", 1))
        return max(1, cpus // max(1, self.threads))

    def submit(
        self,
        tag: Any,
        standalone: str,
        configs: list[dict[str, Any]],
        flags: list[str],
        settings: MeasureSettings,
        elem_bits: int,
    ) -> None:
        ref = self._fn.remote(standalone, configs, flags, asdict(settings), elem_bits, self.runner)
        self.inflight[ref] = tag

    def wait(self, timeout: float | None = None) -> list[tuple[Any, dict[str, Any]]]:
        if not self.inflight:
            return []
        done, _ = self.ray.wait(list(self.inflight), num_returns=1, timeout=timeout)
        out = []
        for ref in done:
            tag = self.inflight.pop(ref)
            try:
                out.append((tag, self.ray.get(ref)))
            except Exception as e:  # the worker died: nothing measured
                out.append((tag, {"host": "", "results": [], "error": str(e)[:500]}))
        return out

    def close(self) -> None:
        for ref in list(self.inflight):
            self.ray.cancel(ref, force=True)
        self.inflight.clear()
        if self.started:
            self.ray.shutdown()
