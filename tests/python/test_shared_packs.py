"""Packs of multi-reader activations fused into their producers
(fusion/shared_packs.py: the dispatch pass xgen-merge-duplicate-outputs)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import check_close

import xgen_mlir
from xgen_mlir._paths import pipelines_dir
from xgen_mlir.errors import FallbackWarning
from xgen_mlir.report import render

pytest.importorskip("iree.compiler")


class ResidualFFN(torch.nn.Module):
    """A residual stream as in MobileBERT: each block's output feeds the next block's matmul
    and the next residual add, so its pack for the matmul has a second reader."""

    def __init__(self, width: int = 128, blocks: int = 3) -> None:
        super().__init__()
        self.inp = torch.nn.Linear(width, width)
        self.up = torch.nn.ModuleList(torch.nn.Linear(width, 2 * width) for _ in range(blocks))
        self.down = torch.nn.ModuleList(torch.nn.Linear(2 * width, width) for _ in range(blocks))
        self.q = torch.nn.Linear(width, width)
        self.k = torch.nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.inp(x))
        for up, down in zip(self.up, self.down, strict=True):
            h = h + down(torch.relu(up(h)))
        return self.q(h) * self.k(h)  # one activation, two matmul readers (Q and K)


def _without_shared_packs(tmp_path: Path) -> str:
    """The cpu pipeline without its xgen-merge-duplicate-outputs dispatch step."""
    tables = (pipelines_dir() / "cpu.toml").read_text().split("\n[[")
    kept = [t for t in tables if "xgen-merge-duplicate-outputs" not in t]
    assert len(kept) == len(tables) - 1
    path = tmp_path / "cpu_separate_packs.toml"
    path.write_text("\n[[".join(kept))
    return str(path)


# These tests are about IREE's packs of the Linear layers' inputs: keep the layers in IREE's
# matmuls, where a host would otherwise start them in the generated GEMM kernel (AVX2).
IREE_MATMULS = {"target_options": {"gemm_kernels": "false", "offload": "none"}}


@pytest.fixture(scope="module")
def model_and_input() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return ResidualFFN().eval(), torch.randn(128, 128)


def test_multi_reader_packs_join_their_producers(model_and_input, tmp_path):
    model, x = model_and_input
    fused = xgen_mlir.compile(model, (x,), **IREE_MATMULS)
    separate = xgen_mlir.compile(
        model, (x,), target=_without_shared_packs(tmp_path), **IREE_MATMULS
    )
    packs = fused.report.shared_packs
    assert packs is not None and packs.fused, packs
    assert packs.merged_outputs >= 1  # Q and K read one packed activation
    assert "in their producers' dispatches" in packs.describe()
    record = {
        "systems": {
            "xgen_mlir cpu": {"median_ms": 1.0, "dispatches": 10, "shared_packs": packs.describe()}
        }
    }
    assert "duplicate outputs merged" in render("residual-ffn", record)
    assert separate.report.shared_packs is None
    # every block output's pack (3 residuals + the Q/K input) was a dispatch of its own
    assert fused.dispatch_count() <= separate.dispatch_count() - 4, (
        fused.dispatch_count(),
        separate.dispatch_count(),
    )
    with torch.no_grad():
        ref = model(x)
    check_close(fused(x), ref, atol=1e-4, rtol=1e-4, what="shared packs")
    check_close(separate(x), ref, atol=1e-4, rtol=1e-4, what="separate packs")


def test_rejected_shared_packs_fall_back_to_separate_dispatches(model_and_input, monkeypatch):
    """Without the merge, IREE's codegen rejects the fused packs: the backend must compile
    again with the packs as dispatches of their own, and say why."""
    from dataclasses import replace

    from xgen_mlir.passes import registry

    info = registry.get_pass("xgen-merge-duplicate-outputs")  # the merge does nothing
    monkeypatch.setitem(registry._REGISTRY, info.name, replace(info, fn=lambda op, o, s: None))
    model, x = model_and_input
    with pytest.warns(FallbackWarning, match="'xgen-merge-duplicate-outputs' dropped") as said:
        compiled = xgen_mlir.compile(model, (x,), **IREE_MATMULS)
    assert len([w for w in said if issubclass(w.category, FallbackWarning)]) == 1, "said once"
    packs = compiled.report.shared_packs
    assert packs is not None and not packs.fused
    assert "IREE from dispatch-creation failed" in packs.why, packs.why
    assert list(compiled.report.dropped_steps) == ["xgen-merge-duplicate-outputs"]
    assert "separate dispatches" in packs.describe()
    assert compiled.report.fallback_used is None and compiled.report.fusion_note == ""
    with torch.no_grad():
        check_close(compiled(x), model(x), atol=1e-4, rtol=1e-4, what="fallback")


def test_only_the_guilty_optional_step_stays_dropped(tmp_path, monkeypatch):
    """IREE rejects the module while step B runs: the latest optional steps are dropped in
    turn (C, then B, which makes it compile), then C, dropped before the culprit, is tried
    again and kept (a pad fused into a depthwise conv that IREE's AVX2 codegen rejected used
    to cost MobileNetV2 the merge and tuning steps too)."""
    from xgen_mlir.backend import dispatch_stage as ds
    from xgen_mlir.pipelines import Step

    steps = [Step(p, "why", at="global-optimization", optional=True) for p in ("A", "B", "C")]
    tried: list[set] = []

    def attempt(first, target, flags, work, stages, dropped, *rest):
        tried.append(set(dropped))
        if "B" not in dropped:
            raise ds.DispatchStageError("IREE from global-optimization failed:", "after-steps")
        return ds.StagedCompile(vmfb=b"", plans=[], seconds={})

    monkeypatch.setattr(ds, "_run", lambda *a, **k: None)
    monkeypatch.setattr(ds, "_attempt", attempt)
    with pytest.warns(FallbackWarning, match="'B' dropped"):
        staged = ds.compile_with_dispatch_steps(
            tmp_path / "in.mlir", ["llvm-cpu"], [], tmp_path, [("global-optimization", steps)]
        )
    assert staged.dropped == {"B": "IREE from global-optimization failed:"}
    assert tried == [set(), {"C"}, {"C", "B"}, {"B"}]
