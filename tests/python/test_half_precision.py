"""fp16 and bf16 models: they compile on cpu, x86_64 and vulkan (Mesa's llvmpipe), match
PyTorch within their precision, and the runtime takes and gives those dtypes (numpy arrays
of float16 / ml_dtypes.bfloat16, torch tensors of torch.float16 / torch.bfloat16).

Tolerances, as max |got - want| / max |want|, against PyTorch run in float32 on the same
(upcast, so identical) weights and inputs:
  fp16 1e-2: unit roundoff u = 2^-11 = 4.9e-4; PyTorch and torch-mlir round every op's result
      to fp16, so the small models' outputs carry a handful of roundings, each up to u of the
      values then (amplified by the layers after it): ~20 u. Measured 3e-4 (MLP), 7e-4 (CNN).
  bf16 3e-2: u = 2^-8 = 3.9e-3, the same count of roundings: ~8 u. Measured 1.2e-3 (MLP),
      5.4e-3 (CNN).
A deep model rounds some fifty times: MobileNetV2 is held to twice PyTorch's own error in the
dtype where that is larger (PyTorch fp16 5e-3, bf16 3.4e-2; xgen_mlir 7e-3 and 5.2e-2).
Against PyTorch run in the model's own dtype (where PyTorch's CPU kernels take it), the
difference is bounded by the sum of the two errors against float32.

Vulkan: IREE's portable profile (vp_android_baseline_2022) has no 16-bit storage, and IREE
3.13 then reads a 16-bit buffer as if it held 32-bit elements (zeros and garbage, no error):
these runs add the profile's features plus Float16, Int16 and 16-bit storage, which llvmpipe
has (VULKAN_16BIT). bf16 there also needs IREE's constant inlining off: its SPIR-V codegen
rejects a small bf16 constant inlined into a dispatch as a resource ("'arith.constant' op
failed to verify") and as dense<> ("'spirv.Bitcast' op mismatch in result type bitwidth").
"""

from __future__ import annotations

import copy

import ml_dtypes
import numpy as np
import pytest
import torch
from targets_util import need_vulkan

import xgen_mlir
from xgen_mlir import dtypes
from xgen_mlir.errors import BackendCompileError, InputMismatchError
from xgen_mlir.models import vision

TORCH = {"fp16": torch.float16, "bf16": torch.bfloat16}
NUMPY = {"fp16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16)}
TOL = {"fp16": 1e-2, "bf16": 3e-2}
VULKAN_16BIT = (
    "--iree-vulkan-target-features=spirv:v1.3,cap:Shader,cap:Float16,cap:Int16,"
    "cap:StorageBuffer16BitAccess,ext:SPV_KHR_16bit_storage"
)

_compiled: dict[tuple, tuple] = {}


@pytest.fixture(autouse=True, scope="module")
def _drop_compiled_modules():
    """The cache lives as long as this file's tests: a live Vulkan module holds the Vulkan
    device, whose watcher thread spins on lavapipe (runtime.targets.vulkan_lease)."""
    yield
    _compiled.clear()


def _model(name: str, precision: str):
    """(model in the dtype, input in the dtype, float32 reference output on the same values)."""
    if name == "mobilenet_v2":
        model = vision.mobilenet_v2()
        x = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(0))
    else:
        model, x = getattr(vision, name)(), vision.random_input(name)
    model = model.eval().to(TORCH[precision])
    x = x.to(TORCH[precision])
    with torch.no_grad():
        want = copy.deepcopy(model).float()(x.float())
    return model, x, want


def _compiled_model(name: str, precision: str, target: str = "cpu"):
    """Compile once per (model, precision, target) for the tests of this file."""
    key = (name, precision, target)
    if key not in _compiled:
        model, x, want = _model(name, precision)
        flags = [VULKAN_16BIT] if target == "vulkan" else []
        if target == "vulkan" and precision == "bf16":
            flags.append("--iree-flow-inline-constants-max-byte-length=0")
        module = xgen_mlir.compile(model, (x,), target=target, extra_iree_flags=flags)
        _compiled[key] = (module, model, x, want)
    return _compiled[key]


def _rel_err(got, want: torch.Tensor) -> float:
    got = torch.as_tensor(np.asarray(got, np.float32)) if isinstance(got, np.ndarray) else got
    return float((got.float() - want.float()).abs().max() / want.float().abs().max())


def _own_dtype_err(model, x, want) -> tuple[float, torch.Tensor] | None:
    """PyTorch's own output in the model's dtype and its error against float32 (None: its CPU
    kernels do not take the dtype)."""
    try:
        with torch.no_grad():
            own = model(x)
    except (RuntimeError, NotImplementedError):
        return None
    return _rel_err(own, want), own


def _check(name: str, precision: str, target: str, bound: float | None = None) -> None:
    module, model, x, want = _compiled_model(name, precision, target)
    got = module(x)
    assert isinstance(got, torch.Tensor) and got.dtype == TORCH[precision]
    err = _rel_err(got, want)
    own = _own_dtype_err(model, x, want)
    limit = bound if bound is not None else TOL[precision]
    if own is not None and name == "mobilenet_v2":
        limit = max(limit, 2 * own[0])
    assert err <= limit, f"{name} {precision} on {target}: error {err:.2e} > {limit:.2e}"
    if own is not None:
        own_err, own_out = own
        vs_own = _rel_err(got, own_out)
        assert vs_own <= limit + own_err, (
            f"{name} {precision} on {target} vs PyTorch in {precision}: {vs_own:.2e}"
        )


# -- cpu (the default target) ---------------------------------------------------------------
@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("name", ["mlp", "small_cnn"])
def test_small_models_cpu(name, precision):
    _check(name, precision, "cpu")


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_numpy_in_numpy_out_keeps_the_dtype(precision):
    module, _, x, want = _compiled_model("small_cnn", precision)
    arr = dtypes.from_torch(x)
    assert arr.dtype == NUMPY[precision]
    got = module(arr)
    assert isinstance(got, np.ndarray) and got.dtype == NUMPY[precision]
    assert _rel_err(got, want) <= TOL[precision]
    # the numpy and torch paths hand IREE the same bits and read back the same bits
    np.testing.assert_array_equal(dtypes.from_torch(module(x)).view(np.uint16), got.view(np.uint16))


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_isolated_module_takes_and_returns_the_dtype(precision, tmp_path):
    """The isolated worker's wire format names bf16 (numpy's own string for it, '<V2', says
    nothing of what the bytes are): the same bits as in-process, both ways."""
    module, _, x, _ = _compiled_model("small_cnn", precision)
    isolated = xgen_mlir.load(module.save(tmp_path / "m.vmfb"), isolated=True)
    got = isolated(x)
    assert isinstance(got, torch.Tensor) and got.dtype == TORCH[precision]
    np.testing.assert_array_equal(
        dtypes.from_torch(got).view(np.uint16), dtypes.from_torch(module(x)).view(np.uint16)
    )
    arr = isolated(dtypes.from_torch(x))
    assert isinstance(arr, np.ndarray) and arr.dtype == NUMPY[precision]


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_wrong_dtype_names_the_expected_one(precision):
    module, _, x, _ = _compiled_model("small_cnn", precision)
    expected = NUMPY[precision].name  # float16 / bfloat16
    with pytest.raises(InputMismatchError, match=f"expected dtype {expected}, got .*float32"):
        module(x.float())
    other = "bf16" if precision == "fp16" else "fp16"
    with pytest.raises(InputMismatchError, match=f"expected dtype {expected}"):
        module(x.to(TORCH[other]).numpy() if other == "fp16" else x.to(TORCH[other]))
    assert expected in repr(module)


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_generated_kernels_leave_half_precision_to_iree_with_a_reason(precision):
    """The f32-only C kernels do not fire; the report says why instead of a crash."""
    module, *_ = _compiled_model("small_cnn", precision)
    pointwise = module.report.rewrites.get("xgen-pointwise-kernels", {})
    assert not any(k.endswith("replaced") and not k.startswith("not") for k in pointwise)
    assert any("f32 only" in k for k in pointwise), pointwise


# -- x86_64 (generic x86-64 CPU, runs here) --------------------------------------------------
@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_small_cnn_x86_64(precision):
    _check("small_cnn", precision, "x86_64")


# -- vulkan on llvmpipe ----------------------------------------------------------------------
@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("name", ["mlp", "small_cnn"])
def test_small_models_vulkan(name, precision):
    need_vulkan()
    _check(name, precision, "vulkan")


# -- MobileNetV2 ---------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_mobilenet_v2_cpu(precision):
    _check("mobilenet_v2", precision, "cpu")
    module, *_ = _compiled_model("mobilenet_v2", precision)
    rewrites = module.report.rewrites
    assert "blocks fused" not in rewrites.get("xgen-fuse-inverted-residuals", {})
    pointwise = rewrites.get("xgen-pointwise-kernels", {})
    assert not any(k.endswith("replaced") and not k.startswith("not") for k in pointwise)
    assert any(k.startswith("not replaced") for k in pointwise), pointwise  # the head


# -- the dtype table and conversions (no compile) -------------------------------------------
def test_dtype_table():
    for elem, want in [
        ("f64", np.float64),
        ("f32", np.float32),
        ("f16", np.float16),
        ("bf16", ml_dtypes.bfloat16),
        ("i64", np.int64),
        ("si32", np.int32),
        ("i16", np.int16),
        ("i8", np.int8),
        ("ui8", np.uint8),
        ("i1", np.bool_),
    ]:
        assert dtypes.numpy_dtype(elem) == np.dtype(want), elem
    assert dtypes.element_type(ml_dtypes.bfloat16) == "bf16"
    assert dtypes.element_type(np.int32) == "i32"
    assert dtypes.numpy_dtype("index") is None and dtypes.numpy_dtype("complex<f32>") is None
    assert dtypes.element_bytes("bf16") == 2


def test_torch_bf16_conversion_is_bit_exact():
    bits = torch.tensor([0x3FC0, 0x7FC1, 0xFF80, 0x0001, 0x8000], dtype=torch.int32).to(torch.int16)
    t = bits.view(torch.bfloat16)  # 1.5, a NaN with a payload, -Inf, a subnormal, -0
    arr = dtypes.from_torch(t)
    assert arr.dtype == NUMPY["bf16"]
    np.testing.assert_array_equal(arr.view(np.int16), bits.numpy())
    back = dtypes.to_torch(arr)
    assert back.dtype == torch.bfloat16 and torch.equal(back.view(torch.int16), bits)


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_vulkan_profile_without_16bit_storage_refuses_half_models(precision):
    """The portable profile has no 16-bit storage buffers: IREE would build the module and
    return wrong numbers (an fp16 MLP gave all zeros), so the compile is refused with the
    flag that declares the device's 16-bit storage."""
    model = vision.mlp().eval().to(TORCH[precision])
    x = vision.random_input("mlp").to(TORCH[precision])
    with pytest.raises(BackendCompileError, match="no 16-bit storage") as info:
        xgen_mlir.compile(model, x, target="vulkan")
    assert "StorageBuffer16BitAccess" in str(info.value)


_BF16_MATMUL = """
func.func @main(%a: tensor<4x8xbf16>, %b: tensor<8x4xbf16>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %c = linalg.matmul ins(%a, %b : tensor<4x8xbf16>, tensor<8x4xbf16>)
      outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %c : tensor<4x4xf32>
}
"""


@pytest.mark.parametrize("native", [False, True])
def test_bf16_contractions_drop_data_tiling_without_native_bf16(monkeypatch, native):
    """A model with bf16 contractions compiled for this x86 host without native bf16 is
    compiled without data tiling from the start (IREE's data-tiled bf16 kernels crash LLVM's
    x86 instruction selection there; each flag set keeping it failed in turn), with a
    warning; with native bf16, or with no bf16 contraction, the flags stay."""
    import platform

    import xgen_mlir.target as target
    from xgen_mlir._mlir import ir
    from xgen_mlir.backend import iree as backend
    from xgen_mlir.errors import FallbackWarning

    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(target, "has_any", lambda flags, *a: native)
    flags = ["--iree-llvmcpu-target-cpu=host", "--iree-opt-data-tiling", "--other"]
    with ir.Context():
        module = ir.Module.parse(_BF16_MATMUL)
        f32 = ir.Module.parse(_BF16_MATMUL.replace("bf16", "f32"))
        if native:
            assert backend._without_bf16_data_tiling(module, flags) == flags
        else:
            with pytest.warns(FallbackWarning, match="without data tiling"):
                got = backend._without_bf16_data_tiling(module, flags)
            assert got == ["--iree-llvmcpu-target-cpu=host", "--other"]
        assert backend._without_bf16_data_tiling(f32, flags) == flags
