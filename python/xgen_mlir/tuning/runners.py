"""Where a batch of candidates runs: this machine, or a foreign device through a command.

``measure.measure_batch`` compiles a batch module (one function per candidate plus ``base``)
and hands it to a runner, which checks and times its functions and returns one
``Measurement`` per runnable candidate; ``identity`` names the machine the records belong to.

- ``LocalRunner``: this machine, IREE's Python runtime in a child process (``measure._run``:
  per-dispatch benchmarks, interleaved rounds).
- ``CommandRunner``: IREE's stock ``iree-run-module`` / ``iree-benchmark-module`` built for the
  device, run through a command prefix, as AutoTVM's RPC runner does: ``qemu-aarch64-static
  -L /usr/aarch64-linux-gnu`` here (``qemu_runner``), ``ssh user@board`` in the field
  (``ssh_runner``: the module and inputs are copied over with scp first). Each function runs
  in a process of its own, so one that crashes or hangs costs only its own run
  (``runtime_error`` / ``timeout``); each candidate's output is compared with ``base``'s on the
  same inputs (``wrong_numbers``) before the ones that match are timed, whole calls,
  ``--benchmark_repetitions`` of each, the median kept.

Timings under qemu are an emulator's, not the board's: such records exist to test the
plumbing, and are stored under a ``qemu-aarch64`` identity that no real machine has, so
compile() never applies them anywhere.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import statistics
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .._paths import repo_root
from ..errors import XGenError
from ..tunedb import HostIdentity
from .child import _relative_error
from .measure import Measurement, MeasureSettings, _inputs, _run


class Runner(Protocol):
    spec: str  # what make_runner() rebuilds it from (it travels to Ray workers as text)

    def identity(self, threads: int) -> HostIdentity: ...

    def run(
        self,
        vmfb: Path,
        standalone: str,
        configs: list[dict[str, Any]],
        runnable: list[int],
        settings: MeasureSettings,
        elem_bits: int,
        work: Path,
        model_flags: list[str],
    ) -> dict[int, Measurement]: ...


class LocalRunner:
    """This machine (what ``measure_batch`` does without a runner)."""

    spec = "local"

    def identity(self, threads: int) -> HostIdentity:
        return HostIdentity.current(threads=threads)

    def run(self, *args: Any) -> dict[int, Measurement]:
        return _run(*args)


def aarch64_tools_dir() -> Path:
    """The aarch64 ``iree-*`` tools: ``$IREE_TOOLS_DIR_AARCH64``, or the cache
    ``runtime_bridge/fetch_runtime.sh aarch64`` fills (as ``run_bundle.sh`` finds them)."""
    if os.environ.get("IREE_TOOLS_DIR_AARCH64"):
        return Path(os.environ["IREE_TOOLS_DIR_AARCH64"])
    cache = os.environ.get("XGEN_TOOLS_CACHE") or str(repo_root() / ".venv" / "cache")
    return Path(cache) / "iree-runtime-aarch64" / "iree" / "_runtime_libs"


@dataclass
class CommandRunner:
    """IREE's stock tools for the device, run as ``prefix + [tools_dir/tool, flags...]``.

    ``remote``: an scp destination (``user@board``) the module and inputs are copied to (a
    fresh folder under ``/tmp``) and outputs fetched from; None when the prefix runs on this
    machine's files (qemu)."""

    spec: str
    prefix: list[str]
    tools_dir: str
    remote: str | None = None
    scp_opts: list[str] = field(default_factory=list)
    emulated: str = ""  # qemu: the emulator and CPU, which become the identity's cpu
    _identity: HostIdentity | None = field(default=None, repr=False)

    def _tool(self, name: str) -> str:
        return f"{self.tools_dir}/{name}" if self.tools_dir else name

    def _exec(self, argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
        cmd = [*self.prefix, shlex.join(argv)] if self.remote else [*self.prefix, *argv]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)

    def _stage(self, work: Path, files: list[Path]) -> dict[Path, str]:
        """Where the device reads ``files`` (copied there first over ssh)."""
        if self.remote is None:
            return {f: str(f) for f in files}
        folder = f"/tmp/xgen-tune-{uuid.uuid4().hex[:12]}"
        self._exec(["mkdir", "-p", folder], 60).check_returncode()
        subprocess.run(
            ["scp", "-q", "-B", *self.scp_opts, *map(str, files), f"{self.remote}:{folder}/"],
            check=True,
            capture_output=True,
            timeout=600,
        )
        return {f: f"{folder}/{f.name}" for f in files}

    def _fetch(self, where: str, local: Path) -> None:
        if self.remote is not None:
            subprocess.run(
                ["scp", "-q", "-B", *self.scp_opts, f"{self.remote}:{where}", str(local)],
                check=True,
                capture_output=True,
                timeout=600,
            )

    def identity(self, threads: int) -> HostIdentity:
        """The device's: its arch, CPU and the ISA features IREE's runtime detects on it."""
        if self._identity is None:
            proc = self._exec([self._tool("iree-cpuinfo")], 60)
            if proc.returncode != 0:
                raise XGenError(
                    f"runner {self.spec}: iree-cpuinfo failed on the device: "
                    f"{proc.stderr.strip()[-300:]}"
                )
            isa = tuple(
                sorted(
                    line.split()[0]
                    for line in proc.stdout.splitlines()
                    if len(line.split()) == 2 and line.split()[1] == "1"
                )
            )
            cpu, caches = self.emulated, (0, 0, 0)
            if not cpu:
                cpu, caches = self._board()
            from importlib.metadata import version

            self._identity = HostIdentity(
                cpu=cpu,
                arch="aarch64",
                isa=isa,
                l1_bytes=caches[0],
                l2_bytes=caches[1],
                l3_bytes=caches[2],
                threads=threads,
                iree=version("iree-base-runtime"),  # fetch_runtime.sh fetches this version
            )
        return replace_threads(self._identity, threads)

    def _board(self) -> tuple[str, tuple[int, int, int]]:
        """A real board's CPU name and cache sizes, read from its /proc and /sys."""
        script = (
            "grep -m1 -iE '^(model name|Hardware)' /proc/cpuinfo | cut -d: -f2; "
            'for l in 1 2 3; do c=$(grep -l "^$l$" /sys/devices/system/cpu/cpu0/cache/'
            "index*/level 2>/dev/null | tail -n1); "
            'if [ -n "$c" ]; then cat "$(dirname "$c")/size"; else echo 0; fi; done'
        )
        proc = self._exec(["sh", "-c", script], 60)
        lines = [x.strip() for x in proc.stdout.splitlines()] + ["", "0", "0", "0"]
        part = lines[0] or "aarch64 board"

        def size(text: str) -> int:
            text = text.upper()
            scale = {"K": 1024, "M": 1 << 20}.get(text[-1:], 1)
            digits = text.rstrip("KM")
            return int(digits) * scale if digits.isdigit() else 0

        return part, (size(lines[1]), size(lines[2]), size(lines[3]))

    def run(
        self,
        vmfb: Path,
        standalone: str,
        configs: list[dict[str, Any]],
        runnable: list[int],
        settings: MeasureSettings,
        elem_bits: int,
        work: Path,
        model_flags: list[str],
    ) -> dict[int, Measurement]:
        """Numerics (iree-run-module per function), then timing (iree-benchmark-module per
        function that matched ``base``). ``runnable[j]`` is the config of ``c{j}``."""
        del model_flags
        ins = []
        for k, a in enumerate(_inputs(standalone)):
            ins.append(work / f"in{k}.npy")
            np.save(ins[-1], np.ascontiguousarray(a))
        where = self._stage(work, [vmfb, *ins])
        common = [
            f"--module={where[vmfb]}",
            "--device=local-task",
            f"--task_topology_max_group_count={settings.threads}",
            *(f"--input=@{where[f]}" for f in ins),
        ]
        names = {f"c{j}": i for j, i in enumerate(runnable)}
        tol = settings.tolerance * (100 if elem_bits < 32 else 1)
        out: dict[int, Measurement] = {}
        ref: np.ndarray | None = None
        good = []
        for name in ["base", *names]:
            local = work / f"out_{name}.npy"
            remote = (
                str(local) if self.remote is None else f"{Path(where[vmfb]).parent}/{local.name}"
            )
            failed, _ = self._call(
                "iree-run-module", common, name, [f"--output=@{remote}"], settings
            )
            if failed is None:
                self._fetch(remote, local)
                result = np.load(local)
            if name == "base":
                if failed is not None:
                    raise RuntimeError(f"IREE's own config failed to run: {failed[1]}")
                ref = result
                continue
            i = names[name]
            if failed is not None:
                out[i] = Measurement(configs[i], failed[0], detail=failed[1])
                continue
            assert ref is not None
            err = _relative_error(result, ref)
            if not np.isfinite(err) or err > tol:
                out[i] = Measurement(
                    configs[i], "wrong_numbers", detail=f"relative error {err} > {tol}"
                )
            else:
                good.append(name)
        times: dict[str, float] = {}
        for name in ["base", *good]:
            bench = [
                f"--benchmark_repetitions={settings.rounds}",
                "--benchmark_format=json",
                f"--benchmark_min_time={settings.min_block_s}s",
            ]
            failed, report = self._call("iree-benchmark-module", common, name, bench, settings)
            if failed is not None:
                if name == "base":
                    raise RuntimeError(f"IREE's own config failed to time: {failed[1]}")
                i = names[name]
                out[i] = Measurement(configs[i], failed[0], detail=failed[1])
                continue
            times[name] = _median_seconds(report)
        for name in good:
            if name in times:
                i = names[name]
                out[i] = Measurement(configs[i], "ok", times[name], times["base"])
        return out

    def _call(
        self,
        tool: str,
        common: list[str],
        fn: str,
        extra: list[str],
        settings: MeasureSettings,
    ) -> tuple[tuple[str, str] | None, str]:
        """Run one function: (None when it worked, else (status, why); its stdout)."""
        argv = [self._tool(tool), *common, f"--function={fn}", *extra]
        try:
            proc = self._exec(argv, settings.run_timeout_s)
        except subprocess.TimeoutExpired:
            why = f"{tool} --function={fn} ran past {settings.run_timeout_s:.0f} s"
            return ("timeout", why), ""
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or [""])[-1][:200]
            why = f"{tool} --function={fn}: exit code {proc.returncode}: {last}"
            return ("runtime_error", why), proc.stdout
        return None, proc.stdout


_UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def _median_seconds(report: str) -> float:
    """The median over repetitions of the per-call real time in a google-benchmark JSON
    report (its "iteration" rows; the aggregates are left out)."""
    data = json.loads(report[report.index("{") :])
    rows = [b for b in data["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
    if not rows:
        raise RuntimeError("iree-benchmark-module reported no timings")
    return statistics.median(r["real_time"] * _UNIT[r.get("time_unit", "ns")] for r in rows)


def replace_threads(host: HostIdentity, threads: int) -> HostIdentity:
    from dataclasses import replace

    return replace(host, threads=threads)


def qemu_runner(arch: str = "aarch64") -> CommandRunner:
    """The aarch64 tools under qemu user mode on this machine (for testing the plumbing)."""
    if arch not in ("aarch64", "arm64"):
        raise XGenError(f"runner 'qemu': no {arch} runtime tools (PyPI has aarch64 only)")
    qemu = shutil.which("qemu-aarch64-static") or shutil.which("qemu-aarch64")
    sysroot = "/usr/aarch64-linux-gnu"
    if qemu is None or not Path(sysroot).is_dir():
        raise XGenError(
            "runner 'qemu' needs qemu user mode and the aarch64 sysroot: apt-get install "
            "qemu-user-static libc6-arm64-cross libstdc++6-arm64-cross"
        )
    tools = aarch64_tools_dir()
    if not (tools / "iree-benchmark-module").exists():
        raise XGenError(
            f"runner 'qemu': no aarch64 iree-benchmark-module in {tools}; run "
            "runtime_bridge/fetch_runtime.sh aarch64 or set IREE_TOOLS_DIR_AARCH64"
        )
    proc = subprocess.run([qemu, "--version"], capture_output=True, text=True)
    version = (proc.stdout.split() + ["", "", "?"])[2]
    # qemu user mode emulates its "max" CPU unless told otherwise (every feature it has)
    return CommandRunner(
        spec="qemu",
        prefix=[qemu, "-L", sysroot],
        tools_dir=str(tools),
        emulated=f"qemu-aarch64 {version} -cpu max (emulated; not a board's speed)",
    )


def ssh_runner(spec: str) -> CommandRunner:
    """``ssh://user@host[:port][/tools/dir]``: the board's own aarch64 ``iree-*`` tools (in
    ``/tools/dir``, else on its PATH), run over ssh with the files copied by scp."""
    rest = spec[len("ssh://") :]
    dest, _, tools = rest.partition("/")
    host, _, port = dest.partition(":")
    if not host:
        raise XGenError(f"runner {spec!r}: expected ssh://user@host[:port][/path/to/iree/tools]")
    return CommandRunner(
        spec=spec,
        prefix=["ssh", "-o", "BatchMode=yes", *(["-p", port] if port else []), host],
        tools_dir="/" + tools if tools else "",
        remote=host,
        scp_opts=["-P", port] if port else [],
    )


def make_runner(spec: str | None, arch: str = "aarch64") -> Runner:
    """A runner from its text: None or "local", "qemu", "ssh://user@host[...]"."""
    if spec in (None, "", "local"):
        return LocalRunner()
    assert spec is not None
    if spec == "qemu":
        return qemu_runner(arch)
    if spec.startswith("ssh://"):
        return ssh_runner(spec)
    raise XGenError(f"unknown runner {spec!r}: expected 'local', 'qemu' or 'ssh://user@host'")
