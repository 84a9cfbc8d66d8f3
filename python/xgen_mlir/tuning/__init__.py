"""Autotuning on the target: search, measurement, cost model, the tuning loop (docs/tuning.md)."""
