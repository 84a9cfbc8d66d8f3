"""The learned cost model: (op, config, target) features -> predicted time relative to IREE's
own config, with LightGBM (gradient-boosted trees, as AutoTVM's and Ansor's models).

The target is ``log(seconds / baseline_seconds)``: relative times put a 0.05 ms matvec and a
5 ms GEMM on one scale, so what is learned on one op carries over to another (and, through
the target features in ``fusion.tunable.features``, to another host). Retrained from the
whole database after every batch; with too few records it returns nothing and the search
samples at random.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..diagnostics import optional_import
from ..tunedb import Record

MIN_RECORDS = 8


def _target(r: Record) -> float | None:
    if r.status != "ok" or not r.seconds or not r.baseline_seconds or not r.features:
        return None
    return math.log(r.seconds / r.baseline_seconds)


class CostModel:
    def __init__(self, seed: int = 0) -> None:
        self.names: list[str] = []
        self.model: Any = None
        self.seed = seed
        self.trained_on = 0

    def fit(self, records: Sequence[Record]) -> bool:
        rows = [(r.features, y) for r in records if (y := _target(r)) is not None]
        if len(rows) < MIN_RECORDS:
            self.model = None
            return False
        lightgbm = optional_import("lightgbm", "tune", "the tuning cost model (LightGBM)")
        self.names = sorted({k for f, _ in rows for k in f})
        x = np.array([[f.get(k, -1.0) for k in self.names] for f, _ in rows])
        target = np.array([t for _, t in rows])
        self.model = lightgbm.LGBMRegressor(
            n_estimators=120,
            learning_rate=0.08,
            num_leaves=15,
            min_child_samples=3,
            subsample=0.9,
            subsample_freq=1,
            random_state=self.seed,
            verbose=-1,
            # One thread: the training sets are tens to thousands of rows, and OpenMP
            # threads spinning beside the Ray workers would steal the cores being measured
            # (a 60-row fit with both cores busy: 0.29 s on all threads, 0.03 s on one).
            n_jobs=1,
        )
        self.model.fit(x, target)
        self.trained_on = len(rows)
        return True

    def predict(self, feats: Sequence[dict[str, float]]) -> np.ndarray | None:
        """Predicted log relative time per candidate (lower is faster), or None untrained."""
        if self.model is None or not feats:
            return None
        x = np.array([[f.get(k, -1.0) for k in self.names] for f in feats])
        return np.asarray(self.model.predict(x))


def pairwise_accuracy(pred: Sequence[float], true: Sequence[float]) -> float | None:
    """The fraction of pairs of candidates the prediction orders as the measurement does."""
    right = total = 0
    for i in range(len(true)):
        for j in range(i + 1, len(true)):
            if true[i] == true[j]:
                continue
            total += 1
            right += (pred[i] < pred[j]) == (true[i] < true[j])
    return right / total if total else None


def ranking_quality(
    records: Sequence[Record], holdout: float = 0.25, seed: int = 0
) -> dict[str, Any]:
    """Train on a random part of the ok records, and on the rest (held out, grouped per op
    signature) report how often the model orders two candidates of one op as measured, and
    whether its top pick is within 10% of the op's best held-out time."""
    ok = [r for r in records if _target(r) is not None]
    rng = random.Random(seed)
    rng.shuffle(ok)
    n_test = max(1, int(len(ok) * holdout))
    test, train = ok[:n_test], ok[n_test:]
    model = CostModel(seed)
    if not model.fit(train):
        return {"records": len(ok), "trained": False}
    by_op: dict[str, list[Record]] = defaultdict(list)
    for r in test:
        by_op[r.signature].append(r)
    accs, top_ok, ops = [], 0, 0
    for rs in by_op.values():
        if len(rs) < 2:
            continue
        pred = model.predict([r.features for r in rs])
        assert pred is not None
        true = [_target(r) or 0.0 for r in rs]
        acc = pairwise_accuracy(list(pred), true)
        if acc is not None:
            accs.append(acc)
        ops += 1
        best = min(true)
        top_ok += true[int(np.argmin(pred))] <= best + math.log(1.1)
    return {
        "records": len(ok),
        "trained": True,
        "train": len(train),
        "held_out": len(test),
        "ops_held_out": ops,
        "pairwise_accuracy": float(np.mean(accs)) if accs else None,
        "top1_within_10pct": top_ok / ops if ops else None,
    }
