"""Masked fine-tuning that keeps the pruned structure exact, and progressive pruning.

Gradients are masked before each optimizer step and the weights re-projected after it, so
momentum, weight decay or Adam's state can never revive a pruned weight. Training is resumable:
each epoch ends with a checkpoint (model incl. structure buffers, optimizer, schedule, epoch,
history) written atomically, and a run that finds its checkpoint continues from it.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Callable, Iterable

import torch
from torch import nn
from tqdm.auto import tqdm

from ..errors import XGenError
from ..fileio import atomic_write_bytes
from .description import describe
from .prune import prune
from .structure import check_structure, mask_of, project, pruned_layers, weight_of

__all__ = ["finetune", "progressive_prune", "recalibrate_bn"]


def _optimizer(name: str, params, lr: float, momentum: float, weight_decay: float):
    if name == "sgd":
        return torch.optim.SGD(
            params, lr=lr, momentum=momentum, weight_decay=weight_decay, nesterov=momentum > 0
        )
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)
    raise XGenError(f"optimizer={name!r}: use 'sgd' or 'adam'")


def finetune(
    model: nn.Module,
    train_loader: Iterable,
    *,
    epochs: int,
    lr: float,
    loss_fn: Callable = nn.functional.cross_entropy,
    eval_fn: Callable[[nn.Module], object] | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    optimizer: str = "sgd",
    momentum: float = 0.9,
    weight_decay: float = 0.0,
    schedule: str = "cosine",
    teacher: nn.Module | None = None,
    distill: float = 0.5,
    temperature: float = 4.0,
    distill_loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
    progress: bool = True,
) -> list[dict]:
    """Train ``model`` in place on (input, target) batches, keeping its pruned structure.

    A model without pruned layers trains densely (handy for the baseline). ``schedule``:
    "cosine" (per step, needs ``len(train_loader)``) or "constant". ``eval_fn(model)`` runs
    after each epoch (in eval mode) and its result lands in the history. Returns the history:
    one dict per epoch with mean loss, accuracy (for class-index targets) and eval.

    ``teacher`` (e.g. the dense model) adds knowledge distillation: the loss becomes
    ``(1 - distill) * loss_fn + distill * T^2 * KL(teacher || student)`` at temperature T, which
    recovers a pruned model's accuracy in fewer epochs than labels alone. ``distill_loss(student
    output, teacher output)`` replaces the KL term where the outputs are not logits (hidden
    states, embeddings); with ``distill=1`` the targets are not used (unlabelled text).

    An input that is a tuple or list of tensors is passed as positional arguments (a
    transformer's ``(input_ids, attention_mask)``), to the teacher too.
    """
    masks = {id(m.weight): mask_of(m).to(weight_of(m).dtype) for m in pruned_layers(model).values()}
    params = [p for p in model.parameters() if p.requires_grad]
    opt = _optimizer(optimizer, params, lr, momentum, weight_decay)
    total = epochs * len(train_loader) if schedule == "cosine" else 0  # type: ignore[arg-type]
    if schedule not in ("cosine", "constant"):
        raise XGenError(f"schedule={schedule!r}: use 'cosine' or 'constant'")
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, total) / total)) if total else 1.0
    )
    start, history = 0, []
    if checkpoint is not None and os.path.isfile(checkpoint):
        state = torch.load(checkpoint, map_location="cpu", weights_only=True)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        start, history = state["epoch"], state["history"]
        masks = {
            id(m.weight): mask_of(m).to(weight_of(m).dtype) for m in pruned_layers(model).values()
        }
        if progress:
            print(f"[finetune] resuming from {os.fspath(checkpoint)} after epoch {start}")
    device = next(model.parameters()).device
    masks = {k: v.to(device) for k, v in masks.items()}
    for epoch in range(start, epochs):
        model.train()
        seen = correct = 0
        loss_sum = 0.0
        bar = tqdm(train_loader, desc=f"epoch {epoch + 1}/{epochs}", disable=not progress)
        for x, y in bar:
            x, y = _to(x, device), _to(y, device)
            out = _call(model, x)
            if teacher is not None and distill >= 1.0:
                loss = _kd(out, teacher, x, temperature, distill_loss)
            else:
                loss = loss_fn(out, y)
                if teacher is not None:
                    kd = _kd(out, teacher, x, temperature, distill_loss)
                    loss = (1 - distill) * loss + distill * kd
            opt.zero_grad(set_to_none=True)
            loss.backward()
            for p in params:
                if p.grad is not None and id(p) in masks:
                    p.grad.mul_(masks[id(p)])
            opt.step()
            sched.step()
            with torch.no_grad():
                for p in params:
                    if id(p) in masks:
                        p.mul_(masks[id(p)])
            n = len(out)
            seen += n
            loss_sum += float(loss.detach()) * n
            if out.ndim == 2 and y is not None and y.ndim == 1 and not y.is_floating_point():
                correct += int((out.argmax(1) == y).sum())
            bar.set_postfix(loss=f"{loss_sum / seen:.4f}", acc=f"{correct / seen:.4f}")
        for m in pruned_layers(model).values():
            project(m)
        record: dict[str, object] = {
            "epoch": epoch + 1,
            "loss": loss_sum / max(seen, 1),
            "acc": correct / max(seen, 1),
        }
        if eval_fn is not None:
            model.eval()
            record["eval"] = eval_fn(model)
            if progress:
                print(f"[finetune] epoch {epoch + 1}: eval {record['eval']}")
        history.append(record)
        if checkpoint is not None:
            _save_checkpoint(checkpoint, model, opt, sched, epoch + 1, history)
    model.eval()
    if masks:
        check_structure(model)
    return history


@torch.no_grad()
def recalibrate_bn(model: nn.Module, batches: Iterable, max_batches: int = 50) -> nn.Module:
    """Re-estimate BatchNorm running statistics on ``batches`` (inputs, or (input, target)).

    Pruning shifts every layer's activation statistics, so a one-shot pruned model with its old
    BN statistics can look far worse than it is; this fixes that without training weights.
    """
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    momenta = [m.momentum for m in bns]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # cumulative average over the batches seen
    device = next(model.parameters()).device
    model.train()
    for i, batch in enumerate(batches):
        if i >= max_batches:
            break
        x = batch[0] if isinstance(batch, (tuple, list)) else batch
        model(x.to(device))
    for m, mom in zip(bns, momenta, strict=True):
        m.momentum = mom
    return model.eval()


def _to(x, device):
    """A tensor, a tuple/list of tensors or None, moved to ``device``."""
    if isinstance(x, (tuple, list)):
        return type(x)(v.to(device) for v in x)
    return None if x is None else x.to(device)


def _call(model: nn.Module, x) -> torch.Tensor:
    return model(*x) if isinstance(x, (tuple, list)) else model(x)


def _kd(
    out: torch.Tensor,
    teacher: nn.Module,
    x,
    t: float,
    distill_loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
) -> torch.Tensor:
    with torch.no_grad():
        want = _call(teacher.eval(), x)
    if distill_loss is not None:
        return distill_loss(out, want)
    soft = nn.functional.softmax(want / t, dim=1)
    log_p = nn.functional.log_softmax(out / t, dim=1)
    return nn.functional.kl_div(log_p, soft, reduction="batchmean") * t * t


def _save_checkpoint(path, model, opt, sched, epoch, history) -> None:
    # described where it is (the structure buffers are copied to the CPU once per layer): a
    # deep copy would also copy the model's hooks and what they hold (a distillation loss's
    # taps of the last forward: tensors a deep copy refuses)
    state = {
        "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "scheduler": sched.state_dict(),
        "epoch": epoch,
        "history": history,
        "description": describe(model).to_dict() if pruned_layers(model) else None,
    }
    buf = io.BytesIO()
    torch.save(state, buf)
    atomic_write_bytes(path, buf.getvalue())  # a crash leaves the previous checkpoint whole


def progressive_prune(
    model: nn.Module,
    example_inputs: tuple,
    train_loader: Iterable,
    *,
    steps: int = 3,
    epochs_per_step: int = 1,
    lr: float,
    target_rate: float | None = None,
    connectivity: float | dict[str, float] = 0.0,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    finetune_options: dict | None = None,
    **prune_options,
) -> tuple[nn.Module, list[dict]]:
    """Prune in ``steps`` rounds of rising rate with masked fine-tuning after each.

    Round i of s prunes to ``target_rate ** (i/s)`` (or ``connectivity * i/s``), re-choosing
    patterns, groups and kernels from the weights the previous round trained, so the final
    structure adapts to the fine-tuned weights instead of the dense ones. Patterns (2.25x for
    3x3) apply from round 1. With ``scheme="block"`` (in ``prune_options``), round i prunes
    blocks to ``rate=target_rate ** (i/s)`` (``target_rate`` is required; a pruned weight
    stays pruned: its zero ranks last). Returns (pruned model, history of all rounds).
    """
    block = prune_options.get("scheme") == "block"
    if block and (target_rate is None or "rate" in prune_options or connectivity):
        raise XGenError(
            "progressive_prune(scheme='block') takes target_rate= (the last round's rate), "
            "not rate= or connectivity="
        )
    last_rate = float(target_rate or 1.0)
    history: list[dict] = []
    current = model
    for i in range(1, steps + 1):
        t = i / steps
        opts = dict(prune_options)
        if block:
            opts["rate"] = last_rate**t
        elif target_rate is not None:
            opts["target_rate"] = target_rate**t
        elif isinstance(connectivity, dict):
            opts["connectivity"] = {k: v * t for k, v in connectivity.items()}
        else:
            opts["connectivity"] = connectivity * t
        current = prune(current, example_inputs, **opts)
        ckpt = None
        if checkpoint_dir is not None:
            os.makedirs(checkpoint_dir, exist_ok=True)
            ckpt = os.path.join(checkpoint_dir, f"step{i}.pt")
        rounds = finetune(
            current,
            train_loader,
            epochs=epochs_per_step,
            lr=lr,
            checkpoint=ckpt,
            **(finetune_options or {}),
        )
        desc = describe(current)
        rate = (
            desc.block_weights_before / max(desc.block_weights_after, 1)
            if block
            else desc.compression_rate
        )
        history += [{**r, "step": i, "rate": rate} for r in rounds]
    return current, history
