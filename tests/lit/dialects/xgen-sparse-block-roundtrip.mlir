// Valid block-sparse ops parse, pass the semantic verifier and print back unchanged.
// RUN: xgen-opt %s -p xgen-verify-sparse | FileCheck %s
// RUN: xgen-opt %s -p xgen-verify-sparse | xgen-opt - -p xgen-verify-sparse | FileCheck %s

// CHECK-LABEL: func.func @block
// CHECK: "xgen_sparse.block_linear"(%arg0, %arg1, %arg2) {block = [2, 4]} : (tensor<3x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<3x4xf32>
func.func @block(%x: tensor<3x8xf32>, %w: tensor<4x8xf32>, %b: tensor<4xf32>) -> tensor<3x4xf32> {
  %0 = "xgen_sparse.block_linear"(%x, %w, %b) {block = [2, 4]} : (tensor<3x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// CHECK-LABEL: func.func @compact
// CHECK: "xgen_sparse.bcsr_linear"(%arg0, %{{.*}}) {block = [2, 4], weight_shape = [4, 8]}
func.func @compact(%x: tensor<3x8xf32>, %b: tensor<4xf32>) -> tensor<3x4xf32> {
  %v = arith.constant dense<[1.0, 2.0, 5.0, 3.0, 4.0]> : tensor<5xf32>
  %bo = arith.constant dense<[0, 2, 3]> : tensor<3xi32>
  %ro = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
  %co = arith.constant dense<[0, 2, 3, 5]> : tensor<4xi32>
  %kr = arith.constant dense<[1, 0, 2]> : tensor<3xi32>
  %kc = arith.constant dense<[1, 2, 5, 1, 2]> : tensor<5xi32>
  %y = "xgen_sparse.bcsr_linear"(%x, %v, %b, %bo, %ro, %co, %kr, %kc) {block = [2, 4], weight_shape = [4, 8]} : (tensor<3x8xf32>, tensor<5xf32>, tensor<4xf32>, tensor<3xi32>, tensor<4xi32>, tensor<4xi32>, tensor<3xi32>, tensor<5xi32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}
