"""Files that must survive a crash: written to a temporary file beside the target, then
renamed over it, so a reader sees the old file or the new one, never a truncated one."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from .errors import XGenError


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (parents created). A folder at ``path`` is an
    ``XGenError`` naming it."""
    path = Path(path)
    if path.is_dir():
        raise XGenError(f"{path} is a directory; give a file name (e.g. {path / 'model.vmfb'})")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def remove_stale_temporaries(folder: Path, max_age_s: float = 3600.0) -> int:
    """Delete ``*.tmp*`` files in ``folder`` older than ``max_age_s``: what a writer killed
    between writing and renaming left behind (younger ones may still be being written by
    another process). Returns how many were removed; errors are ignored."""
    removed, now = 0, time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        if ".tmp" not in entry.name:
            continue
        try:
            if entry.is_file(follow_symlinks=False) and now - entry.stat().st_mtime > max_age_s:
                os.unlink(entry.path)
                removed += 1
        except OSError:
            pass
    return removed
