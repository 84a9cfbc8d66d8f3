// Invalid block-sparse xgen_sparse IR is rejected with a diagnostic that says what and where.
// RUN: not xgen-opt %s --split-input-file 2>&1 | FileCheck %s

// IRDL: wrong operand count.
// CHECK: xgen-sparse-block-invalid.mlir:7:8: error: op expects exactly 3 operands, but got 2
func.func @missing_bias(%x: tensor<3x8xf32>, %w: tensor<4x8xf32>) -> tensor<3x4xf32> {
  %0 = "xgen_sparse.block_linear"(%x, %w) {block = [2, 4]} : (tensor<3x8xf32>, tensor<4x8xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----
// Shapes: a bias of the wrong length.
// CHECK: error: 'xgen_sparse.block_linear' op bias shape [5] must be [4]
func.func @bad_bias(%x: tensor<3x8xf32>, %w: tensor<4x8xf32>, %b: tensor<5xf32>) -> tensor<3x4xf32> {
  %0 = "xgen_sparse.block_linear"(%x, %w, %b) {block = [2, 4]} : (tensor<3x8xf32>, tensor<4x8xf32>, tensor<5xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----
// A block of zero columns.
// CHECK: error: 'xgen_sparse.block_linear' op block must be two positive sizes [rows, cols], got [2, 0]
func.func @bad_block(%x: tensor<3x8xf32>, %w: tensor<4x8xf32>, %b: tensor<4xf32>) -> tensor<3x4xf32> {
  %0 = "xgen_sparse.block_linear"(%x, %w, %b) {block = [2, 0]} : (tensor<3x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----
// A kept row outside its block-row (row 3 listed in block-row 0 of 2-row blocks).
// CHECK: error: 'xgen_sparse.bcsr_linear' op block 0 (block-row 0): kept rows [3] must rise strictly inside [0, 2)
func.func @row_outside(%x: tensor<3x8xf32>, %b: tensor<4xf32>) -> tensor<3x4xf32> {
  %v = arith.constant dense<[1.0, 2.0, 5.0, 3.0, 4.0]> : tensor<5xf32>
  %bo = arith.constant dense<[0, 2, 3]> : tensor<3xi32>
  %ro = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
  %co = arith.constant dense<[0, 2, 3, 5]> : tensor<4xi32>
  %kr = arith.constant dense<[3, 0, 2]> : tensor<3xi32>
  %kc = arith.constant dense<[1, 2, 5, 1, 2]> : tensor<5xi32>
  %y = "xgen_sparse.bcsr_linear"(%x, %v, %b, %bo, %ro, %co, %kr, %kc) {block = [2, 4], weight_shape = [4, 8]} : (tensor<3x8xf32>, tensor<5xf32>, tensor<4xf32>, tensor<3xi32>, tensor<4xi32>, tensor<4xi32>, tensor<3xi32>, tensor<5xi32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// -----
// Kept columns spanning two column tiles (3 and 5 with 4-column blocks).
// CHECK: error: 'xgen_sparse.bcsr_linear' op block 0 (block-row 0): kept columns [3, 5] must lie in one 4-column tile, after the previous block's
func.func @cols_span(%x: tensor<3x8xf32>, %b: tensor<4xf32>) -> tensor<3x4xf32> {
  %v = arith.constant dense<[1.0, 2.0, 5.0, 3.0, 4.0]> : tensor<5xf32>
  %bo = arith.constant dense<[0, 2, 3]> : tensor<3xi32>
  %ro = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
  %co = arith.constant dense<[0, 2, 3, 5]> : tensor<4xi32>
  %kr = arith.constant dense<[1, 0, 2]> : tensor<3xi32>
  %kc = arith.constant dense<[3, 5, 6, 1, 2]> : tensor<5xi32>
  %y = "xgen_sparse.bcsr_linear"(%x, %v, %b, %bo, %ro, %co, %kr, %kc) {block = [2, 4], weight_shape = [4, 8]} : (tensor<3x8xf32>, tensor<5xf32>, tensor<4xf32>, tensor<3xi32>, tensor<4xi32>, tensor<4xi32>, tensor<3xi32>, tensor<5xi32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// -----
// Values that do not hold kept rows x kept columns of every block.
// CHECK: error: 'xgen_sparse.bcsr_linear' op values must hold 5 entries (kept rows x kept columns per block), got [4]
func.func @short_values(%x: tensor<3x8xf32>, %b: tensor<4xf32>) -> tensor<3x4xf32> {
  %v = arith.constant dense<[1.0, 2.0, 5.0, 3.0]> : tensor<4xf32>
  %bo = arith.constant dense<[0, 2, 3]> : tensor<3xi32>
  %ro = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
  %co = arith.constant dense<[0, 2, 3, 5]> : tensor<4xi32>
  %kr = arith.constant dense<[1, 0, 2]> : tensor<3xi32>
  %kc = arith.constant dense<[1, 2, 5, 1, 2]> : tensor<5xi32>
  %y = "xgen_sparse.bcsr_linear"(%x, %v, %b, %bo, %ro, %co, %kr, %kc) {block = [2, 4], weight_shape = [4, 8]} : (tensor<3x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xi32>, tensor<4xi32>, tensor<4xi32>, tensor<3xi32>, tensor<5xi32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// -----
// Offsets that do not rise to the table's length, and a listed block with no column.
// CHECK: error: 'xgen_sparse.bcsr_linear' op block_offsets must rise from 0 to 3
func.func @bad_offsets(%x: tensor<3x8xf32>, %b: tensor<4xf32>) -> tensor<3x4xf32> {
  %v = arith.constant dense<[1.0, 2.0, 5.0, 3.0, 4.0]> : tensor<5xf32>
  %bo = arith.constant dense<[0, 2, 2]> : tensor<3xi32>
  %ro = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
  %co = arith.constant dense<[0, 2, 3, 5]> : tensor<4xi32>
  %kr = arith.constant dense<[1, 0, 2]> : tensor<3xi32>
  %kc = arith.constant dense<[1, 2, 5, 1, 2]> : tensor<5xi32>
  %y = "xgen_sparse.bcsr_linear"(%x, %v, %b, %bo, %ro, %co, %kr, %kc) {block = [2, 4], weight_shape = [4, 8]} : (tensor<3x8xf32>, tensor<5xf32>, tensor<4xf32>, tensor<3xi32>, tensor<4xi32>, tensor<4xi32>, tensor<3xi32>, tensor<5xi32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}
