// RUN: xgen-opt %s --split-input-file -p xgen-scale-to-weights | FileCheck %s

// Squeeze-excite as torch-mlir leaves it around a channels-last 1x1 conv: x * s (s along the
// channels, NCHW), transposed to NHWC, conv. The scale moves onto the 1x1x3x2 weights; the
// conv reads the transposed x; the full-size multiply is gone.
// CHECK-LABEL: func.func @se_nhwc
// CHECK-DAG: %[[W:.*]] = arith.constant dense<{{.*}}> : tensor<1x1x3x2xf32>
// CHECK: %[[SW:.*]] = linalg.generic {indexing_maps = [#[[ID:.*]], #[[SM:.*]], #[[ID]]], {{.*}}} ins(%[[W]], %arg1 : tensor<1x1x3x2xf32>, tensor<1x3x1x1xf32>) outs(%{{.*}} : tensor<1x1x3x2xf32>)
// CHECK: arith.mulf
// CHECK: %[[XT:.*]] = linalg.transpose ins(%arg0 : tensor<1x3x4x4xf32>) {{.*}} permutation = [0, 2, 3, 1]
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[XT]], %[[SW]] : tensor<1x4x4x3xf32>, tensor<1x1x3x2xf32>)
// CHECK-NOT: linalg.generic
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>
func.func @se_nhwc(%x: tensor<1x3x4x4xf32>, %s: tensor<1x3x1x1xf32>) -> tensor<1x4x4x2xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[[[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]]]> : tensor<1x1x3x2xf32>
  %e = tensor.empty() : tensor<1x3x4x4xf32>
  %m = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %s : tensor<1x3x4x4xf32>, tensor<1x3x1x1xf32>) outs(%e : tensor<1x3x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<1x3x4x4xf32>
  %et = tensor.empty() : tensor<1x4x4x3xf32>
  %t = linalg.transpose ins(%m : tensor<1x3x4x4xf32>) outs(%et : tensor<1x4x4x3xf32>) permutation = [0, 2, 3, 1]
  %eo = tensor.empty() : tensor<1x4x4x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%t, %w : tensor<1x4x4x3xf32>, tensor<1x1x3x2xf32>) outs(%f : tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  return %c : tensor<1x4x4x2xf32>
}

// -----

// The same in NCHW (scale operand first in the body), and a Linear after a per-feature scale.
// CHECK-LABEL: func.func @se_nchw
// CHECK: %[[SW:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %arg1 : tensor<2x3x1x1xf32>, tensor<3xf32>)
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} ins(%arg0, %[[SW]] : tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>)
// CHECK-LABEL: func.func @linear
// CHECK: %[[SW:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %arg1 : tensor<8x2xf32>, tensor<8xf32>)
// CHECK: linalg.matmul ins(%arg0, %[[SW]] : tensor<16x8xf32>, tensor<8x2xf32>)
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#c1 = affine_map<(d0, d1, d2, d3) -> (d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @se_nchw(%x: tensor<1x3x4x4xf32>, %s: tensor<3xf32>) -> tensor<1x2x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<1.0> : tensor<2x3x1x1xf32>
  %e = tensor.empty() : tensor<1x3x4x4xf32>
  %m = linalg.generic {indexing_maps = [#c1, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %x : tensor<3xf32>, tensor<1x3x4x4xf32>) outs(%e : tensor<1x3x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<1x3x4x4xf32>
  %eo = tensor.empty() : tensor<1x2x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%m, %w : tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>) outs(%f : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %c : tensor<1x2x4x4xf32>
}
func.func @linear(%x: tensor<16x8xf32>, %s: tensor<8xf32>) -> tensor<16x2xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<1.0> : tensor<8x2xf32>
  %e = tensor.empty() : tensor<16x8xf32>
  %m = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<16x8xf32>, tensor<8xf32>) outs(%e : tensor<16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<16x8xf32>
  %eo = tensor.empty() : tensor<16x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%eo : tensor<16x2xf32>) -> tensor<16x2xf32>
  %c = linalg.matmul ins(%m, %w : tensor<16x8xf32>, tensor<8x2xf32>) outs(%f : tensor<16x2xf32>) -> tensor<16x2xf32>
  return %c : tensor<16x2xf32>
}

// -----

// Must not fire: the scale varies along a spatial dim (not a property of the weights), the
// multiply has a second use, the weights are larger than the activation (late 7x7 blocks),
// and an add instead of a multiply.
// CHECK-LABEL: func.func @spatial_scale
// CHECK: %[[M:.*]] = linalg.generic
// CHECK: arith.mulf
// CHECK: linalg.conv_2d_nchw_fchw ins(%[[M]], %cst_0 : tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>)
// CHECK-LABEL: func.func @two_uses
// CHECK: %[[M:.*]] = linalg.generic
// CHECK: linalg.conv_2d_nchw_fchw ins(%[[M]], %cst_0
// CHECK-LABEL: func.func @big_weights
// CHECK: %[[M:.*]] = linalg.generic
// CHECK: linalg.conv_2d_nchw_fchw ins(%[[M]], %cst_0
// CHECK-LABEL: func.func @add_not_mul
// CHECK: %[[M:.*]] = linalg.generic
// CHECK: arith.addf
// CHECK: linalg.conv_2d_nchw_fchw ins(%[[M]], %cst_0
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>
#row = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, 0)>
func.func @spatial_scale(%x: tensor<1x3x4x4xf32>, %s: tensor<1x1x4x1xf32>) -> tensor<1x2x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<1.0> : tensor<2x3x1x1xf32>
  %e = tensor.empty() : tensor<1x3x4x4xf32>
  %m = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %s : tensor<1x3x4x4xf32>, tensor<1x1x4x1xf32>) outs(%e : tensor<1x3x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<1x3x4x4xf32>
  %eo = tensor.empty() : tensor<1x2x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = linalg.conv_2d_nchw_fchw ins(%m, %w : tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>) outs(%f : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %c : tensor<1x2x4x4xf32>
}
func.func @two_uses(%x: tensor<1x3x4x4xf32>, %s: tensor<1x3x1x1xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x3x4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<1.0> : tensor<2x3x1x1xf32>
  %e = tensor.empty() : tensor<1x3x4x4xf32>
  %m = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %s : tensor<1x3x4x4xf32>, tensor<1x3x1x1xf32>) outs(%e : tensor<1x3x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<1x3x4x4xf32>
  %eo = tensor.empty() : tensor<1x2x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = linalg.conv_2d_nchw_fchw ins(%m, %w : tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>) outs(%f : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %c, %m : tensor<1x2x4x4xf32>, tensor<1x3x4x4xf32>
}
func.func @big_weights(%x: tensor<1x3x2x2xf32>, %s: tensor<1x3x1x1xf32>) -> tensor<1x8x2x2xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<1.0> : tensor<8x3x1x1xf32>
  %e = tensor.empty() : tensor<1x3x2x2xf32>
  %m = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %s : tensor<1x3x2x2xf32>, tensor<1x3x1x1xf32>) outs(%e : tensor<1x3x2x2xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<1x3x2x2xf32>
  %eo = tensor.empty() : tensor<1x8x2x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x8x2x2xf32>) -> tensor<1x8x2x2xf32>
  %c = linalg.conv_2d_nchw_fchw ins(%m, %w : tensor<1x3x2x2xf32>, tensor<8x3x1x1xf32>) outs(%f : tensor<1x8x2x2xf32>) -> tensor<1x8x2x2xf32>
  return %c : tensor<1x8x2x2xf32>
}
func.func @add_not_mul(%x: tensor<1x3x4x4xf32>, %s: tensor<1x3x1x1xf32>) -> tensor<1x2x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<1.0> : tensor<2x3x1x1xf32>
  %e = tensor.empty() : tensor<1x3x4x4xf32>
  %m = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %s : tensor<1x3x4x4xf32>, tensor<1x3x1x1xf32>) outs(%e : tensor<1x3x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.addf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<1x3x4x4xf32>
  %eo = tensor.empty() : tensor<1x2x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = linalg.conv_2d_nchw_fchw ins(%m, %w : tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>) outs(%f : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %c : tensor<1x2x4x4xf32>
}

// -----

// Must not fire: the conv is marked for the generated GEMM kernel, and the matmul for oneDNN
// (xgen-winograd-convs' marks: measured faster there); both read constant weights, so the
// scale stays on the input.
// CHECK-LABEL: func.func @marked_for_kernels
// CHECK: %[[M:.*]] = linalg.generic
// CHECK: arith.mulf
// CHECK: linalg.conv_2d_nchw_fchw {{.*}}xgen.kernel = "gemm"{{.*}} ins(%[[M]], %cst_0 : tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>)
// CHECK: %[[N:.*]] = linalg.generic
// CHECK: arith.mulf
// CHECK: linalg.matmul {{.*}}xgen.offload = "onednn"{{.*}} ins(%[[N]], %cst_1 : tensor<4x3xf32>, tensor<3x2xf32>)
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (0, d1)>
func.func @marked_for_kernels(%x: tensor<1x3x4x4xf32>, %s: tensor<1x3x1x1xf32>, %y: tensor<4x3xf32>, %t: tensor<1x3xf32>) -> (tensor<1x2x4x4xf32>, tensor<4x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<1.0> : tensor<2x3x1x1xf32>
  %e = tensor.empty() : tensor<1x3x4x4xf32>
  %m = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %s : tensor<1x3x4x4xf32>, tensor<1x3x1x1xf32>) outs(%e : tensor<1x3x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<1x3x4x4xf32>
  %eo = tensor.empty() : tensor<1x2x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>, xgen.kernel = "gemm"} ins(%m, %w : tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>) outs(%f : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %v = arith.constant dense<2.0> : tensor<3x2xf32>
  %e2 = tensor.empty() : tensor<4x3xf32>
  %n = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]} ins(%y, %t : tensor<4x3xf32>, tensor<1x3xf32>) outs(%e2 : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<4x3xf32>
  %eo2 = tensor.empty() : tensor<4x2xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%eo2 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %r = linalg.matmul {xgen.offload = "onednn"} ins(%n, %v : tensor<4x3xf32>, tensor<3x2xf32>) outs(%f2 : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %c, %r : tensor<1x2x4x4xf32>, tensor<4x2xf32>
}
