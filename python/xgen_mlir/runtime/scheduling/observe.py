"""What the scheduler did: per-model latency percentiles, deadline misses, queue depths and
worker shares (JSON), a live text view, and an HTML timeline (inline SVG Gantt chart)."""

from __future__ import annotations

import html
import json
import math
import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ...fileio import atomic_write_text


@dataclass
class Event:
    """One finished (or failed, or cancelled) request; times in seconds since the start."""

    id: int
    model: str
    lane: str  # "cpu" or "vulkan"
    status: str  # ok, error, cancelled, dropped (deadline passed before it started)
    submitted: float
    started: float | None
    finished: float
    deadline: float | None
    workers: int
    band: int
    nice: int | None
    preempted: list[int]
    graph: str | None = None
    costs: dict[str, float] | None = None  # auto placement: estimated seconds per device
    cores: list[int] | None = None  # the cores its CPU workers were pinned to

    @property
    def latency(self) -> float:
        return self.finished - self.submitted

    @property
    def missed(self) -> bool:
        return self.deadline is not None and self.finished > self.deadline


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100) of ``values``; None if empty."""
    if not values:
        return None
    s = sorted(values)
    k = max(0, min(len(s) - 1, math.ceil(q / 100 * len(s)) - 1))
    return s[k]


def _ms(v: float | None) -> float | None:
    return None if v is None else round(v * 1e3, 3)


class Recorder:
    """Thread-safe event log and gauges; ``stats()`` summarizes it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: list[Event] = []
        self.queue_max: dict[str, int] = {}
        self.submitted: dict[str, int] = {}
        self.preemptions = 0
        self.graph_events: list[dict[str, Any]] = []

    def on_submit(self, model: str, depth: int) -> None:
        with self._lock:
            self.submitted[model] = self.submitted.get(model, 0) + 1
            self.queue_max[model] = max(self.queue_max.get(model, 0), depth)

    def on_event(self, ev: Event) -> None:
        with self._lock:
            self.events.append(ev)
            self.preemptions += len(ev.preempted)

    def on_graph(
        self, name: str, submitted: float, finished: float, deadline: float | None, status: str
    ) -> None:
        with self._lock:
            self.graph_events.append(
                {
                    "graph": name,
                    "submitted": submitted,
                    "finished": finished,
                    "deadline": deadline,
                    "status": status,
                }
            )

    def stats(
        self,
        now: float,
        queued: dict[str, int],
        running: dict[str, int],
        workers_now: dict[str, int],
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        with self._lock:
            events = list(self.events)
            graphs = list(self.graph_events)
            submitted = dict(self.submitted)
            qmax = dict(self.queue_max)
            preemptions = self.preemptions
        span = max(now, 1e-9)
        models: dict[str, Any] = {}
        names = sorted(set(submitted) | {e.model for e in events})
        for name in names:
            evs = [e for e in events if e.model == name]
            ok = [e for e in evs if e.status == "ok"]
            lat = [e.latency for e in ok]
            wait = [e.started - e.submitted for e in ok if e.started is not None]
            service = [e.finished - e.started for e in ok if e.started is not None]
            with_deadline = [e for e in evs if e.deadline is not None and e.status != "cancelled"]
            worker_s = sum(
                (e.finished - e.started) * e.workers for e in evs if e.started is not None
            )
            models[name] = {
                "submitted": submitted.get(name, 0),
                "completed": len(ok),
                "failed": sum(e.status == "error" for e in evs),
                "cancelled": sum(e.status == "cancelled" for e in evs),
                "dropped_late": sum(e.status == "dropped" for e in evs),
                "throughput_per_s": round(len(ok) / span, 3),
                "latency_ms": {f"p{q}": _ms(percentile(lat, q)) for q in (50, 90, 99)}
                | {"max": _ms(max(lat) if lat else None)},
                "wait_ms": {f"p{q}": _ms(percentile(wait, q)) for q in (50, 99)}
                | {"max": _ms(max(wait) if wait else None)},
                "service_ms_p50": _ms(percentile(service, 50)),
                "deadlines": len(with_deadline),
                "deadline_misses": sum(e.missed for e in with_deadline),
                "queue_depth": queued.get(name, 0),
                "queue_depth_max": qmax.get(name, 0),
                "running": running.get(name, 0),
                "workers_now": workers_now.get(name, 0),
                "worker_share_avg": round(worker_s / span, 3),  # mean CPU workers held
                "runs_per_device": {
                    lane: sum(e.lane == lane for e in evs if e.started is not None)
                    for lane in sorted({e.lane for e in evs if e.started is not None})
                },
            }
        out: dict[str, Any] = {
            "elapsed_s": round(now, 3),
            "models": models,
            "preemptions": preemptions,
        }
        if graphs:
            per: dict[str, Any] = {}
            for g in sorted({x["graph"] for x in graphs}):
                gs = [x for x in graphs if x["graph"] == g]
                gok = [x for x in gs if x["status"] == "ok"]
                glat = [x["finished"] - x["submitted"] for x in gok]
                per[g] = {
                    "completed": len(gok),
                    "failed": sum(x["status"] != "ok" for x in gs),
                    "latency_ms": {f"p{q}": _ms(percentile(glat, q)) for q in (50, 90, 99)},
                    "deadline_misses": sum(
                        x["deadline"] is not None and x["finished"] > x["deadline"] for x in gs
                    ),
                }
            out["graphs"] = per
        if extra:
            out.update(extra)
        return out

    def event_dicts(self) -> list[dict[str, Any]]:
        with self._lock:
            return [asdict(e) for e in self.events]


def render_text(stats: dict[str, Any]) -> str:
    """The live view: one line per model."""
    head = (
        f"{'model':<16} {'done':>6} {'fail':>4} {'queue':>5} {'run':>3} {'wrk':>3} "
        f"{'share':>5} {'p50 ms':>8} {'p99 ms':>8} {'miss':>6}"
    )
    lines = [
        f"xgen-serve  t={stats['elapsed_s']:.1f}s  preemptions={stats['preemptions']}",
        head,
        "-" * len(head),
    ]

    def f(v: Any) -> str:
        return "-" if v is None else f"{v:.1f}"

    for name, m in stats["models"].items():
        miss = f"{m['deadline_misses']}/{m['deadlines']}" if m["deadlines"] else "-"
        lines.append(
            f"{name[:16]:<16} {m['completed']:>6} {m['failed']:>4} {m['queue_depth']:>5} "
            f"{m['running']:>3} {m['workers_now']:>3} {m['worker_share_avg']:>5.2f} "
            f"{f(m['latency_ms']['p50']):>8} {f(m['latency_ms']['p99']):>8} {miss:>6}"
        )
    for name, g in stats.get("graphs", {}).items():
        lines.append(
            f"graph {name[:10]:<10} {g['completed']:>6} {g['failed']:>4} {'':>5} {'':>3} "
            f"{'':>3} {'':>5} {f(g['latency_ms']['p50']):>8} {f(g['latency_ms']['p99']):>8} "
            f"{g['deadline_misses']:>6}"
        )
    return "\n".join(lines)


def write_json(path: str | os.PathLike[str], payload: dict[str, Any]) -> Path:
    return atomic_write_text(path, json.dumps(payload, indent=1, default=str) + "\n")


_COLORS = [
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#b07aa1",
    "#76b7b2",
    "#edc948",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
    "#e15759",
]


def timeline_html(
    events: list[dict[str, Any]],
    title: str = "xgen_mlir scheduler timeline",
    stats: dict[str, Any] | None = None,
) -> str:
    """A self-contained HTML page: one Gantt row group per model, a bar per request from its
    start to its end (a pale bar before it: the time it waited), deadline misses outlined in
    red, failures hatched grey; hover a bar for its details. No scripts."""
    models = sorted({e["model"] for e in events})
    color = {m: _COLORS[i % len(_COLORS)] for i, m in enumerate(models)}
    t_end = max((e["finished"] for e in events), default=1.0) or 1.0
    width, left, row_h = 1200, 140, 14
    scale = (width - left - 20) / t_end
    rows: list[str] = []
    y = 30
    for m in models:
        evs = sorted((e for e in events if e["model"] == m), key=lambda e: e["submitted"])
        lanes: list[float] = []  # end time of the last bar in each sub-row
        placed = []
        for e in evs:
            start = e["started"] if e["started"] is not None else e["finished"]
            for i, end in enumerate(lanes):
                if end <= e["submitted"]:
                    lanes[i] = e["finished"]
                    placed.append((i, e, start))
                    break
            else:
                lanes.append(e["finished"])
                placed.append((len(lanes) - 1, e, start))
        n = max(1, len(lanes))
        rows.append(
            f'<text x="4" y="{y + n * row_h / 2 + 4:.1f}" font-size="12">{html.escape(m)}</text>'
        )
        for sub, e, start in placed:
            yy = y + sub * row_h
            x0 = left + e["submitted"] * scale
            xs = left + start * scale
            x1 = left + e["finished"] * scale
            tip = (
                f"{m} #{e['id']} {e['status']} workers={e['workers']} band={e['band']} "
                f"nice={e['nice']} cores={e.get('cores')} lane={e['lane']} "
                f"wait={(start - e['submitted']) * 1e3:.1f}ms "
                f"run={(e['finished'] - start) * 1e3:.1f}ms"
                + (f" deadline={e['deadline'] * 1e3:.1f}ms" if e["deadline"] is not None else "")
                + (f" preempted={e['preempted']}" if e["preempted"] else "")
                + (f" graph={e['graph']}" if e.get("graph") else "")
                + (
                    " estimated " + ", ".join(f"{k}={v * 1e3:.1f}ms" for k, v in e["costs"].items())
                    if e.get("costs")
                    else ""
                )
            )
            missed = e["deadline"] is not None and e["finished"] > e["deadline"]
            fill = color[m] if e["status"] == "ok" else "#999"
            stroke = ' stroke="#d00" stroke-width="1.5"' if missed else ""
            opacity = 0.55 + 0.45 * min(1.0, e["workers"] / 2)
            rows.append(
                f'<rect x="{x0:.1f}" y="{yy + 4}" width="{max(0.0, xs - x0):.1f}" height="4" '
                f'fill="{fill}" opacity="0.3"/>'
                f'<rect x="{xs:.1f}" y="{yy + 1}" width="{max(0.5, x1 - xs):.1f}" '
                f'height="{row_h - 2}" fill="{fill}" opacity="{opacity:.2f}"{stroke}>'
                f"<title>{html.escape(tip)}</title></rect>"
            )
        y += n * row_h + 10
    ticks = []
    step = _tick_step(t_end)
    t = 0.0
    while t <= t_end + 1e-9:
        x = left + t * scale
        ticks.append(
            f'<line x1="{x:.1f}" y1="20" x2="{x:.1f}" y2="{y}" stroke="#ddd"/>'
            f'<text x="{x:.1f}" y="14" font-size="10" text-anchor="middle">{t:g}s</text>'
        )
        t = round(t + step, 9)
    summary = ""
    if stats:
        summary = "<pre>" + html.escape(render_text(stats)) + "</pre>"
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y + 10}" '
        f'font-family="sans-serif">{"".join(ticks)}{"".join(rows)}</svg>'
    )
    legend = (
        "<p>Bars: a request's run (darker: more CPU workers); the thin pale bar before it: "
        "time queued. Red outline: deadline missed. Grey: failed or cancelled. Hover for "
        "details.</p>"
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"</head><body><h2>{html.escape(title)}</h2>{legend}{svg}{summary}</body></html>\n"
    )


def _tick_step(t_end: float) -> float:
    for step in (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 60):
        if t_end / step <= 20:
            return float(step)
    return 120.0


def write_timeline(
    path: str | os.PathLike[str],
    events: list[dict[str, Any]],
    stats: dict[str, Any] | None = None,
    title: str | None = None,
) -> Path:
    return atomic_write_text(
        path, timeline_html(events, title or "xgen_mlir scheduler timeline", stats)
    )
