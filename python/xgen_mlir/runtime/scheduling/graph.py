"""Closed task graphs: a DAG of models declared once, run per input with one end-to-end deadline.

Each node names a registered model and the nodes it waits for. A node's ``inputs`` function
receives its dependencies' outputs (keyword arguments named after the nodes; a root node
receives the graph's inputs) and returns the node's inputs: a tuple (one request), a single
array, or a list of tuples (one request per element: fan-out, e.g. a classifier on each crop
of a detector; the node's output is then the list of outputs). Every request of one graph run
carries the run's absolute deadline (EDF orders by it) and the graph's priority.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import UnknownNameError, XGenError

if TYPE_CHECKING:
    from .core import Scheduler


@dataclass
class _Node:
    name: str
    model: str
    after: tuple[str, ...]
    inputs: Callable[..., Any] | None


class TaskGraph:
    """``g = TaskGraph(sched, "camera", deadline=0.1)``; ``g.node("det", "detector")``;
    ``g.node("cls", "classifier", after=["det"], inputs=lambda det: crops(det))``;
    ``g.submit(frame)`` -> Future of ``{node name: output}``."""

    def __init__(
        self,
        scheduler: Scheduler,
        name: str,
        *,
        deadline: float | None = None,
        priority: float | None = None,
    ) -> None:
        self.scheduler, self.name = scheduler, name
        self.deadline, self.priority = deadline, priority
        self.nodes: dict[str, _Node] = {}

    def node(
        self,
        name: str,
        model: str,
        *,
        after: Sequence[str] = (),
        inputs: Callable[..., Any] | None = None,
    ) -> TaskGraph:
        """Add a node. Dependencies must be declared first, so the graph has no cycles."""
        if name in self.nodes:
            raise XGenError(f"graph '{self.name}': node '{name}' is declared twice")
        if model not in self.scheduler.models:
            raise UnknownNameError("model", model, self.scheduler.models)
        missing = [a for a in after if a not in self.nodes]
        if missing:
            raise XGenError(
                f"graph '{self.name}': node '{name}' waits for undeclared node(s) "
                f"{', '.join(missing)} (declare dependencies first; cycles are impossible)"
            )
        if after and inputs is None:
            raise XGenError(
                f"graph '{self.name}': node '{name}' has dependencies, so it needs an "
                f"inputs= function that makes its inputs from their outputs"
            )
        self.nodes[name] = _Node(name, model, tuple(after), inputs)
        return self

    def submit(self, *inputs: Any) -> Future:
        """Run the graph once on ``inputs``; the Future resolves to every node's output, or to
        the first error (the nodes not yet started are then not run)."""
        if not self.nodes:
            raise XGenError(f"graph '{self.name}' has no nodes")
        return _Run(self, inputs).start()


class _Run:
    def __init__(self, graph: TaskGraph, inputs: tuple[Any, ...]) -> None:
        self.g = graph
        self.inputs = inputs
        self.sched = graph.scheduler
        self.future: Future = Future()
        self.lock = threading.Lock()
        self.outputs: dict[str, Any] = {}
        self.started: set[str] = set()
        self.submitted = self.sched.now()
        self.deadline_at = None if graph.deadline is None else self.submitted + graph.deadline

    def start(self) -> Future:
        self.future.set_running_or_notify_cancel()
        self._advance()
        return self.future

    def _ready(self) -> list[str]:
        with self.lock:
            out = [
                n.name
                for n in self.g.nodes.values()
                if n.name not in self.started and all(a in self.outputs for a in n.after)
            ]
            self.started.update(out)
            return out

    def _advance(self) -> None:
        for name in self._ready():
            node = self.g.nodes[name]
            try:
                if node.after:
                    assert node.inputs is not None
                    made = node.inputs(**{a: self.outputs[a] for a in node.after})
                elif node.inputs is not None:
                    made = node.inputs(*self.inputs)
                else:
                    made = self.inputs
                fan_out = isinstance(made, list)
                calls = made if fan_out else [made]
                calls = [c if isinstance(c, tuple) else (c,) for c in calls]
                futures = [
                    self.sched._submit(
                        node.model,
                        c,
                        self.g.priority,
                        None,
                        self.g.name,
                        internal=True,
                        deadline_at=self.deadline_at,
                    )
                    for c in calls
                ]
            except BaseException as e:
                self._fail(name, e)
                return
            self._collect(name, futures, fan_out)

    def _collect(self, name: str, futures: list[Future], fan_out: bool) -> None:
        remaining = [len(futures)]
        if not futures:  # fan-out over nothing (e.g. no detections)
            self._done(name, [])
            return

        def one(_: Future) -> None:
            with self.lock:
                remaining[0] -= 1
                last = remaining[0] == 0
            if not last:
                return
            for f in futures:
                if f.cancelled():
                    self._fail(name, XGenError(f"node '{name}' was cancelled"))
                    return
                if f.exception() is not None:
                    self._fail(name, f.exception())  # type: ignore[arg-type]
                    return
            results = [f.result() for f in futures]
            self._done(name, results if fan_out else results[0])

        for f in futures:
            f.add_done_callback(one)

    def _done(self, name: str, output: Any) -> None:
        with self.lock:
            self.outputs[name] = output
            complete = len(self.outputs) == len(self.g.nodes)
        if complete:
            self._finish("ok")
            if not self.future.done():
                self.future.set_result(dict(self.outputs))
        else:
            self._advance()

    def _fail(self, name: str, error: BaseException) -> None:
        with self.lock:
            if self.future.done():
                return
            self.started.update(self.g.nodes)  # start nothing more
        self._finish("error")
        error.add_note(f"in graph '{self.g.name}', node '{name}'")
        self.future.set_exception(error)

    def _finish(self, status: str) -> None:
        self.sched.recorder.on_graph(
            self.g.name, self.submitted, self.sched.now(), self.deadline_at, status
        )
