"""The ``stream.executable`` text that links a generated C object into an IREE dispatch.

Every generated kernel is called the same way: its operands and its one result are flat
buffers (``memref<Nxf32>``, or of the element type the kernel names), passed to C as base,
aligned pointer, offset, size, stride, then the workgroup ids it uses. The workgroup count is
fixed at compile time. The text is parsed later, in IREE's own MLIR context
(``backend/extern_kernels.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

# The attribute of a kernel's func.func declaration that carries its executable's text.
EXECUTABLE_ATTR = "xgen.executable"


def _bindings(
    operand_lengths: Sequence[int], result_length: int, elements: Sequence[str] | None = None
) -> tuple[list[int], list[str], str, str]:
    """The flat buffers of a kernel's operands and result (f32 unless ``elements`` names each
    one's element type, the result's last): their lengths, memref types, the export's
    ``!stream.binding`` arguments and the subspans that view them as ``%m<i>``."""
    lengths = [*operand_lengths, result_length]
    elements = elements or ["f32"] * len(lengths)
    types = [f"memref<{n}x{e}>" for n, e in zip(lengths, elements, strict=True)]
    bindings = ", ".join(f"%b{i}: !stream.binding" for i in range(len(lengths)))
    subspans = "\n".join(
        f"      %m{i} = stream.binding.subspan %b{i}[%c0] : !stream.binding -> {t}"
        for i, t in enumerate(types)
    )
    return lengths, types, bindings, subspans


def executable_text(
    symbol: str,
    obj_path: str,
    object_format: str,
    operand_lengths: Sequence[int],
    result_length: int,
    grid: tuple[int, int, int],
    ids: int,
    elements: Sequence[str] | None = None,
) -> str:
    """``stream.executable @<symbol>_ex`` exporting ``@<symbol>``, which calls the object's
    ``<symbol>_impl(operands..., result, workgroup id 0..ids-1)`` on a ``grid`` of
    workgroups. ``elements``: the buffers' element types (operands, then the result), f32 by
    default."""
    lengths, types, bindings, subspans = _bindings(operand_lengths, result_length, elements)
    id_ops = "\n".join(
        f"      %g{i} = stream.dispatch.workgroup.id[{i}] : index" for i in range(ids)
    )
    args = ", ".join([f"%m{i}" for i in range(len(lengths))] + [f"%g{i}" for i in range(ids)])
    sig = ", ".join(types + ["index"] * ids)
    gx, gy, gz = grid
    return f"""
stream.executable private @{symbol}_ex attributes {{
  hal.executable.objects = #hal.executable.objects<{{
    #hal.executable.target<"llvm-cpu", "{object_format}", {{}}> = [#hal.executable.object<{{path = "{obj_path}"}}>]
  }}>
}} {{
  stream.executable.export public @{symbol} workgroups() -> (index, index, index) {{
    %gx = arith.constant {gx} : index
    %gy = arith.constant {gy} : index
    %gz = arith.constant {gz} : index
    stream.return %gx, %gy, %gz : index, index, index
  }}
  builtin.module {{
    func.func private @{symbol}_impl({sig}) attributes {{hal.import.static}}
    func.func @{symbol}({bindings}) {{
      %c0 = arith.constant 0 : index
{id_ops}
{subspans}
      func.call @{symbol}_impl({args}) : ({sig}) -> ()
      return
    }}
  }}
}}
"""


def import_executable_text(
    symbol: str,
    import_name: str,
    operand_lengths: Sequence[int],
    result_length: int,
    elements: Sequence[str] | None = None,
    parts: int = 1,
) -> str:
    """``stream.executable @<symbol>_ex`` exporting ``@<symbol>``, ``parts`` workgroups that
    each call ``import_name`` (resolved when the module loads, by an executable plugin:
    ``byoc/``) with the operands' and then the result's data pointers (``llvm.bareptr``: a
    static memref is passed as its aligned pointer, which includes the binding's offset;
    IREE packs the arguments in a struct, in this order) and last the workgroup's id: the
    library runs part id of the operation on the calling worker.
    ``elements``: the buffers' element types (operands, then the result), f32 by default."""
    lengths, types, bindings, subspans = _bindings(operand_lengths, result_length, elements)
    args = ", ".join([f"%m{i}" for i in range(len(lengths))] + ["%id"])
    sig = ", ".join([*types, "index"])
    return f"""
stream.executable private @{symbol}_ex {{
  stream.executable.export public @{symbol} workgroups() -> (index, index, index) {{
    %c1 = arith.constant 1 : index
    %parts = arith.constant {parts} : index
    stream.return %parts, %c1, %c1 : index, index, index
  }}
  builtin.module {{
    func.func private @{import_name}({sig}) attributes {{llvm.bareptr = true}}
    func.func @{symbol}({bindings}) {{
      %c0 = arith.constant 0 : index
      %id = stream.dispatch.workgroup.id[0] : index
{subspans}
      func.call @{import_name}({args}) : ({sig}) -> ()
      return
    }}
  }}
}}
"""
