"""Targets beyond the host CPU: options, arm64 under qemu, riscv64 / bare-metal artifacts, errors.

Tools (qemu, the aarch64 IREE runtime wheel) skip these tests only off CI; with CI=true a
missing tool fails (``targets_util.need``). The Vulkan suite is in test_vulkan.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import check_close
from targets_util import ROOT, elf_info, need, need_qemu, run_bundle, run_bundle_npy

import xgen_mlir
from xgen_mlir import errors
from xgen_mlir.models import vision
from xgen_mlir.pipelines import available_pipelines, load_pipeline
from xgen_mlir.runtime import targets
from xgen_mlir.runtime.bundle import BundleMismatchError, load_bundle


def _mlp():
    x = torch.randn(1, 64, generator=torch.Generator().manual_seed(0))
    return vision.mlp(), x


# -- pipelines and options (no compile) -------------------------------------------------------
def test_every_target_has_a_pipeline():
    assert {"cpu", "x86_64", "arm64", "riscv64", "vulkan", "embedded", "cuda"} <= set(
        available_pipelines()
    )


def test_options_are_substituted_into_flags():
    pl = load_pipeline("arm64").with_options({"features": "+neon,+dotprod"})
    assert "--iree-llvmcpu-target-cpu-features=+neon,+dotprod" in pl.flags
    assert "--iree-llvmcpu-target-triple=aarch64-linux-gnu" in pl.flags
    assert dict(pl.option_values) == {
        "cpu": "generic",
        "features": "+neon,+dotprod",
        "pattern_nan_checks": "true",
        "precision": "fp32",
        "integer_contractions": "convs",  # auto: aarch64 multiplies int8 exactly
        "int8_pattern_kernels": "always",
        "block_kernels": "true",
        "block_max_density": "0.6",
        "threads": "4",
    }
    assert not any("${" in f for f in pl.flags)
    vk = load_pipeline("vulkan").with_options({"gpu": "rdna3"})
    assert vk.flags == ("--iree-vulkan-target=rdna3",) and vk.runtime.devices == ("vulkan",)
    assert "--iree-input-demote-i64-to-i32" in vk.fallbacks[0].apply(list(vk.flags))
    # An empty option drops its flag (the triple's default ABI).
    emb = load_pipeline("embedded").with_options({"triple": "aarch64-none-elf", "abi": ""})
    assert not any(f.startswith("--iree-llvmcpu-target-abi") for f in emb.flags)
    assert emb.runtime.arch == "aarch64-none-elf"


def test_unknown_target_option_lists_the_known_ones():
    with pytest.raises(
        errors.UnknownNameError,
        match="unknown target option .featurez.; known target options: block_kernels, ",
    ):
        xgen_mlir.compile(*_mlp(), target="arm64", target_options={"featurez": "+neon"})
    with pytest.raises(errors.UnknownNameError, match="known target options: ") as info:
        load_pipeline("cpu").with_options({"gpu": "x"})
    listed = str(info.value).split("known target options: ", 1)[1].split(", ")
    cpu = load_pipeline("cpu")
    # the options, and the target facts an option may state (vector_bits, ...)
    names = [o.name for o in cpu.options] + [name for name, _ in cpu.fact_specs]
    assert listed == sorted(names) and {"fusion", "precision", "vector_bits"} <= set(listed)


def test_option_of_a_target_without_options(tmp_path):
    bare = tmp_path / "bare.toml"
    bare.write_text('name = "bare"\nsteps = []\n[iree]\nbackends = ["llvm-cpu"]\n')
    with pytest.raises(errors.UnknownNameError, match="takes no options"):
        load_pipeline(bare).with_options({"gpu": "x"})


def test_unknown_target():
    with pytest.raises(errors.UnknownNameError, match="unknown target 'npu'; known targets: arm64"):
        xgen_mlir.compile(*_mlp(), target="npu")


# -- cross-compiled modules on this host ------------------------------------------------------
@pytest.fixture(scope="module")
def arm64_mlp():
    model, x = _mlp()
    return (
        model,
        x,
        xgen_mlir.compile(
            model, (x,), target="arm64", target_options={"features": "+neon,+dotprod"}
        ),
    )


def test_cross_module_called_on_host_is_a_clear_error(arm64_mlp):
    _, x, module = arm64_mlp
    assert "embedded-elf-arm_64" in targets.executable_formats(module.vmfb)
    with pytest.raises(
        targets.TargetMismatchError,
        match="compiled for aarch64 CPUs .* cannot run on device 'local-task'",
    ):
        module(x)


def test_cross_module_saves_and_loads_with_clear_error(arm64_mlp, tmp_path):
    path = arm64_mlp[2].save(tmp_path / "a.vmfb")
    with pytest.raises(targets.TargetMismatchError, match="run_bundle.sh"):
        xgen_mlir.load(path)


def test_arm64_bundle_runs_under_qemu_like_pytorch(arm64_mlp, tmp_path):
    need_qemu("aarch64")
    model, x, module = arm64_mlp
    bundle = module.save_bundle(tmp_path / "b")
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert (
        manifest["arch"] == "aarch64" and manifest["target_options"]["features"] == "+neon,+dotprod"
    )
    assert manifest["inputs"] == [
        {"shape": [1, 64], "dtype": "float32", "mlir_type": "tensor<1x64xf32>"}
    ]
    _aarch64_tools()
    got = run_bundle_npy(bundle, tmp_path, x.numpy())
    check_close(got, model(x).detach().numpy(), atol=1e-5, rtol=1e-5, what="mlp on qemu-aarch64")


def _aarch64_tools() -> None:
    try:
        targets.foreign_tool("aarch64", "iree-run-module")
    except errors.XGenError as e:
        need(False, f"the aarch64 IREE runtime tools ({e})")


def test_arm64_small_cnn_with_external_weights_under_qemu(tmp_path):
    need_qemu("aarch64")
    _aarch64_tools()
    model = vision.small_cnn()
    x = vision.random_input("small_cnn")
    module = xgen_mlir.compile(model, (x,), target="arm64", external_weights=1024)
    bundle = module.save_bundle(tmp_path / "b")
    assert (bundle / "weights.irpa").stat().st_size > 30_000  # conv/linear weights moved out
    got = run_bundle_npy(bundle, tmp_path, x.numpy())
    with torch.no_grad():
        want = model(x).numpy()
    check_close(got, want, atol=1e-4, rtol=1e-4, what="small CNN on qemu-aarch64")
    bench = run_bundle(
        bundle, "--benchmark_repetitions=1", "--benchmark_min_time=0.01s", benchmark=True
    )
    assert "BM_main" in bench.stdout


def test_riscv64_module_and_bundle(tmp_path):
    model, x = _mlp()
    module = xgen_mlir.compile(model, (x,), target="riscv64")
    assert targets.executable_formats(module.vmfb) == {"embedded-elf-riscv_64"}
    flags = module.build_info["iree_flags"]
    assert "--iree-llvmcpu-target-cpu-features=+m,+a,+f,+d,+c,+v" in flags
    bundle = module.save_bundle(tmp_path / "rv")
    proc = run_bundle(bundle, check=False)
    if shutil.which("qemu-riscv64-static") and Path("/usr/riscv64-linux-gnu").is_dir():
        assert proc.returncode == 5 and "PyPI has no IREE runtime wheel for riscv64" in proc.stderr
    else:
        assert proc.returncode == 5 and "riscv64" in proc.stderr


@pytest.mark.parametrize(
    "triple, features, abi, machine, bits",
    [
        ("riscv64-unknown-elf", "+m,+a,+f,+d,+c,+v", "lp64d", "riscv", 64),
        ("aarch64-none-elf", "+neon", "", "aarch64", 64),
    ],
)
def test_embedded_static_library_and_c_module(tmp_path, triple, features, abi, machine, bits):
    model, x = _mlp()
    module = xgen_mlir.compile(
        model,
        (x,),
        target="embedded",
        target_options={"triple": triple, "features": features, "abi": abi},
    )
    assert set(module.artifacts) == {"model.o", "model.h", "model_module.c"}
    got_machine, got_bits, symbols = elf_info(module.artifacts["model.o"])
    assert (got_machine, got_bits) == (machine, bits)
    query = [s for s in symbols if s.endswith("_linked_library_query")]
    assert len(query) == 1, symbols  # the one entry point firmware registers with the loader
    header = module.artifacts["model.h"].decode()
    assert f"{query[0]}(" in header and "iree/hal/local/executable_library.h" in header
    c_module = module.artifacts["model_module.c"].decode()
    assert "iree_status_t module_create(" in c_module and "main" in c_module
    assert targets.executable_formats(module.vmfb) == {"static"}
    with pytest.raises(targets.TargetMismatchError, match="static library .*save_artifacts"):
        module(x)
    written = {p.name for p in module.save_artifacts(tmp_path / "fw")}
    assert written == {"model.vmfb", "model.o", "model.h", "model_module.c"}
    bundle = module.save_bundle(tmp_path / "b")
    proc = run_bundle(bundle, check=False)
    assert proc.returncode == 4 and "bare-metal bundle" in proc.stderr


# -- bundles, manifests, external weights -------------------------------------------------------
@pytest.fixture(scope="module")
def cnn_bundle(tmp_path_factory):
    model = vision.small_cnn()
    x = vision.random_input("small_cnn")
    module = xgen_mlir.compile(model, (x,), external_weights=1024)
    assert module.parameters is not None
    with torch.no_grad():
        want = model(x).numpy()
    return module, x, want, module.save_bundle(tmp_path_factory.mktemp("cnn") / "bundle")


def test_external_weights_run_in_python_and_stock_iree_run_module(cnn_bundle, tmp_path):
    module, x, want, bundle = cnn_bundle
    check_close(module(x).numpy(), want, atol=1e-4, rtol=1e-4, what="external weights (python)")
    assert len(module.vmfb) < 60_000 < (bundle / "weights.irpa").stat().st_size
    got = run_bundle_npy(bundle, tmp_path, x.numpy())
    check_close(got, want, atol=1e-4, rtol=1e-4, what="external weights (iree-run-module)")
    loaded = load_bundle(bundle)
    check_close(loaded(x).numpy(), want, atol=1e-4, rtol=1e-4, what="load_bundle")


def test_bundle_run_sh_works_without_the_repo(cnn_bundle, tmp_path):
    _, x, want, bundle = cnn_bundle
    copy = shutil.copytree(bundle, tmp_path / "copy")
    np.save(tmp_path / "x.npy", x.numpy())
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    subprocess.run(
        [
            "sh",
            str(copy / "run.sh"),
            f"--input=@{tmp_path / 'x.npy'}",
            f"--output=@{tmp_path / 'y.npy'}",
        ],
        check=True,
        env=env,
        capture_output=True,
    )
    check_close(np.load(tmp_path / "y.npy"), want, atol=1e-4, rtol=1e-4, what="bundle run.sh")


def test_bundle_whose_manifest_does_not_match_its_module(cnn_bundle, tmp_path):
    _, _, _, bundle = cnn_bundle
    bad = shutil.copytree(bundle, tmp_path / "bad")
    model, x = _mlp()
    xgen_mlir.compile(model, (x,)).save(bad / "model.vmfb")
    with pytest.raises(BundleMismatchError, match="model.vmfb: does not match manifest.json"):
        load_bundle(bad)
    proc = run_bundle(bad, check=False)
    assert proc.returncode == 3 and "does not match manifest.json" in proc.stderr
    (bad / "manifest.json").write_text("{not json")
    with pytest.raises(BundleMismatchError, match="not valid JSON"):
        load_bundle(bad)
    with pytest.raises(errors.ModuleLoadError, match="not a bundle"):
        load_bundle(tmp_path)


def test_missing_tools_say_what_to_install(monkeypatch):
    monkeypatch.setattr(targets.shutil, "which", lambda name: None)
    with pytest.raises(
        targets.MissingToolError,
        match="apt-get install qemu-user-static libc6-arm64-cross libstdc\\+\\+6-arm64-cross",
    ):
        targets.emulator("aarch64")
    with pytest.raises(
        targets.MissingToolError, match="PyPI has no iree-base-runtime wheel for it"
    ):
        targets.foreign_tool("riscv64", "iree-run-module")
    monkeypatch.setattr(targets.ctypes.util, "find_library", lambda name: None)
    with pytest.raises(targets.MissingToolError, match="apt-get install libvulkan1 mesa-vulkan"):
        targets.require_vulkan()


def test_xgen_compile_target_options_and_bundle(tmp_path):
    model, x = _mlp()
    torch.onnx.export(model, (x,), tmp_path / "mlp.onnx", dynamo=False)
    exe = str(Path(sys.executable).parent / "xgen-compile")
    proc = subprocess.run(
        [
            exe,
            str(tmp_path / "mlp.onnx"),
            "--target",
            "arm64",
            "--target-option",
            "features=+neon,+dotprod",
            "--bundle",
            str(tmp_path / "b"),
            "-o",
            str(tmp_path / "m.vmfb"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["target"] == "arm64" and manifest["device"] == "local-task"
    assert "--iree-llvmcpu-target-cpu-features=+neon,+dotprod" in manifest["iree_flags"]
    bad = subprocess.run(
        [exe, str(tmp_path / "mlp.onnx"), "--target", "arm64", "--target-option", "simd=sve"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 1 and "unknown target option 'simd'" in bad.stderr
    listing = subprocess.run(
        [exe, "--target", "vulkan", "--list-target-options"], capture_output=True, text=True
    )
    assert "gpu (default 'vp_android_baseline_2022')" in listing.stdout
    _ = ROOT
