"""Per-contraction data-tiling decisions (fusion/data_tiling.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("iree.compiler")

from iree.compiler import ir

from xgen_mlir.fusion.data_tiling import HINT, decide, plan_data_tiling


@pytest.mark.parametrize(
    ("shape", "flags", "tiled"),
    [
        ((128, 512, 128), {}, True),  # MobileBERT FFN: few rows
        ((49, 160, 960), {}, True),  # MobileNetV2 7x7 project conv: long K over few rows
        ((3136, 24, 144), {}, False),  # MobileNetV2 56x56 project: many rows, small N
        ((2048, 768, 3072), {}, True),  # a large GEMM keeps IREE's default
        ((1, 48, 1152), {}, False),  # squeeze-excite matvec: too small to pack
        ((49, 960, 160), {"padded": True}, False),  # result padded for a depthwise conv
        ((49, 512, 256), {"sliced": True}, False),  # strided 1x1 conv
        ((1, 1000, 1280), {"after_reduction": True}, False),  # classifier after a pool
    ],
)
def test_decide(shape, flags, tiled):
    got, why = decide(*shape, **flags)
    assert got is tiled, why
    assert why


IR = """
#in = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#w = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
func.func @f(%x: tensor<7x7x960xf32>, %w: tensor<960x160xf32>, %a: tensor<128x128xf32>,
             %big: tensor<56x56x144xf32>, %wb: tensor<144x24xf32>)
    -> (tensor<7x7x160xf32>, tensor<128x128xf32>, tensor<56x56x24xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<7x7x160xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<7x7x160xf32>) -> tensor<7x7x160xf32>
  %conv = linalg.generic {indexing_maps = [#in, #w, #out],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<7x7x960xf32>, tensor<960x160xf32>) outs(%f0 : tensor<7x7x160xf32>) {
  ^bb0(%i: f32, %k: f32, %o: f32):
    %m = arith.mulf %i, %k : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<7x7x160xf32>
  %e1 = tensor.empty() : tensor<128x128xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<128x128xf32>) -> tensor<128x128xf32>
  %mm = linalg.matmul ins(%a, %a : tensor<128x128xf32>, tensor<128x128xf32>)
      outs(%f1 : tensor<128x128xf32>) -> tensor<128x128xf32>
  %e2 = tensor.empty() : tensor<56x56x24xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<56x56x24xf32>) -> tensor<56x56x24xf32>
  %wide = linalg.generic {indexing_maps = [#in, #w, #out],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%big, %wb : tensor<56x56x144xf32>, tensor<144x24xf32>) outs(%f2 : tensor<56x56x24xf32>) {
  ^bb0(%i: f32, %k: f32, %o: f32):
    %m = arith.mulf %i, %k : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<56x56x24xf32>
  return %conv, %mm, %wide : tensor<7x7x160xf32>, tensor<128x128xf32>, tensor<56x56x24xf32>
}
"""


def test_plan_sets_hints_and_collapses_multi_row_loops():
    with ir.Context():
        module = ir.Module.parse(IR)
        block = module.body.operations[0].regions[0].blocks[0]
        decisions = plan_data_tiling(block)
        module.operation.verify()
        text = str(module)
    by_shape = {(d.m, d.n, d.k): d.tiled for d in decisions}
    assert by_shape == {(49, 160, 960): True, (128, 128, 128): True, (3136, 24, 144): False}
    assert text.count(HINT) == 2
    # the 7x7 conv was collapsed to one 49-row loop (IREE would rebuild it without the hint)
    assert "tensor<7x7x960xf32> into tensor<49x960xf32>" in text
    assert "tensor<49x160xf32> into tensor<7x7x160xf32>" in text
    # the plain one is untouched (IREE collapses it later, as it always did)
    assert "tensor<56x56x144xf32> into" not in text


def test_already_hinted_ops_are_left_alone():
    with ir.Context():
        hinted = IR.replace("%mm = linalg.matmul ins", f"%mm = linalg.matmul {{{HINT}}} ins")
        module = ir.Module.parse(hinted)
        block = module.body.operations[0].regions[0].blocks[0]
        decisions = plan_data_tiling(block)
    assert (128, 128, 128) not in {(d.m, d.n, d.k) for d in decisions}
