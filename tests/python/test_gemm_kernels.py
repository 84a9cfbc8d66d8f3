"""The generated dense GEMM kernel (codegen/dense_gemm.py, xgen-gemm-kernels): linear layers
compiled through it match PyTorch at every remainder the tiling has (rows that do not fill
the register tile, outputs that do not fill a panel, k blocks), with their epilogues fused,
NaN propagated as dense does; it runs only where the option or the tuning database says."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import check_close
from torch import nn

import xgen_mlir
from xgen_mlir.codegen.dense_gemm import GemmSpec, pack_weights
from xgen_mlir.passes import winograd_convs as wc
from xgen_mlir.target import busy_share, gemm_tile
from xgen_mlir.tunedb import HostIdentity, Record, TuningDB
from xgen_mlir.tuning.choices import _graph_module

EVERY = {"gemm_kernels": "true", "offload": "none"}


def _kernels(m) -> int:
    return m.report.rewrites.get("xgen-gemm-kernels", {}).get("gemm kernels", 0)


class _Mlp(nn.Module):
    """Three Linear layers: GELU (erf) after the first, ReLU after the second, no bias on
    the third; K = 600 spans three k blocks of 256, N = 30 leaves a partial panel."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(600, 72)
        self.b = nn.Linear(72, 30)
        self.c = nn.Linear(30, 17, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c(torch.relu(self.b(nn.functional.gelu(self.a(x)))))


@pytest.mark.parametrize("rows", [5, 13])  # 5: less than one 6-row tile (AVX2)
def test_mlp_through_gemm_kernels_matches_pytorch(rows):
    torch.manual_seed(rows)
    model = _Mlp().eval()
    x = torch.randn(rows, 600)
    m = xgen_mlir.compile(model, (x,), target_options=EVERY)
    assert _kernels(m) == 3, m.report.rewrites
    fused = m.report.rewrites["xgen-gemm-kernels"].get("of them with their epilogues", 0)
    assert fused == 2, m.report.rewrites  # GELU and ReLU in the kernels' epilogues
    with torch.no_grad():
        want = model(x).numpy()
    check_close(np.asarray(m(x)), want, atol=1e-5 * np.abs(want).max(), rtol=1e-4, what="mlp")


class _Pointwise(nn.Module):
    """1x1 convs at 7x9 pixels (63 rows: not whole tiles), a ReLU6 after the first; with
    ``depthwise``, a depthwise conv between them makes xgen-nhwc-convs run every conv NHWC."""

    def __init__(self, depthwise: bool) -> None:
        super().__init__()
        self.a = nn.Conv2d(24, 40, 1)
        self.d = nn.Conv2d(40, 40, 3, padding=1, groups=40) if depthwise else nn.Identity()
        self.b = nn.Conv2d(40, 20, 1, bias=False)
        self.s = nn.Conv2d(20, 8, 3, padding=1)  # 3x3: never the GEMM kernel

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.s(self.b(self.d(nn.functional.relu6(self.a(x)))))


@pytest.mark.parametrize("depthwise", [False, True], ids=["nchw", "nhwc"])
def test_pointwise_convs_through_gemm_kernels_match_pytorch(depthwise):
    torch.manual_seed(3)
    model = _Pointwise(depthwise).eval()
    x = torch.randn(2, 24, 7, 9)
    m = xgen_mlir.compile(model, (x,), target_options=EVERY)
    assert _kernels(m) == 2, m.report.rewrites  # the two 1x1 convs
    with torch.no_grad():
        want = model(x).numpy()
    check_close(np.asarray(m(x)), want, atol=1e-5 * np.abs(want).max(), rtol=1e-4, what="1x1")


class _NoNormBlock(nn.Module):
    """MobileBERT's bottleneck output: a Linear on [batch, tokens, hidden], a residual add,
    then NoNorm (a per-channel scale and shift); N = 36 leaves a partial panel, 2 x 11 = 22
    rows a partial tile. A second Linear's GELU feeds a row-wise scale the kernel cannot
    read (a [tokens, 1] tensor): it stops before it."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(20, 36)
        self.scale = nn.Parameter(torch.randn(36))
        self.shift = nn.Parameter(torch.randn(36))
        self.b = nn.Linear(36, 36)
        self.rows = nn.Parameter(torch.randn(11, 1))

    def forward(self, x: torch.Tensor, res: torch.Tensor) -> torch.Tensor:
        h = (self.a(x) + res) * self.scale + self.shift
        return nn.functional.gelu(self.b(h)) * self.rows


def test_per_channel_constants_and_a_residual_fuse_into_the_epilogue():
    torch.manual_seed(4)
    model = _NoNormBlock().eval()
    x, res = torch.randn(2, 11, 20), torch.randn(2, 11, 36)
    m = xgen_mlir.compile(model, (x, res), target_options=EVERY)
    assert _kernels(m) == 2, m.report.rewrites
    counts = m.report.rewrites["xgen-gemm-kernels"]
    assert counts.get("of them with their epilogues", 0) == 2, counts
    assert counts.get("epilogues with per-channel constants", 0) == 1, counts
    assert counts.get("epilogues reading a tensor (a residual)", 0) == 1, counts
    with torch.no_grad():
        want = model(x, res).numpy()
    got = np.asarray(m(x, res))
    check_close(got, want, atol=1e-5 * np.abs(want).max(), rtol=1e-4, what="nonorm block")
    res2 = torch.randn(2, 11, 36)  # the residual is read at run time, not folded in
    with torch.no_grad():
        want2 = model(x, res2).numpy()
    check_close(
        np.asarray(m(x, res2)), want2, atol=1e-5 * np.abs(want2).max(), rtol=1e-4, what="res2"
    )


def test_nan_and_inf_inputs_propagate_as_in_pytorch():
    torch.manual_seed(0)
    model = nn.Linear(40, 24).eval()
    x = torch.randn(9, 40)
    x[2, 5] = float("nan")
    x[7, 0] = float("inf")
    m = xgen_mlir.compile(model, (torch.randn(9, 40),), target_options=EVERY)
    assert _kernels(m) == 1
    with torch.no_grad():
        want = model(x).numpy()
    got = np.asarray(m(x))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    ok = np.isfinite(want)
    check_close(got[ok], want[ok], atol=1e-5, rtol=1e-4, what="finite outputs")


def test_matmuls_of_two_activations_and_default_compiles_stay_with_iree():
    """Attention's q @ k^T has no constant weights: never the kernel. Without a tune (the
    default gemm_kernels=tuned and an empty database) or with gemm_kernels=false, no layer
    runs it; each linear layer's decision is in the report."""

    class Attn(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q = nn.Linear(32, 32)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            q = self.q(x)
            return torch.softmax(q @ x.transpose(0, 1), -1)

    torch.manual_seed(0)
    model = Attn().eval()
    x = torch.randn(12, 32)
    m = xgen_mlir.compile(model, (x,), target_options=EVERY)
    assert _kernels(m) == 1, m.report.rewrites  # the projection only
    with torch.no_grad():
        want = model(x).numpy()
    check_close(np.asarray(m(x)), want, atol=1e-5, rtol=1e-4, what="attention")
    off = xgen_mlir.compile(model, (x,), target_options={"gemm_kernels": "false"})
    assert _kernels(off) == 0
    with pytest.raises(xgen_mlir.errors.PipelineError, match="gemm_kernels"):
        xgen_mlir.compile(model, (x,), target_options={"gemm_kernels": "sometimes"})


def test_tuned_follows_the_database(tmp_path):
    """gemm_kernels=tuned (the default) runs the kernel exactly where this host's records
    say it beats IREE's code; a record measured slower keeps IREE's."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(48, 64), nn.ReLU(), nn.Linear(64, 16)).eval()
    x = torch.randn(20, 48)
    module = _graph_module(model, (x,), "cpu", {})
    cands = wc.candidates(module.operation, offload=True)
    assert len(cands) == 2
    db = tmp_path / "t.db"
    with TuningDB(db) as tdb:
        for cand, seconds in zip(cands, (0.5e-3, 2e-3), strict=True):  # faster, slower
            record = Record(cand.signature, wc.gemm_config(), "ok", seconds, 1e-3, description="t")
            tdb.add(record, HostIdentity.current())
    m = xgen_mlir.compile(model, (x,), tuning_db=db)
    assert _kernels(m) == 1, m.report.rewrites
    decisions = sorted(d for _, d, _ in m.report.tuning.choices)
    assert decisions == ["IREE", "xgen_gemm f32"], m.report.tuning.choices
    with torch.no_grad():
        want = model(x).numpy()
    check_close(np.asarray(m(x)), want, atol=1e-5, rtol=1e-4, what="tuned")


def test_unmeasured_linear_layers_start_in_the_kernel_on_a_narrower_target(tmp_path):
    """The prior on a target narrower than AVX-512 (planned for AVX2 here on any host): with
    no record, an f32 Linear layer of at least 16 rows runs the kernel, and the report says
    it is the prior; fewer rows, an AVX-512 target without oneDNN, or gemm_kernels=false keep
    IREE's code. A record that IREE's code is faster replaces the prior."""
    torch.manual_seed(1)
    model = _Mlp().eval()
    x = torch.randn(20, 600)
    db = tmp_path / "t.db"
    TuningDB(db).close()  # an empty database: no measurement on this host
    avx2 = {"vector_bits": "256"}
    m = xgen_mlir.compile(model, (x,), tuning_db=db, target_options=avx2)
    assert _kernels(m) == 3, m.report.rewrites
    whys = [why for _, decision, why in m.report.tuning.choices if decision == "xgen_gemm f32"]
    assert len(whys) == 3 and all("starts in xgen_mlir's GEMM kernel" in w for w in whys), whys
    with torch.no_grad():
        want = model(x).numpy()
    check_close(np.asarray(m(x)), want, atol=1e-5 * np.abs(want).max(), rtol=1e-4, what="prior")
    wide = {"vector_bits": "512", "offload": "none"}
    off = {**avx2, "gemm_kernels": "false"}
    for opts, rows in ((avx2, 8), (wide, 20), (off, 20)):
        other = xgen_mlir.compile(model, (x[:rows],), tuning_db=db, target_options=opts)
        assert _kernels(other) == 0, (opts, rows, other.report.rewrites)
    module = _graph_module(model, (x,), "cpu", {"target_options": avx2})
    first = wc.candidates(module.operation, offload=True)[0]
    with TuningDB(db) as tdb:
        slower = Record(first.signature, wc.gemm_config(), "ok", 2e-3, 1e-3, description="t")
        tdb.add(slower, HostIdentity.current())
    measured = xgen_mlir.compile(model, (x,), tuning_db=db, target_options=avx2)
    assert _kernels(measured) == 2, measured.report.rewrites


def test_unmeasured_pointwise_convs_start_in_the_kernel_on_a_narrower_target(tmp_path):
    """The same prior for 1x1 stride-1 convs: on a 256-bit target with no record both 1x1
    convs run the kernel (the 3x3 never), with PyTorch's numbers; on the 512-bit target
    (oneDNN aside) IREE's code keeps them."""
    torch.manual_seed(3)
    model = _Pointwise(True).eval()
    x = torch.randn(2, 24, 7, 9)
    db = tmp_path / "t.db"
    TuningDB(db).close()
    avx2 = {"vector_bits": "256"}
    m = xgen_mlir.compile(model, (x,), tuning_db=db, target_options=avx2)
    assert _kernels(m) == 2, m.report.rewrites
    whys = [why for _, decision, why in m.report.tuning.choices if decision == "xgen_gemm f32"]
    assert len(whys) == 2 and all("a 1x1 conv starts in" in w for w in whys), whys
    with torch.no_grad():
        want = model(x).numpy()
    check_close(np.asarray(m(x)), want, atol=1e-5 * np.abs(want).max(), rtol=1e-4, what="1x1")
    wide = {"vector_bits": "512", "offload": "none"}
    assert _kernels(xgen_mlir.compile(model, (x,), tuning_db=db, target_options=wide)) == 0


def test_packing_and_tiles():
    """Panels of the tile's width with zero columns past N, then the bias; the register tile
    fills AVX2's 16 and AVX-512's 32 registers without spilling."""
    w = np.arange(5 * 3, dtype=np.float32).reshape(5, 3)
    packed = pack_weights(w, np.array([1, 2, 3, 4, 5], np.float32), 4)
    panels = packed[: 2 * 3 * 4].reshape(2, 3, 4)
    np.testing.assert_array_equal(panels[0], w[:4].T)
    np.testing.assert_array_equal(panels[1][:, 0], w[4])
    assert not panels[1][:, 1:].any()
    np.testing.assert_array_equal(packed[24:], [1, 2, 3, 4, 5, 0, 0, 0])
    for bits, registers in ((256, 16), (512, 32)):
        rows, nv, lanes = gemm_tile(bits)
        assert rows * nv + nv + 1 <= registers and lanes == bits // 32
    spec = GemmSpec("s", m=128, n=1536, k=384, lanes=8, rows=6, n_vectors=2)
    assert spec.grid == (48, 1, 1) and spec.m_block >= 128


def test_workgroups_keep_the_workers_busy_under_irees_reservations():
    """IREE hands out workgroups 8 at a time once there are 8 per worker: 24 on 2 threads
    leave one worker idle a third of the time. The GEMM kernel's panels per workgroup avoid
    that where the thread count is known; a batch (Winograd's GEMMs) counts as workgroups."""
    assert busy_share(24, 2) == 0.75 and busy_share(72, 2) == 0.9
    assert busy_share(48, 2) == busy_share(12, 2) == busy_share(7, 1) == 1.0
    assert busy_share(15, 2) == 15 / 16  # one at a time below 16: 8 and 7
    tile = {"lanes": 8, "rows": 6, "n_vectors": 2}
    # DistilBERT's layers at 128 tokens: 48 panels of 768 outputs, 192 of 3072
    assert GemmSpec("s", m=128, n=768, k=3072, **tile).group == 2  # threads unknown
    assert GemmSpec("s", m=128, n=768, k=3072, workers=2, **tile).group == 1  # 48, not 24
    assert GemmSpec("s", m=128, n=3072, k=768, workers=2, **tile).group == 2  # 96 balance
    assert GemmSpec("s", m=128, n=2304, k=768, workers=2, **tile).group == 1  # 144, not 72
    assert GemmSpec("s", m=128, n=768, k=768, workers=2, panels_per_group=2, **tile).group == 2
    batched = GemmSpec("s", m=16, n=256, k=256, batch=36, workers=2, **tile)
    assert batched.grid == (8, 1, 36) and batched.ids == 3  # 288 workgroups: 2 panels each


def test_a_pointwise_conv_is_measured_as_the_kernel(tmp_path):
    """The tuner measures a 1x1 conv as the GEMM kernel (both panel groupings) beside IREE's
    code, numbers checked first, and compile() follows whichever record won."""
    from xgen_mlir.tuning.choices import measure_choices
    from xgen_mlir.tuning.measure import MeasureSettings

    torch.manual_seed(2)
    model = nn.Sequential(nn.Conv2d(16, 32, 1), nn.ReLU()).eval()
    x = torch.randn(1, 16, 12, 12)
    settings = MeasureSettings(threads=2, rounds=3, min_block_s=0.002)
    db = tmp_path / "t.db"
    options = {"target_options": {"offload": "none"}}
    (choice,) = measure_choices(model, (x,), db=db, settings=settings, progress=False, **options)
    gemm = [r for r in choice.measured if r.config["algorithm"] == "xgen_gemm"]
    assert [r.config for r in gemm] == [wc.gemm_config(1), wc.gemm_config(2)]
    assert all(r.status == "ok" and r.seconds > 0 for r in gemm), [r.detail for r in gemm]
    m = xgen_mlir.compile(model, (x,), tuning_db=db, tuning_threads=2, **options)
    assert _kernels(m) == (1 if choice.algorithm.startswith("xgen_gemm") else 0), choice.why
    with torch.no_grad():
        want = model(x).numpy()
    check_close(np.asarray(m(x)), want, atol=1e-5 * np.abs(want).max(), rtol=1e-4, what="conv")


class _RoundedLinear(nn.Module):
    """A permutation Linear (exact: each output is one input times 1) and torch.round after
    it, as a quantize rounds a layer's output: the kernel's epilogue rounds."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.lin = nn.Linear(n, n, bias=False)
        with torch.no_grad():
            self.lin.weight.copy_(torch.eye(n).flip(0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.round(self.lin(x))


def test_roundeven_epilogue_matches_torch_bit_for_bit():
    """Every kind of f32 through the kernel's roundeven (ties both ways, -0 and small
    negatives, 2^23 and past it, the largest values, infinities, NaN; no subnormals: the
    product before it flushes them, as IREE's code does)."""
    edges = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, -0.49999997, 0.0, -0.0, -0.3, 0.3,
             8388607.5, -8388607.5, 8388608.0, -8388609.0, 16777217.0, 4194303.5, 1e30,
             -1e30, 3.4028235e38, -3.4028235e38, 1e-30, -1e-30]  # fmt: skip
    gen = torch.Generator().manual_seed(0)
    halves = torch.arange(-300, 300, dtype=torch.float32) / 2  # every tie in [-150, 150)
    x = torch.cat([torch.tensor(edges), halves, torch.randn(600, generator=gen) * 1e3])
    x = x[: len(x) // 32 * 32].reshape(-1, 32)
    model = _RoundedLinear(32).eval()
    dense = {**EVERY, "block_max_density": "0"}  # not the block-sparse kernel: a permutation
    m = xgen_mlir.compile(model, (x,), target_options=dense)
    assert m.report.rewrites["xgen-gemm-kernels"].get("of them with their epilogues") == 1
    got = np.asarray(m(x.numpy()))
    with torch.no_grad():
        rounded = model.lin(x)  # x permuted, exactly
    want = torch.round(rounded).numpy()
    same = got.view(np.uint32) == want.view(np.uint32)
    assert same.all(), list(zip(rounded.numpy()[~same], got[~same], want[~same], strict=True))
    inf = x.clone()
    inf[0, :3] = torch.tensor([float("inf"), float("-inf"), float("nan")])
    got = np.asarray(m(inf.numpy()))[0, :3]
    # Inf through the permutation's other products (0 * Inf) is NaN in PyTorch's matmul too
    with torch.no_grad():
        want = torch.round(model.lin(inf)).numpy()[0, :3]
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(
        got[~np.isnan(got)], want[~np.isnan(want)]
    ), (got, want)
