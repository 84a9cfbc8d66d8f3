"""Weights read back from the IR are the bytes that went in, by either route.

``ConstantReader`` reads a ``dense_resource`` constant from the bytecode of a clone of the
constant alone (its blob is stored raw there) and falls back to the printed hex where the
bytecode does not have the layout it checks for; both must give the array back exactly.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from xgen_mlir import irutil
from xgen_mlir._mlir import ir
from xgen_mlir.frontend.mlir_import import new_torch_context
from xgen_mlir.irutil import ConstantReader, constant_op

CASES = [
    ((768, 3072), np.float32),
    ((129,), np.int8),
    ((64, 3), np.int64),
    ((1000,), np.float16),
    ((17, 5, 3), np.int32),
]


def _constant(array: np.ndarray, name: str = "w"):
    ctx = new_torch_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            op = constant_op(array, name)
    return ctx, module, op


def _bytecode(op) -> bytes:
    scratch = ir.Module.create(ir.Location.unknown(op.context))
    with ir.InsertionPoint(scratch.body):
        op.operation.clone()
    out = io.BytesIO()
    scratch.operation.write_bytecode(out)
    return out.getvalue()


@pytest.mark.parametrize("shape,dtype", CASES, ids=[f"{d.__name__}{s}" for s, d in CASES])
def test_resource_constants_read_back_exactly(shape, dtype):
    rng = np.random.default_rng(0)
    array = (rng.standard_normal(shape) * 100).astype(dtype)
    ctx, module, op = _constant(array, "weights.of-a_layer")
    with ctx:
        assert "dense_resource" in str(op.attributes["value"])
        got = ConstantReader(module.operation).value_of(op.result)
        assert got.dtype == array.dtype and got.shape == array.shape
        assert np.array_equal(got.view(np.uint8), array.view(np.uint8))  # bit for bit
        # the bytecode route found it (no fallback) ...
        raw = irutil._bytecode_blob(_bytecode(op), array.nbytes)
        assert raw == array.tobytes()
        # ... and the printed route gives the same bytes
        name = irutil._RESOURCE_NAME.search(str(op.attributes["value"])).group(1)
        assert irutil._hex_blob(str(module), name) == array.tobytes()


def test_unexpected_bytecode_is_refused_and_the_printed_form_serves(monkeypatch):
    array = np.arange(4096, dtype=np.float32)
    ctx, module, op = _constant(array)
    with ctx:
        good = _bytecode(op)
        assert irutil._bytecode_blob(good, array.nbytes) == array.tobytes()
        # a size that is not the blob's, a cut file, a foreign header: refused, not misread
        assert irutil._bytecode_blob(good, array.nbytes - 4) is None
        assert irutil._bytecode_blob(good[:-10], array.nbytes) is None
        assert irutil._bytecode_blob(b"XXXX" + good[4:], array.nbytes) is None
        assert irutil._bytecode_blob(b"", array.nbytes) is None
        # with the bytecode route refusing everything, the reader still reads it (printed)
        monkeypatch.setattr(irutil, "_bytecode_blob", lambda b, n: None)
        got = ConstantReader(module.operation).value_of(op.result)
        assert np.array_equal(got, array)
