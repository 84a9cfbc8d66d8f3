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
from .signature import Signature, parse_declaration

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
        statistics.median(ms), statistics.fmean(ms), ms[0], ms[-1], p90,
        statistics.pstdev(ms) if len(ms) > 1 else 0.0, len(ms),
    )  # fmt: skip


class CompiledModule:
    """A compiled model: ``module(*inputs)``, ``.save(path)``, ``.benchmark()``."""

    def __init__(self, vmfb: bytes, *, entry: str = "main", device: str | None = None,
                 target: str = "cpu", source: str = "<memory>") -> None:  # fmt: skip
        import iree.runtime as rt

        self.vmfb, self.entry, self.target, self.source = vmfb, entry, target, source
        self.device = device or "local-task"
        if self.device not in DEVICES:
            raise UnknownNameError("device", self.device, list(DEVICES))
        try:
            self._config = rt.Config(self.device)
        except Exception as e:
            raise ModuleLoadError(f"device '{self.device}' is not available here: {e}") from None
        self._ctx = rt.SystemContext(config=self._config)
        try:
            vm_module = rt.VmModule.copy_buffer(self._ctx.instance, vmfb)
        except (ValueError, RuntimeError) as e:
            raise ModuleLoadError(f"{source}: not a valid IREE module (.vmfb): {e}") from None
        if entry not in vm_module.function_names:
            public = [f for f in vm_module.function_names if not f.startswith("__")]
            raise ModuleLoadError(f"{source}: no entry function '{entry}'; functions: {public}")
        try:
            self._ctx.add_vm_module(vm_module)
        except (ValueError, RuntimeError) as e:
            raise ModuleLoadError(
                f"{source}: cannot load on device '{self.device}' (was it compiled for another "
                f"target?): {e}"
            ) from None
        self._fn = self._ctx.modules[vm_module.name][entry]
        decl = vm_module.lookup_function(entry).reflection.get("iree.abi.declaration", "")
        self.signature: Signature | None = parse_declaration(decl)

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
        results = self._fn(*arrays)
        outs = results if isinstance(results, (tuple, list)) else (results,)
        host = [np.array(r.to_host()) for r in outs]  # own the memory, not a device mapping
        if as_torch:
            import torch

            host = [torch.from_numpy(h) for h in host]
        return host[0] if len(host) == 1 else tuple(host)

    # -- saving / benchmarking -------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the ``.vmfb``; ``iree-run-module --module=PATH --function=<entry>`` runs it."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.vmfb)
        return path

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
        for _ in range(warmup):
            _block(self._fn(*arrays))
        samples = []
        for _ in range(runs):
            t0 = time.perf_counter()
            _block(self._fn(*arrays))
            samples.append(time.perf_counter() - t0)
        return latency_stats(samples)

    def dispatch_count(self) -> int:
        """Kernel launches per call recorded in the module (fewer usually means more fusion)."""
        from .inspect import dispatch_count

        return dispatch_count(self.vmfb)

    def __repr__(self) -> str:
        sig = self.signature
        ins = ", ".join(s.describe() for s in sig.inputs) if sig else "?"
        return f"<CompiledModule {self.entry}({ins}) target={self.target} device={self.device}>"


def _block(results: Any) -> None:
    """Wait for the results to be computed (local-task runs asynchronously)."""
    outs = results if isinstance(results, (tuple, list)) else (results,)
    for r in outs:
        r.to_host()


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
    path: str | os.PathLike[str], device: str | None = None, entry: str = "main"
) -> CompiledModule:
    """Load a ``.vmfb`` written by ``CompiledModule.save`` (or by ``xgen-compile``)."""
    path = Path(path)
    if not path.is_file():
        raise ModuleLoadError(f"{path}: no such file")
    data = path.read_bytes()
    if len(data) < 64:
        raise ModuleLoadError(f"{path}: too small to be an IREE module ({len(data)} bytes)")
    return CompiledModule(data, entry=entry, device=device, source=str(path))
