"""Caches check what they reuse.

The kernel cache rebuilds an object whose bytes do not match its checksum (with a warning
naming it), removes old temporaries and says clearly when it cannot be used.
"""

from __future__ import annotations

import os
import time
import warnings

import pytest

from xgen_mlir import errors
from xgen_mlir.codegen import toolchain as tc

SOURCE = "int xgen_probe(int a) { return a + 1; }\n"
GENERIC = tc.Toolchain("gcc", ("-fno-unroll-loops",))


# -- the kernel cache -------------------------------------------------------------------


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XGEN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "kernels"


@pytest.mark.parametrize(
    "damage", [b"", b"\x7fELF", os.urandom(512)], ids=["empty", "cut", "noise"]
)
def test_a_damaged_cache_entry_is_rebuilt_with_a_warning(cache, damage):
    obj = tc.compile_object(SOURCE, GENERIC, "probe")
    good = obj.read_bytes()
    assert (cache / (obj.name + ".sha256")).is_file()
    obj.write_bytes(damage)
    with pytest.warns(UserWarning, match=f"kernel cache entry {obj} does not match"):
        again = tc.compile_object(SOURCE, GENERIC, "probe")
    assert again == obj and obj.read_bytes() == good
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a sound entry is reused quietly
        assert tc.compile_object(SOURCE, GENERIC, "probe") == obj


def test_an_entry_without_checksum_is_rebuilt_quietly(cache):
    """A crash between the two renames, or a cache from before checksums."""
    obj = tc.compile_object(SOURCE, GENERIC, "probe")
    good = obj.read_bytes()
    (cache / (obj.name + ".sha256")).unlink()
    obj.write_bytes(b"garbage")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tc.compile_object(SOURCE, GENERIC, "probe")
    assert obj.read_bytes() == good


def test_old_temporaries_are_removed_young_ones_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("XGEN_CACHE_DIR", str(tmp_path))
    folder = tmp_path / "kernels"
    folder.mkdir()
    old, young = folder / "k-abc.1234.tmp.o", folder / ".k-abc.c.x1y2.tmp"
    for path in (old, young):
        path.write_bytes(b"half")
    hours_ago = time.time() - 2 * 3600
    os.utime(old, (hours_ago, hours_ago))
    tc.compile_object(SOURCE, GENERIC, "probe")
    assert not old.exists() and young.exists()
    assert not list(folder.glob("probe-*.tmp*"))  # the compile's own temporaries are gone


def test_an_unusable_cache_folder_is_a_clear_error(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("XGEN_CACHE_DIR", str(blocker))
    with pytest.raises(errors.CacheError, match="kernel cache .*not-a-folder.*XGEN_CACHE_DIR"):
        tc.compile_object(SOURCE, GENERIC, "probe")
