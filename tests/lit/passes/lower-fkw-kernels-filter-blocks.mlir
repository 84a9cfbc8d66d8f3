// RUN: rm -rf %t.cache
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s -p 'xgen-lower-fkw-kernels{vector-bits=128}' | FileCheck %s
// RUN: cat %t.cache/kernels/*.c | FileCheck %s --check-prefix=SRC

// Must not go filter-vectorised: a group of 16 filters is four 4-lane vectors, too many
// accumulators per pixel. The pixel-vectorised kernel runs the group as two blocks of 8
// filters, each block's accumulators, its input vector and a broadcast weight within 16
// registers (16 accumulators would not fit: GCC kept them on the stack).
// SRC: 16x2x3x3 conv, stride (1, 1), 1 filter groups, 2 patterns of 4 */
// SRC: filters 0..7 of the group
// SRC: vf acc[8][PX];
// SRC: const float* w = wp + 0;
// SRC: filters 8..15 of the group
// SRC: vf acc[8][PX];
// SRC: const float* w = wp + 8;
// SRC-NOT: vf acc[16]
// CHECK-LABEL: func.func @stride1_four_vector_group
// CHECK: call @xgen_fkw_kernel_{{[0-9]+}}_call
func.func @stride1_four_vector_group(%arg0: tensor<1x2x6x6xf32>) -> tensor<1x16x6x6xf32> {
  %w = arith.constant dense<[0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.10, 0.11, 0.12, 0.13, 0.14, 0.15, 0.16, 0.17, 0.18, 0.19, 0.20, 0.21, 0.22, 0.23, 0.24, 0.25, 0.26, 0.27, 0.28, 0.29, 0.30, 0.31, 0.32, 0.33, 0.34, 0.35, 0.36, 0.37, 0.38, 0.39, 0.40, 0.41, 0.42, 0.43, 0.44, 0.45, 0.46, 0.47, 0.48, 0.49, 0.50, 0.51, 0.52, 0.53, 0.54, 0.55, 0.56, 0.57, 0.58, 0.59, 0.60, 0.61, 0.62, 0.63, 0.64, 0.65, 0.66, 0.67, 0.68, 0.69, 0.70, 0.71, 0.72, 0.73, 0.74, 0.75, 0.76, 0.77, 0.78, 0.79, 0.80, 0.81, 0.82, 0.83, 0.84, 0.85, 0.86, 0.87, 0.88, 0.89, 0.90, 0.91, 0.92, 0.93, 0.94, 0.95, 0.96, 0.97, 0.98, 0.99, 1.00, 1.01, 1.02, 1.03, 1.04, 1.05, 1.06, 1.07, 1.08, 1.09, 1.10, 1.11, 1.12, 1.13, 1.14, 1.15, 1.16, 1.17, 1.18, 1.19, 1.20, 1.21, 1.22, 1.23, 1.24, 1.25, 1.26, 1.27, 1.28]> : tensor<128xf32>
  %b = arith.constant dense<0.5> : tensor<16xf32>
  %order = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]> : tensor<16xi32>
  %gfo = arith.constant dense<[0, 16]> : tensor<2xi32>
  %gko = arith.constant dense<[0, 2]> : tensor<2xi32>
  %chan = arith.constant dense<[0, 1]> : tensor<2xi32>
  %pat = arith.constant dense<[0, 1]> : tensor<2xi32>
  %0 = "xgen_sparse.fkw_conv2d"(%arg0, %w, %b, %order, %gfo, %gko, %chan, %pat) {kernel_size = [3, 3], padding = [1, 1, 1, 1], patterns = [[1, 3, 4, 5], [0, 1, 4, 7]], strides = [1, 1]} : (tensor<1x2x6x6xf32>, tensor<128xf32>, tensor<16xf32>, tensor<16xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<1x16x6x6xf32>
  return %0 : tensor<1x16x6x6xf32>
}
