"""Block-based pruning (compress.prune(scheme="block")) and its block-sparse kernels.

Structure: blocks keep rows x columns, the zeros show it, check_structure catches breaks,
describe / save / load / torch.export keep it. Compiled numerics against the pruned PyTorch
model (MLP, tiny BERT, 1x1 conv net, 3D CNN) with the kernels counted in the report.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from torch import nn

import xgen_mlir
from xgen_mlir import compress
from xgen_mlir.codegen.block_sparse import ERF_CLAMP, BcsrSpec, erf_coefficients
from xgen_mlir.compress.blocks import (
    block_structure,
    default_block_shape,
    default_row_share,
    kept_counts,
)
from xgen_mlir.errors import FallbackWarning, XGenError
from xgen_mlir.models.video import INPUT_SHAPE, small_3d_cnn
from xgen_mlir.target import block_tile, host_fact


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 96)).eval()


def _rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-12))


def test_default_block_is_the_register_tile():
    """The target's blocks: on AVX2 and AVX-512 two vectors of rows keeping whole columns (the
    column kernel's panels), which compress.prune then prunes by columns only; on 128-bit
    vectors the block-sparse kernel's tile."""
    _, _, lanes = block_tile(512)
    assert default_block_shape("cpu", vector_bits=512) == (2 * lanes, 4 * lanes) == (32, 64)
    assert default_row_share("cpu", vector_bits=512) == 0.0
    assert default_block_shape("cpu", vector_bits=256) == (16, 32)
    assert default_row_share("cpu", vector_bits=256) == 0.0
    assert default_block_shape("cpu", vector_bits=128) == (4, 16)
    with pytest.raises(XGenError, match="block_shape"):
        default_block_shape("vulkan")
    from xgen_mlir.passes.block_sparse import compact_density, whole_columns

    w = torch.randn(64, 96)
    model = nn.Sequential(nn.Linear(96, 64))
    with torch.no_grad():
        model[0].weight.copy_(w)
    x = torch.randn(8, 96)
    pruned = compress.prune_blocks(model, (x,), rate=4.0, vector_bits=256)
    kept = pruned[0].weight.detach().numpy()
    assert whole_columns(kept, (16, 32)) and compact_density(kept, (16, 32)) == 0.25
    given = compress.prune(model, (x,), scheme="block", rate=4.0, block_shape=(16, 32))
    assert not whole_columns(given[0].weight.detach().numpy(), (16, 32))  # rows pruned too


def test_blocks_keep_rows_times_columns():
    w = torch.randn(40, 200)  # edge blocks in both directions
    rows, cols = block_structure(w, (8, 64), 4.0, 0.5)
    assert rows.shape == (5, 4, 8) and cols.shape == (5, 4, 64)
    assert rows.any(-1).all() and cols.any(-1).all()
    assert not cols[:, -1, 200 - 192 :].any()  # past the right edge: never kept
    # inside a full block: 4 of 8 rows and 32 of 64 columns (4x fewer)
    assert int(rows[0, 0].sum()) == 4 and int(cols[0, 0].sum()) == 32


@pytest.mark.parametrize("rate", [1.5, 2.0, 3.0, 4.0, 5.0, 8.0, 16.0])
@pytest.mark.parametrize("block", [(8, 64), (4, 32), (8, 16)])
def test_blocks_meet_the_rate(rate, block):
    """Every block keeps at most 1/rate (6 of 8 rows x 43 of 64 columns at 2x kept 0.504, so
    the raise pass's 0.5 left every 2x layer dense), and not much less."""
    kr, kc = kept_counts(*block, rate, 0.5)
    share = kr * kc / (block[0] * block[1])
    assert share <= 1 / rate and share > 1 / rate - kr / (block[0] * block[1])
    w = torch.randn(100, 150)  # edge blocks both ways
    rows, cols = block_structure(w, block, rate, 0.5)
    kept = (rows[..., :, None] & cols[..., None, :]).sum().item()
    assert kept <= w.numel() / rate


def test_prune_check_describe_save_load(tmp_path):
    model, x = _mlp(), torch.randn(32, 128)
    pruned = compress.prune(model, (x,), scheme="block", rate=4.0, block_shape=(8, 32))
    assert compress.check_structure(pruned) == ["0", "2"]
    desc = compress.describe(pruned)
    assert desc.layers["0"].scheme == "block" and desc.layers["0"].block_shape == [8, 32]
    assert desc.block_weights_before / desc.block_weights_after == pytest.approx(4.0, rel=0.02)
    again = compress.SparsityDescription.from_json(desc.to_json())
    assert again.layers["2"].block_cols == desc.layers["2"].block_cols
    path = tmp_path / "mlp.pt"
    compress.save(pruned, path)
    loaded = compress.load(path, _mlp)
    assert torch.equal(loaded(x), pruned(x))
    assert torch.equal(compress.mask_of(loaded[0]), compress.mask_of(pruned[0]))
    exported = torch.export.export(loaded, (x,))
    assert "0.xgen_block_rows" in exported.state_dict
    # a weight revived outside its block's kept rows x columns is named
    with torch.no_grad():
        w = pruned[0].weight
        r, c = torch.nonzero(~compress.mask_of(pruned[0]))[0].tolist()
        w[r, c] = 1.0
    with pytest.raises(compress.StructureError, match=rf"layer '0'.*row {r}, column {c}"):
        compress.check_structure(pruned)


def test_rates_allocation_and_bad_arguments():
    model, x = _mlp(), torch.randn(4, 128)
    erk = compress.prune(
        model, (x,), scheme="block", rate=4.0, allocation="erk", block_shape=(8, 16)
    )
    d = compress.describe(erk)
    assert d.layers["0"].density != pytest.approx(d.layers["2"].density)
    # met or exceeded: each layer rounds its kept rows x columns down (8x16 blocks are coarse)
    assert 4.0 <= d.block_weights_before / d.block_weights_after < 4.4
    only = compress.prune(model, (x,), scheme="block", rate={"2": 8.0}, block_shape=(8, 16))
    assert compress.describe(only).layers["2"].density == pytest.approx(1 / 8, rel=0.1)
    assert compress.describe(only).layers["0"].density == 1.0  # unmatched: dense
    with pytest.raises(XGenError, match="pattern scheme"):
        compress.prune(model, (x,), scheme="block", connectivity=0.5)
    with pytest.raises(XGenError, match="scheme="):
        compress.prune(model, (x,), scheme="blocks")


def _compiled(model, x, **kw):
    compiled = xgen_mlir.compile(model, (x,), **kw)
    return compiled, compiled.report.rewrites


def _row_and_column_blocks() -> tuple[int, int]:
    """This host's blocks of the row-and-column kernel (its register tile's rows x 4 vectors:
    the default on AVX-512; AVX2's default keeps whole columns, the column kernel's)."""
    rows, _, lanes = block_tile(host_fact("vector_bits") or 128)
    return rows, 4 * lanes


def test_mlp_compiles_to_block_kernels_with_numerics():
    model, x = _mlp(), torch.randn(32, 128)
    pruned = compress.prune(
        model, (x,), scheme="block", rate=4.0, block_shape=_row_and_column_blocks()
    )
    compiled, rw = _compiled(pruned, x)
    assert rw["xgen-raise-block-linear"]["raised"] == 2
    assert rw["xgen-lower-bcsr-kernels"]["block-sparse kernels"] == 2
    assert rw["xgen-lower-bcsr-kernels"]["of them with their activations"] == 1
    # the first kernel's output, after the ReLU, is only the second's x: handed over packed
    assert rw["xgen-lower-bcsr-kernels"]["of them handing their output packed to the next"] == 1
    assert _rel(compiled(x), pruned(x).detach()) < 1e-5
    # NaN at an input meets pruned weights: NaN, as the dense product gives (through the
    # handoff: the first kernel's rows of flags)
    bad = x.clone()
    bad[3, 5] = float("nan")
    out = np.asarray(compiled(bad))
    assert np.isnan(out[3]).all() and not np.isnan(np.delete(out, 3, 0)).any()


def test_block_pruned_int8_runs_the_kernels_on_the_integers():
    """Dynamic int8 on a block-pruned model: the integer contractions computed in f32 reach
    xgen-raise-block-linear as f32 layers of integer-valued weights, so the block-sparse
    kernels run them. Every product and partial sum is an exact integer in f32 here, so the
    kernels give the very output of the same model's dense f32 contractions, and the integer
    semantics (ONNX's) within one output rounding."""
    from conftest import int8_reference

    model, x = _mlp(), torch.randn(32, 128, generator=torch.Generator().manual_seed(0))
    pruned = compress.prune(model, (x,), scheme="block", rate=4.0)
    common = dict(precision="int8", quantization={"mode": "dynamic"}, precision_check=False)
    opts = {"integer_contractions": "float", "offload": "none"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sparse = xgen_mlir.compile(pruned, (x,), **common, target_options=opts)
    assert not [w for w in caught if "pruned" in str(w.message)], [str(w.message) for w in caught]
    rw = sparse.report.rewrites
    assert rw["xgen-raise-block-linear"]["raised"] == 2, rw
    assert rw["xgen-lower-bcsr-kernels"]["block-sparse kernels"] == 2, rw
    assert "2 sparse kernel(s)" in sparse.report.quantization["pruned_note"]
    dense = xgen_mlir.compile(
        pruned, (x,), **common, target_options={**opts, "block_max_density": "0"}
    )
    assert "xgen-lower-bcsr-kernels" not in dense.report.rewrites
    got = np.asarray(sparse(x.numpy()))
    assert np.array_equal(got, np.asarray(dense(x.numpy())))
    quantized = compress.quantize(pruned, (x,), mode="dynamic")
    want = int8_reference(quantized, {quantized.graph.input[0].name: x.numpy()})
    assert _rel(got, want) < 1e-5


def test_the_widest_block_unless_a_narrower_one_stores_clearly_less():
    """A few more zeros (what int8 rounding adds) must not turn 4 x 32 blocks into 4 x 8
    ones, four times the blocks for the same weights; a model pruned in 4 x 8 blocks still
    compacts to them."""
    from xgen_mlir.passes.block_sparse import best_block, compact_density

    rng = np.random.default_rng(0)

    def pruned(cols: int, keep: int) -> np.ndarray:
        w = np.zeros((64, 128), np.float32)
        for i in range(0, 64, 4):
            for j in range(0, 128, cols):
                r, c = rng.choice(4, 2, replace=False), rng.choice(cols, keep, replace=False)
                w[np.ix_(i + r, j + c)] = rng.standard_normal((2, keep))
        return w

    wide = pruned(32, 16)
    row = int(np.flatnonzero(wide[:4, :32].any(1))[0])  # a kept row of the first block
    wide[row, :8] = 0.0  # rounded to zero: in a 4 x 8 block that row is gone
    assert compact_density(wide, (4, 8)) < compact_density(wide, (4, 32))
    assert best_block(wide, 256)[0] == (4, 32)
    narrow = pruned(8, 4)
    assert best_block(narrow, 256) == ((4, 8), compact_density(narrow, (4, 8)))


def test_pruned_int8_note_counts_merged_siblings_as_sparse():
    """Q, K and V merged into one contraction make one kernel for three pruned layers: no
    warning while no contraction stayed integer (a dense layer in the 16-bit kernel is not one
    that lost its sparsity); a warning when some did."""
    from xgen_mlir.compiler import CompileReport, _pruned_int8_note

    def report(in_f32: int, in_int16: int = 0) -> CompileReport:
        r = CompileReport()
        r.quantization = {
            "pruned_layers": {"q": 1, "k": 1, "v": 1},
            "contractions": {"integer": 3 + in_int16, "float": 0},
            "computed_in_f32": in_f32,
            "in_int16_kernels": in_int16,
        }
        r.rewrites = {"xgen-raise-block-linear": {"raised": 1}}
        return r

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = report(3)
        _pruned_int8_note(r)
        _pruned_int8_note(report(3, in_int16=2))
    assert "1 sparse kernel(s)" in r.quantization["pruned_note"]
    with pytest.warns(FallbackWarning, match="run as dense integer contractions"):
        _pruned_int8_note(report(0))


@pytest.mark.parametrize("tokens", [20, 45, 100])
def test_kernel_edges_tokens_columns_and_chunks(tokens):
    """Tokens that leave a token tile part-filled (and several tiles), inputs that are not
    whole 8 x 8 transpose blocks (300 = 37 x 8 + 4) and span several column chunks, outputs
    that are not whole blocks or workgroups (70): the pack and the kernel against PyTorch."""
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(300, 70), nn.ReLU()).eval()
    x = torch.randn(tokens, 300)
    pruned = compress.prune(model, (x,), scheme="block", rate=4.0)
    compiled, rw = _compiled(pruned, x)
    assert rw["xgen-lower-bcsr-kernels"]["block-sparse kernels"] == 1, rw
    assert _rel(compiled(x), pruned(x).detach()) < 1e-5
    bad = x.clone()
    bad[-1, 299] = float("inf")  # the last token and the last (tail) column
    out = np.asarray(compiled(bad))
    assert np.isnan(out[-1]).any() and not np.isnan(out[:-1]).any()


class _Chain(nn.Module):
    """Three Linear layers in a row; ``tap``: the first layer's ReLU output is returned too."""

    def __init__(self, tap: bool):
        super().__init__()
        self.tap = tap
        self.a, self.b, self.c = nn.Linear(300, 70), nn.Linear(70, 130), nn.Linear(130, 40)

    def forward(self, x):
        h = torch.relu(self.a(x))
        y = self.c(nn.functional.gelu(self.b(h)))
        return (h, y) if self.tap else y


@pytest.mark.parametrize("tap", [False, True], ids=["chain", "tapped"])
def test_kernels_in_a_row_hand_x_over_packed(tap):
    """A kernel whose output (after its fused activation) is only the next kernel's x writes
    it in that kernel's packed layout, with one row of NaN flags per workgroup, and the next
    kernel skips its pack: across widths that are not whole blocks (70, 130) and tokens that
    leave a tile part-filled (45). An output that is also used elsewhere is written plainly."""
    torch.manual_seed(2)
    model = _Chain(tap).eval()
    x = torch.randn(45, 300)
    pruned = compress.prune(
        model, (x,), scheme="block", rate=4.0, block_shape=_row_and_column_blocks()
    )
    compiled, rw = _compiled(pruned, x)
    kernels = rw["xgen-lower-bcsr-kernels"]
    assert kernels["block-sparse kernels"] == 3, rw
    assert kernels.get("of them handing their output packed to the next", 0) == (1 if tap else 2)
    with torch.no_grad():
        want = pruned(x)
    got = compiled(x)
    for g, w in zip(got if tap else [got], want if tap else [want], strict=True):
        assert _rel(g, w) < 1e-5
    bad = x.clone()
    bad[-1, 299] = float("inf")  # the last token's (tail) column, through both handoffs
    out = np.asarray(compiled(bad)[1] if tap else compiled(bad))
    assert np.isnan(out[-1]).all() and not np.isnan(out[:-1]).any()


class _Columns(nn.Module):
    """300 -> 64 -> 70 -> 48: the middle layer's 70 outputs are not whole blocks of 16."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(300, 64), nn.Linear(64, 70), nn.Linear(70, 48)

    def forward(self, x):
        return self.c(nn.functional.gelu(self.b(torch.relu(self.a(x)))))


def test_blocks_keeping_whole_columns_run_the_column_kernel():
    """``row_share=0`` in blocks of 16 rows (two AVX2 vectors, one AVX-512 vector): the raise
    takes the 16-row blocks (they keep all their rows), and the whole-column kernel runs
    them, outputs in the vectors and x read in place; a layer whose outputs are not whole
    blocks (70) keeps the row-and-column kernel. Against PyTorch with 45 tokens (a part-filled
    row tile), and an Inf at a pruned column gives its token NaN."""
    from xgen_mlir.passes.block_sparse import best_block, whole_columns

    torch.manual_seed(3)
    model = _Columns().eval()
    x = torch.randn(45, 300)
    pruned = compress.prune(
        model, (x,), scheme="block", rate=4.0, block_shape=(16, 32), row_share=0.0
    )
    w = pruned.a.weight.detach().numpy()
    assert whole_columns(w, (16, 32)) and whole_columns(w, (8, 32))
    assert not whole_columns(pruned.b.weight.detach().numpy(), (16, 32))  # 70 rows
    assert best_block(w, 256) == ((16, 32), 0.25)
    rows = compress.prune(model, (x,), scheme="block", rate=4.0, block_shape=(4, 32))
    assert not whole_columns(rows.a.weight.detach().numpy(), (16, 32))  # rows pruned too
    compiled, rw = _compiled(pruned, x)
    kernels = rw["xgen-lower-bcsr-kernels"]
    assert kernels["block-sparse kernels"] == 3, rw
    assert kernels["of them on whole columns"] == 2, rw
    with torch.no_grad():
        want = pruned(x)
    assert _rel(compiled(x), want) < 1e-5
    bad = x.clone()
    pruned_everywhere = np.flatnonzero(~(w != 0).any(0))  # inputs no output of `a` reads
    bad[-1, int(pruned_everywhere[-1])] = float("inf")  # only the flags carry it
    out = np.asarray(compiled(bad))
    assert np.isnan(out[-1]).all() and not np.isnan(out[:-1]).any()


def test_kernel_workgroups_share_x_and_balance_the_workers():
    """Block-rows per workgroup: as many as share each chunk of x while IREE's two workers
    stay evenly loaded (they take 8 workgroups at a time once there are 16 or more) and the
    tiles fit 16 KiB; each block's accumulators, inputs and broadcast fit the registers."""
    z = np.zeros(1, np.int32)

    def spec(n, lanes, rows, workers=2):
        return BcsrSpec("k", 128, n, 768, (rows, 4 * lanes), lanes, 4, z, z, z, z, z,
                        registers=32 if lanes == 16 else 16, workers=workers)  # fmt: skip

    assert (spec(768, 8, 4).group, spec(768, 8, 4).workgroups) == (24, 8)
    # 2304 outputs: 24 block-rows each would make 24 workgroups, 16 on one worker and 8 on
    # the other; 12 each make 48, 24 per worker
    assert (spec(2304, 8, 4).group, spec(2304, 8, 4).workgroups) == (12, 48)
    assert spec(768, 16, 8).group == 8  # 8 x (8 rows x 4 vectors of 64 bytes) = 16 KiB
    assert spec(64, 8, 4).workgroups == 2  # never one workgroup for two workers
    assert spec(64, 8, 4, workers=1).workgroups == 1
    for lanes, rows in ((8, 4), (16, 8)):
        s = spec(768, lanes, rows)
        assert s.m_tile == 4 * lanes and s.kc * 4 * s.m_tile <= 16 * 1024
        for r in range(1, rows + 1):
            d = s.pass_vectors(r)
            assert s.nm % d == 0 and r * d + d + 2 <= s.registers


def test_dense_layer_stays_dense_with_reason():
    model, x = _mlp(), torch.randn(32, 128)
    _, rw = _compiled(model, x)
    reasons = rw["xgen-raise-block-linear"]
    assert "raised" not in reasons
    assert any(k.startswith("stays dense: dense enough") for k in reasons), reasons


def test_tiny_bert_block_pruned_numerics():
    pytest.importorskip("transformers")
    from xgen_mlir.models.transformers_zoo import bert_tiny

    model, inputs = bert_tiny(seq=32)
    pruned = compress.prune(model, inputs, scheme="block", rate=4.0, block_shape=(8, 16))
    compiled, rw = _compiled(pruned, *inputs)
    # per layer: Q, K, V (too thin to merge), attention output, intermediate, output
    assert rw["xgen-lower-bcsr-kernels"]["block-sparse kernels"] == 12, rw
    assert _rel(compiled(*inputs), pruned(*inputs).detach()) < 1e-4


def test_pointwise_conv_net_numerics():
    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Conv2d(16, 64, 1), nn.ReLU(), nn.Conv2d(64, 128, 1), nn.ReLU(), nn.Conv2d(128, 32, 1)
    ).eval()
    x = torch.randn(1, 16, 8, 8)
    pruned = compress.prune(net, (x,), scheme="block", rate=4.0, block_shape=(8, 16))
    compiled, rw = _compiled(pruned, x)
    assert rw["xgen-lower-bcsr-kernels"]["block-sparse kernels"] == 3
    assert _rel(compiled(x), pruned(x).detach()) < 1e-5


def test_3d_cnn_block_pruned_numerics():
    model, x = small_3d_cnn(), torch.randn(*INPUT_SHAPE)
    pruned = compress.prune(model, (x,), scheme="block", rate=4.0, block_shape=(8, 16))
    kinds = {ly.kind for ly in compress.describe(pruned).layers.values()}
    assert {"conv3d", "linear"} <= kinds
    compiled, rw = _compiled(pruned, x)
    assert rw["xgen-lower-bcsr-kernels"]["block-sparse kernels"] == 2  # the 1x1x1 convs
    assert any("kernel larger than 1" in k for k in rw["xgen-raise-block-linear"])
    assert _rel(compiled(x), pruned(x).detach()) < 1e-4


def test_erf_fit_is_f32_accurate():
    num, den = erf_coefficients()
    x = np.linspace(-ERF_CLAMP, ERF_CLAMP, 20001).astype(np.float32)
    t = x * x
    approx = x * np.polyval(np.float32(num[::-1]), t) / np.polyval(np.float32(den[::-1]), t)
    exact = np.array([math.erf(float(v)) for v in x])
    assert np.abs(approx - exact).max() < 1e-6


class _NewGelu(nn.Module):
    """GPT-2's GELU as transformers writes it (separate ops reading x three times)."""

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3.0))))


@pytest.mark.parametrize(
    "act", [nn.GELU(), nn.GELU(approximate="tanh"), _NewGelu()], ids=["erf", "tanh", "gpt2"]
)
def test_gelu_fused_into_the_kernel(act):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), act, nn.Linear(128, 32)).eval()
    x = torch.randn(32, 64) * 10  # GELU's inputs reach erf's clamp (|x| > 4 sqrt 2)
    pruned = compress.prune(model, (x,), scheme="block", rate=4.0, block_shape=(8, 16))
    compiled, rw = _compiled(pruned, x)
    assert rw["xgen-lower-bcsr-kernels"]["block-sparse kernels"] == 2
    assert rw["xgen-lower-bcsr-kernels"]["of them with their activations"] == 1, rw
    with torch.no_grad():
        assert _rel(compiled(x), pruned(x)) < 1e-5
        assert float(pruned[0](x).abs().max()) > 4 * math.sqrt(2)
    bad = x.clone()
    bad[2, 7] = float("nan")
    out = np.asarray(compiled(bad))
    assert np.isnan(out[2]).all() and not np.isnan(np.delete(out, 2, 0)).any()


@pytest.mark.parametrize("target", ["x86_64", "vulkan"])
def test_targets_without_kernels_compile_dense_and_warn_once(target):
    """A block-pruned model on a target without block-sparse kernels: the layers are found,
    compiled dense (same numbers as the pruned PyTorch model) and one warning says so."""
    if target == "vulkan":
        from targets_util import need_vulkan

        need_vulkan()
    model, x = _mlp(), torch.randn(32, 128)
    pruned = compress.prune(model, (x,), scheme="block", rate=4.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = xgen_mlir.compile(pruned, (x,), target=target)
    said = [w for w in caught if "block-pruned layer" in str(w.message)]
    assert len(said) == 1, [str(w.message) for w in caught]
    assert issubclass(said[0].category, FallbackWarning)
    assert "2 block-pruned layer(s) run dense" in str(said[0].message)
    assert compiled.report.rewrites["xgen-lower-block-to-linalg"] == {"lowered dense": 2}
    assert _rel(compiled(x), pruned(x).detach()) < 1e-5
    # the dense model: nothing found, nothing said
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        xgen_mlir.compile(model, (x,), target=target)
    assert not [w for w in caught if "block-pruned" in str(w.message)]


def test_gpt2_conv1d_as_linear_block_pruned_with_gelu_fused():
    """GPT-2's Conv1D projections become the same Linear layers (same outputs), are block
    pruned in the decoder blocks only, and compile to kernels with the tanh GELU fused."""
    pytest.importorskip("transformers")
    from xgen_mlir.compress.blocks import conv1d_to_linear
    from xgen_mlir.models.transformers_zoo import gpt2_tiny

    model, inputs = gpt2_tiny(seq=32)
    linear = conv1d_to_linear(model)
    with torch.no_grad():
        assert torch.allclose(linear(*inputs), model(*inputs), atol=1e-5)
    pruned = compress.prune(
        linear,
        inputs,
        scheme="block",
        rate=4.0,
        block_shape=(8, 16),
        layers=lambda name, m: isinstance(m, nn.Linear) and ".h." in name,
    )
    assert len(compress.describe(pruned).layers) == 8  # 2 blocks x c_attn, c_proj, c_fc, c_proj
    compiled, rw = _compiled(pruned, *inputs)
    assert rw["xgen-lower-bcsr-kernels"]["block-sparse kernels"] == 8, rw
    assert rw["xgen-lower-bcsr-kernels"]["of them with their activations"] == 2, rw
    assert _rel(compiled(*inputs), pruned(*inputs).detach()) < 1e-4


def _outlier_layer(kind: str) -> tuple[nn.Module, int, int, torch.Tensor, torch.Tensor]:
    """A layer whose input channel 5 is 20x louder than the others and whose weights on it are
    10x smaller: by weight energy its columns are the weakest, by output energy (0.1 x 20 = 2x
    a typical column's) among the strongest. Returns the layer, its GEMM columns per channel,
    the channel count, a calibration input and a held-out input."""
    torch.manual_seed(0)
    if kind == "linear":
        layer, kvol, c = nn.Linear(64, 16), 1, 64
        shape: tuple[int, ...] = (256, 64)
    else:
        k = 1 if kind == "conv1x1" else 3
        c = 8 if k == 3 else 64
        layer, kvol, shape = nn.Conv2d(c, 16, k, padding=k // 2), k * k, (4, c, 6, 6)
    with torch.no_grad():
        layer.weight[:, 5] *= 0.1
    loud = torch.ones(c)
    loud[5] = 20.0
    view = (1, c) if kind == "linear" else (1, c, 1, 1)
    x, held = (torch.randn(*shape) * loud.reshape(view) for _ in range(2))
    return layer.eval(), kvol, c, x, held


@pytest.mark.parametrize("kind", ["linear", "conv1x1", "conv3x3"])
def test_activation_criterion_keeps_the_loud_input(kind):
    layer, kvol, c, x, held = _outlier_layer(kind)
    block = (8, c * kvol)  # one block column: 6 of 8 rows, 2/3 of the columns kept at 2x
    got = {}
    for criterion in ("activation", "weight"):
        got[criterion] = p = compress.prune(
            layer, (x,), scheme="block", rate=2.0, block_shape=block, criterion=criterion
        )
        compress.check_structure(p)
    loud = slice(5 * kvol, 6 * kvol)  # channel 5's GEMM columns
    act_cols = got["activation"].xgen_block_cols[0, 0]
    weight_cols = got["weight"].xgen_block_cols[0, 0]
    assert bool(act_cols[loud].all()) and not bool(weight_cols[loud].any())
    assert torch.equal(act_cols.sum(), weight_cols.sum())  # same structure, other columns
    with torch.no_grad():
        want = layer(held)
        err = {k: float((p(held) - want).norm() / want.norm()) for k, p in got.items()}
    assert err["activation"] < err["weight"], err


def test_activation_criterion_is_the_default_and_calibration_counts():
    layer, _, _, x, _ = _outlier_layer("linear")
    quiet = torch.randn(8, 64)  # example input without the outlier feature
    default = compress.prune(layer, (x,), scheme="block", rate=2.0, block_shape=(8, 64))
    assert bool(default.xgen_block_cols[0, 0, 5])
    plain = compress.prune(
        layer, (quiet,), scheme="block", rate=2.0, block_shape=(8, 64), criterion="activation"
    )
    assert not bool(plain.xgen_block_cols[0, 0, 5])
    # calibration samples: a tensor, a tuple, a dict of keyword inputs
    for sample in (x, (x,), {"input": x}):
        calibrated = compress.prune(
            layer, (quiet,), scheme="block", rate=2.0, block_shape=(8, 64), calibration=[sample]
        )
        assert bool(calibrated.xgen_block_cols[0, 0, 5])


def test_criterion_errors():
    model, x = _mlp(), torch.randn(4, 128)
    with pytest.raises(XGenError, match=r"criterion='energy'.*'activation'.*'weight'"):
        compress.prune(model, (x,), scheme="block", criterion="energy")
    with pytest.raises(XGenError, match="calibration= is used by criterion='activation' and"):
        compress.prune(
            model, (x,), scheme="block", criterion="weight", calibration=[(x,)], refit=False
        )
    with pytest.raises(XGenError, match="belong to scheme='block'"):
        compress.prune(model, (x,), criterion="weight")

    class Branch(nn.Module):  # "unused" never runs in forward
        def __init__(self) -> None:
            super().__init__()
            self.used, self.unused = nn.Linear(128, 64), nn.Linear(128, 64)

        def forward(self, x):
            return self.used(x)

    with pytest.raises(XGenError, match=r"1 layer\(s\) to prune never ran.*\['unused'\]"):
        compress.prune(Branch(), (x,), scheme="block", block_shape=(8, 16))
    by_weight = compress.prune(
        Branch(), (x,), scheme="block", block_shape=(8, 16), criterion="weight"
    )
    assert "unused" in compress.describe(by_weight).layers
    bad = x.clone()
    bad[0, 0] = float("inf")
    with pytest.raises(XGenError, match=r"layer '0' had NaN or Inf"):
        compress.prune(model, (bad,), scheme="block", block_shape=(8, 16))


def _dense_text(v: np.ndarray) -> str:
    dtype = "f32" if v.dtype.kind == "f" else "i32"
    body = ", ".join(repr(float(x)) if dtype == "f32" else str(int(x)) for x in v.ravel())
    return f"dense<[{body}]> : tensor<{v.size}x{dtype}>"


def _is_valid_by_blocks(tab, n: int, k: int, br: int, bc: int) -> bool:
    """The verifier's per-block rules, block by block (the reference for its vector form)."""
    bo, ro, co = tab.block_offsets, tab.row_offsets, tab.col_offsets
    for i in range(len(bo) - 1):
        last = -1
        for b in range(bo[i], bo[i + 1]):
            rows, cols = tab.kept_rows[ro[b] : ro[b + 1]], tab.kept_cols[co[b] : co[b + 1]]
            if rows.min() < i * br or rows.max() >= min((i + 1) * br, n):
                return False
            if cols.min() < 0 or cols.max() >= k or cols[-1] // bc != cols[0] // bc:
                return False
            if np.any(np.diff(rows) <= 0) or np.any(np.diff(cols) <= 0) or cols[0] // bc <= last:
                return False
            last = cols[0] // bc
    return True


def test_compact_tables_round_trip_and_the_verifier_checks_every_block():
    """The compact tables of random weights (empty blocks, rows and columns, edge tiles) read
    back as the same dense weights through the IR; tables broken at one entry are refused
    exactly where the block-by-block rules refuse them."""
    from xgen_mlir._mlir import ir
    from xgen_mlir.dialects.block_sparse import BcsrTables, _blocks_valid, bcsr_to_dense
    from xgen_mlir.dialects.loader import load_xgen_dialects
    from xgen_mlir.irutil import ConstantReader
    from xgen_mlir.passes.block_sparse import bcsr_tables

    rng = np.random.default_rng(0)
    refused = 0
    for trial in range(200):
        n, k = (int(v) for v in rng.integers(1, 24, 2))
        br, bc = (int(v) for v in rng.integers(1, 6, 2))
        w = rng.standard_normal((n, k)).astype(np.float32)
        w[rng.random((n, k)) < rng.random()] = 0
        w[0] = 0  # an empty row; and one nonzero at least, so that a block is listed
        w[-1, -1] = 1.0
        tables, values = bcsr_tables(w, (br, bc))
        if trial < 20:  # through the IR: constants read back, the dense weights rebuilt
            consts = "\n".join(
                f"  %t{i} = arith.constant {_dense_text(t)}" for i, t in enumerate(tables)
            )
            types = ", ".join(f"tensor<{t.size}xi32>" for t in tables)
            text = f"""func.func @f(%x: tensor<2x{k}xf32>) -> tensor<2x{n}xf32> {{
  %v = arith.constant {_dense_text(values)}
  %b = arith.constant dense<0.0> : tensor<{n}xf32>
{consts}
  %y = "xgen_sparse.bcsr_linear"(%x, %v, %b, %t0, %t1, %t2, %t3, %t4)
    {{block = [{br}, {bc}], weight_shape = [{n}, {k}]}}
    : (tensor<2x{k}xf32>, tensor<{values.size}xf32>, tensor<{n}xf32>, {types})
    -> tensor<2x{n}xf32>
  return %y : tensor<2x{n}xf32>
}}"""
            with ir.Context() as ctx:
                load_xgen_dialects(ctx)
                module = ir.Module.parse(text)
                op = next(
                    o
                    for o in module.body.operations[0].regions[0].blocks[0].operations
                    if o.name == "xgen_sparse.bcsr_linear"
                )
                assert np.array_equal(bcsr_to_dense(op, ConstantReader(module.operation)), w)
        broken = [t.astype(np.int64) for t in tables]
        which = int(rng.integers(3, 5))  # a kept row or a kept column moved
        broken[which][int(rng.integers(0, broken[which].size))] += int(rng.integers(-3, 4))
        tab = BcsrTables(*broken)
        want = _is_valid_by_blocks(tab, n, k, br, bc)
        assert _blocks_valid(tab, n, k, br, bc) == want, (trial, n, k, br, bc)
        assert _blocks_valid(BcsrTables(*[t.astype(np.int64) for t in tables]), n, k, br, bc)
        refused += not want
    assert refused > 50  # the broken cases were exercised


def test_block_structure_is_none_for_ops_the_raise_does_not_take():
    """The tuner asks every op it measures for its block structure: a batched matmul with
    constant weights (an ONNX MatMul of a 3-D input, as the PP-OCRv4 recognizer has) or a
    3x3 conv is not a layer the raise takes, and has none (it used to be read as a matmul
    and crash the tune on its 3-D weights); a 2-D Linear layer has one."""
    from xgen_mlir._mlir import ir
    from xgen_mlir.passes.block_sparse import block_structure
    from xgen_mlir.passes.consteval import ConstEval

    text = """
func.func @f(%x: tensor<1x40x120xf32>, %m: tensor<40x120xf32>)
    -> (tensor<1x40x360xf32>, tensor<40x360xf32>) {
  %w = arith.constant dense<0.5> : tensor<1x120x360xf32>
  %w2 = arith.constant dense<0.5> : tensor<120x360xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x40x360xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x40x360xf32>) -> tensor<1x40x360xf32>
  %y = linalg.batch_matmul ins(%x, %w : tensor<1x40x120xf32>, tensor<1x120x360xf32>)
    outs(%f : tensor<1x40x360xf32>) -> tensor<1x40x360xf32>
  %e2 = tensor.empty() : tensor<40x360xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<40x360xf32>) -> tensor<40x360xf32>
  %y2 = linalg.matmul ins(%m, %w2 : tensor<40x120xf32>, tensor<120x360xf32>)
    outs(%f2 : tensor<40x360xf32>) -> tensor<40x360xf32>
  return %y, %y2 : tensor<1x40x360xf32>, tensor<40x360xf32>
}"""
    with ir.Context():
        module = ir.Module.parse(text)
        ops = module.body.operations[0].regions[0].blocks[0].operations
        found = {o.name: o for o in ops if o.name in ("linalg.batch_matmul", "linalg.matmul")}
        ev = ConstEval(module.operation)
        assert block_structure(found["linalg.batch_matmul"], ev, 512) is None
        assert block_structure(found["linalg.matmul"], ev, 512) is not None
