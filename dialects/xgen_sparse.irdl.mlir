// The xgen_sparse dialect: pattern-pruned convolutions carried through the compiler.
//
// Structure (operand/result/attribute kinds) is declared here in IRDL and checked by MLIR at
// parse/verify time. The semantic rules IRDL cannot state (shapes agree, pattern ids in range,
// index lists in bounds, weights zero outside their patterns) are checked by
// python/xgen_mlir/dialects/sparse_verify.py. The readable op reference is xgen_sparse.md.
irdl.dialect @xgen_sparse {
  // A convolution whose constant weights are pattern-pruned: every kernel W[f, c] is either
  // removed (all zero) or nonzero only on one pattern of the `patterns` library.
  irdl.operation @pattern_conv2d {
    %input = irdl.base "!builtin.tensor"
    %weight = irdl.base "!builtin.tensor"
    %bias = irdl.base "!builtin.tensor"
    %kernel_pattern = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %strides = irdl.base "#builtin.array"
    %padding = irdl.base "#builtin.array"
    %patterns = irdl.base "#builtin.array"
    irdl.operands(input: %input, weight: %weight, bias: %bias, kernel_pattern: %kernel_pattern)
    irdl.attributes {"strides" = %strides, "padding" = %padding, "patterns" = %patterns}
    irdl.results(output: %output)
  }

  // The same convolution in compact FKW storage: filters reordered into groups that share one
  // kernel layout, each group's kept kernels listed by input channel (sorted by pattern), and
  // only the pattern entries of the kept kernels stored.
  irdl.operation @fkw_conv2d {
    %input = irdl.base "!builtin.tensor"
    %fkw_weight = irdl.base "!builtin.tensor"
    %bias = irdl.base "!builtin.tensor"
    %filter_order = irdl.base "!builtin.tensor"
    %group_filter_offsets = irdl.base "!builtin.tensor"
    %group_kernel_offsets = irdl.base "!builtin.tensor"
    %kernel_channel = irdl.base "!builtin.tensor"
    %kernel_pattern = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %strides = irdl.base "#builtin.array"
    %padding = irdl.base "#builtin.array"
    %patterns = irdl.base "#builtin.array"
    %kernel_size = irdl.base "#builtin.array"
    irdl.operands(input: %input, fkw_weight: %fkw_weight, bias: %bias,
                  filter_order: %filter_order, group_filter_offsets: %group_filter_offsets,
                  group_kernel_offsets: %group_kernel_offsets, kernel_channel: %kernel_channel,
                  kernel_pattern: %kernel_pattern)
    irdl.attributes {"strides" = %strides, "padding" = %padding, "patterns" = %patterns,
                     "kernel_size" = %kernel_size}
    irdl.results(output: %output)
  }

  // A linear layer y = x W^T + bias (x: MxK, W: NxK, y: MxN) whose constant weights are
  // block-pruned: in each `block` = [rows, cols] tile of W, the nonzeros lie on kept rows x
  // kept columns (compress/blocks.py). Dense weights, zeros included.
  irdl.operation @block_linear {
    %input = irdl.base "!builtin.tensor"
    %weight = irdl.base "!builtin.tensor"
    %bias = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %block = irdl.base "#builtin.array"
    irdl.operands(input: %input, weight: %weight, bias: %bias)
    irdl.attributes {"block" = %block}
    irdl.results(output: %output)
  }

  // The same layer in compact block storage: per block-row the list of its non-empty blocks,
  // per block its kept rows and columns (absolute indices), and only the kept rows x kept
  // columns values, column by column.
  irdl.operation @bcsr_linear {
    %input = irdl.base "!builtin.tensor"
    %values = irdl.base "!builtin.tensor"
    %bias = irdl.base "!builtin.tensor"
    %block_offsets = irdl.base "!builtin.tensor"
    %row_offsets = irdl.base "!builtin.tensor"
    %col_offsets = irdl.base "!builtin.tensor"
    %kept_rows = irdl.base "!builtin.tensor"
    %kept_cols = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %block = irdl.base "#builtin.array"
    %weight_shape = irdl.base "#builtin.array"
    irdl.operands(input: %input, values: %values, bias: %bias, block_offsets: %block_offsets,
                  row_offsets: %row_offsets, col_offsets: %col_offsets,
                  kept_rows: %kept_rows, kept_cols: %kept_cols)
    irdl.attributes {"block" = %block, "weight_shape" = %weight_shape}
    irdl.results(output: %output)
  }
}
