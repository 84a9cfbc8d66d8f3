// RUN: xgen-opt %s --split-input-file -p "xgen-raise-pattern-conv{min-group=1 verbose=true},canonicalize" 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=WHY < %t.err

// Pattern-pruned weights (2 patterns of 4 taps, one kernel removed per odd filter): the
// convolution, its zero padding and its bias broadcast become one xgen_sparse op.
// CHECK-LABEL: func.func @pattern_pruned
// CHECK-DAG: %[[IDS:.*]] = arith.constant dense<{{\[\[}}0, 1], [1, -1], [0, 1], [1, -1]]> : tensor<4x2xi32>
// CHECK-DAG: %[[B:.*]] = arith.constant dense<[1.000000e-01, 2.000000e-01, 3.000000e-01, 4.000000e-01]> : tensor<4xf32>
// CHECK: "xgen_sparse.pattern_conv2d"(%arg0, %{{.*}}, %[[B]], %[[IDS]]) {padding = [1, 1, 1, 1], patterns = {{\[\[}}1, 3, 4, 5], [0, 1, 4, 7]], strides = [1, 1]}
// CHECK-NOT: linalg.conv_2d_nchw_fchw
// CHECK-NOT: tensor.pad
// WHY: raised: 2 patterns, density 0.333
func.func @pattern_pruned(%x: tensor<1x2x6x6xf32>) -> tensor<1x4x6x6xf32> {
  %z = arith.constant 0.0 : f32
  %w = arith.constant dense<[[[[0.0, 1.46, 0.0], [0.9, 0.56, 0.52], [0.0, 0.0, 0.0]], [[1.72, 1.87, 0.0], [0.0, 1.41, 0.0], [0.0, 1.59, 0.0]]], [[[1.79, 1.31, 0.0], [0.0, 0.95, 0.0], [0.0, 1.13, 0.0]], [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]], [[[0.0, 1.32, 0.0], [1.9, 1.72, 0.5], [0.0, 0.0, 0.0]], [[1.79, 0.55, 0.0], [0.0, 1.59, 0.0], [0.0, 0.76, 0.0]]], [[[0.54, 0.69, 0.0], [0.0, 1.51, 0.0], [0.0, 1.47, 0.0]], [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]]]> : tensor<4x2x3x3xf32>
  %b = arith.constant dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %z : f32
  } : tensor<1x2x6x6xf32> to tensor<1x2x8x8xf32>
  %e = tensor.empty() : tensor<1x4x6x6xf32>
  %bb = linalg.broadcast ins(%b : tensor<4xf32>) outs(%e : tensor<1x4x6x6xf32>) dimensions = [0, 2, 3]
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%p, %w : tensor<1x2x8x8xf32>, tensor<4x2x3x3xf32>) outs(%bb : tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  return %c : tensor<1x4x6x6xf32>
}

// -----
// Must not fire: dense weights (nothing to skip).
// CHECK-LABEL: func.func @dense
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK-NOT: xgen_sparse
// WHY: stays dense: the weights' zeros form no small pattern library
func.func @dense(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x2x2xf32> {
  %z = arith.constant 0.0 : f32
  %w = arith.constant dense<1.5> : tensor<2x1x3x3xf32>
  %e = tensor.empty() : tensor<1x2x2x2xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x1x4x4xf32>, tensor<2x1x3x3xf32>) outs(%f : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  return %c : tensor<1x2x2x2xf32>
}

// -----
// Must not fire: weights are a function argument, not a constant.
// CHECK-LABEL: func.func @runtime_weights
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK-NOT: xgen_sparse
// WHY: stays dense: weights are not an f32 constant
func.func @runtime_weights(%x: tensor<1x1x4x4xf32>, %w: tensor<2x1x3x3xf32>) -> tensor<1x2x2x2xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x2x2xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x1x4x4xf32>, tensor<2x1x3x3xf32>) outs(%f : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  return %c : tensor<1x2x2x2xf32>
}

// -----
// Must not fire: too dense to pay off (each kernel keeps 6 of 9 taps; default max-density 0.5).
// CHECK-LABEL: func.func @too_dense
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK-NOT: xgen_sparse
// WHY: stays dense: density 0.67 > 0.5
func.func @too_dense(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %z = arith.constant 0.0 : f32
  %w = arith.constant dense<[[[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]]]> : tensor<1x1x3x3xf32>
  %e = tensor.empty() : tensor<1x1x2x2xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) outs(%f : tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %c : tensor<1x1x2x2xf32>
}

// -----
// Must not fire: dilated convolutions are not handled.
// CHECK-LABEL: func.func @dilated
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK-NOT: xgen_sparse
// WHY: stays dense: dilated convolutions are not handled
func.func @dilated(%x: tensor<1x1x6x6xf32>) -> tensor<1x1x2x2xf32> {
  %z = arith.constant 0.0 : f32
  %w = arith.constant dense<[[[[0.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]]]> : tensor<1x1x3x3xf32>
  %e = tensor.empty() : tensor<1x1x2x2xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<2> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x1x6x6xf32>, tensor<1x1x3x3xf32>) outs(%f : tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %c : tensor<1x1x2x2xf32>
}

// -----
// Filters pruned alike whose weights then lost a few more entries to exact zeros (as small
// weights quantized to int8 do): filter 2's channel-0 kernel keeps 2 of its pattern's 4 taps
// (both patterns cover them) and filter 3's channel-1 kernel is all zero. They still share
// one layout, the one their siblings have: a kernel with fewer nonzeros takes its group's
// pattern (its zeros are multiplied, exactly), an all-zero one its group's too.
// CHECK-LABEL: func.func @zeros_beyond_the_pattern
// CHECK: arith.constant dense<{{\[\[}}1, 0], [1, 0], [1, 0], [1, 0]]> : tensor<4x2xi32>
// CHECK: "xgen_sparse.pattern_conv2d"
// WHY: raised: 2 patterns, density 0.361, groups 4.0
func.func @zeros_beyond_the_pattern(%x: tensor<1x2x6x6xf32>) -> tensor<1x4x4x4xf32> {
  %z = arith.constant 0.0 : f32
  %w = arith.constant dense<[[[[0.63, 0.86, 0.0], [0.0, 1.7, 0.0], [0.0, 1.37, 0.0]], [[0.0, 0.64, 0.0], [1.15, 1.22, 0.74], [0.0, 0.0, 0.0]]], [[[1.6, 0.67, 0.0], [0.0, 1.09, 0.0], [0.0, 1.28, 0.0]], [[0.0, 1.15, 0.0], [1.38, 1.61, 1.93], [0.0, 0.0, 0.0]]], [[[0.0, 1.47, 0.0], [0.0, 1.54, 0.0], [0.0, 0.0, 0.0]], [[0.0, 0.5, 0.0], [1.96, 0.95, 0.97], [0.0, 0.0, 0.0]]], [[[1.84, 1.38, 0.0], [0.0, 1.21, 0.0], [0.0, 1.66, 0.0]], [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]]]> : tensor<4x2x3x3xf32>
  %e = tensor.empty() : tensor<1x4x4x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x2x6x6xf32>, tensor<4x2x3x3xf32>) outs(%f : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %c : tensor<1x4x4x4xf32>
}
