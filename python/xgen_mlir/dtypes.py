"""MLIR element types and the numpy dtypes that hold them: the one table every layer reads.

``bf16`` has no numpy type of its own; ``ml_dtypes.bfloat16`` (a dependency of IREE's runtime
and of onnx, and the type IREE's runtime itself maps ``bf16`` buffers to) holds it. Signless
and signed integers (``i32``, ``si32``) are the same numpy type; ``i1`` is ``bool``, one byte
per element as numpy and IREE store it.

``ml_dtypes`` is imported when a bf16 dtype is first asked for, not with this module: its
import takes about a second (it registers its many float types with numpy), which every
``xgen-opt`` run (each lit RUN line) paid.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

_BF16 = "bfloat16"  # ml_dtypes' dtype name: recognized without importing it


@functools.cache
def bfloat16() -> np.dtype:
    """numpy's dtype for bf16 (``ml_dtypes.bfloat16``)."""
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


_TABLE: dict[str, np.dtype] = {
    "f64": np.dtype(np.float64),
    "f32": np.dtype(np.float32),
    "f16": np.dtype(np.float16),
    "i1": np.dtype(np.bool_),
}
for _bits, _signed, _unsigned in (
    (64, np.int64, np.uint64),
    (32, np.int32, np.uint32),
    (16, np.int16, np.uint16),
    (8, np.int8, np.uint8),
):
    _TABLE[f"i{_bits}"] = _TABLE[f"si{_bits}"] = np.dtype(_signed)
    _TABLE[f"ui{_bits}"] = np.dtype(_unsigned)

# numpy dtype -> the MLIR element type a frontend gives it (signless integers, as torch-mlir's
# and IREE's ABI declarations write them)
_MLIR: dict[np.dtype, str] = {}
for _name, _dt in _TABLE.items():
    if not _name.startswith("si"):
        _MLIR.setdefault(_dt, _name)

ELEMENT_TYPES = (*_TABLE, "bf16")


def numpy_dtype(elem: Any) -> np.dtype | None:
    """The numpy dtype of an MLIR element type (``"f16"``, ``"bf16"``, or an ``ir.Type``),
    or None for a type numpy cannot hold (``index``, ``complex<f32>``, ``f8E4M3FN``...)."""
    name = str(elem)
    return bfloat16() if name == "bf16" else _TABLE.get(name)


def element_type(dtype: Any) -> str | None:
    """The MLIR element type of a numpy dtype (``bfloat16`` -> ``"bf16"``), or None."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return None
    return "bf16" if dt.name == _BF16 else _MLIR.get(dt)


def element_bytes(elem: Any) -> int | None:
    """Bytes per element of an MLIR element type, or None where numpy has no type for it."""
    dt = numpy_dtype(elem)
    return None if dt is None else dt.itemsize


def is_numeric(dtype: np.dtype) -> bool:
    """Whether arrays of ``dtype`` hold numbers a module takes: numpy's own number kinds and
    the table's (``bfloat16``, whose numpy kind is 'V')."""
    return dtype.kind in "biufc" or dtype in _MLIR or dtype.name == _BF16


def is_float(dtype: np.dtype) -> bool:
    """Whether ``dtype`` is a floating-point type, bfloat16 included (numpy's kind is 'V')."""
    return dtype.kind == "f" or dtype.name == _BF16


def from_torch(tensor: Any) -> np.ndarray:
    """A torch tensor's values as a numpy array of the same dtype, bfloat16 included
    (``Tensor.numpy()`` refuses bf16: its bits go across as int16, no float32 round trip)."""
    import torch

    t = tensor.detach().cpu()
    if t.dtype == torch.bfloat16:
        return t.contiguous().view(torch.int16).numpy().view(bfloat16())
    return t.numpy()


def to_torch(array: np.ndarray) -> Any:
    """A numpy array as a torch tensor of the same dtype (bfloat16 too), sharing its memory."""
    import torch

    if array.dtype.name == _BF16:
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)
