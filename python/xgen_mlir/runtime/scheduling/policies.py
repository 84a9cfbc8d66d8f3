"""Which queued request runs next, and at which OS priority band.

A policy ranks ready requests (``key``: smaller runs first) and maps a request to a band
(0 = the highest OS priority; a band's executors have a higher nice value than the band above).
A request may preempt running work only from a strictly better band. Queues here are short
(requests waiting for a core), so selection is a linear scan: ranks that change with time
(aging) need no re-heapify.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from ...errors import UnknownNameError, XGenError

if TYPE_CHECKING:
    from .core import Request
    from .models import SchedModel


@dataclass
class Policy:
    """Base: first come, first served, one band, no preemption."""

    name: str = "fifo"
    preemptive: bool = False

    def levels(self, models: list[SchedModel]) -> list[float]:
        return [0.0]

    def band(self, req: Request, now: float, levels: list[float]) -> int:
        return 0

    def key(self, req: Request, now: float) -> tuple[float, ...]:
        return (req.submitted, req.id)

    def charge(self, req: Request, seconds: float, workers: int) -> None:
        """Account a finished request (fair share)."""

    def activate(self, model: str, active: list[str]) -> None:
        """``model`` has work again; ``active``: the models that had work all along."""

    def describe(self) -> dict[str, Any]:
        return {"policy": self.name, "preemptive": self.preemptive}


@dataclass
class PriorityAging(Policy):
    """Fixed priority (higher runs first) with aging: a waiting request gains ``aging_rate``
    priority levels per second of waiting, so it eventually starts ahead of newer requests of
    a higher base priority (no starvation). Bands follow the models' distinct priority levels
    and a request's *base* priority: aging changes the order requests start in, not the OS
    priority they run at, so a new high-priority request still preempts an aged low one
    (which keeps running at its band's share of the cores and so finishes)."""

    name: str = "priority"
    preemptive: bool = True
    aging_rate: float = 1.0

    def effective(self, req: Request, now: float) -> float:
        return req.priority + self.aging_rate * max(0.0, now - req.submitted)

    def levels(self, models: list[SchedModel]) -> list[float]:
        return sorted({m.priority for m in models}, reverse=True) or [0.0]

    def band(self, req: Request, now: float, levels: list[float]) -> int:
        for i, level in enumerate(levels):
            if req.priority >= level:
                return i
        return len(levels) - 1

    def key(self, req: Request, now: float) -> tuple[float, ...]:
        return (-self.effective(req, now), req.submitted, req.id)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "aging_rate_per_s": self.aging_rate}


@dataclass
class EarliestDeadlineFirst(Policy):
    """Earliest absolute deadline first. A request without a deadline is ordered by an
    implicit one, its arrival plus a slack (the model's ``slack``, else ``default_slack``
    seconds): it ranks behind deadline work for about that long and then ahead of newly
    arriving requests, so it always starts, however long a stream of deadline work lasts
    (``default_slack=math.inf``: never, the plain EDF order). The implicit deadline orders
    only: it is not a deadline (no miss, never dropped by ``drop_late``), and the request
    still runs in the lowest band. Bands are deadline-monotonic: models with shorter relative
    deadlines get better bands, so a request with a tight deadline can preempt running
    background work; a deadline longer than every model's default (a task graph's) still
    ranks above none."""

    name: str = "edf"
    preemptive: bool = True
    default_slack: float = 10.0

    def __post_init__(self) -> None:
        if not self.default_slack >= 0:  # also refuses NaN
            raise XGenError(f"edf: default_slack must be >= 0 seconds, got {self.default_slack}")

    def levels(self, models: list[SchedModel]) -> list[float]:
        rel = sorted({m.deadline for m in models if m.deadline is not None})
        return [*rel, math.inf]

    def band(self, req: Request, now: float, levels: list[float]) -> int:
        if req.rel_deadline is None:
            return len(levels) - 1
        for i, level in enumerate(levels[:-1]):
            if req.rel_deadline <= level:
                return i
        return max(0, len(levels) - 2)  # any deadline ranks above work with none

    def effective_deadline(self, req: Request) -> float:
        """The request's deadline, or for one without: arrival + slack."""
        if req.deadline is not None:
            return req.deadline
        slack = getattr(req, "slack", None)
        return req.submitted + (self.default_slack if slack is None else slack)

    def key(self, req: Request, now: float) -> tuple[float, ...]:
        return (self.effective_deadline(req), req.submitted, req.id)

    def describe(self) -> dict[str, Any]:
        slack = None if math.isinf(self.default_slack) else self.default_slack
        return {**super().describe(), "default_slack_s": slack}


@dataclass
class FairShare(Policy):
    """Weighted fair share: the model with the least service received per unit of weight
    (worker-seconds / weight) goes next; a model that was idle restarts at the current minimum
    (it cannot bank idle time). Cores are split among backlogged models by weight. One band,
    no preemption."""

    name: str = "fair"
    preemptive: bool = False
    service: dict[str, float] = field(default_factory=dict)

    def key(self, req: Request, now: float) -> tuple[float, ...]:
        return (self.service.get(req.model, 0.0), req.submitted, req.id)

    def activate(self, model: str, active: list[str]) -> None:
        if active:
            floor = min(self.service.get(m, 0.0) for m in active)
            self.service[model] = max(self.service.get(model, 0.0), floor)

    def charge(self, req: Request, seconds: float, workers: int) -> None:
        w = req.weight if req.weight > 0 else 1.0
        self.service[req.model] = self.service.get(req.model, 0.0) + seconds * workers / w


POLICIES = {"priority": PriorityAging, "edf": EarliestDeadlineFirst, "fair": FairShare}


def make_policy(policy: str | Policy, **options: Any) -> Policy:
    if isinstance(policy, Policy):
        return policy
    if policy not in POLICIES:
        raise UnknownNameError("scheduling policy", policy, list(POLICIES))
    cls = POLICIES[policy]
    unknown = sorted(set(options) - {f.name for f in fields(cls)} - {"name", "preemptive"})
    if unknown:
        raise XGenError(f"policy '{policy}' takes no option(s) {', '.join(unknown)}")
    return cls(**options)  # type: ignore[arg-type]
