// The cpu pipeline's own passes on small IR: entry renamed, transposes folded, verified.
// RUN: xgen-opt %s --pipeline=cpu | FileCheck %s
// RUN: xgen-opt %s --pipeline=cpu --entry=forward | FileCheck %s --check-prefix=ENTRY

// CHECK-LABEL: func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: return %arg0
// ENTRY-LABEL: func.func @forward(
func.func @my_graph(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e0 = tensor.empty() : tensor<3x2xf32>
  %t0 = linalg.transpose ins(%x : tensor<2x3xf32>) outs(%e0 : tensor<3x2xf32>) permutation = [1, 0]
  %e1 = tensor.empty() : tensor<2x3xf32>
  %t1 = linalg.transpose ins(%t0 : tensor<3x2xf32>) outs(%e1 : tensor<2x3xf32>) permutation = [1, 0]
  return %t1 : tensor<2x3xf32>
}
