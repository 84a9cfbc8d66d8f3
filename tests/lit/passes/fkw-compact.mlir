// RUN: xgen-opt %s --split-input-file -p "xgen-fkw-compact{group-size=16},canonicalize" | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p "xgen-fkw-compact{group-size=1},canonicalize" | FileCheck %s --check-prefix=G1
// RUN: not xgen-opt %s -p "xgen-fkw-compact{group-size=0}" 2>&1 | FileCheck %s --check-prefix=BAD

// Filters 0 and 2 share a layout (pattern 0 on channel 0, pattern 1 on channel 1), filters 1
// and 3 another (pattern 1 on channel 0 only): two groups, kernels listed per group by
// pattern, weights packed tap-major / filter-minor (1.46 = w[0,0,0,1], 1.32 = w[2,0,0,1], ...).
// CHECK-LABEL: func.func @two_layouts
// CHECK-DAG: dense<[1.460000e+00, 1.320000e+00, 0.899999976, 1.900000e+00, {{.*}}]> : tensor<24xf32>
// CHECK-DAG: %[[ORDER:.*]] = arith.constant dense<[0, 2, 1, 3]> : tensor<4xi32>
// CHECK-DAG: %[[GFO:.*]] = arith.constant dense<[0, 2, 4]> : tensor<3xi32>
// CHECK-DAG: %[[GKO:.*]] = arith.constant dense<[0, 2, 3]> : tensor<3xi32>
// CHECK-DAG: %[[CHAN:.*]] = arith.constant dense<[0, 1, 0]> : tensor<3xi32>
// CHECK-DAG: %[[PAT:.*]] = arith.constant dense<[0, 1, 1]> : tensor<3xi32>
// CHECK: "xgen_sparse.fkw_conv2d"(%arg0, %{{.*}}, %{{.*}}, %[[ORDER]], %[[GFO]], %[[GKO]], %[[CHAN]], %[[PAT]]) {kernel_size = [3, 3], padding = [1, 1, 1, 1], patterns = {{\[\[}}1, 3, 4, 5], [0, 1, 4, 7]], strides = [1, 1]}
// CHECK-NOT: xgen_sparse.pattern_conv2d
// With groups of one filter, every filter is its own group.
// G1: arith.constant dense<[0, 1, 2, 3, 4]> : tensor<5xi32>
// G1: "xgen_sparse.fkw_conv2d"
// BAD: xgen-fkw-compact: group-size must be >= 1, got 0
func.func @two_layouts(%arg0: tensor<1x2x6x6xf32>) -> tensor<1x4x6x6xf32> {
  %ids = arith.constant dense<[[0, 1], [1, -1], [0, 1], [1, -1]]> : tensor<4x2xi32>
  %w = arith.constant dense<[[[[0.0, 1.46, 0.0], [0.9, 0.56, 0.52], [0.0, 0.0, 0.0]], [[1.72, 1.87, 0.0], [0.0, 1.41, 0.0], [0.0, 1.59, 0.0]]], [[[1.79, 1.31, 0.0], [0.0, 0.95, 0.0], [0.0, 1.13, 0.0]], [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]], [[[0.0, 1.32, 0.0], [1.9, 1.72, 0.5], [0.0, 0.0, 0.0]], [[1.79, 0.55, 0.0], [0.0, 1.59, 0.0], [0.0, 0.76, 0.0]]], [[[0.54, 0.69, 0.0], [0.0, 1.51, 0.0], [0.0, 1.47, 0.0]], [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]]]> : tensor<4x2x3x3xf32>
  %b = arith.constant dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %0 = "xgen_sparse.pattern_conv2d"(%arg0, %w, %b, %ids) {padding = [1, 1, 1, 1], patterns = [[1, 3, 4, 5], [0, 1, 4, 7]], strides = [1, 1]} : (tensor<1x2x6x6xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>, tensor<4x2xi32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----
// Must not fire: non-constant weights stay in pattern form (lowered densely later).
// CHECK-LABEL: func.func @runtime_weights
// CHECK: xgen_sparse.pattern_conv2d
// CHECK-NOT: xgen_sparse.fkw_conv2d
func.func @runtime_weights(%arg0: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32> {
  %ids = arith.constant dense<[[0]]> : tensor<1x1xi32>
  %b = arith.constant dense<[0.0]> : tensor<1xf32>
  %0 = "xgen_sparse.pattern_conv2d"(%arg0, %w, %b, %ids) {padding = [0, 0, 0, 0], patterns = [[1, 3, 4, 5]], strides = [1, 1]} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>, tensor<1xf32>, tensor<1x1xi32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}
