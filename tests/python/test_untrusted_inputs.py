"""Untrusted model files and options: each is refused with one clear XGenError, never by
running the file's code, crashing the interpreter or a raw traceback (issue 33)."""

from __future__ import annotations

import io
import json
import os
import pickle
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

import xgen_mlir
from xgen_mlir import errors
from xgen_mlir.diagnostics import check_entry_name
from xgen_mlir.frontend.mlir_import import MAX_NESTING, check_nesting, import_mlir_file
from xgen_mlir.frontend.torch_import import is_plain_sympy, load_pt2

BIN = Path(sys.executable).parent


def run(*cmd: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(cmd), capture_output=True, input=stdin)
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode()
    )


# --- .pt2: no code from the file runs ----------------------------------------------------


class Payload:
    """Unpickling this runs a shell command that writes ``marker``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class Tiny(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return torch.relu(self.fc(x)) + torch.tensor([1.0, 2.0, 3.0])  # a lifted constant


@pytest.fixture(scope="module")
def honest_pt2(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("pt2") / "tiny.pt2"
    torch.export.save(torch.export.export(Tiny(), (torch.randn(2, 4),)), str(path))
    return path


def doctored(src: Path, dst: Path, edit) -> Path:
    """A copy of the archive ``src`` with ``edit(name, content) -> content`` applied."""
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dst, "w") as out:
        for info in z.infolist():
            out.writestr(info, edit(info.filename, z.read(info.filename)))
    return dst


def evil_pickle(marker: Path, protocol: int | None = None) -> bytes:
    if protocol is not None:  # a bare pickle (what torch hands to pickle.loads)
        return pickle.dumps(Payload(marker), protocol=protocol)
    buf = io.BytesIO()
    torch.save(Payload(marker), buf)  # a torch.save archive, like the members it replaces
    return buf.getvalue()


def test_honest_pt2_compiles(honest_pt2):
    x = torch.randn(2, 4)
    module = xgen_mlir.compile(honest_pt2)
    torch.testing.assert_close(module(x), load_pt2(honest_pt2).module()(x), atol=1e-5, rtol=1e-5)
    assert load_pt2(honest_pt2, trust_pickle=True) is not None


def _use_pickle(content: bytes, path_name: str) -> bytes:
    doc = json.loads(content)
    for entry in doc["config"].values():
        entry["use_pickle"] = entry["use_pickle"] or entry["path_name"] == path_name
    return json.dumps(doc).encode()


@pytest.mark.parametrize(
    "what", ["sample inputs", "sample inputs, protocol 0", "constant", "weight"]
)
def test_pickled_member_is_refused_and_not_run(honest_pt2, tmp_path, what):
    marker = tmp_path / "PWNED"
    payload = evil_pickle(marker, 0 if "protocol 0" in what else None)

    def edit(name: str, content: bytes) -> bytes:
        if what.startswith("sample inputs") and "/sample_inputs/" in name:
            return payload
        if what == "constant" and name.endswith("/constants/tensor_0"):
            return payload
        if what == "weight" and name.endswith("/weights/weight_0"):
            return payload
        if what == "constant" and name.endswith("model_constants_config.json"):
            return _use_pickle(content, "tensor_0")  # so that torch unpickles the payload
        if what == "weight" and name.endswith("model_weights_config.json"):
            return _use_pickle(content, "weight_0")
        return content

    bad = doctored(honest_pt2, tmp_path / "bad.pt2", edit)
    with pytest.raises(errors.FrontendError) as info:
        xgen_mlir.compile(bad)
    msg = str(info.value)
    assert "bad.pt2: refusing to load" in msg and "trust_pickle=True" in msg
    assert "posix.system" in msg  # what the safe loader refused
    proc = run(str(BIN / "xgen-compile"), str(bad), "-o", str(tmp_path / "out.vmfb"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "--trust-pickle" in proc.stderr
    assert not marker.exists()


def test_shape_expression_that_runs_code_is_refused(tmp_path):
    """torch.export.load hands shape expressions to sympy.sympify, which evaluates Python."""
    marker = tmp_path / "PWNED"
    batch = torch.export.Dim("batch", max=64)
    prog = torch.export.export(Tiny(), (torch.randn(2, 4),), dynamic_shapes=({0: batch},))
    src = tmp_path / "dyn.pt2"
    torch.export.save(prog, str(src))
    load_pt2(src)  # the honest dynamic-shape program loads: its expressions are plain sympy

    def edit(name: str, content: bytes) -> bytes:
        if not name.endswith("models/model.json"):
            return content
        doc = json.loads(content)
        stack = [doc]
        while stack:  # poison every expression
            node = stack.pop()
            if isinstance(node, dict):
                if isinstance(node.get("expr_str"), str):
                    node["expr_str"] = f"__import__('os').system('touch {marker}') + 1"
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)
        return json.dumps(doc).encode()

    bad = doctored(src, tmp_path / "bad.pt2", edit)
    with pytest.raises(errors.FrontendError, match="not plain sympy .*trust_pickle=True"):
        load_pt2(bad)
    assert not marker.exists()


def test_plain_sympy():
    assert is_plain_sympy("Symbol('s77', positive=True, integer=True)")
    assert is_plain_sympy("FloorDiv(s0, 2) + Max(1, 2*s1) <= 64")
    for text in [
        "__import__('os').system('x')",
        "exec('x')",
        "Max('__import__(1)')",  # sympy sympifies string arguments
        "s0.__class__",
        "lambdify(s0, s0)",
        "Symbol('a', b=print)",
        "(lambda: 1)()",
    ]:
        assert not is_plain_sympy(text), text


def test_aotinductor_member_is_refused(honest_pt2, tmp_path):
    """AOTInductor members are shared libraries torch.export.load would load."""

    def add(name: str, content: bytes) -> bytes:
        return content

    bad = doctored(honest_pt2, tmp_path / "aoti.pt2", add)
    with zipfile.ZipFile(bad, "a") as z:
        root = z.namelist()[0].split("/", 1)[0]
        z.writestr(f"{root}/data/aotinductor/model/model.so", b"\x7fELF")
    with pytest.raises(errors.FrontendError, match="AOTInductor code .*trust_pickle=True"):
        load_pt2(bad)


@pytest.mark.parametrize("content", [b"", b"\x00" * 64, b"PK\x03\x04truncated"])
def test_not_a_pt2_archive(tmp_path, content):
    path = tmp_path / "junk.pt2"
    path.write_bytes(content)
    with pytest.raises(errors.FrontendError, match="junk.pt2: not a torch.export .pt2 archive"):
        xgen_mlir.compile(path)


# --- MLIR files: the parser never crashes this process ----------------------------------

TRANSPOSE = """func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %0 = linalg.transpose ins(%a : tensor<2x3xf32>) outs(%b : tensor<3x2xf32>) permutation = [1, 0
  return %0 : tensor<3x2xf32>
}
"""
BROADCAST = """func.func @f(%a: tensor<3xf32>, %b: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = linalg.broadcast ins(%a : tensor<3xf32>) outs(%b : tensor<3x4xf32>) dimensions = [1
  return %0 : tensor<3x4xf32>
}
"""
GOOD = "func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n  return %x : tensor<2xf32>\n}\n"


def deep_regions(n: int) -> str:
    return (
        "func.func @f() {\n"
        + "scf.execute_region {\n" * n
        + "scf.yield\n"
        + "}\nscf.yield\n" * (n - 1)
        + "}\nreturn\n}\n"
    )


def deep_attribute(n: int) -> str:
    return "module attributes {x.a = " + "[" * n + "]" * n + "} {}\n"


@pytest.mark.parametrize("text", [TRANSPOSE, BROADCAST], ids=["transpose", "broadcast"])
def test_parser_crash_is_an_error_not_a_crash(tmp_path, text):
    bad = tmp_path / "bad.mlir"
    bad.write_text(text)
    with pytest.raises(errors.MLIRParseError, match=r"bad.mlir: error: MLIR's parser crashed"):
        xgen_mlir.compile(bad)  # still here: the crash happened in a child process
    proc = run(str(BIN / "xgen-opt"), str(bad))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "bad.mlir: error: MLIR's parser crashed on this input (SIGSEGV" in proc.stderr
    assert proc.stdout == ""
    proc = run(str(BIN / "xgen-opt"), "-", stdin=text.encode())
    assert proc.returncode == 1 and "<stdin>: error: MLIR's parser crashed" in proc.stderr


_FORKED_CHECK = """
import sys
from xgen_mlir.frontend import mlir_import
done = mlir_import._forked_check(["torch", "0", sys.argv[1]], 60.0)
said = None if done is None else done.stdout.decode().split()[-1:]
print("spawned" if done is None else f"forked {done.returncode} {said}")
"""


@pytest.mark.parametrize("text", [GOOD, TRANSPOSE], ids=["good", "crashing"])
def test_a_single_threaded_process_forks_for_the_parse_check(tmp_path, text):
    """Where the caller is one thread (numpy's BLAS server off), the check runs in a fork of
    it: the parse survives ("done") or its crash comes back as the signal; with another thread
    running, it does not fork (a fresh interpreter checks instead: the tests above)."""
    f = tmp_path / "in.mlir"
    f.write_text(text)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, "-c", _FORKED_CHECK, str(f)], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    want = "forked 0 ['done']" if text == GOOD else f"forked -{int(signal.SIGSEGV)} ['0']"
    assert proc.stdout.strip().splitlines()[-1] == want, proc.stdout
    if text == TRANSPOSE:
        crashed = subprocess.run(  # xgen-opt says the same as when it spawns the check
            [str(BIN / "xgen-opt"), str(f)], capture_output=True, text=True, env=env
        )
        assert crashed.returncode == 1 and "Traceback" not in crashed.stderr
        assert "in.mlir: error: MLIR's parser crashed on this input (SIGSEGV" in crashed.stderr
    env["OPENBLAS_NUM_THREADS"] = "2"
    proc = subprocess.run(
        [sys.executable, "-c", _FORKED_CHECK, str(f)], capture_output=True, text=True, env=env
    )
    assert proc.stdout.strip().splitlines()[-1] == "spawned", proc.stdout


def test_xgen_opt_split_input_keeps_the_chunks_that_parse(tmp_path):
    f = tmp_path / "split.mlir"
    f.write_text(GOOD + "// -----\n" + TRANSPOSE + "// -----\n" + GOOD.replace("@f", "@g"))
    proc = run(str(BIN / "xgen-opt"), "--split-input-file", str(f))
    assert proc.returncode == 1
    assert f"{f}:4: error: MLIR's parser crashed" in proc.stderr
    assert "func.func @f(" in proc.stdout and "func.func @g(" in proc.stdout


@pytest.mark.parametrize(
    ("text", "where"),
    [(deep_regions(5000), ":257:20:"), (deep_attribute(100_000), ":1:281:")],
    ids=["regions", "array-attribute"],
)
def test_deep_nesting_is_refused_with_its_place(tmp_path, text, where):
    bad = tmp_path / "deep.mlir"
    bad.write_text(text)
    expected = f"deep.mlir{where} error: nested more than {MAX_NESTING} levels deep"
    with pytest.raises(errors.MLIRParseError, match=expected):
        xgen_mlir.compile(bad)
    proc = run(str(BIN / "xgen-opt"), str(bad))
    assert proc.returncode == 1 and expected in proc.stderr and "Traceback" not in proc.stderr


def test_nesting_within_the_limit_parses(tmp_path):
    ok = tmp_path / "ok.mlir"
    ok.write_text(deep_attribute(100) + '// {{{{ "[[[[" -> >= <=\n')
    assert import_mlir_file(ok) is not None
    check_nesting('"' + "[" * 1000 + '"  // ' + "{" * 1000, "strings-and-comments.mlir")


def test_real_model_ir_is_far_below_the_nesting_limit():
    from xgen_mlir.models import vision

    module = xgen_mlir.frontend.import_model(vision.small_cnn(), (torch.randn(1, 3, 32, 32),))
    check_nesting(str(module), "small_cnn.mlir", limit=16)


def test_corrupt_bytecode_is_a_parse_error(tmp_path):
    module = xgen_mlir.frontend.mlir_import.parse_mlir(GOOD)
    buf = io.BytesIO()
    module.operation.write_bytecode(buf)
    bad = tmp_path / "bad.mlirbc"
    bad.write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])
    with pytest.raises(errors.MLIRParseError, match="bad.mlirbc"):
        xgen_mlir.compile(bad)


def test_non_utf8_mlir_file(tmp_path):
    junk = tmp_path / "junk.mlir"
    junk.write_bytes(b"func.func @f() {\n\xff\xfe\x00 return }")
    with pytest.raises(
        errors.MLIRParseError,
        match=r"junk.mlir: not MLIR \(neither bytecode nor UTF-8 text: byte 17 is 0xff\)",
    ):
        xgen_mlir.compile(junk)


# --- xgen-compile outputs ----------------------------------------------------------------


def test_xgen_compile_output_is_a_directory(tmp_path):
    src = tmp_path / "m.mlir"
    src.write_text(GOOD)
    proc = run(str(BIN / "xgen-compile"), str(src), "-o", str(tmp_path))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"-o {tmp_path}: is a directory" in proc.stderr


def test_xgen_compile_bundle_is_an_existing_file(tmp_path):
    src = tmp_path / "m.mlir"
    src.write_text(GOOD)
    taken = tmp_path / "taken"
    taken.write_text("x")
    proc = run(
        str(BIN / "xgen-compile"), str(src), "-o", str(tmp_path / "m.vmfb"), "--bundle", str(taken)
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"--bundle {taken}: exists and is not a directory" in proc.stderr


# --- entry names -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "a b", "x;rm -rf", "../up", "9lives", 'q"uote', "a" * 300])
def test_bad_entry_names_are_refused_before_compiling(tmp_path, name):
    src = tmp_path / "m.mlir"
    src.write_text(GOOD)
    with pytest.raises(errors.XGenError, match="invalid entry name"):
        xgen_mlir.compile(src, entry=name)


def test_good_entry_names():
    for name in ["main", "_f", "forward.v2", "run$1", "serve-default"]:
        assert check_entry_name(name) == name


def test_set_entry_point_refuses_an_empty_name(tmp_path, capsys):
    from xgen_mlir.tools import xgen_opt

    src = tmp_path / "m.mlir"
    src.write_text(GOOD)
    assert xgen_opt.main([str(src), "-p", "xgen-set-entry-point{name=}"]) == 1
    out = capsys.readouterr()
    assert "invalid entry name ''" in out.err and "func.func" not in out.out
    assert xgen_opt.main([str(src), "-p", "xgen-set-entry-point{name=serve}"]) == 0
    assert "func.func @serve(" in capsys.readouterr().out


# --- Winograd on a huge conv -------------------------------------------------------------

HUGE_CONV = """func.func @f(%x: tensor<1x64x64x8192xf32>) -> tensor<1x62x62x8192xf32> {
  %w = arith.constant dense<1.0> : tensor<3x3x8192x8192xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x62x62x8192xf32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x62x62x8192xf32>) -> tensor<1x62x62x8192xf32>
  %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>,
                                 strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<1x64x64x8192xf32>, tensor<3x3x8192x8192xf32>)
       outs(%i : tensor<1x62x62x8192xf32>) -> tensor<1x62x62x8192xf32>
  return %y : tensor<1x62x62x8192xf32>
}
"""


def test_winograd_skips_a_conv_too_big_to_transform():
    from xgen_mlir.frontend.mlir_import import parse_mlir
    from xgen_mlir.passes.winograd_convs import WinogradOptions, winograd_convs

    module = parse_mlir(HUGE_CONV)
    counts = winograd_convs(module.operation, WinogradOptions())  # 9 GB of transformed filter
    assert counts == {"linalg.conv_2d_nhwc_hwcf skipped: transformed filter > 1024 MB": 1}
    assert "linalg.conv_2d_nhwc_hwcf" in str(module)


# --- ONNX: malformed files are FrontendErrors naming the file ------------------------------


def _relu_model():
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("kind", ["truncated", "random", "empty", "external-data-outside"])
def test_malformed_onnx_files(tmp_path, kind):
    import numpy as np
    import onnx
    from onnx import TensorProto, numpy_helper

    from xgen_mlir.frontend.onnx_import import import_onnx

    path = tmp_path / "bad.onnx"
    good = _relu_model().SerializeToString()
    if kind == "truncated":
        path.write_bytes(good[: len(good) // 2])
    elif kind == "random":
        path.write_bytes(np.random.default_rng(0).bytes(4096))
    elif kind == "empty":
        path.write_bytes(b"")
    else:  # an initializer whose data would be read from a file outside the model's folder
        model = _relu_model()
        w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
        w.data_location = TensorProto.EXTERNAL
        w.ClearField("raw_data")
        entry = w.external_data.add()
        entry.key, entry.value = "location", "../../../../etc/passwd"
        model.graph.initializer.append(w)
        onnx.save(model, str(path))
    with pytest.raises(errors.FrontendError, match=r"bad.onnx: "):
        import_onnx(path)
