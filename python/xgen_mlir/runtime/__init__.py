"""Running compiled modules from Python (IREE's runtime)."""

from .module import BenchmarkStats, CompiledModule, latency_stats, load

__all__ = ["BenchmarkStats", "CompiledModule", "latency_stats", "load"]
