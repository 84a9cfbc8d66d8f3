// Invalid xgen_sparse IR is rejected with a diagnostic that says what is wrong and where.
// RUN: not xgen-opt %s --split-input-file 2>&1 | FileCheck %s

// IRDL: wrong operand count.
// CHECK: xgen-sparse-invalid.mlir:7:8: error: op expects exactly 4 operands, but got 3
func.func @missing_operand(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>, %b: tensor<1xf32>) -> tensor<1x1x2x2xf32> {
  %0 = "xgen_sparse.pattern_conv2d"(%x, %w, %b) {padding = [0, 0, 0, 0], patterns = [[4]], strides = [1, 1]} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----
// IRDL: an attribute of the wrong kind.
// CHECK: xgen-sparse-invalid.mlir:15:8: error: expected base attribute 'builtin.array' but got 'builtin.integer'
func.func @bad_attr(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>, %b: tensor<1xf32>, %ids: tensor<1x1xi32>) -> tensor<1x1x2x2xf32> {
  %0 = "xgen_sparse.pattern_conv2d"(%x, %w, %b, %ids) {padding = [0, 0, 0, 0], patterns = [[4]], strides = 1} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>, tensor<1xf32>, tensor<1x1xi32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----
// Inconsistent shapes: a 4x4 input with a 3x3 kernel, no padding, gives 2x2, not 3x3.
// CHECK: xgen-sparse-invalid.mlir:25:8: error: 'xgen_sparse.pattern_conv2d' op result shape [1, 1, 3, 3] does not match the convolution's [1, 1, 2, 2]
func.func @bad_shape(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32> {
  %b = arith.constant dense<[0.0]> : tensor<1xf32>
  %ids = arith.constant dense<[[0]]> : tensor<1x1xi32>
  %0 = "xgen_sparse.pattern_conv2d"(%x, %w, %b, %ids) {padding = [0, 0, 0, 0], patterns = [[1, 3, 4, 5]], strides = [1, 1]} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>, tensor<1xf32>, tensor<1x1xi32>) -> tensor<1x1x3x3xf32>
  return %0 : tensor<1x1x3x3xf32>
}

// -----
// Pattern id out of range (the library has 1 pattern).
// CHECK: error: 'xgen_sparse.pattern_conv2d' op pattern id 3 of kernel (filter 0, channel 0) is out of range [-1, 1) (1 such kernels)
func.func @bad_pattern_id(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32> {
  %b = arith.constant dense<[0.0]> : tensor<1xf32>
  %ids = arith.constant dense<[[3]]> : tensor<1x1xi32>
  %0 = "xgen_sparse.pattern_conv2d"(%x, %w, %b, %ids) {padding = [0, 0, 0, 0], patterns = [[1, 3, 4, 5]], strides = [1, 1]} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>, tensor<1xf32>, tensor<1x1xi32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----
// A pattern position outside the 3x3 kernel, and patterns of different sizes.
// CHECK: error: 'xgen_sparse.pattern_conv2d' op all patterns must have the same number of entries, got sizes [2, 4]
// CHECK: error: 'xgen_sparse.pattern_conv2d' op pattern 1 = [4, 9] must list distinct positions in [0, 9)
func.func @bad_library(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32> {
  %b = arith.constant dense<[0.0]> : tensor<1xf32>
  %ids = arith.constant dense<[[0]]> : tensor<1x1xi32>
  %0 = "xgen_sparse.pattern_conv2d"(%x, %w, %b, %ids) {padding = [0, 0, 0, 0], patterns = [[1, 3, 4, 5], [4, 9]], strides = [1, 1]} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>, tensor<1xf32>, tensor<1x1xi32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----
// Weights that do not match their declared pattern: w[0,0,0,0] is outside pattern [1, 3, 4, 5].
// CHECK: error: 'xgen_sparse.pattern_conv2d' op weight[0, 0, 0, 0] = 7 is nonzero outside kernel (filter 0, channel 0)'s pattern 0 (1 such entries)
func.func @weights_off_pattern(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %w = arith.constant dense<[[[[7.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]]]> : tensor<1x1x3x3xf32>
  %b = arith.constant dense<[0.0]> : tensor<1xf32>
  %ids = arith.constant dense<[[0]]> : tensor<1x1xi32>
  %0 = "xgen_sparse.pattern_conv2d"(%x, %w, %b, %ids) {padding = [0, 0, 0, 0], patterns = [[1, 3, 4, 5]], strides = [1, 1]} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>, tensor<1xf32>, tensor<1x1xi32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----
// FKW: a kernel index list entry out of bounds (channel 5 of 1), and a non-permutation filter order.
// CHECK: error: 'xgen_sparse.fkw_conv2d' op filter_order must be a permutation of 0..0
// CHECK: error: 'xgen_sparse.fkw_conv2d' op kernel_channel[0] = 5 is out of bounds for 1 input channels (1 such entries)
func.func @fkw_bad_index(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %w = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %b = arith.constant dense<[0.5]> : tensor<1xf32>
  %order = arith.constant dense<[3]> : tensor<1xi32>
  %gfo = arith.constant dense<[0, 1]> : tensor<2xi32>
  %gko = arith.constant dense<[0, 1]> : tensor<2xi32>
  %chan = arith.constant dense<[5]> : tensor<1xi32>
  %pat = arith.constant dense<[0]> : tensor<1xi32>
  %0 = "xgen_sparse.fkw_conv2d"(%x, %w, %b, %order, %gfo, %gko, %chan, %pat) {kernel_size = [3, 3], padding = [0, 0, 0, 0], patterns = [[1, 3, 4, 5]], strides = [1, 1]} : (tensor<1x1x4x4xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xi32>, tensor<2xi32>, tensor<2xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----
// FKW: compact weights of the wrong length (1 kernel x 4 entries x 1 filter = 4, not 3), and a
// kernel pattern id out of range.
// CHECK: error: 'xgen_sparse.fkw_conv2d' op kernel_pattern[0] = 2 is out of range [0, 1)
func.func @fkw_bad_pattern(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %w = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %b = arith.constant dense<[0.5]> : tensor<1xf32>
  %order = arith.constant dense<[0]> : tensor<1xi32>
  %gfo = arith.constant dense<[0, 1]> : tensor<2xi32>
  %gko = arith.constant dense<[0, 1]> : tensor<2xi32>
  %chan = arith.constant dense<[0]> : tensor<1xi32>
  %pat = arith.constant dense<[2]> : tensor<1xi32>
  %0 = "xgen_sparse.fkw_conv2d"(%x, %w, %b, %order, %gfo, %gko, %chan, %pat) {kernel_size = [3, 3], padding = [0, 0, 0, 0], patterns = [[1, 3, 4, 5]], strides = [1, 1]} : (tensor<1x1x4x4xf32>, tensor<3xf32>, tensor<1xf32>, tensor<1xi32>, tensor<2xi32>, tensor<2xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----
// CHECK: error: 'xgen_sparse.fkw_conv2d' op fkw_weight must hold 4 values (kept kernels x 4 entries x group size), got [3]
func.func @fkw_bad_length(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %w = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %b = arith.constant dense<[0.5]> : tensor<1xf32>
  %order = arith.constant dense<[0]> : tensor<1xi32>
  %gfo = arith.constant dense<[0, 1]> : tensor<2xi32>
  %gko = arith.constant dense<[0, 1]> : tensor<2xi32>
  %chan = arith.constant dense<[0]> : tensor<1xi32>
  %pat = arith.constant dense<[0]> : tensor<1xi32>
  %0 = "xgen_sparse.fkw_conv2d"(%x, %w, %b, %order, %gfo, %gko, %chan, %pat) {kernel_size = [3, 3], padding = [0, 0, 0, 0], patterns = [[1, 3, 4, 5]], strides = [1, 1]} : (tensor<1x1x4x4xf32>, tensor<3xf32>, tensor<1xf32>, tensor<1xi32>, tensor<2xi32>, tensor<2xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}
