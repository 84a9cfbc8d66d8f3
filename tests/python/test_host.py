"""Host probes (backend/host.py) and the ``auto`` target option they back."""

from __future__ import annotations

from xgen_mlir.backend.host import cache_bytes, has_avx512, matmul_tile_bytes
from xgen_mlir.pipelines import load_pipeline


def _cache(root, index, level, kind, size):
    d = root / f"index{index}"
    d.mkdir(parents=True)
    (d / "level").write_text(f"{level}\n")
    (d / "type").write_text(f"{kind}\n")
    (d / "size").write_text(f"{size}\n")


def test_cache_sizes_from_sysfs(tmp_path):
    _cache(tmp_path, 0, 1, "Data", "32K")
    _cache(tmp_path, 1, 1, "Instruction", "32K")
    _cache(tmp_path, 2, 2, "Unified", "1024K")
    _cache(tmp_path, 3, 3, "Unified", "32M")
    assert cache_bytes(1, tmp_path) == 32 << 10
    assert cache_bytes(2, tmp_path) == 1 << 20
    assert cache_bytes(3, tmp_path) == 32 << 20
    assert matmul_tile_bytes(tmp_path) == str(512 << 10)


def test_unknown_cache_keeps_iree_default(tmp_path):
    assert cache_bytes(2, tmp_path) is None
    assert matmul_tile_bytes(tmp_path) == ""


def test_cpu_pipeline_resolves_auto_and_user_overrides():
    flags = load_pipeline("cpu").with_options().flags
    tile = [f for f in flags if f.startswith("--iree-llvmcpu-matmul-tile-bytes")]
    expected = matmul_tile_bytes()
    assert tile == ([f"--iree-llvmcpu-matmul-tile-bytes={expected}"] if expected else [])
    assert "--iree-llvmcpu-matmul-tile-bytes=1048576" in (
        load_pipeline("cpu").with_options({"matmul_tile_bytes": "1048576"}).flags
    )
    assert not any(
        "matmul-tile-bytes" in f
        for f in load_pipeline("cpu").with_options({"matmul_tile_bytes": ""}).flags
    )


def test_avx512_read_from_cpuinfo(tmp_path):
    """The AVX-512-tuned tile rules run only where /proc/cpuinfo lists avx512f."""
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512bw\n")
    assert has_avx512(info)
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512_vnni\n")
    assert not has_avx512(info)
    assert not has_avx512(tmp_path / "missing")
