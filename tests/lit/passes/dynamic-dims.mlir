// RUN: xgen-opt %s --split-input-file -p 'xgen-nhwc-convs' | FileCheck %s --check-prefix=NHWC
// RUN: xgen-opt %s --split-input-file -p 'xgen-fold-batchnorm' | FileCheck %s --check-prefix=BN
// RUN: xgen-opt %s --split-input-file -p 'xgen-raise-pattern-conv' | FileCheck %s --check-prefix=RAISE
// RUN: xgen-opt %s --split-input-file -p 'xgen-cancel-reshapes' | FileCheck %s --check-prefix=CANCEL

// Dynamic dims through the graph passes (compile(dynamic_shapes=...)).

// A dynamic batch: the max pool becomes NHWC, its new tensor.empty ops take the batch from
// the input with tensor.dim; the pattern-pruned conv (zeros on one pattern) stays dense,
// since the pattern kernels are generated for static shapes; the batch norm (x * 2 + 1 per
// channel) folds into the conv's weights with a dynamic init.
// NHWC-LABEL: func.func @dynamic_batch
// NHWC: tensor.dim %arg0, %c0
// NHWC: tensor.empty(%{{.*}}) : tensor<?x4x4x2xf32>
// NHWC: linalg.pooling_nhwc_max
// NHWC-SAME: -> tensor<?x2x2x2xf32>
// NHWC: linalg.transpose {{.*}} permutation = [0, 3, 1, 2]
// NHWC: linalg.conv_2d_nhwc_hwcf
// NHWC-SAME: -> tensor<?x2x2x2xf32>
// BN-LABEL: func.func @dynamic_batch
// BN: tensor.dim
// BN: linalg.conv_2d_nchw_fchw
// BN-NOT: arith.mulf
// BN: return
// RAISE-LABEL: func.func @dynamic_batch
// RAISE-NOT: xgen_sparse
// RAISE: linalg.conv_2d_nchw_fchw
// RAISE-NOT: xgen_sparse
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>
func.func @dynamic_batch(%arg0: tensor<?x2x4x4xf32>) -> tensor<?x2x2x2xf32> {
  %c0 = arith.constant 0 : index
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %n = tensor.dim %arg0, %c0 : tensor<?x2x4x4xf32>
  %win = tensor.empty() : tensor<2x2xf32>
  %e = tensor.empty(%n) : tensor<?x2x2x2xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%e : tensor<?x2x2x2xf32>) -> tensor<?x2x2x2xf32>
  %pool = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%arg0, %win : tensor<?x2x4x4xf32>, tensor<2x2xf32>) outs(%init : tensor<?x2x2x2xf32>) -> tensor<?x2x2x2xf32>
  %w = arith.constant dense<[[[[1.0]], [[0.0]]], [[[0.0]], [[1.0]]]]> : tensor<2x2x1x1xf32>
  %e2 = tensor.empty(%n) : tensor<?x2x2x2xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e2 : tensor<?x2x2x2xf32>) -> tensor<?x2x2x2xf32>
  %conv = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%pool, %w : tensor<?x2x2x2xf32>, tensor<2x2x1x1xf32>) outs(%z : tensor<?x2x2x2xf32>) -> tensor<?x2x2x2xf32>
  %two = arith.constant dense<2.0> : tensor<1x2x1x1xf32>
  %e3 = tensor.empty(%n) : tensor<?x2x2x2xf32>
  %scaled = linalg.generic {indexing_maps = [#map, #ch, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%conv, %two : tensor<?x2x2x2xf32>, tensor<1x2x1x1xf32>) outs(%e3 : tensor<?x2x2x2xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<?x2x2x2xf32>
  return %scaled : tensor<?x2x2x2xf32>
}

// -----

// A dynamic image size: the conv stays NCHW (only a dynamic batch gets the NHWC form).
// NHWC-LABEL: func.func @dynamic_height
// NHWC-NOT: nhwc
// NHWC: linalg.conv_2d_nchw_fchw
// NHWC-NOT: nhwc
// CANCEL-LABEL: func.func @dynamic_height
func.func @dynamic_height(%arg0: tensor<1x2x?x4xf32>, %init: tensor<1x2x?x4xf32>) -> tensor<1x2x?x4xf32> {
  %w = arith.constant dense<[[[[1.0]], [[0.0]]], [[[0.0]], [[1.0]]]]> : tensor<2x2x1x1xf32>
  %conv = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%arg0, %w : tensor<1x2x?x4xf32>, tensor<2x2x1x1xf32>) outs(%init : tensor<1x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  return %conv : tensor<1x2x?x4xf32>
}

// -----

// A transpose that only moves a unit dim, with a dynamic dim: collapse + expand, the expand
// taking the dynamic size from the source.
// CANCEL-LABEL: func.func @unit_transpose_dynamic
// CANCEL: tensor.collapse_shape %arg0
// CANCEL: %[[D:.*]] = tensor.dim %arg0, %c1
// CANCEL: tensor.expand_shape {{.*}} output_shape [%[[D]], 1, 8]
// CANCEL-NOT: linalg.transpose
func.func @unit_transpose_dynamic(%arg0: tensor<1x?x8xf32>, %init: tensor<?x1x8xf32>) -> tensor<?x1x8xf32> {
  %t = linalg.transpose ins(%arg0 : tensor<1x?x8xf32>) outs(%init : tensor<?x1x8xf32>) permutation = [1, 0, 2]
  return %t : tensor<?x1x8xf32>
}
