"""CompiledModule: a loaded IREE module you can call, save, benchmark; and ``load()``.

Calls check inputs against the module's own signature (count, shape, dtype) before anything
reaches IREE, and return the kind of arrays they were given (torch in, torch out). Whatever
IREE's runtime raises while loading or calling becomes a ModuleLoadError / ModuleCallError
naming the file and the entry; ``isolated=True`` runs the calls in a child process
(runtime/isolated.py), so a module that crashes cannot take the caller down.
"""

from __future__ import annotations

import hashlib
import os
import statistics
import tempfile
import time
import weakref
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..dtypes import from_torch, is_float, is_numeric, to_torch
from ..errors import (
    InputMismatchError,
    ModuleCallError,
    ModuleLoadError,
    UnknownNameError,
    XGenError,
)
from ..fileio import atomic_write_bytes, atomic_write_text
from .cpu_features import CPU_KEY, FORMAT_KEY, REFLECTION_KEY, check_cpu_features
from .plugins import REFLECTION_KEY as PLUGINS_KEY
from .plugins import device_with_plugins, plugin_paths
from .signature import Signature, check_entry_name, parse_declaration
from .targets import (
    GPU_FORMATS,
    check_device,
    check_vulkan_profile,
    executable_formats,
    require_vulkan,
    vulkan_device_names,
    vulkan_lease,
)
from .waiting import yielding_to_workers

DEVICES = ("local-task", "local-sync", "vulkan", "cuda", "hip")
SHA256_SUFFIX = ".sha256"  # save() writes <file>.sha256 beside the module; load() checks it


def _short(e: BaseException) -> str:
    """An exception from IREE as one readable line (its type when the message is empty)."""
    text = " ".join(str(e).split())
    return (text[:500] + " ...") if len(text) > 500 else (text or type(e).__name__)


@dataclass(frozen=True)
class BenchmarkStats:
    """Latency of one call, in milliseconds, over ``runs`` timed calls after warm-up."""

    median_ms: float
    mean_ms: float
    min_ms: float
    max_ms: float
    p90_ms: float
    stdev_ms: float
    runs: int

    def as_dict(self) -> dict[str, float]:
        return asdict(self)

    def __str__(self) -> str:
        return (
            f"median {self.median_ms:.3f} ms (min {self.min_ms:.3f}, p90 {self.p90_ms:.3f}, "
            f"n={self.runs})"
        )


def latency_stats(samples_s: list[float]) -> BenchmarkStats:
    ms = sorted(s * 1e3 for s in samples_s)
    p90 = ms[min(len(ms) - 1, round(0.9 * (len(ms) - 1)))]
    return BenchmarkStats(
        statistics.median(ms),
        statistics.fmean(ms),
        ms[0],
        ms[-1],
        p90,
        statistics.pstdev(ms) if len(ms) > 1 else 0.0,
        len(ms),
    )


class CompiledModule:
    """A compiled model: ``module(*inputs)``, ``.save(path)``, ``.benchmark()``.

    The module is checked (valid ``.vmfb``, entry function, signature) when created, but loaded
    onto its device only on first use, so modules for other CPUs, GPUs or bare metal can be
    compiled, saved and bundled on any machine. Calling one the device here cannot run raises
    :class:`~xgen_mlir.runtime.targets.TargetMismatchError`. ``isolated=True`` loads and calls
    it in a child process instead (see runtime/isolated.py and docs/runtime.md).
    """

    def __init__(
        self,
        vmfb: bytes,
        *,
        entry: str = "main",
        device: str | None = None,
        target: str = "cpu",
        source: str = "<memory>",
        parameters: str | os.PathLike[str] | bytes | None = None,
        parameters_scope: str = "model",
        devices: tuple[str, ...] | None = None,
        artifacts: dict[str, bytes] | None = None,
        yield_to_workers: bool = True,
        report: Any = None,
        build_info: dict[str, Any] | None = None,
        isolated: bool = False,
        call_timeout: float | None = None,
        plugins: dict[str, str] | None = None,
    ) -> None:
        try:
            check_entry_name(entry)
        except XGenError as e:
            raise ModuleLoadError(f"{source}: {e}") from None
        if not isinstance(vmfb, bytes):
            vmfb = bytes(vmfb)
        self.vmfb, self.entry, self.target, self.source = vmfb, entry, target, source
        self.parameters, self.parameters_scope = parameters, parameters_scope
        self.artifacts: dict[str, bytes] = dict(artifacts or {})
        # What compile() did (compiler.CompileReport; None for a module loaded from a file) and
        # what a bundle's manifest records about the build (target options, flags, arch).
        self.report: Any = report
        self.build_info: dict[str, Any] = dict(build_info or {})
        # Executable plugin files by backend name (BYOC offload; runtime/plugins.py): where
        # not given, a module that needs one builds it or finds it in the kernel cache.
        self.plugins: dict[str, str] = dict(plugins or {})
        self.device = device or (devices[0] if devices else "local-task")
        if self.device not in DEVICES:
            raise UnknownNameError("device", self.device, list(DEVICES))
        self._fn: Any = None
        self._ctx: Any = None
        self._vulkan: Any = None  # runtime.targets.VulkanLease, on the vulkan device
        self._config: Any = None
        # The caller waits in SCHED_BATCH on the CPU task system (runtime/waiting.py); False
        # waits the ordinary way (for A/B measurements).
        self.yield_to_workers = yield_to_workers
        self.isolated = isolated
        if call_timeout is not None and not (isolated and call_timeout > 0):
            raise XGenError("call_timeout needs isolated=True and a number of seconds > 0")
        self.call_timeout = call_timeout  # seconds an isolated call may take
        self._runner: Any = None  # isolated.IsolatedRunner: the child that reads and runs it
        # The entry's reflection: its ABI declaration and what compile() recorded (the CPU
        # target and its features, checked against this host before the module runs).
        self.reflection: dict[str, str] = {}
        if isolated:  # IREE never reads these bytes in this process
            self.declaration = self._isolated().start()
            self.reflection = _reflection_from_metadata(vmfb, entry)
        else:
            self.declaration = self._parse(vmfb)
        signature = parse_declaration(self.declaration)
        if signature is None:
            decl = self.declaration
            shown = repr(decl[:200]) if decl else "missing"
            raise ModuleLoadError(
                f"{source}: cannot read the signature of entry function '{entry}' (its ABI "
                f"declaration is {shown}), so its inputs could not be checked at call time; "
                f"the module is refused (corrupt, or not compiled by xgen_mlir / iree-compile)"
            )
        self.signature: Signature | None = signature

    def _parse(self, vmfb: bytes) -> str:
        """The entry's ABI declaration, from IREE's parse of the module in this process."""
        import iree.runtime as rt

        source, entry = self.source, self.entry
        # Parsing needs no device: a bare VM instance reads functions and reflection. IREE
        # verifies the flatbuffer and the VM bytecode of every function here.
        try:
            vm_module = rt.VmModule.copy_buffer(rt.VmInstance(), vmfb)
            names = [str(f) for f in vm_module.function_names]
        except Exception as e:
            raise ModuleLoadError(
                f"{source}: not a valid IREE module (.vmfb): {_short(e)}"
            ) from None
        if entry not in names:
            public = [f for f in names if not f.startswith("__")]
            raise ModuleLoadError(f"{source}: no entry function '{entry}'; functions: {public}")
        try:
            reflection = vm_module.lookup_function(entry).reflection
            self.reflection = {str(k): str(v) for k, v in dict(reflection).items()}
            return str(reflection.get("iree.abi.declaration", ""))
        except Exception as e:
            raise ModuleLoadError(
                f"{source}: cannot read entry function '{entry}' (corrupt module?): {_short(e)}"
            ) from None

    @property
    def cpu_features(self) -> str:
        """The LLVM CPU features the module's CPU code was compiled for ('' if not recorded)."""
        return self.reflection.get(REFLECTION_KEY, "")

    def check_device(self) -> None:
        """Raise a clear error if this machine's ``self.device`` cannot run the module: another
        arch or GPU, or CPU features this host lacks (runtime/cpu_features.py)."""
        source = self.source if self.source != "<memory>" else f"module for target '{self.target}'"
        check_device(self.vmfb, self.device, source)
        self.check_cpu_features(source)
        plugins = self.reflection.get(PLUGINS_KEY, "")
        if plugins and self.device in ("local-task", "local-sync"):
            plugin_paths(plugins, self.plugins, source)  # found, built, or a clear error now

    def check_cpu_features(self, source: str | None = None) -> None:
        """Raise CpuFeatureError if the module's CPU code needs features this host lacks."""
        if self.device in ("local-task", "local-sync") and self.cpu_features:
            r = self.reflection
            where = source or self.source
            check_cpu_features(self.cpu_features, r.get(CPU_KEY, ""), r.get(FORMAT_KEY, ""), where)

    def _load(self) -> Any:
        """Load onto the device on first use; returns the entry function."""
        if self._fn is not None:
            return self._fn
        import iree.runtime as rt

        self.check_device()
        if self.device == "vulkan":
            require_vulkan()
            profile = self.build_info.get("target_options", {}).get("gpu", "")
            check_vulkan_profile(profile, vulkan_device_names(), self.source)
        try:
            plugins = self.reflection.get(PLUGINS_KEY, "")
            if plugins and self.device in ("local-task", "local-sync"):
                paths = plugin_paths(plugins, self.plugins, self.source)
                config = rt.Config(device=device_with_plugins(self.device, paths))
            elif self.device == "vulkan":
                self._vulkan = vulkan_lease()  # held as long as the module
                config = rt.Config(device=self._vulkan.device)
            else:
                config = rt.Config(self.device)
        except ModuleLoadError:
            raise
        except Exception as e:
            raise ModuleLoadError(
                f"device '{self.device}' is not available here: {_short(e)}"
            ) from None
        modules = []
        if self.parameters is not None:
            if isinstance(self.parameters, bytes):
                self.parameters = self._parameters_file(self.parameters)
            try:
                index = rt.ParameterIndex()
                index.load(str(self.parameters))
                provider = index.create_provider(scope=self.parameters_scope)
                modules.append(rt.create_io_parameters_module(config.vm_instance, provider))
            except Exception as e:
                raise ModuleLoadError(
                    f"{self.parameters}: not a parameter archive: {_short(e)}"
                ) from None
        try:
            vm_module = rt.VmModule.copy_buffer(config.vm_instance, self.vmfb)
            self._ctx = rt.SystemContext(vm_modules=[*modules, vm_module], config=config)
            fn = self._ctx.modules[vm_module.name][self.entry]
        except Exception as e:
            raise ModuleLoadError(
                f"{self.source}: cannot load entry '{self.entry}' on device '{self.device}' "
                f"(corrupt, compiled for another target, or missing its parameter archive?): "
                f"{_short(e)}"
            ) from None
        self._config = config
        self._fn = fn
        return self._fn

    def _parameters_file(self, data: bytes) -> str:
        """Parameters given as bytes go to a temporary .irpa that lives as long as the module."""
        fd, name = tempfile.mkstemp(prefix="xgen-params-", suffix=".irpa")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        weakref.finalize(self, _unlink, name)
        return name

    def _isolated(self) -> Any:
        if self._runner is None:
            from .isolated import IsolatedRunner

            self._runner = IsolatedRunner(self)
        return self._runner

    def _invoke(self, fn: Any, arrays: list[np.ndarray], wait_for_host: bool = False) -> Any:
        """Call IREE; anything it raises becomes a ModuleCallError naming the file and entry.
        ``wait_for_host``: copy the results to the host inside the wait (benchmarks)."""
        try:
            with self._waiting():
                results = fn(*arrays)
                return self._host(results) if wait_for_host else results
        except XGenError:
            raise
        except Exception as e:
            raise ModuleCallError(
                f"{self.source}: call of '{self.entry}' failed in IREE's runtime: {_short(e)}"
            ) from None

    def _host(self, results: Any) -> list[np.ndarray]:
        outs = results if isinstance(results, (tuple, list)) else (results,)
        try:
            return [to_host(r, self._config.device) for r in outs]
        except Exception as e:
            raise ModuleCallError(
                f"{self.source}: cannot read the results of '{self.entry}': {_short(e)}"
            ) from None

    # -- calling -------------------------------------------------------------------------
    def _check_inputs(self, arrays: list[np.ndarray]) -> None:
        sig = self.signature
        if sig is None:
            return
        if len(arrays) != len(sig.inputs):
            want = ", ".join(s.describe() for s in sig.inputs)
            raise InputMismatchError(
                f"'{self.entry}' takes {len(sig.inputs)} input(s) ({want}); got {len(arrays)}"
            )
        for i, (a, spec) in enumerate(zip(arrays, sig.inputs, strict=True)):
            got = f"{'x'.join(map(str, a.shape)) or 'scalar'} {a.dtype.name}"
            if not spec.matches_shape(a.shape):
                raise InputMismatchError(
                    f"input {i} of '{self.entry}': expected shape {spec.describe()}, got {got}"
                )
            if spec.dtype is not None and a.dtype != spec.dtype:
                raise InputMismatchError(
                    f"input {i} of '{self.entry}': expected dtype {spec.dtype.name}, got {got} "
                    f"(convert it explicitly; xgen_mlir does not cast silently)"
                )

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise InputMismatchError(
                f"'{self.entry}' takes its inputs by position only; got keyword argument(s) "
                f"{', '.join(map(repr, kwargs))}"
            )
        as_torch = any(type(x).__module__.startswith("torch") for x in inputs)
        arrays = [_to_numpy(x, i) for i, x in enumerate(inputs)]
        self._check_inputs(arrays)
        if self.isolated:
            _, host = self._isolated().request({"op": "call"}, arrays, "during a call")
        else:
            host = self._host(self._invoke(self._load(), arrays))
        if as_torch:
            tensors = [to_torch(h) for h in host]
            return tensors[0] if len(tensors) == 1 else tuple(tensors)
        return host[0] if len(host) == 1 else tuple(host)

    # -- saving / benchmarking -------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the ``.vmfb`` (atomically: a crash leaves the old file, never half of the new)
        and ``PATH.sha256`` beside it (``sha256sum -c`` format), which ``load()`` checks;
        ``iree-run-module --module=PATH --function=<entry>`` runs it."""
        path = atomic_write_bytes(path, self.vmfb)
        digest = hashlib.sha256(self.vmfb).hexdigest()
        atomic_write_text(sha256_sidecar(path), f"{digest}  {path.name}\n")
        return path

    def save_bundle(self, directory: str | os.PathLike[str], carry_libraries: bool = True) -> Path:
        """Write a deployable bundle (module, weights, manifest.json, run.sh, BYOC plugins and
        the libraries they link from pip unless ``carry_libraries=False``): runtime_bridge/."""
        from .bundle import save_bundle

        return save_bundle(self, directory, carry_libraries)

    def save_artifacts(self, directory: str | os.PathLike[str]) -> list[Path]:
        """Write the module and any side artifacts (bare metal: .o, .h, C module) to a folder."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        written = [self.save(directory / "model.vmfb")]
        for name, data in self.artifacts.items():
            written.append(atomic_write_bytes(directory / name, data))
        return written

    def random_inputs(self, seed: int = 0) -> list[np.ndarray]:
        if self.signature is None:
            raise InputMismatchError("this module's signature is unknown; pass inputs explicitly")
        rng = np.random.default_rng(seed)
        arrays = []
        for spec in self.signature.inputs:
            shape = tuple(1 if d is None else d for d in spec.shape)
            dtype = spec.dtype if spec.dtype is not None else np.dtype(np.float32)
            if is_float(dtype):
                arrays.append(rng.standard_normal(shape).astype(dtype))
            elif dtype.kind == "b":
                arrays.append(np.ones(shape, dtype))
            else:
                arrays.append(rng.integers(0, 100, shape).astype(dtype))
        return arrays

    def benchmark(self, *inputs: Any, runs: int = 30, warmup: int = 5) -> BenchmarkStats:
        """Median/mean/min/max/p90 latency of ``runs`` calls (random inputs if none given)."""
        arrays = [_to_numpy(x, i) for i, x in enumerate(inputs)] or self.random_inputs()
        self._check_inputs(arrays)
        if self.isolated:  # timed in the child: the module's latency, not the pipe's
            reply, _ = self._isolated().request(
                {"op": "benchmark", "runs": runs, "warmup": warmup}, arrays, "during a benchmark"
            )
            return BenchmarkStats(**{k: reply["stats"][k] for k in BenchmarkStats.__annotations__})
        fn = self._load()
        for _ in range(warmup):
            self._invoke(fn, arrays, wait_for_host=True)
        samples = []
        for _ in range(runs):
            t0 = time.perf_counter()
            self._invoke(fn, arrays, wait_for_host=True)
            samples.append(time.perf_counter() - t0)
        return latency_stats(samples)

    def _waiting(self) -> Any:
        """How the caller waits for a call: see runtime/waiting.py (CPU task system only)."""
        return yielding_to_workers(self.yield_to_workers and self.device == "local-task")

    def dispatch_count(self) -> int:
        """Kernel launches per call recorded in the module (fewer usually means more fusion)."""
        from .inspect import dispatch_count

        return dispatch_count(self.vmfb)

    def __repr__(self) -> str:
        sig = self.signature
        ins = ", ".join(s.describe() for s in sig.inputs) if sig else "?"
        return f"<CompiledModule {self.entry}({ins}) target={self.target} device={self.device}>"


def _reflection_from_metadata(vmfb: bytes, entry: str) -> dict[str, str]:
    """The entry's reflection entries as ``iree-dump-module`` lists them (in its own process:
    for isolated modules, which this process never parses)."""
    from .inspect import module_metadata

    out: dict[str, str] = {}
    inside = False
    for line in module_metadata(vmfb).splitlines():
        if line.lstrip().startswith("["):
            inside = line.split("]", 1)[1].strip().startswith(f"{entry}(")
        elif inside and ": " in line:
            key, value = line.strip().split(": ", 1)
            out[key] = value
        elif not line.strip():
            inside = False
    return out


def _unlink(name: str) -> None:
    try:
        os.unlink(name)
    except OSError:
        pass


def sha256_sidecar(path: str | os.PathLike[str]) -> Path:
    """``model.vmfb`` -> ``model.vmfb.sha256``."""
    path = Path(path)
    return path.with_name(path.name + SHA256_SUFFIX)


def to_host(result: Any, device: Any) -> np.ndarray:
    """Copy one result to a numpy array the caller owns, on every driver.

    IREE's ``DeviceArray.to_host()`` maps host-visible buffers (CPU drivers) but otherwise
    imports a fresh numpy allocation into the device, which Vulkan refuses unless it is
    aligned to minImportedHostPointerAlignment (4096 on llvmpipe; STACK.md item 6). Here a
    non-mappable result goes through a driver-allocated staging buffer instead: queue a copy
    into it, wait, map it, copy out.
    """
    import iree.runtime as rt

    if not isinstance(result, rt.DeviceArray):
        return np.array(result)
    view = result._buffer_view
    buffer = view.get_buffer()
    dtype = result._get_raw_dtype()
    shape = tuple(view.shape)
    mappable = (buffer.memory_type() & int(rt.MemoryType.HOST_VISIBLE)) and (
        buffer.allowed_usage() & int(rt.BufferUsage.MAPPING_SCOPED)
    )
    if mappable:
        out = np.array(view.map().asarray(shape, dtype))
    else:
        staging = device.allocator.allocate_buffer(
            memory_type=int(rt.MemoryType.HOST_LOCAL | rt.MemoryType.DEVICE_VISIBLE),
            allowed_usage=int(rt.BufferUsage.TRANSFER_TARGET | rt.BufferUsage.MAPPING_SCOPED),
            allocation_size=buffer.byte_length(),
        )
        sem = device.create_semaphore(0)
        device.queue_copy(
            buffer,
            staging,
            wait_semaphores=rt.HalFence.create_at(sem, 0),
            signal_semaphores=rt.HalFence.create_at(sem, 1),
        )
        rt.HalFence.create_at(sem, 1).wait()
        out = np.array(staging.map().asarray(shape, dtype))
    override = getattr(result, "_override_dtype", None)
    return out.astype(override) if override is not None and override != dtype else out


def _to_numpy(x: Any, index: int) -> np.ndarray:
    if isinstance(x, np.ndarray):
        if x.dtype.hasobject or not is_numeric(x.dtype):
            raise InputMismatchError(
                f"input {index}: a numpy array of dtype {x.dtype} holds no numbers a module takes"
            )
        return np.ascontiguousarray(x)
    if type(x).__module__.startswith("torch"):
        kind = type(x).__name__
        device = getattr(getattr(x, "device", None), "type", None)
        if device == "meta":
            raise InputMismatchError(
                f"input {index}: a meta tensor has a shape but no data; pass a real tensor"
            )
        try:
            return np.ascontiguousarray(from_torch(x))
        except Exception as e:
            raise InputMismatchError(
                f"input {index}: cannot read this torch {kind} as an array "
                f"(dtype {getattr(x, 'dtype', '?')}, device {device}): {_short(e)}"
            ) from None
    if isinstance(x, (int, float, bool, np.generic)):
        return np.asarray(x)
    raise InputMismatchError(
        f"input {index}: expected a numpy array or torch tensor, got {type(x).__name__}"
    )


def _check_sidecar(path: Path, data: bytes) -> None:
    """Refuse a module whose ``PATH.sha256`` (written by save()) does not match it."""
    sidecar = sha256_sidecar(path)
    if not sidecar.exists():
        return
    try:
        text = sidecar.read_text(errors="replace")
    except OSError as e:
        raise ModuleLoadError(f"{sidecar}: cannot read the module's checksum: {e}") from None
    want = text.split()[0].lower() if text.split() else ""
    if len(want) != 64 or any(c not in "0123456789abcdef" for c in want):
        raise ModuleLoadError(
            f"{sidecar}: not a sha256 checksum file (expected '<64 hex digits>  {path.name}')"
        )
    got = hashlib.sha256(data).hexdigest()
    if got != want:
        raise ModuleLoadError(
            f"{path}: does not match its checksum {sidecar.name} (sha256 {got[:12]}..., "
            f"expected {want[:12]}...): the file was modified, truncated or replaced after it "
            f"was saved; save it again (or delete {sidecar.name} if the change is intended)"
        )


def load(
    path: str | os.PathLike[str] | bytes,
    device: str | None = None,
    entry: str = "main",
    yield_to_workers: bool = True,
    isolated: bool = False,
    call_timeout: float | None = None,
    plugins: dict[str, str] | None = None,
) -> CompiledModule:
    """Load a ``.vmfb`` written by ``CompiledModule.save`` (or by ``xgen-compile``), or the
    bytes of one. A ``PATH.sha256`` beside the file (save() writes it) must match.

    ``isolated=True`` loads and runs the module's calls in a child process, so a corrupted or
    untrusted module that crashes (SIGSEGV, SIGILL) raises ModuleCallError naming the signal
    instead of killing this process (costs a process start and a copy of the inputs and
    outputs per call; docs/runtime.md); ``call_timeout`` (seconds, isolated only) stops a call
    that takes longer, e.g. a module stuck in a loop, with a ModuleCallError.
    ``yield_to_workers=False`` waits for calls without the scheduling hint of
    runtime/waiting.py. ``plugins``: executable plugin files by backend name, for a module
    whose dispatches call a kernel library (BYOC offload; default: built here or found in the
    kernel cache)."""
    if isinstance(path, (bytes, bytearray, memoryview)):
        data, source = bytes(path), "<bytes>"
    elif isinstance(path, (str, os.PathLike)):
        try:
            path = Path(path)
        except TypeError as e:  # an os.PathLike whose __fspath__ returns bytes
            raise ModuleLoadError(f"{path!r}: not a usable path: {e}") from None
        if path.is_dir():
            hint = (
                "; it is a bundle: use xgen_mlir.load_bundle(DIR)"
                if (path / "manifest.json").is_file()
                else "; give the .vmfb file inside it"
            )
            raise ModuleLoadError(f"{path}: is a directory, not a module file{hint}")
        if not path.is_file():
            raise ModuleLoadError(f"{path}: no such file")
        try:
            data = path.read_bytes()
        except OSError as e:
            raise ModuleLoadError(f"{path}: cannot read: {e.strerror or e}") from None
        _check_sidecar(path, data)
        source = str(path)
    else:
        raise ModuleLoadError(
            f"load() takes the path of a .vmfb file (str or os.PathLike) or its bytes; got "
            f"{type(path).__name__}"
        )
    if len(data) < 64:
        raise ModuleLoadError(f"{source}: too small to be an IREE module ({len(data)} bytes)")
    try:
        check_entry_name(entry)
    except XGenError as e:
        raise ModuleLoadError(f"{source}: {e}") from None
    # iree-dump-module (a separate process) verifies the flatbuffer before this process parses
    # it; it also names the executable formats, so a GPU-only module goes to its GPU driver.
    try:
        formats = executable_formats(data)
    except ModuleLoadError as e:
        raise ModuleLoadError(f"{source}: {e} (.vmfb)") from None
    if device is None:
        gpu = [d for d, fmt in GPU_FORMATS.items() if fmt in formats]
        device = gpu[0] if gpu and len(formats) == 1 else None
    module = CompiledModule(
        data,
        entry=entry,
        device=device,
        source=source,
        yield_to_workers=yield_to_workers,
        isolated=isolated,
        call_timeout=call_timeout,
        plugins=plugins,
    )
    module.check_device()  # a module for another CPU/GPU fails here, clearly, not at first call
    return module
