"""Backends: turning linalg-on-tensors into deployable artifacts (IREE today)."""

from .iree import BackendResult, compile_outputs, compile_vmfb

__all__ = ["BackendResult", "compile_outputs", "compile_vmfb"]
