"""One pass model for both phases: dispatch steps as registered passes with ordering rules,
target facts as pipeline data, option values checked before they reach pipeline text."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import xgen_mlir
from xgen_mlir import errors
from xgen_mlir._mlir import iree_binding
from xgen_mlir._paths import pipelines_dir
from xgen_mlir.frontend.mlir_import import parse_mlir
from xgen_mlir.passes.registry import (
    DISPATCH,
    GRAPH,
    build_pass_manager,
    check_order,
    registered_passes,
)
from xgen_mlir.passes.runner import run_steps
from xgen_mlir.pipelines import load_pipeline

MATMUL = """
func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>)
         outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %m : tensor<4x16xf32>
}
"""


def _cpu_with(tmp_path: Path, old: str, new: str) -> str:
    text = (pipelines_dir() / "cpu.toml").read_text()
    assert old in text
    path = tmp_path / "cpu_variant.toml"
    path.write_text(text.replace(old, new))
    return str(path)


def test_every_dispatch_step_of_the_cpu_pipeline_is_a_registered_dispatch_pass():
    pipeline = load_pipeline("cpu").with_options()
    passes = registered_passes()
    steps = [s.pass_text.split("{")[0] for _, st in pipeline.dispatch_stages() for s in st]
    ours = [s for s in steps if s.startswith("xgen-")]
    assert len(ours) == 14 and all(passes[s].phase == DISPATCH for s in ours)
    assert all(
        passes[s.pass_text.split("{")[0]].phase == GRAPH
        for s in pipeline.steps
        if s.pass_text.startswith("xgen-")
    )
    check_order([s.pass_text for _, st in pipeline.dispatch_stages() for s in st])


def test_ordering_rules_are_enforced():
    with pytest.raises(errors.PipelineError, match="xgen-conv-tiles needs xgen-plan-fusion"):
        check_order(["xgen-conv-tiles{threads=2}"])
    with pytest.raises(
        errors.PipelineError, match="xgen-depthwise-pads must run after xgen-share-pads"
    ):
        check_order(["xgen-plan-fusion", "xgen-depthwise-pads", "xgen-share-pads"])
    check_order(["xgen-plan-fusion", "xgen-share-pads", "xgen-depthwise-pads"])


def test_a_pass_runs_only_in_its_own_phase():
    ir = iree_binding().ir
    iree_module = parse_mlir(MATMUL, "m.mlir", ir.Context())
    with pytest.raises(errors.PipelineError, match="is a graph pass"):
        run_steps(iree_module, ["xgen-algebraic-simplify"])
    torch_module = parse_mlir(MATMUL, "m.mlir")
    with pytest.raises(errors.PipelineError, match="is a dispatch pass"):
        run_steps(torch_module, ["xgen-plan-fusion"])
    run_steps(iree_module, ["xgen-plan-fusion{form-regions=true}", "canonicalize"])


def test_the_target_facts_decide_not_the_compiling_machine(tmp_path):
    """The cpu pipeline with its vector width stated (not read off the host): 512 bits gives
    the entry transpose xgen_mlir's tiles, 256 bits leaves IREE's, on any host."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, stride=2, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(16, 16, 3, padding=1, groups=16),
    ).eval()
    x = torch.randn(1, 3, 16, 32)
    taken = {}
    for bits in (512, 256):
        target = _cpu_with(tmp_path, 'vector_bits = "host"', f"vector_bits = {bits}")
        compiled = xgen_mlir.compile(model, (x,), target=target)
        assert compiled.report.fusion_note == ""
        plan = compiled.report.fusion_plans[0]
        taken[bits] = [t.op for t in plan.transpose_tiles if t.taken]
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), model(x), atol=1e-5, rtol=1e-4)
    assert taken == {512: ["3x16x32 -> 16x32x3"], 256: []}


def test_target_options_state_a_fact_for_another_machine():
    """``target_options`` may state a target fact (a cross compile, or a test of the other host
    type): it replaces ``host`` in every step that reads it; only whole numbers pass."""
    pipeline = load_pipeline("cpu")
    stated = pipeline.with_options({"vector_bits": "256"})
    assert stated.facts.vector_bits == 256
    assert any("vector-bits=256" in s for s in stated.pass_steps())
    assert not any("vector-bits=512" in s for s in stated.pass_steps())
    for bad in ("wide", "256}", "${threads}", "-1"):
        with pytest.raises(errors.PipelineError, match="not a whole number"):
            pipeline.with_options({"vector_bits": bad})


def test_fusion_option_turns_the_dispatch_steps_off():
    pipeline = load_pipeline("cpu")
    assert pipeline.with_options().dispatch_stages()
    assert pipeline.with_options({"fusion": "false"}).dispatch_stages() == []


@pytest.mark.parametrize("value", ["0.1 cc=/tmp/evil.sh", "1}", "${fusion}", "a,b{c=1}"])
def test_option_values_cannot_inject_pipeline_text(value):
    with pytest.raises(errors.PipelineError, match="not a plain value"):
        load_pipeline("cpu").with_options({"pointwise_min_padding": value})


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('vector_bits = "host"', 'vector_bits = "wide"', "a whole number or 'host'"),
        ('vector_bits = "host"', "cores = 4", "not a target fact"),
        ('at = "dispatch-creation"', 'at = "codegen"', "IREE phases are"),
        ('xgen-share-pads"', 'xgen-share-pads{bogus=1}"', "has no option 'bogus'"),
    ],
)
def test_malformed_pipelines_are_refused_clearly(tmp_path, old, new, message):
    target = _cpu_with(tmp_path, old, new)
    with pytest.raises(errors.XGenError, match=message):
        pipeline = load_pipeline(target).with_options()
        steps = [s.pass_text for _, st in pipeline.dispatch_stages() for s in st]
        check_order(steps)
        build_pass_manager(iree_binding().ir.Context(), steps)


def test_a_bug_in_a_pass_is_a_clear_failure_with_a_reproducer(monkeypatch, tmp_path):
    """An exception inside a Python pass becomes a PipelineError naming the pass and the
    exception, with the reproducer command; no traceback from inside the pass manager."""
    from dataclasses import replace

    from xgen_mlir.passes import registry

    def broken(module_op, opts, state):
        raise ZeroDivisionError("division by zero")

    info = registry.get_pass("xgen-share-pads")
    monkeypatch.setitem(registry._REGISTRY, info.name, replace(info, fn=broken))
    module = parse_mlir(MATMUL, "m.mlir", iree_binding().ir.Context())
    with pytest.raises(errors.PipelineError) as caught:
        run_steps(module, ["xgen-plan-fusion", "xgen-share-pads"], repro_dir=tmp_path)
    message = str(caught.value)
    assert "xgen-share-pads: internal error: ZeroDivisionError: division by zero" in message
    assert (tmp_path / "input.mlir").is_file()
    assert "--dispatch" in caught.value.reproducer
