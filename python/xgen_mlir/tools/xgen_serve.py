"""xgen-serve: run several compiled models at once under a scenario, with a live view.

    xgen-serve scenario.toml [--duration 30] [--json stats.json] [--html timeline.html]

A scenario (TOML) names the policy and, per model, its module, request rate, priority and
deadline; requests carry random inputs of the module's signature:

    policy = "priority"      # priority | edf | fair
    duration = 20            # seconds
    # workers = 2            # CPU workers to hand out (default: this process's cores)
    # aging_rate = 1.0       # priority levels gained per second of waiting
    # drop_late = false      # true: a request not started by its deadline is not run
    # idle_band = true       # the lowest priority band runs SCHED_IDLE (false: nice 19)
    # pin = true             # pin each request's workers to the cores it was given
    # default_slack_ms = 10000  # edf: a request without a deadline is ordered as if due
    #                           # this long after its arrival (so it always finishes)

    [[models]]
    name = "mobilenet"
    path = "mobilenet.vmfb"  # a .vmfb or a bundle folder, relative to this file
    rate = 30                # requests per second (periodic arrivals)
    priority = 2
    deadline_ms = 33
    # placement = "vulkan"   # cpu (default for CPU modules) | vulkan | auto
    # path = ["m_cpu.vmfb", "m_vulkan.vmfb"]  # auto: a CPU and a Vulkan build; each request
    #                        # goes to the device with the least estimated finish time
    # slack_ms = 5000        # edf: this model's slack (instead of default_slack_ms)
    # max_workers = 2
    # weight = 1.0           # fair share

    [[models]]
    name = "bert"
    path = "bert_bundle"
    background = true        # one request always outstanding (batch work)
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import tomllib
from pathlib import Path
from typing import Any

from ..errors import XGenError
from ..runtime.scheduler import Scheduler

_TOP = {
    "policy",
    "duration",
    "workers",
    "aging_rate",
    "drop_late",
    "idle_band",
    "pin",
    "default_slack_ms",
    "models",
    "seed",
}
_MODEL = {
    "name",
    "path",
    "rate",
    "background",
    "priority",
    "deadline_ms",
    "placement",
    "max_workers",
    "weight",
    "slack_ms",
}


def read_scenario(path: Path) -> dict[str, Any]:
    """The scenario, checked: every problem named with the file and the model."""
    try:
        data = tomllib.loads(path.read_text())
    except OSError as e:
        raise XGenError(f"{path}: cannot read the scenario: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise XGenError(f"{path}: not valid TOML: {e}") from None
    problems = [f"unknown key '{k}'" for k in sorted(set(data) - _TOP)]
    models = data.get("models")
    if not isinstance(models, list) or not models:
        problems.append("no [[models]] tables")
        models = []
    names = set()
    for i, m in enumerate(models):
        where = f"models[{i}]" + (f" ('{m.get('name')}')" if isinstance(m, dict) else "")
        if not isinstance(m, dict):
            problems.append(f"{where}: not a table")
            continue
        problems += [f"{where}: unknown key '{k}'" for k in sorted(set(m) - _MODEL)]
        if not isinstance(m.get("name"), str) or not m.get("name"):
            problems.append(f"{where}: 'name' (a string) is required")
        given = m.get("path")
        paths = given if isinstance(given, list) else [given]
        if not paths or not all(isinstance(x, str) and x for x in paths):
            problems.append(f"{where}: 'path' (a string, or a list of them) is required")
        if m.get("name") in names:
            problems.append(f"{where}: name '{m['name']}' is used twice")
        names.add(m.get("name"))
        rate, bg = m.get("rate"), m.get("background", False)
        if not bg and not (isinstance(rate, (int, float)) and rate > 0):
            problems.append(f"{where}: give 'rate' (requests/s > 0) or background = true")
        for key in ("priority", "deadline_ms", "weight", "max_workers", "slack_ms"):
            if key in m and not isinstance(m[key], (int, float)):
                problems.append(f"{where}: '{key}' must be a number")
    slack = data.get("default_slack_ms")
    if slack is not None and not isinstance(slack, (int, float)):
        problems.append("'default_slack_ms' must be a number")
    duration = data.get("duration", 10)
    if not isinstance(duration, (int, float)) or duration <= 0:
        problems.append("'duration' must be a number of seconds > 0")
    if problems:
        raise XGenError(
            f"{path}: {len(problems)} problem(s) in the scenario:\n  " + "\n  ".join(problems)
        )
    return data


def run(
    scenario: dict[str, Any],
    base: Path,
    *,
    duration: float | None = None,
    live: bool = True,
    interval: float = 1.0,
    out=sys.stdout,
) -> Scheduler:
    """Load the models, warm them up, run the arrivals for ``duration`` seconds, drain."""
    slack = scenario.get("default_slack_ms")
    sched = Scheduler(
        scenario.get("policy", "priority"),
        workers=scenario.get("workers"),
        aging_rate=scenario.get("aging_rate"),
        drop_late=bool(scenario.get("drop_late", False)),
        idle_band=bool(scenario.get("idle_band", True)),
        pin=bool(scenario.get("pin", True)),
        default_slack=None if slack is None else slack / 1e3,
    )
    try:
        for m in scenario["models"]:
            deadline = m.get("deadline_ms")
            path = m["path"]
            source: Any = [base / p for p in path] if isinstance(path, list) else base / path
            sched.add_model(
                m["name"],
                source,
                priority=m.get("priority", 0),
                deadline=None if deadline is None else deadline / 1e3,
                weight=m.get("weight", 1.0),
                placement=m.get("placement"),
                max_workers=m.get("max_workers"),
                slack=None if m.get("slack_ms") is None else m["slack_ms"] / 1e3,
            )
        sched.warm_up()
    except BaseException:
        sched.shutdown(cancel_pending=True)
        raise
    seconds = float(duration if duration is not None else scenario.get("duration", 10))
    seed = int(scenario.get("seed", 0))
    inputs = {}
    for m in scenario["models"]:
        module = sched.module(m["name"])
        inputs[m["name"]] = module.random_inputs(seed)
    stop = threading.Event()
    t0 = time.monotonic()

    def periodic(name: str, rate: float) -> None:
        k = 0
        while not stop.wait(max(0.0, t0 + k / rate - time.monotonic())):
            if time.monotonic() - t0 >= seconds:
                return
            sched.submit(name, *inputs[name])
            k += 1

    def background(name: str) -> None:
        def again(_: Any = None) -> None:
            if not stop.is_set() and time.monotonic() - t0 < seconds:
                sched.submit(name, *inputs[name]).add_done_callback(again)

        again()

    threads = []
    for m in scenario["models"]:
        if m.get("background", False):
            background(m["name"])
        else:
            t = threading.Thread(target=periodic, args=(m["name"], float(m["rate"])), daemon=True)
            t.start()
            threads.append(t)
    clear = "\x1b[H\x1b[2J" if live and getattr(out, "isatty", lambda: False)() else ""
    try:
        while not stop.wait(min(interval, max(0.0, t0 + seconds - time.monotonic()))):
            if live:
                print(clear + sched.text(), file=out, flush=True)
            if time.monotonic() - t0 >= seconds:
                break
    except KeyboardInterrupt:
        print("interrupted: finishing the requests in flight", file=sys.stderr)
    finally:
        stop.set()
        for t in threads:
            t.join()
        sched.shutdown(wait=True)
    return sched


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="xgen-serve", description=__doc__.splitlines()[0])
    p.add_argument("scenario", help="scenario file (TOML)")
    p.add_argument("--duration", type=float, help="seconds (overrides the scenario's)")
    p.add_argument("--json", help="write stats and every request's record here")
    p.add_argument("--html", help="write the HTML timeline (Gantt chart) here")
    p.add_argument("--interval", type=float, default=1.0, help="live view refresh, seconds")
    p.add_argument("--no-live", action="store_true", help="print only the final view")
    args = p.parse_args(argv)
    path = Path(args.scenario)
    try:
        scenario = read_scenario(path)
        sched = run(
            scenario,
            path.parent,
            duration=args.duration,
            live=not args.no_live,
            interval=args.interval,
        )
    except XGenError as e:
        print(f"xgen-serve: error: {e}", file=sys.stderr)
        return 2
    print(sched.text())
    if args.json:
        print(f"wrote {sched.write_stats(args.json, {'scenario': str(path)})}")
    if args.html:
        print(f"wrote {sched.write_timeline(args.html, title=f'xgen-serve {path.name}')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
