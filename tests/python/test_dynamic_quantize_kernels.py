"""The dynamic-quantization kernels (``codegen/dynamic_quantize.py``) called directly, as a
shared library, on inputs built to hit their edges: values a few ulps from a rounding tie
(where the kernel's product by the reciprocal must give way to the division), signed zeros,
NaN and the infinities, chunk ends mid-vector. Each is compared with numpy computing the
same IEEE operations (``x / s`` in f32, round half to even), and with the host's vector
path and the scalar path (``-march=x86-64``) alike. Whole-model numerics against IREE's own
code are in test_quantized_onnx.py."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from xgen_mlir.codegen import dynamic_quantize

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")

MARCHES = ["native", "x86-64"]  # the AVX-512 path where the host has it; the scalar loop


def _library(tmp: Path, source: str, march: str) -> ctypes.CDLL:
    c, so = tmp / f"k-{march}.c", tmp / f"k-{march}.so"
    c.write_text(source)
    subprocess.run(
        ["gcc", "-O2", f"-march={march}", "-shared", "-fPIC", "-o", str(so), str(c)], check=True
    )
    return ctypes.CDLL(str(so))


def _memref(a: np.ndarray) -> list:
    """A flat buffer as the kernel's memref arguments: base, aligned, offset, size, stride."""
    p = ctypes.c_void_p(a.ctypes.data)
    return [p, p, ctypes.c_size_t(0), ctypes.c_size_t(a.size), ctypes.c_size_t(1)]


def _quantize(lib: ctypes.CDLL, x: np.ndarray, scale: float, zp: int) -> np.ndarray:
    s, z = np.array([scale], np.float32), np.array([zp], np.uint8)
    y = np.zeros(x.size, np.int8)
    for g in range(dynamic_quantize.quantize_workgroups(x.size)):
        lib.k_impl(*_memref(x), *_memref(s), *_memref(z), *_memref(y), ctypes.c_size_t(g))
    return y


def _reference(x: np.ndarray, scale: float, zp: int) -> np.ndarray:
    q = np.round(x / np.float32(scale)).astype(np.float32) + np.float32(zp)  # half to even
    return (np.clip(q, 0, 255).astype(np.int32) - 128).astype(np.int8)


@pytest.mark.parametrize("march", MARCHES)
@pytest.mark.parametrize("scale", [0.0173, 1 / 3, 0.1, 3.0, 1.7e38])
def test_quantize_at_ties_matches_division(tmp_path: Path, march: str, scale: float) -> None:
    """Every k + 1/2 for k in [-140, 140) times the scale, and the 8 floats on each side of
    it: where x * (1/s) and x / s round to different integers, the kernel must divide."""
    lib = _library(tmp_path, dynamic_quantize.quantize("k", 0.0, 255.0, False, False, True), march)
    s = np.float32(scale)
    k = np.arange(-140, 140) if scale < 1e3 else np.arange(-2, 2)  # (1.7e38: a subnormal 1 / s)
    ties = (k.astype(np.float32) + np.float32(0.5)) * s
    around, up, down = [ties], ties, ties
    for _ in range(8):
        up, down = np.nextafter(up, np.float32(np.inf)), np.nextafter(down, np.float32(-np.inf))
        around += [up, down]
    around.append(np.random.default_rng(0).standard_normal(9001).astype(np.float32))
    x = np.concatenate(around).astype(np.float32)
    np.testing.assert_array_equal(_quantize(lib, x, scale, 131), _reference(x, scale, 131))


def _minmax(lib: ctypes.CDLL, x: np.ndarray) -> tuple[float, float]:
    g = dynamic_quantize.partials(x.size)
    y = np.zeros(2 * g, np.float32)
    for i in range(g):
        lib.k_impl(*_memref(x), *_memref(y), ctypes.c_size_t(i))
    pairs = y.reshape(g, 2)
    return float(np.max(pairs[:, 0])), float(np.min(pairs[:, 1]))


@pytest.mark.parametrize("march", MARCHES)
def test_minmax_orders_zeros_and_spreads_nan(tmp_path: Path, march: str) -> None:
    """maximumf / minimumf semantics: -0 < +0, a NaN anywhere (any lane, the tail, either
    chunk) makes both NaN; infinities count."""
    lib = _library(tmp_path, dynamic_quantize.minmax("k", -np.inf, np.inf), march)
    n = dynamic_quantize.MINMAX_CHUNK + 1001  # two chunks, the second ending mid-vector
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n).astype(np.float32)
    assert _minmax(lib, x) == (float(x.max()), float(x.min()))
    zeros = np.zeros(n, np.float32)
    zeros[::2] = -0.0
    hi, lo = _minmax(lib, zeros)
    assert (hi, np.signbit(hi), lo, np.signbit(lo)) == (0.0, False, 0.0, True)
    for at in (0, 5, 63, 64 + 17, dynamic_quantize.MINMAX_CHUNK + 3, n - 1):
        y = x.copy()
        y[at] = np.nan
        assert all(np.isnan(_minmax(lib, y))), at
    y = x.copy()
    y[100], y[n - 2] = np.inf, -np.inf
    assert _minmax(lib, y) == (np.inf, -np.inf)
