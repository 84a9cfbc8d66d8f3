"""Run several compiled models at once: priorities with aging, earliest deadline first, fair
share; CPU worker shares per request on separate IREE executors; preemption of lower-priority
work through the OS priority of its executor's threads; task graphs with end-to-end deadlines;
Vulkan placement; stats, live view and HTML timeline. Implementation: runtime/scheduling/;
design: docs/scheduler.md.

    sched = Scheduler("priority")
    sched.add_model("mobilenet", "mobilenet.vmfb", priority=2, deadline=0.033)
    sched.add_model("bert", "bert_bundle/", priority=0)
    fut = sched.submit("mobilenet", image)       # concurrent.futures.Future
    fut.result(); sched.shutdown()
"""

from .scheduling import (
    DeadlineMissedError,
    EarliestDeadlineFirst,
    FairShare,
    Policy,
    PriorityAging,
    Scheduler,
    SchedulerClosedError,
    TaskGraph,
)
from .scheduling.observe import render_text, timeline_html

__all__ = [
    "DeadlineMissedError",
    "EarliestDeadlineFirst",
    "FairShare",
    "Policy",
    "PriorityAging",
    "Scheduler",
    "SchedulerClosedError",
    "TaskGraph",
    "render_text",
    "timeline_html",
]
