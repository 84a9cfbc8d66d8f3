"""Modules and bundles from untrusted places (issue 33): corrupted .vmfb files, checksums,
isolated calls, tampered or malformed bundles, bad entry names, odd arguments to load() and
to calls. Whatever goes wrong is an XGenError naming the file, never a raw traceback, and with
``isolated=True`` never a dead test process."""

from __future__ import annotations

import gc
import json
import os
import platform
import random
import shutil
import signal
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import check_close

import xgen_mlir
from xgen_mlir import errors
from xgen_mlir.models import vision
from xgen_mlir.runtime import bundle as bundle_mod
from xgen_mlir.runtime import module as module_mod
from xgen_mlir.runtime.bundle import BundleMismatchError, load_bundle
from xgen_mlir.runtime.module import CompiledModule
from xgen_mlir.runtime.signature import check_entry_name

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def cnn():
    """small_cnn compiled with its weights inside the module; (module, x, expected y)."""
    model, x = vision.small_cnn(), vision.random_input("small_cnn")
    with torch.no_grad():
        want = model(x).numpy()
    return xgen_mlir.compile(model, (x,)), x, want


@pytest.fixture(scope="module")
def cnn_ext():
    """small_cnn with external weights (a weights.irpa in its bundle)."""
    model, x = vision.small_cnn(), vision.random_input("small_cnn")
    with torch.no_grad():
        want = model(x).numpy()
    module = xgen_mlir.compile(model, (x,), external_weights=1024)
    assert module.parameters is not None
    return module, x, want


def flip_bytes(data: bytes, seed: int, n: int = 4) -> bytes:
    out, rng = bytearray(data), random.Random(seed)
    for _ in range(n):
        i = rng.randrange(len(out))
        out[i] ^= rng.randrange(1, 256)
    return bytes(out)


def poison_code(vmfb: bytes) -> bytes:
    """The module with every byte of its embedded executables' machine code replaced by an
    undefined instruction (x86-64 ud2, aarch64 udf): its first dispatch dies with SIGILL."""
    data = bytearray(vmfb)
    trap = b"\x0f\x0b" if platform.machine().lower() in ("x86_64", "amd64") else b"\0\0\0\0"
    start, patched = 0, 0
    while (elf := data.find(b"\x7fELF\x02\x01", start)) >= 0:  # 64-bit little-endian ELF
        start = elf + 4
        (shoff,) = struct.unpack_from("<Q", data, elf + 0x28)
        shentsize, shnum = struct.unpack_from("<HH", data, elf + 0x3A)
        for i in range(shnum):
            _, kind, flags, _, offset, size = struct.unpack_from(
                "<IIQQQQ", data, elf + shoff + i * shentsize
            )
            if kind == 1 and flags & 0x4:  # SHT_PROGBITS, SHF_EXECINSTR
                at = elf + offset
                data[at : at + size] = (trap * (size // len(trap) + 1))[:size]
                patched += 1
    assert patched, "no executable code found in the module"
    return bytes(data)


def run_sh(bundle: Path, *args: str) -> subprocess.CompletedProcess:
    """The bundle's own run.sh, as on a device: sh, stock iree-run-module on PATH."""
    env = {"PATH": f"{VENV_BIN}:/usr/bin:/bin"}
    return subprocess.run(
        ["sh", str(bundle / "run.sh"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


# -- entry names ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["main", "forward", "_f1", "a.b$c-d"])
def test_good_entry_names(name):
    assert check_entry_name(name) == name


@pytest.mark.parametrize("name", ["a/b", "x;rm -rf", "it's", 'q"', "a`id`", "1st", "", "a b"])
def test_bad_entry_names_refused_everywhere(name, cnn, tmp_path):
    module, _, _ = cnn
    with pytest.raises(errors.XGenError, match="invalid entry name"):
        check_entry_name(name)
    path = module.save(tmp_path / "m.vmfb")
    with pytest.raises(errors.ModuleLoadError, match=r"m\.vmfb: invalid entry name"):
        xgen_mlir.load(path, entry=name)
    with pytest.raises(errors.ModuleLoadError, match="invalid entry name"):
        CompiledModule(module.vmfb, entry=name)


def test_unreadable_signature_is_an_error_not_a_silent_skip(cnn, monkeypatch, tmp_path):
    module, _, _ = cnn
    monkeypatch.setattr(module_mod, "parse_declaration", lambda decl: None)
    with pytest.raises(errors.ModuleLoadError, match="cannot read the signature of entry"):
        xgen_mlir.load(module.save(tmp_path / "m.vmfb"))


# -- load() of things that are not a module file ------------------------------------------------
def test_load_of_none_directory_and_bytes(cnn, tmp_path):
    module, x, want = cnn
    with pytest.raises(errors.ModuleLoadError, match="takes the path of a .vmfb file.*NoneType"):
        xgen_mlir.load(None)  # type: ignore[arg-type]
    with pytest.raises(errors.ModuleLoadError, match="is a directory, not a module file"):
        xgen_mlir.load(tmp_path)
    bundle = module.save_bundle(tmp_path / "b")
    with pytest.raises(errors.ModuleLoadError, match="it is a bundle: use xgen_mlir.load_bundle"):
        xgen_mlir.load(bundle)
    loaded = xgen_mlir.load(module.vmfb)  # the bytes of a module load like its file
    check_close(loaded(x).numpy(), want, atol=1e-4, rtol=1e-4, what="load(bytes)")
    with pytest.raises(errors.ModuleLoadError, match="<bytes>: not a valid IREE module"):
        xgen_mlir.load(b"not a module at all " * 10)


# -- call-time arguments ------------------------------------------------------------------------
def test_keyword_and_meta_and_odd_tensors_are_clear_errors(cnn):
    module, x, _ = cnn
    with pytest.raises(errors.InputMismatchError, match="by position only.*'x'"):
        module(x=x)
    with pytest.raises(errors.InputMismatchError, match="input 0: a meta tensor"):
        module(torch.empty(1, 3, 32, 32, device="meta"))
    # bf16 is a dtype the runtime carries now; into an f32 module it is a named mismatch
    with pytest.raises(errors.InputMismatchError, match="expected dtype float32, got .*bfloat16"):
        module(torch.zeros(1, 3, 32, 32, dtype=torch.bfloat16))
    with pytest.raises(errors.InputMismatchError, match="input 0: a numpy array of dtype object"):
        module(np.empty((1, 3, 32, 32), dtype=object))


# -- every exception out of IREE's runtime becomes an XGenError ------------------------------
def test_iree_exceptions_at_load_and_call_are_mapped(cnn, monkeypatch, tmp_path):
    import iree.runtime as rt

    module, x, _ = cnn
    path = module.save(tmp_path / "m.vmfb")

    def index_error(*_args, **_kwargs):
        raise IndexError("list index out of range")

    with monkeypatch.context() as m:
        m.setattr(rt.VmModule, "copy_buffer", index_error)
        with pytest.raises(errors.ModuleLoadError, match=r"m\.vmfb: not a valid IREE module"):
            xgen_mlir.load(path)
    loaded = xgen_mlir.load(path)
    with monkeypatch.context() as m:
        m.setattr(rt, "SystemContext", index_error)
        with pytest.raises(errors.ModuleLoadError, match=r"m\.vmfb: cannot load entry 'main'"):
            loaded(x)
    loaded(x)  # loads for real now
    loaded._fn = index_error
    with pytest.raises(errors.ModuleCallError, match=r"m\.vmfb: call of 'main' failed.*index"):
        loaded(x)
    with pytest.raises(errors.ModuleCallError, match=r"m\.vmfb: call of 'main' failed"):
        loaded.benchmark(x, runs=1, warmup=0)


_CORRUPT_CHILD = textwrap.dedent(
    """
    import sys
    import numpy as np
    import xgen_mlir
    from xgen_mlir.errors import XGenError
    x = np.load(sys.argv[1])
    for path in sys.argv[2:]:
        print("START", path, flush=True)
        try:
            xgen_mlir.load(path)(x)
            print("DONE", path, "ran", flush=True)
        except XGenError as e:
            print("DONE", path, "XGenError", flush=True)
        except BaseException as e:
            print("DONE", path, "RAW", type(e).__name__, str(e)[:200].replace("\\n", " "),
                  flush=True)
    """
)
SEEDS = list(range(10))
# seconds after which a corrupted module's call counts as hung (a corrupted loop bound can make
# a dispatch run forever): the child running them in-process is then killed, and an isolated
# worker stopped by its call_timeout
HANG_S = 120


def _text(out: bytes | str | None) -> str:
    return out.decode(errors="replace") if isinstance(out, bytes) else (out or "")


@pytest.fixture(scope="module")
def corrupted(cnn, tmp_path_factory):
    """The cnn module with 4 random bytes changed, for a few fixed seeds."""
    module, x, _ = cnn
    folder = tmp_path_factory.mktemp("corrupt")
    np.save(folder / "x.npy", x.numpy())
    paths = []
    for seed in SEEDS:
        path = folder / f"seed{seed}.vmfb"
        path.write_bytes(flip_bytes(module.vmfb, seed))
        paths.append(path)
    return folder, paths


def test_corrupted_vmfb_in_process_raises_nothing_but_xgen_errors(corrupted):
    """In-process, a corrupted module either runs, raises an XGenError, or (machine code or
    memory corrupted) kills the process by a signal or never returns (a corrupted loop
    bound): the documented limits isolated=True (with call_timeout) lifts. It never raises a
    raw Python exception. Run in child processes, restarted after a death or a hang."""
    folder, paths = corrupted
    script = folder / "child.py"
    script.write_text(_CORRUPT_CHILD)
    left, outcomes = [str(p) for p in paths], {}
    while left:
        hung = False
        try:
            proc = subprocess.run(
                [sys.executable, str(script), str(folder / "x.npy"), *left],
                capture_output=True,
                text=True,
                timeout=HANG_S,
            )
            stdout, stderr, code = proc.stdout, proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as e:  # killed on the one it started last
            hung = True
            stdout, stderr, code = _text(e.stdout), _text(e.stderr), None
        started = [ln.split()[1] for ln in stdout.splitlines() if ln.startswith("START")]
        for line in stdout.splitlines():
            if line.startswith("DONE"):
                _, path, outcome = line.split(maxsplit=2)
                outcomes[path] = outcome
        assert started, f"child failed to start: {stderr[-2000:]}"
        last = started[-1]
        if last not in outcomes:  # died (or hung) on this one
            if hung:
                outcomes[last] = "hung"
            else:
                assert code is not None and code < 0, f"{last}: child exited {code}: {stderr}"
                outcomes[last] = f"signal {-code}"
        left = left[left.index(last) + 1 :]
    raw = {p: o for p, o in outcomes.items() if o.startswith("RAW")}
    assert not raw, f"raw exceptions escaped: {raw}"
    assert len(outcomes) == len(paths)


def test_corrupted_vmfb_isolated_never_kills_the_caller(corrupted, cnn):
    _, paths = corrupted
    _, x, _ = cnn
    seen = set()
    for path in paths:
        try:
            module = xgen_mlir.load(path, isolated=True, call_timeout=HANG_S / 4)
            out = module(x)
            assert isinstance(out, torch.Tensor)
            seen.add("ran")
        except errors.XGenError as e:
            assert path.name in str(e), str(e)
            seen.add(getattr(e, "signal", None) or type(e).__name__)
    assert seen  # and this process is still here


def test_isolated_crash_is_an_error_naming_the_signal(cnn, tmp_path):
    module, x, _ = cnn
    path = tmp_path / "poisoned.vmfb"
    path.write_bytes(poison_code(module.vmfb))
    crashing = xgen_mlir.load(path, isolated=True)
    for _ in range(2):  # and again: a fresh worker, the same clear error
        with pytest.raises(errors.ModuleCallError) as info:
            crashing(x)
        e = info.value
        assert e.signal in ("SIGILL", "SIGSEGV", "SIGTRAP", "SIGBUS"), str(e)
        assert f"killed by {e.signal}" in str(e) and "poisoned.vmfb" in str(e)
        assert "'main'" in str(e)
    # the same module in-process kills its process: show it in a child, not here
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import xgen_mlir, torch; xgen_mlir.load({str(path)!r})(torch.zeros(1, 3, 32, 32))",
        ],
        capture_output=True,
        timeout=300,
    )
    assert proc.returncode < 0, "the poisoned module was expected to crash in-process"


def test_isolated_module_runs_like_in_process(cnn, tmp_path):
    module, x, want = cnn
    isolated = xgen_mlir.load(module.save(tmp_path / "m.vmfb"), isolated=True)
    got = isolated(x)
    assert isinstance(got, torch.Tensor)
    check_close(got.numpy(), want, atol=1e-4, rtol=1e-4, what="isolated call")
    assert isinstance(isolated(x.numpy()), np.ndarray)
    assert isolated.benchmark(x, runs=2, warmup=1).runs == 2
    with pytest.raises(errors.InputMismatchError, match="expected shape"):
        isolated(torch.zeros(1, 3, 8, 8))  # checked here, before the worker
    pid = isolated._runner.pid()
    os.kill(pid, 9)  # a worker that died between calls is replaced
    isolated._runner._proc.wait()
    check_close(isolated(x).numpy(), want, atol=1e-4, rtol=1e-4, what="after a restart")
    assert isolated._runner.pid() != pid


def test_parent_accepts_only_plain_arrays_from_the_worker():
    import io

    from xgen_mlir.runtime import isolated

    stream = io.BytesIO()
    isolated.send(stream, {"ok": True}, [np.arange(6, dtype=np.float32).reshape(2, 3)])
    header, arrays = isolated.receive(io.BytesIO(stream.getvalue()))
    assert header["ok"] is True and arrays[0].shape == (2, 3)
    for bad in (
        {"dtype": "|O", "shape": [1], "nbytes": 8},  # object arrays would unpickle
        {"dtype": "<f4", "shape": [4], "nbytes": 999},  # size that does not add up
        {"dtype": "<f4", "shape": [-1], "nbytes": 0},
    ):
        data = json.dumps({"ok": True, "arrays": [bad]}).encode()
        raw = struct.pack("<I", len(data)) + data + b"\0" * 16
        with pytest.raises(isolated._ProtocolError):
            isolated.receive(io.BytesIO(raw))


# -- the sha256 sidecar -----------------------------------------------------------------------
def test_sha256_sidecar_written_and_checked(cnn, tmp_path):
    module, x, want = cnn
    path = module.save(tmp_path / "m.vmfb")
    sidecar = tmp_path / "m.vmfb.sha256"
    digest = sidecar.read_text().split()
    assert digest == [bundle_mod.sha256(module.vmfb), "m.vmfb"]  # sha256sum -c format
    check_close(xgen_mlir.load(path)(x).numpy(), want, atol=1e-4, rtol=1e-4, what="checked")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one byte of a weight: IREE cannot notice this
    path.write_bytes(bytes(data))
    with pytest.raises(errors.ModuleLoadError, match=r"m\.vmfb: does not match its checksum"):
        xgen_mlir.load(path)
    sidecar.write_text("not a checksum\n")
    with pytest.raises(errors.ModuleLoadError, match="not a sha256 checksum file"):
        xgen_mlir.load(path)
    sidecar.unlink()  # no sidecar: nothing to check against
    xgen_mlir.load(path)


# -- bundles ----------------------------------------------------------------------------------
@pytest.fixture
def ext_bundle(cnn_ext, tmp_path):
    module, x, want = cnn_ext
    return module.save_bundle(tmp_path / "b"), x, want


def test_bundle_in_a_path_with_a_space_and_external_weights(cnn_ext, tmp_path):
    module, x, want = cnn_ext
    bundle = module.save_bundle(tmp_path / "my models" / "cnn bundle")
    assert (bundle / "weights.irpa").is_file()
    np.save(tmp_path / "x.npy", x.numpy())
    proc = run_sh(bundle, f"--input=@{tmp_path / 'x.npy'}", f"--output=@{tmp_path / 'y.npy'}")
    assert proc.returncode == 0, proc.stderr
    check_close(np.load(tmp_path / "y.npy"), want, atol=1e-4, rtol=1e-4, what="run.sh")
    proc = subprocess.run(
        [
            str(ROOT / "runtime_bridge/run_bundle.sh"),
            str(bundle),
            f"--input=@{tmp_path / 'x.npy'}",
            f"--output=@{tmp_path / 'y2.npy'}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    check_close(np.load(tmp_path / "y2.npy"), want, atol=1e-4, rtol=1e-4, what="run_bundle.sh")
    got = load_bundle(bundle, isolated=True)(x).numpy()
    check_close(got, want, atol=1e-4, rtol=1e-4, what="load_bundle(isolated=True)")


def test_tampered_weights_refused_by_load_bundle_and_run_sh(ext_bundle):
    bundle, _, _ = ext_bundle
    weights = bundle / "weights.irpa"
    data = bytearray(weights.read_bytes())
    data[-100] ^= 0x01
    weights.write_bytes(bytes(data))
    with pytest.raises(BundleMismatchError, match=r"weights\.irpa: does not match manifest"):
        load_bundle(bundle)
    proc = run_sh(bundle)
    assert proc.returncode == 3
    assert "weights.irpa does not match manifest.json" in proc.stderr


def _edit_manifest(bundle: Path, **changes) -> None:
    path = bundle / "manifest.json"
    manifest = json.loads(path.read_text())
    for key, value in changes.items():
        if value is None:
            manifest.pop(key)
        else:
            manifest[key] = value
    path.write_text(json.dumps(manifest, indent=2) + "\n")


def test_manifest_paths_outside_the_bundle_are_refused(ext_bundle, tmp_path):
    bundle, _, _ = ext_bundle
    manifest = json.loads((bundle / "manifest.json").read_text())
    sha = manifest["module_sha256"]
    outside = tmp_path / "outside.vmfb"
    shutil.copy(bundle / "model.vmfb", outside)
    cases = {
        "absolute": (str(outside), "is an absolute path"),
        "dotdot": ("../outside.vmfb", "points outside the bundle"),
        "folder": ("sub/model.vmfb", "not a plain file name"),
    }
    for name, (path, message) in cases.items():
        copy = shutil.copytree(bundle, tmp_path / name)
        _edit_manifest(copy, module=path, files={**manifest["files"], path: sha})
        with pytest.raises(BundleMismatchError, match=message):
            load_bundle(copy)
        proc = run_sh(copy)
        assert proc.returncode == 3 and "refused" in proc.stderr, (name, proc.stderr)
    # a listed file that is a symlink to a file outside the bundle (same bytes)
    copy = shutil.copytree(bundle, tmp_path / "symlink")
    (copy / "model.vmfb").unlink()
    (copy / "model.vmfb").symlink_to(outside)
    with pytest.raises(BundleMismatchError, match="symbolic link.*outside the bundle"):
        load_bundle(copy)
    proc = run_sh(copy)
    assert proc.returncode == 3 and "symbolic link" in proc.stderr
    # a module not among the checked files
    copy = shutil.copytree(bundle, tmp_path / "unlisted")
    files = {k: v for k, v in manifest["files"].items() if k != "model.vmfb"}
    _edit_manifest(copy, files=files)
    with pytest.raises(BundleMismatchError, match="must be listed in 'files'"):
        load_bundle(copy)
    proc = run_sh(copy)
    assert proc.returncode == 3 and "not among its checked files" in proc.stderr


@pytest.mark.parametrize(
    "text, message",
    [
        ("[1, 2, 3]", "the manifest must be a JSON object, got a list"),
        ('"model.vmfb"', "the manifest must be a JSON object, got a string"),
        ("{not json", "not valid JSON"),
        (b"\xff\xfe\x00garbage", "cannot read"),
    ],
)
def test_malformed_manifests_are_refused(ext_bundle, text, message):
    bundle, _, _ = ext_bundle
    path = bundle / "manifest.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(BundleMismatchError, match=f"manifest.json: {message}"):
        load_bundle(bundle)
    proc = run_sh(bundle)
    assert proc.returncode == 3, proc.stderr


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"module": None}, "missing key\\(s\\) 'module'"),
        ({"files": None, "inputs": None}, "missing key\\(s\\) 'files', 'inputs'"),
        ({"files": ["model.vmfb"]}, "'files' must be an object, got a list"),
        ({"entry": 7}, "'entry' must be a string, got a number"),
        ({"inputs": [{"shape": "1x3"}]}, "inputs\\[0\\] must be an object with 'shape'"),
        ({"entry": "main;id"}, "invalid entry name 'main;id'"),
        ({"format": "xgen-bundle/99"}, "unknown bundle format"),
        ({"module_sha256": "abc"}, "must be listed in 'files' with its module_sha256"),
        ({"default_inputs": "--input=1xf32=0 ; id"}, "'default_inputs' holds characters"),
        ({"arch": "x[$(id)]"}, "'arch' 'x\\[\\$\\(id\\)\\]' is not an arch name"),
    ],
)
def test_manifests_with_missing_or_wrong_keys_are_refused(ext_bundle, changes, message):
    bundle, _, _ = ext_bundle
    _edit_manifest(bundle, **changes)
    with pytest.raises(BundleMismatchError, match=message) as info:
        load_bundle(bundle)
    assert "manifest.json" in str(info.value)


def test_run_sh_refuses_a_bad_entry_and_odd_inputs(ext_bundle):
    bundle, _, _ = ext_bundle
    _edit_manifest(bundle, entry="main;touch pwned")
    proc = run_sh(bundle)
    assert proc.returncode == 3 and "bad entry name" in proc.stderr
    _edit_manifest(bundle, entry="main", default_inputs="--input=1xf32=0 $(touch pwned)")
    proc = run_sh(bundle)
    assert proc.returncode == 3 and "default_inputs" in proc.stderr
    assert not (bundle / "pwned").exists() and not Path("pwned").exists()


def test_save_bundle_is_atomic(cnn_ext, cnn, tmp_path, monkeypatch):
    module, x, want = cnn_ext
    target = tmp_path / "b"
    module.save_bundle(target)
    before = {p.name: p.read_bytes() for p in target.iterdir()}
    other, _, _ = cnn
    real_write = bundle_mod._write
    calls = []

    def dies_on_third_file(path, data, mode=0o644):
        calls.append(path.name)
        if len(calls) == 3:
            raise KeyboardInterrupt  # the process is stopped mid-save
        real_write(path, data, mode)

    monkeypatch.setattr(bundle_mod, "_write", dies_on_third_file)
    with pytest.raises(KeyboardInterrupt):
        other.save_bundle(target)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in target.iterdir()} == before, "old bundle changed"
    assert [p.name for p in tmp_path.iterdir()] == ["b"], "a half bundle was left behind"
    check_close(load_bundle(target)(x).numpy(), want, atol=1e-4, rtol=1e-4, what="old bundle")
    # interrupted after the new bundle is complete, before it takes the old one's place
    monkeypatch.setattr(
        bundle_mod, "atomic_replace_dir", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt())
    )
    with pytest.raises(KeyboardInterrupt):
        other.save_bundle(target)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in target.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["b"]
    # a complete save replaces it (no weights.irpa left from the old one)
    other.save_bundle(target)
    # plus the oneDNN plugin where the module's convs start in oneDNN (a CPU without AVX-512)
    from xgen_mlir.runtime.plugins import REFLECTION_KEY as PLUGINS_KEY
    from xgen_mlir.runtime.plugins import carried_libraries

    offload = PLUGINS_KEY in other.reflection
    plugin = (
        ["libxgen_onednn.so", *(p.name for p in carried_libraries("onednn"))] if offload else []
    )
    want = sorted(["manifest.json", "model.vmfb", "run.sh", *plugin])
    assert sorted(p.name for p in target.iterdir()) == want
    assert [p.name for p in tmp_path.iterdir()] == ["b"]
    # a folder holding other files is not a bundle to replace
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.txt").write_text("mine")
    with pytest.raises(errors.XGenError, match="holds files that are not part of a bundle"):
        other.save_bundle(tmp_path / "docs")
    assert (tmp_path / "docs" / "notes.txt").read_text() == "mine"


def test_parameters_given_as_bytes_leave_no_temp_file(cnn_ext):
    module, x, want = cnn_ext
    data = Path(module.parameters).read_bytes()
    copy = CompiledModule(module.vmfb, parameters=data, source="copy")
    check_close(copy(x).numpy(), want, atol=1e-4, rtol=1e-4, what="parameters from bytes")
    temp = Path(copy.parameters)
    assert temp.is_file()
    del copy
    gc.collect()
    assert not temp.exists(), "the temporary parameter archive outlived its module"


def test_isolated_call_that_does_not_answer_is_stopped(cnn, tmp_path):
    """A module stuck in a loop (here: a worker that is stopped) ends in a ModuleCallError
    after call_timeout seconds, and the next call gets a fresh worker."""
    module, x, want = cnn
    path = module.save(tmp_path / "m.vmfb")
    with pytest.raises(errors.XGenError, match="call_timeout needs isolated=True"):
        xgen_mlir.load(path, call_timeout=1)
    isolated = xgen_mlir.load(path, isolated=True, call_timeout=2)
    os.kill(isolated._runner.pid(), signal.SIGSTOP)
    with pytest.raises(errors.ModuleCallError, match="did not answer within 2 s") as info:
        isolated(x)
    assert info.value.signal is None and "m.vmfb" in str(info.value)
    check_close(isolated(x).numpy(), want, atol=1e-4, rtol=1e-4, what="after the timeout")
