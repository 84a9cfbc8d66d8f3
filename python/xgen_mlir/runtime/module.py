"""CompiledModule: a loaded IREE module you can call, save, benchmark; and ``load()``.

Calls check inputs against the module's own signature (count, shape, dtype) before anything
reaches IREE, and return the kind of arrays they were given (torch in, torch out).
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputMismatchError, ModuleLoadError, UnknownNameError
from ..fileio import atomic_write_bytes
from .signature import Signature, parse_declaration
from .targets import (
    GPU_FORMATS,
    check_device,
    check_vulkan_profile,
    executable_formats,
    require_vulkan,
    vulkan_device_names,
)
from .waiting import yielding_to_workers

DEVICES = ("local-task", "local-sync", "vulkan", "cuda", "hip")


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
    :class:`~xgen_mlir.runtime.targets.TargetMismatchError`.
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
    ) -> None:
        import iree.runtime as rt

        self.vmfb, self.entry, self.target, self.source = vmfb, entry, target, source
        self.parameters, self.parameters_scope = parameters, parameters_scope
        self.artifacts: dict[str, bytes] = dict(artifacts or {})
        # What compile() did (compiler.CompileReport; None for a module loaded from a file) and
        # what a bundle's manifest records about the build (target options, flags, arch).
        self.report: Any = report
        self.build_info: dict[str, Any] = dict(build_info or {})
        self.device = device or (devices[0] if devices else "local-task")
        if self.device not in DEVICES:
            raise UnknownNameError("device", self.device, list(DEVICES))
        self._fn: Any = None
        self._ctx: Any = None
        # The caller waits in SCHED_BATCH on the CPU task system (runtime/waiting.py); False
        # waits the ordinary way (for A/B measurements).
        self.yield_to_workers = yield_to_workers
        try:  # parsing needs no device: a bare VM instance reads functions and reflection
            vm_module = rt.VmModule.copy_buffer(rt.VmInstance(), vmfb)
        except (ValueError, RuntimeError) as e:
            raise ModuleLoadError(f"{source}: not a valid IREE module (.vmfb): {e}") from None
        if entry not in vm_module.function_names:
            public = [f for f in vm_module.function_names if not f.startswith("__")]
            raise ModuleLoadError(f"{source}: no entry function '{entry}'; functions: {public}")
        decl = vm_module.lookup_function(entry).reflection.get("iree.abi.declaration", "")
        self.signature: Signature | None = parse_declaration(decl)

    def check_device(self) -> None:
        """Raise a clear error if this machine's ``self.device`` cannot run the module."""
        check_device(
            self.vmfb,
            self.device,
            self.source if self.source != "<memory>" else f"module for target '{self.target}'",
        )

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
            config = rt.Config(self.device)
        except Exception as e:
            raise ModuleLoadError(f"device '{self.device}' is not available here: {e}") from None
        modules = []
        if self.parameters is not None:
            index = rt.ParameterIndex()
            if isinstance(self.parameters, bytes):
                import tempfile

                with tempfile.NamedTemporaryFile(suffix=".irpa", delete=False) as f:
                    f.write(self.parameters)
                self.parameters = f.name
            try:
                index.load(str(self.parameters))
            except Exception as e:
                raise ModuleLoadError(f"{self.parameters}: not a parameter archive: {e}") from None
            provider = index.create_provider(scope=self.parameters_scope)
            modules.append(rt.create_io_parameters_module(config.vm_instance, provider))
        vm_module = rt.VmModule.copy_buffer(config.vm_instance, self.vmfb)
        try:
            self._ctx = rt.SystemContext(vm_modules=[*modules, vm_module], config=config)
        except (ValueError, RuntimeError) as e:
            raise ModuleLoadError(
                f"{self.source}: cannot load on device '{self.device}' (was it compiled for "
                f"another target, or does it need its parameter archive?): {e}"
            ) from None
        self._config = config
        self._fn = self._ctx.modules[vm_module.name][self.entry]
        return self._fn

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

    def __call__(self, *inputs: Any) -> Any:
        as_torch = any(type(x).__module__.startswith("torch") for x in inputs)
        arrays = [_to_numpy(x, i) for i, x in enumerate(inputs)]
        self._check_inputs(arrays)
        fn = self._load()
        with self._waiting():
            results = fn(*arrays)
        outs = results if isinstance(results, (tuple, list)) else (results,)
        host = [to_host(r, self._config.device) for r in outs]
        if as_torch:
            import torch

            tensors = [torch.from_numpy(h) for h in host]
            return tensors[0] if len(tensors) == 1 else tuple(tensors)
        return host[0] if len(host) == 1 else tuple(host)

    # -- saving / benchmarking -------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the ``.vmfb`` (atomically: a crash leaves the old file, never half of the new);
        ``iree-run-module --module=PATH --function=<entry>`` runs it."""
        return atomic_write_bytes(path, self.vmfb)

    def save_bundle(self, directory: str | os.PathLike[str]) -> Path:
        """Write a deployable bundle (module, weights, manifest.json, run.sh): runtime_bridge/."""
        from .bundle import save_bundle

        return save_bundle(self, directory)

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
            if dtype.kind == "f":
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
        fn = self._load()
        device = self._config.device
        for _ in range(warmup):
            with self._waiting():
                _block(fn(*arrays), device)
        samples = []
        for _ in range(runs):
            t0 = time.perf_counter()
            with self._waiting():
                _block(fn(*arrays), device)
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


def _block(results: Any, device: Any) -> None:
    """Wait for the results to be computed (local-task runs asynchronously)."""
    outs = results if isinstance(results, (tuple, list)) else (results,)
    for r in outs:
        to_host(r, device)


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
        return np.ascontiguousarray(x)
    if type(x).__module__.startswith("torch"):
        return np.ascontiguousarray(x.detach().cpu().numpy())
    if isinstance(x, (int, float, bool, np.generic)):
        return np.asarray(x)
    raise InputMismatchError(
        f"input {index}: expected a numpy array or torch tensor, got {type(x).__name__}"
    )


def load(
    path: str | os.PathLike[str],
    device: str | None = None,
    entry: str = "main",
    yield_to_workers: bool = True,
) -> CompiledModule:
    """Load a ``.vmfb`` written by ``CompiledModule.save`` (or by ``xgen-compile``).
    ``yield_to_workers=False`` waits for calls without the scheduling hint of
    runtime/waiting.py."""
    path = Path(path)
    if not path.is_file():
        raise ModuleLoadError(f"{path}: no such file")
    data = path.read_bytes()
    if len(data) < 64:
        raise ModuleLoadError(f"{path}: too small to be an IREE module ({len(data)} bytes)")
    if device is None:  # a GPU-only module goes to its GPU driver
        try:
            formats = executable_formats(data)
        except ModuleLoadError as e:
            raise ModuleLoadError(f"{path}: {e} (.vmfb)") from None
        gpu = [d for d, fmt in GPU_FORMATS.items() if fmt in formats]
        device = gpu[0] if gpu and len(formats) == 1 else None
    module = CompiledModule(
        data, entry=entry, device=device, source=str(path), yield_to_workers=yield_to_workers
    )
    module.check_device()  # a module for another CPU/GPU fails here, clearly, not at first call
    return module
