"""A one-page HTML report per compiled model: what the graph is made of and what fusion did.

Sections: operators by mapping type, dispatches per call with and without xgen_mlir's passes,
FLOPs before/after graph rewriting, latency of every system measured (with the achieved
GFLOP/s as a fraction of the host's measured fp32 matmul rate), per-dispatch time when a
profile is given, and the fusion planner's groups with the reason for every refused
fusion. Plain HTML with inline SVG bars: no JavaScript, no external files.
"""

from __future__ import annotations

import html
from collections import Counter
from typing import Any

from ..analysis import MappingType, classify
from ..analysis.mapping_types import ir_of

_COLORS = {
    MappingType.ONE_TO_ONE.value: "#4e79a7",
    MappingType.ONE_TO_MANY.value: "#f28e2b",
    MappingType.MANY_TO_MANY.value: "#e15759",
    MappingType.REORGANIZE.value: "#76b7b2",
    MappingType.SHUFFLE.value: "#59a14f",
}


def mapping_counts(module_op: Any) -> dict[str, int]:
    """Tensor ops of a module by mapping type (ops nested in linalg bodies not counted)."""
    counts: Counter[str] = Counter()

    def visit(op: Any) -> Any:
        mapping = classify(op)
        if mapping is not None:
            counts[mapping.type.value] += 1
        return ir_of(op).WalkResult.ADVANCE

    module_op.walk(visit)
    return dict(counts)


def _bars(rows: list[tuple[str, float, str]], unit: str = "", width: int = 420) -> str:
    """Horizontal SVG bar chart of (label, value, color) rows."""
    top = max((v for _, v, _ in rows), default=1.0) or 1.0
    h = 22 * len(rows) + 6
    out = [f'<svg width="{width + 260}" height="{h}" role="img">']
    for i, (label, value, color) in enumerate(rows):
        y = 4 + 22 * i
        w = max(1.0, width * value / top)
        out.append(
            f'<text x="0" y="{y + 14}" font-size="13">{html.escape(label)}</text>'
            f'<rect x="170" y="{y}" width="{w:.1f}" height="16" fill="{color}"/>'
            f'<text x="{176 + w:.1f}" y="{y + 13}" font-size="12">{value:g}{unit}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def fusion_graph(plan: Any, cell: int = 12, max_nodes: int = 1500) -> str:
    """The model's ops as a graph, one box per op (colored by mapping type, hover for its name)
    in execution order left to right, the members of each fused group on one shared lane
    with a band behind them, producer -> consumer edges as lines. Lanes are reused by groups
    whose spans do not overlap, so a long model stays a few lanes tall."""
    nodes = plan.nodes[:max_nodes]
    if not nodes:
        return ""
    groups: dict[int, list[int]] = {}
    for n in nodes:
        groups.setdefault(n.group if n.group is not None else -1 - n.index, []).append(n.index)
    lane_end: list[int] = []  # last x used on each lane
    lane_of: dict[int, int] = {}
    for key, members in sorted(groups.items(), key=lambda kv: min(kv[1])):
        lo, hi = min(members), max(members)
        lane = next((i for i, end in enumerate(lane_end) if end < lo), len(lane_end))
        if lane == len(lane_end):
            lane_end.append(hi)
        lane_end[lane] = hi
        lane_of[key] = lane
    pos = {}
    for key, members in groups.items():
        for m in members:
            pos[m] = (4 + cell * m, 4 + (cell + 6) * lane_of[key])
    width, height = 8 + cell * len(nodes), 8 + (cell + 6) * len(lane_end)
    out = [f'<svg width="{width}" height="{height}" role="img" class="fusion-graph">']
    for key, members in groups.items():
        if key >= 0 and len(members) > 1:
            x0, y = pos[min(members)]
            x1 = pos[max(members)][0] + cell
            out.append(
                f'<rect x="{x0 - 2}" y="{y - 2}" width="{x1 - x0 + 2}" height="{cell + 2}" '
                f'fill="#eee" stroke="#999" stroke-width="0.5"><title>group {key}: '
                f"{len(members)} ops</title></rect>"
            )
    half = cell // 2 - 1
    for n in nodes:
        for c in n.consumers:
            if c in pos:
                (xa, ya), (xb, yb) = pos[n.index], pos[c]
                out.append(
                    f'<line x1="{xa + half}" y1="{ya + half}" x2="{xb + half}" y2="{yb + half}" '
                    'stroke="#bbb" stroke-width="0.6"/>'
                )
    for n in nodes:
        x, y = pos[n.index]
        color = _COLORS.get(n.mapping.type.value, "#999")
        label = html.escape(f"#{n.index} {n.name} {n.result_type} (group {n.group})")
        out.append(
            f'<rect x="{x}" y="{y}" width="{cell - 2}" height="{cell - 2}" fill="{color}">'
            f"<title>{label}</title></rect>"
        )
    out.append("</svg>")
    return "".join(out)


def _table(head: list[str], rows: list[list[Any]]) -> str:
    th = "".join(f"<th>{html.escape(str(h))}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows
    )
    return f"<table><tr>{th}</tr>{body}</table>"


def plan_rows(plans: list[Any], limit: int = 400) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for plan in plans:
        for g in plan.groups:
            if len(g.members) < 2 and not any(
                d.group == g.index and not d.taken for d in plan.decisions
            ):
                continue
            ops = ", ".join(plan.nodes[i].name.split(".")[-1] for i in sorted(g.members))
            refused = "; ".join(
                f"{plan.nodes[d.node].name.split('.')[-1]}: {d.reason}"
                for d in plan.decisions
                if d.group == g.index and not d.taken
            )
            owner = "IREE (delegated)" if getattr(g, "delegated", False) else "xgen_mlir region"
            rows.append([g.index, g.type.value, owner, ops, refused or "-"])
            if len(rows) >= limit:
                return rows
    return rows


def render(name: str, data: dict[str, Any], plans: list[Any] | None = None) -> str:
    """``data``: the benchmark's record of one model (see benchmarks/bench_models.py)."""
    parts = [
        "<!doctype html><meta charset='utf-8'>",
        f"<title>xgen_mlir report: {html.escape(name)}</title>",
        "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
        "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;"
        "padding:3px 6px;text-align:left;vertical-align:top}</style>",
        f"<h1>{html.escape(name)}</h1>",
    ]
    host = data.get("host")
    if host:  # the machine the numbers are from, with its own measured matmul rates
        rates = ", ".join(f"{k} {v} GFLOP/s" for k, v in host.get("matmul_gflops", {}).items() if v)
        parts.append(
            f"<p>Measured on {html.escape(str(host.get('cpu_model', '?')))} "
            f"({html.escape(' '.join(host.get('isa_flags', [])))}), {host.get('threads')} "
            f"threads; matmul rates measured there: {html.escape(rates)}.</p>"
        )
    info = data.get("graph", {})
    if info:
        parts.append(
            f"<p>Imported: {info.get('aten_ops', '?')} PyTorch operators "
            f"({info.get('onnx_ops', '?')} in its ONNX export), "
            f"{info.get('linalg_ops', '?')} linalg/tensor ops; "
            f"{info.get('gflop', 0):.3f} GFLOP per call (counted from the IR).</p>"
        )
        mt = info.get("mapping_types", {})
        parts.append("<h2>Operators by mapping type</h2>")
        parts.append(_bars([(k, v, _COLORS.get(k, "#999")) for k, v in sorted(mt.items())]))
        if "gflop_after_rewrites" in info:
            parts.append("<h2>FLOPs before/after graph rewriting</h2>")
            bars = [
                ("imported", round(info["gflop"], 4), "#bab0ac"),
                ("after rewrites", round(info["gflop_after_rewrites"], 4), "#4e79a7"),
            ]
            for k, v in data.get("systems", {}).items():  # variants with other target options
                if "gflop_after_rewrites" in v:
                    bars.append((k, round(v["gflop_after_rewrites"], 4), "#59a14f"))
            parts.append(_bars(bars, " GFLOP"))
    systems = {k: v for k, v in data.get("systems", {}).items() if "median_ms" in v}
    disp = [(k, v["dispatches"], "#4e79a7") for k, v in systems.items() if "dispatches" in v]
    if disp:
        parts.append("<h2>Dispatches per call</h2>" + _bars(disp))
        for k, v in systems.items():
            if v.get("shared_packs"):  # what the backend did with multi-reader packs
                parts.append(f"<p>{html.escape(k)}: {html.escape(v['shared_packs'])}</p>")
    if systems:
        parts.append("<h2>Latency (median ms, lower is better)</h2>")
        parts.append(
            _bars([(k, round(v["median_ms"], 2), "#f28e2b") for k, v in systems.items()], " ms")
        )
        rows = [
            [
                k,
                f"{v['median_ms']:.2f}",
                v.get("gflops", ""),
                v.get("of_peak", ""),
                v.get("dispatches", ""),
                v.get("max_abs_err", ""),
            ]
            for k, v in systems.items()
        ]
        parts.append(
            _table(
                [
                    "system",
                    "median ms",
                    "GFLOP/s",
                    "of host fp32 matmul rate",
                    "dispatches",
                    "max |err| vs PyTorch",
                ],
                rows,
            )
        )
    errors = {k: v["error"] for k, v in data.get("systems", {}).items() if "error" in v}
    if errors:
        parts.append(
            _table(["system", "not measured because"], [[k, e] for k, e in errors.items()])
        )
    profile = data.get("dispatch_profile")
    if profile:
        parts.append("<h2>Time per dispatch kind</h2>")
        parts.append(_bars([(k, round(v, 3), "#e15759") for k, v in profile.items()], " ms"))
    times = data.get("dispatch_times")  # [{"name": ..., "ms": ...}] from the profiler
    if times:
        ranked = sorted(times, key=lambda d: -d["ms"])[:30]
        parts.append("<h2>Time per dispatch (slowest 30, from the profiler)</h2>")
        parts.append(
            _bars([(d["name"][-40:], round(d["ms"], 3), "#e15759") for d in ranked], " ms")
        )
    if plans:
        parts.append(
            "<h2>The model as a graph: ops in execution order, fused groups on shared lanes"
            "</h2><div style='overflow-x:auto'>"
            + "".join(fusion_graph(plan) for plan in plans)
            + "</div>"
        )
        parts.append("<h2>Fusion plan (groups of two or more ops, and refusals)</h2>")
        parts.append(
            _table(["group", "type", "formed by", "ops", "refused, and why"], plan_rows(plans))
        )
        shares = [s for plan in plans for s in getattr(plan, "pad_shares", [])]
        if shares:
            parts.append("<h2>Padded values with other readers (copy removed or kept)</h2>")
            parts.append(
                _table(
                    ["value from", "padded", "decision", "why"],
                    [
                        [s.value, s.padded_type, "shared" if s.taken else "copy kept", s.reason]
                        for s in shares
                    ],
                )
            )
        placed = [p for plan in plans for p in getattr(plan, "pad_placements", [])]
        if placed:
            parts.append(
                "<h2>Zero pads: in the reader's dispatch, or filled and written in place</h2>"
            )
            parts.append(
                _table(
                    ["padded", "read by", "where", "why"],
                    [
                        [
                            p.padded_type,
                            p.reader,
                            "reader's dispatch" if p.fused else "fill + in place",
                            p.reason,
                        ]
                        for p in placed
                    ],
                )
            )
        tiles = [t for plan in plans for t in getattr(plan, "conv_tiles", [])]
        if tiles:
            parts.append("<h2>Convolution tiles (xgen_mlir's or IREE's own)</h2>")
            parts.append(
                _table(
                    [
                        "conv (output, filter)",
                        "workgroup",
                        "vector",
                        "reduction",
                        "pads written in place",
                        "why",
                    ],
                    [
                        [
                            t.conv,
                            t.distribution or "IREE's",
                            t.vector or "IREE's",
                            t.reduction or "IREE's",
                            t.pads_absorbed,
                            t.reason,
                        ]
                        for t in tiles
                    ],
                )
            )
        for title, field in (
            ("Transpose", "transpose_tiles"),
            ("Gemv", "gemv_tiles"),
            ("Matmul", "matmul_tiles"),
        ):
            decisions = [t for plan in plans for t in getattr(plan, field, [])]
            if decisions:
                parts.append(f"<h2>{title} tiles (xgen_mlir's or IREE's own)</h2>")
                rows = [
                    [
                        t.op,
                        t.distribution or "IREE's",
                        t.vector or "IREE's",
                        t.reduction or ("IREE's" if not t.taken else "-"),
                        t.reason,
                    ]
                    for t in decisions
                ]
                parts.append(
                    _table(["op (shape)", "workgroup", "vector", "reduction", "why"], rows)
                )
    return "\n".join(parts)
