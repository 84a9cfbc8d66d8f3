"""Running a module's calls in a child process: ``load(path, isolated=True)``.

IREE verifies a module's flatbuffer and VM bytecode when it loads it, but not the machine code
of its executables nor its constants, and its parser itself can crash on some corrupted
modules: a corrupted or hostile ``.vmfb`` can crash (SIGSEGV, SIGILL), hang or misbehave in
the process that reads or calls it. With ``isolated=True`` the module is parsed, loaded and
called only in a child Python process that speaks a small protocol over pipes (the parent
reads nothing of it with IREE), so such a crash becomes a
:class:`~xgen_mlir.errors.ModuleCallError` naming the signal, the file and the entry, and the
caller's process survives.

Protocol (both ways): a 4-byte little-endian length, a JSON header, then the raw bytes of the
arrays the header lists (dtype, shape, nbytes). Nothing the child sends is unpickled or
executed: the parent accepts only plain numeric arrays and a short list of error classes.
"""

from __future__ import annotations

import json
import math
import os
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import weakref
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..dtypes import element_type, is_numeric, numpy_dtype
from ..errors import InputMismatchError, ModuleCallError, ModuleLoadError, XGenError

_LEN = struct.Struct("<I")
_MAX_HEADER = 1 << 20


class _ProtocolError(Exception):
    """The other side sent something that is not a well-formed message (or closed the pipe)."""


class _PipeClosed(_ProtocolError):
    """The other side closed the pipe (it exited, or died)."""


def _read_exact(stream: IO[bytes], n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = stream.read(left)
        if not chunk:
            raise _PipeClosed("the pipe closed")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def send(stream: IO[bytes], header: dict[str, Any], arrays: list[np.ndarray] | None = None) -> None:
    arrays = [np.ascontiguousarray(a) for a in arrays or []]
    header = dict(header)
    header["arrays"] = [
        {"dtype": _dtype_name(a.dtype), "shape": list(a.shape), "nbytes": a.nbytes} for a in arrays
    ]
    data = json.dumps(header).encode()
    stream.write(_LEN.pack(len(data)) + data)
    for a in arrays:
        if a.nbytes:
            stream.write(a.reshape(-1).view(np.uint8).data)
    stream.flush()


def _dtype_name(dtype: np.dtype) -> str:
    """The wire name of a dtype: its MLIR element type where it has one (``bf16``: numpy's own
    string for bfloat16, ``<V2``, would not say what the bytes are), else numpy's string."""
    return element_type(dtype) or dtype.str


def _dtype_of(name: str) -> np.dtype:
    return numpy_dtype(name) or np.dtype(name)


def receive(stream: IO[bytes]) -> tuple[dict[str, Any], list[np.ndarray]]:
    """One message; arrays are checked to be plain numeric arrays of the announced size."""
    (size,) = _LEN.unpack(_read_exact(stream, _LEN.size))
    if size > _MAX_HEADER:
        raise _ProtocolError(f"header of {size} bytes")
    try:
        header = json.loads(_read_exact(stream, size))
    except (ValueError, UnicodeDecodeError) as e:
        raise _ProtocolError(f"header is not JSON: {e}") from None
    if not isinstance(header, dict) or not isinstance(header.get("arrays"), list):
        raise _ProtocolError("header is not an object with an array list")
    arrays = []
    for spec in header["arrays"]:
        try:
            dtype = _dtype_of(str(spec["dtype"]))
            shape = tuple(int(d) for d in spec["shape"])
            nbytes = int(spec["nbytes"])
        except (KeyError, TypeError, ValueError) as e:
            raise _ProtocolError(f"bad array description {spec!r}: {e}") from None
        if not is_numeric(dtype) or dtype.hasobject or any(d < 0 for d in shape):
            raise _ProtocolError(f"array of dtype {dtype} shape {shape} refused")
        if nbytes != math.prod(shape) * dtype.itemsize:
            raise _ProtocolError(f"array of shape {shape} {dtype} announced as {nbytes} bytes")
        raw = _read_exact(stream, nbytes)
        arrays.append(np.frombuffer(raw, dtype=dtype).reshape(shape).copy())
    return header, arrays


def _known_errors() -> dict[str, type[XGenError]]:
    """Errors the child may report by name; anything else becomes a ModuleCallError."""
    from .targets import MissingToolError, TargetMismatchError

    return {
        "ModuleLoadError": ModuleLoadError,
        "InputMismatchError": InputMismatchError,
        "ModuleCallError": ModuleCallError,
        "TargetMismatchError": TargetMismatchError,
        "MissingToolError": MissingToolError,
        "XGenError": XGenError,
    }


def describe_exit(returncode: int) -> tuple[str, str | None]:
    """('was killed by SIGSEGV (segmentation fault)', 'SIGSEGV'), ('exited with status 3', None)."""
    if returncode < 0:
        try:
            sig = signal.Signals(-returncode)
            name = sig.name
            what = signal.strsignal(sig) or name
        except ValueError:
            name, what = f"signal {-returncode}", f"signal {-returncode}"
        return f"was killed by {name} ({what.lower()})", name
    return f"exited with status {returncode}", None


def _shutdown(proc: subprocess.Popen[bytes], errlog: IO[bytes]) -> None:
    try:
        if proc.stdin is not None:
            proc.stdin.close()
    except OSError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    for stream in (proc.stdout, errlog):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass


START_TIMEOUT = 60.0  # seconds a child may take to start, whatever call_timeout says
STARTING = "while reading it"


class IsolatedRunner:
    """The parent's side: starts the child on first use (and again after it died), sends
    calls, turns whatever goes wrong into an XGenError naming the file and the entry."""

    def __init__(self, module: Any) -> None:
        self.source, self.entry = module.source, module.entry
        self._module = weakref.ref(module)  # read when the child starts (build_info may change)
        self.declaration = ""  # the entry's ABI declaration, as the child read it
        self._proc: subprocess.Popen[bytes] | None = None
        self._errlog: IO[bytes] | None = None
        self._finalizer: weakref.finalize | None = None
        self._lock = threading.Lock()
        # Seconds a reply may take before the child is stopped (a module stuck in a loop);
        # None: no limit. Starting a child (a Python, the IREE runtime, parsing the module)
        # gets at least START_TIMEOUT: on a loaded host that alone can take seconds.
        self.timeout: float | None = getattr(module, "call_timeout", None)
        self._timed_out = False

    # -- the child's lifetime ----------------------------------------------------------------
    def _start(self) -> subprocess.Popen[bytes]:
        import xgen_mlir

        root = str(Path(xgen_mlir.__file__).resolve().parents[1])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        errlog = tempfile.TemporaryFile(prefix="xgen-isolated-", suffix=".log")
        proc = subprocess.Popen(
            [sys.executable, "-m", "xgen_mlir.runtime.isolated"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errlog,
            env=env,
        )
        self._proc, self._errlog = proc, errlog
        self._finalizer = weakref.finalize(self, _shutdown, proc, errlog)
        module = self._module()
        if module is None:
            raise XGenError(f"{self.source}: the module was deleted")
        init: dict[str, Any] = {
            "op": "init",
            "entry": module.entry,
            "device": module.device,
            "target": module.target,
            "source": module.source,
            "parameters_scope": module.parameters_scope,
            "yield_to_workers": module.yield_to_workers,
            "build_info": _jsonable(module.build_info),
        }
        arrays = [np.frombuffer(module.vmfb, dtype=np.uint8)]
        if isinstance(module.parameters, bytes):
            arrays.append(np.frombuffer(module.parameters, dtype=np.uint8))
        elif module.parameters is not None:
            init["parameters"] = str(Path(module.parameters).resolve())
        reply, _ = self._exchange(init, arrays, STARTING, starting=True)
        self.declaration = str(reply.get("declaration", ""))
        return proc

    def start(self) -> str:
        """Start the child now (it parses the module); returns the entry's ABI declaration."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self.close()
                self._start()
            return self.declaration

    def close(self) -> None:
        """Stop the child (it is started again by the next call)."""
        if self._finalizer is not None:
            self._finalizer()
        self._proc = self._errlog = self._finalizer = None

    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    # -- one request ---------------------------------------------------------------------------
    def request(
        self, header: dict[str, Any], arrays: list[np.ndarray], doing: str
    ) -> tuple[dict[str, Any], list[np.ndarray]]:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self.close()
                self._start()
            return self._exchange(header, arrays, doing)

    def _exchange(
        self,
        header: dict[str, Any],
        arrays: list[np.ndarray],
        doing: str,
        starting: bool = False,
    ) -> tuple[dict[str, Any], list[np.ndarray]]:
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        self._timed_out = False
        watchdog = None
        limit = self._limit(starting)
        if limit is not None:
            watchdog = threading.Timer(limit, self._stop_for_timeout, (proc,))
            watchdog.daemon = True
            watchdog.start()
        try:
            send(proc.stdin, header, arrays)
            reply, out = receive(proc.stdout)
        except (_ProtocolError, OSError, struct.error) as e:
            raise self._died(doing, e) from None
        except BaseException:  # KeyboardInterrupt mid-exchange: the pipe is out of step
            self.close()
            raise
        finally:
            if watchdog is not None:
                watchdog.cancel()
        if reply.get("ok") is True:
            return reply, out
        name, message = str(reply.get("error", "")), str(reply.get("message", ""))[:4000]
        cls = _known_errors().get(name, ModuleCallError)
        if cls is ModuleCallError and name not in ("ModuleCallError", ""):
            message = f"{self.source}: '{self.entry}' failed {doing} ({name}): {message}"
        raise cls(message)

    def _limit(self, starting: bool) -> float | None:
        if self.timeout is None:
            return None
        return max(self.timeout, START_TIMEOUT) if starting else self.timeout

    def _stop_for_timeout(self, proc: subprocess.Popen[bytes]) -> None:
        self._timed_out = True
        proc.kill()  # the pending read sees the pipe close; _died says why

    def _died(self, doing: str, cause: BaseException) -> XGenError:
        """The error for a child that died, or broke the protocol (it is stopped then)."""
        proc = self._proc
        assert proc is not None
        malformed = not isinstance(cause, (_PipeClosed, OSError))
        try:
            proc.wait(timeout=1 if malformed else 30)
        except subprocess.TimeoutExpired:
            malformed = True
            proc.kill()
            proc.wait()
        how, sig = describe_exit(proc.returncode)
        tail = ""
        if self._errlog is not None:
            try:
                self._errlog.seek(0)
                text = self._errlog.read().decode(errors="replace").strip()
                lines = [ln for ln in text.splitlines() if ln.strip()][-3:]
                tail = f" Its last words: {' | '.join(lines)[-600:]}" if lines else ""
            except OSError:
                pass
        self.close()
        what = f"sent a malformed reply ({cause}) and was stopped" if malformed else how
        if self._timed_out:
            limit = self._limit(doing == STARTING)
            what, sig = f"did not answer within {limit:g} s and was stopped", None
        hint = (
            " The module is corrupt, hostile or built for a CPU this one is not; this process"
            " is unaffected (the next call starts a fresh worker)."
            if sig
            else ""
        )
        return ModuleCallError(
            f"{self.source}: the isolated process running '{self.entry}' {what} {doing}."
            f"{hint}{tail}",
            signal=sig,
        )


def _jsonable(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return {}


# -- the child ------------------------------------------------------------------------------------
def _serve(inp: IO[bytes], out: IO[bytes]) -> None:
    from .module import CompiledModule

    header, arrays = receive(inp)
    module: Any = None
    try:
        params: Any = header.get("parameters")
        if len(arrays) > 1:
            params = arrays[1].tobytes()
        module = CompiledModule(
            arrays[0].tobytes(),
            entry=header["entry"],
            device=header["device"],
            target=header["target"],
            source=header["source"],
            parameters=params,
            parameters_scope=header["parameters_scope"],
            yield_to_workers=header["yield_to_workers"],
            build_info=header.get("build_info") or {},
        )
        send(out, {"ok": True, "pid": os.getpid(), "declaration": module.declaration})
    except Exception as e:
        _send_error(out, e)
        return
    while True:
        try:
            header, arrays = receive(inp)
        except _ProtocolError:
            return  # the parent closed the pipe: done
        try:
            if header.get("op") == "call":
                module._load()  # first call: onto the device (runs the module's initializer)
                results = module(*arrays)
                outs = list(results) if isinstance(results, tuple) else [results]
                send(out, {"ok": True}, outs)
            elif header.get("op") == "benchmark":
                stats = module.benchmark(
                    *arrays, runs=int(header["runs"]), warmup=int(header["warmup"])
                )
                send(out, {"ok": True, "stats": stats.as_dict()})
            else:
                send(out, {"ok": False, "error": "XGenError", "message": "unknown request"})
        except Exception as e:
            _send_error(out, e)


def _send_error(out: IO[bytes], e: BaseException) -> None:
    send(out, {"ok": False, "error": type(e).__name__, "message": str(e)})


def main() -> None:
    # The protocol owns the original stdin/stdout; anything IREE prints goes to stderr.
    inp = os.fdopen(os.dup(0), "rb")
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    # Ctrl-C reaches the whole process group; the parent decides (it stops this process).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _serve(inp, out)


if __name__ == "__main__":
    main()
