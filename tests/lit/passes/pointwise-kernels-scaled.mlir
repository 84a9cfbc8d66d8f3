// RUN: rm -rf %t.cache
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p "xgen-pointwise-kernels{precision=bf16 bf16-tiles=0 cflags=-march=sapphirerapids}" | FileCheck %s
// RUN: cat %t.cache/kernels/*.c | FileCheck %s --check-prefix=SRC
// RUN: xgen-opt %s --split-input-file -p "xgen-pointwise-kernels{min-padding=0}" | FileCheck %s --check-prefix=F32

// A squeeze-excite's project conv after xgen-scale-to-weights: its filter is computed at run
// time, W[0, 0, k, n] * s[k]. The bf16 kernel keeps W packed at compile time and takes s as
// one more operand, multiplying each row by it as it rounds the row to bf16 (the kernel is
// compiled for an AVX512-BF16 CPU whatever this host is). Must not fire: an fp32 compile
// (the f32 kernel reads constant weights only: F32, where every 1x1 conv is a candidate), a scale along the output channels (not
// a property of the rows: @per_output), a filter product with another use (@shared).

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#k = affine_map<(d0, d1, d2, d3) -> (0, 0, 0, d2)>
// CHECK-LABEL: func.func @excite(
// CHECK: %[[W:.*]] = arith.constant dense_resource<xgen_pointwise_weights_{{[0-9]+}}> : tensor<{{[0-9]+}}xf32>
// CHECK: %[[Y:.*]] = call @xgen_pointwise_1_call(%arg0, %[[W]], %arg1)
// CHECK-NOT: linalg
// CHECK: return %[[Y]]
// SRC: 196 rows x 32 -> 16, bf16 products, {{.*}}, rows scaled per input channel
// SRC: for (int p = 0; p < R; ++p) to_bf16_scaled(x + (m0 + p) * K, sc, xb[p], K);
// SRC: MEMREF(const float, w), MEMREF(const float, sc), MEMREF(float, y)
// F32-LABEL: func.func @excite(
// F32: linalg.generic
// F32: linalg.conv_2d_nhwc_hwcf
// F32-NOT: xgen_pointwise
func.func @excite(%x: tensor<1x14x14x32xf32>, %s: tensor<1x1x1x32xf32>) -> tensor<1x14x14x16xf32> {
  %w = arith.constant dense<0.25> : tensor<1x1x32x16xf32>
  %b = arith.constant 0.1 : f32
  %ew = tensor.empty() : tensor<1x1x32x16xf32>
  %ws = linalg.generic {indexing_maps = [#id, #k, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%w, %s : tensor<1x1x32x16xf32>, tensor<1x1x1x32xf32>) outs(%ew : tensor<1x1x32x16xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %m = arith.mulf %a, %c : f32
    linalg.yield %m : f32
  } -> tensor<1x1x32x16xf32>
  %e0 = tensor.empty() : tensor<1x14x14x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x14x14x16xf32>) -> tensor<1x14x14x16xf32>
  %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %ws : tensor<1x14x14x32xf32>, tensor<1x1x32x16xf32>) outs(%eb : tensor<1x14x14x16xf32>) -> tensor<1x14x14x16xf32>
  return %y : tensor<1x14x14x16xf32>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#n = affine_map<(d0, d1, d2, d3) -> (0, 0, 0, d3)>
// CHECK-LABEL: func.func @per_output(
// CHECK: linalg.generic
// CHECK: linalg.conv_2d_nhwc_hwcf
func.func @per_output(%x: tensor<1x14x14x32xf32>, %s: tensor<1x1x1x16xf32>) -> tensor<1x14x14x16xf32> {
  %w = arith.constant dense<0.25> : tensor<1x1x32x16xf32>
  %b = arith.constant 0.1 : f32
  %ew = tensor.empty() : tensor<1x1x32x16xf32>
  %ws = linalg.generic {indexing_maps = [#id, #n, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%w, %s : tensor<1x1x32x16xf32>, tensor<1x1x1x16xf32>) outs(%ew : tensor<1x1x32x16xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %m = arith.mulf %a, %c : f32
    linalg.yield %m : f32
  } -> tensor<1x1x32x16xf32>
  %e0 = tensor.empty() : tensor<1x14x14x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x14x14x16xf32>) -> tensor<1x14x14x16xf32>
  %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %ws : tensor<1x14x14x32xf32>, tensor<1x1x32x16xf32>) outs(%eb : tensor<1x14x14x16xf32>) -> tensor<1x14x14x16xf32>
  return %y : tensor<1x14x14x16xf32>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#k = affine_map<(d0, d1, d2, d3) -> (0, 0, 0, d2)>
// CHECK-LABEL: func.func @shared(
// CHECK: linalg.generic
// CHECK: linalg.conv_2d_nhwc_hwcf
func.func @shared(%x: tensor<1x14x14x32xf32>, %s: tensor<1x1x1x32xf32>) -> (tensor<1x14x14x16xf32>, tensor<1x1x32x16xf32>) {
  %w = arith.constant dense<0.25> : tensor<1x1x32x16xf32>
  %b = arith.constant 0.1 : f32
  %ew = tensor.empty() : tensor<1x1x32x16xf32>
  %ws = linalg.generic {indexing_maps = [#id, #k, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%w, %s : tensor<1x1x32x16xf32>, tensor<1x1x1x32xf32>) outs(%ew : tensor<1x1x32x16xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %m = arith.mulf %a, %c : f32
    linalg.yield %m : f32
  } -> tensor<1x1x32x16xf32>
  %e0 = tensor.empty() : tensor<1x14x14x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x14x14x16xf32>) -> tensor<1x14x14x16xf32>
  %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %ws : tensor<1x14x14x32xf32>, tensor<1x1x32x16xf32>) outs(%eb : tensor<1x14x14x16xf32>) -> tensor<1x14x14x16xf32>
  return %y, %ws : tensor<1x14x14x16xf32>, tensor<1x1x32x16xf32>
}
