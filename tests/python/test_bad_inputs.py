"""Every kind of bad input gets one clear XGenError naming the problem and where."""

from __future__ import annotations

import pytest
import torch

import xgen_mlir
from xgen_mlir import errors
from xgen_mlir.models import vision


@pytest.fixture(scope="module")
def cnn():
    model = vision.small_cnn()
    x = torch.randn(1, 3, 32, 32)
    return model, x, xgen_mlir.compile(model, (x,))


def test_wrong_input_count(cnn):
    _, x, module = cnn
    with pytest.raises(errors.InputMismatchError, match=r"'main' takes 1 input\(s\) .*got 2"):
        module(x, x)


def test_wrong_input_shape(cnn):
    _, _, module = cnn
    with pytest.raises(
        errors.InputMismatchError, match="input 0 .*expected shape 1x3x32x32 .*got 1x3x31x32"
    ):
        module(torch.randn(1, 3, 31, 32))


def test_wrong_input_dtype(cnn):
    _, x, module = cnn
    with pytest.raises(errors.InputMismatchError, match="expected dtype float32, got .*float64"):
        module(x.double())


def test_wrong_input_kind(cnn):
    _, _, module = cnn
    with pytest.raises(
        errors.InputMismatchError, match="expected a numpy array or torch tensor, got list"
    ):
        module([[1.0]])


class Unsupported(torch.nn.Module):
    """Two kinds of ops torch-mlir cannot lower to linalg, one of them twice."""

    def forward(self, x):
        a = torch.erfinv(x) + torch.erfinv(x * 0.5)
        return a + torch.fft.fft(x).real


def test_unsupported_ops_are_all_listed_with_counts():
    with pytest.raises(errors.UnsupportedOpsError) as info:
        xgen_mlir.compile(Unsupported(), (torch.rand(4, 4),))
    err = info.value
    assert err.counts() == {"torch.aten.erfinv": 2, "torch.aten.fft_fft": 1}
    text = str(err)
    assert "3 unsupported op occurrence(s) of 2 kind(s)" in text
    assert "test_bad_inputs.py:" in text  # the source line of the model's forward


def test_untraceable_model_names_the_model():
    class DataDependent(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:  # data-dependent Python control flow cannot be exported
                return x
            return -x

    with pytest.raises(errors.FrontendError, match="torch.export could not trace DataDependent"):
        xgen_mlir.compile(DataDependent(), (torch.rand(3),))


def test_missing_example_inputs():
    with pytest.raises(errors.FrontendError, match="needs example_inputs"):
        xgen_mlir.compile(vision.mlp())


def test_malformed_mlir_file(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text(
        "func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n  retur %x : tensor<2xf32>\n}\n"
    )
    with pytest.raises(
        errors.MLIRParseError, match=r"bad.mlir:2:3: error: custom op 'retur' is unknown"
    ):
        xgen_mlir.compile(bad)


def test_unknown_file_type(tmp_path):
    f = tmp_path / "model.h5"
    f.write_text("x")
    with pytest.raises(errors.FrontendError, match="unknown model file type '.h5'"):
        xgen_mlir.compile(f)


def test_unknown_object():
    with pytest.raises(errors.FrontendError, match="cannot compile an object of type int"):
        xgen_mlir.compile(42)


def test_missing_vmfb(tmp_path):
    with pytest.raises(errors.ModuleLoadError, match="no such file"):
        xgen_mlir.load(tmp_path / "nothere.vmfb")


def test_truncated_vmfb(cnn, tmp_path):
    _, _, module = cnn
    data = module.vmfb
    path = tmp_path / "cut.vmfb"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(errors.ModuleLoadError, match="cut.vmfb: not a valid IREE module"):
        xgen_mlir.load(path)


def test_corrupt_vmfb(tmp_path):
    path = tmp_path / "junk.vmfb"
    path.write_bytes(b"this is not a flatbuffer" * 100)
    with pytest.raises(errors.ModuleLoadError, match="junk.vmfb: not a valid IREE module"):
        xgen_mlir.load(path)


def test_tiny_vmfb(tmp_path):
    path = tmp_path / "tiny.vmfb"
    path.write_bytes(b"PK")
    with pytest.raises(errors.ModuleLoadError, match="too small"):
        xgen_mlir.load(path)


def test_unknown_target():
    with pytest.raises(errors.UnknownNameError, match="known targets: arm64, cpu, "):
        xgen_mlir.compile(vision.mlp(), (torch.randn(1, 64),), target="tpu")


def test_unknown_device(cnn):
    with pytest.raises(errors.UnknownNameError, match="unknown device 'gpu0'; known devices: cuda"):
        from xgen_mlir.runtime import CompiledModule

        CompiledModule(cnn[2].vmfb, device="gpu0")


def test_unknown_compile_option():
    with pytest.raises(errors.XGenError, match=r"unknown compile option\(s\) \['optimise'\]"):
        xgen_mlir.compile(vision.mlp(), (torch.randn(1, 64),), optimise=True)


def test_none_means_the_default_for_every_option():
    """A caller forwarding its own optional arguments passes None for the dict and list
    options too; that is their default, not a crash inside compile()."""
    from xgen_mlir.compiler import CompileOptions

    opts = CompileOptions.from_kwargs(
        {"target_options": None, "extra_iree_flags": None, "precision": None}
    )
    assert opts.target_options == {} and opts.extra_iree_flags == []
    assert opts.precision is None


def test_unknown_pass_and_pipeline():
    from xgen_mlir.passes import get_pass
    from xgen_mlir.pipelines import load_pipeline

    with pytest.raises(errors.UnknownNameError, match="known passes: .*xgen-fold-transpose-pairs"):
        get_pass("xgen-fold-everything")
    with pytest.raises(errors.UnknownNameError, match="known pipelines: .*cpu.*vulkan"):
        load_pipeline("quantum")


def test_xgen_opt_names_input_that_is_not_mlir(tmp_path, capsys, monkeypatch):
    """Binary garbage (a file or stdin) is a clear error naming the file and the byte; MLIR
    bytecode is recognised by its magic number whatever the file is called."""
    import io
    import subprocess
    import sys

    from xgen_mlir.tools import xgen_opt

    junk = tmp_path / "junk.mlir"
    junk.write_bytes(b"func.func @f() {\n\xff\xfe\x00 return }")
    assert xgen_opt.main([str(junk)]) == 1
    err = capsys.readouterr().err
    assert "junk.mlir: not MLIR (neither bytecode nor UTF-8 text: byte 17 is 0xff)" in err
    assert "Traceback" not in err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\x80\x81garbage")))
    assert xgen_opt.main(["-"]) == 1
    assert "<stdin>: not MLIR" in capsys.readouterr().err
    text = tmp_path / "ok.mlir"
    text.write_text(
        "func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n  return %x : tensor<2xf32>\n}\n"
    )
    bytecode = tmp_path / "named-like-text.mlir"
    assert xgen_opt.main([str(text), "--emit-bytecode", "-o", str(bytecode)]) == 0
    out = subprocess.run(
        [sys.executable, "-m", "xgen_mlir.tools.xgen_opt", str(bytecode)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0 and "func.func @f" in out.stdout, out.stderr


def test_save_refuses_a_directory_and_writes_atomically(cnn, tmp_path, monkeypatch):
    import copy
    import os

    _, _, module = cnn
    with pytest.raises(errors.XGenError, match="is a directory; give a file name"):
        module.save(tmp_path)
    path = module.save(tmp_path / "m.vmfb")
    assert path.read_bytes() == module.vmfb

    def crash(*_args):  # the process dies between writing and renaming
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", crash)
    other = copy.copy(module)  # another module saved over the first one
    other.vmfb = b"\x00" * 16
    with pytest.raises(KeyboardInterrupt):
        other.save(path)
    assert path.read_bytes() == module.vmfb, "the old module must survive an interrupted save"
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["m.vmfb", "m.vmfb.sha256"], "no temporary file left behind"
