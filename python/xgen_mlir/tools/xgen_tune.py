"""xgen-tune: tune a model's contractions on this machine; records go to a tuning database.

    xgen-tune model.onnx --budget-minutes 15                # ~/.cache/xgen_mlir/tuning.db
    xgen-tune model.pt2 --db tuning.db --report tuning.html
    xgen-tune model.onnx --cluster ray://head:10001         # measure on a Ray cluster
    xgen-tune model.onnx --target arm64 --runner ssh://me@board   # measured on the board
    xgen-tune --db tuning.db --export records.jsonl         # share records between machines
    xgen-tune --db tuning.db --import records.jsonl

Interrupted (Ctrl-C, a kill), it resumes where it stopped: configs measured on this host are
in the database and are not measured again. ``xgen_mlir.compile`` (and xgen-compile) apply
the database's best records for the running host by default, and a device's with
``tuning_device`` (``--tuning-device``) naming the same runner.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from ..errors import XGenError
from ..tunedb import TuningDB, default_db_path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="xgen-tune", description=__doc__.splitlines()[0])
    p.add_argument("model", nargs="?", help="model file: .pt2, .onnx, .mlir, .mlirbc")
    p.add_argument("--db", default=None, help=f"tuning database (default {default_db_path()})")
    p.add_argument("--budget-minutes", type=float, default=15.0)
    p.add_argument("--max-trials", type=int, default=None, help="stop after this many trials")
    p.add_argument("--target", default="cpu", help="the target compiled for (cpu, arm64)")
    p.add_argument(
        "--runner",
        default=None,
        help="where candidates run: local (default), qemu, ssh://user@host[:port][/tools/dir]",
    )
    p.add_argument("--cluster", default=None, help="Ray address (default: a local Ray)")
    p.add_argument("--workers", type=int, default=None, help="CPUs of the local Ray")
    p.add_argument("--threads", type=int, default=None, help="threads a module runs on")
    p.add_argument(
        "--input", action="append", default=[], metavar="FILE.npy", help="an input (repeatable)"
    )
    p.add_argument("--report", default=None, metavar="FILE.html", help="write an HTML report")
    p.add_argument("--export", default=None, metavar="FILE.jsonl", help="export the database")
    p.add_argument("--import", dest="import_", default=None, metavar="FILE.jsonl")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    db = args.db or default_db_path()
    try:
        if args.export or args.import_:
            with TuningDB(db) as tdb:
                if args.import_:
                    added, rejected = tdb.import_(args.import_)
                    print(f"imported {added} record(s), rejected {rejected}, into {db}")
                if args.export:
                    n = tdb.export(args.export)
                    print(f"exported {n} record(s) from {db} to {args.export}")
            if not args.model:
                return 0
        if not args.model:
            p.error("give a model file (or --export / --import)")
        from ..target import host_threads
        from ..tuning.measure import MeasureSettings
        from ..tuning.search import tune

        inputs = [np.load(f) for f in args.input] or None
        result = tune(
            args.model,
            inputs,
            target=args.target,
            runner=args.runner,
            budget_minutes=args.budget_minutes,
            max_trials=args.max_trials,
            db=db,
            cluster=args.cluster,
            workers=args.workers,
            settings=MeasureSettings(threads=args.threads or host_threads()),
            progress=not args.no_progress,
            report=args.report,
        )
    except (XGenError, OSError, ValueError) as e:
        print(f"xgen-tune: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"xgen-tune: interrupted; what was measured is in {db}", file=sys.stderr)
        return 130
    print(result.summary())
    if args.report:
        print(f"report: {args.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
