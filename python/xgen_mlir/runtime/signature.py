"""A compiled function's signature, read back from the module's own ABI reflection.

IREE records ``iree.abi.declaration`` ('sync func @main(%input0: tensor<1x3xf32>) -> (...)')
in every function, so a loaded ``.vmfb`` can check inputs without any side file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..diagnostics import check_entry_name
from ..dtypes import numpy_dtype

__all__ = ["check_entry_name"]  # the runtime's callers import it from here

_TENSOR = re.compile(r"tensor<([^>]*)>")


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int | None, ...]  # None = dynamic
    dtype: np.dtype | None  # None = a type numpy cannot hold (complex, f8...)
    mlir_type: str

    def describe(self) -> str:
        dims = "x".join("?" if d is None else str(d) for d in self.shape)
        return f"{dims or 'scalar'} {self.dtype.name if self.dtype is not None else self.mlir_type}"

    def matches_shape(self, shape: tuple[int, ...]) -> bool:
        return len(shape) == len(self.shape) and all(
            d is None or d == s for d, s in zip(self.shape, shape, strict=True)
        )


@dataclass(frozen=True)
class Signature:
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]


def parse_tensor_type(text: str) -> TensorSpec:
    *dims, elem = text.split("x") if "x" in text else [text]
    shape = tuple(None if d == "?" else int(d) for d in dims)
    return TensorSpec(shape, numpy_dtype(elem), f"tensor<{text}>")


def parse_declaration(decl: str) -> Signature | None:
    """Parse IREE's ABI declaration; None if it is not in the expected form."""
    m = re.match(r".*?@[\w.$-]+\((.*)\)\s*->\s*\((.*)\)\s*$", decl.strip(), re.S)
    if not m:
        m2 = re.match(r".*?@[\w.$-]+\((.*)\)\s*$", decl.strip(), re.S)
        if not m2:
            return None
        ins, outs = m2.group(1), ""
    else:
        ins, outs = m.group(1), m.group(2)
    return Signature(
        tuple(parse_tensor_type(t) for t in _TENSOR.findall(ins)),
        tuple(parse_tensor_type(t) for t in _TENSOR.findall(outs)),
    )
