"""Caches check what they reuse; compiles leave nothing in the temp directory unless asked.

The kernel cache rebuilds an object whose bytes do not match its checksum (with a warning
naming it), removes old temporaries and says clearly when it cannot be used. A failed
pipeline or IREE compile deletes its scratch folders unless ``keep_temps`` (or
``XGEN_KEEP_TEMPS=1``) asks to keep them; then the error names them with a command that
reproduces the failure.
"""

from __future__ import annotations

import gc
import os
import shlex
import subprocess
import time
import warnings

import pytest
import torch

import xgen_mlir
from xgen_mlir import errors
from xgen_mlir.codegen import toolchain as tc
from xgen_mlir.frontend.mlir_import import new_torch_context, parse_mlir
from xgen_mlir.tools import xgen_opt

SOURCE = "int xgen_probe(int a) { return a + 1; }\n"
GENERIC = tc.Toolchain("gcc", ("-fno-unroll-loops",))

# A torch op no pipeline lowers: the cpu pipeline's hand-off check fails on it.
TORCHY = (
    "func.func @main(%x: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> {\n"
    "  %a = torch.aten.erfinv %x : !torch.vtensor<[4],f32> -> !torch.vtensor<[4],f32>\n"
    "  return %a : !torch.vtensor<[4],f32>\n}\n"
)


def _xgen_entries(tmp):
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith("xgen-"))


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


# -- a failing pass pipeline --------------------------------------------------------------


def _compile_torchy(**options):
    module = parse_mlir(TORCHY, "torchy.mlir", new_torch_context())
    with pytest.raises(errors.PipelineError) as caught:
        xgen_mlir.compile(module, **options)
    return caught.value


def test_failed_pipeline_leaves_no_temp_folder_and_says_how_to_keep_one(tmpdir_env):
    err = _compile_torchy()
    assert "torch.aten.erfinv x1" in str(err)
    assert "keep_temps=True" in str(err) and "XGEN_KEEP_TEMPS=1" in str(err)
    assert err.kept is None and err.reproducer is None
    assert _xgen_entries(tmpdir_env) == []


@pytest.mark.parametrize("how", ["option", "env"])
def test_a_kept_reproducer_reproduces(tmpdir_env, monkeypatch, capsys, how):
    if how == "env":
        monkeypatch.setenv("XGEN_KEEP_TEMPS", "1")
    err = _compile_torchy(**({"keep_temps": True} if how == "option" else {}))
    assert err.kept is not None and err.kept.parent == tmpdir_env
    assert f"input IR kept at {err.kept}" in str(err)
    argv = shlex.split(err.reproducer)
    assert argv[0] == "xgen-opt"
    monkeypatch.delenv("XGEN_KEEP_TEMPS", raising=False)
    assert xgen_opt.main(argv[1:]) == 1
    assert "torch.aten.erfinv x1" in capsys.readouterr().err
    assert _xgen_entries(tmpdir_env) == [err.kept.name]  # the rerun kept nothing more


# -- a failing IREE compile: a float64 model (IREE cannot demote its weights) ------------


def _f64_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).double()
    return model, (torch.randn(2, 4, dtype=torch.float64),)


def test_failed_iree_compile_shows_the_error_not_the_warning_and_cleans_up(tmpdir_env):
    model, inputs = _f64_model()
    with pytest.raises(errors.BackendCompileError) as caught:
        xgen_mlir.compile(model, inputs)
    text = str(caught.value)
    assert "error: 'arith.constant' op failed to verify" in text
    assert "WARNING" not in text and "Old signature" not in text
    assert "The model computes in float64 (@main input 0: tensor<2x4xf64>" in text
    assert "--iree-input-demote-f64-to-f32=false" in text
    assert "keep_temps=True" in text and caught.value.kept is None
    assert _xgen_entries(tmpdir_env) == []


def test_kept_iree_input_reproduces_the_failure(tmpdir_env):
    model, inputs = _f64_model()
    with pytest.raises(errors.BackendCompileError) as caught:
        xgen_mlir.compile(model, inputs, keep_temps=True)
    kept = caught.value.kept
    assert kept is not None and kept.parent == tmpdir_env and (kept / "model.mlirbc").is_file()
    cmd = str(caught.value).split("reproduce with:\n", 1)[1].strip()
    proc = subprocess.run(shlex.split(cmd), capture_output=True, text=True)
    assert proc.returncode != 0 and "failed to verify" in proc.stderr


def test_f64_compiles_on_cpu_when_demotion_is_off(tmpdir_env):
    """What the error suggests works: llvm-cpu computes in float64."""
    model, inputs = _f64_model()
    module = xgen_mlir.compile(
        model, inputs, extra_iree_flags=["--iree-input-demote-f64-to-f32=false"]
    )
    got = module(*inputs)
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, model(*inputs).detach(), rtol=1e-12, atol=1e-12)


# -- a successful compile -----------------------------------------------------------------


def test_external_weights_live_as_long_as_the_module(tmpdir_env):
    model = torch.nn.Linear(8, 8)
    x = torch.randn(1, 8)
    module = xgen_mlir.compile(model, (x,), external_weights=True)
    assert module.parameters is not None
    assert _xgen_entries(tmpdir_env) == [os.path.basename(os.path.dirname(module.parameters))]
    torch.testing.assert_close(module(x), model(x).detach(), rtol=1e-5, atol=1e-5)
    del module
    gc.collect()
    assert _xgen_entries(tmpdir_env) == []
