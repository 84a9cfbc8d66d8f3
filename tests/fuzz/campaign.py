"""Fuzz campaign: mutated inputs through xgen_mlir, as a hostile or clumsy user would feed them.

Seeds are the lit tests' MLIR (each ``// -----`` chunk, with the passes its RUN line names),
the ONNX models that ship with the ``onnx`` package, and ``.vmfb`` files compiled here from two
small torch models. Each case mutates one seed (bytes flipped, spans cut, brackets dropped,
numbers and types swapped, deep nesting; for ONNX also graph edits; for modules the 4 flipped
bytes of the issue that started this) and runs it in a fresh process through one of:

- ``xgen-opt`` (the console script, with the seed's pass pipeline),
- ``xgen_mlir.compile(path)`` on a mutated ``.mlir`` / ``.onnx`` file,
- ``xgen_mlir.load(path)`` + a call on a mutated ``.vmfb``.

Each outcome is one of: ``accepted``, ``clean_error`` (an ``XGenError``, or the CLI's one-line
error), ``traceback`` (an exception escaped), ``signal`` (the process we started died of one),
``hang`` (past the timeout). Only the first two are acceptable. The run prints a table, writes
JSON, and keeps every other case's input and output under ``OUT/bad/`` to reproduce it.

    python tests/fuzz/campaign.py --cases 1000 --seed 1 --out /tmp/fuzz   # the long run
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIT = ROOT / "tests" / "lit"
CHILD = Path(__file__).with_name("child.py")
OUTCOMES = ("accepted", "clean_error", "traceback", "signal", "hang")
KINDS = ("xgen-opt", "compile-mlir", "compile-onnx", "run-vmfb")
# Share of each kind in a campaign (xgen-opt is cheap: most of the cases).
MIX = {"xgen-opt": 0.5, "compile-mlir": 0.2, "compile-onnx": 0.15, "run-vmfb": 0.15}
TIMEOUT_S = {"xgen-opt": 120, "compile-mlir": 300, "compile-onnx": 300, "run-vmfb": 120}


@dataclass
class Seed:
    kind: str
    name: str
    data: bytes
    args: list[str] = field(default_factory=list)  # xgen-opt's pass options


@dataclass
class Result:
    index: int
    kind: str
    seed: str
    mutation: str
    outcome: str
    rc: int | None
    detail: str
    seconds: float
    kept: str = ""  # where a bad case's input and output were kept


# ---------------------------------------------------------------------------------- seeds


def _xgen_opt_args(text: str) -> list[str]:
    """The pass options of the file's first ``xgen-opt %s ...`` RUN line that expects success."""
    for line in text.splitlines():
        m = re.match(r"\s*//\s*RUN:\s*(.*)", line)
        if not m or "xgen-opt %s" not in m.group(1) or m.group(1).lstrip().startswith("not "):
            continue
        cmd = m.group(1).split("|")[0]
        cmd = re.sub(r"\s\d?>.*$", "", cmd)  # redirections
        words = shlex.split(cmd)
        i = words.index("xgen-opt")
        args = [w for w in words[i + 2 :] if w != "--split-input-file"]
        return args
    return []


def mlir_seeds() -> list[Seed]:
    """Every chunk of every lit test, with the passes its RUN line runs."""
    seeds = []
    for path in sorted(LIT.rglob("*.mlir")):
        if "Output" in path.parts:
            continue
        text = path.read_text()
        args = _xgen_opt_args(text)
        for i, chunk in enumerate(text.split("// -----")):
            body = "\n".join(ln for ln in chunk.splitlines() if not ln.lstrip().startswith("//"))
            if body.strip():
                name = f"{path.relative_to(LIT)}#{i}"
                seeds.append(Seed("mlir", name, body.encode(), args))
    return seeds


def onnx_seeds() -> list[Seed]:
    """The small models of the onnx package's backend test data (real exporter output)."""
    import onnx

    data = Path(onnx.__file__).parent / "backend" / "test" / "data"
    seeds = []
    for sub in ("pytorch-operator", "simple"):
        for path in sorted((data / sub).glob("*/model.onnx")):
            if path.stat().st_size < 200_000:
                seeds.append(Seed("onnx", f"{sub}/{path.parent.name}", path.read_bytes()))
    return seeds


_BUILD_VMFB = """
import sys, torch, xgen_mlir
torch.manual_seed(0)
cnn = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                          torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 4))
mlp = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8))
xgen_mlir.compile(cnn, torch.randn(1, 3, 16, 16), tuning_db=False).save(sys.argv[1] + "/cnn.vmfb")
xgen_mlir.compile(mlp, torch.randn(2, 16), tuning_db=False).save(sys.argv[1] + "/mlp.vmfb")
"""


def vmfb_seeds(work: Path, env: dict[str, str]) -> list[Seed]:
    """Two small modules compiled here (a CNN and an MLP), as a user would save them."""
    folder = work / "seeds"
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "mlp.vmfb").exists():
        subprocess.run(
            [sys.executable, "-c", _BUILD_VMFB, str(folder)], check=True, env=env, cwd=work
        )
    return [Seed("vmfb", p.name, p.read_bytes()) for p in sorted(folder.glob("*.vmfb"))]


# ------------------------------------------------------------------------------ mutations

_TYPES = [b"f32", b"f16", b"bf16", b"f64", b"i1", b"i8", b"i32", b"i64", b"index", b"complex<f32>"]
_NUMBERS = [b"0", b"-1", b"1", b"2147483648", b"9223372036854775807", b"1000000000000", b"65536"]


def _flip(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    out = bytearray(data)
    n = rng.randint(1, 4)
    for _ in range(n):
        out[rng.randrange(len(out))] = rng.randrange(256)
    return f"flip {n} byte(s)", bytes(out)


def _cut_span(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    i = rng.randrange(len(data))
    n = rng.randint(1, 64)
    return f"cut {n} bytes at {i}", data[:i] + data[i + n :]


def _truncate(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    i = rng.randrange(len(data))
    return f"truncate at {i}", data[:i]


def _dup_line(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    return f"duplicate line {i + 1}", b"\n".join(lines[: i + 1] + lines[i:])


def _drop_line(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    return f"drop line {i + 1}", b"\n".join(lines[:i] + lines[i + 1 :])


def _drop_closer(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    spots = [m.start() for m in re.finditer(rb"[\]})>]", data)]
    if not spots:
        return _cut_span(rng, data)
    i = rng.choice(spots)
    return f"drop {data[i : i + 1].decode()} at {i}", data[:i] + data[i + 1 :]


def _swap_number(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    spots = list(re.finditer(rb"(?<![\w.%#])\d+(?![\w.])", data))
    if not spots:
        return _flip(rng, data)
    m = rng.choice(spots)
    new = rng.choice([n for n in _NUMBERS if n != m.group()])
    return f"number {m.group().decode()}->{new.decode()}", data[: m.start()] + new + data[m.end() :]


def _swap_type(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    spots = list(re.finditer(rb"\b(f32|f16|bf16|i1|i8|i32|i64|index)\b", data))
    if not spots:
        return _flip(rng, data)
    m = rng.choice(spots)
    new = rng.choice([t for t in _TYPES if t != m.group()])
    return f"type {m.group().decode()}->{new.decode()}", data[: m.start()] + new + data[m.end() :]


def _deep_nest(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    depth = rng.choice([300, 5000, 100_000])
    opener, closer = rng.choice([(b"[", b"]"), (b"{", b"}"), (b"(", b")")])
    i = rng.randrange(len(data))
    balanced = rng.random() < 0.5
    nest = opener * depth + (closer * depth if balanced else b"")
    how = "balanced" if balanced else "unclosed"
    return f"{how} {opener.decode()}x{depth} at {i}", data[:i] + nest + data[i:]


def _deep_regions(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    """Nested ``scf.execute_region`` ops: deep regions the parser recurses into."""
    depth = rng.choice([200, 5000])
    region = '"scf.execute_region"() ({\n'
    close = "}) : () -> ()\n"
    yield_ = '"scf.yield"() : () -> ()\n'
    nested = region * depth + yield_ + (close + yield_) * (depth - 1) + close
    body = "func.func @deep() {\n" + nested + "return\n}\n"
    return f"{depth}-deep regions appended", data + b"\n" + body.encode()


TEXT_MUTATIONS: list[Callable[[random.Random, bytes], tuple[str, bytes]]] = [
    _flip,
    _cut_span,
    _truncate,
    _dup_line,
    _drop_line,
    _drop_closer,
    _swap_number,
    _swap_type,
    _swap_type,
    _swap_number,
    _drop_closer,
    _deep_nest,
    _deep_regions,
]


def _flip_exactly(rng: random.Random, data: bytes, n: int) -> tuple[str, bytes]:
    out = bytearray(data)
    where = sorted(rng.sample(range(len(out)), n))
    for i in where:
        out[i] ^= rng.randrange(1, 256)
    return f"flip bytes {where}", bytes(out)


def _zero_span(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    i = rng.randrange(len(data))
    n = rng.randint(1, 256)
    return f"zero {n} bytes at {i}", data[:i] + bytes(len(data[i : i + n])) + data[i + n :]


VMFB_MUTATIONS: list[Callable[[random.Random, bytes], tuple[str, bytes]]] = [
    lambda rng, d: _flip_exactly(rng, d, 4),
    lambda rng, d: _flip_exactly(rng, d, 4),
    lambda rng, d: _flip_exactly(rng, d, 4),
    _truncate,
    _zero_span,
]


def _onnx_graph_edit(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    """An edit a hand-made or half-converted ONNX file has: odd dims, unknown ops, hostile
    names, missing initializers, dangling inputs, absurd attributes."""
    import onnx

    model = onnx.load_from_string(data)
    g = model.graph
    edits = ["dim", "op", "name", "initializer", "input", "attribute", "opset"]
    edit = rng.choice(edits)
    if edit == "dim" and g.input:
        dims = [d for i in g.input for d in i.type.tensor_type.shape.dim]
        if dims:
            d = rng.choice(dims)
            d.dim_value = rng.choice([0, 1, 2**31, 10**12])
    elif edit == "op" and g.node:
        node = rng.choice(g.node)
        node.op_type = rng.choice(["Bogus", "Conv", "MatMul", "Loop", "Relu", "Reshape"])
    elif edit == "name" and g.input:
        g.input[0].name = rng.choice(["../../../x", "a;rm -rf /", "'\"`$(id)", "", "a" * 5000])
    elif edit == "initializer" and g.initializer:
        del g.initializer[rng.randrange(len(g.initializer))]
    elif edit == "input" and g.node:
        node = rng.choice(g.node)
        node.input.append("does_not_exist")
    elif edit == "attribute" and any(n.attribute for n in g.node):
        node = rng.choice([n for n in g.node if n.attribute])
        attr = rng.choice(node.attribute)
        if attr.type == onnx.AttributeProto.INT:
            attr.i = rng.choice([-1, 0, 2**40])
        elif attr.type == onnx.AttributeProto.INTS and attr.ints:
            attr.ints[rng.randrange(len(attr.ints))] = rng.choice([-7, 0, 2**40])
        else:
            attr.name = "bogus_attribute"
    else:
        model.opset_import[0].version = rng.choice([1, 99])
        edit = "opset"
    return f"onnx edit: {edit}", model.SerializeToString()


ONNX_MUTATIONS: list[Callable[[random.Random, bytes], tuple[str, bytes]]] = [
    _flip,
    _truncate,
    _cut_span,
    _onnx_graph_edit,
    _onnx_graph_edit,
    _onnx_graph_edit,
]


# -------------------------------------------------------------------------------- running


def _outcome(rc: int | None, stderr: str, timed_out: bool) -> tuple[str, str]:
    if timed_out:
        return "hang", "timed out"
    assert rc is not None
    if rc < 0:
        try:
            return "signal", signal.Signals(-rc).name
        except ValueError:
            return "signal", f"signal {-rc}"
    if "Traceback (most recent call last)" in stderr:
        last = [ln for ln in stderr.strip().splitlines() if ln.strip()]
        return "traceback", last[-1] if last else ""
    if rc == 0:
        return "accepted", ""
    return "clean_error", ""


def _run(
    cmd: list[str], env: dict[str, str], cwd: Path, timeout: float
) -> tuple[int | None, str, str, bool]:
    # A session of its own: a hang is killed with everything it started.
    proc = subprocess.Popen(
        cmd,
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"), False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return None, out.decode(errors="replace"), err.decode(errors="replace"), True


def _command(kind: str, path: Path, seed: Seed) -> list[str]:
    if kind == "xgen-opt":
        return [str(Path(sys.executable).with_name("xgen-opt")), str(path), *seed.args]
    mode = "run-vmfb" if kind == "run-vmfb" else "compile"
    return [sys.executable, str(CHILD), mode, str(path)]


def _case_plan(n: int, seed: int, mix: dict[str, float]) -> list[tuple[int, str]]:
    """Which kind each case is: a fixed share per kind, in a seeded order."""
    kinds = [k for k in KINDS if mix.get(k, 0) > 0]
    counts = {k: int(n * mix[k]) for k in kinds}
    counts[kinds[0]] += n - sum(counts.values())
    plan = [k for k in kinds for _ in range(counts[k])]
    random.Random(seed).shuffle(plan)
    return list(enumerate(plan))


@dataclass
class Campaign:
    out: Path
    seed: int = 0
    jobs: int = 2
    progress: bool = True
    results: list[Result] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        self.cases_dir = self.out / "cases"
        self.tmp = self.out / "tmp"  # the children's TMPDIR: leftovers in it are counted
        for d in (self.cases_dir, self.tmp):
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir()
        self.env = dict(os.environ)
        self.env.update(
            TMPDIR=str(self.tmp),
            XGEN_CACHE_DIR=str(self.out / "cache"),
            XGEN_TUNING_DB=str(self.out / "no-tuning.db"),
            OMP_NUM_THREADS="1",
            PYTHONFAULTHANDLER="",
        )
        self.env.pop("XGEN_KEEP_TEMPS", None)

    def seeds(self, kinds: Iterable[str]) -> dict[str, list[Seed]]:
        kinds = set(kinds)
        out: dict[str, list[Seed]] = {}
        if kinds & {"xgen-opt", "compile-mlir"}:
            out["mlir"] = mlir_seeds()
        if "compile-onnx" in kinds:
            out["onnx"] = onnx_seeds()
        if "run-vmfb" in kinds:
            env = {k: v for k, v in self.env.items() if k != "TMPDIR"}
            out["vmfb"] = vmfb_seeds(self.out, env)
        return out

    def run(self, cases: int, mix: dict[str, float] | None = None) -> list[Result]:
        plan = _case_plan(cases, self.seed, mix or MIX)
        seeds = self.seeds({k for _, k in plan})
        bar = None
        if self.progress:
            from tqdm import tqdm

            bar = tqdm(total=len(plan), desc="fuzz", unit="case", file=sys.stderr)

        done: list[Result] = []

        def one(item: tuple[int, str]) -> Result:
            result = self._one(item[0], item[1], seeds)
            done.append(result)
            if bar is not None:
                bar.update(1)
                bar.set_postfix_str(_short_counts(done))
            return result

        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            self.results = list(pool.map(one, plan))
        if bar is not None:
            bar.close()
        return self.results

    def controls(self) -> list[Result]:
        """Each module seed run as it is, through the same command as its mutants: accepted,
        or the harness itself is broken (mutants that are all refused say nothing of the
        path that accepts)."""
        out = []
        for i, seed in enumerate(self.seeds({"run-vmfb"})["vmfb"]):
            case_dir = self.out / f"control-{i}"
            case_dir.mkdir(parents=True, exist_ok=True)
            path = case_dir / "input.vmfb"
            path.write_bytes(seed.data)
            t0 = time.perf_counter()
            rc, _, err, timed_out = _run(
                _command("run-vmfb", path, seed), self.env, case_dir, TIMEOUT_S["run-vmfb"]
            )
            outcome, detail = _outcome(rc, err, timed_out)
            seconds = round(time.perf_counter() - t0, 2)
            out.append(Result(-1 - i, "run-vmfb", seed.name, "none", outcome, rc, detail, seconds))
        return out

    def _one(self, index: int, kind: str, seeds: dict[str, list[Seed]]) -> Result:
        rng = random.Random(f"{self.seed}:{index}")
        pool = seeds["vmfb" if kind == "run-vmfb" else "onnx" if kind == "compile-onnx" else "mlir"]
        seed = rng.choice(pool)
        mutations = (
            VMFB_MUTATIONS
            if kind == "run-vmfb"
            else ONNX_MUTATIONS
            if kind == "compile-onnx"
            else TEXT_MUTATIONS
        )
        try:
            mutation, data = rng.choice(mutations)(rng, seed.data)
        except Exception as e:  # a graph edit the onnx package refused: flip bytes instead
            mutation, data = _flip(rng, seed.data)
            mutation += f" (graph edit failed: {type(e).__name__})"
        suffix = {"run-vmfb": ".vmfb", "compile-onnx": ".onnx"}.get(kind, ".mlir")
        case_dir = self.cases_dir / f"{index:05d}"
        case_dir.mkdir()
        path = case_dir / f"input{suffix}"
        path.write_bytes(data)
        t0 = time.perf_counter()
        rc, out, err, timed_out = _run(
            _command(kind, path, seed), self.env, case_dir, TIMEOUT_S[kind]
        )
        outcome, detail = _outcome(rc, err, timed_out)
        if outcome == "clean_error":
            detail = _first_error_line(out, err)
        result = Result(
            index,
            kind,
            seed.name,
            mutation,
            outcome,
            rc,
            detail[:300],
            round(time.perf_counter() - t0, 2),
        )
        if outcome in ("accepted", "clean_error"):
            shutil.rmtree(case_dir, ignore_errors=True)
        else:  # keep what reproduces it
            bad = self.out / "bad" / f"{index:05d}-{kind}"
            shutil.rmtree(bad, ignore_errors=True)
            bad.parent.mkdir(exist_ok=True)
            shutil.move(str(case_dir), bad)
            (bad / "stderr.txt").write_text(err)
            (bad / "command.txt").write_text(shlex.join(_command(kind, bad / path.name, seed)))
            result.kept = str(bad)
        return result

    def summary(self) -> dict[str, object]:
        counts = {k: Counter(r.outcome for r in self.results if r.kind == k) for k in KINDS}
        # torch's own compile cache is not ours to clean
        leftovers = sorted(
            p.name for p in self.tmp.iterdir() if not p.name.startswith("torchinductor_")
        )
        return {
            "seed": self.seed,
            "cases": len(self.results),
            "counts": {k: {o: c[o] for o in OUTCOMES} for k, c in counts.items() if c},
            "totals": {o: sum(c[o] for c in counts.values()) for o in OUTCOMES},
            "temp_leftovers": leftovers,
            "bad": [asdict(r) for r in self.results if r.outcome not in OUTCOMES[:2]],
            "seconds": round(sum(r.seconds for r in self.results), 1),
            "results": [asdict(r) for r in self.results],
        }

    def table(self) -> str:
        s = self.summary()
        rows = [f"{'kind':14s}" + "".join(f"{o:>13s}" for o in OUTCOMES)]
        for kind, c in s["counts"].items():  # type: ignore[union-attr]
            rows.append(f"{kind:14s}" + "".join(f"{c[o]:13d}" for o in OUTCOMES))
        tot = s["totals"]
        rows.append(f"{'total':14s}" + "".join(f"{tot[o]:13d}" for o in OUTCOMES))  # type: ignore[index]
        rows.append(f"temp leftovers: {len(s['temp_leftovers'])}")  # type: ignore[arg-type]
        for r in s["bad"]:  # type: ignore[union-attr]
            rows.append(
                f"  {r['outcome']}: {r['kind']} {r['seed']} [{r['mutation']}] "
                f"{r['detail']} -> {r['kept']}"
            )
        return "\n".join(rows)


def _first_error_line(out: str, err: str) -> str:
    for text in (out, err):
        for line in text.splitlines():
            if line.strip():
                return line.strip()
    return ""


def _short_counts(results: list[Result]) -> str:
    c = Counter(r.outcome for r in results)
    return " ".join(f"{o[:5]}={c[o]}" for o in OUTCOMES if c[o])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "xgen-fuzz")
    p.add_argument(
        "--kinds", default=",".join(KINDS), help="comma-separated subset of " + ", ".join(KINDS)
    )
    args = p.parse_args(argv)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = set(kinds) - set(KINDS)
    if unknown:
        p.error(f"unknown kinds {sorted(unknown)}; known: {', '.join(KINDS)}")
    mix = {k: MIX[k] / sum(MIX[j] for j in kinds) for k in kinds}
    campaign = Campaign(args.out, seed=args.seed, jobs=args.jobs)
    campaign.run(args.cases, mix)
    print(campaign.table())
    summary = campaign.summary()
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from host import describe  # CPU model, ISA flags, measured matmul rates

    summary["host"] = describe(threads=args.jobs)
    (args.out / "results.json").write_text(json.dumps(summary, indent=1))
    print(f"results: {args.out / 'results.json'}")
    bad = sum(summary["totals"][o] for o in ("traceback", "signal", "hang"))  # type: ignore[index]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
