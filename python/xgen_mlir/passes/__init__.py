"""xgen_mlir's passes: the registry and the built-in Python passes / rewrite patterns."""

from .registry import (
    PassFailure,
    PassInfo,
    build_pass_manager,
    get_pass,
    register_pass,
    register_patterns,
    registered_passes,
)

__all__ = [
    "PassFailure",
    "PassInfo",
    "build_pass_manager",
    "get_pass",
    "register_pass",
    "register_patterns",
    "registered_passes",
]
