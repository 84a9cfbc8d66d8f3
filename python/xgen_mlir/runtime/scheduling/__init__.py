"""Co-scheduling several compiled models: policies, executors, task graphs, observability.

The public entry is ``xgen_mlir.runtime.scheduler`` (Scheduler, TaskGraph); docs/scheduler.md
has the design."""

from .core import DeadlineMissedError, Request, Scheduler, SchedulerClosedError
from .graph import TaskGraph
from .policies import EarliestDeadlineFirst, FairShare, Policy, PriorityAging

__all__ = [
    "DeadlineMissedError",
    "EarliestDeadlineFirst",
    "FairShare",
    "Policy",
    "PriorityAging",
    "Request",
    "Scheduler",
    "SchedulerClosedError",
    "TaskGraph",
]
