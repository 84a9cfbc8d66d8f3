"""Importing this module registers every built-in xgen pass (one module per pass)."""

from . import fold_transpose_pairs, op_stats, set_entry_point, verify_iree_input  # noqa: F401
