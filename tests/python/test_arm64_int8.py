"""int8 on the arm64 target: quantized models cross-compiled for aarch64, run under qemu.

The matmuls stay integer for IREE's data-tiled ukernels, which use the dot-product instructions
the target's features name (sdot with +dotprod, smmla with +i8mm, widening multiply-adds with
plain NEON); the convs run as f32 convs of the same integers, but pattern-pruned ones in the
int8 pattern kernel on sdot (+dotprod), or else in the f32 NEON pattern kernels. The
references: ONNX's semantics of the quantized file (``int8_reference``) for the CNNs, the same
model compiled for this host for the transformer.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import check_close, int8_reference
from onnx import numpy_helper
from targets_util import need, need_aarch64_runtime, run_bundle, run_bundle_npy

import xgen_mlir
from xgen_mlir import compress, errors
from xgen_mlir.models import small_cnn


def _instructions(vmfb: bytes, tmp: Path) -> Counter:
    """Mnemonics in the module's aarch64 executables (each ELF it embeds, disassembled)."""
    objdump = shutil.which("aarch64-linux-gnu-objdump")
    need(objdump is not None, "aarch64-linux-gnu-objdump (apt-get install gcc-aarch64-linux-gnu)")
    counts: Counter = Counter()
    starts = [i for i in range(len(vmfb)) if vmfb.startswith(b"\x7fELF", i)]
    assert starts, "no ELF executable in the module"
    for n, start in enumerate(starts):
        path = tmp / f"executable{n}.so"
        path.write_bytes(vmfb[start:])
        asm = subprocess.run(
            [str(objdump), "-d", str(path)], capture_output=True, text=True, check=True
        ).stdout
        counts.update(
            line.split("\t")[2].split()[0] for line in asm.splitlines() if line.count("\t") >= 2
        )
    return counts


def _calibration(n: int) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(1)
    return [torch.randn(1, 3, 32, 32, generator=gen) for _ in range(n)]


def _output_step(proto) -> float:
    inits = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    node = next(n for n in proto.graph.node if proto.graph.output[0].name in n.output)
    return float(inits[node.input[1]])


@pytest.mark.parametrize(
    "features, dot, absent",
    [
        ("+neon", "smlal", ("sdot", "smmla")),
        ("+neon,+dotprod", "sdot", ("smmla",)),
        ("+neon,+dotprod,+i8mm", "smmla", ("sdot",)),
    ],
)
def test_static_int8_cnn_uses_the_features_dot_product(features, dot, absent, tmp_path) -> None:
    """The int8 classifier's matmul is the module's only integer contraction: its ukernel is
    the one the features allow; the module under qemu matches ONNX's semantics of the file."""
    model, x = small_cnn(), torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    compiled = xgen_mlir.compile(
        model,
        x,
        target="arm64",
        precision="int8",
        calibration=_calibration(8),
        precision_check=False,
        target_options={"features": features},
    )
    r = compiled.report
    assert r.precision == "int8"
    assert r.quantization["contractions"] == {"integer": 3, "float": 0}
    assert r.quantization["computed_in_f32"] == 2  # the convs (integer_contractions=convs)
    mnemonics = _instructions(compiled.vmfb, tmp_path)
    assert mnemonics[dot] > 0, {k: mnemonics[k] for k in ("smlal", "sdot", "smmla")}
    assert not any(mnemonics[a] for a in absent), {a: mnemonics[a] for a in absent}
    if features != "+neon,+dotprod":  # running one features set per kind of ukernel is enough
        return
    need_aarch64_runtime()
    quantized = compress.quantize(model, x, calibration=_calibration(8))
    got = run_bundle_npy(compiled.save_bundle(tmp_path / "b"), tmp_path, x.numpy())
    want = int8_reference(quantized, {quantized.graph.input[0].name: x.numpy()})
    check_close(got, want, atol=_output_step(quantized) * 1.001, rtol=0, what="arm64 int8")


def test_integer_contractions_option_on_arm64() -> None:
    """integer keeps the convs integer too; the report counts none computed in f32."""
    model, x = small_cnn(), torch.randn(1, 3, 32, 32)
    compiled = xgen_mlir.compile(
        model,
        x,
        target="arm64",
        precision="int8",
        calibration=_calibration(2),
        precision_check=False,
        target_options={"integer_contractions": "integer"},
    )
    assert compiled.report.quantization["computed_in_f32"] == 0
    with pytest.raises(errors.XGenError, match="integer_contractions='kernel' is not one of"):
        xgen_mlir.compile(
            model,
            x,
            target="arm64",
            precision="int8",
            calibration=_calibration(2),
            target_options={"integer_contractions": "kernel"},
        )


def test_dynamic_int8_transformer_under_qemu(tmp_path) -> None:
    """Dynamic int8 (activations quantized at run time): a 2-layer BERT's Linear layers as
    integer matmuls on sdot; within a few f32 roundings of this host's module."""
    from xgen_mlir.models.transformers_zoo import bert_tiny

    need_aarch64_runtime()
    model, example = bert_tiny()
    common = dict(precision="int8", quantization={"mode": "dynamic"}, precision_check=False)
    compiled = xgen_mlir.compile(
        model, example, target="arm64", target_options={"features": "+neon,+dotprod"}, **common
    )
    assert compiled.report.quantization["contractions"] == {"integer": 12, "float": 4}
    assert _instructions(compiled.vmfb, tmp_path)["sdot"] > 0
    bundle = compiled.save_bundle(tmp_path / "b")
    args = []
    for i, e in enumerate(example):
        np.save(tmp_path / f"in{i}.npy", e.numpy())
        args.append(f"--input=@{tmp_path / f'in{i}.npy'}")
    run_bundle(bundle, *args, f"--output=@{tmp_path / 'out.npy'}")
    got = np.load(tmp_path / "out.npy")
    host = xgen_mlir.compile(model, example, target_options={"offload": "none"}, **common)
    out = host(*[e.numpy() for e in example])
    want = np.asarray(out[0] if isinstance(out, tuple) else out)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6 * float(np.abs(want).max()))


@pytest.mark.parametrize(
    ("features", "batch"), [("+neon,+dotprod", 1), ("+neon,+dotprod", 3), ("+neon", 1)]
)
def test_pruned_int8_convs_in_the_sdot_kernel_under_qemu(features, batch, tmp_path) -> None:
    """The int8 pattern kernel on sdot (+dotprod): strides 1 and 2, odd sizes, a bias, groups
    of fewer than 8 and more than 8 filters, 40 filters, a batch of 3; without the dot product
    the convs go to the f32 pattern kernels instead. Both within one output step of ONNX's
    semantics of the quantized file, and almost every output equal."""
    from test_int8_pattern_kernels import _step, pruned_quantized

    need_aarch64_runtime()
    x, quantized = pruned_quantized(batch)
    compiled = xgen_mlir.compile(
        quantized,
        None,
        target="arm64",
        precision="int8",
        precision_check=False,
        target_options={"features": features},
    )
    done = compiled.report.rewrites.get("xgen-int8-pattern-kernels", {})
    if "+dotprod" in features:
        assert done == {"int8 pattern kernels": 4, "of them with their requantize": 4}, done
        assert _instructions(compiled.vmfb, tmp_path)["sdot"] > 0
        assert "4 on their int8 values in dot products" in compiled.report.precision_note
    else:
        assert not done, done
        assert compiled.report.rewrites["xgen-lower-fkw-kernels"] == {"pattern kernels": 4}
    got = run_bundle_npy(compiled.save_bundle(tmp_path / "b"), tmp_path, x.numpy())
    want = int8_reference(quantized, {quantized.graph.input[0].name: x.numpy()})
    check_close(got, want, atol=_step(quantized) * 1.001, rtol=0, what="int8 arm64 vs ONNX")
    assert np.mean(got == want) > 0.99
