// RUN: rm -rf %t.cache
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s -p 'xgen-lower-fkw-kernels{vector-bits=128}' | FileCheck %s
// RUN: cat %t.cache/kernels/*.c | FileCheck %s --check-prefix=SRC

// One group of 8 filters with 4-lane vectors (as a group of 16 with AVX2's 8): at stride 2
// the filter-vectorised kernel holds the group as two vectors per pixel, and its blocks keep
// few enough pixels for 16 registers: 2 x pixels + 2 weight vectors + 1 broadcast <= 16.
// SRC: 8x2x3x3 conv, stride (2, 2), 1 filter groups, 2 patterns of 4, filter-vectorised, blocks of 2x3 pixels
// SRC: vf acc[6][2];
// SRC: const vf wv[2] = {LD(w + 0), LD(w + 4)};
// SRC: acc[0][0] += xb * wv[0]; acc[0][1] += xb * wv[1];
// CHECK-LABEL: func.func private @xgen_fkw_kernel_{{[0-9]+}}_call
// CHECK-NOT: linalg.transpose
// CHECK: call @xgen_fkw_kernel_{{[0-9]+}}(%{{.*}}) : (tensor<128xf32>, tensor<64xf32>, tensor<8xf32>, tensor<12xf32>) -> tensor<72xf32>
// CHECK-LABEL: func.func @stride2_two_vector_group
func.func @stride2_two_vector_group(%arg0: tensor<1x2x6x6xf32>) -> tensor<1x8x3x3xf32> {
  %w = arith.constant dense<[0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70, 0.75, 0.80, 0.85, 0.90, 0.95, 1.00, 1.05, 1.10, 1.15, 1.20, 1.25, 1.30, 1.35, 1.40, 1.45, 1.50, 1.55, 1.60, 1.65, 1.70, 1.75, 1.80, 1.85, 1.90, 1.95, 2.00, 2.05, 2.10, 2.15, 2.20, 2.25, 2.30, 2.35, 2.40, 2.45, 2.50, 2.55, 2.60, 2.65, 2.70, 2.75, 2.80, 2.85, 2.90, 2.95, 3.00, 3.05, 3.10, 3.15, 3.20]> : tensor<64xf32>
  %b = arith.constant dense<[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]> : tensor<8xf32>
  %order = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi32>
  %gfo = arith.constant dense<[0, 8]> : tensor<2xi32>
  %gko = arith.constant dense<[0, 2]> : tensor<2xi32>
  %chan = arith.constant dense<[0, 1]> : tensor<2xi32>
  %pat = arith.constant dense<[0, 1]> : tensor<2xi32>
  %0 = "xgen_sparse.fkw_conv2d"(%arg0, %w, %b, %order, %gfo, %gko, %chan, %pat) {kernel_size = [3, 3], padding = [1, 1, 1, 1], patterns = [[1, 3, 4, 5], [0, 1, 4, 7]], strides = [2, 2]} : (tensor<1x2x6x6xf32>, tensor<64xf32>, tensor<8xf32>, tensor<8xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<1x8x3x3xf32>
  return %0 : tensor<1x8x3x3xf32>
}
