"""The `vulkan` target on Mesa's llvmpipe Vulkan device (a CPU; no GPU needed) vs PyTorch.

llvmpipe runs SPIR-V on the CPU, so these runs check correctness, not speed. The model suite
is the foundation's (MLP, small CNN, ResNet-18, MobileNetV2, MiniLM, GPT-2 small widths); the
image models run at reduced resolution and the transformers at short sequences because
llvmpipe executes IREE's portable-profile kernels slowly (ResNet-18 at 224x224 took over five
minutes here). Tolerances: fp32 with a different summation order than PyTorch's kernels.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from conftest import check_close
from targets_util import need_vulkan, run_bundle_npy

import xgen_mlir
from xgen_mlir.models import transformers_zoo, vision
from xgen_mlir.runtime.targets import TargetMismatchError


@pytest.fixture(autouse=True)
def _vulkan():
    need_vulkan()


def _suite(name):
    if name == "mlp":
        return vision.mlp(), (vision.random_input("mlp"),), 1e-5
    if name == "small_cnn":
        return vision.small_cnn(), (vision.random_input("small_cnn"),), 1e-4
    gen = torch.Generator().manual_seed(0)
    if name == "resnet18":
        return vision.resnet18(), (torch.randn(1, 3, 64, 64, generator=gen),), 1e-4
    if name == "mobilenet_v2":
        x = torch.randn(1, 3, 64, 64, generator=gen)
        return vision.mobilenet_v2(pretrained=True), (x,), 2e-4
    if name == "efficientnet_b0":  # depthwise 3x3 and 5x5, squeeze-excite, SiLU
        return vision.efficientnet_b0(), (torch.randn(1, 3, 64, 64, generator=gen),), 1e-4
    if name == "minilm":
        model, inputs = transformers_zoo.minilm(seq=32)
        return model, inputs, 1e-4
    model, inputs = transformers_zoo.gpt2_small(seq=8, n_layer=2, vocab_size=8192)
    return model, inputs, 2e-4


@pytest.mark.parametrize(
    "name",
    [
        "mlp",
        "small_cnn",
        "resnet18",
        "mobilenet_v2",
        "efficientnet_b0",
        "minilm",
        "gpt2_small_2_layers",
    ],
)
def test_model_suite_on_llvmpipe_matches_pytorch(name):
    model, inputs, tol = _suite(name)
    with torch.no_grad():
        want = model(*inputs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # GPT-2 falls back to i64 -> i32 demotion (it warns)
        module = xgen_mlir.compile(model, inputs, target="vulkan")
    assert module.device == "vulkan"
    # Where IREE demoted i64 (no Int64 on the portable profile), integer inputs are int32.
    specs = module.signature.inputs
    args = [x.int() if s.dtype == np.int32 else x for x, s in zip(inputs, specs, strict=True)]
    got = module(*args)
    check_close(got.numpy(), want.numpy(), atol=tol, rtol=tol, what=f"{name} on vulkan")


@pytest.fixture(scope="module")
def cnn_vulkan():
    model, (x,), _ = _suite("small_cnn")
    with torch.no_grad():
        want = model(x).numpy()
    return x, want, xgen_mlir.compile(model, (x,), target="vulkan")


def test_numpy_inputs_and_outputs_of_any_alignment(cnn_vulkan):
    """Results come back through a staging buffer, never an imported (unaligned) numpy pointer."""
    x, want, module = cnn_vulkan
    buf = np.empty(x.numel() + 1, np.float32)[1:]  # deliberately 4-byte, not 4096-byte aligned
    arr = buf.reshape(x.shape)
    arr[...] = x.numpy()
    for _ in range(3):
        out = module(arr)
        check_close(out, want, atol=1e-4, rtol=1e-4, what="vulkan numpy")
    assert out.flags.owndata or out.base is not None
    assert module.benchmark(x, runs=2, warmup=1).runs == 2


def test_vulkan_bundle_runs_in_stock_iree_run_module(cnn_vulkan, tmp_path):
    x, want, module = cnn_vulkan
    bundle = module.save_bundle(tmp_path / "b")
    got = run_bundle_npy(bundle, tmp_path, x.numpy())
    check_close(got, want, atol=1e-4, rtol=1e-4, what="vulkan bundle")
    loaded = xgen_mlir.load(bundle / "model.vmfb")  # device inferred from the module: vulkan
    assert loaded.device == "vulkan"
    check_close(loaded(x).numpy(), want, atol=1e-4, rtol=1e-4, what="vulkan load")


def test_module_on_a_device_it_was_not_compiled_for(cnn_vulkan, tmp_path):
    module = cnn_vulkan[2]
    path = module.save(tmp_path / "vk.vmfb")
    with pytest.raises(TargetMismatchError, match="vulkan-spirv-fb.*device 'local-task'"):
        xgen_mlir.load(path, device="local-task")
    cpu = xgen_mlir.compile(vision.mlp(), (vision.random_input("mlp"),))
    cpu_path = cpu.save(tmp_path / "cpu.vmfb")
    with pytest.raises(TargetMismatchError, match="x86_64 CPUs .*device 'vulkan'.*target='vulkan'"):
        xgen_mlir.load(cpu_path, device="vulkan")


def test_a_vendor_profile_refuses_a_device_of_another_vendor(tmp_path):
    """A module for AMD's RDNA3 loads on llvmpipe and returns wrong numbers with no error;
    calling it here (or its bundle) is a TargetMismatchError naming the profile instead."""
    from xgen_mlir.runtime import load_bundle

    model = vision.mlp()
    module = xgen_mlir.compile(
        model, (vision.random_input("mlp"),), target="vulkan", target_options={"gpu": "rdna3"}
    )
    with pytest.raises(TargetMismatchError, match="profile 'rdna3' \\(amd GPUs\\).*llvmpipe"):
        module(vision.random_input("mlp"))
    module.save_bundle(tmp_path / "b")
    with pytest.raises(TargetMismatchError, match="rdna3"):
        load_bundle(tmp_path / "b")(vision.random_input("mlp"))


def test_vendor_of_a_profile():
    from xgen_mlir.runtime.targets import check_vulkan_profile, vendor_of_profile

    assert vendor_of_profile("vp_android_baseline_2022") is None
    assert [vendor_of_profile(p) for p in ("rdna3", "gfx1100", "ampere", "sm_80", "valhall",
                                           "adreno")] == ["amd", "amd", "nvidia", "nvidia",
                                                          "arm", "qualcomm"]  # fmt: skip
    check_vulkan_profile("ampere", ["NVIDIA GeForce RTX 3090"], "m")  # the right vendor loads
    check_vulkan_profile("vp_android_baseline_2022", ["llvmpipe"], "m")


def test_no_fallback_without_the_steps_the_numbers_need():
    """xgen-isolate-pad-sources is `required` in vulkan.toml: where it cannot run (external
    weights skip the dispatch steps) the compile is refused, not built by IREE alone with
    the padded-store bug (docs/targets.md)."""
    model, x = vision.small_cnn(), vision.random_input("small_cnn")
    with pytest.raises(xgen_mlir.errors.BackendCompileError, match="isolate-pad-sources"):
        xgen_mlir.compile(model, x, target="vulkan", external_weights=True)


BUSY_THREADS_PROBE = """
import gc, os, sys, threading, time
import xgen_mlir
from xgen_mlir.models import vision
from xgen_mlir.runtime import Scheduler


def busy():
    # threads (other than this one) found running or runnable in 18 of 20 looks over a
    # second: a spinning thread is never asleep, however loaded the machine is
    me, counts = str(threading.get_native_id()), {}
    for _ in range(20):
        for t in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{t}/stat") as f:
                    state = f.read().rsplit(") ", 1)[1].split()[0]
            except OSError:
                continue
            if t != me and state == "R":
                counts[t] = counts.get(t, 0) + 1
        time.sleep(0.05)
    return sum(n >= 18 for n in counts.values())


model, x = vision.mlp(), vision.random_input("mlp")
a = xgen_mlir.compile(model, (x,), target="vulkan")
b = xgen_mlir.load(a.save(sys.argv[1]))  # a second module
a(x), b(x)
with Scheduler() as s:
    s.add_model("gpu", a)
    s.submit("gpu", x.numpy()).result(120)
loaded = busy()
del a, b, s
gc.collect()
print("busy threads", loaded, busy())
"""


def test_no_thread_spins_once_the_vulkan_modules_are_gone(tmp_path):
    """IREE's Vulkan device waits for completions in a thread, and on lavapipe that wait polls
    at 100% of a core: the process-wide cached device kept two such threads for the life of
    the process. Modules and schedulers now share one device that ends with its last holder:
    at most two spinning threads while Vulkan models are loaded (lavapipe's wait; a GPU's
    driver sleeps), none after. In a fresh process: another test's live module would hold
    the device here. Spinning is judged by thread state (never asleep), not by CPU share,
    which a loaded machine would hide."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", BUSY_THREADS_PROBE, str(tmp_path / "mlp.vmfb")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    loaded, gone = map(int, proc.stdout.split("busy threads")[1].split())
    assert loaded <= 2 and gone == 0, proc.stdout
