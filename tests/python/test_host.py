"""Target facts read off the host (target.py) and the ``auto`` option they back."""

from __future__ import annotations

from xgen_mlir.pipelines import load_pipeline
from xgen_mlir.target import (
    TargetFacts,
    cache_bytes,
    cpu_flags,
    cpu_model,
    host_fact,
    matmul_tile_bytes,
)


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
    assert host_fact("l2_bytes", caches=tmp_path) == 1 << 20
    assert matmul_tile_bytes(TargetFacts(l2_bytes=1 << 20)) == str(512 << 10)


def test_unknown_cache_keeps_iree_default(tmp_path):
    assert cache_bytes(2, tmp_path) is None
    assert host_fact("l2_bytes", caches=tmp_path) == 0
    assert matmul_tile_bytes(TargetFacts()) == ""


def test_cpu_pipeline_resolves_auto_and_user_overrides():
    pipeline = load_pipeline("cpu").with_options()
    tile = [f for f in pipeline.flags if f.startswith("--iree-llvmcpu-matmul-tile-bytes")]
    expected = matmul_tile_bytes(pipeline.facts)
    assert tile == ([f"--iree-llvmcpu-matmul-tile-bytes={expected}"] if expected else [])
    assert "--iree-llvmcpu-matmul-tile-bytes=1048576" in (
        load_pipeline("cpu").with_options({"matmul_tile_bytes": "1048576"}).flags
    )
    assert not any(
        "matmul-tile-bytes" in f
        for f in load_pipeline("cpu").with_options({"matmul_tile_bytes": ""}).flags
    )


def test_vector_width_read_from_cpuinfo(tmp_path):
    """The 512-bit tile rules fire only where the target fact says so; on the host target the
    fact comes from /proc/cpuinfo's flags."""
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512bw\n")
    assert "avx512f" in cpu_flags(info)
    assert host_fact("vector_bits", cpuinfo=info) == 512
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512_vnni\n")
    assert host_fact("vector_bits", cpuinfo=info) == 256
    info.write_text("processor\t: 0\nFeatures\t: fp asimd evtstrm\n")
    assert host_fact("vector_bits", cpuinfo=info) == 128
    assert host_fact("vector_bits", cpuinfo=tmp_path / "missing") == 0


def test_cpu_model_names_the_generation(tmp_path):
    """Two VMs may both call their CPU "AMD EPYC" (a Zen 4 and a Zen 5 here): the x86 family
    and model numbers go with the name, so the tuning database and the results files tell
    them apart. The first processor's block is read; a name without numbers stays as it is."""
    info = tmp_path / "cpuinfo"
    block = "processor\t: {i}\ncpu family\t: {f}\nmodel\t\t: {m}\nmodel name\t: AMD EPYC\n"
    info.write_text(block.format(i=0, f=26, m=2) + "\n" + block.format(i=1, f=25, m=17))
    assert cpu_model(info) == "AMD EPYC (family 26, model 2)"
    info.write_text(block.format(i=0, f=25, m=17))
    assert cpu_model(info) == "AMD EPYC (family 25, model 17)"
    info.write_text("processor\t: 0\nBogoMIPS\t: 108.00\n\nModel\t\t: Raspberry Pi 4 Model B\n")
    assert cpu_model(info) == "Raspberry Pi 4 Model B"


def test_exact_int8_fact_and_the_integer_contractions_it_picks(tmp_path):
    """An exact int8 dot product (VNNI, AMX-INT8, arm64's dot product) is a target fact read
    from cpuinfo; integer_contractions=auto is, without one, kernel where the target has 256-
    or 512-bit vectors (the 16-bit multiply-add kernel) and float elsewhere, convs with one,
    and a user's value or a stated fact overrides it."""
    from xgen_mlir.target import integer_contractions

    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 fma\n")
    assert host_fact("exact_int8", cpuinfo=info) == 0
    for flags in ("avx2 avx512f avx512_vnni", "avx2 avx_vnni", "avx512f amx_int8", "asimd asimddp"):
        info.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
        assert host_fact("exact_int8", cpuinfo=info) == 1, flags
    assert integer_contractions(TargetFacts(exact_int8=0)) == "float"  # vector width unknown
    assert integer_contractions(TargetFacts(vector_bits=128, exact_int8=0)) == "float"
    assert integer_contractions(TargetFacts(vector_bits=256, exact_int8=0)) == "kernel"
    assert integer_contractions(TargetFacts(vector_bits=512, exact_int8=0)) == "kernel"
    assert integer_contractions(TargetFacts(vector_bits=512, exact_int8=1)) == "convs"

    def step(**options) -> str:
        steps = load_pipeline("cpu").with_options(options).pass_steps("main")
        return next(s for s in steps if s.startswith("xgen-integer-in-float"))

    assert "mode=kernel" in step(exact_int8="0", vector_bits="256")
    assert "mode=float" in step(exact_int8="0", vector_bits="128")
    assert "mode=convs" in step(exact_int8="1")
    assert "mode=integer" in step(exact_int8="0", integer_contractions="integer")


def test_bf16_tiles_fact_reaches_the_algorithm_choice_step(tmp_path):
    """bf16 matrix tiles (AMX-BF16) are a target fact read from cpuinfo, not AVX512-BF16's dot
    products; the cpu pipeline hands it to xgen-winograd-convs (where an unmeasured bf16
    Linear layer picks its prior), and a stated value overrides the host's."""
    info = tmp_path / "cpuinfo"
    for flags, tiles in (("avx512f avx512_bf16", 0), ("avx512f amx_tile amx_bf16", 1)):
        info.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
        assert host_fact("bf16_tiles", cpuinfo=info) == tiles, flags

    def step(**options) -> str:
        steps = load_pipeline("cpu").with_options(options).pass_steps("main")
        return next(s for s in steps if s.startswith("xgen-winograd-convs"))

    assert "bf16-tiles=1" in step(bf16_tiles="1")
    assert "bf16-tiles=0" in step(bf16_tiles="0")
