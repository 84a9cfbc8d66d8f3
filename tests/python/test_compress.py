"""xgen_mlir.compress: the structure of zeros the compiler relies on, and the API around it.

The structural checks read the weights' zeros directly (as the compiler does), not only the
structure buffers, so they test the contract itself.
"""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from xgen_mlir import XGenError, compress


def _net(seed: int = 0) -> nn.Module:
    """3x3 (F=40, not a multiple of 16), 5x5, 7x7, depthwise 3x3, 1x1 and a Linear head."""
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(3, 24, 3, padding=1),
        nn.BatchNorm2d(24),
        nn.ReLU(),
        nn.Conv2d(24, 40, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(40, 40, 3, padding=1, groups=40),
        nn.Conv2d(40, 32, 5, padding=2),
        nn.ReLU(),
        nn.Conv2d(32, 16, 7, padding=3),
        nn.Conv2d(16, 32, 1),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, 10),
    ).eval()


X = (torch.randn(2, 3, 12, 12, generator=torch.Generator().manual_seed(1)),)


@pytest.fixture(scope="module")
def pruned() -> nn.Module:
    return compress.prune(_net(), X, connectivity=0.5, group_size=8)


def _nonzero_sets(w: torch.Tensor) -> list[list[frozenset[int]]]:
    """Per kernel, the set of flat positions holding nonzeros (what the compiler sees)."""
    nz = (w != 0).reshape(w.shape[0], w.shape[1], -1)
    return [[frozenset(torch.nonzero(k).flatten().tolist()) for k in f] for f in nz]


def test_structure_read_from_zeros(pruned):
    desc = compress.describe(pruned)
    assert set(desc.layers) == {"0", "3", "5", "6", "8"}  # 1x1 and Linear off by default
    for name, ly in desc.layers.items():
        k = ly.kernel_size
        n = {3: 4, 5: 11, 7: 22}[k]
        assert ly.pattern_size == n and 4 <= len(ly.patterns) <= 8, name
        library = {frozenset(p) for p in ly.patterns}
        assert all(len(p) == n for p in library)
        if k == 3:
            assert all(4 in p for p in library), "3x3 patterns keep the center"
        sets = _nonzero_sets(pruned.get_submodule(name).weight.detach())
        for f, row in enumerate(sets):
            for c, s in enumerate(row):
                assert s in library or not s, f"{name}[{f},{c}] has nonzeros {sorted(s)}"
                assert (ly.pattern_ids[f][c] < 0) == (not s)
        for group in ly.groups:  # one layout per group, read from the zeros
            assert all(sets[f] == sets[group[0]] for f in group), f"{name} group {group}"


def test_groups_and_connectivity(pruned):
    desc = compress.describe(pruned)
    conv = desc.layers["3"]  # 40 filters, G=8
    assert sorted(len(g) for g in conv.groups) == [8] * 5
    assert sorted(f for g in conv.groups for f in g) == list(range(40))
    assert conv.group_size == 8
    assert conv.kernels_removed == pytest.approx(0.5, abs=0.05)
    assert desc.layers["5"].kind == "depthwise" and desc.layers["5"].kernels_removed == 0
    first = desc.layers["0"]  # 3 input channels: every group keeps >= 1
    assert all(any(i >= 0 for i in row) for row in first.pattern_ids)
    assert desc.compression_rate > 3


def test_uneven_last_group_and_g1():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(8, 20, 3), nn.Conv2d(20, 20, 3))
    x = (torch.randn(1, 8, 8, 8),)
    desc = compress.describe(compress.prune(net, x, group_size=8, connectivity=0.3))
    assert sorted(len(g) for g in desc.layers["1"].groups) == [4, 8, 8]
    desc1 = compress.describe(compress.prune(net, x, group_size=1, connectivity=0.3))
    assert len(desc1.layers["1"].groups) == 20 and desc1.layers["1"].group_size == 1
    assert "0" in desc1.layers
    desc32 = compress.describe(compress.prune(net, x, group_size=16))
    assert set(desc32.layers) == {"0", "1"}
    with pytest.raises(XGenError, match="no layer"):
        compress.prune(net, x, group_size=32)  # F < G everywhere


def test_target_rate_and_layer_options():
    net = _net()
    desc = compress.describe(compress.prune(net, X, target_rate=6, group_size=8))
    assert 6 <= desc.compression_rate < 6.3
    removed = {n: ly.kernels_removed for n, ly in desc.layers.items()}
    assert removed["6"] > removed["3"]  # ERK allocation: the bigger 5x5 layer loses more
    uni = compress.describe(
        compress.prune(net, X, target_rate=6, group_size=8, allocation="uniform")
    )
    assert 6 <= uni.compression_rate < 6.3
    assert uni.layers["6"].kernels_removed == pytest.approx(uni.layers["3"].kernels_removed, 0.05)
    desc = compress.describe(
        compress.prune(net, X, group_size=8, layers=["3", "6"], pattern_size={"3": 3})
    )
    assert set(desc.layers) == {"3", "6"} and desc.layers["3"].pattern_size == 3
    desc = compress.describe(compress.prune(net, X, group_size=8, exclude=["5", "8"]))
    assert set(desc.layers) == {"0", "3", "6"}
    desc = compress.describe(compress.prune(net, X, group_size=8, pointwise=0.5))
    assert desc.layers["9"].kind == "pointwise" and desc.layers["12"].kind == "linear"
    assert desc.layers["9"].kernels_removed == pytest.approx(0.5, abs=0.05)
    with pytest.raises(XGenError, match="4 to 8"):
        compress.prune(net, X, patterns=3)
    with pytest.raises(XGenError, match="unknown target"):
        compress.prune(net, X, target="tpu")
    with pytest.raises(XGenError, match="match no module"):
        compress.prune(net, X, layers=["nope"])
    with pytest.raises(XGenError, match="out of reach"):
        compress.prune(net, X, target_rate=1000, group_size=8)


def test_describe_json_and_summary(pruned, tmp_path):
    desc = compress.describe(pruned)
    back = compress.SparsityDescription.from_json(desc.to_json(tmp_path / "d.json"))
    assert back == desc
    assert compress.SparsityDescription.from_json(str(tmp_path / "d.json")) == desc
    assert json.loads(desc.to_json())["compression_rate"] == pytest.approx(desc.compression_rate)
    text = desc.summary()
    assert "depthwise" in text and "fewer" in text


def test_save_load_roundtrip(pruned, tmp_path):
    path = tmp_path / "m.pt"
    compress.save(pruned, path)
    loaded = compress.load(path, _net)  # a builder of the dense architecture
    compress.check_structure(loaded)
    assert compress.describe(loaded) == compress.describe(pruned)
    with torch.no_grad():
        assert torch.equal(loaded(*X), pruned(*X))
    with pytest.raises(XGenError, match="no layer|does not fit"):
        compress.load(path, lambda: nn.Sequential(nn.Conv2d(3, 24, 3)))
    with pytest.raises(FileNotFoundError):
        compress.load(tmp_path / "missing.pt", _net)


def test_export_keeps_exact_zeros(pruned):
    ep = torch.export.export(pruned, X)
    for name, m in compress.pruned_layers(pruned).items():
        exported = ep.state_dict[f"{name}.weight"]
        assert torch.equal(exported, m.weight.detach())
        assert torch.equal(exported != 0, compress.mask_of(m))
    with torch.no_grad():
        assert torch.allclose(ep.module()(*X), pruned(*X))


def test_check_structure_catches_violations(pruned):
    bad = compress.prune(_net(), X, connectivity=0.5, group_size=8)
    compress.check_structure(bad)
    w = bad.get_submodule("3").weight
    mask = compress.mask_of(bad.get_submodule("3"))
    f, c, r, s = (int(v) for v in torch.nonzero(~mask)[0])
    with torch.no_grad():
        w[f, c, r, s] = 1.0
    with pytest.raises(compress.StructureError, match=rf"'3'.*filter {f}, input channel {c}"):
        compress.check_structure(bad)
    with torch.no_grad():
        w[f, c, r, s] = 0.0
        f, c, r, s = (int(v) for v in torch.nonzero(mask)[0])
        w[f, c, r, s] = 0.0  # a kept weight that is zero: the compiler would see n-1 entries
    with pytest.raises(compress.StructureError, match="declared pattern"):
        compress.check_structure(bad)
    ok = compress.prune(_net(), X, connectivity=0.5, group_size=8)
    m = ok.get_submodule("6")
    members = compress.describe(ok).layers["6"].groups[0]
    m.xgen_pattern_ids[members[1]] = -1
    with torch.no_grad():
        m.weight[members[1]] = 0
    with pytest.raises(compress.StructureError, match="different kernel layouts"):
        compress.check_structure(ok)
    with pytest.raises(compress.StructureError, match="no pruned layers"):
        compress.check_structure(_net())


def _data(n_batches: int = 3):
    gen = torch.Generator().manual_seed(2)
    return [
        (torch.randn(8, 3, 12, 12, generator=gen), torch.randint(0, 10, (8,), generator=gen))
        for _ in range(n_batches)
    ]


class _Interrupt(Exception):
    pass


class _StopAfter:
    """A loader that raises after ``limit`` epochs (a crash mid-run)."""

    def __init__(self, batches, limit: int) -> None:
        self.batches, self.limit, self.epochs = batches, limit, 0

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self):
        self.epochs += 1
        if self.epochs > self.limit:
            raise _Interrupt
        return iter(self.batches)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_finetune_keeps_structure_and_resumes(pruned, tmp_path, optimizer):
    data = _data()
    kw = {"epochs": 3, "lr": 0.05, "optimizer": optimizer, "weight_decay": 1e-3, "progress": False}
    straight = compress.prune(_net(), X, connectivity=0.5, group_size=8)
    hist = compress.finetune(straight, data, **kw)
    assert len(hist) == 3 and hist[-1]["loss"] < hist[0]["loss"]
    compress.check_structure(straight)
    assert compress.describe(straight) == compress.describe(pruned)  # structure unchanged
    ckpt = tmp_path / "ft.pt"
    interrupted = compress.prune(_net(), X, connectivity=0.5, group_size=8)
    with pytest.raises(_Interrupt):
        compress.finetune(interrupted, _StopAfter(data, 2), checkpoint=ckpt, **kw)
    resumed = compress.prune(_net(), X, connectivity=0.5, group_size=8)
    hist2 = compress.finetune(resumed, data, checkpoint=ckpt, **kw)
    assert [h["epoch"] for h in hist2] == [1, 2, 3]
    for a, b in zip(straight.state_dict().values(), resumed.state_dict().values(), strict=True):
        assert torch.allclose(a.float(), b.float(), atol=1e-6)


def test_progressive_prune_and_recalibration(tmp_path):
    model, hist = compress.progressive_prune(
        _net(),
        X,
        _data(2),
        steps=2,
        lr=0.02,
        target_rate=5,
        group_size=8,
        checkpoint_dir=tmp_path,
        finetune_options={"progress": False, "teacher": _net()},
    )
    compress.check_structure(model)
    assert compress.describe(model).compression_rate >= 5
    assert [h["step"] for h in hist] == [1, 2] and hist[0]["rate"] < hist[1]["rate"]
    assert (tmp_path / "step2.pt").exists()
    bn = model.get_submodule("1")
    compress.recalibrate_bn(model, _data(2))
    assert not model.training and int(bn.num_batches_tracked) == 2


def test_progressive_block_prune_rises_to_the_rate(tmp_path):
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    x = torch.randn(32, 64)
    data = [(torch.randn(32, 64), torch.randint(0, 10, (32,))) for _ in range(2)]
    model, hist = compress.progressive_prune(
        mlp,
        (x,),
        data,
        steps=2,
        lr=0.01,
        target_rate=4.0,
        scheme="block",
        block_shape=(4, 32),
        finetune_options={"progress": False},
    )
    compress.check_structure(model)
    d = compress.describe(model)
    assert d.block_weights_before / d.block_weights_after == pytest.approx(4.0, rel=0.02)
    assert [h["step"] for h in hist] == [1, 2]
    assert hist[0]["rate"] == pytest.approx(2.0, rel=0.05) and hist[1]["rate"] == pytest.approx(
        4.0, rel=0.02
    )
    with pytest.raises(XGenError, match="target_rate"):
        compress.progressive_prune(mlp, (x,), data, lr=0.01, scheme="block", rate=4.0)


def test_saved_mnist_model_if_present():
    from pathlib import Path

    from xgen_mlir.models.mnist import mnist_vgg

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "mnist_pruned.pt"
    assert path.exists(), (
        "the committed 8x model is missing (benchmarks/compress_mnist.py writes it)"
    )
    model = compress.load(path, mnist_vgg)
    desc = compress.describe(model)
    assert desc.compression_rate >= 8
    assert all(ly.group_size == 16 for ly in desc.layers.values())
