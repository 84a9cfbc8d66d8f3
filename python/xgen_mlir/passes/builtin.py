"""Importing this module registers every built-in xgen pass (one module per pass)."""

from . import (  # noqa: F401
    algebraic_simplify,
    cancel_reshapes,
    fkw_compact,
    fold_batchnorm,
    fold_transpose_pairs,
    fuse_gather_views,
    fusion_passes,
    lower_fkw_kernels,
    lower_sparse_linalg,
    merge_sibling_matmuls,
    merge_sibling_transposes,
    nhwc_convs,
    op_stats,
    raise_pattern_conv,
    scale_to_weights,
    set_entry_point,
    split_reductions,
    verify_iree_input,
    verify_sparse,
    winograd_convs,
)
