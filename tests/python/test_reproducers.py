"""A failing pipeline's reproducer is IR that ``xgen-opt`` re-reads, whatever dialects it
holds: torch-mlir's lowering leaves ``tm_tensor`` ops (a cumsum's scan) and ``torch_c`` casts
in our IR, and the contexts xgen-opt and the reproducer parse in know them."""

from __future__ import annotations

import shlex

import pytest

import xgen_mlir
from xgen_mlir import errors
from xgen_mlir.frontend.mlir_import import new_torch_context, parse_mlir
from xgen_mlir.tools import xgen_opt

# A cumsum as torch-mlir lowers it (tm_tensor.scan), next to a torch op that no pipeline
# lowers, so that the cpu pipeline's hand-off check fails on the module.
SCAN_AND_UNLOWERED = """
func.func @main(%x: tensor<2x8xf32>, %y: !torch.vtensor<[4],f32>)
    -> (tensor<2x8xf32>, !torch.vtensor<[4],f32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<2x8xf32>
  %e1 = tensor.empty() : tensor<2xf32>
  %out = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x8xf32>) -> tensor<2x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2xf32>) -> tensor<2xf32>
  %r:2 = tm_tensor.scan dimension(1) inclusive(true)
      ins(%x : tensor<2x8xf32>) outs(%out, %acc : tensor<2x8xf32>, tensor<2xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    tm_tensor.yield %s : f32
  } -> tensor<2x8xf32>, tensor<2xf32>
  %t = torch.aten.erfinv %y : !torch.vtensor<[4],f32> -> !torch.vtensor<[4],f32>
  return %r#0, %t : tensor<2x8xf32>, !torch.vtensor<[4],f32>
}
"""


@pytest.mark.parametrize("dialect", ["tm_tensor", "torch_c", "torch", "xgen_sparse"])
def test_the_torch_context_knows_every_dialect_our_ir_holds(dialect):
    ctx = new_torch_context()
    assert ctx.dialects[dialect] is not None


def test_a_reproducer_with_tm_tensor_ops_is_read_back_by_xgen_opt(tmpdir_env, capsys):
    module = parse_mlir(SCAN_AND_UNLOWERED, "scan.mlir", new_torch_context())
    with pytest.raises(errors.PipelineError) as caught:
        xgen_mlir.compile(module, keep_temps=True)
    err = caught.value
    assert err.kept is not None and err.reproducer is not None
    kept = err.kept / "input.mlir"
    assert "tm_tensor.scan" in kept.read_text()
    # the kept IR parses in a fresh context, and the printed command reruns the failure
    assert "tm_tensor.scan" in str(parse_mlir(kept.read_text(), str(kept)))
    argv = shlex.split(err.reproducer)
    assert argv[0] == "xgen-opt"
    capsys.readouterr()
    assert xgen_opt.main(argv[1:]) == 1
    stderr = capsys.readouterr().err
    assert "not found" not in stderr and "tm_tensor" not in stderr, stderr
    assert "torch.aten.erfinv x1" in stderr
