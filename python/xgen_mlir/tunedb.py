"""The tuning database: measured configs per (op signature, host), in SQLite.

A record says: on this host, the dispatch whose op has this signature ran in ``seconds`` with
this config (or failed to compile / crashed / hung / computed wrong numbers: ``status``).
``compile()`` applies, for each signature, the fastest ``ok`` record of the running host;
``xgen_mlir.tune`` adds records.

Why SQLite: one file, transactions (a trial is one transaction, so a ``kill -9`` loses at most
the trial in flight), many writers (WAL journal, a busy timeout: Ray workers on several
machines report to one driver, several tuners may share a file), and nothing to run.

Host identity is what makes a measurement transferable: CPU model, the ISA features that decide
which kernels run fast, cache sizes, the thread count the module runs on and the IREE version
that generated the code. Records of another host are kept (they can seed a cost model) but
never applied; a record whose checksum does not match its fields (a hand-edited or damaged
row) is ignored with a warning.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sqlite3
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from .errors import XGenError
from .target import cache_bytes, cpu_model, host_threads, isa_flags

DEFAULT_DB_ENV = "XGEN_TUNING_DB"
# A config only replaces IREE's own where it was this much faster than IREE's config in the
# same interleaved measurement: smaller differences are within a shared machine's noise.
MIN_GAIN = 1.03
# The detail of a record confirmed alone (measured again beside IREE's config) whose config
# then made the model faster (xgen_mlir.tune's checks in the model): only those are applied.
CONFIRMED = "confirmed"
# ... and of one whose config did not make the model faster beyond the measured noise (the
# times and ratio may follow after ": "): never applied, kept for the cost model.
REJECTED_IN_MODEL = "confirmed alone, slower in the model"
# ... and of a measured choice whose check in the model the tune's budget did not reach: not
# applied (a rejection to every reader), but checked again by the next tune.
UNCHECKED_IN_MODEL = f"{REJECTED_IN_MODEL} (not checked in the model: the budget ran out)"
STATUSES = ("ok", "compile_error", "runtime_error", "wrong_numbers", "timeout")


def readable_detail(detail: str) -> str:
    """A record's detail as a report says it: an unchecked choice reads as one (its stored
    text starts as a rejection's, so that every reader skips it, but it was never timed in
    the model)."""
    if detail == UNCHECKED_IN_MODEL:
        return "confirmed alone, not checked in the model (the tune's budget ran out): not applied"
    return detail


# The config kind of a record that measured an algorithm (a Winograd conv) against the direct
# op (its baseline): an algorithm choice, not a contraction config (tuning/choices.py).
ALGORITHM = "algorithm"


class TuningDBError(XGenError):
    """The database file cannot be used (not SQLite, another schema, unwritable)."""


def _iree_version() -> str:
    try:
        from importlib.metadata import version

        return version("iree-base-compiler")
    except Exception:
        return "unknown"


@dataclass(frozen=True)
class HostIdentity:
    """What must match for a measured config to apply on a machine."""

    cpu: str
    arch: str
    isa: tuple[str, ...]
    l1_bytes: int
    l2_bytes: int
    l3_bytes: int
    threads: int
    iree: str

    @classmethod
    def current(cls, threads: int | None = None) -> HostIdentity:
        return cls(
            cpu=cpu_model(),
            arch=platform.machine(),
            isa=tuple(isa_flags()),
            l1_bytes=cache_bytes(1) or 0,
            l2_bytes=cache_bytes(2) or 0,
            l3_bytes=cache_bytes(3) or 0,
            threads=threads or host_threads(),
            iree=_iree_version(),
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> HostIdentity:
        data = json.loads(text)
        data["isa"] = tuple(data["isa"])
        return cls(**data)

    @property
    def key(self) -> str:
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:16]

    def describe(self) -> str:
        return f"{self.cpu} ({self.arch}, {self.threads} threads, IREE {self.iree})"


@dataclass
class Record:
    """One measured trial."""

    signature: str  # fusion.tunable: the op, its shapes and what the dispatch fuses
    config: dict[str, Any]  # fusion.tunable.Config as a dict
    status: str  # one of STATUSES
    seconds: float | None  # median time of the standalone dispatch (None unless ok)
    baseline_seconds: float | None  # IREE's own config, interleaved with it
    host_key: str = ""
    description: str = ""  # the op, for people ("matmul 196x112x672 f32 +exp")
    features: dict[str, float] = field(default_factory=dict)  # the cost model's inputs
    detail: str = ""  # why it failed
    created: float = 0.0

    def config_json(self) -> str:
        return json.dumps(self.config, sort_keys=True)

    def checksum(self) -> str:
        fields = [
            self.host_key,
            self.signature,
            self.config_json(),
            self.status,
            repr(self.seconds),
            repr(self.baseline_seconds),
        ]
        return hashlib.sha256("\x1f".join(fields).encode()).hexdigest()[:16]

    @property
    def speedup(self) -> float | None:
        if self.status != "ok" or not self.seconds or not self.baseline_seconds:
            return None
        return self.baseline_seconds / self.seconds


_SCHEMA = """
CREATE TABLE IF NOT EXISTS hosts (host_key TEXT PRIMARY KEY, info TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
  id INTEGER PRIMARY KEY,
  host_key TEXT NOT NULL,
  signature TEXT NOT NULL,
  config TEXT NOT NULL,
  status TEXT NOT NULL,
  seconds REAL,
  baseline_seconds REAL,
  description TEXT NOT NULL DEFAULT '',
  features TEXT NOT NULL DEFAULT '{}',
  detail TEXT NOT NULL DEFAULT '',
  created REAL NOT NULL,
  checksum TEXT NOT NULL,
  UNIQUE (host_key, signature, config)
);
CREATE INDEX IF NOT EXISTS records_by_op ON records (host_key, signature);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
SCHEMA_VERSION = "1"


def default_db_path() -> Path:
    """``$XGEN_TUNING_DB``, else ``~/.cache/xgen_mlir/tuning.db``."""
    env = os.environ.get(DEFAULT_DB_ENV)
    if env:
        return Path(env)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "xgen_mlir" / "tuning.db"


class TuningDB:
    """A tuning database file; open it with ``TuningDB(path)`` (created if missing)."""

    def __init__(self, path: str | os.PathLike[str], readonly: bool = False) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise TuningDBError(f"tuning database {self.path} is a directory; give a file name")
        if readonly and not self.path.exists():
            raise TuningDBError(f"tuning database {self.path} does not exist")
        if not readonly:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            uri = f"file:{self.path}?mode=ro" if readonly else str(self.path)
            self._conn = sqlite3.connect(uri, uri=readonly, timeout=60.0, isolation_level=None)
            self._conn.execute("PRAGMA busy_timeout = 60000")
            if not readonly:
                self._conn.execute("PRAGMA journal_mode = WAL")
                self._conn.execute("PRAGMA synchronous = NORMAL")
                with self._transaction() as c:
                    for stmt in filter(str.strip, _SCHEMA.split(";")):
                        c.execute(stmt)
                    c.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            row = self._conn.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
        except sqlite3.DatabaseError as e:
            raise TuningDBError(
                f"{self.path} is not a usable tuning database ({e}); move it away or give "
                "another path"
            ) from None
        if row is None or row[0] != SCHEMA_VERSION:
            raise TuningDBError(
                f"{self.path}: tuning database schema {row[0] if row else 'missing'}, this "
                f"version of xgen_mlir reads schema {SCHEMA_VERSION}"
            )

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> TuningDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def add_host(self, host: HostIdentity) -> str:
        with self._transaction() as c:
            c.execute("INSERT OR IGNORE INTO hosts VALUES (?, ?)", (host.key, host.to_json()))
        return host.key

    def hosts(self) -> dict[str, HostIdentity]:
        out = {}
        for key, info in self._conn.execute("SELECT host_key, info FROM hosts"):
            try:
                out[key] = HostIdentity.from_json(info)
            except (ValueError, TypeError, KeyError):
                warnings.warn(f"{self.path}: host {key} has an unreadable identity", stacklevel=2)
        return out

    def name_device(self, name: str, host: HostIdentity) -> None:
        """Remember that the runner ``name`` ("qemu", "ssh://pi@board") measured as ``host``:
        a compile for that device then finds its records without reaching the device."""
        self.add_host(host)
        with self._transaction() as c:
            c.execute(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)", (f"device:{name}", host.to_json())
            )

    def devices(self) -> dict[str, HostIdentity]:
        """Each runner name tuned through, with the identity it last measured as (an
        unreadable entry is left out)."""
        out = {}
        for name, info in self._conn.execute(
            "SELECT name, value FROM meta WHERE name LIKE 'device:%'"
        ):
            try:
                out[name.removeprefix("device:")] = HostIdentity.from_json(info)
            except (ValueError, TypeError, KeyError):
                continue
        return out

    def device(self, name: str) -> HostIdentity | None:
        """The identity the runner ``name`` last measured as (None: never tuned through it)."""
        return self.devices().get(name)

    def add(self, record: Record, host: HostIdentity | None = None) -> None:
        """Store one trial in its own transaction; a config measured again replaces the old
        measurement of it."""
        if record.status not in STATUSES:
            raise ValueError(f"record status {record.status!r} is not one of {STATUSES}")
        if host is not None:
            record.host_key = self.add_host(host)
        if not record.host_key:
            raise ValueError("a record needs its host")
        record.created = record.created or time.time()
        with self._transaction() as c:
            c.execute(
                "INSERT OR REPLACE INTO records (host_key, signature, config, status, seconds, "
                "baseline_seconds, description, features, detail, created, checksum) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.host_key,
                    record.signature,
                    record.config_json(),
                    record.status,
                    record.seconds,
                    record.baseline_seconds,
                    record.description,
                    json.dumps(record.features, sort_keys=True),
                    record.detail,
                    record.created,
                    record.checksum(),
                ),
            )

    def reject(self, host: HostIdentity, signature: str, config: dict[str, Any], why: str) -> None:
        """Mark a record as not to be applied (it stays, with why, for the cost model)."""
        for r in self.records(host.key, signature):
            if r.config == config:
                r.detail = why
                self.add(r)

    def records(self, host_key: str | None = None, signature: str | None = None) -> list[Record]:
        """Every intact record (of one host / one signature when given); damaged ones are
        skipped with a warning naming them."""
        where, args = [], []
        if host_key is not None:
            where.append("host_key = ?")
            args.append(host_key)
        if signature is not None:
            where.append("signature = ?")
            args.append(signature)
        sql = (
            "SELECT id, host_key, signature, config, status, seconds, baseline_seconds, "
            "description, features, detail, created, checksum FROM records"
        )
        if where:
            sql += " WHERE " + " AND ".join(where)
        out, damaged = [], []
        for row in self._conn.execute(sql + " ORDER BY id", args):
            record = _row_record(row)
            if record is None:
                damaged.append(row[0])
            else:
                out.append(record)
        if damaged:
            warnings.warn(
                f"{self.path}: {len(damaged)} damaged tuning record(s) ignored (rows "
                f"{damaged[:10]}{'...' if len(damaged) > 10 else ''}: checksum or fields wrong)",
                stacklevel=2,
            )
        return out

    def best(self, host: HostIdentity) -> dict[str, Record]:
        """Per signature, the ``ok`` record of ``host`` with the largest speedup over IREE's
        config timed beside it (times of two batches may be timed differently: whole calls
        or dispatches), if that is at least ``MIN_GAIN`` in a confirming measurement
        (``CONFIRMED``): what ``compile()`` applies."""
        best: dict[str, Record] = {}
        for r in self.records(host.key):
            if r.config.get("kind") in ("iree", ALGORITHM):
                continue
            if r.speedup is None or r.speedup < MIN_GAIN:
                continue
            if r.detail != CONFIRMED:
                continue
            if r.signature not in best or r.speedup > (best[r.signature].speedup or 0):
                best[r.signature] = r
        return best

    def choices(self, host: HostIdentity) -> dict[str, list[Record]]:
        """Per signature, ``host``'s ``ALGORITHM`` records (every variant measured, failed
        ones too: the pass that reads them decides)."""
        out: dict[str, list[Record]] = {}
        for r in self.records(host.key):
            if r.config.get("kind") == ALGORITHM:
                out.setdefault(r.signature, []).append(r)
        return out

    def foreign_hosts(self, host: HostIdentity) -> list[HostIdentity]:
        return [h for k, h in self.hosts().items() if k != host.key]

    def export(self, path: str | os.PathLike[str]) -> int:
        """Every intact record, with its host, as JSON lines (written atomically)."""
        from .fileio import atomic_write_bytes

        hosts = {k: h.to_json() for k, h in self.hosts().items()}
        lines = []
        for r in self.records():
            data = asdict(r)
            data["host"] = json.loads(hosts.get(r.host_key, "{}"))
            data["checksum"] = r.checksum()
            lines.append(json.dumps(data, sort_keys=True))
        atomic_write_bytes(path, ("\n".join(lines) + "\n" if lines else "").encode())
        return len(lines)

    def import_(self, path: str | os.PathLike[str]) -> tuple[int, int]:
        """Records exported by :meth:`export` (from any host): (added, rejected). A line that
        is not a record, or whose checksum does not match, is rejected with a warning."""
        added, rejected = 0, []
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                host = HostIdentity.from_json(json.dumps(data.pop("host")))
                checksum = data.pop("checksum")
                record = Record(**data)
                if record.host_key != host.key or record.checksum() != checksum:
                    raise ValueError("checksum")
                if record.status not in STATUSES:
                    raise ValueError("status")
            except (ValueError, TypeError, KeyError):
                rejected.append(n)
                continue
            self.add(record, host)
            added += 1
        if rejected:
            warnings.warn(
                f"{path}: {len(rejected)} line(s) are not intact tuning records and were not "
                f"imported (lines {rejected[:10]})",
                stacklevel=2,
            )
        return added, len(rejected)


def _row_record(row: tuple[Any, ...]) -> Record | None:
    (_id, host_key, signature, config, status, seconds, base, desc, feats, detail, created, cs) = (
        row
    )
    try:
        record = Record(
            signature=signature,
            config=json.loads(config),
            status=status,
            seconds=seconds,
            baseline_seconds=base,
            host_key=host_key,
            description=desc,
            features=json.loads(feats),
            detail=detail,
            created=created,
        )
    except (ValueError, TypeError):
        return None
    if record.checksum() != cs or status not in STATUSES or not isinstance(record.config, dict):
        return None
    return record


def _host_records(
    db: str | os.PathLike[str] | None,
    host: HostIdentity,
    read: Callable[[TuningDB, HostIdentity], Any],
    what: str,
    instead: str,
    foreign_counts: Callable[[TuningDB, HostIdentity], Any] | None = None,
) -> tuple[Any, Path | None]:
    """``read(db, host)`` from ``db`` (None: the default path, only if it exists; a named
    path that does not exist is an error), warning when only other hosts have ``what``: the
    hosts for which ``foreign_counts`` (default: every other host with any record) is true."""
    path = Path(db) if db is not None else default_db_path()
    if not path.exists():
        if db is not None:
            raise TuningDBError(f"tuning database {path} does not exist")
        return {}, None
    with TuningDB(path, readonly=True) as tdb:
        found = read(tdb, host)
        foreign = [
            h for h in tdb.foreign_hosts(host) if foreign_counts is None or foreign_counts(tdb, h)
        ]
    if foreign and not found:
        names = "; ".join(sorted({h.describe() for h in foreign}))
        warnings.warn(
            f"tuning database {path} has {what} only of other hosts ({names}); this host "
            f"({host.describe()}) {instead}",
            stacklevel=4,
        )
    return found, path


def device_identity(
    db: str | os.PathLike[str] | None, name: str, threads: int | None = None
) -> HostIdentity | None:
    """The identity of the device xgen_mlir.tune measured through the runner ``name`` into
    ``db`` (None: the default path), with ``threads`` if given; None, with a warning, when
    the database never saw that runner."""
    path = Path(db) if db is not None else default_db_path()
    if not path.exists():
        raise TuningDBError(f"tuning database {path} does not exist")
    with TuningDB(path, readonly=True) as tdb:
        known = tdb.devices()
    host = known.get(name)
    if host is None:
        warnings.warn(
            f"tuning database {path} has no device measured through runner {name!r} (it has: "
            f"{', '.join(sorted(known)) or 'none'}); the module uses untuned configs",
            stacklevel=3,
        )
        return None
    return replace(host, threads=threads) if threads else host


def records_for(
    db: str | os.PathLike[str] | None, host: HostIdentity
) -> tuple[dict[str, Record], str]:
    """The records ``compile()`` applies for ``host`` from ``db`` (None: the default path,
    only if it exists), and a note for the report: which file, or why none were used. Records
    of other hosts are ignored with a warning naming the hosts."""
    best, path = _host_records(db, host, lambda t, h: t.best(h), "records", "uses untuned configs")
    if path is None:
        return {}, ""
    return best, f"{path}: {len(best)} tuned op signature(s) for {host.describe()}"


def choice_records_for(
    db: str | os.PathLike[str] | None, host: HostIdentity
) -> tuple[dict[str, list[Record]], str]:
    """The algorithm choices measured on ``host`` in ``db`` (None: the default path, only if
    it exists), as :func:`records_for` does for configs."""
    found, path = _host_records(
        db,
        host,
        lambda t, h: t.choices(h),
        "algorithm choices",
        "keeps every conv direct",
        foreign_counts=lambda t, h: t.choices(h),
    )
    if path is None:
        return {}, ""
    return found, f"{path}: {len(found)} measured conv signature(s) for {host.describe()}"
