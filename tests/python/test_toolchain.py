"""Generated-kernel objects are cached per source, flags and (for -march=native) host CPU."""

from __future__ import annotations

from xgen_mlir.codegen import toolchain as tc

SOURCE = "int xgen_probe(int a) { return a + 1; }\n"


def test_native_objects_are_cached_per_cpu(tmp_path, monkeypatch):
    monkeypatch.setenv("XGEN_CACHE_DIR", str(tmp_path))
    native = tc.Toolchain("gcc", ("-march=native",))
    monkeypatch.setattr(tc, "_host_cpu", lambda: "cpu A")
    a1 = tc.compile_object(SOURCE, native, "probe")
    a2 = tc.compile_object(SOURCE, native, "probe")
    monkeypatch.setattr(tc, "_host_cpu", lambda: "cpu B")
    b = tc.compile_object(SOURCE, native, "probe")
    assert a1 == a2 and a1 != b and a1.exists() and b.exists()
    generic = tc.Toolchain("gcc", ("-fno-unroll-loops",))
    g1 = tc.compile_object(SOURCE, generic, "probe")
    monkeypatch.setattr(tc, "_host_cpu", lambda: "cpu A")
    assert tc.compile_object(SOURCE, generic, "probe") == g1  # no host in the key


def test_a_missing_c_compiler_is_said_once_and_the_model_still_matches(monkeypatch):
    """Without a C compiler the generated kernels fall back to IREE's code: a FallbackWarning
    per pass says so (not only the report), and the numbers are still PyTorch's."""
    import pytest
    import torch

    import xgen_mlir
    from xgen_mlir.codegen.toolchain import Toolchain
    from xgen_mlir.errors import FallbackWarning

    monkeypatch.setattr(Toolchain, "available", lambda self: False)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(16, 64, 1), torch.nn.ReLU6(), torch.nn.Conv2d(64, 64, 3, padding=1,
        groups=64), torch.nn.ReLU6(), torch.nn.Conv2d(64, 16, 1), torch.nn.Flatten(),
        torch.nn.Linear(16 * 8 * 8, 10),
    ).eval()  # fmt: skip
    x = torch.randn(1, 16, 8, 8)
    with pytest.warns(FallbackWarning, match="C compiler 'gcc' not found") as said:
        compiled = xgen_mlir.compile(
            model, (x,), target_options={"inverted_residual_min_bytes": "0"}
        )
    messages = [str(w.message) for w in said if issubclass(w.category, FallbackWarning)]
    assert len(messages) == len(set(messages)), messages
    with torch.no_grad():
        assert torch.allclose(torch.as_tensor(compiled(x)), model(x), atol=1e-4, rtol=1e-4)
