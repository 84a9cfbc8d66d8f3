"""Masked distillation of a block-pruned transformer (``compress.finetune`` with a teacher and a
``distill_loss`` on hidden states) and the pieces of benchmarks/block_accuracy.py.

A 2-layer tiny BERT stands in for MiniLM: the loop must keep every pruned weight exactly zero
(Adam's momentum and weight decay would otherwise revive them), lower the distillation loss,
and resume from its checkpoint to the same weights as an uninterrupted run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from xgen_mlir import compress
from xgen_mlir.compress.structure import mask_of, pruned_layers, weight_of

pytest.importorskip("transformers")
from xgen_mlir.models.transformers_zoo import bert_tiny

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import block_accuracy as ba

SEQ = 12


def _models() -> tuple[nn.Module, nn.Module, tuple]:
    """(dense teacher, block-pruned student at 2x in 8 x 16 blocks, example inputs); no
    dropout, so two runs of the loop are comparable step for step."""
    hf, (ids,) = bert_tiny(seq=SEQ)
    hf.input_names = ("input_ids", "attention_mask")  # as MiniLM's wrapper takes them
    for m in hf.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    dense = ba.Masked(hf).eval()
    example = (ids, torch.ones_like(ids))
    student = compress.prune(
        dense, example, scheme="block", rate=2.0, block_shape=(8, 16), layers=ba.in_encoder
    )
    for p in student.parameters():
        p.requires_grad_(True)
    return dense, student, example


def _batches(n: int = 4, seed: int = 0) -> list:
    """Unlabelled batches ((ids, mask), None) of random tokens with random lengths."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        ids = torch.randint(1, 64, (6, SEQ), generator=gen)
        lengths = torch.randint(4, SEQ + 1, (6,), generator=gen)
        mask = (torch.arange(SEQ)[None, :] < lengths[:, None]).to(torch.int64)
        out.append(((ids, mask), None))
    return out


KW = {
    "epochs": 3,
    "lr": 3e-4,
    "optimizer": "adam",
    "weight_decay": 1e-4,
    "distill": 1.0,
    "distill_loss": ba.embedding_distill,
    "progress": False,
}


def _distill_loss(student: nn.Module, teacher: nn.Module, batches) -> float:
    with torch.no_grad():
        return sum(float(ba.embedding_distill(student(*x), teacher(*x))) for x, _ in batches) / len(
            batches
        )


def test_distillation_keeps_masks_and_lowers_loss():
    dense, student, _ = _models()
    masks = {n: mask_of(m).clone() for n, m in pruned_layers(student).items()}
    assert masks and all(not bool(m.all()) for m in masks.values())  # something was pruned
    before_desc = compress.describe(student)
    data = _batches()
    before = _distill_loss(student, dense, data)
    hist = compress.finetune(student, data, teacher=dense, **KW)
    after = _distill_loss(student, dense, data)
    assert hist[-1]["loss"] < hist[0]["loss"] and after < 0.5 * before, (before, after, hist)
    compress.check_structure(student)
    for name, m in pruned_layers(student).items():
        w = weight_of(m)
        assert bool((w[~masks[name]] == 0).all()), f"{name}: a pruned weight came back"
        assert bool((w[masks[name]] != 0).all()), f"{name}: a kept weight became zero"
    assert compress.describe(student) == before_desc  # same blocks, rows and columns


class _Interrupt(Exception):
    pass


class _StopAfter:
    """Batches that raise on the ``limit + 1``-th pass (a crash mid-run)."""

    def __init__(self, batches, limit: int) -> None:
        self.batches, self.limit, self.passes = batches, limit, 0

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self):
        self.passes += 1
        if self.passes > self.limit:
            raise _Interrupt
        return iter(self.batches)


def test_distillation_resumes_from_checkpoint(tmp_path):
    data = _batches()
    dense, straight, _ = _models()
    compress.finetune(straight, data, teacher=dense, **KW)
    ckpt = tmp_path / "distill.pt"
    _, interrupted, _ = _models()
    with pytest.raises(_Interrupt):
        compress.finetune(interrupted, _StopAfter(data, 2), teacher=dense, checkpoint=ckpt, **KW)
    assert ckpt.exists() and not list(tmp_path.glob("*.tmp"))
    _, resumed, _ = _models()
    hist = compress.finetune(resumed, data, teacher=dense, checkpoint=ckpt, **KW)
    assert [h["epoch"] for h in hist] == [1, 2, 3]
    compress.check_structure(resumed)
    for (k, a), b in zip(straight.state_dict().items(), resumed.state_dict().values(), strict=True):
        assert torch.allclose(a.float(), b.float(), atol=1e-6), k


def test_benchmark_data_split():
    text = (
        "Compound statements\n*******************\n\nCompound statements contain other "
        "statements; they affect the execution of those statements.  A clause consists of a "
        "header and a suite.\n\n   >>> if x: print(x)\n\nShort one.\n"
    )
    assert ba.split_sentences(text) == [
        "Compound statements contain other statements; they affect the execution of those "
        "statements.",
        "A clause consists of a header and a suite.",
    ]
    data = ba.pydoc_sentences()
    held = [s for s, _ in data if ba.held_out(s, 0.3)]
    assert len(data) > 1000 and 0.2 < len(held) / len(data) < 0.4
    assert len({s for s, _ in data}) == len(data)  # each sentence once


def _hooks(model: nn.Module) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


def test_time_budget_fits_steps_to_the_time_left_and_leaves_no_hooks():
    """``--minutes``: the steps come from timing a copy of the student (which stays as it
    was), the layer taps of that probe are removed from student and teacher alike, and the
    batches stop at the deadline whatever the step count."""
    import argparse
    import time

    dense, student, _ = _models()
    tokens = ba.Tokens.__new__(ba.Tokens)
    tokens.ids = [
        row[: int(m.sum())]
        for (ids, mask), _ in _batches(8)
        for row, m in zip(ids, mask, strict=True)
    ]
    tokens.pad = 0
    before = {k: v.clone() for k, v in student.state_dict().items()}
    args = argparse.Namespace(
        minutes=2.0, t_start=time.time(), trainings_left=2, batch=4, lr=1e-3, layerwise=True,
        round=5,
    )  # fmt: skip
    steps, deadline = ba._fit_steps(args, student, dense, tokens)
    share = (120.0 - ba.RESERVE_S) / 2  # two fine-tunings share the minute left
    assert steps % 5 == 0 and 5 <= steps <= share / (args.seconds_per_step * 0.9)
    assert time.time() < deadline <= time.time() + 1.05 * share
    assert args.trainings_left == 1
    assert _hooks(student) == 0 and _hooks(dense) == 0
    for k, v in student.state_dict().items():
        assert torch.equal(v, before[k]), f"{k}: the probe trained the student itself"
    # the real fine-tuning's taps come and go too; the loss sees the batch's own mask
    loss, taps = ba.distill_loss(args, student, dense)
    (ids, mask), _ = _batches(1)[0]
    loss(student(ids, mask), dense(ids, mask))
    assert torch.equal(taps[0].mask, mask) and len(taps[1].outs) == 2
    for t in taps:
        t.remove()
    assert _hooks(student) == 0 and _hooks(dense) == 0
    # the deadline stops the batches
    assert len(list(ba.Rounds(tokens, 4, 10))) == 10
    late = ba.Rounds(tokens, 4, 10, deadline=time.time() - 1)
    assert list(late) == [] and late.given == 0
