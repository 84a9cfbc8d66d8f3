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


class SchedModel:
    """Static description of a registered model and its per-executor VM contexts."""

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
    ) -> None:
        self.name = name
        self.priority = float(priority)
        self.deadline = deadline  # default relative deadline of its requests (seconds)
        if weight <= 0:
            raise XGenError(f"model '{name}': weight must be > 0, got {weight}")
        self.weight = float(weight)
        self.max_workers = max_workers
        self._lock = threading.Lock()
        self._free: dict[Any, list[Any]] = {}  # idle VM contexts (invokers) per executor
        self._made = 0
        self.python_fn: Callable[..., Any] | None = None
        self.module: CompiledModule | None = None
        if callable(source) and not isinstance(source, CompiledModule):
            self.python_fn = source  # host code (pre/post-processing) run in a CPU slot
            self.placement = "cpu"
            if placement not in (None, "cpu"):
                raise XGenError(f"model '{name}': a Python callable runs on the cpu only")
            return
        module = load_module(source)
        if module.isolated:
            raise ModuleLoadError(
                f"model '{name}': isolated modules run in a child process the scheduler "
                f"cannot give executors to; load it in-process (isolated=False)"
            )
        self.module = module
        if placement is None:
            placement = "vulkan" if module.device == "vulkan" else "cpu"
        if placement not in PLACEMENTS:
            raise XGenError(
                f"model '{name}': unknown placement '{placement}'; known: {', '.join(PLACEMENTS)}"
            )
        self.placement = placement
        device = "vulkan" if placement == "vulkan" else "local-task"
        from ..targets import check_device, check_vulkan_profile, vulkan_device_names

        check_device(module.vmfb, device, f"model '{name}' ({module.source})")
        if device == "vulkan":
            profile = module.build_info.get("target_options", {}).get("gpu", "")
            check_vulkan_profile(profile, vulkan_device_names(), module.source)
        import iree.runtime as rt

        self._instance = instance
        try:
            self._vm_module = rt.VmModule.copy_buffer(instance, module.vmfb)
            self._fn = self._vm_module.lookup_function(module.entry)
        except Exception as e:
            raise ModuleLoadError(f"model '{name}' ({module.source}): {_short(e)}") from None

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
        concurrent calls, so two requests of one model on one executor get two contexts."""
        with self._lock:
            free = self._free.setdefault(key, [])
            if free:
                return free.pop()
        import iree.runtime as rt

        assert self.module is not None
        mods = [rt.create_hal_module(self._instance, device)]
        if self.module.parameters is not None:
            params = self.module.parameters
            if isinstance(params, bytes):
                params = self.module._parameters_file(params)
                self.module.parameters = params
            index = rt.ParameterIndex()
            index.load(str(params))
            provider = index.create_provider(scope=self.module.parameters_scope)
            mods.append(rt.create_io_parameters_module(self._instance, provider))
        try:
            ctx = rt.VmContext(self._instance, modules=[*mods, self._vm_module])
        except Exception as e:
            raise ModuleLoadError(
                f"model '{self.name}' ({self.module.source}): cannot load it on its device: "
                f"{_short(e)}"
            ) from None
        with self._lock:
            self._made += 1
        return rt.FunctionInvoker(ctx, device, self._fn)

    def run(self, key: Any, device: Any, arrays: Any, as_torch: bool) -> Any:
        """One call on ``device`` (whose executor is ``key``); returns host outputs."""
        if self.python_fn is not None:
            return self.python_fn(*arrays)
        assert self.module is not None
        inv = self._invoker(key, device)
        try:
            results = inv(*arrays)
            outs = results if isinstance(results, (tuple, list)) else (results,)
            host = [to_host(r, device) for r in outs]
        except XGenError:
            raise
        except Exception as e:
            raise ModuleCallError(
                f"model '{self.name}' ({self.module.source}): call of '{self.module.entry}' "
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

    def contexts(self) -> int:
        """VM contexts made so far."""
        with self._lock:
            return self._made
