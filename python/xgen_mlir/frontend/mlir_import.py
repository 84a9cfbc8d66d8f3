"""``.mlir`` / ``.mlirbc`` input: parse with file:line:col errors, lower torch IR if present.

Files (and xgen-opt's stdin) are untrusted: MLIR's parser recurses once per nesting level and
crashes the process (SIGSEGV) on some malformed ops, so before a file is parsed here it is
(1) refused if it nests brackets, braces, parentheses or angle brackets deeper than
``MAX_NESTING`` levels (a cheap scan that names file:line:col), then (2) parsed once in a
child process (``parse_check``) that only reports whether the parser survived: a crash there
is an MLIRParseError naming the file and the signal, and this process never parses that
input. Text our own code produced (passes, snapshots) is parsed in-process directly.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from .._mlir import binding_of, ir, passmanager
from ..diagnostics import captured_diagnostics
from ..errors import FrontendError, MLIRParseError
from .lowering import TORCH_TO_LINALG, lower_torch_to_linalg


def new_torch_context() -> ir.Context:
    """A torch-mlir context that parses every dialect our IR can hold: upstream MLIR's (the
    bindings' site initializer), ``torch``, what torch-mlir's lowering emits (``torch_c``,
    ``tm_tensor``, e.g. a cumsum's ``tm_tensor.scan``) and ours (``xgen_sparse``)."""
    from .._mlir import register_torch_dialect
    from ..dialects import load_xgen_dialects

    ctx = ir.Context()
    register_torch_dialect(ctx)
    _register_lowering_dialects(ctx)
    load_xgen_dialects(ctx)
    return ctx


def _register_lowering_dialects(ctx: ir.Context) -> None:
    """Register the dialects torch-mlir's lowering passes emit. Its Python bindings register
    only ``torch`` (``torch_mlir.dialects.torch.register_dialect``); ``torch_c`` and
    ``tm_tensor`` are registered in a context when a pass that produces them runs there (MLIR
    appends each pass's dependent dialects to the context's registry). So the lowering
    pipeline is run once on an empty module (a few ms)."""
    with ctx, ir.Location.unknown():
        empty = ir.Module.create()
        passmanager.PassManager.parse(TORCH_TO_LINALG).run(empty.operation)


def parse_mlir(
    text: str | bytes, source: str = "<string>", ctx: ir.Context | None = None
) -> ir.Module:
    """Parse MLIR text or bytecode; a malformed input raises MLIRParseError naming the place.
    ``ctx``: torch-mlir's by default; an IREE context parses IREE's IR (dispatch passes)."""
    ctx = ctx or new_torch_context()
    binding = binding_of(ctx)
    with captured_diagnostics(ctx) as diags:
        try:
            module = binding.ir.Module.parse(text, ctx)
        except binding.ir.MLIRError as e:
            msgs = [
                _relocate(str(d.location), source) + ": error: " + d.message
                for d in e.error_diagnostics
            ]
            raise MLIRParseError("\n".join(msgs or diags or [str(e)])) from None
    from ..dialects.sparse import has_sparse_ops, verify_sparse_ops

    if binding.name == "torch-mlir" and has_sparse_ops(
        module.operation
    ):  # the dialect's semantic rules, like a verifier
        verify_sparse_ops(module.operation)
    return module


def _relocate(loc: str, source: str) -> str:
    """'loc("-":3:7)' -> 'source:3:7'."""
    m = re.match(r'loc\("(.*)":(\d+):(\d+)\)', loc)
    if not m:
        return source
    return f"{source}:{m.group(2)}:{m.group(3)}"


def relabel_source(text: str, source: str) -> str:
    """Name the file in locations the parser recorded as '-' (it is given no file name)."""
    return re.sub(
        r"(?<![\w/.])-:(\d+):(\d+)", lambda m: f"{source}:{m.group(1)}:{m.group(2)}", text
    )


BYTECODE_MAGIC = b"ML\xefR"
SPLIT_MARKER = "// -----"
MAX_NESTING = 256  # real models nest a few tens of levels; the parser crashes in the thousands
PARSE_TIMEOUT_S = 600.0  # the child's limit (XGEN_PARSE_TIMEOUT overrides)


def decode_mlir_input(raw: bytes, source: str) -> str | bytes:
    """MLIR bytecode (by its magic number, whatever the file is called) or UTF-8 text; anything
    else is an MLIRParseError naming the file and the first bad byte."""
    if raw.startswith(BYTECODE_MAGIC):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise MLIRParseError(
            f"{source}: not MLIR (neither bytecode nor UTF-8 text: byte {e.start} is "
            f"0x{raw[e.start]:02x})"
        ) from None


def split_chunks(text: str, split: bool) -> list[str]:
    """``--split-input-file``: the ``// -----`` chunks, each padded with newlines so that
    diagnostics keep the file's line numbers."""
    if not split:
        return [text]
    out, line = [], 0
    for part in text.split(SPLIT_MARKER):
        out.append("\n" * line + part)
        line += part.count("\n")
    return out


# What the nesting scan stops at: strings and comments (skipped: not nesting), '->', '>=' and
# '<=' (not angle brackets), and the brackets themselves.
_TOKEN = re.compile(rb'"|//|->|[<>]=|[][(){}<>]')


def check_nesting(text: str | bytes, source: str, limit: int = MAX_NESTING) -> None:
    """Refuse text nested deeper than ``limit`` levels of (), [], {} and <> (regions, array
    attributes, types), naming file:line:col of the first level too deep. Strings (weight
    blobs) are skipped at memchr speed: a few tenths of a second on a 100 MB model."""
    data = text.encode() if isinstance(text, str) else text
    depth, pos, search = 0, 0, _TOKEN.search
    while m := search(data, pos):
        token, pos = m.group(), m.end()
        if token == b'"':
            pos = _string_end(data, pos)
        elif token == b"//":
            newline = data.find(b"\n", pos)
            pos = len(data) if newline < 0 else newline
        elif len(token) == 2:
            continue
        elif token in b"([{<":
            depth += 1
            if depth > limit:
                where = m.start()
                line = data.count(b"\n", 0, where) + 1
                col = where - data.rfind(b"\n", 0, where)
                raise MLIRParseError(
                    f"{source}:{line}:{col}: error: nested more than {limit} levels deep "
                    "(brackets, braces, parentheses or angle brackets); not parsed: MLIR's "
                    "parser recurses once per level and would crash"
                )
        else:
            depth -= 1


def _string_end(data: bytes, pos: int) -> int:
    """The position after the '"' that closes the string whose body starts at ``pos``."""
    while (quote := data.find(b'"', pos)) >= 0:
        start = quote
        while start > pos and data[start - 1] == 0x5C:  # backslashes before the quote
            start -= 1
        if (quote - start) % 2 == 0:
            return quote + 1
        pos = quote + 1
    return len(data)


# The child imports only what parsing needs (frontend, _mlir, dialects): the package's
# __init__ (the compiler, the runtime, torch) is skipped by registering a bare package first.
_CHILD = (
    "import sys, types; pkg = types.ModuleType('xgen_mlir'); pkg.__path__ = [sys.argv[1]]; "
    "sys.modules['xgen_mlir'] = pkg; from xgen_mlir.frontend.parse_check import main; "
    "sys.exit(main(sys.argv[2:]))"
)


def _forked_check(args: list[str], timeout: float) -> subprocess.CompletedProcess | None:
    """``parse_check.main(args)`` in a forked copy of this process: the bindings are already
    imported, so the check costs milliseconds instead of a new interpreter's ~0.7 s. None
    where a fork is not safe: with another thread running, the child could wait forever on a
    lock that thread held (then the caller starts a fresh interpreter)."""
    if not hasattr(os, "fork") or _thread_count() != 1:
        return None
    from . import parse_check

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report through the pipe, never return into the caller's code
        code = 70
        try:
            os.close(read_end)
            quiet = os.open(os.devnull, os.O_WRONLY)
            os.dup2(quiet, 1)
            os.dup2(quiet, 2)  # a crash's report from LLVM is not the caller's output
            sys.stdout = os.fdopen(write_end, "w", buffering=1)
            code = parse_check.main(args)
            sys.stdout.flush()
        except BaseException as e:
            with contextlib.suppress(BaseException):
                os.write(write_end, f"\nfailed: {type(e).__name__}: {e}\n".encode())
        os._exit(code)
    os.close(write_end)
    out, deadline = b"", time.monotonic() + timeout
    with os.fdopen(read_end, "rb", buffering=0) as pipe:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([pipe], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise subprocess.TimeoutExpired(args, timeout)
            data = pipe.read(65536)
            if not data:
                break
            out += data
    _, status = os.waitpid(pid, 0)
    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    text = out.decode(errors="replace")
    failed = [line for line in text.splitlines() if line.startswith("failed: ")]
    return subprocess.CompletedProcess(args, code, out, "\n".join(failed).encode())


def _thread_count() -> int:
    """This process's threads, C ones included (0 where the system does not say)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def precheck_parse(
    path: str | os.PathLike[str], source: str, *, binding: str = "torch", split: bool = False
) -> dict[int, str]:
    """Parse the file at ``path`` in a child process; returns {chunk index: error} for the
    chunks (``split_chunks``) on which the parser crashed, so that they are never parsed in
    this process. Parse errors are not reported here: the in-process parse reports them."""
    try:
        timeout = float(os.environ.get("XGEN_PARSE_TIMEOUT", PARSE_TIMEOUT_S))
    except ValueError:
        timeout = PARSE_TIMEOUT_S
    package_dir = str(Path(__file__).resolve().parents[1])
    crashed: dict[int, str] = {}
    start = 0
    while True:
        args = [binding, str(start), *(["--split"] if split else []), os.fspath(path)]
        try:
            child = _forked_check(args, timeout) or subprocess.run(
                [sys.executable, "-c", _CHILD, package_dir, *args],
                capture_output=True,
                timeout=timeout,
            )
        except OSError as e:  # no Python to start (an embedded interpreter, ...)
            raise MLIRParseError(
                f"{source}: cannot start the child process that checks untrusted MLIR "
                f"({sys.executable!r}: {e.strerror or e})"
            ) from None
        except subprocess.TimeoutExpired:
            raise MLIRParseError(
                f"{source}: MLIR's parser did not finish within {timeout:.0f} s (in a child "
                "process; XGEN_PARSE_TIMEOUT sets the limit)"
            ) from None
        lines = child.stdout.decode(errors="replace").split()
        if child.returncode == 0 and lines[-1:] == ["done"]:
            return crashed
        chunk = int(lines[-1]) if lines and lines[-1].isdigit() else start
        if child.returncode >= 0:  # the child failed without crashing: say what it said
            tail = child.stderr.decode(errors="replace").strip().splitlines()[-3:]
            raise MLIRParseError(
                f"{source}: checking the input in a child process failed "
                f"(exit {child.returncode}): " + " | ".join(tail)
            )
        where = f":{_chunk_line(path, chunk)}" if split else ""
        crashed[chunk] = (
            f"{source}{where}: error: MLIR's parser crashed on this input "
            f"({_signal_name(child.returncode)} in a child process); the input is malformed "
            "or nested too deeply, and was not parsed"
        )
        start = chunk + 1
        if not split:
            return crashed


def _chunk_line(path: str | os.PathLike[str], chunk: int) -> int:
    """The file line on which ``// -----`` chunk ``chunk`` starts."""
    text = Path(path).read_bytes().decode("utf-8", errors="replace")
    return sum(part.count("\n") for part in text.split(SPLIT_MARKER)[:chunk]) + 1


def read_untrusted_mlir(path: str | os.PathLike[str]) -> str | bytes:
    """The text or bytecode of a user's file, checked as the module docstring says (nesting,
    then a parse in a child process); raises MLIRParseError, never crashes this process."""
    path = Path(path)
    source = str(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise FrontendError(f"{source}: cannot read the file ({e.strerror or e})") from None
    data = decode_mlir_input(raw, source)
    if isinstance(data, str):
        check_nesting(raw, source)
    crashed = precheck_parse(path, source)
    if crashed:
        raise MLIRParseError(crashed[0])
    return data


def import_mlir_file(path: str | os.PathLike[str]) -> ir.Module:
    path = Path(path)
    if not path.is_file():
        raise FrontendError(f"{path}: no such file")
    module = parse_mlir(read_untrusted_mlir(path), str(path))
    if _has_torch_ops(module):
        module = lower_torch_to_linalg(module, from_raw=True)
    return module


def _has_torch_ops(module: ir.Module) -> bool:
    from ..irutil import ops_where

    return bool(
        ops_where(module.operation, lambda op: op.name.startswith("torch."), first_only=True)
    )
