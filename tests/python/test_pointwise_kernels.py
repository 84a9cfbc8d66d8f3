"""xgen-pointwise-kernels end to end: 1x1 convs over few pixels, compiled with the cpu pipeline,
run as generated kernels (with the activation and the residual add after them) and match
PyTorch; NaN comes out where the module without them puts it. The cpu target option
``pointwise_min_padding`` picks which convs are replaced (16: none)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import xgen_mlir
from xgen_mlir.codegen.pointwise import PointwiseSpec, generate, pack_weights, unsupported

NONE = {"target_options": {"pointwise_min_padding": "16"}}
# the vdpbf16ps kernels, also on a CPU with AMX tiles (where bf16 keeps the f32 kernels)
DOT = {"target_options": {"bf16_tiles": "0"}}


class Tail(nn.Module):
    """An inverted-residual block as MobileNetV2 has at 7x7 (which the block fusion leaves
    alone: odd width): expand 1x1 + BN + ReLU6, depthwise 3x3 + BN + ReLU6, project 1x1 + BN,
    plus the input; after a 1x1 conv, so the input is a tensor the model computes in NHWC
    as in a real network. (The cpu pipeline goes NHWC for models with depthwise convs.)"""

    def __init__(self, c: int = 32, ce: int = 64) -> None:
        super().__init__()
        self.stem = nn.Conv2d(c, c, 1)
        self.expand = nn.Sequential(nn.Conv2d(c, ce, 1, bias=False), nn.BatchNorm2d(ce), nn.ReLU6())
        self.dw = nn.Sequential(
            nn.Conv2d(ce, ce, 3, 1, 1, groups=ce, bias=False), nn.BatchNorm2d(ce), nn.ReLU6()
        )
        self.project = nn.Sequential(nn.Conv2d(ce, c, 1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        return x + self.project(self.dw(self.expand(x)))


def _model() -> nn.Module:
    torch.manual_seed(0)
    m = Tail()
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 2.0)
    return m.eval()


def test_7x7_convs_match_pytorch_with_activation_and_residual():
    m = _model()
    x = torch.randn(1, 32, 7, 7)
    compiled = xgen_mlir.compile(m, (x,))
    assert compiled.report.rewrites["xgen-pointwise-kernels"] == {
        "convs replaced": 3,
        "of them with their activations": 1,
        "of them with a residual add": 1,
    }
    want = m(x).detach().numpy()
    np.testing.assert_allclose(np.asarray(compiled(x.numpy())), want, rtol=1e-4, atol=1e-4)


def test_rows_left_over_from_the_register_blocks():
    """58 rows (a 2x29 image): no divisor fits a register block, the last rows run alone."""
    m = _model()
    x = torch.randn(1, 32, 2, 29)
    assert 58 % PointwiseSpec("k", 58, 32, 64).pixels
    compiled = xgen_mlir.compile(m, (x,))
    assert compiled.report.rewrites["xgen-pointwise-kernels"]["convs replaced"] == 3
    np.testing.assert_allclose(
        np.asarray(compiled(x.numpy())), m(x).detach().numpy(), rtol=1e-4, atol=1e-4
    )


def test_rows_that_fill_iree_tiles_stay_with_iree():
    m = _model()
    x = torch.randn(1, 32, 8, 8)  # 64 rows: four whole 16-row tiles
    compiled = xgen_mlir.compile(m, (x,))
    assert "xgen-pointwise-kernels" not in compiled.report.rewrites
    np.testing.assert_allclose(
        np.asarray(compiled(x.numpy())), m(x).detach().numpy(), rtol=1e-4, atol=1e-4
    )


def test_nan_and_inf_come_out_as_without_the_kernels():
    m = _model()
    x = torch.randn(1, 32, 7, 7)
    x[0, 3, 2, 4] = float("nan")
    x[0, 0, 0, 0] = float("inf")
    ours = np.asarray(xgen_mlir.compile(m, (x,))(x.numpy()))
    plain = np.asarray(xgen_mlir.compile(m, (x,), **NONE)(x.numpy()))
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(plain))
    finite = np.isfinite(plain)
    np.testing.assert_allclose(ours[finite], plain[finite], rtol=1e-4, atol=1e-4)


def test_flops_unchanged():
    from xgen_mlir.analysis.flops import module_flops
    from xgen_mlir.frontend import import_model
    from xgen_mlir.passes.runner import run_steps

    m = _model()
    x = torch.randn(1, 32, 7, 7)
    steps = ["xgen-fold-batchnorm", "xgen-nhwc-convs", "xgen-cancel-reshapes"]
    ours, plain = import_model(m, (x,)), import_model(m, (x,))
    run_steps(plain, steps)
    run_steps(ours, [*steps, "xgen-pointwise-kernels"])
    assert "linalg.conv_2d_nhwc_hwcf" not in str(ours)  # all three 1x1 convs replaced
    assert module_flops(ours.operation) == module_flops(plain.operation) > 0


@pytest.mark.parametrize("vector_bits", [256, 512])
def test_kernels_for_either_vector_width_match_pytorch(vector_bits):
    """The kernels follow the target's vector width (8 floats and 16 registers with AVX2, 16
    and 32 with AVX-512), whichever this host has: both compute the model's numbers."""
    from xgen_mlir.frontend import import_model
    from xgen_mlir.passes.runner import run_steps

    m = _model()
    x = torch.randn(1, 32, 7, 7)
    module = import_model(m, (x,))
    steps = ["xgen-fold-batchnorm", "xgen-nhwc-convs", "xgen-cancel-reshapes"]
    run_steps(module, [*steps, f"xgen-pointwise-kernels{{vector-bits={vector_bits}}}"])
    assert "linalg.conv_2d_nhwc_hwcf" not in str(module)
    compiled = xgen_mlir.compile(module, (x,))
    np.testing.assert_allclose(
        np.asarray(compiled(x.numpy())), m(x).detach().numpy(), rtol=1e-4, atol=1e-4
    )


@pytest.mark.parametrize(
    ("m", "n", "vl", "pixels", "nv"),
    [
        (49, 160, 16, 7, 1),
        (49, 320, 16, 7, 2),
        (196, 96, 16, 14, 1),
        (53, 32, 16, 24, 1),
        (1, 1000, 16, 1, 4),
        (1, 100, 16, 1, 1),
        (2, 256, 16, 2, 2),
        (49, 160, 8, 6, 2),  # AVX2: 16 registers, 12 accumulators
        (49, 96, 8, 7, 1),
        (196, 96, 8, 7, 1),
        (1, 1000, 8, 1, 4),
    ],
)
def test_register_blocks(m, n, vl, pixels, nv):
    registers = 32 if vl == 16 else 16
    spec = PointwiseSpec("k", m, 64, n, vl=vl, registers=registers)
    assert (spec.pixels, spec.nv) == (pixels, nv)
    # accumulators, leaving a quarter of the registers for the weights and the broadcast
    assert spec.pixels * spec.nv <= registers * 3 // 4 or m < 4
    assert ("rows left over" in generate(spec)) == bool(m % pixels)
    assert f"vector_size({4 * vl})" in generate(spec)


def test_refuses_a_residual_on_channels_not_a_vector_multiple():
    """24 channels are two panels, the last storing 8 columns; a residual add would read whole
    vectors of r past the row, so that one is refused."""
    assert unsupported(49, 64, 24) is None
    assert "24 output channels and a residual add" in unsupported(49, 64, 24, residual=True)
    with pytest.raises(ValueError, match="24 output channels"):
        generate(PointwiseSpec("k", 49, 64, 24, residual=True))
    assert "#define LAST_COLS 8" in generate(PointwiseSpec("k", 49, 64, 24))


class Head(nn.Module):
    """A classifier head as MobileNetV2 ends: conv features, global average pool, flatten,
    linear (100 classes: not a whole number of 16-column vectors), optionally an
    activation after it."""

    def __init__(self, classes: int = 100, after: nn.Module | None = None) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 96, 3, 2, 1), nn.ReLU6(), nn.Conv2d(96, 96, 3, 1, 1, groups=96)
        )
        self.fc = nn.Linear(96, classes)
        self.after = after or nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = self.features(x).mean((2, 3))
        return self.after(self.fc(pooled))


@pytest.mark.parametrize(("classes", "after"), [(100, None), (1000, nn.ReLU6())])
def test_classifier_head_matches_pytorch(classes, after):
    torch.manual_seed(0)
    m = Head(classes, after).eval()
    x = torch.randn(1, 3, 16, 16)
    compiled = xgen_mlir.compile(m, (x,))
    counts = compiled.report.rewrites["xgen-pointwise-kernels"]
    assert counts["matrix-vector products replaced"] == 1
    assert counts.get("of them with their activations", 0) == (after is not None)
    np.testing.assert_allclose(
        np.asarray(compiled(x.numpy())), m(x).detach().numpy(), rtol=1e-4, atol=1e-4
    )


def test_classifier_head_nan_and_off_switch():
    """A NaN feature comes out where the module without the kernel puts it; the target
    option pointwise_matvec=false leaves the matmul to IREE."""
    torch.manual_seed(0)
    m = Head().eval()
    x = torch.randn(1, 3, 16, 16)
    x[0, 1, 3, 3] = float("nan")
    ours = xgen_mlir.compile(m, (x,))
    plain = xgen_mlir.compile(m, (x,), target_options={"pointwise_matvec": "false"})
    assert "matrix-vector products replaced" not in plain.report.rewrites.get(
        "xgen-pointwise-kernels", {}
    )
    a, b = np.asarray(ours(x.numpy())), np.asarray(plain(x.numpy()))
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    np.testing.assert_allclose(a[np.isfinite(b)], b[np.isfinite(b)], rtol=1e-4, atol=1e-4)


def test_classifier_head_with_tanh_stays_with_iree():
    torch.manual_seed(0)
    m = Head(after=nn.Tanh()).eval()
    x = torch.randn(1, 3, 16, 16)
    compiled = xgen_mlir.compile(m, (x,))
    counts = compiled.report.rewrites["xgen-pointwise-kernels"]
    assert "matrix-vector products replaced" not in counts
    assert counts["not replaced: an elementwise op after it that the kernel does not translate"]
    np.testing.assert_allclose(
        np.asarray(compiled(x.numpy())), m(x).detach().numpy(), rtol=1e-4, atol=1e-4
    )


def test_padding_counts_only_rows_beyond_one_tile():
    """A 7x7 image's 49 rows are padded to 64; a squeeze-excite conv's one row gets IREE's
    one-row tile, so no kernel."""
    from xgen_mlir.passes.pointwise_kernels import padding

    assert padding(49, 16) == pytest.approx(15 / 49)
    assert padding(64, 16) == 0.0
    assert padding(1, 16) == 0.0


# ---------------------------------------------------------------------------------------------
# bf16: products of bf16 pairs (AVX512-BF16), every 1x1 conv


def _has_bf16_dot() -> bool:
    from xgen_mlir.target import cpu_flags

    return "avx512_bf16" in cpu_flags()


def test_bf16_weights_are_paired_channels_rounded_to_nearest_even():
    """The packed bf16 weights: per panel, per pair of input channels, one 32-bit word per
    output column, channel 2i in the low half and 2i + 1 in the high half (the lanes of
    vdpbf16ps), rounded as ml_dtypes rounds; an odd K gets a zero channel; the bias stays
    f32 after the weights."""
    import ml_dtypes

    rng = np.random.default_rng(0)
    k, n = 5, 40
    w, b = rng.standard_normal((k, n)).astype(np.float32), rng.standard_normal(n)
    spec = PointwiseSpec("k", 49, k, n, bf16=True)
    packed = pack_weights(w, b, spec)
    width = spec.vl * spec.nv
    words = packed[: spec.panels * spec.k_pairs * width].view(np.uint32)
    words = words.reshape(spec.panels, spec.k_pairs, width)
    low = (words & 0xFFFF).astype(np.uint16).view(ml_dtypes.bfloat16).astype(np.float32)
    high = (words >> 16).astype(np.uint16).view(ml_dtypes.bfloat16).astype(np.float32)
    want = np.pad(w, ((0, 1), (0, spec.n_padded - n))).astype(ml_dtypes.bfloat16)
    want = want.astype(np.float32)
    for panel in range(spec.panels):
        cols = slice(panel * width, (panel + 1) * width)
        np.testing.assert_array_equal(low[panel], want[0::2, cols])
        np.testing.assert_array_equal(high[panel], want[1::2, cols])
    np.testing.assert_array_equal(packed[-spec.n_padded :][:n], b.astype(np.float32))
    assert spec.k_pairs == 3 and not high[:, 2].any()  # the zero channel after K = 5


@pytest.mark.parametrize(("m", "k", "n", "chunks"), [(12544, 32, 16, 16), (49, 320, 1280, 1)])
def test_bf16_rows_split_among_workgroups(m, k, n, chunks):
    """A large image with few output channels is one panel: its rows are split in chunks of
    whole register blocks (workgroup y) so every thread gets work; 40 panels need none."""
    from xgen_mlir.codegen.pointwise import row_chunks

    spec = PointwiseSpec("k", m, k, n, bf16=True, row_chunks=row_chunks(m, k, n))
    assert spec.row_chunks == chunks
    assert spec.chunk_rows % spec.pixels == 0 and spec.grid[1] * spec.chunk_rows >= m
    assert "_mm512_dpbf16_ps" in generate(spec)
    with pytest.raises(ValueError, match="16-float"):
        generate(PointwiseSpec("k", m, k, n, vl=8, bf16=True))


@pytest.mark.parametrize("hw", [7, 14, 56])
def test_bf16_kernels_take_every_1x1_conv_and_match_pytorch(hw):
    """precision="bf16": every 1x1 conv of the block is a kernel with bf16 products (IREE's
    bf16 path packs them; at 14x14 and 56x56 IREE's f32 tiles pad nothing, so in fp32 they
    stay IREE's), within bf16's error of PyTorch's fp32."""
    if not _has_bf16_dot():
        pytest.skip("bf16 compiles as fp32 on a host without AVX512-BF16")
    m = _model()
    x = torch.randn(1, 32, hw, hw)
    compiled = xgen_mlir.compile(m, (x,), precision="bf16", precision_check=False, **DOT)
    assert compiled.report.rewrites["xgen-pointwise-kernels"]["convs replaced"] == 3
    want = m(x).detach().numpy()
    got = np.asarray(compiled(x.numpy()))
    assert np.abs(got - want).max() / np.abs(want).max() < 1e-2
    fp32 = xgen_mlir.compile(m, (x,))
    assert fp32.report.rewrites.get("xgen-pointwise-kernels", {}).get("convs replaced", 0) == (
        3 if hw == 7 else 0
    )


class OddConvs(nn.Module):
    """1x1 convs whose channels fill no AMX tile: 33 inputs (17 pairs, padded to 32), 40
    outputs (two and a half vectors), then 40 -> 40 with ReLU6 and a residual add, around a
    depthwise conv (so the pipeline goes NHWC)."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(33, 40, 1)
        self.dw = nn.Conv2d(40, 40, 3, 1, 1, groups=40)
        self.b = nn.Sequential(nn.Conv2d(40, 40, 1), nn.ReLU6())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.dw(self.a(x))
        return y + self.b(y)


@pytest.mark.parametrize("model, shape", [(_model, (1, 32, 14, 14)), (OddConvs, (1, 33, 7, 9))])
def test_amx_kernels_agree_with_the_dot_product_kernels(model, shape):
    """On a CPU with bf16 matrix tiles (AMX-BF16) a bf16 compile's 1x1 convs multiply in the
    tiles, 16 rows at a time (196 and 63 rows: partial tiles; 33 channels: pairs padded to a
    tile). Their operands are the vdpbf16ps kernels' (bf16_tiles=0), so the two agree but for
    the order of f32 sums; NaN and Inf come out where they do."""
    from xgen_mlir.target import BF16_TILE_FLAGS, has_any

    if not has_any(BF16_TILE_FLAGS):
        pytest.skip("this CPU has no AMX-BF16 tiles (the AMX kernel compiles for the host)")
    torch.manual_seed(1)
    m = model().eval()
    x = torch.randn(*shape)
    want = m(x).detach().numpy()
    bf16 = {"precision": "bf16", "precision_check": False}
    tiles = xgen_mlir.compile(m, (x,), **bf16, target_options={"bf16_tiles": "1"})
    dot = xgen_mlir.compile(m, (x,), **bf16, **DOT)
    counts = tiles.report.rewrites["xgen-pointwise-kernels"]
    assert counts == dot.report.rewrites["xgen-pointwise-kernels"], counts
    assert counts["convs replaced"] >= 2, counts
    got = np.array(tiles(x.numpy()))
    scale = np.abs(want).max()
    assert np.abs(got - np.asarray(dot(x.numpy()))).max() / scale < 1e-5
    assert 1e-5 < np.abs(got - want).max() / scale < 1e-2
    x[0, 3, 2, 2], x[0, 4, 1, 1] = float("inf"), float("nan")
    ours, theirs = np.array(tiles(x.numpy())), np.asarray(dot(x.numpy()))
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    np.testing.assert_array_equal(np.isinf(ours), np.isinf(theirs))


class SiluBlock(nn.Module):
    """1x1 convs with SiLU (x * sigmoid(x): exp, and the conv's output read twice), as
    EfficientNet's expand convs have, around a depthwise conv (so the pipeline goes NHWC)."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(32, 32, 1),
            nn.Conv2d(32, 64, 1),
            nn.SiLU(),
            nn.Conv2d(64, 64, 3, 1, 1, groups=64),
            nn.SiLU(),
            nn.Conv2d(64, 32, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def test_silu_after_a_1x1_conv_is_in_its_bf16_kernel():
    """With the bf16 kernels the SiLU after a 1x1 conv goes into its kernel (``epilogue_c``'s
    translation: exp through ``math_c``), within bf16's error of PyTorch; NaN and Inf come out
    where the bf16 module without the kernels puts them. In fp32 it stays with IREE."""
    if not _has_bf16_dot():
        pytest.skip("bf16 compiles as fp32 on a host without AVX512-BF16")
    torch.manual_seed(0)
    m = SiluBlock().eval()
    x = torch.randn(1, 32, 14, 14)
    bf16 = {"precision": "bf16", "precision_check": False}
    compiled = xgen_mlir.compile(m, (x,), **bf16, **DOT)
    counts = compiled.report.rewrites["xgen-pointwise-kernels"]
    assert counts["convs replaced"] == 3 and counts["of them with their activations"] == 1
    want = m(x).detach().numpy()
    assert np.abs(np.asarray(compiled(x.numpy())) - want).max() / np.abs(want).max() < 1e-2
    fp32 = xgen_mlir.compile(m, (x,), target_options={"pointwise_min_padding": "0"})
    assert "of them with their activations" not in fp32.report.rewrites["xgen-pointwise-kernels"]
    x[0, 3, 2, 2], x[0, 4, 1, 1], x[0, 5, 3, 3] = float("inf"), float("nan"), -float("inf")
    ours = np.asarray(xgen_mlir.compile(m, (x,), **bf16, **DOT)(x.numpy()))
    no_kernels = {"target_options": {**NONE["target_options"], **DOT["target_options"]}}
    plain = np.asarray(xgen_mlir.compile(m, (x,), **bf16, **no_kernels)(x.numpy()))
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(plain))
    np.testing.assert_array_equal(np.isinf(ours), np.isinf(plain))


class SqueezeExcite(nn.Module):
    """An EfficientNet block's tail: depthwise conv, squeeze-excite (pool, two one-pixel
    convs, sigmoid), the excite scale on the rows, then the 1x1 project conv."""

    def __init__(self) -> None:
        super().__init__()
        self.dw = nn.Sequential(nn.Conv2d(32, 32, 3, 1, 1, groups=32), nn.SiLU())
        self.squeeze = nn.Sequential(
            nn.AdaptiveAvgPool2d(1), nn.Conv2d(32, 8, 1), nn.SiLU(), nn.Conv2d(8, 32, 1)
        )
        self.project = nn.Conv2d(32, 16, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.dw(x)
        return self.project(y * torch.sigmoid(self.squeeze(y)))


def test_bf16_kernel_takes_the_excite_scale_on_its_rows():
    """xgen-scale-to-weights moves the excite scale onto the project conv's weights (a filter
    computed at run time, which IREE then ran as an f32 matmul); the bf16 kernel takes the
    constant weights and the scale apart, multiplying each row by it as it rounds the row
    (EfficientNet-B0 in bf16: 9 of its 11 such convs). Within bf16's error of PyTorch."""
    if not _has_bf16_dot():
        pytest.skip("bf16 compiles as fp32 on a host without AVX512-BF16")
    torch.manual_seed(0)
    m = SqueezeExcite().eval()
    x = torch.randn(1, 32, 14, 14)
    compiled = xgen_mlir.compile(m, (x,), precision="bf16", precision_check=False, **DOT)
    rewrites = compiled.report.rewrites
    assert rewrites["xgen-scale-to-weights"] == {"linalg.conv_2d_nhwc_hwcf": 1}, rewrites
    assert rewrites["xgen-pointwise-kernels"]["of them with their input's per-channel scale"] == 1
    want = m(x).detach().numpy()
    got = np.asarray(compiled(x.numpy()))
    assert np.abs(got - want).max() / np.abs(want).max() < 1e-2


@pytest.mark.parametrize("hw", [(56, 56), (13, 40)])
def test_fp32_rows_split_among_workgroups_match_pytorch(hw):
    """pointwise_convs=every: the f32 1x1 convs over whole row tiles are kernels too (3136
    and 520 rows); a conv with few output channels is one or two panels, so its rows are split
    in chunks of whole register blocks (workgroup y), the last chunk taking the rows left over
    from the register blocks (520 = 7 x 74 + 2)."""
    from xgen_mlir.codegen.pointwise import row_chunks

    m = _model()
    x = torch.randn(1, 32, *hw)
    compiled = xgen_mlir.compile(m, (x,), target_options={"pointwise_convs": "every"})
    assert compiled.report.rewrites["xgen-pointwise-kernels"]["convs replaced"] == 3
    rows = hw[0] * hw[1]
    spec = PointwiseSpec("k", rows, 64, 32, row_chunks=row_chunks(rows, 64, 32))
    assert spec.grid[1] > 1 and spec.chunk_rows % spec.pixels == 0
    assert "size_t gx, size_t gy" in generate(spec)
    np.testing.assert_allclose(
        np.asarray(compiled(x.numpy())), m(x).detach().numpy(), rtol=1e-4, atol=1e-4
    )
    plain = xgen_mlir.compile(m, (x,), target_options={"pointwise_convs": "padded"})
    assert "xgen-pointwise-kernels" not in plain.report.rewrites


def test_kernels_on_whole_row_tiles_measured_in_the_model_and_applied(tmp_path):
    """Under pointwise_convs=tuned (the default) the f32 1x1 convs over whole row tiles are
    one group: before a tune they stay IREE's (the padding rule) and the report says so;
    tune() compiles the model with them as kernels, times both in the model and records the
    verdict; compile() then follows it, with the same numbers either way. A bf16 compile
    has no such group (its kernels take every 1x1 conv)."""
    from xgen_mlir.passes.pointwise_kernels import GROUP_ALGORITHM, GROUP_PREFIX
    from xgen_mlir.tunedb import HostIdentity, TuningDB

    m = _model()
    x = torch.randn(1, 32, 8, 8)  # 64 rows: four whole 16-row tiles
    db = tmp_path / "t.db"
    TuningDB(db).close()
    common = dict(target_options={"threads": "2"})
    before = xgen_mlir.compile(m, (x,), tuning_db=db, **common)
    assert "xgen-pointwise-kernels" not in before.report.rewrites
    ((signature, decision, why),) = [
        c for c in before.report.tuning.choices if c[0].startswith(GROUP_PREFIX)
    ]
    assert signature.startswith(f"{GROUP_PREFIX} 3 convs fp32 "), signature
    assert decision == "IREE (3 convs)" and why.startswith("unmeasured: the rule"), why
    xgen_mlir.tune(m, (x,), db=db, budget_minutes=0.1, progress=False, **common)
    with TuningDB(db) as tdb:
        (record,) = tdb.choices(HostIdentity.current(threads=2)).get(signature, [])
    assert record.config == {"kind": "algorithm", "algorithm": GROUP_ALGORITHM, "use": "every"}
    assert record.status == "ok" and record.seconds > 0 and record.baseline_seconds > 0
    after = xgen_mlir.compile(m, (x,), tuning_db=db, **common)
    decided = {c[0]: c[1:] for c in after.report.tuning.choices}
    replaced = after.report.rewrites.get("xgen-pointwise-kernels", {}).get("convs replaced", 0)
    if record.detail.startswith("confirmed alone, slower in the model"):  # rejected
        assert decided[signature][0] == "IREE (3 convs)", decided[signature]
        assert decided[signature][1].startswith("the rule, the other measured in the model")
        assert replaced == 0
    else:
        assert decided[signature][0] == "kernels (3 convs)", decided[signature]
        assert decided[signature][1].startswith("measured in the model: ")
        assert replaced == 3
    np.testing.assert_allclose(
        np.asarray(after(x.numpy())), np.asarray(before(x.numpy())), rtol=1e-4, atol=1e-4
    )


def test_fp32_kernels_on_whole_row_tiles_take_silu_in():
    """Under pointwise_convs=every a 1x1 conv over whole row tiles followed by SiLU (a DAG
    reading the conv's output twice, which IREE would fuse into its matmul's dispatch) is a
    kernel with the SiLU in its epilogue (counted with its activations), not a kernel and
    SiLU's own dispatches, with PyTorch's numbers."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(16, 32, 1), nn.SiLU(), nn.Conv2d(32, 32, 3, 1, 1, groups=32)).eval()
    x = torch.randn(1, 16, 16, 16)  # 256 rows: whole 16-row tiles
    every = xgen_mlir.compile(m, (x,), target_options={"pointwise_convs": "every"})
    done = every.report.rewrites["xgen-pointwise-kernels"]
    assert done == {"convs replaced": 1, "of them with their activations": 1}, done
    np.testing.assert_allclose(
        np.asarray(every(x.numpy())), m(x).detach().numpy(), rtol=1e-4, atol=1e-4
    )
