// RUN: xgen-opt %s --split-input-file -p 'xgen-winograd-convs{min-tiles=1}' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-winograd-convs' | FileCheck %s --check-prefix=DEFAULT
// RUN: xgen-opt %s --split-input-file -p 'xgen-winograd-convs{enable=false min-tiles=1}' | FileCheck %s --check-prefix=OFF

// An NCHW 3x3 conv with a bias: the input goes to NHWC with its zero pad redone there; the
// row and column input transforms read six strided slices each (stride 4, one per tap); one
// batched GEMM over the 36 transformed positions against the transformed filter; the two
// output transforms, the second accumulating onto the bias; back to NCHW.
// CHECK-LABEL: func.func @nchw_bias
// CHECK: linalg.transpose ins(%arg0 : tensor<1x2x8x8xf32>) {{.*}} permutation = [0, 2, 3, 1]
// CHECK: %[[P:.*]] = tensor.pad {{.*}} low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK: tensor.extract_slice %[[P]][0, 0, 0, 0] [1, 2, 10, 2] [1, 4, 1, 1]
// CHECK: tensor.extract_slice %[[P]][0, 5, 0, 0] [1, 2, 10, 2] [1, 4, 1, 1]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]
// CHECK-SAME: outs(%{{.*}} : tensor<1x6x2x10x2xf32>)
// CHECK: tensor.extract_slice {{.*}}[0, 0, 0, 5, 0] [1, 6, 2, 2, 2] [1, 1, 1, 4, 1]
// CHECK: tensor.collapse_shape {{.*}} into tensor<36x4x2xf32>
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<36x4x2xf32>, tensor<36x2x3xf32>) {{.*}} -> tensor<36x4x3xf32>
// CHECK: tensor.expand_shape {{.*}} into tensor<6x6x1x2x2x3xf32>
// CHECK: arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]>
// CHECK: linalg.broadcast
// CHECK: arith.addf %out
// CHECK: tensor.collapse_shape {{.*}} into tensor<1x8x8x3xf32>
// CHECK: linalg.transpose {{.*}} permutation = [0, 3, 1, 2]
// CHECK-NOT: linalg.conv_2d
// With the default min-tiles (16) the 8x8 output has too few 4x4 tiles (4) but enough 2x2
// ones (16): F(2x2, 3x3), 4x4 input tiles read at stride 2, 16 transformed positions.
// DEFAULT-LABEL: func.func @nchw_bias
// DEFAULT: tensor.extract_slice %{{.*}}[0, 3, 0, 0] [1, 4, 10, 2] [1, 2, 1, 1]
// DEFAULT: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<16x16x2xf32>, tensor<16x2x3xf32>)
// DEFAULT: tensor.collapse_shape {{.*}} : tensor<1x4x2x4x2x3xf32> into tensor<1x8x8x3xf32>
// DEFAULT-NOT: linalg.conv_2d
// OFF-LABEL: func.func @nchw_bias
// OFF: linalg.conv_2d_nchw_fchw
func.func @nchw_bias(%arg0: tensor<1x2x8x8xf32>) -> tensor<1x3x8x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %b = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %w = arith.constant dense<0.5> : tensor<3x2x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x2x8x8xf32> to tensor<1x2x10x10xf32>
  %0 = tensor.empty() : tensor<1x3x8x8xf32>
  %1 = linalg.broadcast ins(%b : tensor<3xf32>) outs(%0 : tensor<1x3x8x8xf32>) dimensions = [0, 2, 3]
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x2x10x10xf32>, tensor<3x2x3x3xf32>) outs(%1 : tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  return %2 : tensor<1x3x8x8xf32>
}

// -----

// A 6x6 output is not a multiple of the 4x4 tile: zero rows and columns are added after the
// input (8 -> 10) so two tiles cover it, and the 8x8 result is cut back to 6x6. The filter
// transform of an all-ones 3x3 filter is outer(r, r), r = G * (1, 1, 1) = (1/4, -1/2, -1/6,
// 7/24, 1/8, 1), computed at compile time.
// CHECK-LABEL: func.func @nhwc_ragged
// CHECK: tensor.pad %arg0 low[0, 0, 0, 0] high[0, 2, 2, 0]
// CHECK: arith.constant dense<{{\[\[\[}}6.250000e-02]], {{\[\[}}-1.250000e-01]], {{\[\[}}-0.0416666679]], {{\[\[}}0.0729166642]], {{\[\[}}3.125000e-02]], {{\[\[}}2.500000e-01]]
// CHECK: linalg.batch_matmul {{.*}} -> tensor<36x4x1xf32>
// CHECK: tensor.extract_slice {{.*}}[0, 0, 0, 0] [1, 6, 6, 1] [1, 1, 1, 1] : tensor<1x8x8x1xf32> to tensor<1x6x6x1xf32>
// CHECK-NOT: linalg.conv_2d
// Under the default min-tiles neither tiling has 16 tiles (4 and 9): left alone.
// DEFAULT-LABEL: func.func @nhwc_ragged
// DEFAULT: linalg.conv_2d_nhwc_hwcf
func.func @nhwc_ragged(%arg0: tensor<1x8x8x1xf32>) -> tensor<1x6x6x1xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<1.0> : tensor<3x3x1x1xf32>
  %0 = tensor.empty() : tensor<1x6x6x1xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x6x6x1xf32>) -> tensor<1x6x6x1xf32>
  %2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%arg0, %w : tensor<1x8x8x1xf32>, tensor<3x3x1x1xf32>) outs(%1 : tensor<1x6x6x1xf32>) -> tensor<1x6x6x1xf32>
  return %2 : tensor<1x6x6x1xf32>
}

// -----

// 16 output tiles of 4x4 (16x16): F(4x4, 3x3) at the default min-tiles.
// DEFAULT-LABEL: func.func @sixteen_tiles
// DEFAULT: linalg.batch_matmul {{.*}} -> tensor<36x16x1xf32>
// DEFAULT-NOT: linalg.conv_2d
func.func @sixteen_tiles(%arg0: tensor<1x18x18x1xf32>) -> tensor<1x16x16x1xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<1.0> : tensor<3x3x1x1xf32>
  %0 = tensor.empty() : tensor<1x16x16x1xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x16x16x1xf32>) -> tensor<1x16x16x1xf32>
  %2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%arg0, %w : tensor<1x18x18x1xf32>, tensor<3x3x1x1xf32>) outs(%1 : tensor<1x16x16x1xf32>) -> tensor<1x16x16x1xf32>
  return %2 : tensor<1x16x16x1xf32>
}

// -----

// ONNX imports accumulate onto a splat constant instead of a linalg.fill: same rewrite.
// CHECK-LABEL: func.func @splat_init
// CHECK: linalg.batch_matmul {{.*}} -> tensor<36x1x1xf32>
// CHECK-NOT: linalg.conv_2d
// DEFAULT-LABEL: func.func @splat_init
// DEFAULT: linalg.conv_2d_nchw_fchw
func.func @splat_init(%arg0: tensor<1x1x6x6xf32>) -> tensor<1x1x4x4xf32> {
  %w = arith.constant dense<1.0> : tensor<1x1x3x3xf32>
  %z = arith.constant dense<0.000000e+00> : tensor<1x1x4x4xf32>
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%arg0, %w : tensor<1x1x6x6xf32>, tensor<1x1x3x3xf32>) outs(%z : tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

// NCHW with a ragged 6x6 output: the zero pad is redone in NHWC with the two extra rows and
// columns folded into it (high 1 + 2). A pad of another value keeps its own pad (transposed)
// and gets a separate zero pad for the extra rows: the extra rows must be zeros.
// CHECK-LABEL: func.func @nchw_ragged
// CHECK: tensor.pad %{{.*}} low[0, 1, 1, 0] high[0, 3, 3, 0]
// CHECK-NOT: tensor.pad
// CHECK: linalg.batch_matmul
// CHECK-LABEL: func.func @nchw_ragged_one_pad
// CHECK: tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: linalg.transpose
// CHECK: tensor.pad %{{.*}} low[0, 0, 0, 0] high[0, 2, 2, 0]
// CHECK: tensor.yield %{{.*}} : f32
// CHECK: linalg.batch_matmul
func.func @nchw_ragged(%arg0: tensor<1x1x6x6xf32>) -> tensor<1x1x6x6xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<1.0> : tensor<1x1x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x1x6x6xf32> to tensor<1x1x8x8xf32>
  %0 = tensor.empty() : tensor<1x1x6x6xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x1x6x6xf32>) -> tensor<1x1x6x6xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x1x8x8xf32>, tensor<1x1x3x3xf32>) outs(%1 : tensor<1x1x6x6xf32>) -> tensor<1x1x6x6xf32>
  return %2 : tensor<1x1x6x6xf32>
}
func.func @nchw_ragged_one_pad(%arg0: tensor<1x1x6x6xf32>) -> tensor<1x1x6x6xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %w = arith.constant dense<1.0> : tensor<1x1x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %one : f32
  } : tensor<1x1x6x6xf32> to tensor<1x1x8x8xf32>
  %0 = tensor.empty() : tensor<1x1x6x6xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x1x6x6xf32>) -> tensor<1x1x6x6xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x1x8x8xf32>, tensor<1x1x3x3xf32>) outs(%1 : tensor<1x1x6x6xf32>) -> tensor<1x1x6x6xf32>
  return %2 : tensor<1x1x6x6xf32>
}

// -----

// Must not fire: a stride-2 conv, a 1x1 conv, a filter that is not a constant, a dilated conv.
// CHECK-LABEL: func.func @not_winograd
// DEFAULT-LABEL: func.func @not_winograd
// DEFAULT-NOT: linalg.batch_matmul
// CHECK-NOT: linalg.batch_matmul
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}}strides = dense<2>
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}}ins(%arg0, %{{.*}} : tensor<1x10x10x1xf32>, tensor<1x1x1x1xf32>)
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}}ins(%arg0, %arg1 :
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}}dilations = dense<2>
// CHECK-NOT: linalg.batch_matmul
func.func @not_winograd(%arg0: tensor<1x10x10x1xf32>, %arg1: tensor<3x3x1x1xf32>) -> (tensor<1x4x4x1xf32>, tensor<1x10x10x1xf32>, tensor<1x8x8x1xf32>, tensor<1x6x6x1xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<1.0> : tensor<3x3x1x1xf32>
  %w1 = arith.constant dense<1.0> : tensor<1x1x1x1xf32>
  %e4 = tensor.empty() : tensor<1x4x4x1xf32>
  %f4 = linalg.fill ins(%cst : f32) outs(%e4 : tensor<1x4x4x1xf32>) -> tensor<1x4x4x1xf32>
  %s2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%arg0, %w : tensor<1x10x10x1xf32>, tensor<3x3x1x1xf32>) outs(%f4 : tensor<1x4x4x1xf32>) -> tensor<1x4x4x1xf32>
  %e10 = tensor.empty() : tensor<1x10x10x1xf32>
  %f10 = linalg.fill ins(%cst : f32) outs(%e10 : tensor<1x10x10x1xf32>) -> tensor<1x10x10x1xf32>
  %k1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%arg0, %w1 : tensor<1x10x10x1xf32>, tensor<1x1x1x1xf32>) outs(%f10 : tensor<1x10x10x1xf32>) -> tensor<1x10x10x1xf32>
  %e8 = tensor.empty() : tensor<1x8x8x1xf32>
  %f8 = linalg.fill ins(%cst : f32) outs(%e8 : tensor<1x8x8x1xf32>) -> tensor<1x8x8x1xf32>
  %arg = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%arg0, %arg1 : tensor<1x10x10x1xf32>, tensor<3x3x1x1xf32>) outs(%f8 : tensor<1x8x8x1xf32>) -> tensor<1x8x8x1xf32>
  %e6 = tensor.empty() : tensor<1x6x6x1xf32>
  %f6 = linalg.fill ins(%cst : f32) outs(%e6 : tensor<1x6x6x1xf32>) -> tensor<1x6x6x1xf32>
  %dil = linalg.conv_2d_nhwc_hwcf {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%arg0, %w : tensor<1x10x10x1xf32>, tensor<3x3x1x1xf32>) outs(%f6 : tensor<1x6x6x1xf32>) -> tensor<1x6x6x1xf32>
  return %s2, %k1, %arg, %dil : tensor<1x4x4x1xf32>, tensor<1x10x10x1xf32>, tensor<1x8x8x1xf32>, tensor<1x6x6x1xf32>
}
