// An analysis: prints counts to stderr, leaves the IR unchanged.
// RUN: xgen-opt %s -p xgen-op-stats 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=STATS < %t.err

// CHECK: linalg.matmul
// STATS: xgen-op-stats: 3 ops
// STATS-DAG: 2 linalg.matmul
// STATS-DAG: 1 tensor.empty
func.func @f(%a: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %e = tensor.empty() : tensor<2x2xf32>
  %r = linalg.matmul ins(%a, %a : tensor<2x2xf32>, tensor<2x2xf32>) outs(%e : tensor<2x2xf32>) -> tensor<2x2xf32>
  %s = linalg.matmul ins(%r, %a : tensor<2x2xf32>, tensor<2x2xf32>) outs(%e : tensor<2x2xf32>) -> tensor<2x2xf32>
  return %s : tensor<2x2xf32>
}
