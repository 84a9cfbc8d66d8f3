// Both xgen_sparse ops parse, verify (IRDL + semantic rules) and print back unchanged.
// RUN: xgen-opt %s --split-input-file | FileCheck %s
// RUN: xgen-opt %s --split-input-file | xgen-opt --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @pattern
// CHECK: "xgen_sparse.pattern_conv2d"(%arg0, %{{.*}}, %{{.*}}, %{{.*}}) {padding = [1, 1, 1, 1], patterns = {{\[\[}}1, 3, 4, 5]], strides = [2, 2]} : (tensor<1x1x4x4xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>, tensor<2x1xi32>) -> tensor<1x2x2x2xf32>
func.func @pattern(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x2x2xf32> {
  %w = arith.constant dense<[[[[0.0, 1.0, 0.0], [2.0, 3.0, 4.0], [0.0, 0.0, 0.0]]], [[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]]]> : tensor<2x1x3x3xf32>
  %b = arith.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %ids = arith.constant dense<[[0], [-1]]> : tensor<2x1xi32>
  %0 = "xgen_sparse.pattern_conv2d"(%x, %w, %b, %ids) {padding = [1, 1, 1, 1], patterns = [[1, 3, 4, 5]], strides = [2, 2]} : (tensor<1x1x4x4xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>, tensor<2x1xi32>) -> tensor<1x2x2x2xf32>
  return %0 : tensor<1x2x2x2xf32>
}

// -----
// CHECK-LABEL: func.func @fkw
// CHECK: "xgen_sparse.fkw_conv2d"(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {kernel_size = [3, 3], padding = [0, 0, 0, 0], patterns = {{\[\[}}1, 3, 4, 5]], strides = [1, 1]}
func.func @fkw(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %w = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %b = arith.constant dense<[0.5]> : tensor<1xf32>
  %order = arith.constant dense<[0]> : tensor<1xi32>
  %gfo = arith.constant dense<[0, 1]> : tensor<2xi32>
  %gko = arith.constant dense<[0, 1]> : tensor<2xi32>
  %chan = arith.constant dense<[0]> : tensor<1xi32>
  %pat = arith.constant dense<[0]> : tensor<1xi32>
  %0 = "xgen_sparse.fkw_conv2d"(%x, %w, %b, %order, %gfo, %gko, %chan, %pat) {kernel_size = [3, 3], padding = [0, 0, 0, 0], patterns = [[1, 3, 4, 5]], strides = [1, 1]} : (tensor<1x1x4x4xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xi32>, tensor<2xi32>, tensor<2xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}
