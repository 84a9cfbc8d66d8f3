"""The per-model HTML report renders in a real browser (Debian's chromium, headless) with no
console errors, shows the model as a graph of fused groups and the slowest dispatches as bars,
and needs nothing from the network."""

from __future__ import annotations

import re
import shutil
import subprocess

import torch
from targets_util import need

import xgen_mlir
from xgen_mlir.report import render


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _page(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.LayerNorm(64), torch.nn.GELU(), torch.nn.Linear(64, 8)
    ).eval()
    compiled = xgen_mlir.compile(model, (torch.randn(4, 32),))
    plans = compiled.report.fusion_plans
    record = {
        "host": {"cpu_model": "test CPU", "isa_flags": ["avx2"], "threads": 2,
                 "matmul_gflops": {"float32": 100.0}},
        "systems": {"xgen_mlir cpu": {"median_ms": 0.1, "dispatches": 4}},
        "dispatch_times": [{"name": f"main_dispatch_{i}_x", "ms": 0.01 * i} for i in range(40)],
    }  # fmt: skip
    page = render("mlp", record, plans)
    path = tmp_path / "report.html"
    path.write_text(page)
    return page, path, plans


def test_report_has_the_graph_and_the_dispatch_chart(tmp_path):
    page, _, plans = _page(tmp_path)
    graph = re.search(r'<svg[^>]*class="fusion-graph".*?</svg>', page, re.S)
    assert graph is not None
    nodes = len(plans[0].nodes)
    assert len(re.findall(r"<rect x=\"\d+\" y=\"\d+\" width=\"10\"", graph.group(0))) == nodes
    assert "slowest 30" in page and "main_dispatch_39_x" in page and "main_dispatch_9_x" not in page
    assert not re.search(r"(src|href)=[\"']https?:", page), "the report must not need the network"


def test_report_renders_in_headless_chromium_without_console_errors(tmp_path):
    chromium = _chromium()
    need(chromium is not None, "chromium (apt-get install chromium)")
    assert chromium is not None
    _, path, _ = _page(tmp_path)
    proc = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
         "--v=0", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", path.as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert 'class="fusion-graph"' in proc.stdout, "the DOM lacks the graph"
    console = [ln for ln in proc.stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
    assert not console, "\n".join(console)
