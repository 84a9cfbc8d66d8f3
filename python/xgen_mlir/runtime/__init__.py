"""Running compiled modules from Python (IREE's runtime)."""

from .bundle import load_bundle
from .module import BenchmarkStats, CompiledModule, latency_stats, load
from .scheduler import Scheduler, TaskGraph

__all__ = [
    "BenchmarkStats",
    "CompiledModule",
    "Scheduler",
    "TaskGraph",
    "latency_stats",
    "load",
    "load_bundle",
]
