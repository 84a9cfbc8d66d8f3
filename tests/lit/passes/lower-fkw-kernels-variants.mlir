// RUN: rm -rf %t.cache
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p 'xgen-lower-fkw-kernels{vl=4}' | FileCheck %s
// RUN: cat %t.cache/kernels/*.c | FileCheck %s --check-prefix=SRC
// The target's vector width, when given, sets VL (128 bits: 4 floats), whatever vl says:
// RUN: rm -rf %t.vb && env XGEN_CACHE_DIR=%t.vb xgen-opt %s --split-input-file -p 'xgen-lower-fkw-kernels{vl=16 vector-bits=128}' | FileCheck %s
// RUN: cat %t.vb/kernels/*.c | FileCheck %s --check-prefix=SRC

// Stride 2, one group of exactly VL (=4) filters: the filter-vectorised kernel. Its input is
// only zero-padded (no row-phase split, so no transpose in the wrapper), and each workgroup
// computes blocks of R x Q output pixels (here 3 rows of 3 = the whole 3x3 output).
// SRC: filter-vectorised, blocks of 3x3 pixels
// CHECK-LABEL: func.func private @xgen_fkw_kernel_{{[0-9]+}}_call
// CHECK: tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK-NOT: linalg.transpose
// CHECK: tensor.collapse_shape
// CHECK: call @xgen_fkw_kernel_{{[0-9]+}}(%{{.*}}) : (tensor<128xf32>, tensor<32xf32>, tensor<4xf32>, tensor<12xf32>) -> tensor<36xf32>
// CHECK-LABEL: func.func @stride2_full_group
func.func @stride2_full_group(%arg0: tensor<1x2x6x6xf32>) -> tensor<1x4x3x3xf32> {
  %w = arith.constant dense<[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0, 2.1, 2.2, 2.3, 2.4, 2.5, 2.6, 2.7, 2.8, 2.9, 3.0, 3.1, 3.2]> : tensor<32xf32>
  %b = arith.constant dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %order = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
  %gfo = arith.constant dense<[0, 4]> : tensor<2xi32>
  %gko = arith.constant dense<[0, 2]> : tensor<2xi32>
  %chan = arith.constant dense<[0, 1]> : tensor<2xi32>
  %pat = arith.constant dense<[0, 1]> : tensor<2xi32>
  %0 = "xgen_sparse.fkw_conv2d"(%arg0, %w, %b, %order, %gfo, %gko, %chan, %pat) {kernel_size = [3, 3], padding = [1, 1, 1, 1], patterns = [[1, 3, 4, 5], [0, 1, 4, 7]], strides = [2, 2]} : (tensor<1x2x6x6xf32>, tensor<32xf32>, tensor<4xf32>, tensor<4xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<1x4x3x3xf32>
  return %0 : tensor<1x4x3x3xf32>
}

// -----
// Groups smaller than VL (two groups of 2 filters) keep the pixel-vectorised kernel, whose
// stride-2 input is split into row phases (the transpose).
// SRC-NOT: filter-vectorised
// CHECK-LABEL: func.func private @xgen_fkw_kernel_{{[0-9]+}}_call
// CHECK: linalg.transpose
// CHECK-LABEL: func.func @stride2_small_groups
func.func @stride2_small_groups(%arg0: tensor<1x2x6x6xf32>) -> tensor<1x4x3x3xf32> {
  %w = arith.constant dense<[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0, 2.1, 2.2, 2.3, 2.4]> : tensor<24xf32>
  %b = arith.constant dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %order = arith.constant dense<[0, 2, 1, 3]> : tensor<4xi32>
  %gfo = arith.constant dense<[0, 2, 4]> : tensor<3xi32>
  %gko = arith.constant dense<[0, 2, 3]> : tensor<3xi32>
  %chan = arith.constant dense<[0, 1, 0]> : tensor<3xi32>
  %pat = arith.constant dense<[0, 1, 1]> : tensor<3xi32>
  %0 = "xgen_sparse.fkw_conv2d"(%arg0, %w, %b, %order, %gfo, %gko, %chan, %pat) {kernel_size = [3, 3], padding = [1, 1, 1, 1], patterns = [[1, 3, 4, 5], [0, 1, 4, 7]], strides = [2, 2]} : (tensor<1x2x6x6xf32>, tensor<24xf32>, tensor<4xf32>, tensor<4xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>) -> tensor<1x4x3x3xf32>
  return %0 : tensor<1x4x3x3xf32>
}
