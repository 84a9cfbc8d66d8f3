// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p xgen-lower-fkw-kernels | FileCheck %s

// An FKW convolution becomes a call to a wrapper (pad, phase split, flatten; kernel call, which
// stores the final [F, OH, OW] layout: no slice after it) and a kernel declaration carrying its
// stream.executable: the generated object, one workgroup per filter group (x) and pixel tile (y).
// CHECK: func.func private @[[K:xgen_fkw_kernel_[0-9]+]](tensor<176xf32>, tensor<24xf32>, tensor<4xf32>, tensor<12xf32>) -> tensor<144xf32>
// CHECK-SAME: xgen.executable = "{{.*}}stream.executable private @[[K]]_ex
// CHECK-SAME: hal.executable.object<{path = \22{{.*}}cache/kernels/[[K]]-{{[0-9a-f]+}}.o\22}>
// CHECK-SAME: %gx = arith.constant 2 : index
// CHECK-SAME: func.call @[[K]]_impl
// CHECK: func.func private @[[K]]_call(%arg0: tensor<1x2x6x6xf32>
// Stride 1: the input is zero-padded once, with extra rows at the bottom of each channel plane
// for the reads of the last (partly wasted) pixel chunk, and flattened; no phase split.
// CHECK: tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 4, 1]
// CHECK: } : tensor<1x2x6x6xf32> to tensor<1x2x11x8xf32>
// CHECK-NOT: linalg.transpose
// CHECK-NOT: tensor.pad
// The NaN/Inf flags: per input row (channel, y), the sum of x * 0.
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel", "reduction"]} ins(%arg0 : tensor<1x2x6x6xf32>) outs(%{{.*}} : tensor<2x6xf32>)
// CHECK: call @[[K]](%{{.*}}, %arg1, %arg2, %{{.*}}) : (tensor<176xf32>, tensor<24xf32>, tensor<4xf32>, tensor<12xf32>) -> tensor<144xf32>
// CHECK-NEXT: tensor.expand_shape %{{.*}} {{\[\[}}0, 1, 2, 3]] output_shape [1, 4, 6, 6] : tensor<144xf32> into tensor<1x4x6x6xf32>
// CHECK-NOT: tensor.extract_slice
// CHECK-LABEL: func.func @two_layouts
// CHECK: call @[[K]]_call(%arg0, %{{.*}}, %{{.*}}) : (tensor<1x2x6x6xf32>, tensor<24xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
// CHECK-NOT: xgen_sparse
  func.func @two_layouts(%arg0: tensor<1x2x6x6xf32>) -> tensor<1x4x6x6xf32> {
    %cst = arith.constant dense<[1.000000e-01, 2.000000e-01, 3.000000e-01, 4.000000e-01]> : tensor<4xf32>
    %cst_0 = arith.constant dense<[1.460000e+00, 1.320000e+00, 0.899999976, 1.900000e+00, 5.600000e-01, 1.720000e+00, 5.200000e-01, 5.000000e-01, 1.720000e+00, 1.790000e+00, 1.870000e+00, 5.500000e-01, 1.410000e+00, 1.590000e+00, 1.590000e+00, 7.600000e-01, 1.790000e+00, 5.400000e-01, 1.310000e+00, 0.689999997, 0.949999988, 1.510000e+00, 1.130000e+00, 1.470000e+00]> : tensor<24xf32>
    %cst_1 = arith.constant dense<[0, 2, 1, 3]> : tensor<4xi32>
    %cst_2 = arith.constant dense<[0, 2, 4]> : tensor<3xi32>
    %cst_3 = arith.constant dense<[0, 2, 3]> : tensor<3xi32>
    %cst_4 = arith.constant dense<[0, 1, 0]> : tensor<3xi32>
    %cst_5 = arith.constant dense<[0, 1, 1]> : tensor<3xi32>
    %0 = "xgen_sparse.fkw_conv2d"(%arg0, %cst_0, %cst, %cst_1, %cst_2, %cst_3, %cst_4, %cst_5) {kernel_size = [3, 3], padding = [1, 1, 1, 1], patterns = [[1, 3, 4, 5], [0, 1, 4, 7]], strides = [1, 1]} : (tensor<1x2x6x6xf32>, tensor<24xf32>, tensor<4xf32>, tensor<4xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>) -> tensor<1x4x6x6xf32>
    return %0 : tensor<1x4x6x6xf32>
  }

// -----
// Batch 2: one kernel for both images. The flat operands hold the images one after another
// (each laid out as at batch 1), the flags are per image and input row, and the grid's z is
// the image.
// CHECK: func.func private @[[K:xgen_fkw_kernel_[0-9]+]](tensor<88xf32>, tensor<4xf32>, tensor<1xf32>, tensor<8xf32>) -> tensor<8xf32>
// CHECK-SAME: %gz = arith.constant 2 : index
// CHECK-SAME: %g2 = stream.dispatch.workgroup.id[2] : index
// CHECK-SAME: func.call @[[K]]_impl({{.*}}, %g0, %g1, %g2)
// CHECK: func.func private @[[K]]_call(%arg0: tensor<2x1x4x4xf32>
// CHECK: tensor.pad %arg0 low[0, 0, 0, 0] high[0, 0, 7, 0]
// CHECK: } : tensor<2x1x4x4xf32> to tensor<2x1x11x4xf32>
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2, 3]] : tensor<2x1x11x4xf32> into tensor<2x44xf32>
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<2x44xf32> into tensor<88xf32>
// CHECK: iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%arg0 : tensor<2x1x4x4xf32>) outs(%{{.*}} : tensor<2x1x4xf32>)
// CHECK: call @[[K]](%{{.*}}, %arg1, %arg2, %{{.*}}) : (tensor<88xf32>, tensor<4xf32>, tensor<1xf32>, tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT: tensor.expand_shape %{{.*}} {{\[\[}}0, 1, 2, 3]] output_shape [2, 1, 2, 2] : tensor<8xf32> into tensor<2x1x2x2xf32>
// CHECK-LABEL: func.func @batch2
// CHECK: call @[[K]]_call(%arg0, %{{.*}}, %{{.*}}) : (tensor<2x1x4x4xf32>, tensor<4xf32>, tensor<1xf32>) -> tensor<2x1x2x2xf32>
// CHECK-NOT: xgen_sparse
// CHECK-NOT: linalg.conv_2d_nchw_fchw
func.func @batch2(%arg0: tensor<2x1x4x4xf32>) -> tensor<2x1x2x2xf32> {
  %w = arith.constant dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32>
  %b = arith.constant dense<[0.5]> : tensor<1xf32>
  %order = arith.constant dense<[0]> : tensor<1xi32>
  %gfo = arith.constant dense<[0, 1]> : tensor<2xi32>
  %gko = arith.constant dense<[0, 1]> : tensor<2xi32>
  %chan = arith.constant dense<[0]> : tensor<1xi32>
  %pat = arith.constant dense<[0]> : tensor<1xi32>
  %0 = "xgen_sparse.fkw_conv2d"(%arg0, %w, %b, %order, %gfo, %gko, %chan, %pat) {kernel_size = [3, 3], padding = [0, 0, 0, 0], patterns = [[1, 3, 4, 5]], strides = [1, 1]} : (tensor<2x1x4x4xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xi32>, tensor<2xi32>, tensor<2xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<2x1x2x2xf32>
  return %0 : tensor<2x1x2x2xf32>
}

// -----
// Batch 2 at stride 2: each image split into its row phases (the batch stays outermost) and
// given the read slack on its own.
// CHECK: func.func private @[[K:xgen_fkw_kernel_[0-9]+]](tensor<212xf32>, tensor<4xf32>, tensor<1xf32>, tensor<12xf32>) -> tensor<18xf32>
// CHECK-SAME: %gz = arith.constant 2 : index
// CHECK: func.func private @[[K]]_call(%arg0: tensor<2x1x6x6xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1], [2, 3], [4]] output_shape [2, 1, 4, 2, 8] : tensor<2x1x8x8xf32> into tensor<2x1x4x2x8xf32>
// CHECK: linalg.transpose ins(%{{.*}} : tensor<2x1x4x2x8xf32>) outs(%{{.*}} : tensor<2x2x1x4x8xf32>) permutation = [0, 3, 1, 2, 4]
// CHECK: tensor.pad %{{.*}} low[0, 0] high[0, 42]
// CHECK: } : tensor<2x64xf32> to tensor<2x106xf32>
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<2x106xf32> into tensor<212xf32>
// CHECK-LABEL: func.func @batch2_stride2
// CHECK-NOT: xgen_sparse
func.func @batch2_stride2(%arg0: tensor<2x1x6x6xf32>) -> tensor<2x1x3x3xf32> {
  %w = arith.constant dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32>
  %b = arith.constant dense<[0.5]> : tensor<1xf32>
  %order = arith.constant dense<[0]> : tensor<1xi32>
  %gfo = arith.constant dense<[0, 1]> : tensor<2xi32>
  %gko = arith.constant dense<[0, 1]> : tensor<2xi32>
  %chan = arith.constant dense<[0]> : tensor<1xi32>
  %pat = arith.constant dense<[0]> : tensor<1xi32>
  %0 = "xgen_sparse.fkw_conv2d"(%arg0, %w, %b, %order, %gfo, %gko, %chan, %pat) {kernel_size = [3, 3], padding = [1, 1, 1, 1], patterns = [[1, 3, 4, 5]], strides = [2, 2]} : (tensor<2x1x6x6xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xi32>, tensor<2xi32>, tensor<2xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<2x1x3x3xf32>
  return %0 : tensor<2x1x3x3xf32>
}
