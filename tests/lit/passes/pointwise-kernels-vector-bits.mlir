// RUN: rm -rf %t.cache
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p "xgen-pointwise-kernels{vector-bits=256}" | FileCheck %s --check-prefix=AVX2
// RUN: cat %t.cache/kernels/*.c | FileCheck %s --check-prefix=SRC
// RUN: xgen-opt %s --split-input-file -p "xgen-pointwise-kernels{vector-bits=512}" | FileCheck %s --check-prefix=AVX512

// The kernels follow the target's vector width. With AVX2 (vector-bits=256) IREE's f32 data
// tiles have 8 rows, so a 7x8 image's 56 rows fill them and that conv stays with IREE, while
// the 49 rows of a 7x7 image (padded to 56: 14%) become a kernel of 8-float vectors. With
// AVX-512 (16-row tiles) both are padded (to 64) and both become kernels.

// SRC: 49 rows x 32 -> 16, panels of 8 channels, 7 rows per register block, 8-float vectors
// SRC: typedef float v16 __attribute__((vector_size(32)));

// AVX2-LABEL: func.func @rows49(
// AVX2: call @xgen_pointwise_1_call
// AVX2-NOT: linalg.conv_2d_nhwc_hwcf
// AVX512-LABEL: func.func @rows49(
// AVX512: call @xgen_pointwise_1_call
func.func @rows49(%x: tensor<1x7x7x32xf32>) -> tensor<1x7x7x16xf32> {
  %w = arith.constant dense<0.25> : tensor<1x1x32x16xf32>
  %b = arith.constant 0.1 : f32
  %e0 = tensor.empty() : tensor<1x7x7x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x7x7x16xf32>) -> tensor<1x7x7x16xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x7x7x32xf32>, tensor<1x1x32x16xf32>) outs(%eb : tensor<1x7x7x16xf32>) -> tensor<1x7x7x16xf32>
  return %c : tensor<1x7x7x16xf32>
}

// -----

// AVX2-LABEL: func.func @rows56(
// AVX2-NOT: call @xgen_pointwise
// AVX2: linalg.conv_2d_nhwc_hwcf
// AVX512-LABEL: func.func @rows56(
// AVX512: call @xgen_pointwise_1_call
func.func @rows56(%x: tensor<1x7x8x32xf32>) -> tensor<1x7x8x16xf32> {
  %w = arith.constant dense<0.25> : tensor<1x1x32x16xf32>
  %b = arith.constant 0.1 : f32
  %e0 = tensor.empty() : tensor<1x7x8x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x7x8x16xf32>) -> tensor<1x7x8x16xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x7x8x32xf32>, tensor<1x1x32x16xf32>) outs(%eb : tensor<1x7x8x16xf32>) -> tensor<1x7x8x16xf32>
  return %c : tensor<1x7x8x16xf32>
}
