"""A model the scheduler runs: one parsed IREE module, one VM context per executor it ran on.

The module's bytes are parsed once (one ``VmModule`` in the scheduler's ``VmInstance``); each
executor (CPU worker count and band, or the Vulkan device) gets its own HAL module and
``VmContext`` over it, made on first use and reused, so switching a model between worker
shares costs nothing after the first call on each.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ModuleCallError, ModuleLoadError, XGenError
from ..module import CompiledModule, _short, _to_numpy, to_host

PLACEMENTS = ("cpu", "vulkan")


def load_module(source: Any) -> CompiledModule:
    """A CompiledModule, a ``.vmfb`` path, or a bundle folder -> CompiledModule."""
    if isinstance(source, CompiledModule):
        return source
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_dir():
            from ..bundle import load_bundle

            return load_bundle(path)
        from ..module import load

        return load(path)
    raise ModuleLoadError(
        f"a scheduler model is a CompiledModule, a .vmfb path, a bundle folder or a Python "
        f"callable; got {type(source).__name__}"
    )


class _Build:
    """One build of a model for one lane (``cpu`` or ``vulkan``): its parsed module."""

    def __init__(self, module: CompiledModule, vm_module: Any, fn: Any) -> None:
        self.module, self.vm_module, self.fn = module, vm_module, fn


def _lane_of(module: CompiledModule) -> str:
    return "vulkan" if module.device == "vulkan" else "cpu"


def _signature_text(module: CompiledModule) -> str:
    sig = module.signature
    return "?" if sig is None else ", ".join(s.describe() for s in sig.inputs)


class SchedModel:
    """Static description of a registered model and its per-executor VM contexts.

    ``source`` is one module (placement ``cpu`` or ``vulkan``) or a list of builds of the same
    model for different devices (a CPU and a Vulkan build: placement ``auto``, the scheduler
    picks a device per request; docs/scheduler.md, Placement)."""

    def __init__(
        self,
        name: str,
        source: Any,
        *,
        priority: float,
        deadline: float | None,
        weight: float,
        placement: str | None,
        max_workers: int | None,
        instance: Any,
        slack: float | None = None,
    ) -> None:
        self.name = name
        self.priority = float(priority)
        self.deadline = deadline  # default relative deadline of its requests (seconds)
        if slack is not None and not slack >= 0:
            raise XGenError(f"model '{name}': slack must be >= 0 seconds, got {slack}")
        self.slack = slack  # EDF: implicit deadline of its requests that have none
        if weight <= 0:
            raise XGenError(f"model '{name}': weight must be > 0, got {weight}")
        self.weight = float(weight)
        self.max_workers = max_workers
        self._lock = threading.Lock()
        self._free: dict[Any, list[Any]] = {}  # idle VM contexts (invokers) per executor
        self._made = 0
        self.python_fn: Callable[..., Any] | None = None
        self.module: CompiledModule | None = None
        self.builds: dict[str, _Build] = {}
        if placement is not None and placement not in (*PLACEMENTS, "auto"):
            raise XGenError(
                f"model '{name}': unknown placement '{placement}'; known: "
                f"{', '.join((*PLACEMENTS, 'auto'))}"
            )
        if callable(source) and not isinstance(source, CompiledModule):
            self.python_fn = source  # host code (pre/post-processing) run in a CPU slot
            self.placement = "cpu"
            self.lanes: tuple[str, ...] = ("cpu",)
            if placement not in (None, "cpu"):
                raise XGenError(f"model '{name}': a Python callable runs on the cpu only")
            return
        sources = list(source) if isinstance(source, (list, tuple)) else [source]
        if not sources:
            raise ModuleLoadError(f"model '{name}': an empty list of builds")
        modules = [load_module(s) for s in sources]
        for module in modules:
            if module.isolated:
                raise ModuleLoadError(
                    f"model '{name}': isolated modules run in a child process the scheduler "
                    f"cannot give executors to; load it in-process (isolated=False)"
                )
        chosen = self._choose_builds(name, modules, placement)
        import iree.runtime as rt

        from ..targets import check_device, check_vulkan_profile, vulkan_device_names

        self._instance = instance
        for lane, module in chosen.items():
            device = "vulkan" if lane == "vulkan" else "local-task"
            check_device(module.vmfb, device, f"model '{name}' ({module.source})")
            if device == "vulkan":
                profile = module.build_info.get("target_options", {}).get("gpu", "")
                check_vulkan_profile(profile, vulkan_device_names(), module.source)
            try:
                vm_module = rt.VmModule.copy_buffer(instance, module.vmfb)
                fn = vm_module.lookup_function(module.entry)
            except Exception as e:
                raise ModuleLoadError(f"model '{name}' ({module.source}): {_short(e)}") from None
            self.builds[lane] = _Build(module, vm_module, fn)
        self.lanes = tuple(lane for lane in PLACEMENTS if lane in self.builds)
        self.placement = "auto" if len(self.lanes) > 1 else self.lanes[0]
        self.module = self.builds[self.lanes[0]].module  # signature, random inputs

    @staticmethod
    def _choose_builds(
        name: str, modules: list[CompiledModule], placement: str | None
    ) -> dict[str, CompiledModule]:
        """The build per lane: one module runs where ``placement`` says (default: its own
        device; a module placed on a device it cannot run is refused by check_device); several
        are told apart by their devices, and ``auto`` needs a CPU and a Vulkan one."""
        if len(modules) == 1:
            if placement == "auto":
                raise XGenError(
                    f"model '{name}': placement 'auto' needs a CPU and a Vulkan build; "
                    f"pass both, e.g. add_model('{name}', [cpu_module, vulkan_module], "
                    f"placement='auto')"
                )
            return {placement or _lane_of(modules[0]): modules[0]}
        by_lane: dict[str, CompiledModule] = {}
        for module in modules:
            lane = _lane_of(module)
            if lane in by_lane:
                raise XGenError(
                    f"model '{name}': two builds for the {lane} ({by_lane[lane].source} and "
                    f"{module.source}); give one CPU and one Vulkan build"
                )
            by_lane[lane] = module
        if placement in PLACEMENTS:
            if placement not in by_lane:
                raise XGenError(
                    f"model '{name}': placement '{placement}' but none of its builds is for "
                    f"the {placement}"
                )
            return {placement: by_lane[placement]}
        first, *rest = by_lane.values()
        for other in rest:
            if _signature_text(other) != _signature_text(first):
                raise XGenError(
                    f"model '{name}': its builds take different inputs: "
                    f"({_signature_text(first)}) in {first.source}, "
                    f"({_signature_text(other)}) in {other.source}"
                )
        return by_lane

    # -- inputs ------------------------------------------------------------------------------
    def prepare(self, inputs: tuple[Any, ...]) -> tuple[list[np.ndarray] | tuple[Any, ...], bool]:
        """Check inputs against the module's signature now, at submit (not inside a worker)."""
        if self.module is None:
            return inputs, False
        as_torch = any(type(x).__module__.startswith("torch") for x in inputs)
        arrays = [_to_numpy(x, i) for i, x in enumerate(inputs)]
        self.module._check_inputs(arrays)
        return arrays, as_torch

    # -- running -----------------------------------------------------------------------------
    def _invoker(self, key: Any, device: Any) -> Any:
        """A VM context on ``device`` that no other call is using: a context is not for
        concurrent calls, so two requests of one model on one executor get two contexts.
        ``key`` is ``"vulkan"`` (the Vulkan build) or a CPU executor's (workers, band)."""
        with self._lock:
            free = self._free.setdefault(key, [])
            if free:
                return free.pop()
        import iree.runtime as rt

        build = self.builds["vulkan" if key == "vulkan" else "cpu"]
        module = build.module
        mods = [rt.create_hal_module(self._instance, device)]
        if module.parameters is not None:
            params = module.parameters
            if isinstance(params, bytes):
                params = module._parameters_file(params)
                module.parameters = params
            index = rt.ParameterIndex()
            index.load(str(params))
            provider = index.create_provider(scope=module.parameters_scope)
            mods.append(rt.create_io_parameters_module(self._instance, provider))
        try:
            ctx = rt.VmContext(self._instance, modules=[*mods, build.vm_module])
        except Exception as e:
            raise ModuleLoadError(
                f"model '{self.name}' ({module.source}): cannot load it on its device: {_short(e)}"
            ) from None
        with self._lock:
            self._made += 1
        return rt.FunctionInvoker(ctx, device, build.fn)

    def run(self, key: Any, device: Any, arrays: Any, as_torch: bool) -> Any:
        """One call on ``device`` (whose executor is ``key``); returns host outputs."""
        if self.python_fn is not None:
            return self.python_fn(*arrays)
        inv = self._invoker(key, device)
        module = self.builds["vulkan" if key == "vulkan" else "cpu"].module
        try:
            results = inv(*arrays)
            outs = results if isinstance(results, (tuple, list)) else (results,)
            host = [to_host(r, device) for r in outs]
        except XGenError:
            raise
        except Exception as e:
            raise ModuleCallError(
                f"model '{self.name}' ({module.source}): call of '{module.entry}' "
                f"failed in IREE's runtime: {_short(e)}"
            ) from None
        finally:
            with self._lock:
                self._free[key].append(inv)
        if as_torch:
            from ...dtypes import to_torch

            tensors = [to_torch(h) for h in host]
            return tensors[0] if len(tensors) == 1 else tuple(tensors)
        return host[0] if len(host) == 1 else tuple(host)

    def release(self, key: Any) -> None:
        """Drop the idle VM contexts of executor ``key`` (their device can then be freed)."""
        with self._lock:
            self._free.pop(key, None)

    def contexts(self) -> int:
        """VM contexts made so far."""
        with self._lock:
            return self._made
