"""The graph-rewriting passes on real torch models: they fire, and results still match PyTorch.

Each test imports a small model, runs one rewrite through the pass runner (as the pipeline
does) to check that it fired and what it removed, then compiles the model through the cpu
pipeline (which contains the rewrite) and compares with PyTorch.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import check_close, compile_and_check
from torch import nn

import xgen_mlir
from xgen_mlir.frontend import import_model
from xgen_mlir.models import transformers_zoo
from xgen_mlir.passes.algebraic_simplify import SimplifyOptions, algebraic_simplify
from xgen_mlir.passes.cancel_reshapes import cancel_reshapes
from xgen_mlir.passes.fold_batchnorm import fold_batchnorm
from xgen_mlir.passes.merge_sibling_matmuls import MergeOptions, merge_sibling_matmuls
from xgen_mlir.passes.op_stats import count_ops
from xgen_mlir.passes.runner import run_steps


def _bn(channels: int, cls: type = nn.BatchNorm2d) -> nn.Module:
    """A batch norm with non-trivial running statistics (fresh ones are the identity)."""
    bn = cls(channels)
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.uniform_(0.5, 2)
        bn.bias.uniform_(-1, 1)
    return bn


def _conv_bn_net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        _bn(8),
        nn.ReLU(),
        nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False),  # depthwise
        _bn(8),
        nn.ReLU6(),
        nn.Flatten(),
        nn.Linear(8 * 8 * 8, 16),
        _bn(16, nn.BatchNorm1d),
    ).eval()


def test_fold_batchnorm_removes_the_normalisation_and_matches_pytorch():
    model, x = _conv_bn_net(), torch.randn(2, 3, 8, 8)
    module = import_model(model, (x,))
    before = count_ops(module.operation)
    counts = fold_batchnorm(module.operation)
    after = count_ops(module.operation)
    assert counts == {
        "linalg.conv_2d_nchw_fchw": 1,
        "linalg.depthwise_conv_2d_nchw_chw": 1,
        "linalg.matmul": 1,
    }
    # per batch norm: sub, mul, mul, add and the three generics computing 1/sqrt(var+eps),
    # plus the linear layer's bias add
    assert before["linalg.generic"] - after["linalg.generic"] == 3 * 7 + 1
    for name in ("linalg.conv_2d_nchw_fchw", "linalg.depthwise_conv_2d_nchw_chw", "linalg.matmul"):
        assert after[name] == before[name] == 1
    compile_and_check(model, (x,), atol=1e-4, rtol=1e-4)


def test_merge_qkv_in_bert_and_match_pytorch():
    model, inputs = transformers_zoo.bert_tiny()
    module = import_model(model, inputs)
    before = count_ops(module.operation)
    run_steps(module, ["xgen-merge-sibling-matmuls{min-width=1}"])  # the tiny model's N is 32
    after = count_ops(module.operation)
    # Q/K/V of each of the 2 layers: 3 matmuls -> 1, 3 bias adds -> 1
    assert before["linalg.matmul"] - after["linalg.matmul"] == 2 * 2
    assert after["tensor.extract_slice"] - before["tensor.extract_slice"] == 2 * 3
    assert merge_sibling_matmuls(module.operation, MergeOptions(min_width=1)) == {}  # all done
    compile_and_check(model, inputs, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("which", ["bert", "gpt2"])
def test_cancel_reshapes_around_the_mlp_gelu(which):
    """expand -> GELU -> collapse once per layer: one generic in BERT, an eight-generic
    region reading the expanded value three times in GPT-2 (tanh GELU)."""
    if which == "bert":
        model, inputs = transformers_zoo.bert_tiny()
    else:
        model, inputs = transformers_zoo.gpt2_tiny(seq=16)
    module = import_model(model, inputs)
    run_steps(module, ["xgen-fold-transpose-pairs", "func.func(canonicalize),cse"])
    before = count_ops(module.operation)
    counts = cancel_reshapes(module.operation)
    after = count_ops(module.operation)
    assert counts == {"reshape-sandwich": 2}  # 2 layers
    assert before["tensor.expand_shape"] - after["tensor.expand_shape"] == 2
    assert before["tensor.collapse_shape"] - after["tensor.collapse_shape"] == 2
    assert before["linalg.generic"] == after["linalg.generic"]
    # numerics: the compiled rewritten module against PyTorch
    got = xgen_mlir.compile(module)(*inputs)
    with torch.no_grad():
        want = model(*inputs)
    check_close(got.numpy(), want.numpy(), atol=1e-4, rtol=1e-4, what=which)


class _Algebra(nn.Module):
    """Expressions for xgen-algebraic-simplify, as torch-mlir imports them."""

    def forward(self, a, b, c):
        dist = 2.0 * a + b * 2.0  # constant factor: default rule
        runtime = a * c - a * b  # runtime factor: unsafe-math only
        negneg = torch.neg(torch.neg(a)) + 0.0  # -(-x) exact; x + 0.0 is not (-0.0)
        sq = (a * torch.sqrt(b)) * (torch.sqrt(b) * c)  # unsafe-math only
        prod = torch.prod(torch.exp(a), dim=1)  # unsafe-math only
        return dist, runtime, negneg, sq, prod


def _algebra_inputs(negative_b: bool = False) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    a, b, c = (torch.rand(4, 5, generator=g) for _ in range(3))
    return a - 0.5, -b if negative_b else b + 0.1, c - 0.5


def _run(module, inputs):
    out = xgen_mlir.compile(module)(*inputs)
    return [o.numpy() for o in out]


def test_algebraic_simplify_default_rules_fire_and_match_pytorch():
    model, inputs = _Algebra().eval(), _algebra_inputs()
    module = import_model(model, inputs)
    before = count_ops(module.operation)
    counts = algebraic_simplify(module.operation)
    assert counts == {"distributive": 1, "double-negation": 1}
    # 2a + 2b: 3 generics -> 1;  -(-a): 2 -> 0
    assert before["linalg.generic"] - count_ops(module.operation)["linalg.generic"] == 2 + 2
    with torch.no_grad():
        want = [w.numpy() for w in model(*inputs)]
    names = "dist runtime negneg sq prod".split()
    for got, ref, name in zip(_run(module, inputs), want, names, strict=True):
        check_close(got, ref, atol=1e-5, rtol=1e-5, what=name)


def test_algebraic_simplify_unsafe_rules_only_on_request():
    model = _Algebra().eval()
    inputs = _algebra_inputs()
    module = import_model(model, inputs)
    counts = algebraic_simplify(module.operation, SimplifyOptions(unsafe_math=True))
    assert counts == {
        "distributive": 2,
        "double-negation": 1,
        "identity-signed-zero": 1,
        "sqrt-product": 1,
        "reduce-prod-exp": 1,
    }
    with torch.no_grad():
        want = [w.numpy() for w in model(*inputs)]
    names = "dist runtime negneg sq prod".split()
    for got, ref, name in zip(_run(module, inputs), want, names, strict=True):
        check_close(got, ref, atol=1e-5, rtol=1e-5, what=name)  # same on tame inputs

    # With B < 0 PyTorch gives NaN for sqrt(B)*sqrt(B); the default pipeline keeps that,
    # the unsafe rewrite does not (which is why it is off by default).
    neg = _algebra_inputs(negative_b=True)
    default = _run(import_model(model, neg), neg)
    assert np.isnan(default[3]).all()
    unsafe = import_model(model, neg)
    algebraic_simplify(unsafe.operation, SimplifyOptions(unsafe_math=True))
    assert np.isfinite(_run(unsafe, neg)[3]).all()


@pytest.mark.parametrize(
    ("target", "step"),
    [
        ("x86_64", "xgen-fold-batchnorm"),  # off on cpu: measured slower there (cpu.toml says why)
        ("cpu", "xgen-merge-sibling-matmuls"),
        ("cpu", "xgen-algebraic-simplify"),
        ("cpu", "xgen-cancel-reshapes"),
        ("cpu", "xgen-scale-to-weights"),
        ("cpu", "xgen-fuse-gather-views"),
        ("cpu", "xgen-split-reductions"),
        ("cpu", "xgen-transposed-convs"),
        ("arm64", "xgen-transposed-convs"),
    ],
)
def test_rewrites_are_in_the_pipelines(target, step):
    from xgen_mlir.pipelines import load_pipeline

    steps = load_pipeline(target).pass_steps("main")
    assert step in steps
    assert steps.index(step) > steps.index("xgen-fold-transpose-pairs")


class DepthwiseBlock(torch.nn.Module):
    """MobileNetV2-style: 1x1 expand, depthwise 3x3 (stride 2), 1x1 project, BN + ReLU6."""

    def __init__(self) -> None:
        super().__init__()
        nn = torch.nn
        self.body = nn.Sequential(
            nn.Conv2d(8, 32, 1, bias=False),
            nn.BatchNorm2d(32),
            nn.ReLU6(),
            nn.Conv2d(32, 32, 3, 2, 1, groups=32, bias=False),
            nn.BatchNorm2d(32),
            nn.ReLU6(),
            nn.Conv2d(32, 16, 1, bias=False),
            nn.BatchNorm2d(16),
        )
        for m in self.body:
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-1, 1)
                m.running_var.uniform_(0.5, 2)
                m.weight.data.uniform_(0.5, 1.5)

    def forward(self, x):
        return self.body(x)


def test_nhwc_convs_in_cpu_pipeline_for_depthwise_models(tmp_path):
    """The cpu pipeline turns every conv of a model with depthwise convs into named NHWC convs
    (batch norms folded), and the compiled model still matches PyTorch."""
    torch.manual_seed(0)
    model, x = DepthwiseBlock().eval(), torch.randn(1, 8, 14, 14)
    module = xgen_mlir.compile(model, (x,), dump_ir=tmp_path)
    after = next(p for p in sorted(tmp_path.iterdir()) if "xgen-nhwc-convs" in p.name).read_text()
    assert "nchw" not in after
    assert after.count("linalg.depthwise_conv_2d_nhwc_hwc") == 1
    assert after.count("linalg.conv_2d_nhwc_hwcf") == 2
    # the compile report counts the same rewrites, per pass
    assert module.report.rewrites["xgen-nhwc-convs"] == {
        "linalg.depthwise_conv_2d_nchw_chw": 1,
        "linalg.conv_2d_nchw_fchw": 2,
    }
    with torch.no_grad():
        want = model(x).numpy()
    check_close(module(x).numpy(), want, atol=1e-4, rtol=1e-4, what="depthwise block")


class SqueezeExciteBlock(torch.nn.Module):
    """EfficientNet's MBConv tail: depthwise 3x3 + SiLU, squeeze-excite, 1x1 project."""

    def __init__(self, channels: int = 32, squeeze: int = 8, out: int = 16) -> None:
        super().__init__()
        self.dw = nn.Conv2d(channels, channels, 3, padding=1, groups=channels)
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)
        self.project = nn.Conv2d(channels, out, 1, bias=False)

    def forward(self, x):
        x = torch.nn.functional.silu(self.dw(x))
        s = torch.nn.functional.adaptive_avg_pool2d(x, 1)
        s = torch.sigmoid(self.fc2(torch.nn.functional.silu(self.fc1(s))))
        return self.project(x * s)


def test_scale_to_weights_on_squeeze_excite_matches_pytorch(tmp_path):
    """The SE multiply (16x16x32 elements) moves onto the 1x1x32x16 project weights in the cpu
    pipeline; a 2x2 input, where the weights are the larger side, keeps its multiply."""
    torch.manual_seed(0)
    model = SqueezeExciteBlock().eval()
    for hw, fires in ((16, True), (2, False)):
        x = torch.randn(1, 32, hw, hw)
        dump = tmp_path / str(hw)
        module = xgen_mlir.compile(model, (x,), dump_ir=dump)
        step = next(p for p in sorted(dump.iterdir()) if "xgen-scale-to-weights" in p.name)
        after = step.read_text()
        project = next(ln for ln in after.splitlines() if "tensor<1x1x32x16xf32>) outs" in ln)
        # rewritten: the project conv's weight operand is computed (an SSA value, not %cst)
        assert ("ins(%transposed" in project and "%cst" not in project.split("ins(")[1]) == fires
        with torch.no_grad():
            want = model(x).numpy()
        check_close(module(x).numpy(), want, atol=1e-5, rtol=1e-4, what=f"SE block {hw}x{hw}")


def test_squeeze_excite_runs_channels_last(tmp_path):
    """After xgen-nhwc-convs, the SE block's SiLU sits between a transpose to NCHW and the
    project conv's transpose back, and its pool reads the NCHW value too. The second
    xgen-cancel-reshapes step runs the SiLU NHWC and the pool reads the NHWC value through a
    permuted map, so only the model's entry and exit transposes stay."""
    torch.manual_seed(0)
    model, x = SqueezeExciteBlock().eval(), torch.randn(1, 32, 16, 16)
    module = xgen_mlir.compile(model, (x,), dump_ir=tmp_path)
    steps = sorted(tmp_path.iterdir())
    second = [p for p in steps if "xgen-cancel-reshapes" in p.name][1]
    before = steps[steps.index(second) - 1].read_text()
    after = second.read_text()
    assert before.count("linalg.transpose ") > 2
    assert after.count("linalg.transpose ") == 2  # NCHW -> NHWC in, NHWC -> NCHW out
    assert "affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>" in after  # the pool's NHWC read
    counts = module.report.rewrites["xgen-cancel-reshapes"]
    assert counts["transpose-with-pooled-reads-sandwich"] == 1
    with torch.no_grad():
        want = model(x).numpy()
    check_close(module(x).numpy(), want, atol=1e-5, rtol=1e-4, what="SE block, channels last")


class PooledFeatures(torch.nn.Module):
    """SiLU, then a global average pool: 64x64 pixels summed for each of 32 channels."""

    def forward(self, x):
        return torch.nn.functional.adaptive_avg_pool2d(torch.nn.functional.silu(x), 1)


def test_split_reductions_on_a_global_pool(tmp_path):
    """The cpu pipeline sums the 4096 pixels of each channel in 16 chunks of 4 rows, then the
    chunks; the result matches PyTorch (float reassociation only). A 16x16 image (256 pixels
    per channel) is left alone."""
    torch.manual_seed(0)
    model = PooledFeatures().eval()
    for hw, fires in ((64, True), (16, False)):
        x = torch.randn(1, 32, hw, hw)
        module = xgen_mlir.compile(model, (x,))
        done = module.report.rewrites.get("xgen-split-reductions", {})
        assert done == ({"sum split in 16": 1} if fires else {}), done
        with torch.no_grad():
            want = model(x).numpy()
        check_close(module(x).numpy(), want, atol=1e-6, rtol=1e-5, what=f"pool {hw}x{hw}")


class TrigramEmbedding(torch.nn.Module):
    """MobileBERT's embedding input: each token's embedding next to its neighbours' (zero past
    the ends), then a linear layer over the 3x wider rows."""

    def __init__(self, vocab: int = 50, width: int = 8, out: int = 12) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.dense = nn.Linear(3 * width, out)

    def forward(self, ids):
        e = self.embed(ids)
        f = torch.nn.functional
        nxt = f.pad(e[:, 1:], [0, 0, 0, 1])
        prev = f.pad(e[:, :-1], [0, 0, 1, 0])
        return self.dense(torch.cat([nxt, e, prev], dim=2))


def test_fuse_gather_views_on_the_trigram_embedding(tmp_path):
    """The concat of three shifted views of the embedding lookup becomes one gather (no
    concat, pad or slice left after the pass), and the compiled model matches PyTorch."""
    torch.manual_seed(0)
    model, ids = TrigramEmbedding().eval(), torch.randint(0, 50, (1, 7))
    module = xgen_mlir.compile(model, (ids,), dump_ir=tmp_path)
    steps = sorted(tmp_path.iterdir())
    step = next(i for i, p in enumerate(steps) if "xgen-fuse-gather-views" in p.name)
    before, after = steps[step - 1].read_text(), steps[step].read_text()
    for op in ("tensor.concat", "tensor.pad", "tensor.extract_slice %"):
        assert op in before
        assert op not in after, op
    assert after.count("tensor.extract %") == 2  # the ids, then the table
    with torch.no_grad():
        want = model(ids).numpy()
    check_close(module(ids).numpy(), want, atol=1e-6, rtol=1e-5, what="trigram embedding")
