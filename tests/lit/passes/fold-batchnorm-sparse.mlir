// RUN: xgen-opt %s --split-input-file -p 'xgen-fold-batchnorm{sparse-only=true}' | FileCheck %s

// A per-channel scale and shift after a pattern conv (eval batch norm) folds into its weights
// and bias operand: a = [2, 3], b = [10, 20]; weights scale per filter (their zeros stay zeros,
// so the pattern ids are untouched) and bias = a*[1, 2] + b = [12, 26].
// CHECK-LABEL: func.func @pattern_conv_scale_shift
// CHECK-DAG: arith.constant dense<[1.200000e+01, 2.600000e+01]> : tensor<2xf32>
// CHECK-DAG: arith.constant dense<{{\[\[\[\[}}0.000000e+00, 2.000000e+00, 0.000000e+00], [4.000000e+00, 6.000000e+00, 8.000000e+00], [0.000000e+00, 0.000000e+00, 0.000000e+00]]], {{\[\[\[}}0.000000e+00, 3.000000e+00, 0.000000e+00], [3.000000e+00, 3.000000e+00, 3.000000e+00]
// CHECK: "xgen_sparse.pattern_conv2d"
// CHECK-NOT: linalg.generic
// CHECK: return
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @pattern_conv_scale_shift(%arg0: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %ids = arith.constant dense<[[0], [0]]> : tensor<2x1xi32>
  %w = arith.constant dense<[[[[0.0, 1.0, 0.0], [2.0, 3.0, 4.0], [0.0, 0.0, 0.0]]], [[[0.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]]]> : tensor<2x1x3x3xf32>
  %b = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %a = arith.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %s = arith.constant dense<[10.0, 20.0]> : tensor<2xf32>
  %0 = "xgen_sparse.pattern_conv2d"(%arg0, %w, %b, %ids) {padding = [1, 1, 1, 1], patterns = [[1, 3, 4, 5]], strides = [1, 1]} : (tensor<1x1x4x4xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>, tensor<2x1xi32>) -> tensor<1x2x4x4xf32>
  %e = tensor.empty() : tensor<1x2x4x4xf32>
  %1 = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%0, %a : tensor<1x2x4x4xf32>, tensor<2xf32>) outs(%e : tensor<1x2x4x4xf32>) {
  ^bb0(%x: f32, %c: f32, %o: f32):
    %m = arith.mulf %x, %c : f32
    linalg.yield %m : f32
  } -> tensor<1x2x4x4xf32>
  %2 = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%1, %s : tensor<1x2x4x4xf32>, tensor<2xf32>) outs(%e : tensor<1x2x4x4xf32>) {
  ^bb0(%x: f32, %c: f32, %o: f32):
    %m = arith.addf %x, %c : f32
    linalg.yield %m : f32
  } -> tensor<1x2x4x4xf32>
  return %2 : tensor<1x2x4x4xf32>
}

// -----
// Must not fire with sparse-only: a dense conv keeps its batch norm (IREE fuses it there).
// CHECK-LABEL: func.func @dense_conv_untouched
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK: linalg.generic
// CHECK: arith.mulf
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @dense_conv_untouched(%arg0: tensor<1x1x6x6xf32>) -> tensor<1x2x4x4xf32> {
  %w = arith.constant dense<1.0> : tensor<2x1x3x3xf32>
  %a = arith.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x4x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%arg0, %w : tensor<1x1x6x6xf32>, tensor<2x1x3x3xf32>) outs(%f : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %1 = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%0, %a : tensor<1x2x4x4xf32>, tensor<2xf32>) outs(%e : tensor<1x2x4x4xf32>) {
  ^bb0(%x: f32, %c: f32, %o: f32):
    %m = arith.mulf %x, %c : f32
    linalg.yield %m : f32
  } -> tensor<1x2x4x4xf32>
  return %1 : tensor<1x2x4x4xf32>
}

// -----
// Must not fire: the pattern conv's result has a second use, so the norm cannot disappear.
// CHECK-LABEL: func.func @pattern_conv_two_uses
// CHECK: "xgen_sparse.pattern_conv2d"(%arg0, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK: arith.mulf
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @pattern_conv_two_uses(%arg0: tensor<1x1x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %ids = arith.constant dense<[[0], [0]]> : tensor<2x1xi32>
  %w = arith.constant dense<[[[[0.0, 1.0, 0.0], [2.0, 3.0, 4.0], [0.0, 0.0, 0.0]]], [[[0.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]]]> : tensor<2x1x3x3xf32>
  %b = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %a = arith.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %0 = "xgen_sparse.pattern_conv2d"(%arg0, %w, %b, %ids) {padding = [1, 1, 1, 1], patterns = [[1, 3, 4, 5]], strides = [1, 1]} : (tensor<1x1x4x4xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>, tensor<2x1xi32>) -> tensor<1x2x4x4xf32>
  %e = tensor.empty() : tensor<1x2x4x4xf32>
  %1 = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%0, %a : tensor<1x2x4x4xf32>, tensor<2xf32>) outs(%e : tensor<1x2x4x4xf32>) {
  ^bb0(%x: f32, %c: f32, %o: f32):
    %m = arith.mulf %x, %c : f32
    linalg.yield %m : f32
  } -> tensor<1x2x4x4xf32>
  return %0, %1 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}
