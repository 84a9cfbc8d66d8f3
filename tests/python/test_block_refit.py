"""Least-squares refit of block-pruned layers (compress/refit.py): the unrolled conv inputs,
the refit's effect on held-out outputs, its defaults and its refusals."""

import warnings

import pytest
import torch
from torch import nn

from xgen_mlir import compress
from xgen_mlir.compress.blocks import gemm_view
from xgen_mlir.compress.refit import execution_order, im2col, refit_groups
from xgen_mlir.errors import XGenError


@pytest.mark.parametrize(
    "conv,shape",
    [
        (nn.Conv2d(3, 5, 3, stride=2, padding=1, dilation=1), (2, 3, 9, 11)),
        (nn.Conv2d(3, 5, (3, 2), stride=(1, 2), padding=(2, 0), dilation=2), (1, 3, 10, 9)),
        (nn.Conv1d(4, 6, 5, stride=3, padding=2), (2, 4, 17)),
        (nn.Conv3d(2, 4, 3, padding=1), (1, 2, 5, 6, 4)),
        (nn.Conv2d(8, 4, 1), (2, 8, 5, 5)),
    ],
)
def test_im2col_is_the_gemm_view_of_the_conv(conv, shape):
    x = torch.randn(*shape)
    with torch.no_grad():
        want = conv(x) - conv.bias.reshape(1, -1, *([1] * (x.dim() - 2)))
        cols = im2col(conv, x)
        got = cols @ gemm_view(conv.weight).T  # [positions, filters]
    want = want.movedim(1, -1).reshape(-1, want.shape[1])
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_im2col_refuses_other_padding_modes():
    assert (
        im2col(nn.Conv2d(3, 4, 3, padding=1, padding_mode="reflect"), torch.randn(1, 3, 5, 5))
        is None
    )


def _correlated(n: int, k: int, seed: int) -> torch.Tensor:
    """Inputs with correlated features and a nonzero mean, what real activations look like:
    a removed column is then partly predictable from the kept ones."""
    g = torch.Generator().manual_seed(seed)
    mix = torch.randn(k, k, generator=g) / k**0.5 + torch.eye(k)
    return torch.randn(n, k, generator=torch.Generator().manual_seed(seed + 1)) @ mix + 0.5


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64)).eval()


def _err(model: nn.Module, dense: nn.Module, x: torch.Tensor) -> float:
    with torch.no_grad():
        want = dense(x)
        return float((model(x) - want).norm() / want.norm())


def test_refit_lowers_the_held_out_error_and_keeps_the_structure():
    dense = _mlp()
    example, held = _correlated(16, 64, 1), _correlated(256, 64, 7)
    calib = [(_correlated(64, 64, s),) for s in range(3, 6)]  # 208 positions > 129 columns
    kw = dict(scheme="block", rate=4.0, block_shape=(8, 16))
    ranked = compress.prune(dense, (example,), calibration=calib, refit=False, **kw)
    fitted = compress.prune(dense, (example,), calibration=calib, **kw)  # refit: the default
    for a, b in zip(ranked.modules(), fitted.modules(), strict=True):
        if isinstance(a, nn.Linear):  # same structure, other values
            assert torch.equal(a.xgen_block_rows, b.xgen_block_rows)
            assert torch.equal(a.xgen_block_cols, b.xgen_block_cols)
            assert not torch.equal(a.weight, b.weight)
    compress.check_structure(fitted)
    before, after = _err(ranked, dense, held), _err(fitted, dense, held)
    assert after < 0.85 * before, (before, after)
    # the dense model was not touched, and comes back in the mode it was in
    assert not any(isinstance(b, torch.Tensor) and "xgen" in n for n, b in dense.named_buffers())


def test_bias_absorbs_a_removed_row_mean():
    # one output row removed from its block: with a bias, the refit gives it the mean the
    # removed weights used to add (its output becomes the dense output's mean on the inputs)
    layer = nn.Linear(16, 8).eval()
    x = torch.randn(400, 16) + 2.0
    pruned = compress.prune(
        layer,
        (x,),
        scheme="block",
        rate=1.5,
        block_shape=(8, 16),
        row_share=1.0,
        calibration=[(x,)],
    )
    gone = ~pruned.xgen_block_rows[0, 0]
    assert bool(gone.any())
    with torch.no_grad():
        want = layer(x)[:, gone].mean(0)
        got = pruned(x)[:, gone]
    torch.testing.assert_close(got, want.expand_as(got), rtol=1e-4, atol=1e-4)
    assert bool((pruned.weight[gone] == 0).all())


def test_refit_repairs_the_error_of_earlier_layers():
    # layer 2 is fitted to the dense model's output from the pruned model's inputs: refit
    # only layer 2 (layer 1 pruned and left as ranked) still beats not refitting at all
    dense = _mlp()
    calib = [(_correlated(64, 64, s),) for s in range(10, 14)]
    held = _correlated(256, 64, 99)
    kw = dict(scheme="block", rate=4.0, block_shape=(8, 16))
    no = compress.prune(dense, (calib[0][0],), calibration=calib, refit=False, **kw)
    yes = compress.prune(dense, (calib[0][0],), calibration=calib, **kw)
    assert _err(yes, dense, held) < _err(no, dense, held)


def test_too_few_positions_keep_the_ranked_weights_with_a_warning():
    dense = _mlp()
    x = torch.randn(8, 64)  # 8 positions, 65 / 129 columns
    ranked = compress.prune(dense, (x,), scheme="block", rate=2.0, block_shape=(8, 16))
    with pytest.warns(UserWarning, match=r"2 of 2 layer\(s\) keep their ranked.*'?0'?: 8 calib"):
        fitted = compress.prune(
            dense, (x,), scheme="block", rate=2.0, block_shape=(8, 16), refit=True
        )
    for a, b in zip(ranked.parameters(), fitted.parameters(), strict=True):
        assert torch.equal(a, b)


def test_no_refit_without_calibration_and_no_warning():
    dense = _mlp()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compress.prune(dense, (torch.randn(8, 64),), scheme="block", rate=2.0, block_shape=(8, 16))


def test_refit_arguments():
    dense, x = _mlp(), torch.randn(8, 64)
    with pytest.raises(XGenError, match="belong to scheme='block'"):
        compress.prune(dense, (x,), refit=True)
    with pytest.raises(XGenError, match="damp=-1"):
        compress.prune_blocks(dense, (x,), rate=2.0, block_shape=(8, 16), damp=-1)


def test_execution_order_follows_the_forward_not_the_module_order():
    class Backwards(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.late, self.early = nn.Linear(8, 8), nn.Linear(8, 8)
            self.never = nn.Linear(8, 8)

        def forward(self, x):
            return self.late(self.early(x))

    m = Backwards()
    layers = dict(m.named_children())
    assert execution_order(m, layers, (torch.randn(2, 8),)) == ["early", "late", "never"]


def test_conv_net_refit_with_numerics_against_the_pruned_model():
    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 1), nn.ReLU()
    ).eval()
    calib = [(torch.randn(2, 16, 12, 12) + 0.3,) for _ in range(4)]  # 1152 positions > 145
    held = torch.randn(2, 16, 12, 12) + 0.3
    kw = dict(scheme="block", rate=2.0, block_shape=(8, 16))
    ranked = compress.prune(net, calib[0], calibration=calib, refit=False, **kw)
    fitted = compress.prune(net, calib[0], calibration=calib, **kw)
    compress.check_structure(fitted)
    assert _err(fitted, net, held) < _err(ranked, net, held)


def test_layers_reading_one_input_share_a_pass_and_reused_layers_do_not_stop_it():
    class Attn(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k, self.v = (nn.Linear(8, 8) for _ in range(3))
            self.o, self.twice = nn.Linear(8, 8), nn.Linear(8, 8)

        def forward(self, x):
            y = self.o(self.q(x) * self.k(x) + self.v(x))
            return self.twice(self.twice(y))

    m = Attn()
    groups = refit_groups(m, dict(m.named_children()), (torch.randn(2, 8),))
    assert groups == [(["q", "k", "v"], True), (["o"], True), (["twice"], False)]


def test_reconstruction_criterion_drops_a_column_the_others_predict():
    # inputs 0 and 1 are the same loud feature: the activation criterion keeps both (each is
    # loud); the reconstruction criterion sees that either one predicts the other, keeps
    # one and spends the freed column on a quiet input the others cannot replace
    torch.manual_seed(0)
    layer = nn.Linear(16, 8).eval()

    def inputs(n: int, seed: int) -> torch.Tensor:
        x = torch.randn(n, 16, generator=torch.Generator().manual_seed(seed))
        x[:, 0] *= 5.0
        x[:, 1] = x[:, 0]
        return x

    calib, held = [(inputs(512, s),) for s in range(3)], inputs(1024, 50)
    kw = dict(scheme="block", rate=2.0, block_shape=(8, 16), row_share=0.0, calibration=calib)
    act = compress.prune(layer, calib[0], criterion="activation", **kw)
    rec = compress.prune(layer, calib[0], criterion="reconstruction", **kw)
    compress.check_structure(rec)
    assert bool(act.xgen_block_cols[0, 0, :2].all())
    assert int(rec.xgen_block_cols[0, 0, :2].sum()) == 1
    assert _err(rec, layer, held) < _err(act, layer, held)


def test_reconstruction_criterion_needs_the_refit():
    with pytest.raises(XGenError, match="criterion='reconstruction'.*refit=True"):
        compress.prune(
            _mlp(), (torch.randn(8, 64),), scheme="block", criterion="reconstruction", refit=False
        )
