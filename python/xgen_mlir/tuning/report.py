"""``xgen-tune --report``: one self-contained HTML page (inline SVG, nothing fetched) with each
op's search curve (best speedup over IREE's own config against trials), the whole run's
estimated contraction speedup over time, each op's verdict in the model (applied, rejected
with the measured ratio, or not applied and why), the model's time before and after, and the
cost model's ranking quality on held-out measurements."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from ..fileio import atomic_write_bytes


def _curve_svg(points: list[tuple[float, float]], xlabel: str, w: int = 360, h: int = 160) -> str:
    if not points:
        return "<p>no measurements</p>"
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, x1 = 0.0, max(max(xs), 1.0)
    y0, y1 = min(1.0, min(ys)), max(max(ys), 1.05)
    pad = 30

    def sx(x: float) -> float:
        return pad + (x - x0) / (x1 - x0) * (w - 2 * pad)

    def sy(y: float) -> float:
        return h - pad - (y - y0) / (y1 - y0) * (h - 2 * pad)

    path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in points)
    return (
        f'<svg width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg">'
        f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="#888"/>'
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="#888"/>'
        f'<line x1="{pad}" y1="{sy(1.0):.1f}" x2="{w - pad}" y2="{sy(1.0):.1f}" '
        'stroke="#ccc" stroke-dasharray="4"/>'
        f'<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="{path}"/>'
        f'<text x="{w / 2}" y="{h - 5}" font-size="11" text-anchor="middle">{xlabel}</text>'
        f'<text x="4" y="{pad - 8}" font-size="11">speedup (max {y1:.2f}x)</text>'
        "</svg>"
    )


def render(result: Any) -> str:
    rows = []
    for op in sorted(result.ops, key=lambda o: -(o.baseline or 0) * o.count):
        base = f"{op.baseline * 1e3:.3f}" if op.baseline else "-"
        best = f"{op.best * 1e3:.3f}" if op.best else "-"
        rows.append(
            f"<tr><td>{html.escape(op.description)}</td><td>{op.count}</td><td>{base}</td>"
            f"<td>{best}</td><td>{op.speedup:.2f}x</td><td>{op.trials}</td><td>{op.failed}</td>"
            f"<td>{_curve_svg([(float(t), s) for t, s in op.curve], 'trials', 240, 110)}</td></tr>"
        )
    model = ""
    if result.model_ms_before and result.model_ms_after:
        model = (
            f"<p>Model: <b>{result.model_ms_before:.3f} ms</b> untuned &rarr; "
            f"<b>{result.model_ms_after:.3f} ms</b> tuned "
            f"({result.model_ms_before / result.model_ms_after:.2f}x), median of interleaved "
            "rounds.</p>"
        )
    verdicts = "".join(
        f"<tr><td>{html.escape(v.description)}</td><td>{v.count}</td><td>{v.status}</td>"
        f"<td>{v.standalone:.2f}x</td><td>{v.expected_gain * 100:.1f}%</td>"
        f"<td>{'-' if v.ratio is None else f'{v.ratio:.3f}'}</td><td>{html.escape(v.why)}</td></tr>"
        for v in sorted(result.verdicts.values(), key=lambda v: -v.expected_gain)
    )
    checks = (
        f"<h2>In the model ({result.model_checks} model compiles timed)</h2>"
        "<table><tr><th>op</th><th>count</th><th>verdict</th><th>alone</th>"
        "<th>expected gain</th><th>model ratio</th><th>why</th></tr>"
        f"{verdicts}</table>"
        if result.verdicts
        else ""
    )
    rank = html.escape(", ".join(f"{k}: {v}" for k, v in result.ranking.items()))
    timeline = _curve_svg([(t / 60.0, est) for t, _, est in result.timeline], "minutes", 480, 180)
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>xgen_mlir tuning report</title>
<style>body{{font-family:sans-serif;margin:2em}}td,th{{border-bottom:1px solid #ddd;
padding:4px 8px;text-align:right}}td:first-child{{text-align:left}}</style></head><body>
<h1>Tuning report</h1>
<p>Host: {html.escape(result.host)}. {result.trials} trials in {result.seconds:.0f} s.
Database: {html.escape(str(result.db))}.</p>
{model}
<h2>Estimated contraction speedup over the run</h2>
{timeline}
<h2>Per op (times of the standalone dispatch, ms)</h2>
<table><tr><th>op</th><th>count</th><th>IREE</th><th>tuned</th><th>speedup</th>
<th>trials</th><th>failed</th><th>search curve</th></tr>
{"".join(rows)}</table>
{checks}
<h2>Cost model</h2><p>Ranking quality on held-out measurements: {rank}</p>
</body></html>
"""


def write_report(result: Any, path: Path) -> Path:
    return atomic_write_bytes(path, render(result).encode())
