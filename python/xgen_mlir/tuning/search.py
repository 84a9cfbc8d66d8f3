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
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

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


APPLIED, REJECTED, NOT_TRIED = "applied", "rejected in the model", "not applied"


@dataclass
class Verdict:
    """What became of one op signature's best confirmed config in the model."""

    signature: str
    description: str
    count: int
    status: str  # APPLIED, REJECTED or NOT_TRIED
    why: str  # the measured model times and ratio, or why it was never tried
    config: dict[str, Any] | None = None
    standalone: float = 1.0  # its confirmed speedup over IREE's config, alone
    expected_gain: float = 0.0  # share of the model's time x (1 - 1 / standalone)
    ratio: float | None = None  # model time with it / without it, when timed in this run


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
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # per signature, in the model
    model_checks: int = 0  # model compiles timed against the best model so far
    check_log: list[dict[str, Any]] = field(default_factory=list)  # each check, groups too
    model_timing: ModelTiming | None = None  # untuned vs tuned model, interleaved rounds
    choices: list[Any] = field(default_factory=list)  # tuning/choices.py: per conv signature

    def summary(self) -> str:
        lines = [f"tuned on {self.host}: {self.trials} trials in {self.seconds:.0f} s, {self.db}"]
        for op in sorted(self.ops, key=lambda o: -(o.baseline or 0) * o.count):
            base = f"{op.baseline * 1e3:.3f} ms" if op.baseline else "-"
            best = f"{op.best * 1e3:.3f} ms" if op.best else "-"
            lines.append(
                f"  {op.description:<44} x{op.count}  IREE {base:>10}  tuned {best:>10}  "
                f"{op.speedup:5.2f}x  ({op.trials} trials, {op.failed} failed){op.dead}"
            )
        if self.choices:
            from .choices import summary as choices_summary

            lines += ["  " + line for line in choices_summary(self.choices).splitlines()]
        for v in sorted(self.verdicts.values(), key=lambda v: (v.status, -v.expected_gain)):
            lines.append(f"  {v.description:<44} x{v.count}  {v.status}: {v.why}")
        if self.verdicts:
            lines.append(f"  {self.model_checks} model compile(s) timed against the best so far")
        if self.model_ms_before and self.model_ms_after:
            noise = f" +- {self.model_timing.noise * 100:.1f}%" if self.model_timing else ""
            lines.append(
                f"  model: {self.model_ms_before:.3f} ms untuned -> {self.model_ms_after:.3f} ms "
                f"tuned ({self.model_ms_before / self.model_ms_after:.2f}x{noise})"
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
    runner: str | None = None,
    batch_size: int = 6,
    max_trials: int | None = None,
    settings: MeasureSettings | None = None,
    progress: bool = True,
    report: str | Path | None = None,
    measure_model: bool = True,
    use_cost_model: bool = True,
    seed: int = 0,
    model_check_share: float = 0.5,
    choices_share: float = 0.25,
    max_model_checks: int | None = None,
    model_timer: ModelTimer | None = None,
    **compile_options: Any,
) -> TuneResult:
    """Tune ``model``'s contractions on this machine for ``budget_minutes`` (or
    ``max_trials``); records go to ``db`` (default ``$XGEN_TUNING_DB`` or
    ``~/.cache/xgen_mlir/tuning.db``). ``cluster``: a Ray address to spread measurements
    over (machines of this host's type); default: a local Ray with ``workers`` CPUs.
    ``runner`` (``tuning.runners``): "qemu" or "ssh://user@board" measures on that device
    instead, records under its identity; the model is not run here then (no checks in the
    model, no algorithm choices), so configs stay confirmed alone.
    ``use_cost_model=False``: candidates at random (the baseline a cost model must beat).
    The last ``model_check_share`` of the budget (at most ``max_model_checks`` model
    compiles) decides, op signature by signature, which confirmed configs make the model
    faster (``check_in_model``; ``model_timer`` replaces its timing, for tests);
    ``measure_model=False`` skips that, and only configs accepted in an earlier run apply.
    First, ``choices_share`` of the budget the first compile leaves (all of it where no
    contraction is left to search) goes to the algorithm
    choices (the generated GEMM kernel, Winograd, oneDNN per conv and Linear layer, largest
    first; the model with them is kept only if faster): on conv nets and transformers they
    are most of the gain, a kernel that takes a layer leaves its contraction configs unused,
    and on a big model the search and its checks (a model compile each) would otherwise use
    up the budget. The contraction configs are then checked against the model with the
    choices.
    Returns the per-op results and verdicts, the model's time before and after, and the
    tuned module."""
    t_start = time.perf_counter()
    db_path = Path(db) if db is not None else default_db_path()
    settings = settings or MeasureSettings(threads=host_threads())
    foreign = runner not in (None, "", "local")
    measure_model = measure_model and not foreign
    rng = random.Random(seed)
    ops, flags, untuned_module = collect_ops(
        model, example_inputs, target, db_path, settings.threads, compile_options
    )
    compile_s = time.perf_counter() - t_start  # what one model compile costs, about
    tdb = TuningDB(db_path)
    from .runners import make_runner

    host = make_runner(runner).identity(settings.threads)
    tdb.add_host(host)
    if foreign:  # compile(tuning_device=runner) finds this identity's records by the name
        assert runner is not None
        tdb.name_device(runner, host)
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
    # Algorithm choices first (the generated GEMM kernel, Winograd, oneDNN per layer:
    # tuning/choices.py), in choices_share of what the first compile left of the budget
    # (GPT-2's took 73 s of 5 minutes): they are most of the gain on conv nets and
    # transformers alike, and a kernel that takes a layer leaves its contraction configs
    # unused. The model with the choices is the baseline the contraction configs are checked
    # against; the search leaves the end of the budget to those checks.
    # With no contraction left to search (every Linear layer and conv in a generated kernel
    # or a library: MiniLM on an AVX2 host) the choices get the whole budget: a 3-minute tune
    # ended after 64 s with its changed choices rejected, "not checked in the model".
    share = 0.0 if foreign else (choices_share if ops else 1.0)
    elapsed_s = time.perf_counter() - t_start
    kept_s = elapsed_s + max(0.0, budget_s - elapsed_s) * share
    inputs = example_inputs if example_inputs is not None else untuned_module.random_inputs(seed)
    baseline: Any = untuned_module
    choices: list[Any] = []
    if not foreign:
        from .choices import tune_choices

        tdb.close()  # the choices write their own records
        choices, baseline = tune_choices(
            untuned_module,
            model,
            example_inputs,
            inputs,
            target,
            db_path,
            settings,
            deadline=t_start + kept_s,
            progress=progress,
            compile_options=compile_options,
        )
        tdb = TuningDB(db_path)
        if use_cost_model:
            cost.fit(tdb.records())
    # the choices may have run past their share: the rest is split from where they ended
    start_s = max(kept_s, time.perf_counter() - t_start)
    checks_end_s = budget_s
    search_s = start_s + (budget_s - start_s) * (1.0 - model_check_share if measure_model else 1.0)
    trials = 0
    timeline: list[tuple[float, int, float]] = []
    bar = _bar(progress, max_trials, len(ops)) if max_trials != 0 else None
    pool = RayPool(cluster, workers, settings.threads, runner) if ops and max_trials != 0 else None
    try:
        busy: set[str] = set()
        while pool is not None:
            elapsed = time.perf_counter() - t_start
            out_of_budget = elapsed > search_s or (max_trials is not None and trials >= max_trials)
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
                    bar.set_postfix_str(_postfix(ops, search_s - elapsed), refresh=True)
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
    result.choices = choices
    tdb.close()
    if measure_model:
        check = check_in_model(
            model,
            example_inputs,
            inputs,
            target,
            db_path,
            ops,
            baseline,
            threads=settings.threads,
            deadline=t_start + checks_end_s,
            compile_s=compile_s,
            max_checks=max_model_checks,
            timer=model_timer,
            progress=progress,
            compile_options=compile_options,
        )
        result.module, result.verdicts, result.check_log = check
        result.model_checks = sum(1 for c in result.check_log if c["compiled"])
        _explain(result.module, ops, result.verdicts)
        if result.module is not untuned_module:
            timer = model_timer or _default_timer
            xs = inputs if isinstance(inputs, (tuple, list)) else (inputs,)
            final = timer(untuned_module, result.module, xs).merge(
                timer(untuned_module, result.module, xs)
            )
            result.model_ms_before, result.model_ms_after = final.current_ms, final.candidate_ms
            result.model_timing = final
            if final.slower():  # the whole is the last check: one of the wins was noise
                result.module = _undo_this_run(
                    model,
                    example_inputs,
                    target,
                    db_path,
                    host,
                    result,
                    final,
                    baseline,
                    compile_options,
                )
                _explain(result.module, ops, result.verdicts)
    else:  # the records of the machine measured on: this host's, or the runner's device's
        result.module = compile_model(
            model,
            example_inputs,
            target,
            tuning_db=db_path,
            tuning_threads=settings.threads,
            tuning_device=runner if foreign else None,
            **compile_options,
        )
    result.seconds = time.perf_counter() - t_start
    if report is not None:
        from .report import write_report

        write_report(result, Path(report))
    return result


CONFIRM_TOP = 3
# The detail of a record confirmed alone (measured again beside IREE's config), waiting for
# its check in the model; the check turns it into tunedb.CONFIRMED (what compile() applies)
# or tunedb.REJECTED_IN_MODEL (kept for the cost model, never applied).
CONFIRMED_ALONE = "confirmed alone, not yet checked in the model"


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
    makes everything in it look fast), and only configs confirmed here (``CONFIRMED_ALONE``)
    go on to the checks in the model."""
    strong = replace(settings, rounds=max(7, 2 * settings.rounds))
    for op in ops:
        ranked = sorted(
            (
                r
                for r in tdb.records(host.key, op.signature)
                if r.config.get("kind") != "iree"
                and (r.speedup or 0) >= MIN_GAIN
                and not r.detail  # confirmed, or decided in the model, in an earlier run
            ),
            key=lambda r: -(r.speedup or 0),
        )
        top = [r.config for r in ranked[:CONFIRM_TOP]]
        if top:
            pool.submit(op, op.module, top, flags, strong, op.tunable.elem_bits)
    while pool.inflight:
        for op, measured in pool.wait(timeout=5.0):
            op.best_speedup, op.best_config = 1.0, None
            typical = _against_typical_baseline(op, measured)
            _record(tdb, op, typical, host, vbits, l2, detail=CONFIRMED_ALONE)


def _against_typical_baseline(op: OpProgress, measured: dict[str, Any]) -> dict[str, Any]:
    """A confirming batch's results with IREE's config no slower than its median over the
    op's batches (this one included): a batch whose baseline came out slow makes its
    candidates look fast, and the confirmation would pass them for that. MobileNetV2's
    1x1 convs on an Intel Xeon: IREE's config 0.225 ms in one confirming batch against
    0.145-0.155 in six others, and the 1.69x "confirmed" there was 1.0x in the model. The
    batch's own baseline stays where it is the faster (a batch measured in a quiet moment).
    (Every batch of an op times the same module the same way, so the samples compare.)"""
    if measured.get("error"):
        return measured
    results = measured.get("results", [])
    batch = [m["baseline_seconds"] for m in results if m["status"] == "ok"]
    if not batch:
        return measured
    typical = statistics.median([*op.base_samples, batch[-1]])
    capped = []
    for m in results:
        base = m.get("baseline_seconds")
        if m["status"] == "ok" and base is not None and base > typical:
            m = {**m, "baseline_seconds": typical}
        capped.append(m)
    return {**measured, "results": capped}


# The checks in the model: rounds of the interleaved timing, and the margin, in standard
# errors of the measured log ratio (its spread over the rounds), by which a candidate model
# must beat the best so far.
IN_MODEL_ROUNDS = 30
IN_MODEL_Z = 2.0
# Each timed block of a model's calls follows one untimed call and holds at least this many:
# the first calls after switching models find the other's data in the caches. BERT-base bf16,
# rows against columns (docs/measurements.md): 1.04-1.08x timed in blocks of one call,
# 1.09-1.11x with the untimed call and two or more, as in blocks of 0.5 s.
MIN_CALLS_PER_BLOCK = 3
WRONG_IN_MODEL = 1e-3  # relative to the output's scale: the standalone check is tighter


@dataclass
class ModelTiming:
    """Two models timed in interleaved rounds; per round, log(candidate / current)."""

    current_ms: float
    candidate_ms: float
    log_ratios: list[float]

    @property
    def ratio(self) -> float:
        """The candidate's time over the current model's (median of the rounds)."""
        return math.exp(statistics.median(self.log_ratios)) if self.log_ratios else 1.0

    @property
    def noise(self) -> float:
        """Standard error of the median log ratio, from the rounds' spread (MAD)."""
        n = len(self.log_ratios)
        if n < 3:
            return math.inf
        med = statistics.median(self.log_ratios)
        mad = statistics.median(abs(x - med) for x in self.log_ratios)
        return 1.4826 * mad * 1.2533 / math.sqrt(n)

    def faster(self) -> bool:
        """Faster beyond the noise: the ratio's upper bound (IN_MODEL_Z errors) under 1."""
        return math.log(self.ratio) + IN_MODEL_Z * self.noise < 0

    def slower(self) -> bool:
        """Slower beyond the noise: the ratio's lower bound over 1."""
        return math.log(self.ratio) - IN_MODEL_Z * self.noise > 0

    def wins(self, min_gain: float) -> bool:
        """Faster beyond the noise, and by at least ``min_gain`` (the rounds' median)."""
        return self.faster() and self.ratio * min_gain <= 1

    def merge(self, other: ModelTiming) -> ModelTiming:
        return ModelTiming(
            (self.current_ms + other.current_ms) / 2,
            (self.candidate_ms + other.candidate_ms) / 2,
            self.log_ratios + other.log_ratios,
        )

    def describe(self) -> str:
        return (
            f"model {self.current_ms:.3f} -> {self.candidate_ms:.3f} ms, ratio "
            f"{self.ratio:.3f} +- {self.noise * 100:.1f}% ({len(self.log_ratios)} rounds)"
        )


ModelTimer = Callable[[Any, Any, Any], ModelTiming]


def check_in_model(
    model: Any,
    example_inputs: Any,
    inputs: Any,
    target: str,
    db_path: Path,
    ops: list[OpProgress],
    untuned: Any,
    *,
    threads: int,
    deadline: float,
    compile_s: float,
    max_checks: int | None = None,
    timer: ModelTimer | None = None,
    progress: bool = True,
    compile_options: dict[str, Any] | None = None,
) -> tuple[Any, dict[str, Verdict], list[dict[str, Any]]]:
    """Decide, op signature by signature, whether its best config confirmed alone makes the
    model faster: compile the model with the configs accepted so far plus the candidate's,
    time it against the best model so far (interleaved rounds), accept it only if faster
    beyond the measured noise; a loser is marked ``REJECTED_IN_MODEL`` (kept for the cost
    model, never applied), a winner ``CONFIRMED`` (what ``compile()`` applies), each in its
    own transaction, so a rerun does not check it again. Candidates go by expected gain
    (the op's time in the model x (1 - 1 / its speedup alone)). When the budget (until
    ``deadline``, at least one check) does not allow one model compile per candidate, they
    are tried in groups of neighbours in that order, and a group that loses is split in
    halves. Returns the best model, the verdicts and a log of the checks (one per model
    compile, groups too)."""
    timer = timer or _default_timer
    compile_options = compile_options or {}
    host = HostIdentity.current(threads=threads)
    xs = inputs if isinstance(inputs, (tuple, list)) else (inputs,)
    model_s = _call_seconds(untuned, xs)
    accepted: dict[str, Record] = {}
    verdicts: dict[str, Verdict] = {}
    pending: list[tuple[Record, OpProgress, float]] = []
    with TuningDB(db_path) as tdb:
        for op in ops:
            recs = [
                r
                for r in tdb.records(host.key, op.signature)
                if r.config.get("kind") != "iree" and r.speedup is not None
            ]
            won = _top(r for r in recs if r.detail == CONFIRMED)
            lost = _top(r for r in recs if r.detail.startswith(REJECTED_IN_MODEL))
            waiting = _top(
                r
                for r in recs
                if r.detail == CONFIRMED_ALONE
                and (r.speedup or 0) >= max(MIN_GAIN, (won.speedup or 0) if won else 0)
            )
            v = Verdict(op.signature, op.description, op.count, NOT_TRIED, "")
            if won is not None:
                accepted[op.signature] = won
                v.status, v.config, v.standalone = APPLIED, won.config, won.speedup or 1.0
                v.why = "accepted in the model by an earlier run"
            elif lost is not None:
                v.status, v.config, v.standalone = REJECTED, lost.config, lost.speedup or 1.0
                v.why = f"by an earlier run: {lost.detail[len(REJECTED_IN_MODEL) :].lstrip(': ')}"
            elif op.dead:
                v.why = op.dead.strip(" ()")
            else:
                v.why = (
                    f"no config {MIN_GAIN:.2f}x faster than IREE's alone, confirmed "
                    f"(best in the search {op.speedup:.2f}x)"
                )
            if waiting is not None:
                speedup = waiting.speedup or 1.0
                gain = (op.baseline or 0) * op.count * (1 - 1 / speedup) / model_s
                if won is None:
                    v.config, v.standalone = waiting.config, speedup
                    v.status, v.why = NOT_TRIED, "the budget ran out before its check in the model"
                v.expected_gain = gain
                pending.append((waiting, op, gain))
            verdicts[op.signature] = v
    pending.sort(key=lambda p: -p[2])
    current = untuned
    if accepted:  # the configs an earlier run accepted are the model to beat
        current = _compile_with(
            model, example_inputs, target, host, accepted, compile_options, db_path
        )
    # a compile, then timing: one set of rounds, more (up to the compile's time) if undecided
    per_check_s = (
        1.5 * compile_s + 2 * IN_MODEL_ROUNDS * max(0.02, (1 + MIN_CALLS_PER_BLOCK) * model_s) + 1.0
    )
    affordable = max(1, int((deadline - time.perf_counter()) / per_check_s))
    if max_checks is not None:
        affordable = min(affordable, max_checks)
    size = 1 if len(pending) <= affordable else math.ceil(len(pending) / max(1, affordable // 2))
    queue = [pending[i : i + size] for i in range(0, len(pending), size)]
    bar = _bar_checks(progress, len(queue))
    checks = 0
    log: list[dict[str, Any]] = []
    try:
        while queue:
            if max_checks is not None and checks >= max_checks:
                break
            if checks and time.perf_counter() + per_check_s > deadline:
                break
            group = queue.pop(0)
            t0 = time.perf_counter()
            trial = {**accepted, **{op.signature: rec for rec, op, _ in group}}
            timing, why = None, ""
            try:
                module = _compile_with(
                    model, example_inputs, target, host, trial, compile_options, db_path
                )
            except XGenError as e:
                why = f"the model does not compile with it: {str(e).splitlines()[0][:200]}"
            else:
                checks += 1
                dropped = _tuning_dropped(module)
                if dropped is not None:  # IREE took the model only without the configs
                    why = f"the model does not compile with it: IREE rejected it ({dropped})"
            if not why:
                err = _relative_error(module, untuned, xs)
                if err > WRONG_IN_MODEL:
                    why = f"wrong numbers in the model (relative error {err:.2g})"
                else:
                    cap = max(3.0, time.perf_counter() - t0)
                    timing = in_model_timing(current, module, xs, cap, deadline, timer)
                    why = timing.describe()
            log.append(
                {
                    "ops": [op.description for _, op, _ in group],
                    "signatures": [op.signature for _, op, _ in group],
                    "compiled": timing is not None or not why.startswith("the model does not"),
                    "ratio": timing.ratio if timing is not None else None,
                    "noise": timing.noise if timing is not None else None,
                    "rounds": len(timing.log_ratios) if timing is not None else 0,
                    "current_ms": timing.current_ms if timing is not None else None,
                    "candidate_ms": timing.candidate_ms if timing is not None else None,
                    "accepted": timing is not None and timing.faster(),
                    "why": why,
                    "seconds": time.perf_counter() - t0,
                }
            )
            together = f", with {len(group) - 1} other signature(s)" if len(group) > 1 else ""
            with TuningDB(db_path) as tdb:
                if timing is not None and timing.faster():
                    current = module
                    for rec, op, _ in group:
                        accepted[op.signature] = rec
                        tdb.add(replace(rec, detail=CONFIRMED))
                        v = verdicts[op.signature]
                        v.status, v.config, v.standalone = APPLIED, rec.config, rec.speedup or 1.0
                        v.why, v.ratio = why + together, timing.ratio
                elif len(group) > 1:  # one of them may be the loser: split
                    half = len(group) // 2
                    queue[:0] = [group[:half], group[half:]]
                    if bar is not None:
                        bar.total += 2
                else:
                    rec, op, _ = group[0]
                    tdb.add(replace(rec, detail=f"{REJECTED_IN_MODEL}: {why}"))
                    v = verdicts[op.signature]
                    v.ratio = timing.ratio if timing is not None else None
                    if op.signature not in accepted:
                        v.status, v.config, v.standalone = REJECTED, rec.config, rec.speedup or 1.0
                        v.why = why
                    else:
                        v.why += f" (a config faster alone was rejected in the model: {why})"
            spent = time.perf_counter() - t0
            per_check_s = spent if checks <= 1 else (per_check_s + spent) / 2
            if bar is not None:
                bar.update(1)
                bar.set_postfix_str(
                    f"{len(accepted)} accepted, {max(0, deadline - time.perf_counter()) / 60:.1f}"
                    " min left",
                    refresh=True,
                )
    finally:
        if bar is not None:
            bar.close()
    return current, verdicts, log


def _tuning_dropped(module: Any) -> str | None:
    """Why IREE took ``module`` only without its ``xgen-apply-tuning`` step (the compile
    dropped that optional step and went on untuned, with a warning), else None."""
    dropped = getattr(module.report, "dropped_steps", None) or {}
    return next((why for step, why in dropped.items() if "xgen-apply-tuning" in step), None)


def _default_timer(current: Any, candidate: Any, xs: Any) -> ModelTiming:
    return time_models_paired(current, candidate, xs, IN_MODEL_ROUNDS, 0.02)


def in_model_timing(
    current: Any,
    candidate: Any,
    xs: Any,
    cap_s: float,
    deadline: float = math.inf,
    timer: ModelTimer | None = None,
) -> ModelTiming:
    """``candidate`` against ``current`` in paired rounds (per round, the log of their times'
    ratio: a slow stretch of a shared machine slows both). Two sets at least: one set's
    verdict at 2 errors was a false win often enough on a loaded host (its rounds' errors are
    not normal). Then, while the verdict is within the noise, more sets, for at most
    ``cap_s`` (callers give a compile's time: timing is cheap beside it, and the error
    shrinks as 1/sqrt(n)) and not past ``deadline``."""
    timer = timer or _default_timer
    start = time.perf_counter()
    timing = timer(current, candidate, xs).merge(timer(current, candidate, xs))
    while not (timing.faster() or timing.slower()):
        now = time.perf_counter()
        if now - start > cap_s or now > deadline:
            break
        timing = timing.merge(timer(current, candidate, xs))
    return timing


def _undo_this_run(
    model: Any,
    example_inputs: Any,
    target: str,
    db_path: Path,
    host: HostIdentity,
    result: TuneResult,
    final: ModelTiming,
    untuned: Any,
    compile_options: dict[str, Any],
) -> Any:
    """The tuned model as a whole was slower than the untuned one beyond the noise: the
    configs this run accepted go back to confirmed alone (undecided: a later run checks them
    again) and the model keeps only what earlier runs accepted."""
    kept: dict[str, Record] = {}
    with TuningDB(db_path) as tdb:
        for sig, v in result.verdicts.items():
            if v.status != APPLIED or v.config is None:
                continue
            if v.ratio is None:  # accepted by an earlier run
                kept.update(
                    {r.signature: r for r in tdb.records(host.key, sig) if r.config == v.config}
                )
                continue
            tdb.reject(host, sig, v.config, CONFIRMED_ALONE)
            v.status, v.ratio = NOT_TRIED, None
            v.why = (
                f"won its check ({v.why}), but the tuned model as a whole was slower than the "
                f"untuned one ({final.describe()}): undecided, checked again by the next run"
            )
    if not kept:
        return untuned
    return _compile_with(model, example_inputs, target, host, kept, compile_options, db_path)


def _top(records: Any) -> Record | None:
    return max(records, key=lambda r: r.speedup or 0, default=None)


def _compile_with(
    model: Any,
    example_inputs: Any,
    target: str,
    host: HostIdentity,
    records: dict[str, Record],
    compile_options: dict[str, Any],
    db_path: Path | None = None,
) -> Any:
    """The model compiled with exactly these contraction records, and the algorithm choices
    ``db_path`` holds for ``host`` (decided before the contraction checks: the baseline
    they are checked against has them), from a scratch database."""
    with tempfile.TemporaryDirectory(prefix="xgen-tune-") as tmp:
        path = Path(tmp) / "trial.db"
        with TuningDB(path) as scratch:
            for r in records.values():
                scratch.add(replace(r, host_key="", detail=CONFIRMED), host)
            if db_path is not None:
                with TuningDB(db_path) as tdb:
                    for recs in tdb.choices(host).values():
                        for r in recs:
                            scratch.add(replace(r, host_key=""), host)
        return compile_model(
            model,
            example_inputs,
            target,
            tuning_db=path,
            tuning_threads=host.threads,
            **compile_options,
        )


def _outputs(module: Any, xs: Sequence[Any]) -> list[np.ndarray]:
    out = module(*xs)
    return [np.asarray(o) for o in (out if isinstance(out, (tuple, list)) else [out])]


def _relative_error(module: Any, reference: Any, xs: Sequence[Any]) -> float:
    """Largest difference to the reference's outputs over the largest |output|."""
    got, ref = _outputs(module, xs), _outputs(reference, xs)
    if len(got) != len(ref) or any(g.shape != r.shape for g, r in zip(got, ref, strict=True)):
        return math.inf
    err = 0.0
    for g, r in zip(got, ref, strict=True):
        g64, r64 = g.astype(np.float64), r.astype(np.float64)
        scale = max(float(np.max(np.abs(r64))) if r64.size else 0.0, 1e-30)
        diff = float(np.max(np.abs(g64 - r64))) if r64.size else 0.0
        err = max(err, diff / scale if math.isfinite(diff) else math.inf)
    return err


def _call_seconds(module: Any, xs: Sequence[Any], calls: int = 5) -> float:
    module(*xs)
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        module(*xs)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _explain(module: Any, ops: list[OpProgress], verdicts: dict[str, Verdict]) -> None:
    """``module.report.tuning``'s untuned ops say what became of their configs in the model
    (rejected there, with the measured ratio, or never tried and why)."""
    request = getattr(module.report, "tuning", None)
    if request is None:
        return
    applied = {s for s, _, _ in request.applied}
    left: dict[str, list[Verdict]] = {}
    for op in ops:
        if op.signature not in applied and op.signature in verdicts:
            left.setdefault(op.description, []).extend([verdicts[op.signature]] * op.count)
    untuned = []
    for description, why in request.untuned:
        if why == "no record for this host" and left.get(description):
            v = left[description].pop(0)
            status = NOT_TRIED if v.status == APPLIED else v.status
            why = f"{status}: {v.why}"
        untuned.append((description, why))
    request.untuned = untuned


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


def _bar_checks(on: bool, total: int) -> Any:
    if not on or not total:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="checks in the model", unit="compile", file=sys.stderr)


def _bar(on: bool, total: int | None, n_ops: int) -> Any:
    if not on:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=f"tuning {n_ops} ops", unit="trial", file=sys.stderr)


def time_models_paired(
    before: Any, after: Any, example_inputs: Any, rounds: int = 10, min_block_s: float = 0.05
) -> ModelTiming:
    """Two modules on the same inputs, interleaved round by round (rotating which goes
    first): the median ms per call of each and, per round, log(after / before). A block
    times at least ``MIN_CALLS_PER_BLOCK`` calls (and ``min_block_s``) after an untimed one:
    the steady state a model's caller sees, not the switch from the other model."""
    inputs = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    fns = {"before": lambda: before(*inputs), "after": lambda: after(*inputs)}
    for fn in fns.values():
        for _ in range(3):
            fn()
    t0 = time.perf_counter()
    fns["before"]()
    block = max(MIN_CALLS_PER_BLOCK, int(min_block_s / max(time.perf_counter() - t0, 1e-6)))
    samples: dict[str, list[float]] = {k: [] for k in fns}
    names = list(fns)
    for r in range(rounds):
        for name in names[r % 2 :] + names[: r % 2]:
            fns[name]()
            t0 = time.perf_counter()
            for _ in range(block):
                fns[name]()
            samples[name].append((time.perf_counter() - t0) / block * 1e3)
    logs = [math.log(a / b) for a, b in zip(samples["after"], samples["before"], strict=True)]
    return ModelTiming(
        statistics.median(samples["before"]), statistics.median(samples["after"]), logs
    )
