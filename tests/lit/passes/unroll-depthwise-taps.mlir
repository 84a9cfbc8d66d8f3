// RUN: xgen-opt %s --split-input-file -p 'xgen-unroll-depthwise-taps' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-unroll-depthwise-taps{max-taps=4}' | FileCheck %s --check-prefix=SMALL

// NCHW 3x3, zero fill: nine shifted input slices and nine filter columns feed one
// all-parallel generic that starts from the fill's value and adds the taps in the conv's order
// (kh outer, kw inner); no fill, no reduction, no depthwise op left.
// CHECK-LABEL: func.func @nchw_fill
// CHECK-DAG: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: tensor.extract_slice %arg0[0, 0, 0, 0] [1, 2, 5, 5] [1, 1, 1, 1] : tensor<1x2x7x7xf32> to tensor<1x2x5x5xf32>
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 0] [2, 1, 1] [1, 1, 1] : tensor<2x3x3xf32> to tensor<2xf32>
// CHECK: tensor.extract_slice %arg0[0, 0, 0, 1] [1, 2, 5, 5] [1, 1, 1, 1]
// CHECK: tensor.extract_slice %arg0[0, 0, 2, 2] [1, 2, 5, 5] [1, 1, 1, 1]
// CHECK: tensor.extract_slice %{{.*}}[0, 2, 2] [2, 1, 1] [1, 1, 1]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel"]
// CHECK-NOT: reduction
// CHECK: ^bb0(%[[X0:[a-z0-9_]+]]: f32, %[[X1:[a-z0-9_]+]]: f32, %{{[a-z0-9_]+}}: f32, %{{[a-z0-9_]+}}: f32, %{{[a-z0-9_]+}}: f32, %{{[a-z0-9_]+}}: f32, %{{[a-z0-9_]+}}: f32, %{{[a-z0-9_]+}}: f32, %{{[a-z0-9_]+}}: f32, %[[W0:[a-z0-9_]+]]: f32, %[[W1:[a-z0-9_]+]]: f32,
// CHECK-NEXT: %[[P0:.*]] = arith.mulf %[[X0]], %[[W0]] : f32
// CHECK-NEXT: %[[S0:.*]] = arith.addf %[[Z]], %[[P0]] : f32
// CHECK-NEXT: %[[P1:.*]] = arith.mulf %[[X1]], %[[W1]] : f32
// CHECK-NEXT: arith.addf %[[S0]], %[[P1]] : f32
// CHECK-COUNT-7: arith.addf
// CHECK-NOT: linalg.depthwise_conv
// CHECK-NOT: linalg.fill
// SMALL-LABEL: func.func @nchw_fill
// SMALL: linalg.depthwise_conv_2d_nchw_chw
func.func @nchw_fill(%arg0: tensor<1x2x7x7xf32>) -> tensor<1x2x5x5xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<1.0> : tensor<2x3x3xf32>
  %0 = tensor.empty() : tensor<1x2x5x5xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %2 = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%arg0, %w : tensor<1x2x7x7xf32>, tensor<2x3x3xf32>) outs(%1 : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  return %2 : tensor<1x2x5x5xf32>
}

// -----
// NHWC, stride 2, dilation 2 (2x2 taps), a bias broadcast as the init: the slices step by the
// stride and start at kh*dilation; the init becomes the generic's last input.
// CHECK-LABEL: func.func @nhwc_strided_bias
// CHECK: %[[B:.*]] = linalg.broadcast
// CHECK: tensor.extract_slice %arg0[0, 0, 0, 0] [1, 3, 3, 4] [1, 2, 2, 1] : tensor<1x8x8x4xf32> to tensor<1x3x3x4xf32>
// CHECK: tensor.extract_slice %arg1[0, 0, 0] [1, 1, 4] [1, 1, 1] : tensor<2x2x4xf32> to tensor<4xf32>
// CHECK: tensor.extract_slice %arg0[0, 2, 2, 0] [1, 3, 3, 4] [1, 2, 2, 1]
// CHECK: linalg.generic {{.*}} ins({{.*}}, %[[B]] : {{.*}})
// CHECK: ^bb0({{.*}}, %[[INIT:[^:]*]]: f32, %{{[^:]*}}: f32):
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf %[[INIT]]
// CHECK-NOT: linalg.depthwise_conv
// SMALL-LABEL: func.func @nhwc_strided_bias
// SMALL: linalg.generic
// SMALL-NOT: linalg.depthwise_conv
func.func @nhwc_strided_bias(%arg0: tensor<1x8x8x4xf32>, %arg1: tensor<2x2x4xf32>, %bias: tensor<4xf32>) -> tensor<1x3x3x4xf32> {
  %0 = tensor.empty() : tensor<1x3x3x4xf32>
  %b = linalg.broadcast ins(%bias : tensor<4xf32>) outs(%0 : tensor<1x3x3x4xf32>) dimensions = [0, 1, 2]
  %2 = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<2> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%arg0, %arg1 : tensor<1x8x8x4xf32>, tensor<2x2x4xf32>) outs(%b : tensor<1x3x3x4xf32>) -> tensor<1x3x3x4xf32>
  return %2 : tensor<1x3x3x4xf32>
}

// -----
// Must not fire: dynamic shapes, an integer (quantized) depthwise conv, a regular conv.
// CHECK-LABEL: func.func @dynamic
// SMALL-LABEL: func.func @dynamic
// CHECK: linalg.depthwise_conv_2d_nchw_chw
func.func @dynamic(%arg0: tensor<?x2x7x7xf32>, %init: tensor<?x2x5x5xf32>) -> tensor<?x2x5x5xf32> {
  %w = arith.constant dense<1.0> : tensor<2x3x3xf32>
  %2 = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%arg0, %w : tensor<?x2x7x7xf32>, tensor<2x3x3xf32>) outs(%init : tensor<?x2x5x5xf32>) -> tensor<?x2x5x5xf32>
  return %2 : tensor<?x2x5x5xf32>
}

// -----
// CHECK-LABEL: func.func @integer
// CHECK: linalg.depthwise_conv_2d_nhwc_hwc
func.func @integer(%arg0: tensor<1x7x7x2xi32>, %arg1: tensor<3x3x2xi32>, %init: tensor<1x5x5x2xi32>) -> tensor<1x5x5x2xi32> {
  %2 = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%arg0, %arg1 : tensor<1x7x7x2xi32>, tensor<3x3x2xi32>) outs(%init : tensor<1x5x5x2xi32>) -> tensor<1x5x5x2xi32>
  return %2 : tensor<1x5x5x2xi32>
}

// -----
// CHECK-LABEL: func.func @regular_conv
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK-NOT: linalg.generic
func.func @regular_conv(%arg0: tensor<1x2x7x7xf32>, %w: tensor<3x2x3x3xf32>, %init: tensor<1x3x5x5xf32>) -> tensor<1x3x5x5xf32> {
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%arg0, %w : tensor<1x2x7x7xf32>, tensor<3x2x3x3xf32>) outs(%init : tensor<1x3x5x5xf32>) -> tensor<1x3x5x5xf32>
  return %2 : tensor<1x3x5x5xf32>
}
