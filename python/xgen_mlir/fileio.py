"""Files that must survive a crash, and the temporary files a compile makes.

Cache and output files are written to a temporary file beside the target, then renamed over
it, so a reader sees the old file or the new one, never a truncated one. Scratch folders
(a failed pipeline's reproducer, IREE's input) are removed when the compile ends, failed or
not, unless the user asked to keep them: ``keep_temps=True`` (``--keep-temps`` on the CLIs,
or ``XGEN_KEEP_TEMPS=1``); then the error says where they are.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from .errors import XGenError

KEEP_TEMPS_ENV = "XGEN_KEEP_TEMPS"

# How an error tells the user to keep what it deleted.
KEEP_TEMPS_HOW = (
    f"rerun with keep_temps=True, --keep-temps (xgen-opt, xgen-compile) or {KEEP_TEMPS_ENV}=1"
)


def keep_temps(requested: bool | None = None) -> bool:
    """Whether scratch folders outlive the compile: ``requested`` if given, else the
    ``XGEN_KEEP_TEMPS`` environment variable (set and not ``0``/``false``/``no``)."""
    if requested is not None:
        return requested
    value = os.environ.get(KEEP_TEMPS_ENV, "").strip().lower()
    return value not in ("", "0", "false", "no", "off")


@contextlib.contextmanager
def _atomic_target(path: Path) -> Iterator[IO[bytes]]:
    """A file to write ``path``'s new content into: fsynced and renamed over ``path`` when
    the block ends, removed if it raises (a reader sees the old file or the new one)."""
    if path.is_dir():
        raise XGenError(f"{path} is a directory; give a file name (e.g. {path / 'model.vmfb'})")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (parents created). A folder at ``path`` is an
    ``XGenError`` naming it."""
    path = Path(path)
    with _atomic_target(path) as f:
        f.write(data)
    return path


def atomic_copy_file(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> Path:
    """Copy ``src`` to ``dst`` atomically, streamed (archives too big to hold in memory)."""
    dst = Path(dst)
    with _atomic_target(dst) as out, open(src, "rb") as inp:
        shutil.copyfileobj(inp, out, 1 << 20)
    return dst


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


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """:func:`atomic_write_bytes` of UTF-8 text."""
    return atomic_write_bytes(path, text.encode())


def _exchange_paths(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    import ctypes
    import ctypes.util
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
    renameat2.argtypes += [ctypes.c_uint]
    renameat2.restype = ctypes.c_int
    rc = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    return rc == 0


def atomic_replace_dir(new: str | os.PathLike[str], target: str | os.PathLike[str]) -> Path:
    """Put the complete folder ``new`` (a sibling of ``target``) at ``target``, replacing what
    was there only once ``new`` is complete: a reader sees the old folder or the new one.

    An existing ``target`` is swapped with ``new`` in one step where Linux allows it
    (renameat2 RENAME_EXCHANGE), else moved aside to a hidden sibling first; the old folder
    is then deleted. A crash between the two renames of the fallback leaves the old folder
    beside the target as ``.NAME.old-*`` (never a half-written one at ``target``)."""
    import shutil

    new, target = Path(new), Path(target)
    if not target.exists() and not target.is_symlink():
        os.replace(new, target)
        return target
    if _exchange_paths(new, target):
        shutil.rmtree(new, ignore_errors=True)  # now holds the old folder
        return target
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    os.rmdir(old)
    os.replace(target, old)
    try:
        os.replace(new, target)
    except BaseException:
        os.replace(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)
    return target
