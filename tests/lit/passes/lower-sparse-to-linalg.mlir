// RUN: xgen-opt %s --split-input-file -p "xgen-lower-sparse-to-linalg,canonicalize" | FileCheck %s

// pattern_conv2d: its dense weights (zeros included) feed a plain linalg convolution again.
// CHECK-LABEL: func.func private @xgen_dense_conv_{{[0-9]+}}(%arg0: tensor<1x1x4x4xf32>, %arg1: tensor<2x1x3x3xf32>, %arg2: tensor<2xf32>) -> tensor<1x2x2x2xf32>
// CHECK: tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: linalg.broadcast ins(%arg2
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
// CHECK-LABEL: func.func @pattern
// CHECK-NOT: xgen_sparse
func.func @pattern(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x2x2xf32> {
  %w = arith.constant dense<[[[[0.0, 1.0, 0.0], [2.0, 3.0, 4.0], [0.0, 0.0, 0.0]]], [[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]]]> : tensor<2x1x3x3xf32>
  %b = arith.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %ids = arith.constant dense<[[0], [-1]]> : tensor<2x1xi32>
  %0 = "xgen_sparse.pattern_conv2d"(%x, %w, %b, %ids) {padding = [1, 1, 1, 1], patterns = [[1, 3, 4, 5]], strides = [2, 2]} : (tensor<1x1x4x4xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>, tensor<2x1xi32>) -> tensor<1x2x2x2xf32>
  return %0 : tensor<1x2x2x2xf32>
}

// -----
// fkw_conv2d: the dense weights are rebuilt from compact storage (filter 1's entries 5..8 land
// on its pattern positions 1, 3, 4, 5; filter 0 keeps nothing).
// CHECK-LABEL: func.func @fkw
// CHECK: arith.constant dense<{{\[\[\[\[}}0.000000e+00, 0.000000e+00, 0.000000e+00], [0.000000e+00, 0.000000e+00, 0.000000e+00], [0.000000e+00, 0.000000e+00, 0.000000e+00]]], {{\[\[\[}}0.000000e+00, 5.000000e+00, 0.000000e+00], [6.000000e+00, 7.000000e+00, 8.000000e+00], [0.000000e+00, 0.000000e+00, 0.000000e+00]]]]> : tensor<2x1x3x3xf32>
// CHECK-NOT: xgen_sparse
func.func @fkw(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x2x2xf32> {
  %w = arith.constant dense<[5.0, 6.0, 7.0, 8.0]> : tensor<4xf32>
  %b = arith.constant dense<[0.5, 1.5]> : tensor<2xf32>
  %order = arith.constant dense<[1, 0]> : tensor<2xi32>
  %gfo = arith.constant dense<[0, 1, 2]> : tensor<3xi32>
  %gko = arith.constant dense<[0, 1, 1]> : tensor<3xi32>
  %chan = arith.constant dense<[0]> : tensor<1xi32>
  %pat = arith.constant dense<[0]> : tensor<1xi32>
  %0 = "xgen_sparse.fkw_conv2d"(%x, %w, %b, %order, %gfo, %gko, %chan, %pat) {kernel_size = [3, 3], padding = [0, 0, 0, 0], patterns = [[1, 3, 4, 5]], strides = [1, 1]} : (tensor<1x1x4x4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<2xi32>, tensor<3xi32>, tensor<3xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<1x2x2x2xf32>
  return %0 : tensor<1x2x2x2xf32>
}
