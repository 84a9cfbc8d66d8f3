"""Per-contraction data-tiling decisions (fusion/data_tiling.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

pytest.importorskip("iree.compiler")

from conftest import check_close
from iree.compiler import ir

import xgen_mlir
from xgen_mlir.errors import FallbackWarning
from xgen_mlir.fusion.data_tiling import HINT, decide, plan_data_tiling
from xgen_mlir.target import cpu_flags


@pytest.mark.parametrize(
    ("shape", "flags", "tiled"),
    [
        ((128, 512, 128), {}, True),  # MobileBERT FFN: few rows
        ((49, 160, 960), {}, True),  # MobileNetV2 7x7 project conv: long K over few rows
        ((3136, 24, 144), {}, False),  # MobileNetV2 56x56 project: many rows, small N
        ((2048, 768, 3072), {}, True),  # a large GEMM keeps IREE's default
        ((1, 48, 1152), {}, False),  # squeeze-excite matvec: too small to pack
        ((128, 32, 128), {"batch": 12}, True),  # MiniLM attention: 12 heads make it big enough
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


NEIGHBOURS = """
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#chw = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0)>
func.func @f(%a: tensor<128x768xf32>, %w: tensor<768x3072xf32>, %w2: tensor<3072x768xf32>,
             %qkv: tensor<128x2304xf32>, %wq: tensor<768x768xf32>,
             %act: tensor<1280x7x7xf32>, %wc: tensor<1280x1000xf32>,
             %img: tensor<6272x64xf32>, %wd: tensor<64x128xf32>)
    -> (tensor<128xf32>, tensor<128x768xf32>, tensor<1x1000xf32>, tensor<3136x128xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x3072xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<128x3072xf32>) -> tensor<128x3072xf32>
  %up = linalg.matmul ins(%a, %w : tensor<128x768xf32>, tensor<768x3072xf32>)
      outs(%f : tensor<128x3072xf32>) -> tensor<128x3072xf32>
  %e2 = tensor.empty() : tensor<128x768xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<128x768xf32>) -> tensor<128x768xf32>
  %down = linalg.matmul ins(%up, %w2 : tensor<128x3072xf32>, tensor<3072x768xf32>)
      outs(%f2 : tensor<128x768xf32>) -> tensor<128x768xf32>
  %er = tensor.empty() : tensor<128xf32>
  %fr = linalg.fill ins(%zero : f32) outs(%er : tensor<128xf32>) -> tensor<128xf32>
  %mean = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%down : tensor<128x768xf32>) outs(%fr : tensor<128xf32>) {
  ^bb0(%i: f32, %o: f32):
    %s = arith.addf %i, %o : f32
    linalg.yield %s : f32
  } -> tensor<128xf32>
  %q = tensor.extract_slice %qkv[0, 768] [128, 768] [1, 1]
      : tensor<128x2304xf32> to tensor<128x768xf32>
  %qp = linalg.matmul ins(%q, %wq : tensor<128x768xf32>, tensor<768x768xf32>)
      outs(%f2 : tensor<128x768xf32>) -> tensor<128x768xf32>
  %ep = tensor.empty() : tensor<1280xf32>
  %fp = linalg.fill ins(%zero : f32) outs(%ep : tensor<1280xf32>) -> tensor<1280xf32>
  %pool = linalg.generic {indexing_maps = [#chw, #c],
      iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%act : tensor<1280x7x7xf32>) outs(%fp : tensor<1280xf32>) {
  ^bb0(%i: f32, %o: f32):
    %s = arith.addf %i, %o : f32
    linalg.yield %s : f32
  } -> tensor<1280xf32>
  %pooled = tensor.expand_shape %pool [[0, 1]] output_shape [1, 1280]
      : tensor<1280xf32> into tensor<1x1280xf32>
  %ec = tensor.empty() : tensor<1x1000xf32>
  %fc0 = linalg.fill ins(%zero : f32) outs(%ec : tensor<1x1000xf32>) -> tensor<1x1000xf32>
  %fc = linalg.matmul ins(%pooled, %wc : tensor<1x1280xf32>, tensor<1280x1000xf32>)
      outs(%fc0 : tensor<1x1000xf32>) -> tensor<1x1000xf32>
  %flat = tensor.extract_slice %img[0, 0] [3136, 64] [2, 1]
      : tensor<6272x64xf32> to tensor<3136x64xf32>
  %ed = tensor.empty() : tensor<3136x128xf32>
  %fd = linalg.fill ins(%zero : f32) outs(%ed : tensor<3136x128xf32>) -> tensor<3136x128xf32>
  %ds = linalg.matmul ins(%flat, %wd : tensor<3136x64xf32>, tensor<64x128xf32>)
      outs(%fd : tensor<3136x128xf32>) -> tensor<3136x128xf32>
  return %mean, %qp, %fc, %ds
      : tensor<128xf32>, tensor<128x768xf32>, tensor<1x1000xf32>, tensor<3136x128xf32>
}
"""


def test_row_reductions_and_unit_slices_do_not_block_tiling():
    """A LayerNorm-like row reduction after a GEMM and a unit-stride Q/K/V slice before one
    leave the GEMMs tiled (GPT-2's projections: 3.5 ms tiled vs 5.7 plain); a two-loop pool
    before the classifier does not."""
    with ir.Context():
        module = ir.Module.parse(NEIGHBOURS)
        block = module.body.operations[0].regions[0].blocks[0]
        decisions = {(d.m, d.n, d.k): d for d in plan_data_tiling(block)}
    assert decisions[(128, 3072, 768)].tiled
    assert decisions[(128, 768, 3072)].tiled, decisions[(128, 768, 3072)].reason
    assert decisions[(128, 768, 768)].tiled, decisions[(128, 768, 768)].reason
    assert not decisions[(1, 1000, 1280)].tiled
    assert "reduction" in decisions[(1, 1000, 1280)].reason
    assert "strided slice" in decisions[(3136, 128, 64)].reason


def test_batch_matmul_work_counts_every_head():
    """MiniLM's attention: 12 heads of 128x32x128 (0.5M multiply-adds each) are tiled."""
    heads = """
func.func @f(%p: tensor<12x128x128xf32>, %v: tensor<12x128x32xf32>) -> tensor<12x128x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<12x128x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<12x128x32xf32>) -> tensor<12x128x32xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<12x128x128xf32>, tensor<12x128x32xf32>)
      outs(%f : tensor<12x128x32xf32>) -> tensor<12x128x32xf32>
  return %o : tensor<12x128x32xf32>
}
"""
    with ir.Context():
        module = ir.Module.parse(heads)
        block = module.body.operations[0].regions[0].blocks[0]
        (d,) = plan_data_tiling(block)
    assert (d.batch, d.m, d.n, d.k, d.tiled) == (12, 128, 32, 128, True), d.reason


# ---------------------------------------------------------------------------------------------
# whole compiles: rows split by a batch, and bf16 contractions


class _ResidualNorm(torch.nn.Module):
    """Linear + residual + LayerNorm + Linear, as in every transformer layer: at batch > 1
    torch-mlir adds the residual on (batch x seq) rows and normalizes on batch x seq x d."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.a = torch.nn.Linear(d, d)
        self.norm = torch.nn.LayerNorm(d)
        self.b = torch.nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.norm(self.a(x) + x))


def _compile_quietly(model, x, **options):
    """Compile with IREE's matmuls: these tests are about IREE's data tiling of Linear
    layers, which a host would otherwise start in oneDNN (AVX-512) or in the generated GEMM
    kernel (AVX2): the priors."""
    options.setdefault("target_options", {"offload": "none", "gemm_kernels": "false"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = xgen_mlir.compile(model, (x,), tuning_db=False, **options)
    fallbacks = [str(w.message) for w in caught if issubclass(w.category, FallbackWarning)]
    return compiled, fallbacks


def test_rows_split_by_the_batch_keep_the_dispatch_steps():
    """Batch 4 x 64 rows of 256: before the planner kept the add out of the LayerNorm's
    group, IREE refused the region (the add's tile, materialized whole on the stack, over
    its 32 KB limit) and the compile fell back to IREE's own dispatches with a warning."""
    torch.manual_seed(0)
    model, x = _ResidualNorm(256).eval(), torch.randn(4, 64, 256)
    compiled, fallbacks = _compile_quietly(model, x)
    assert fallbacks == []
    assert compiled.report.fusion_plans, compiled.report.fusion_note
    with torch.no_grad():
        check_close(compiled(x), model(x).numpy(), rtol=1e-4, atol=1e-4, what="batch 4")


def test_token_rows_are_tiled_and_bf16_says_why():
    """256 token rows of 256 -> 256: tiled in f32 (IREE's default for one row loop; the
    rule that leaves many rows plain is for 1x1 convs over pixels) and in bf16 (IREE's dot
    products are in its packed path), each with its reason; the numbers stay PyTorch's."""
    torch.manual_seed(0)
    model, x = _ResidualNorm(256).eval(), torch.randn(4, 64, 256)
    precisions = ["fp32"]
    if "avx512_bf16" in cpu_flags() or "amx_bf16" in cpu_flags():
        precisions.append("bf16")  # elsewhere bf16 falls back to fp32
    with torch.no_grad():
        want = model(x).numpy()
    for precision, why, tol in (("fp32", "tokens", 1e-5), ("bf16", "bf16", 3e-2)):
        if precision not in precisions:
            continue
        compiled, fallbacks = _compile_quietly(model, x, precision=precision, precision_check=False)
        assert fallbacks == [], precision
        tiling = [d for plan in compiled.report.fusion_plans for d in plan.tiling]
        assert [(d.m, d.n, d.k, d.tiled) for d in tiling] == [(256, 256, 256, True)] * 2
        assert all(why in d.reason for d in tiling), [d.reason for d in tiling]
        got = compiled(x).numpy()
        assert np.abs(got - want).max() / np.abs(want).max() < tol, precision


@pytest.mark.parametrize(("batch", "fused"), [(1, True), (4, False)])
def test_shared_packs_only_over_few_rows(batch, fused):
    """Packs of multi-reader activations go into their producers' dispatches only where every
    packed contraction has at most 128 rows: over more (MiniLM at batch 4), IREE's fused
    packs overflowed its worker stacks at run time. The report says which, and why."""
    torch.manual_seed(0)
    model, x = _ResidualNorm(256).eval(), torch.randn(batch, 64, 256)
    compiled, fallbacks = _compile_quietly(model, x)
    assert fallbacks == []
    packs = compiled.report.shared_packs
    assert packs is not None and packs.fused is fused, packs
    if not fused:
        assert "256 rows (> 128)" in packs.why
    with torch.no_grad():
        check_close(compiled(x), model(x).numpy(), rtol=1e-4, atol=1e-4, what=f"batch {batch}")


class _PostNormBlock(torch.nn.Module):
    """Two post-LayerNorm residual steps, as in BERT: the first LayerNorm's output feeds the
    next Linear (in bf16, as a bf16 copy) and the residual add after it (in f32)."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(d, d), torch.nn.Linear(d, d)
        self.norm1, self.norm2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(self.a(x) + x)
        return self.norm2(self.b(h) + h)


@pytest.mark.parametrize(("batch", "separated"), [(1, 0), (4, 1)])
def test_bf16_layernorm_keeps_the_accumulator_pack_out(batch, separated):
    """At batch 4 the residual add after the second Linear stays outside the next LayerNorm's
    region (rows split by the batch), IREE folds it into that Linear's accumulator, and both
    the first LayerNorm's bf16 copy and its f32 output would be packed in its dispatch: 16 rows
    x 384 x 6 bytes of stack, over IREE's 32 KB. Before, the compile fell back to IREE without
    data tiling (a FallbackWarning); now the accumulator is packed in a dispatch of its own. At
    batch 1 nothing changes."""
    if "avx512_bf16" not in cpu_flags() and "amx_bf16" not in cpu_flags():
        pytest.skip("bf16 compiles as fp32 on a host without bf16 dot products")
    torch.manual_seed(0)
    model, x = _PostNormBlock(384).eval(), torch.randn(batch, 32, 384)
    compiled, fallbacks = _compile_quietly(model, x, precision="bf16", precision_check=False)
    assert fallbacks == []
    packs = [a for plan in compiled.report.fusion_plans for a in plan.accumulator_packs]
    assert sum(a.separated for a in packs) == separated, [a.describe() for a in packs]
    with torch.no_grad():
        want = model(x).numpy()
    got = compiled(x).numpy()
    assert np.abs(got - want).max() / np.abs(want).max() < 3e-2
