"""Backends: turning linalg-on-tensors into deployable artifacts (IREE today)."""

from .iree import BackendResult, compile_vmfb

__all__ = ["BackendResult", "compile_vmfb"]
