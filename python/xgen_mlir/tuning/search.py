"""``xgen_mlir.tune``: search each tunable contraction's configs on this machine, keep the
measurements in the tuning database, and compile the model with the best.

The loop (AutoTVM's, on IREE's lowering configs): compile the model once to find its
tunable ops (``xgen-apply-tuning`` with ``collect``); then, until the budget is spent, pick an
op (first every op once, then by the time it still costs the model: its baseline time x its
count, divided by the trials it had), let the cost model rank its unmeasured configs, send
the best few and one at random (exploration) to a Ray worker as one batch, and store what
comes back, one transaction per trial. The hand rules' choice is the first candidate of its
op. Interrupted, it resumes: configs the database has for this host are not measured again.
"""

from __future__ import annotations

import json
import math
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..compiler import compile as compile_model
from ..errors import XGenError
from ..fusion.tunable import DATA_TILED, IREE_DEFAULT, Tunable, candidates, features
from ..target import cache_bytes, cpu_flags, host_threads, vector_bits
from ..tunedb import (
    CONFIRMED,
    MIN_GAIN,
    REJECTED_IN_MODEL,
    HostIdentity,
    Record,
    TuningDB,
    default_db_path,
)
from .cost_model import CostModel, ranking_quality
from .measure import MeasureSettings
from .workers import RayPool


@dataclass
class OpProgress:
    signature: str
    description: str
    count: int  # how many ops of the model have this signature
    tunable: Tunable
    module: str
    space: list[dict[str, Any]]
    prior: dict[str, Any]
    measured: set[str] = field(default_factory=set)
    baseline: float | None = None  # IREE's own config, seconds (median of its measurements)
    base_samples: list[float] = field(default_factory=list)
    best_speedup: float = 1.0  # over IREE's config timed beside it, of the best so far
    best_config: dict[str, Any] | None = None
    trials: int = 0
    failed: int = 0
    curve: list[tuple[int, float]] = field(default_factory=list)  # (trial, best speedup)
    dead: str = ""  # why the op cannot be measured

    @property
    def speedup(self) -> float:
        return self.best_speedup

    @property
    def best(self) -> float | None:
        """The best config's time, as IREE's time over its speedup (seconds)."""
        return self.baseline / self.best_speedup if self.baseline else None

    def consider(self, seconds: float | None, baseline: float | None, config: Any) -> None:
        if seconds and baseline and baseline / seconds > self.best_speedup:
            self.best_speedup, self.best_config = baseline / seconds, config

    def left(self) -> list[dict[str, Any]]:
        return [c for c in self.space if json.dumps(c, sort_keys=True) not in self.measured]


@dataclass
class TuneResult:
    db: Path
    host: str
    ops: list[OpProgress]
    trials: int
    seconds: float
    model_ms_before: float | None = None
    model_ms_after: float | None = None
    ranking: dict[str, Any] = field(default_factory=dict)
    timeline: list[tuple[float, int, float]] = field(default_factory=list)  # (s, trials, est)
    module: Any = None  # the model compiled with the tuned configs
    rejected: str = ""  # why the tuned configs were not kept, when the model was not faster

    def summary(self) -> str:
        lines = [f"tuned on {self.host}: {self.trials} trials in {self.seconds:.0f} s, {self.db}"]
        for op in sorted(self.ops, key=lambda o: -(o.baseline or 0) * o.count):
            base = f"{op.baseline * 1e3:.3f} ms" if op.baseline else "-"
            best = f"{op.best * 1e3:.3f} ms" if op.best else "-"
            lines.append(
                f"  {op.description:<44} x{op.count}  IREE {base:>10}  tuned {best:>10}  "
                f"{op.speedup:5.2f}x  ({op.trials} trials, {op.failed} failed){op.dead}"
            )
        if self.rejected:
            lines.append(f"  {self.rejected}")
        if self.model_ms_before and self.model_ms_after:
            lines.append(
                f"  model: {self.model_ms_before:.3f} ms untuned -> {self.model_ms_after:.3f} ms "
                f"tuned ({self.model_ms_before / self.model_ms_after:.2f}x)"
            )
        return "\n".join(lines)


def _key(config: dict[str, Any]) -> str:
    return json.dumps(config, sort_keys=True)


def collect_ops(
    model: Any,
    example_inputs: Any,
    target: str,
    db_path: Path,
    threads: int,
    compile_options: dict[str, Any],
) -> tuple[list[OpProgress], list[str], Any]:
    """Compile once without tuned records, collecting every tunable op."""
    module = compile_model(
        model,
        example_inputs,
        target,
        tuning_db=False,  # the module as it is untuned: the "before" of the model's time
        tuning_collect=True,
        tuning_threads=threads,
        **compile_options,
    )
    request = module.report.tuning
    if request is None:
        raise XGenError(
            f"target '{target}' has no xgen-apply-tuning step, or the dispatch steps did not run "
            f"({module.report.fusion_note or 'see module.report'}): nothing to tune"
        )
    facts_bits = vector_bits(cpu_flags())
    by_sig: dict[str, OpProgress] = {}
    for task in request.tasks:
        sig = task["signature"]
        if sig in by_sig:
            by_sig[sig].count += 1
            continue
        t: Tunable = task["tunable"]
        space = candidates(t, facts_bits)
        prior = task["prior"]
        if _key(prior) not in {_key(c) for c in space} and prior.get("kind") != "iree":
            space.insert(0, prior)
        by_sig[sig] = OpProgress(sig, task["description"], 1, t, task["module"], space, prior)
    from ..pipelines import load_pipeline

    backends = [f"--iree-hal-target-backends={b}" for b in load_pipeline(target).backends]
    return list(by_sig.values()), [*backends, *module.report.iree_flags], module


def _next_batch(
    op: OpProgress,
    model: CostModel,
    size: int,
    rng: random.Random,
    vector_bits_: int,
    threads: int,
    l2: int,
) -> list[dict[str, Any]]:
    left = op.left()
    if not left:
        return []
    batch: list[dict[str, Any]] = []
    if op.trials == 0:  # the rules' choice and data tiling are measured first
        for c in (op.prior, DATA_TILED):
            if c.get("kind") != "iree" and _key(c) not in op.measured and c not in batch:
                batch.append(c)
    pool = [c for c in left if _key(c) not in {_key(b) for b in batch}]
    feats = [features(op.tunable, c, vector_bits_, threads, l2) for c in pool]
    pred = model.predict(feats)
    if pred is None:
        rng.shuffle(pool)
        batch += pool[: size - len(batch)]
    else:
        order = sorted(range(len(pool)), key=lambda i: pred[i])
        greedy = max(1, size - len(batch) - 1)  # one slot explores
        batch += [pool[i] for i in order[:greedy]]
        rest = [pool[i] for i in order[greedy:]]
        if rest and len(batch) < size:
            batch.append(rng.choice(rest))
    return batch


def _priority(op: OpProgress) -> float:
    if op.dead or not op.left():
        return -1.0
    if op.trials == 0:
        return float("inf")
    return (op.baseline or 1e-6) * op.count / math.sqrt(op.trials)


def tune(
    model: Any,
    example_inputs: Sequence[Any] | Any | None = None,
    target: str = "cpu",
    *,
    budget_minutes: float = 10.0,
    db: str | Path | None = None,
    cluster: str | None = None,
    workers: int | None = None,
    batch_size: int = 6,
    max_trials: int | None = None,
    settings: MeasureSettings | None = None,
    progress: bool = True,
    report: str | Path | None = None,
    measure_model: bool = True,
    use_cost_model: bool = True,
    seed: int = 0,
    **compile_options: Any,
) -> TuneResult:
    """Tune ``model``'s contractions on this machine for ``budget_minutes`` (or
    ``max_trials``); records go to ``db`` (default ``$XGEN_TUNING_DB`` or
    ``~/.cache/xgen_mlir/tuning.db``). ``cluster``: a Ray address to spread measurements
    over (machines of this host's type); default: a local Ray with ``workers`` CPUs.
    ``use_cost_model=False``: candidates at random (the baseline a cost model must beat).
    Returns the per-op results, the model's time before and after, and the tuned module."""
    t_start = time.perf_counter()
    db_path = Path(db) if db is not None else default_db_path()
    settings = settings or MeasureSettings(threads=host_threads())
    rng = random.Random(seed)
    ops, flags, untuned_module = collect_ops(
        model, example_inputs, target, db_path, settings.threads, compile_options
    )
    tdb = TuningDB(db_path)
    host = HostIdentity.current(threads=settings.threads)
    tdb.add_host(host)
    for op in ops:  # resume: what this host measured before
        for r in tdb.records(host.key, op.signature):
            op.measured.add(_key(r.config))
            if r.config.get("kind") == "iree" and r.status == "ok":
                op.baseline = r.seconds
            if r.status == "ok" and r.config.get("kind") != "iree":
                op.consider(r.seconds, r.baseline_seconds, r.config)
    vbits, l2 = vector_bits(cpu_flags()), cache_bytes(2) or 0
    cost = CostModel(seed)
    if use_cost_model:
        cost.fit(tdb.records())
    budget_s = budget_minutes * 60.0
    trials = 0
    timeline: list[tuple[float, int, float]] = []
    bar = _bar(progress, max_trials, len(ops))
    pool = RayPool(cluster, workers, settings.threads) if ops else None
    try:
        busy: set[str] = set()
        while pool is not None:
            elapsed = time.perf_counter() - t_start
            out_of_budget = elapsed > budget_s or (max_trials is not None and trials >= max_trials)
            while not out_of_budget and len(pool.inflight) < pool.capacity:
                free = [o for o in ops if o.signature not in busy and _priority(o) >= 0]
                if not free:
                    break
                op = max(free, key=_priority)
                size = batch_size
                if max_trials is not None:
                    size = min(size, max_trials - trials)
                batch = _next_batch(op, cost, size, rng, vbits, settings.threads, l2)
                if not batch:
                    op.dead = op.dead or " (space exhausted)"
                    continue
                for c in batch:
                    op.measured.add(_key(c))
                busy.add(op.signature)
                pool.submit(op, op.module, batch, flags, settings, op.tunable.elem_bits)
            if not pool.inflight:
                break
            for op, measured in pool.wait(timeout=5.0):
                busy.discard(op.signature)
                trials += _record(tdb, op, measured, host, vbits, l2)
                if use_cost_model:
                    cost.fit(tdb.records())
                timeline.append((time.perf_counter() - t_start, trials, _estimate(ops)))
                if bar is not None:
                    bar.n = trials
                    bar.set_postfix_str(_postfix(ops, budget_s - elapsed), refresh=True)
        if pool is not None:
            _confirm(pool, tdb, ops, host, flags, settings, vbits, l2)
    finally:
        if pool is not None:
            pool.close()
        if bar is not None:
            bar.close()
    result = TuneResult(
        db_path, host.describe(), ops, trials, time.perf_counter() - t_start, timeline=timeline
    )
    result.ranking = ranking_quality(tdb.records(), seed=seed)
    tdb.close()
    result.module = compile_model(
        model,
        example_inputs,
        target,
        tuning_db=db_path,
        tuning_threads=settings.threads,
        **compile_options,
    )
    if measure_model:
        inputs = example_inputs
        if inputs is None:
            inputs = untuned_module.random_inputs(seed)
        before, after = time_models(untuned_module, result.module, inputs)
        result.model_ms_before, result.model_ms_after = before, after
        applied = result.module.report.tuning.applied if result.module.report.tuning else []
        if applied and after * MIN_GAIN > before:
            # The model is the arbiter: configs that won alone but not in the model (a
            # producer that now packs, a fusion IREE no longer forms) are not applied.
            with TuningDB(db_path) as tdb:
                for signature, _, config in applied:
                    tdb.reject(host, signature, config, REJECTED_IN_MODEL)
            result.rejected = (
                f"the tuned configs of {len(applied)} op(s) made the model "
                f"{before:.3f} -> {after:.3f} ms: not applied (kept in the database, marked)"
            )
            result.module = untuned_module
    result.seconds = time.perf_counter() - t_start
    if report is not None:
        from .report import write_report

        write_report(result, Path(report))
    return result


CONFIRM_TOP = 3


def _confirm(
    pool: RayPool,
    tdb: TuningDB,
    ops: list[OpProgress],
    host: HostIdentity,
    flags: list[str],
    settings: MeasureSettings,
    vbits: int,
    l2: int,
) -> None:
    """Measure each op's best few configs again, beside IREE's, with twice the rounds: the
    best of many noisy measurements is partly noise (a batch whose IREE time came out slow
    makes everything in it look fast), and only configs confirmed here are applied."""
    strong = replace(settings, rounds=max(7, 2 * settings.rounds))
    for op in ops:
        ranked = sorted(
            (
                r
                for r in tdb.records(host.key, op.signature)
                if r.config.get("kind") != "iree" and (r.speedup or 0) >= MIN_GAIN
            ),
            key=lambda r: -(r.speedup or 0),
        )
        top = [r.config for r in ranked[:CONFIRM_TOP]]
        if top:
            pool.submit(op, op.module, top, flags, strong, op.tunable.elem_bits)
    while pool.inflight:
        for op, measured in pool.wait(timeout=5.0):
            op.best_speedup, op.best_config = 1.0, None
            _record(tdb, op, measured, host, vbits, l2, detail=CONFIRMED)


def _record(
    tdb: TuningDB,
    op: OpProgress,
    result: dict[str, Any],
    driver_host: HostIdentity,
    vbits: int,
    l2: int,
    detail: str = "",
) -> int:
    """Store one batch's measurements (one transaction each); returns how many."""
    if result.get("error"):
        op.dead = f" (not measurable: {result['error'][:120]})"
        return 0
    host = HostIdentity.from_json(result["host"]) if result.get("host") else driver_host
    n = 0
    base_seen = None
    for m in result["results"]:
        feats = features(op.tunable, m["config"], vbits, host.threads, l2)
        record = Record(
            op.signature,
            m["config"],
            m["status"],
            m["seconds"],
            m["baseline_seconds"],
            description=op.description,
            features=feats,
            detail=m["detail"] or detail,
        )
        tdb.add(record, host)
        n += 1
        op.trials += 1
        if m["status"] != "ok":
            op.failed += 1
            continue
        base_seen = m["baseline_seconds"]
        op.consider(m["seconds"], m["baseline_seconds"], m["config"])
    if base_seen is not None:
        base_feats = features(op.tunable, IREE_DEFAULT, vbits, host.threads, l2)
        tdb.add(
            Record(
                op.signature,
                dict(IREE_DEFAULT),
                "ok",
                base_seen,
                base_seen,
                description=op.description,
                features=base_feats,
            ),
            host,
        )
        op.base_samples.append(base_seen)
        op.baseline = statistics.median(op.base_samples)
    op.curve.append((op.trials, op.speedup))
    return n


def _estimate(ops: list[OpProgress]) -> float:
    """The model's contraction time with the best configs so far, relative to IREE's."""
    base = sum((o.baseline or 0) * o.count for o in ops)
    best = sum((o.best or o.baseline or 0) * o.count for o in ops)
    return base / best if best else 1.0


def _postfix(ops: list[OpProgress], left_s: float) -> str:
    return f"contractions {_estimate(ops):.2f}x, {max(0, left_s) / 60:.1f} min left"


def _bar(on: bool, total: int | None, n_ops: int) -> Any:
    if not on:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=f"tuning {n_ops} ops", unit="trial", file=sys.stderr)


def time_models(
    before: Any, after: Any, example_inputs: Any, rounds: int = 10, min_block_s: float = 0.05
) -> tuple[float, float]:
    """Median ms per call of two modules on the same inputs, interleaved round by round."""
    inputs = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    fns = {"before": lambda: before(*inputs), "after": lambda: after(*inputs)}
    for fn in fns.values():
        for _ in range(3):
            fn()
    t0 = time.perf_counter()
    fns["before"]()
    block = max(1, int(min_block_s / max(time.perf_counter() - t0, 1e-6)))
    samples: dict[str, list[float]] = {k: [] for k in fns}
    names = list(fns)
    for r in range(rounds):
        for name in names[r % 2 :] + names[: r % 2]:
            t0 = time.perf_counter()
            for _ in range(block):
                fns[name]()
            samples[name].append((time.perf_counter() - t0) / block * 1e3)
    return statistics.median(samples["before"]), statistics.median(samples["after"])
