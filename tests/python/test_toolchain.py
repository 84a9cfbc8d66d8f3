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
