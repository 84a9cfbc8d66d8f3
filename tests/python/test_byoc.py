"""BYOC offload to oneDNN (docs/byoc.md): numerics against PyTorch in fp32 and bf16, what is
offloaded and what is kept (and why), modules and bundles that carry their plugin, stock
``iree-run-module`` with ``--executable_plugin``, and the errors when the plugin is missing.

The models are small (16x16 inputs, a few channels), compiled once per file where they can.
Needs g++ and oneDNN's headers (pip's onednn extra, or libdnnl-dev): skipped here without them,
failed under CI.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from conftest import check_close, max_abs_err
from targets_util import need
from torch.export import Dim

import xgen_mlir
from xgen_mlir._paths import iree_tool
from xgen_mlir.byoc import ONEDNN, onednn
from xgen_mlir.errors import FallbackWarning, ModuleLoadError, XGenError
from xgen_mlir.runtime.bundle import (
    BundleMismatchError,
    load_bundle,
    read_manifest,
    save_bundle,
)
from xgen_mlir.runtime.plugins import REFLECTION_KEY as PLUGINS_KEY
from xgen_mlir.target import NATIVE_BF16_FLAGS, has_any
from xgen_mlir.tools import xgen_opt

OFFLOAD = {"offload": "onednn"}


@pytest.fixture(autouse=True)
def _need_onednn():
    need(ONEDNN.unavailable() is None, f"g++ and oneDNN's headers ({onednn.INSTALL_HINT})")


class SmallCNN(torch.nn.Module):
    """Five convs at 16x16: a stem, a depthwise conv, two 3x3 convs of the same shape (one
    import name, two weights: the plugin's reordered-weights cache is per weights pointer),
    and a strided conv."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.dw = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.a = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.b = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.down = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.stem(x))
        x = torch.relu(self.dw(x))
        x = torch.relu(self.a(x))
        x = self.b(x)
        return self.down(x)


def _model() -> tuple[torch.nn.Module, torch.Tensor, np.ndarray]:
    torch.manual_seed(0)
    model = SmallCNN().eval()
    x = torch.randn(1, 3, 16, 16)
    with torch.no_grad():
        want = model(x).numpy()
    return model, x, want


@pytest.fixture(scope="module")
def cnn() -> tuple[torch.nn.Module, torch.Tensor, np.ndarray]:
    return _model()


@pytest.fixture(scope="module")
def fp32_module(cnn):
    model, x, _ = cnn
    return xgen_mlir.compile(model, (x,), target_options=OFFLOAD)


def _scale(want: np.ndarray) -> float:
    return float(np.max(np.abs(want)))


def _offloaded(report_offload: dict[str, int]) -> int:
    return sum(n for what, n in report_offload.items() if "-> onednn" in what)


def test_fp32_matches_torch(fp32_module, cnn):
    _, x, want = cnn
    got = fp32_module(x).numpy()
    # f32 in the library's summation order: reassociation only
    check_close(got, want, atol=1e-5 * _scale(want), rtol=1e-5, what="fp32 offload")


def test_report_and_reflection_name_the_offload(fp32_module):
    offload = fp32_module.report.offload
    assert _offloaded(offload) == 5, offload
    assert any("depthwise" in what and "-> onednn" in what for what in offload), offload
    assert not [what for what in offload if "kept" in what], offload
    assert fp32_module.reflection.get(PLUGINS_KEY) == "onednn"


def test_offload_per_op_by_source_location(fp32_module, cnn):
    """report.offload_ops names each op by the line of the model's code that made it; the
    cpu target's offload_never keeps those with IREE, offload_only offloads just those, and
    the numbers stay PyTorch's."""
    model, x, want = cnn
    ops = fp32_module.report.offload_ops
    assert len(ops) == 5 and all("-> onednn" in what for _, what in ops), ops
    # torch's conv.py line "at" the line of SmallCNN.forward that called it
    outer = [where.split(" at ")[-1] for where, _ in ops]
    assert all(o.startswith(__file__ + ":") for o in outer), ops
    first = Path(outer[0]).name  # "test_byoc.py:LINE:0": the stem, forward's first line
    never = xgen_mlir.compile(model, (x,), target_options={**OFFLOAD, "offload_never": first})
    assert dict(never.report.offload_ops)[ops[0][0]].endswith("kept: forbidden by never=")
    assert _offloaded(never.report.offload) == 4, never.report.offload
    check_close(never(x).numpy(), want, atol=1e-5 * _scale(want), rtol=1e-5, what="never")
    with pytest.raises(xgen_mlir.errors.PipelineError, match="not a list of source locations"):
        xgen_mlir.compile(model, (x,), target_options={"offload_never": "a.py:1:0 b.py:2:0"})
    only = xgen_mlir.compile(model, (x,), target_options={**OFFLOAD, "offload_only": first})
    assert only.report.offload_ops == [ops[0]], only.report.offload_ops
    check_close(only(x).numpy(), want, atol=1e-5 * _scale(want), rtol=1e-5, what="only")


#: A CPU with a native bf16 GEMM (AVX512-BF16, AMX): precision="bf16" holds there; elsewhere
#: (an AVX2-only host) compile() falls back to fp32 with a warning, and the primitives are f32.
HOST_BF16 = has_any(NATIVE_BF16_FLAGS)


def _check_bf16(m: xgen_mlir.CompiledModule, err: float, what: str) -> None:
    if HOST_BF16:
        assert m.report.precision == "bf16"
        # bf16 operands (8-bit mantissa), f32 accumulation: well within 2e-2 of the scale, and
        # far from f32's 1e-7, which would mean the operands were not rounded at all
        assert 1e-5 < err < 2e-2, f"{what}: relative error {err:.2e}"
    else:
        assert m.report.precision == "fp32", m.report.precision
        assert err < 1e-5, f"{what} (fp32 fallback): relative error {err:.2e}"


def test_bf16_computes_in_bf16(cnn):
    model, x, want = cnn
    fallback = pytest.warns(FallbackWarning, match="precision=fp32")
    with contextlib.nullcontext() if HOST_BF16 else fallback:
        m = xgen_mlir.compile(model, (x,), target_options=OFFLOAD, precision="bf16")
    assert _offloaded(m.report.offload) == 5, m.report.offload
    _check_bf16(m, max_abs_err(m(x).numpy(), want) / _scale(want), "bf16 offload")


def test_the_plugin_itself_refuses_s8_without_vnni(capfd):
    """The plugin (not only the compiler) answers whether it makes an s8 primitive: yes on a
    CPU with an exact int8 dot product (VNNI), no elsewhere with the reason, so a module
    compiled on a VNNI host fails to load on a host without instead of saturating. f32 is
    made everywhere."""
    from xgen_mlir.target import EXACT_INT8_FLAGS

    lib = onednn._library(str(ONEDNN.plugin()))
    s8 = b"xgen_dnnl_matmul_s8_none_nb_4_2_3_7_p2"
    assert bool(lib.xgen_dnnl_can_build(s8)) == has_any(EXACT_INT8_FLAGS)
    if not has_any(EXACT_INT8_FLAGS):
        assert "needs a CPU with VNNI" in capfd.readouterr().err
    # the compiler's question gets the same answer without the message (it reports its own)
    assert bool(lib.xgen_dnnl_can_build_quietly(s8)) == has_any(EXACT_INT8_FLAGS)
    assert capfd.readouterr().err == ""
    assert lib.xgen_dnnl_can_build(b"xgen_dnnl_matmul_f32_none_nb_4_2_3_p2") == 1


def test_the_plugin_splits_an_op_into_at_most_its_rows():
    """An import name's _pP: P parts along the output rows, each a primitive of its own;
    never more parts than rows (a workgroup with nothing to do is a compiler bug, refused at
    load); a matmul's _cP: P parts along its columns, never more than there are; a conv's
    _cP: P parts along its output channels, in whole 16-channel blocks where the channels
    are (8 channels: up to 8 parts; 32: up to 2), never for a grouped conv. A name without
    parts (a module saved before operations were split) still loads: the op runs whole on
    the calling worker."""
    lib = onednn._library(str(ONEDNN.plugin()))
    for parts, ok in ((1, 1), (3, 1), (4, 1), (5, 0)):
        assert lib.xgen_dnnl_can_build(f"xgen_dnnl_matmul_f32_none_b_4_2_3_p{parts}".encode()) == ok
    for parts, ok in ((2, 1), (3, 1), (4, 0)):
        assert lib.xgen_dnnl_can_build(f"xgen_dnnl_matmul_f32_add_b_4_2_3_c{parts}".encode()) == ok
    conv = "xgen_dnnl_conv_f32_relu_b_1_8_8_4_8_8_8_3_3_1_1_1_1_1_1_1_1_1"
    assert lib.xgen_dnnl_can_build(f"{conv}_p8".encode()) == 1
    assert lib.xgen_dnnl_can_build(f"{conv}_p9".encode()) == 0
    for parts, ok in ((2, 1), (8, 1), (9, 0)):
        assert lib.xgen_dnnl_can_build(f"{conv}_c{parts}".encode()) == ok
    wide = "xgen_dnnl_conv_f32_addrelu_b_1_8_8_4_8_8_32_3_3_1_1_1_1_1_1_1_1_1"
    for parts, ok in ((2, 1), (3, 0)):
        assert lib.xgen_dnnl_can_build(f"{wide}_c{parts}".encode()) == ok
    grouped = "xgen_dnnl_conv_f32_none_b_1_8_8_8_8_8_8_3_3_1_1_1_1_1_1_1_1_8"
    assert lib.xgen_dnnl_can_build(f"{grouped}_p2".encode()) == 1
    assert lib.xgen_dnnl_can_build(f"{grouped}_c2".encode()) == 0
    assert lib.xgen_dnnl_can_build(conv.encode()) == 1  # no parts: an older module's name


def test_a_batch_is_split_by_images(cnn):
    """At batch > 1 an offloaded conv's parts are whole images (here 3 images over the
    host's workers: uneven parts on two or more threads); the numbers are PyTorch's."""
    model, _, _ = cnn
    x = torch.randn(3, 3, 16, 16)
    with torch.no_grad():
        want = model(x).numpy()
    m = xgen_mlir.compile(model, (x,), target_options=OFFLOAD)
    assert _offloaded(m.report.offload) == 5
    assert max_abs_err(np.asarray(m(x)), want) <= 1e-4 * _scale(want)


def test_calls_from_threads_agree(fp32_module, cnn):
    """One module called from several threads at once: each call's primitive runs with its
    own stream; the weights were reordered once."""
    _, x, want = cnn
    errors: list[str] = []

    def call() -> None:
        for _ in range(3):
            got = fp32_module(x).numpy()
            if max_abs_err(got, want) > 1e-5 * _scale(want):
                errors.append(f"max abs err {max_abs_err(got, want):.2e}")

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


class ConvRelu(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


class WeightInput(torch.nn.Module):
    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.conv2d(x, w, padding=1)


class ComputedWeight(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(8, 3, 3, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.conv2d(x, self.w * x.mean(), padding=1)


def _kept_case(name: str):
    torch.manual_seed(1)
    x = torch.randn(1, 3, 16, 16)
    if name == "dynamic_hw":
        dims = {2: Dim("h", min=8, max=32), 3: Dim("w", min=8, max=32)}
        return ConvRelu().eval(), (x,), {"dynamic_shapes": (dims,)}, 1e-5
    if name == "weight_input":
        return WeightInput(), (x, torch.randn(8, 3, 3, 3)), {}, 1e-5
    if name == "computed_weight":
        return ComputedWeight().eval(), (x,), {}, 1e-5
    assert name == "f16"
    return ConvRelu().eval().half(), (x.half(),), {}, 2e-3


def _check_kept(model, inputs, options, rtol, *, marker: str, what: str) -> None:
    """Compiled with offload=onednn: nothing offloaded, each kept op (its report key holds
    ``marker``) says why, no plugin needed, and the numbers match PyTorch."""
    m = xgen_mlir.compile(model, inputs, target_options=OFFLOAD, **options)
    offload = m.report.offload
    assert _offloaded(offload) == 0, offload
    kept = [key for key in offload if marker in key]
    assert kept and all(key.split("kept", 1)[1].strip(": ") for key in kept), offload
    assert PLUGINS_KEY not in m.reflection
    with torch.no_grad():
        want = model(*inputs).float().numpy()
    got = m(*inputs).float().numpy()
    check_close(got, want, atol=rtol * _scale(want), rtol=rtol, what=what)


@pytest.mark.parametrize("name", ["dynamic_hw", "weight_input", "computed_weight", "f16"])
def test_kept_convs_stay_with_iree(name):
    """Convs the library cannot take as one fixed primitive with constant f32 weights stay
    with IREE's codegen, are reported as kept with a reason, and still compute right."""
    _check_kept(*_kept_case(name), marker="kept", what=name)


def test_offload_none_needs_no_plugin(cnn):
    model, x, want = cnn
    m = xgen_mlir.compile(model, (x,), target_options={"offload": "none"})
    assert m.report.offload == {}
    assert PLUGINS_KEY not in m.reflection
    check_close(m(x).numpy(), want, atol=1e-5 * _scale(want), rtol=1e-5, what="offload=none")


def test_save_then_load_runs(fp32_module, cnn, tmp_path):
    _, x, want = cnn
    path = tmp_path / "cnn.vmfb"
    fp32_module.save(path)
    loaded = xgen_mlir.load(path)
    assert loaded.reflection.get(PLUGINS_KEY) == "onednn"
    check_close(loaded(x).numpy(), want, atol=1e-5 * _scale(want), rtol=1e-5, what="loaded")


def _iree_run(module: Path, x: np.ndarray, tmp: Path, *flags: str):
    np.save(tmp / "x.npy", x)
    cmd = [
        iree_tool("iree-run-module"),
        *flags,
        f"--module={module}",
        "--function=main",
        f"--input=@{tmp / 'x.npy'}",
        f"--output=@{tmp / 'y.npy'}",
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_stock_iree_run_module_with_the_plugin(fp32_module, cnn, tmp_path):
    _, x, want = cnn
    path = tmp_path / "cnn.vmfb"
    fp32_module.save(path)
    proc = _iree_run(path, x.numpy(), tmp_path, f"--executable_plugin={ONEDNN.plugin()}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = np.load(tmp_path / "y.npy")
    check_close(got, want, atol=1e-5 * _scale(want), rtol=1e-5, what="iree-run-module")
    # the dispatches really call the library: without the plugin the module does not load
    (tmp_path / "y.npy").unlink()
    proc = _iree_run(path, x.numpy(), tmp_path)
    assert proc.returncode != 0 and not (tmp_path / "y.npy").exists()


def _load_and_run(path: Path, x: torch.Tensor, **kwargs) -> torch.Tensor:
    """load() then a call: the module is put on a device (and its plugins found) when it is
    first used."""
    return xgen_mlir.load(path, **kwargs)(x)


def test_load_when_the_plugin_cannot_be_built(fp32_module, cnn, tmp_path, monkeypatch):
    _, x, _ = cnn
    path = tmp_path / "cnn.vmfb"
    fp32_module.save(path)
    monkeypatch.setenv(onednn.ROOT_VARIABLE, str(tmp_path / "no-such-dir"))
    with pytest.raises(ModuleLoadError) as e:
        _load_and_run(path, x)
    msg = str(e.value)
    for part in (str(path), "onednn", "oneDNN", "pip install onednn-cpu-gomp", "plugins="):
        assert part in msg, msg


def test_given_plugin_file_is_checked(fp32_module, cnn, tmp_path):
    _, x, want = cnn
    path = tmp_path / "cnn.vmfb"
    fp32_module.save(path)
    missing = tmp_path / "nowhere" / "libxgen_onednn.so"
    with pytest.raises(ModuleLoadError, match="does not exist") as e:
        _load_and_run(path, x, plugins={"onednn": str(missing)})
    assert str(missing) in str(e.value) and "onednn" in str(e.value)
    junk = tmp_path / "junk.so"
    junk.write_bytes(b"not a shared library")
    with pytest.raises(ModuleLoadError, match="cannot be loaded"):
        _load_and_run(path, x, plugins={"onednn": junk})
    libz = _shared_library_that_is_not_a_plugin()
    with pytest.raises(ModuleLoadError, match="not an IREE executable plugin"):
        _load_and_run(path, x, plugins={"onednn": libz})
    # a bad file was never handed to IREE: the real plugin, given or found, still loads
    for plugins in ({"onednn": str(ONEDNN.plugin())}, None):
        m = xgen_mlir.load(path, plugins=plugins)
        check_close(m(x).numpy(), want, atol=1e-5 * _scale(want), rtol=1e-5, what="reloaded")


def test_unknown_backend_is_a_clear_error(tmp_path, capsys):
    src = tmp_path / "conv.mlir"
    src.write_text(
        "func.func @f(%x: tensor<1x8x8x4xf32>) -> tensor<1x6x6x8xf32> {\n"
        "  %w = arith.constant dense<0.5> : tensor<3x3x4x8xf32>\n"
        "  %z = arith.constant 0.0 : f32\n"
        "  %e = tensor.empty() : tensor<1x6x6x8xf32>\n"
        "  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x6x6x8xf32>)"
        " -> tensor<1x6x6x8xf32>\n"
        "  %y = linalg.conv_2d_nhwc_hwcf ins(%x, %w : tensor<1x8x8x4xf32>,"
        " tensor<3x3x4x8xf32>) outs(%i : tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>\n"
        "  return %y : tensor<1x6x6x8xf32>\n}\n"
    )
    assert xgen_opt.main([str(src), "-p", "xgen-byoc-offload{backend=mkl}"]) == 1
    err = capsys.readouterr().err
    assert "unknown offload backend 'mkl'" in err and "onednn" in err, err
    assert "internal error" not in err, f"a user's mistake reported as a bug in the pass: {err}"
    # the target option is checked against its choices before anything is compiled
    with pytest.raises(XGenError, match="mkl"):
        xgen_mlir.compile(
            ConvRelu().eval(), (torch.randn(1, 3, 8, 8),), target_options={"offload": "mkl"}
        )


def test_compile_without_onednn_is_a_clear_error(monkeypatch):
    monkeypatch.setenv(onednn.ROOT_VARIABLE, "/no-such-dir")
    with pytest.raises(XGenError) as e:
        xgen_mlir.compile(ConvRelu().eval(), (torch.randn(1, 3, 8, 8),), target_options=OFFLOAD)
    msg = str(e.value)
    assert "oneDNN" in msg and "/no-such-dir" in msg and onednn.INSTALL_HINT in msg, msg
    assert "internal error" not in msg, f"a missing package reported as a bug in the pass: {msg}"


_SYSTEM_ONEDNN_RUN = """
import sys, numpy as np, torch, xgen_mlir
from xgen_mlir.byoc import ONEDNN, onednn
found = onednn.installation()
assert found is not None and str(found.root) == "/usr", found
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU()).eval()
x = torch.randn(1, 3, 16, 16)
m = xgen_mlir.compile(model, (x,), target_options={"offload": "onednn"}, tuning_db=False)
with torch.no_grad():
    want = model(x).numpy()
err = float(np.abs(np.asarray(m(x)) - want).max())
print(found.major, sum(v for k, v in m.report.offload.items() if "-> onednn" in k), err)
print(ONEDNN.runtime_library())
"""


def test_plugin_builds_against_the_systems_onednn():
    """XGEN_ONEDNN_ROOT=/usr: the plugin builds against the system's oneDNN (Debian's 2.x,
    whose API differs from pip's 3.x in the calls the plugin guards), offloads, and computes
    what PyTorch does; a bundle would name that library. In a subprocess: the two oneDNN
    libraries export the same C names, and one process loads one of them."""
    need(
        (Path("/usr") / onednn.HEADER).exists(),
        "the system's oneDNN headers (apt-get install libdnnl-dev)",
    )
    env = dict(os.environ, **{onednn.ROOT_VARIABLE: "/usr"})
    proc = subprocess.run(
        [sys.executable, "-c", _SYSTEM_ONEDNN_RUN], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts, requires = proc.stdout.strip().splitlines()[-2:]
    major, offloaded, err = counts.split()
    assert int(offloaded) == 1, proc.stdout
    assert float(err) < 1e-5, proc.stdout
    assert requires.startswith(f"libdnnl.so.{major},"), requires


def test_bundle_carries_the_plugin(fp32_module, cnn, tmp_path):
    _, x, want = cnn
    out = save_bundle(fp32_module, tmp_path / "bundle")
    manifest = read_manifest(out)
    plugin = manifest["plugins"]["onednn"]
    assert manifest["executable_plugins"] == plugin
    assert manifest["files"][plugin] == onednn_sha(ONEDNN.plugin())
    found = onednn.installation()
    assert found and f"libdnnl.so.{found.major}" in manifest["plugin_requires"]
    carried = manifest["plugin_libraries"].get("onednn", [])
    linked = subprocess.run(["ldd", str(out / plugin)], capture_output=True, text=True).stdout
    if found.root != Path("/usr"):  # pip's oneDNN: carried, and found beside the plugin
        lib = f"libdnnl.so.{found.major}"
        assert carried == [lib] and manifest["files"][lib] == onednn_sha(found.root / "lib" / lib)
        assert f"{out / lib} " in linked, linked
        assert "carried beside the plugin" in manifest["plugin_requires"]
    else:  # the system's: the device installs it as this host did
        assert carried == [] and not list(out.glob("libdnnl*"))
        assert "apt-get install" in manifest["plugin_requires"]

    m = load_bundle(out)
    assert m.plugins == {"onednn": str(out / plugin)}
    check_close(m(x).numpy(), want, atol=1e-5 * _scale(want), rtol=1e-5, what="load_bundle")

    # run.sh: stock iree-run-module with --executable_plugin=<the bundle's plugin>
    np.save(tmp_path / "x.npy", x.numpy())
    env = dict(os.environ, IREE_RUN_MODULE=iree_tool("iree-run-module"))
    proc = subprocess.run(
        [str(out / "run.sh"), f"--input=@{tmp_path / 'x.npy'}", f"--output=@{tmp_path / 'y.npy'}"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = np.load(tmp_path / "y.npy")
    check_close(got, want, atol=1e-5 * _scale(want), rtol=1e-5, what="run.sh")

    # the plugin is checked like the module: a replaced one is refused by both readers.
    # Replaced as a new file (a new inode): rewriting the loaded library in place would
    # truncate it under this process's mapping, which drops its relocated pages (the next
    # call into it, from any later module on this driver, crashes)
    tampered = tmp_path / "tampered.so"
    tampered.write_bytes((out / plugin).read_bytes() + b"\0")
    os.replace(tampered, out / plugin)
    with pytest.raises(BundleMismatchError, match=plugin):
        load_bundle(out)
    proc = subprocess.run([str(out / "run.sh")], capture_output=True, text=True, env=env)
    assert proc.returncode == 3 and plugin in proc.stderr, proc.stderr


def test_bundle_can_leave_the_library_to_the_device(fp32_module, cnn, tmp_path):
    """carry_libraries=False: the plugin only, the manifest says where oneDNN comes from; a
    carried library that was replaced is refused like the module."""
    _, x, want = cnn
    found = onednn.installation()
    assert found is not None
    out = fp32_module.save_bundle(tmp_path / "lean", carry_libraries=False)
    manifest = read_manifest(out)
    assert manifest["plugin_libraries"] == {} and not list(out.glob("libdnnl*"))
    assert f"libdnnl.so.{found.major}, oneDNN" in manifest["plugin_requires"]
    check_close(load_bundle(out)(x).numpy(), want, atol=1e-5 * _scale(want), rtol=1e-5, what="lean")
    if found.root == Path("/usr"):
        return  # nothing is carried from the system's oneDNN
    out = save_bundle(fp32_module, tmp_path / "full")
    lib = read_manifest(out)["plugin_libraries"]["onednn"][0]
    tampered = tmp_path / "tampered.so"
    tampered.write_bytes((out / lib).read_bytes()[:-1])
    os.replace(tampered, out / lib)
    with pytest.raises(BundleMismatchError, match=re.escape(lib)):
        load_bundle(out)


def test_bundle_without_offload_has_no_plugin(cnn, tmp_path):
    _, x, _ = cnn
    m = xgen_mlir.compile(torch.nn.Conv2d(3, 4, 1).eval(), (x,))
    manifest = read_manifest(save_bundle(m, tmp_path / "plain"))
    assert manifest["plugins"] == {} and manifest["executable_plugins"] == ""
    assert manifest["plugin_requires"] == "" and manifest["plugin_libraries"] == {}


def test_manifest_plugins_are_checked(fp32_module, tmp_path):
    out = save_bundle(fp32_module, tmp_path / "bundle")
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["plugins"] = {"onednn": "../libxgen_onednn.so"}
    manifest["executable_plugins"] = "../libxgen_onednn.so"
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    with pytest.raises(BundleMismatchError, match="outside the bundle"):
        read_manifest(out)


def _shared_library_that_is_not_a_plugin() -> str:
    from iree.runtime import _binding

    # IREE's own Python extension: loadable (already loaded), no plugin entry point
    return str(_binding.__file__)


def onednn_sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# ---- matmuls: Linear layers offloaded, attention's matmuls kept ----


class MLP(torch.nn.Module):
    """Three Linear layers on a 3-D input (torch-mlir collapses it to rows): one with a ReLU
    after it and one with GELU's erf form (each fused as the primitive's post-op), one with
    GELU's tanh form after it, which the frontend decomposes into its formula (several
    generics when the offload runs: not a post-op)."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(16, 32)
        self.b = torch.nn.Linear(32, 24)
        self.c = torch.nn.Linear(24, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.a(x))
        x = torch.nn.functional.gelu(self.b(x))
        return torch.nn.functional.gelu(self.c(x), approximate="tanh")


class Block(torch.nn.Module):
    """One transformer encoder block, hidden 32, 2 heads: four Linear projections and a ReLU
    feed-forward (six GEMMs with constant weights), and attention's two batched matmuls of
    activations (QK^T, PV), which the library's reordered-weights primitive cannot take."""

    def __init__(self, hidden: int = 32, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.q = torch.nn.Linear(hidden, hidden)
        self.k = torch.nn.Linear(hidden, hidden)
        self.v = torch.nn.Linear(hidden, hidden)
        self.o = torch.nn.Linear(hidden, hidden)
        self.up = torch.nn.Linear(hidden, 2 * hidden)
        self.down = torch.nn.Linear(2 * hidden, hidden)
        self.ln1 = torch.nn.LayerNorm(hidden)
        self.ln2 = torch.nn.LayerNorm(hidden)

    def _split(self, t: torch.Tensor) -> torch.Tensor:
        b, s, h = t.shape
        return t.reshape(b, s, self.heads, h // self.heads).transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self._split(self.q(x)), self._split(self.k(x)), self._split(self.v(x))
        att = torch.softmax(q @ k.transpose(-1, -2) / (h // self.heads) ** 0.5, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, h)
        x = self.ln1(x + self.o(y))
        return self.ln2(x + self.down(torch.relu(self.up(x))))


def _linear_case(name: str) -> tuple[torch.nn.Module, torch.Tensor, np.ndarray]:
    torch.manual_seed(2)
    model = (MLP() if name == "mlp" else Block()).eval()
    x = torch.randn(2, 5, 16) if name == "mlp" else torch.randn(1, 12, 32)
    with torch.no_grad():
        want = model(x).numpy()
    return model, x, want


# name -> (Linear layers offloaded, of them with a fused ReLU, with a fused GELU (erf form),
# attention matmuls kept)
LINEAR_CASES = {"mlp": (3, 1, 1, 0), "block": (6, 1, 0, 2)}


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("name", list(LINEAR_CASES))
def test_linear_layers_offloaded(name, precision):
    """Every Linear (matmul of constant weights + bias) becomes a oneDNN matmul with its bias
    (and a ReLU or GELU after it) fused; attention's matmuls of two activations stay with
    IREE, counted with their reason; the numbers match PyTorch (f32: reassociation only;
    bf16: rounded operands, f32 accumulation)."""
    model, x, want = _linear_case(name)
    m = xgen_mlir.compile(model, (x,), target_options=OFFLOAD, precision=precision)
    offload = m.report.offload
    linears, relus, gelus, attention = LINEAR_CASES[name]
    matmuls = {what: n for what, n in offload.items() if "matmul -> onednn" in what}
    assert sum(matmuls.values()) == linears, offload
    assert all("+bias" in what for what in matmuls), offload
    assert sum(n for what, n in matmuls.items() if "+relu" in what) == relus, offload
    assert sum(n for what, n in matmuls.items() if "+gelu)" in what) == gelus, offload
    assert not any("+gelut" in what for what in matmuls), offload  # the tanh form stays
    kept = {what: n for what, n in offload.items() if "kept" in what}
    assert kept == (
        {"linalg.batch_matmul kept: right operand not a constant": attention} if attention else {}
    ), offload
    assert m.reflection.get(PLUGINS_KEY) == "onednn"
    err = max_abs_err(m(x).numpy(), want) / _scale(want)
    if precision == "fp32":
        assert err < 1e-5, f"fp32 matmul offload: relative error {err:.2e}"
    else:
        _check_bf16(m, err, "bf16 matmul offload")


class DynamicLinear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


class WeightInputLinear(torch.nn.Module):
    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return x @ w


class WideLinears(torch.nn.Module):
    """Linear layers with more columns than rows (6 rows, 96 or ``last`` columns): with GELU,
    with ReLU, and two without a post-op, one before a residual add, the last ``last``
    columns wide."""

    def __init__(self, last: int = 48) -> None:
        super().__init__()
        self.a = torch.nn.Linear(24, 96)
        self.b = torch.nn.Linear(96, 96)
        self.c = torch.nn.Linear(96, 96)
        self.d = torch.nn.Linear(96, last)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.gelu(self.a(x))
        y = torch.relu(self.b(y))
        return self.d(y + self.c(y))


def _compiled_imports(
    model: torch.nn.Module, x: torch.Tensor, dump: Path, kind: str, **options: Any
) -> tuple[xgen_mlir.CompiledModule, set[str]]:
    """``model`` compiled with ``options`` (its IR after each step dumped to ``dump``), and
    the names of the oneDNN imports of ``kind`` (conv, matmul) its final IR calls."""
    m = xgen_mlir.compile(model, (x,), dump_ir=dump, **options)
    final = sorted(dump.glob("*.mlir"))[-1].read_text()
    return m, set(re.findall(rf"xgen_dnnl_{kind}_\w+", final))


def _each_option_value(
    model: torch.nn.Module,
    x: torch.Tensor,
    want: np.ndarray,
    dump: Path,
    kind: str,
    threads: int,
    option: str,
    values: tuple[str, ...],
    precision: str = "bf16",
) -> tuple[dict[str, np.ndarray], dict[str, set[str]]]:
    """``model`` compiled with every library op offloaded on ``threads`` and each of
    ``values`` for target option ``option``: per value, its output (checked against ``want``:
    within bf16's error in bf16, to f32 rounding in fp32) and its oneDNN imports of ``kind``."""
    got, symbols = {}, {}
    for value in values:
        options = {**OFFLOAD, "threads": str(threads), option: value}
        m, symbols[value] = _compiled_imports(
            model, x, dump / value, kind, target_options=options, precision=precision
        )
        got[value] = np.array(m(x).numpy())
        err = max_abs_err(got[value], want) / _scale(want)
        if precision == "bf16":
            _check_bf16(m, err, f"bf16 {option}={value}")
        else:
            assert err < 1e-5, f"{option}={value}: relative error {err:.2e}"
    return got, symbols


@pytest.mark.parametrize("threads", [2, 3])
def test_wide_matmuls_split_along_columns(threads, tmp_path):
    """An f32 matmul with more columns than rows is split among the workers along its
    columns (each part reads 1/P of the weights, not all of them) when each share is a whole
    number of 16 columns: the parts' offsets into the weights, the bias and the output come
    out right, at 2 and 3 parts, against PyTorch. (bf16 and s8 stay on rows unless the
    matmul_split option says columns: the lit test, and the bf16 test below.)"""
    torch.manual_seed(5)
    model, x = WideLinears().eval(), torch.randn(6, 24)
    with torch.no_grad():
        want = model(x).numpy()
    options = {**OFFLOAD, "threads": str(threads)}
    m, symbols = _compiled_imports(model, x, tmp_path, "matmul", target_options=options)
    # 48 columns make 3 shares of 16, not 2 of 24: the rows then
    d = "xgen_dnnl_matmul_f32_none_b_6_96_48_" + ("c3" if threads == 3 else "p2")
    assert symbols == {
        f"xgen_dnnl_matmul_f32_gelu_b_6_24_96_c{threads}",
        f"xgen_dnnl_matmul_f32_relu_b_6_96_96_c{threads}",
        f"xgen_dnnl_matmul_f32_none_b_6_96_96_c{threads}",
        d,
    }, symbols
    err = max_abs_err(m(x).numpy(), want) / _scale(want)
    assert err < 1e-5, f"column-split matmuls: relative error {err:.2e}"


@pytest.mark.parametrize("threads", [2, 3])
def test_bf16_column_shares_equal_the_row_shares(threads, tmp_path):
    """matmul_split=columns in bf16: each part computes its columns into a dense buffer (the
    bias and the activation fused), then copies them into place. Every
    output element is the same sum as in a row share, so the two modules agree (to f32
    rounding), at 2 and 3 parts, ragged shares (50 columns in 3) included; and both are
    within bf16's error of PyTorch."""
    torch.manual_seed(6)
    model, x = WideLinears(last=50).eval(), torch.randn(6, 24)  # 3 shares of 16 and 17
    with torch.no_grad():
        want = model(x).numpy()
    got, symbols = _each_option_value(
        model, x, want, tmp_path, "matmul", threads, "matmul_split", ("rows", "columns")
    )
    if not HOST_BF16:
        return  # (f32 primitives: the columns as in test_wide_matmuls_split_along_columns)
    # the activations between them bf16 where library ops alone read them (library_activations):
    # a's GELU goes only to b, b's ReLU also to the residual add (IREE's), which d reads
    post = {
        "tffb_gelu_b_6_24_96",
        "tbff_relu_b_6_96_96",
        "_none_b_6_96_96",
        "tbff_none_b_6_96_50",
    }
    assert symbols["columns"] == {f"xgen_dnnl_matmul_bf16{p}_c{threads}" for p in post}
    assert symbols["rows"] == {f"xgen_dnnl_matmul_bf16{p}_p{threads}" for p in post}
    assert max_abs_err(got["columns"], got["rows"]) <= 1e-6 * _scale(want)


def _kept_linear(name: str):
    torch.manual_seed(3)
    x = torch.randn(6, 16)
    if name == "dynamic_rows":
        return (
            DynamicLinear().eval(),
            (x,),
            {"dynamic_shapes": ({0: Dim("m", min=2, max=64)},)},
            1e-5,
        )
    assert name == "weight_input"
    return WeightInputLinear(), (x, torch.randn(16, 8)), {}, 1e-5


@pytest.mark.parametrize("name", ["dynamic_rows", "weight_input"])
def test_kept_matmuls_stay_with_iree(name):
    """A dynamic row count (the import's name fixes M) and weights that are an input stay
    with IREE, reported as kept with a reason, and still compute right. (An f16 matmul is
    kept too: the lit test; torch computes an f16 Linear as an f32 matmul of upcast
    operands, which is offloaded: test_f16_linear_is_an_f32_matmul.)"""
    _check_kept(*_kept_linear(name), marker="matmul kept", what=name)


def test_f16_linear_is_an_f32_matmul():
    """torch's f16 Linear upcasts its operands and multiplies in f32 (the imported matmul is
    f32, its weights an f32 conversion of f16 constants): that matmul is offloaded, and the
    f16 result is exactly PyTorch's."""
    torch.manual_seed(4)
    model, x = torch.nn.Linear(16, 8).eval().half(), torch.randn(6, 16).half()
    m = xgen_mlir.compile(model, (x,), target_options=OFFLOAD)
    assert m.report.offload == {"linalg.matmul -> onednn (+bias)": 1}, m.report.offload
    with torch.no_grad():
        want = model(x).float().numpy()
    got = m(x).float().numpy()
    check_close(got, want, atol=1e-3 * _scale(want), rtol=1e-3, what="f16 Linear")


def _tuned_db(tmp_path: Path, model, inputs, impl: str = "") -> Path:
    """A tuning database saying oneDNN (f32; its implementation family ``impl``, else its
    first choice) runs each conv of ``model`` 2x faster here."""
    from xgen_mlir.passes.winograd_convs import candidates, offload_config
    from xgen_mlir.tunedb import HostIdentity, Record, TuningDB
    from xgen_mlir.tuning.choices import _graph_module

    module = _graph_module(model, inputs, "cpu", {})
    db = tmp_path / f"tuned{impl}.db"
    with TuningDB(db) as tdb:
        for cand in candidates(module.operation, offload=True):
            config = offload_config("onednn", "f32", impl)
            record = Record(cand.signature, config, "ok", 0.5e-3, 1e-3, description="test")
            tdb.add(record, HostIdentity.current())
    return db


def test_tuned_offloads_what_the_database_says(tmp_path):
    """offload=tuned (the default) offloads the convs the database says oneDNN wins; where the
    plugin cannot be built any more, they stay with IREE with a FallbackWarning (no failed
    compile for a database written when oneDNN was installed)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU()).eval()
    x = torch.randn(1, 3, 16, 16)
    db = _tuned_db(tmp_path, model, (x,))
    with torch.no_grad():
        want = model(x).numpy()
    m = xgen_mlir.compile(model, (x,), tuning_db=db)
    assert _offloaded(m.report.offload) == 1, m.report.offload
    check_close(m(x).numpy(), want, atol=1e-5 * _scale(want), rtol=1e-5, what="tuned")

    def gone(self):
        return f"oneDNN's headers (under /nowhere), not installed ({onednn.INSTALL_HINT})"

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(onednn.Backend, "unavailable", gone)
        with pytest.warns(xgen_mlir.errors.FallbackWarning, match="cannot be built here"):
            kept = xgen_mlir.compile(model, (x,), tuning_db=db)
    assert _offloaded(kept.report.offload) == 0 and PLUGINS_KEY not in kept.reflection
    assert any("unavailable here" in k for k in kept.report.offload), kept.report.offload
    check_close(kept(x).numpy(), want, atol=1e-5 * _scale(want), rtol=1e-5, what="kept")


@pytest.mark.parametrize("impl", onednn.IMPL_FAMILIES)
def test_tuned_implementation_family_is_applied(tmp_path, impl):
    """A record measured with one of oneDNN's implementation families (the tuner measures
    each one the library has besides its first choice) offloads the conv asking for that
    family, and the module still computes what PyTorch does."""
    torch.manual_seed(0)
    model = SmallCNN().eval()
    x = torch.randn(1, 3, 16, 16)
    db = _tuned_db(tmp_path, model, (x,), impl)
    with torch.no_grad():
        want = model(x).numpy()
    m = xgen_mlir.compile(model, (x,), tuning_db=db)
    offloaded = [k for k in m.report.offload if "-> onednn" in k]
    assert offloaded and all(f"-> onednn[{impl}]" in k for k in offloaded), m.report.offload
    check_close(m(x).numpy(), want, atol=1e-5 * _scale(want), rtol=1e-5, what=impl)


def test_tuned_offloads_the_linear_layers_the_database_says(tmp_path):
    """offload=tuned weighs linear layers too: where this host's records say oneDNN runs a
    linear layer faster, it is offloaded (attention's matmuls of two activations never are),
    the report says why per layer, and the block still computes what PyTorch does."""
    model, x, want = _linear_case("block")
    db = _tuned_db(tmp_path, model, (x,))
    m = xgen_mlir.compile(model, (x,), tuning_db=db)
    offloaded = LINEAR_CASES["block"][0]
    assert _offloaded(m.report.offload) == offloaded, m.report.offload
    linear = [c for c in m.report.tuning.choices if c[0].startswith(("matmul", "batch_matmul"))]
    assert linear and all(decision == "onednn f32" for _, decision, _ in linear), linear
    check_close(m(x).numpy(), want, atol=1e-4 * _scale(want), rtol=1e-4, what="tuned block")
    # without records nothing is offloaded, and each linear layer says why
    from xgen_mlir.tunedb import TuningDB

    with TuningDB(tmp_path / "empty.db"):  # a database with no records: before a tune
        pass
    plain = xgen_mlir.compile(model, (x,), tuning_db=tmp_path / "empty.db")
    assert _offloaded(plain.report.offload) == 0, plain.report.offload


def test_bf16_prior_leaves_a_short_reduction_stem_with_iree():
    """Unmeasured, a bf16 compile starts KxK convs in oneDNN's bf16 primitive, except a conv of
    fewer than 32 multiply-adds per output (a 3x3 stem on an RGB image: moving the image is
    its work, and the primitive adds the conversions): that one stays IREE's f32 code."""
    if not HOST_BF16:
        pytest.skip("bf16 compiles as fp32 on a host without a native bf16 GEMM")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, 2, 1), torch.nn.ReLU(), torch.nn.Conv2d(16, 32, 3, 1, 1)
    ).eval()
    x = torch.randn(1, 3, 32, 32)
    m = xgen_mlir.compile(model, (x,), precision="bf16", tuning_db=False, precision_check=False)
    assert _offloaded(m.report.offload) == 1, m.report.offload  # the 16 -> 32 conv only
    with torch.no_grad():
        want = model(x).numpy()
    _check_bf16(m, max_abs_err(m(x).numpy(), want) / _scale(want), "bf16 prior")


class Shortcut(torch.nn.Module):
    """ResNet's downsampling block: a strided 3x3 conv and a strided 1x1 conv (the shortcut)
    added, then a stride-1 1x1 conv."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(32, 64, 3, stride=2, padding=1)
        self.shortcut = torch.nn.Conv2d(32, 64, 1, stride=2)
        self.pointwise = torch.nn.Conv2d(64, 64, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pointwise(torch.relu(self.conv(x) + self.shortcut(x)))


def test_bf16_prior_offloads_a_strided_shortcut_conv():
    """Unmeasured, a bf16 compile starts a strided 1x1 conv (ResNet's downsampling shortcut)
    in oneDNN's bf16 primitive like the KxK convs: no generated kernel takes it, and IREE's
    code for it is f32. A stride-1 1x1 conv is a GEMM the generated kernels take: it is not
    offloaded by the prior."""
    if not HOST_BF16:
        pytest.skip("bf16 compiles as fp32 on a host without a native bf16 GEMM")
    torch.manual_seed(0)
    model, x = Shortcut().eval(), torch.randn(1, 32, 16, 16)
    m = xgen_mlir.compile(model, (x,), precision="bf16", tuning_db=False, precision_check=False)
    decisions = [d for _, d in m.report.offload_ops]
    assert sum("-> onednn" in d for d in decisions) == 2, decisions  # the 3x3 and the shortcut
    with torch.no_grad():
        want = model(x).numpy()
    _check_bf16(m, max_abs_err(m(x).numpy(), want) / _scale(want), "bf16 shortcut")
    fp32 = xgen_mlir.compile(model, (x,), tuning_db=False)
    assert not any("-> onednn" in d for _, d in fp32.report.offload_ops), fp32.report.offload_ops


class DeepBlock(torch.nn.Module):
    """A residual block at 2x2 pixels: a strided 3x3 conv, a 3x3 conv whose output takes the
    residual add and ReLU, and a conv of 40 channels (not whole 16-channel blocks); every
    conv's weights outnumber its source 16 times or more, so conv_split's count puts each on
    its output channels."""

    def __init__(self) -> None:
        super().__init__()
        self.down = torch.nn.Conv2d(32, 64, 3, stride=2, padding=1)
        self.conv = torch.nn.Conv2d(64, 64, 3, padding=1)
        self.last = torch.nn.Conv2d(64, 40, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.down(x))
        y = torch.relu(self.conv(y) + y)
        return self.last(y)


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("threads", [2, 3])
def test_conv_channel_shares_equal_the_row_shares(precision, threads, tmp_path):
    """conv_split: each part of a conv split along its output channels computes its share
    into a dense buffer and copies it into place, the residual add and ReLU done while
    copying; every output element is the same sum as in a row share, so the two modules
    agree (to f32 rounding), at 2 and 3 parts, ragged shares (40 channels: 16 and 24, or 8,
    16 and 16) included; both match PyTorch (within bf16's error in bf16)."""
    torch.manual_seed(7)
    model, x = DeepBlock().eval(), torch.randn(1, 32, 4, 4)
    with torch.no_grad():
        want = model(x).numpy()
    got, symbols = _each_option_value(
        model, x, want, tmp_path, "conv", threads, "conv_split", ("rows", "count"), precision
    )
    bf16 = precision == "bf16" and HOST_BF16
    # in bf16 each conv's tensor types (library_activations): the first reads the input's
    # transpose in f32 and writes bf16, which the second reads as its source and residual
    shapes = [
        ("tffb", "relu_b_1_4_4_32_2_2_64_3_3_2_2_1_1_1_1_1_1_1"),
        ("tbbb", "addrelu_b_1_2_2_64_2_2_64_3_3_1_1_1_1_1_1_1_1_1"),
        ("tbff", "none_b_1_2_2_64_2_2_40_3_3_1_1_1_1_1_1_1_1_1"),
    ]
    names = [f"bf16{t}_{s}" if bf16 else f"f32_{s}" for t, s in shapes]
    rows = min(threads, 2)  # (never more parts than output rows)
    assert symbols["rows"] == {f"xgen_dnnl_conv_{n}_p{rows}" for n in names}
    assert symbols["count"] == {f"xgen_dnnl_conv_{n}_c{threads}" for n in names}
    assert max_abs_err(got["count"], got["rows"]) <= 1e-6 * _scale(want)


class _ResidualChain(torch.nn.Module):
    """An IREE op (a ReLU of the input, NHWC-free: after the stem) feeding three convs in a
    residual block, then a pool: activations between library ops and at their edges."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.a = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.b = torch.nn.Conv2d(16, 16, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.stem(x))
        z = torch.relu(self.b(torch.relu(self.a(y))) + y)
        return torch.nn.functional.max_pool2d(z, 2)


@pytest.mark.parametrize("threads", [1, 2])
def test_bf16_activations_between_library_ops(threads, tmp_path):
    """library_activations=bf16 (the default): a bf16 library op whose users are all bf16
    library ops writes bf16 (here the stem, read by ``a`` and as ``b``'s residual, and
    ``a``), its readers take it as bf16, and an output going to IREE's code (the pool) stays
    f32. The numbers stay within bf16's error of PyTorch, as with f32 activations (each op
    converting its own source), from which they differ by at most the residual's rounding."""
    torch.manual_seed(11)
    model, x = _ResidualChain().eval(), torch.randn(1, 8, 8, 8)
    with torch.no_grad():
        want = model(x).numpy()
    got, symbols = _each_option_value(
        model, x, want, tmp_path, "conv", threads, "library_activations", ("bf16", "f32")
    )
    if not HOST_BF16:
        return
    types = sorted(re.match(r"xgen_dnnl_conv_(bf16\w*?)_", s).group(1) for s in symbols["bf16"])
    assert types == ["bf16tbbf", "bf16tbfb", "bf16tffb"], symbols["bf16"]
    assert all("_bf16_" in s for s in symbols["f32"]), symbols["f32"]
    # (the residual y rounded to bf16 before the add: one bf16 step of y at most)
    assert max_abs_err(got["bf16"], got["f32"]) <= 2**-8 * _scale(want)
