"""The generated attention kernel (codegen/attention.py, xgen-attention-kernels): attention
compiled through it matches PyTorch, with a causal mask, a padding mask read at run time, key
and query counts that fill no vector or register tile, a fully masked row (NaN, as PyTorch
gives) and NaN inputs; the pass takes every layer of a real model, and the option turns it
off."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import torch
from conftest import check_close
from torch import nn

import xgen_mlir
from xgen_mlir.models import transformers_zoo


def _kernels(m) -> int:
    return m.report.rewrites.get("xgen-attention-kernels", {}).get("attention kernels", 0)


class _SelfAttention(nn.Module):
    """Multi-head self-attention over a fused QKV projection, a mask added to the scores
    (broadcast over heads, given at run time) and the output projection."""

    def __init__(self, hidden: int = 48, heads: int = 3) -> None:
        super().__init__()
        self.heads, self.d = heads, hidden // heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, t = (1, *x.shape[:1]) if x.dim() == 2 else x.shape[:2]
        qkv = self.qkv(x).view(b, t, 3, self.heads, self.d).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        s = q @ k.transpose(-1, -2) / self.d**0.5 + mask
        o = torch.softmax(s, dim=-1) @ v
        o = o.transpose(1, 2).reshape(b, t, self.heads * self.d)
        return self.out(o if x.dim() == 3 else o[0])


def test_self_attention_matches_pytorch_with_a_runtime_mask_and_nan():
    torch.manual_seed(0)
    model = _SelfAttention().eval()
    t = 13  # keys fill no 8- or 16-float vector, queries no 6- or 12-row tile
    x = torch.randn(t, 48)
    mask = torch.zeros(1, 1, t, t)
    m = xgen_mlir.compile(model, (x, mask))
    assert _kernels(m) == 1, m.report.rewrites
    with torch.no_grad():
        want = model(x, mask).numpy()
    check_close(np.asarray(m(x, mask)), want, atol=1e-5, rtol=1e-4, what="attention")
    # a padding mask, read at run time: the last 4 keys masked for every query, and query 5
    # sees no key at all (PyTorch: NaN for that row)
    mask2 = torch.zeros(1, 1, t, t)
    mask2[..., -4:] = float("-inf")
    mask2[..., 5, :] = float("-inf")
    x2 = torch.randn(t, 48)
    with torch.no_grad():
        want2 = model(x2, mask2).numpy()
    got2 = np.asarray(m(x2, mask2))
    np.testing.assert_array_equal(np.isnan(got2), np.isnan(want2))
    assert np.isnan(want2[5]).all()
    ok = ~np.isnan(want2)
    check_close(got2[ok], want2[ok], atol=1e-5, rtol=1e-4, what="padding mask")
    x3 = x.clone()
    x3[2, 7] = float("nan")  # token 2's K and V: every query's row becomes NaN
    with torch.no_grad():
        want3 = model(x3, mask).numpy()
    np.testing.assert_array_equal(np.isnan(np.asarray(m(x3, mask))), np.isnan(want3))


def _matches_pytorch(model: nn.Module, x: torch.Tensor, mask: torch.Tensor, what: str) -> None:
    """Compiled with the defaults, the attention runs in one kernel and matches PyTorch."""
    m = xgen_mlir.compile(model, (x, mask))
    assert _kernels(m) == 1, m.report.rewrites
    with torch.no_grad():
        want = model(x, mask).numpy()
    check_close(np.asarray(m(x, mask)), want, atol=1e-5, rtol=1e-4, what=what)


def test_heads_of_features_that_fill_no_vector():
    """15 features per head (PP-OCRv4's recognizer has such heads): V is packed in
    zero-padded vectors and the output's rows are stored in part."""
    torch.manual_seed(3)
    model = _SelfAttention(hidden=45, heads=3).eval()
    x, mask = torch.randn(20, 45), torch.zeros(1, 1, 20, 20)
    _matches_pytorch(model, x, mask, "15 features")


def test_a_batch_of_sequences_with_their_own_masks():
    """Batch 2: the batch matmuls' heads are (item, head) pairs, and an item's rows are not
    ``heads`` heads further on, so the kernel splits the index; each item has its mask."""
    torch.manual_seed(1)
    model = _SelfAttention().eval()
    x = torch.randn(2, 10, 48)
    mask = torch.zeros(2, 1, 10, 10)
    mask[1, ..., 7:] = float("-inf")  # the second sequence is 7 tokens long
    _matches_pytorch(model, x, mask, "batch of 2")


def test_a_long_sequence_packs_k_into_scratch():
    """300 tokens x 64 features: the head's K^T (76 KiB) passes the stack budget, so the kernel
    packs it into scratch after its result, and V is read in place."""
    torch.manual_seed(2)
    model = _SelfAttention(hidden=128, heads=2).eval()
    x = torch.randn(300, 128)
    mask = torch.zeros(1, 1, 300, 300)
    mask[..., 250:] = float("-inf")
    _matches_pytorch(model, x, mask, "300 tokens")


@pytest.mark.parametrize("option", ["true", "false"])
def test_gpt2_layers_through_the_kernel_match_pytorch(option):
    model, inputs = transformers_zoo.gpt2_tiny(seq=29)  # causal mask; 29 tokens
    m = xgen_mlir.compile(model, inputs, target_options={"attention_kernels": option})
    assert _kernels(m) == (2 if option == "true" else 0), m.report.rewrites
    with torch.no_grad():
        want = model(*inputs).numpy()
    got = np.asarray(m(*inputs))
    check_close(got, want, atol=2e-5 * np.abs(want).max(), rtol=1e-4, what="gpt2 logits")


def test_bert_layers_through_the_kernel_match_pytorch():
    model, inputs = transformers_zoo.bert_tiny(seq=16)  # 16 features per head
    m = xgen_mlir.compile(model, inputs)
    assert _kernels(m) == 2, m.report.rewrites
    with torch.no_grad():
        want = model(*inputs).numpy()
    check_close(np.asarray(m(*inputs)), want, atol=2e-5, rtol=1e-4, what="bert hidden")


class _Core(nn.Module):
    """The attention core alone (Q, K, V and the mask are inputs): no other product whose
    rounding could show."""

    def forward(self, q, k, v, mask):
        s = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5 + mask
        return torch.softmax(s, dim=-1) @ v


def test_bf16_attention_rounds_its_products():
    """precision=bf16 on a CPU with bf16 dot products: the kernel's Q K^T and P V multiply
    bf16 pairs (15 features: a zero half in each Q/K row's last pair; 13 keys: a zero key in
    V's last pair), so its error against PyTorch's f32 shows bf16 rounding, and no more; a
    fully masked row is NaN and a NaN in K spreads, as in f32. Elsewhere compile() falls back
    to fp32 (the f32 kernel)."""
    from xgen_mlir.errors import FallbackWarning
    from xgen_mlir.target import NATIVE_BF16_FLAGS, has_any

    torch.manual_seed(4)
    q, k, v = (torch.randn(1, 3, 13, 15) for _ in range(3))
    mask = torch.zeros(1, 1, 13, 13)
    mask[..., -3:] = float("-inf")
    mask[..., 6, :] = float("-inf")
    model = _Core().eval()
    with torch.no_grad():
        want = model(q, k, v, mask).numpy()
    bf16 = has_any(NATIVE_BF16_FLAGS)
    fallback = pytest.warns(FallbackWarning, match="precision=fp32")
    with contextlib.nullcontext() if bf16 else fallback:
        m = xgen_mlir.compile(model, (q, k, v, mask), precision="bf16")
    counts = m.report.rewrites.get("xgen-attention-kernels", {})
    assert counts.get("attention kernels") == 1, m.report.rewrites
    assert counts.get("with bf16 products", 0) == (1 if bf16 else 0), counts
    got = np.asarray(m(q, k, v, mask))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    err = float(np.abs(got[ok] - want[ok]).max() / np.abs(want[ok]).max())
    if bf16:
        assert 1e-4 < err < 2e-2, f"bf16 attention: relative error {err:.2e}"
    else:
        assert err < 1e-5, f"f32 attention: relative error {err:.2e}"
    k2 = k.clone()
    k2[0, 1, 4, 9] = float("nan")  # head 1's key 4: each of its unmasked rows becomes NaN
    with torch.no_grad():
        want2 = model(q, k2, v, mask).numpy()
    np.testing.assert_array_equal(np.isnan(np.asarray(m(q, k2, v, mask))), np.isnan(want2))


@pytest.mark.parametrize("tq, tk, d", [(13, 13, 15), (40, 37, 64), (128, 128, 32)])
def test_amx_attention_agrees_with_the_dot_product_kernel(tq, tk, d):
    """On a CPU with bf16 matrix tiles (AMX-BF16) a bf16 compile multiplies in the tiles, 16
    query rows at a time (13 and 40 rows: a partial tile; 15 features and 37 keys: pairs
    padded to the tiles' 16). Its operands are the vdpbf16ps kernel's, so the two agree but
    for the order of f32 sums, and a NaN spreads as in f32. (bf16_tiles=0 compiles the
    vdpbf16ps kernel on the same host.)"""
    from xgen_mlir.target import BF16_TILE_FLAGS, has_any

    if not has_any(BF16_TILE_FLAGS):
        pytest.skip("this CPU has no AMX-BF16 tiles (the AMX kernel compiles for the host)")
    torch.manual_seed(5)
    q = torch.randn(1, 2, tq, d)
    k, v = torch.randn(1, 2, tk, d), torch.randn(1, 2, tk, d)
    mask = torch.zeros(1, 1, tq, tk)
    mask[..., -3:] = float("-inf")
    model = _Core().eval()
    with torch.no_grad():
        want = model(q, k, v, mask).numpy()
    got = {}
    for tiles in ("1", "0"):
        m = xgen_mlir.compile(
            model, (q, k, v, mask), precision="bf16", target_options={"bf16_tiles": tiles}
        )
        counts = m.report.rewrites.get("xgen-attention-kernels", {})
        assert counts.get("with bf16 products") == 1, counts
        assert counts.get("in AMX tiles", 0) == int(tiles), counts
        got[tiles] = np.array(m(q, k, v, mask))  # (a copy: the next call reuses the buffer)
        if tiles == "1":
            k2 = k.clone()
            k2[0, 1, 4, 9] = float("nan")
            with torch.no_grad():
                want2 = model(q, k2, v, mask).numpy()
            np.testing.assert_array_equal(np.isnan(np.asarray(m(q, k2, v, mask))), np.isnan(want2))
    scale = np.abs(want).max()
    assert np.abs(got["1"] - got["0"]).max() / scale < 1e-5
    assert 1e-4 < np.abs(got["1"] - want).max() / scale < 2e-2


def test_tuned_attention_measured_on_this_host_recorded_and_applied(tmp_path):
    """attention_kernels=tuned (the default): xgen_mlir.tune's choices step measures the core
    as the kernel against IREE's dispatches and records it; compile() follows the record, and
    a record of IREE's dispatches measured faster makes it keep them, with numbers that still
    match PyTorch either way."""
    from xgen_mlir.passes.attention_kernels import attention_config
    from xgen_mlir.tunedb import HostIdentity, Record, TuningDB
    from xgen_mlir.tuning.choices import ATTENTION_TEXT, measure_choices
    from xgen_mlir.tuning.measure import MeasureSettings

    torch.manual_seed(0)
    model = _SelfAttention().eval()
    x, mask = torch.randn(16, 48), torch.zeros(1, 1, 16, 16)
    with torch.no_grad():
        want = model(x, mask).numpy()
    db = tmp_path / "t.db"
    only = {"winograd": "false", "offload": "none", "gemm_kernels": "false"}
    fast = MeasureSettings(threads=2, rounds=3, min_block_s=0.002)
    choices = measure_choices(
        model, (x, mask), db=db, settings=fast, progress=False, target_options=only
    )
    (core,) = [c for c in choices if c.prior == ATTENTION_TEXT]
    assert core.description == "attention 3x16x16 d16 +1 score ops (1 tensor)"
    (record,) = core.measured
    assert record.status == "ok" and record.speedup, record
    m = xgen_mlir.compile(model, (x, mask), tuning_db=db, target_options=only)
    assert _kernels(m) == (1 if core.algorithm == ATTENTION_TEXT else 0), core.why
    assert any(c[0] == core.description for c in m.report.tuning.choices)
    check_close(np.asarray(m(x, mask)), want, atol=1e-5, rtol=1e-4, what="tuned attention")
    # this host measured IREE's dispatches twice as fast: they stay
    with TuningDB(db) as tdb:
        host = HostIdentity.current()
        tdb.add(Record(core.signature, attention_config(), "ok", 2e-3, 1e-3), host)
    m = xgen_mlir.compile(model, (x, mask), tuning_db=db, target_options=only)
    assert _kernels(m) == 0, m.report.rewrites
    assert m.report.rewrites["xgen-attention-kernels"]["kept: IREE's dispatches (tuned)"] == 1
    (said,) = [c for c in m.report.tuning.choices if c[0] == core.description]
    assert said[1] == "IREE" and "IREE's dispatches faster" in said[2], said
    check_close(np.asarray(m(x, mask)), want, atol=1e-5, rtol=1e-4, what="attention in IREE")
    # attention_kernels=true ignores the records
    m = xgen_mlir.compile(
        model, (x, mask), tuning_db=db, target_options={**only, "attention_kernels": "true"}
    )
    assert _kernels(m) == 1


def test_tune_measures_attention_with_winograd_forbidden(tmp_path):
    """tune()'s choices step measures the attention core even where the user forbids
    Winograd (winograd=false forbids only that choice), and returns a module that computes
    what PyTorch does."""
    import time

    from xgen_mlir.tuning.choices import ATTENTION_TEXT, tune_choices
    from xgen_mlir.tuning.measure import MeasureSettings

    torch.manual_seed(1)
    model = _SelfAttention().eval()
    x, mask = torch.randn(16, 48), torch.zeros(1, 1, 16, 16)
    only = {"winograd": "false", "offload": "none", "gemm_kernels": "false"}
    current = xgen_mlir.compile(model, (x, mask), tuning_db=False, target_options=only)
    fast = MeasureSettings(threads=2, rounds=3, min_block_s=0.002)
    choices, module = tune_choices(
        current, model, (x, mask), (x, mask), "cpu", tmp_path / "t.db", fast,
        time.perf_counter() + 120, False, {"target_options": only},
    )  # fmt: skip
    (core,) = choices
    assert core.prior == ATTENTION_TEXT and core.new and core.measured, core
    with torch.no_grad():
        want = model(x, mask).numpy()
    check_close(np.asarray(module(x, mask)), want, atol=1e-5, rtol=1e-4, what="tuned module")
