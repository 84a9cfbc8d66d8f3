"""The fusion planner in the compile path: fewer dispatches, same numbers, safe fallback,
and the report a person reads."""

from __future__ import annotations

import warnings
from dataclasses import replace

import pytest
import torch
from conftest import check_close

import xgen_mlir
from xgen_mlir.analysis import MappingType, classify
from xgen_mlir.fusion import wrap_in_region
from xgen_mlir.fusion.lowering import TILED_FOR_VECTOR_BITS
from xgen_mlir.passes import registry
from xgen_mlir.report import mapping_counts, render
from xgen_mlir.target import host_fact


class LinearNormNet(torch.nn.Module):
    """Linear -> LayerNorm -> ReLU -> Linear: IREE alone splits the LayerNorm in two."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(32, 64)
        self.norm = torch.nn.LayerNorm(64)
        self.b = torch.nn.Linear(64, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.norm(self.a(x))))


@pytest.fixture(scope="module")
def net() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return LinearNormNet().eval(), torch.randn(8, 32)


def test_plan_saves_a_dispatch_and_keeps_numerics(net):
    model, x = net
    planned = xgen_mlir.compile(model, (x,))
    plain = xgen_mlir.compile(model, (x,), target_options={"fusion": "false"})
    assert planned.report.fusion_note == ""
    assert planned.report.fusion_plans, "the cpu target plans fusion by default"
    assert plain.report.fusion_plans == []
    # LayerNorm: 2 -> 1; and the planner leaves these tiny matmuls un-data-tiled, so the two
    # activation-pack dispatches IREE's all-or-nothing data tiling adds are gone too
    assert planned.dispatch_count() == plain.dispatch_count() - 3
    assert [t.tiled for t in planned.report.fusion_plans[0].tiling] == [False, False]
    with torch.no_grad():
        ref = model(x)
    torch.testing.assert_close(planned(x), ref, atol=1e-5, rtol=1e-5)
    # the LayerNorm group holds both reductions and was formed by us, not delegated
    groups = planned.report.fusion_plans[0].groups
    ln = [g for g in groups if len(g.reductions) == 2]
    assert ln and not ln[0].delegated


def test_rejected_plan_falls_back_to_iree_with_a_warning(net, monkeypatch):
    model, x = net

    def non_convex(module_op, opts, state):  # both matmuls, not the LayerNorm between them
        for fn in module_op.regions[0].blocks[0].operations:
            if fn.operation.name == "util.func":
                ops = [
                    o
                    for o in fn.regions[0].blocks[0].operations
                    if o.operation.name == "linalg.matmul"
                ]
                wrap_in_region(ops[:2])

    info = registry.get_pass("xgen-plan-fusion")  # the pipeline's planner, made non-convex
    monkeypatch.setitem(registry._REGISTRY, info.name, replace(info, fn=non_convex))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = xgen_mlir.compile(model, (x,))
    assert any("dispatch steps were rejected" in str(w.message) for w in caught)
    assert "does not dominate" in compiled.report.fusion_note
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), atol=1e-5, rtol=1e-5)


def test_report_renders_the_sections(net):
    from xgen_mlir.frontend import import_model

    model, x = net
    module = import_model(model, (x,))
    counts = mapping_counts(module.operation)
    assert counts[MappingType.MANY_TO_MANY.value] >= 4  # 2 matmuls + 2 LayerNorm reductions
    compiled = xgen_mlir.compile(model, (x,))
    record = {
        "graph": {
            "aten_ops": 7,
            "linalg_ops": sum(counts.values()),
            "mapping_types": counts,
            "gflop": 0.001,
            "gflop_after_rewrites": 0.001,
        },
        "systems": {
            "xgen_mlir cpu": {"median_ms": 0.1, "dispatches": 5},
            "ONNX Runtime": {"error": "not installed"},
        },
    }
    page = render("linear-norm", record, compiled.report.fusion_plans)
    for section in (
        "Operators by mapping type",
        "Dispatches per call",
        "Latency",
        "Fusion plan",
        "<svg",
        "not installed",
    ):
        assert section in page


def test_classify_is_structural():
    from xgen_mlir._mlir import ir
    from xgen_mlir.frontend.mlir_import import new_torch_context

    text = """
    func.func @f(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
      %e = tensor.empty() : tensor<8x4xf32>
      %t = linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>,
                                            affine_map<(i, j) -> (i, j)>],
                           iterator_types = ["parallel", "parallel"]}
          ins(%a : tensor<4x8xf32>) outs(%e : tensor<8x4xf32>) {
        ^bb0(%x: f32, %o: f32):
          linalg.yield %x : f32
      } -> tensor<8x4xf32>
      return %t : tensor<8x4xf32>
    }"""
    with new_torch_context():
        module = ir.Module.parse(text)
        ops = list(module.body.operations[0].regions[0].blocks[0].operations)
        kinds = [classify(op) for op in ops]
    assert kinds[0] is None  # tensor.empty is not computation
    assert kinds[1].type == MappingType.SHUFFLE


def test_pad_after_relu_stays_correct():
    """Regression: a relu + pad region miscompiles in IREE 3.13; pads are left to IREE."""
    model = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.MaxPool2d(3, 2, 1)).eval()
    x = torch.arange(1.0, 17.0).reshape(1, 1, 4, 4)
    compiled = xgen_mlir.compile(model, (x,))
    torch.testing.assert_close(compiled(x), model(x))


class ResidualNet(torch.nn.Module):
    """A stem and two ResNet basic blocks, the second one downsampling: every block input is
    padded for its first 3x3 conv AND read again by the residual (add or strided 1x1 conv)."""

    def __init__(self) -> None:
        super().__init__()
        c = 16
        self.stem = torch.nn.Conv2d(3, c, 3, padding=1)
        self.a1, self.a2 = torch.nn.Conv2d(c, c, 3, padding=1), torch.nn.Conv2d(c, c, 3, padding=1)
        self.b1 = torch.nn.Conv2d(c, 2 * c, 3, stride=2, padding=1)
        self.b2 = torch.nn.Conv2d(2 * c, 2 * c, 3, padding=1)
        self.down = torch.nn.Conv2d(c, 2 * c, 1, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.stem(x))
        x = torch.relu(x + self.a2(torch.relu(self.a1(x))))
        return torch.relu(self.down(x) + self.b2(torch.relu(self.b1(x))))


def test_padded_residuals_are_read_from_the_padded_buffer():
    """pad_sharing: the residual readers read the padded buffer, so IREE needs no copy
    dispatch per block input; the numbers stay exactly those of the unshared module."""
    torch.manual_seed(0)
    model, x = ResidualNet().eval(), torch.randn(1, 3, 32, 32)
    # IREE's own convs (a CPU without AVX-512 would start them in oneDNN before a tune)
    own = {"offload": "none"}
    planned = xgen_mlir.compile(model, (x,), target_options=own)
    plain = xgen_mlir.compile(model, (x,), target_options={"fusion": "false", **own})
    assert planned.report.fusion_note == ""
    shares = planned.report.fusion_plans[0].pad_shares
    assert [s.taken for s in shares] == [True, True], [s.describe() for s in shares]
    assert planned.dispatch_count() <= plain.dispatch_count() - 2
    with torch.no_grad():
        ref = model(x)
    torch.testing.assert_close(planned(x), ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(planned(x), plain(x), atol=0, rtol=0)
    page = render("residual", {}, planned.report.fusion_plans)
    assert "Padded values with other readers" in page and page.count("<td>shared</td>") == 2


class SmallImageNet(torch.nn.Module):
    """Convs on 14x14 and 7x7 images (one strided), each output padded for the next conv:
    the shapes where IREE's own conv tiles fall well short of the sgemm rate."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Conv2d(32, 64, 3, padding=1)
        self.b = torch.nn.Conv2d(64, 64, 3, stride=2, padding=1)
        self.c = torch.nn.Conv2d(64, 64, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.c(torch.relu(self.b(torch.relu(self.a(x))))))


def test_small_image_conv_tiles_only_for_the_vectors_they_were_chosen_for():
    """On a target with 256-bit vectors (AVX2) the AVX-512 conv tiles do not apply."""
    torch.manual_seed(0)
    model, x = SmallImageNet().eval(), torch.randn(1, 32, 14, 14)
    narrow = xgen_mlir.compile(model, (x,), target_options={"vector_bits": "256"})
    assert not narrow.report.fusion_plans[0].conv_tiles
    torch.testing.assert_close(narrow(x), model(x).detach(), atol=1e-4, rtol=1e-4)


def test_small_image_convs_get_xgen_tiles(tmp_path):
    """conv_tiling: each conv gets xgen_mlir's tiles, IREE's codegen uses them (its configured
    executables show them), the padded outputs cost no copy, and the result is right."""
    torch.manual_seed(0)
    model, x = SmallImageNet().eval(), torch.randn(1, 32, 14, 14)
    dump = tmp_path / "executables"
    # the tiles are for 512-bit vectors: planned for such a target on any host; the direct
    # convs (no Winograd prior for the 64-channel 7x7 one)
    wide = {"vector_bits": "512", "winograd": "false"}
    planned = xgen_mlir.compile(model, (x,), dump_executables=dump, target_options=wide)
    plain = xgen_mlir.compile(model, (x,), target_options={"fusion": "false"})
    assert planned.report.fusion_note == ""
    tiles = planned.report.fusion_plans[0].conv_tiles
    assert [t.conv for t in tiles] == ["14x14x64 3x3x32", "7x7x64 3x3x64 s2", "7x7x64 3x3x64"]
    assert all(t.taken for t in tiles), [t.describe() for t in tiles]
    assert sum(t.pads_absorbed for t in tiles) == 2  # a's and b's outputs, padded for b and c
    configured = "".join(p.read_text() for p in dump.glob("configured_*.mlir"))
    for t in tiles:
        assert f"distribution = {t.distribution}" in configured, t.describe()
    assert planned.dispatch_count() <= plain.dispatch_count()
    with torch.no_grad():
        ref = model(x)
    torch.testing.assert_close(planned(x), ref, atol=1e-4, rtol=1e-4)
    page = render("small", {}, planned.report.fusion_plans)
    assert "Convolution tiles" in page and "7x7x64 3x3x64 s2" in page


class ImageEntry(torch.nn.Module):
    """An RGB image into a stride-2 conv and a depthwise conv (a MobileNet stem): its NCHW
    input becomes channels-last through one transpose at the entry."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.dw = torch.nn.Conv2d(16, 16, 3, padding=1, groups=16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dw(torch.relu(self.stem(x)))


# The transpose, gemv and matmul tile rules fire on 512-bit targets only (the width they were
# measured with); the cpu target is this host, and elsewhere the tests below check that IREE
# keeps its tiles.
AVX512 = host_fact("vector_bits") == TILED_FOR_VECTOR_BITS
NO_MATVEC = {"target_options": {"pointwise_matvec": "false"}}  # leave classifier heads to IREE


def test_image_entry_transpose_gets_xgen_tiles(tmp_path):
    """transpose_tiling: the 3-channel entry transpose gets 3 x 16 vectors and 8-row
    workgroups, IREE's codegen uses them (the configured executable shows them), and the
    result matches PyTorch; with the option off IREE keeps its own."""
    torch.manual_seed(0)
    model, x = ImageEntry().eval(), torch.randn(1, 3, 16, 32)
    dump = tmp_path / "executables"
    planned = xgen_mlir.compile(model, (x,), dump_executables=dump)
    assert planned.report.fusion_note == ""
    tiles = planned.report.fusion_plans[0].transpose_tiles
    taken = [(t.op, t.distribution, t.vector) for t in tiles if t.taken]
    expected = [("3x16x32 -> 16x32x3", [3, 8, 32], [3, 1, 16])] if AVX512 else []
    assert taken == expected, [t.describe() for t in tiles]
    ours = "distribution = [3, 8, 32], vector_common_parallel = [3, 1, 16]"
    assert (ours in "".join(p.read_text() for p in dump.glob("configured_*.mlir"))) == AVX512
    want = model(x).detach().numpy()
    check_close(planned(x), want, atol=1e-5, rtol=1e-4, what="planned")
    page = render("entry", {}, planned.report.fusion_plans)
    assert ("Transpose tiles" in page and "3x16x32 -&gt; 16x32x3" in page) == AVX512
    plain_dump = tmp_path / "plain"
    plain = xgen_mlir.compile(
        model, (x,), target_options={"fusion": "false"}, dump_executables=plain_dump
    )
    assert ours not in "".join(p.read_text() for p in plain_dump.glob("configured_*.mlir"))
    check_close(plain(x), want, atol=1e-5, rtol=1e-4, what="without the plan")


def test_classifier_gemv_gets_xgen_tiles(tmp_path):
    """gemv_tiling: a one-row Linear (a classifier head) gets 16-row x 16-k vector steps, IREE's
    codegen uses them, and the result matches PyTorch; without the plan IREE keeps its own.
    (By default xgen-pointwise-kernels takes such a head first; the tiles serve the heads it
    leaves, e.g. with a tanh after them, so it is off here.)"""
    torch.manual_seed(0)
    model, x = torch.nn.Linear(512, 1000).eval(), torch.randn(1, 512)
    dump = tmp_path / "executables"
    planned = xgen_mlir.compile(model, (x,), dump_executables=dump, **NO_MATVEC)
    assert planned.report.fusion_note == ""
    tiles = planned.report.fusion_plans[0].gemv_tiles
    expected = [("1x1000x512", True)] if AVX512 else []
    assert [(t.op, t.taken) for t in tiles] == expected, [t.describe() for t in tiles]
    ours = "distribution = [0, 32, 0], vector_common_parallel = [1, 16, 0]"
    assert (ours in "".join(p.read_text() for p in dump.glob("configured_*.mlir"))) == AVX512
    want = model(x).detach().numpy()
    check_close(planned(x), want, atol=1e-5, rtol=1e-4, what="planned")
    assert ("Gemv tiles" in render("head", {}, planned.report.fusion_plans)) == AVX512
    plain_dump = tmp_path / "plain"
    plain = xgen_mlir.compile(
        model,
        (x,),
        dump_executables=plain_dump,
        target_options={"fusion": "false", "pointwise_matvec": "false"},
    )
    assert ours not in "".join(p.read_text() for p in plain_dump.glob("configured_*.mlir"))
    check_close(plain(x), want, atol=1e-5, rtol=1e-4, what="without the plan")


class PointwiseAct(torch.nn.Module):
    """A 14x14 1x1 expand conv with an activation between depthwise convs, as in an
    EfficientNet block (with depthwise convs the convs go channels-last, weights [K, N])."""

    def __init__(self, act: torch.nn.Module) -> None:
        super().__init__()
        self.dw = torch.nn.Conv2d(64, 64, 3, padding=1, groups=64)
        self.conv, self.act = torch.nn.Conv2d(64, 96, 1), act
        self.dw2 = torch.nn.Conv2d(96, 96, 3, padding=1, groups=96)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dw2(self.act(self.conv(torch.relu(self.dw(x)))))


def test_silu_pointwise_conv_gets_xgen_tiles(tmp_path):
    """matmul_tiling: a 196-pixel 1x1 conv under SiLU gets 14-row vector tiles (IREE's codegen
    uses them) and matches PyTorch; the same conv under ReLU keeps IREE's tiles."""
    torch.manual_seed(0)
    x = torch.randn(1, 64, 14, 14)
    for act, taken in ((torch.nn.SiLU(), True), (torch.nn.ReLU(), False)):
        model = PointwiseAct(act).eval()
        dump = tmp_path / type(act).__name__
        planned = xgen_mlir.compile(model, (x,), dump_executables=dump)
        assert planned.report.fusion_note == ""
        tiles = planned.report.fusion_plans[0].matmul_tiles
        expected = [("196x96x64", taken)] if AVX512 else []
        assert [(t.op, t.taken) for t in tiles] == expected, [t.describe() for t in tiles]
        ours = "distribution = [1, 14, 96, 0], vector_common_parallel = [1, 14, 16, 0]"
        configured = "".join(p.read_text() for p in dump.glob("configured_*.mlir"))
        assert (ours in configured) == (taken and AVX512)
        want = model(x).detach().numpy()
        check_close(planned(x), want, atol=1e-5, rtol=1e-4, what=type(act).__name__)
        if taken and AVX512:
            assert "Matmul tiles" in render("silu", {}, planned.report.fusion_plans)


class SevenPixelTail(torch.nn.Module):
    """MobileNetV2's last stage in small: a depthwise conv, then a 1x1 conv on 7x7 pixels
    (M = 49) whose result goes to the output (``padded=False``) or, through a ReLU, to another
    depthwise conv (``padded=True``)."""

    def __init__(self, padded: bool) -> None:
        super().__init__()
        self.dw = torch.nn.Conv2d(192, 192, 3, padding=1, groups=192)
        self.conv = torch.nn.Conv2d(192, 160, 1)
        self.dw2 = torch.nn.Conv2d(160, 160, 3, padding=1, groups=160) if padded else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(torch.relu(self.dw(x)))
        return y if self.dw2 is None else self.dw2(torch.relu(y))


def test_seven_pixel_pointwise_conv_gets_xgen_tiles_instead_of_data_tiling(tmp_path):
    """matmul_tiling: a 49-pixel 1x1 conv, which data tiling would pack (few rows), is left
    plain and gets 7-row x 16-column tiles in 49 x 16 workgroups (IREE's codegen uses them);
    padded for the next conv it keeps IREE's tiles. Without AVX-512 the rule is off and the
    conv is data-tiled as before. All match PyTorch. (By default xgen-pointwise-kernels takes
    such a conv first; this rule serves the ones it leaves, so it is switched off here.)"""
    torch.manual_seed(0)
    x = torch.randn(1, 192, 7, 7)
    ours = "distribution = [49, 16, 0], vector_common_parallel = [7, 16, 0]"
    for padded in (False, True):
        model = SevenPixelTail(padded).eval()
        dump = tmp_path / f"padded{padded}"
        planned = xgen_mlir.compile(
            model,
            (x,),
            dump_executables=dump,
            # IREE's data tiling against xgen_mlir's tiles: not the GEMM kernel's prior (AVX2)
            target_options={"pointwise_min_padding": "16", "gemm_kernels": "false"},
        )
        assert planned.report.fusion_note == ""
        plan = planned.report.fusion_plans[0]
        taken = AVX512 and not padded
        expected = [("49x160x192", taken)] if AVX512 else []
        assert [(t.op, t.taken) for t in plan.matmul_tiles] == expected, [
            t.describe() for t in plan.matmul_tiles
        ]
        (conv,) = [d for d in plan.tiling if (d.m, d.n, d.k) == (49, 160, 192)]
        assert conv.tiled == (not AVX512 and not padded), conv.reason
        assert ("xgen_mlir's tiles" in conv.reason) == taken
        configured = "".join(p.read_text() for p in dump.glob("configured_*.mlir"))
        assert (ours in configured) == taken
        want = model(x).detach().numpy()
        check_close(planned(x), want, atol=1e-5, rtol=1e-4, what=f"padded={padded}")


def test_squeeze_excite_matvecs_share_one_dispatch_when_cheap():
    """The SE block's squeeze and excite matvecs (+ activations and the scale) become one
    planner region on 32 channels, one dispatch fewer than with the chain refused; on 512
    channels recomputing the squeeze per vector tile would cost too much: two planner regions.
    Both match PyTorch."""
    from test_rewrites import SqueezeExciteBlock

    torch.manual_seed(0)
    counts = {}
    for channels, squeeze in ((32, 8), (512, 128)):
        model = SqueezeExciteBlock(channels, squeeze).eval()
        x = torch.randn(1, channels, 16, 16)
        compiled = xgen_mlir.compile(model, (x,))
        with torch.no_grad():
            want = model(x)
        check_close(
            compiled(x).numpy(),
            want.numpy(),
            atol=1e-5,
            rtol=1e-4,
            what=f"SE block, {channels} channels",
        )
        groups = [g for g in compiled.report.fusion_plans[0].groups if g.matvecs]
        counts[channels] = compiled.dispatch_count()
        if channels == 32:
            (chain,) = groups
            assert chain.contractions == chain.matvecs == 2 and not chain.delegated
        else:
            assert len(groups) == 2
            assert all(g.contractions == g.matvecs == 1 and not g.delegated for g in groups)
    # same block structure, one dispatch fewer where the chain is fused
    assert counts[32] == counts[512] - 1, counts


class InvertedResidual(torch.nn.Module):
    """A MobileNetV2 block in small: 1x1 expand + ReLU6, a depthwise conv (3x3, or 5x5 as in
    EfficientNet-B0) whose input is zero-padded, 1x1 project; and a dense 3x3 conv after."""

    def __init__(self, k: int) -> None:
        super().__init__()
        self.expand = torch.nn.Conv2d(16, 64, 1)
        self.dw = torch.nn.Conv2d(64, 64, k, padding=k // 2, groups=64)
        self.project = torch.nn.Conv2d(64, 16, 1)
        self.dense = torch.nn.Conv2d(16, 16, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        relu6 = torch.nn.functional.relu6
        y = self.project(relu6(self.dw(relu6(self.expand(x)))))
        return self.dense(y + x)


@pytest.mark.parametrize("k", [3, 5])
def test_pads_of_3x3_depthwise_convs_go_into_their_dispatch(k, tmp_path):
    model = InvertedResidual(k).eval()
    x = torch.randn(1, 16, 28, 28, generator=torch.Generator().manual_seed(0))
    compiled = xgen_mlir.compile(model, (x,), dump_executables=tmp_path)
    assert compiled.report.fusion_note == ""
    placed = compiled.report.fusion_plans[0].pad_placements
    depthwise = [p for p in placed if p.reader.startswith("depthwise")]
    assert [(p.reader, p.fused) for p in depthwise] == [(f"depthwise conv {k}x{k}", k == 3)]
    assert not any(p.fused for p in placed if p not in depthwise), [p.describe() for p in placed]
    # The fused pad is computed in the depthwise conv's dispatch; every other padded buffer is
    # filled, then written in place (no dispatch pads anything).
    padding = [f.read_text() for f in tmp_path.glob("*.mlir") if "tensor.pad" in f.read_text()]
    assert bool(padding) == (k == 3)
    assert all("3x3x64xf32" in text for text in padding)  # the depthwise filter's dispatch
    assert "Zero pads" in render("dw", {}, compiled.report.fusion_plans)
    with torch.no_grad():
        check_close(compiled(x), model(x), atol=1e-4, rtol=1e-4, what=f"dw{k}x{k}")


class OddWidthDepthwise(torch.nn.Module):
    """Depthwise convs whose output widths (7, 15) IREE's own vector tile need not divide:
    3x3 stride 1, 3x3 stride 2 and 5x5, each with a bias and a ReLU6."""

    def __init__(self) -> None:
        super().__init__()
        self.dw3 = torch.nn.Conv2d(64, 64, 3, padding=1, groups=64)
        self.dw3s2 = torch.nn.Conv2d(64, 64, 3, stride=2, padding=1, groups=64)
        self.dw5 = torch.nn.Conv2d(64, 64, 5, padding=2, groups=64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        relu6 = torch.nn.functional.relu6
        return self.dw5(relu6(self.dw3s2(relu6(self.dw3(x)))))


def test_depthwise_convs_get_tiles_that_divide_their_output(tmp_path):
    """Below 512-bit vectors (the target fact stated, as on an AVX2 CPU), xgen-depthwise-tiles
    gives each depthwise conv a vector tile that divides its output width, in every dispatch
    IREE compiles, with the numbers PyTorch gives."""
    model = OddWidthDepthwise().eval()
    x = torch.randn(1, 64, 15, 15, generator=torch.Generator().manual_seed(0))
    compiled = xgen_mlir.compile(
        model,
        (x,),
        dump_executables=tmp_path,
        tuning_db=False,
        target_options={"vector_bits": "256"},
    )
    tiles = [t for p in compiled.report.fusion_plans for t in p.conv_tiles]
    assert [t.conv for t in tiles] == ["15x15x64 3x3", "8x8x64 3x3 s2", "8x8x64 5x5"]
    assert all(t.taken for t in tiles), [t.describe() for t in tiles]
    for t in tiles:
        width = int(t.conv.split("x")[1])
        assert width % t.vector[2] == 0, t.describe()
    assert [t.input_pad for t in tiles] == [True, True, False]  # 3x3 windows only
    configured = "".join(f.read_text() for f in tmp_path.glob("configured_*.mlir"))
    for t in tiles:
        assert f"vector_common_parallel = {t.vector}" in configured, t.describe()
    with torch.no_grad():
        check_close(compiled(x), model(x), atol=1e-4, rtol=1e-4, what="odd-width depthwise")
    wide = xgen_mlir.compile(model, (x,), tuning_db=False, target_options={"vector_bits": "512"})
    assert not [t for p in wide.report.fusion_plans for t in p.conv_tiles]  # IREE's divide


_LAYOUT_READERS = """
#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
func.func @f(%x: tensor<4x8xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %c = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<8x4xf32>
  %t = linalg.generic {indexing_maps = [#id, #tr], iterator_types = ["parallel", "parallel"]}
      ins(%c : tensor<4x8xf32>) outs(%e2 : tensor<8x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<8x4xf32>
  %r = "flow.dispatch.region"() ({
    %u = linalg.generic {indexing_maps = [#id, #tr], iterator_types = ["parallel", "parallel"]}
      ins(%d : tensor<4x8xf32>) outs(%e2 : tensor<8x4xf32>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
    } -> tensor<8x4xf32>
    "flow.return"(%u) : (tensor<8x4xf32>) -> ()
  }, {}) {operandSegmentSizes = array<i32: 0, 0>} : () -> tensor<8x4xf32>
  return %t, %r : tensor<8x4xf32>, tensor<8x4xf32>
}
"""


def test_a_layout_change_already_in_a_region_stays_there():
    """A conv's transposing reader joins the conv's region (IREE fuses it into its own conv
    dispatches) unless an earlier dispatch step already put it in a region of its own: then
    it stays (taken, its op was in another block and the region builder failed: EfficientNet
    int8 lost every dispatch step to that)."""
    from xgen_mlir._mlir import ir
    from xgen_mlir.fusion.conv_tiling import _layout_change

    with ir.Context() as ctx:
        ctx.allow_unregistered_dialects = True
        module = ir.Module.parse(_LAYOUT_READERS)
        ops = list(module.body.operations[0].regions[0].blocks[0].operations)
        free, wrapped = ops[1], ops[2]
        taken = _layout_change(free.results[0], [free.operation], set())
        assert taken is not None and taken.name == "linalg.generic"
        assert _layout_change(wrapped.results[0], [wrapped.operation], set()) is None


def test_a_region_takes_a_chain_of_reshapes_between_its_members():
    """Members joined through collapse_shape -> expand_shape (the planner looks through
    reshapes): both reshapes go into the region. The collapse's only reader is the expand,
    itself not a member until its own reader is seen; it must not be moved after the region
    the expand now sits in (a dynamically quantized conv's Winograd output hit this)."""
    from xgen_mlir._mlir import ir, new_context

    text = """
    #id2 = affine_map<(d0, d1) -> (d0, d1)>
    #id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
    func.func @f(%x: tensor<4x8xf32>) -> tensor<2x2x8xf32> {
      %e = tensor.empty() : tensor<4x8xf32>
      %a = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
          ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
      ^bb0(%i: f32, %o: f32):
        %n = arith.negf %i : f32
        linalg.yield %n : f32
      } -> tensor<4x8xf32>
      %c = tensor.collapse_shape %a [[0, 1]] : tensor<4x8xf32> into tensor<32xf32>
      %d = tensor.expand_shape %c [[0, 1, 2]] output_shape [2, 2, 8]
          : tensor<32xf32> into tensor<2x2x8xf32>
      %e2 = tensor.empty() : tensor<2x2x8xf32>
      %b = linalg.generic {indexing_maps = [#id3, #id3],
                           iterator_types = ["parallel", "parallel", "parallel"]}
          ins(%d : tensor<2x2x8xf32>) outs(%e2 : tensor<2x2x8xf32>) {
      ^bb0(%i: f32, %o: f32):
        %n = arith.negf %i : f32
        linalg.yield %n : f32
      } -> tensor<2x2x8xf32>
      return %b : tensor<2x2x8xf32>
    }
    """
    with new_context() as ctx:
        ctx.allow_unregistered_dialects = True
        module = ir.Module.parse(text)
        body = module.body.operations[0].regions[0].blocks[0]
        generics = [o for o in body.operations if o.operation.name == "linalg.generic"]
        region = wrap_in_region(generics)
        module.operation.verify()
        inside = [o.operation.name for o in region.regions[0].blocks[0].operations]
        assert "tensor.collapse_shape" in inside and "tensor.expand_shape" in inside, inside
