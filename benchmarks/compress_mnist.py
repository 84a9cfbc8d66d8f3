"""Pattern + connectivity pruning of a VGG-style MNIST CNN: accuracy vs rate and group size.

Trains the dense model (cached), then for each configuration prunes it one-shot
(``xgen_mlir.compress.prune``) and fine-tunes with the structure masked
(``compress.finetune``), evaluating on the 10k MNIST test images. Every stage is cached under
``benchmarks/results/mnist_cache/`` (fine-tuning checkpoints every epoch), so an interrupted run
resumes. Writes ``compress_mnist.{json,md,png}`` and the 8x G=16 pruned model
``mnist_pruned.pt`` (+ ``mnist_pruned.json``, its sparsity description) for the compiler side.

    .venv/bin/python benchmarks/compress_mnist.py            # whole sweep (~20 min, 2 cores)
    .venv/bin/python benchmarks/compress_mnist.py --quick    # smoke run on a data subset
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch

from xgen_mlir import compress
from xgen_mlir.models.mnist import INPUT_SHAPE, load_mnist, mnist_vgg

RESULTS = Path(__file__).resolve().parent / "results"
CL = torch.channels_last


class Batches:
    """Shuffled (x, y) minibatches of in-memory tensors, a fresh order every epoch."""

    def __init__(self, x, y, batch: int, seed: int = 0) -> None:
        self.x, self.y, self.batch = x, y, batch
        self.gen = torch.Generator().manual_seed(seed)

    def __len__(self) -> int:
        return -(-len(self.x) // self.batch)

    def __iter__(self):
        order = torch.randperm(len(self.x), generator=self.gen)
        for i in range(0, len(order), self.batch):
            idx = order[i : i + self.batch]
            yield self.x[idx].contiguous(memory_format=CL), self.y[idx]


@torch.no_grad()
def accuracy(model, x, y, batch: int = 1000) -> float:
    model.eval()
    correct = sum(
        int(
            (
                model(x[i : i + batch].contiguous(memory_format=CL)).argmax(1) == y[i : i + batch]
            ).sum()
        )
        for i in range(0, len(x), batch)
    )
    return correct / len(x)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dense-epochs", type=int, default=3)
    ap.add_argument("--ft-epochs", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="5k training images, 1 epoch each")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    data = load_mnist()
    (xtr, ytr), (xte, yte) = data["train"], data["test"]
    if args.quick:
        xtr, ytr, args.dense_epochs, args.ft_epochs = xtr[:5000], ytr[:5000], 1, 1
    cache = args.out / ("mnist_cache_quick" if args.quick else "mnist_cache")
    cache.mkdir(parents=True, exist_ok=True)
    loader = Batches(xtr, ytr, 128)
    example = (torch.zeros(INPUT_SHAPE),)

    def test_acc(m) -> float:
        return accuracy(m, xte, yte)

    t0 = time.time()
    dense = mnist_vgg().to(memory_format=CL)
    compress.finetune(
        dense,
        loader,
        epochs=args.dense_epochs,
        lr=0.05,
        weight_decay=5e-4,
        checkpoint=cache / "dense.pt",
        eval_fn=test_acc,
    )
    dense_acc = test_acc(dense)
    print(f"dense test accuracy {dense_acc:.4f} ({time.time() - t0:.0f} s)")

    configs = [("patterns only", None, 16)] + [(f"{r}x", r, 16) for r in (4, 8, 16)]
    configs += [(f"8x G={g}", 8, g) for g in (1, 4, 8, 32)]
    configs += [("8x G=16 progressive", 8, 16)]
    rows = [
        {
            "config": "dense",
            "rate": 1.0,
            "group_size": None,
            "oneshot": dense_acc,
            "finetuned": dense_acc,
            "loss_points": 0.0,
            "seconds": None,
        }
    ]
    for name, rate, g in configs:
        key = name.replace(" ", "_").replace("=", "")
        done = cache / f"{key}.json"
        if done.exists():
            rows.append(json.loads(done.read_text()))
            print(f"{name}: cached {rows[-1]}")
            continue
        t = time.time()
        opts = {"group_size": g, "target_rate": rate}
        if "progressive" in name:
            model, _ = compress.progressive_prune(
                dense,
                example,
                loader,
                steps=3,
                epochs_per_step=1,
                lr=0.05,
                checkpoint_dir=cache / key,
                finetune_options={"weight_decay": 5e-4, "eval_fn": test_acc, "teacher": dense},
                **opts,
            )
            oneshot = None
        else:
            model = compress.prune(dense, example, **opts)
            oneshot = test_acc(compress.recalibrate_bn(model, loader, max_batches=20))
            compress.finetune(
                model,
                loader,
                epochs=args.ft_epochs,
                lr=0.05,
                weight_decay=5e-4,
                checkpoint=cache / f"{key}.pt",
                eval_fn=test_acc,
                teacher=dense,
            )
        compress.check_structure(model)
        acc = test_acc(model)
        desc = compress.describe(model)
        row = {
            "config": name,
            "rate": round(desc.compression_rate, 3),
            "group_size": g,
            "oneshot": oneshot,
            "finetuned": acc,
            "loss_points": round(100 * (dense_acc - acc), 3),
            "seconds": round(time.time() - t, 1),
        }
        print(row)
        if name == "8x" and not args.quick:
            model = model.to(memory_format=torch.contiguous_format)
            compress.save(model, args.out / "mnist_pruned.pt")
            desc.to_json(args.out / "mnist_pruned.json")
            print(desc.summary())
        done.write_text(json.dumps(row))
        rows.append(row)
    report(rows, args, dense_acc, time.time() - t0)


def report(rows: list[dict], args, dense_acc: float, seconds: float) -> None:
    stem = args.out / ("compress_mnist_quick" if args.quick else "compress_mnist")
    meta = {
        "dense_epochs": args.dense_epochs,
        "ft_epochs": args.ft_epochs,
        "threads": args.threads,
        "quick": args.quick,
        "wall_seconds_this_run": round(seconds),
        "config_seconds_total": round(sum(r["seconds"] or 0 for r in rows)),
    }
    Path(f"{stem}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = [
        "| config | conv weights fewer | G | one-shot acc (BN recal.) | fine-tuned acc "
        "| loss (points) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        one = "-" if r["oneshot"] is None else f"{100 * r['oneshot']:.2f}"
        lines.append(
            f"| {r['config']} | {r['rate']:.2f}x | {r['group_size'] or '-'} | {one} "
            f"| {100 * r['finetuned']:.2f} | {r['loss_points']:+.2f} |"
        )
    Path(f"{stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot")
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    by_rate = sorted(
        (r for r in rows if r["group_size"] in (None, 16) and "progressive" not in r["config"]),
        key=lambda r: r["rate"],
    )
    by_g = sorted(
        (r for r in rows if abs(r["rate"] - 8) < 0.5 and "progressive" not in r["config"]),
        key=lambda r: r["group_size"],
    )
    panels = (
        (axes[0], by_rate, "rate", "conv weights: x fewer (G=16)", "accuracy vs pruning rate"),
        (axes[1], by_g, "group_size", "filter group size G (at 8x)", "accuracy vs group size"),
    )
    for ax, sel, key, xlabel, title in panels:
        xs = [r[key] for r in sel]
        ax.plot(xs, [100 * r["finetuned"] for r in sel], "o-", c="C0", label="fine-tuned")
        ax.axhline(100 * dense_acc, ls="--", c="gray", label="dense")
        ax.axhline(100 * dense_acc - 0.3, ls=":", c="gray", label="dense - 0.3 points")
        ax.set(xscale="log", xlabel=xlabel, ylabel="fine-tuned test accuracy (%)", title=title)
        ax.set_xticks(xs, [f"{x:.3g}" for x in xs])
        ax.minorticks_off()
        one = [(r[key], 100 * r["oneshot"]) for r in sel if r["oneshot"] is not None]
        twin = ax.twinx()
        twin.plot(*zip(*one, strict=True), "s:", c="C1", label="one-shot + BN recal. (right)")
        twin.set(ylabel="one-shot accuracy (%)", ylim=(0, 100))
        lines = ax.get_legend_handles_labels()
        more = twin.get_legend_handles_labels()
        ax.legend(lines[0] + more[0], lines[1] + more[1], loc="lower left", fontsize=8)
    fig.tight_layout()
    fig.savefig(f"{stem}.png", dpi=110)
    print(f"wrote {stem}.png")


if __name__ == "__main__":
    os.environ.setdefault("TQDM_MININTERVAL", "5")
    main()
