// RUN: xgen-opt %s -p "xgen-bcsr-compact,xgen-verify-sparse" | FileCheck %s
// RUN: xgen-opt %s -p "xgen-lower-block-to-linalg" | FileCheck %s --check-prefix=DENSE

// 4x8 weights in 2x4 blocks: block (0, 0) keeps row 1 x columns 1, 2; block (0, 1) row 0 x
// column 5; block-row 1 keeps row 2 x columns 1, 2; blocks with no nonzero are not listed.
// CHECK-LABEL: func.func @compact
// CHECK-DAG: %[[V:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00, 5.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<5xf32>
// CHECK-DAG: dense<[0, 2, 3]> : tensor<3xi32>
// CHECK-DAG: dense<[1, 0, 2]> : tensor<3xi32>
// CHECK-DAG: dense<[1, 2, 5, 1, 2]> : tensor<5xi32>
// CHECK: "xgen_sparse.bcsr_linear"(%arg0, %[[V]], %{{.*}}) {block = [2, 4], weight_shape = [4, 8]}
// CHECK-NOT: block_linear
// The dense reference: a matmul against the transposed weights on the bias broadcast.
// DENSE: linalg.broadcast
// DENSE: linalg.matmul
// DENSE-NOT: xgen_sparse
func.func @compact(%x: tensor<3x8xf32>) -> tensor<3x4xf32> {
  %w = arith.constant dense<[[0.0, 0.0, 0.0, 0.0, 0.0, 5.0, 0.0, 0.0], [0.0, 1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 3.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]> : tensor<4x8xf32>
  %b = arith.constant dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %y = "xgen_sparse.block_linear"(%x, %w, %b) {block = [2, 4]} : (tensor<3x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}
