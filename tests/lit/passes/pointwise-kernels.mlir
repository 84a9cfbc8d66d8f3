// RUN: rm -rf %t.cache
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p xgen-pointwise-kernels | FileCheck %s
// RUN: cat %t.cache/kernels/*.c | FileCheck %s --check-prefix=SRC
// RUN: xgen-opt %s --split-input-file -p "xgen-pointwise-kernels{min-padding=16}" | FileCheck %s --check-prefix=OFF

// A 1x1 conv over a 7x7 image (49 rows: IREE's 16-row tiles would pad them to 64) becomes a
// call of a generated kernel, with the activations and the residual add after it. With
// min-padding above any padding, nothing is replaced (OFF).
// OFF-NOT: xgen_pointwise

// The ReLU6 translated op by op into the kernel's activation:
// SRC: const vi16 t0 = (v > SPLAT(0x0.0p+0f)); const v16 t1 = SEL(t0, v, SPLAT(0x0.0p+0f)); v = t1;

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>
// CHECK-LABEL: func.func private @xgen_pointwise_1(tensor<1568xf32>, tensor<528xf32>) -> tensor<784xf32>
// CHECK-SAME: xgen.executable = {{.*}}%gx = arith.constant 1 : index{{.*}}hal.import.static
// CHECK-LABEL: func.func @relu(
// CHECK: %[[W:.*]] = arith.constant dense_resource<xgen_pointwise_weights_{{[0-9]+}}> : tensor<528xf32>
// CHECK: %[[Y:.*]] = call @xgen_pointwise_1_call(%arg0, %[[W]])
// CHECK-NOT: linalg
// CHECK: return %[[Y]] : tensor<1x7x7x16xf32>
func.func @relu(%x: tensor<1x7x7x32xf32>) -> tensor<1x7x7x16xf32> {
  %w = arith.constant dense<0.25> : tensor<1x1x32x16xf32>
  %b = arith.constant 0.1 : f32
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %e0 = tensor.empty() : tensor<1x7x7x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x7x7x16xf32>) -> tensor<1x7x7x16xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x7x7x32xf32>, tensor<1x1x32x16xf32>) outs(%eb : tensor<1x7x7x16xf32>) -> tensor<1x7x7x16xf32>
  %ae = tensor.empty() : tensor<1x7x7x16xf32>
  %a = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c, %zero_t : tensor<1x7x7x16xf32>, tensor<f32>) outs(%ae : tensor<1x7x7x16xf32>) {
  ^bb0(%in: f32, %z: f32, %out: f32):
    %m = arith.cmpf ogt, %in, %z : f32
    %r = arith.select %m, %in, %z : f32
    linalg.yield %r : f32
  } -> tensor<1x7x7x16xf32>
  return %a : tensor<1x7x7x16xf32>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>
// The residual add as torch-mlir writes it, of NCHW views: the kernel adds the NHWC
// tensor the view is a transpose of, and its result is transposed back to the add's layout.
// CHECK-LABEL: func.func private @xgen_pointwise_1(tensor<784xf32>, tensor<272xf32>, tensor<784xf32>) -> tensor<784xf32>
// CHECK-LABEL: func.func @residual_nchw(
// CHECK: %[[Y:.*]] = call @xgen_pointwise_1_call(%arg0, %{{.*}}, %arg1)
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[Y]] {{.*}} permutation = [0, 3, 1, 2]
// CHECK-NOT: arith.addf
// CHECK: return %[[T]]
func.func @residual_nchw(%x: tensor<1x7x7x16xf32>, %r: tensor<1x7x7x16xf32>) -> tensor<1x16x7x7xf32> {
  %w = arith.constant dense<0.25> : tensor<1x1x16x16xf32>
  %b = arith.constant 0.1 : f32
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %e0 = tensor.empty() : tensor<1x7x7x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x7x7x16xf32>) -> tensor<1x7x7x16xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x7x7x16xf32>, tensor<1x1x16x16xf32>) outs(%eb : tensor<1x7x7x16xf32>) -> tensor<1x7x7x16xf32>
  %rne = tensor.empty() : tensor<1x16x7x7xf32>
  %rn = linalg.transpose ins(%r : tensor<1x7x7x16xf32>) outs(%rne : tensor<1x16x7x7xf32>) permutation = [0, 3, 1, 2]
  %te = tensor.empty() : tensor<1x16x7x7xf32>
  %t = linalg.transpose ins(%c : tensor<1x7x7x16xf32>) outs(%te : tensor<1x16x7x7xf32>) permutation = [0, 3, 1, 2]
  %se = tensor.empty() : tensor<1x16x7x7xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%rn, %t : tensor<1x16x7x7xf32>, tensor<1x16x7x7xf32>) outs(%se : tensor<1x16x7x7xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %sum = arith.addf %p, %q : f32
    linalg.yield %sum : f32
  } -> tensor<1x16x7x7xf32>
  return %s : tensor<1x16x7x7xf32>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>
// Must not take the add in: the other addend exists only as NCHW.
// CHECK-LABEL: func.func @residual_only_nchw(
// CHECK: call @xgen_pointwise_1_call(%arg0,
// CHECK: arith.addf
func.func @residual_only_nchw(%x: tensor<1x7x7x16xf32>, %rn: tensor<1x16x7x7xf32>) -> tensor<1x16x7x7xf32> {
  %w = arith.constant dense<0.25> : tensor<1x1x16x16xf32>
  %b = arith.constant 0.1 : f32
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %e0 = tensor.empty() : tensor<1x7x7x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x7x7x16xf32>) -> tensor<1x7x7x16xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x7x7x16xf32>, tensor<1x1x16x16xf32>) outs(%eb : tensor<1x7x7x16xf32>) -> tensor<1x7x7x16xf32>
  %te = tensor.empty() : tensor<1x16x7x7xf32>
  %t = linalg.transpose ins(%c : tensor<1x7x7x16xf32>) outs(%te : tensor<1x16x7x7xf32>) permutation = [0, 3, 1, 2]
  %se = tensor.empty() : tensor<1x16x7x7xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%rn, %t : tensor<1x16x7x7xf32>, tensor<1x16x7x7xf32>) outs(%se : tensor<1x16x7x7xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %sum = arith.addf %p, %q : f32
    linalg.yield %sum : f32
  } -> tensor<1x16x7x7xf32>
  return %s : tensor<1x16x7x7xf32>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>
// Must not fire: an elementwise op the kernel does not translate (math.exp) follows the
// conv; IREE fuses it into the conv's dispatch, where the kernel would leave it its own.
// CHECK-LABEL: func.func @exp_after(
// CHECK-NOT: call
// CHECK: linalg.conv_2d_nhwc_hwcf
// CHECK: math.exp
func.func @exp_after(%x: tensor<1x7x7x16xf32>) -> tensor<1x7x7x16xf32> {
  %w = arith.constant dense<0.25> : tensor<1x1x16x16xf32>
  %b = arith.constant 0.1 : f32
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %e0 = tensor.empty() : tensor<1x7x7x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x7x7x16xf32>) -> tensor<1x7x7x16xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x7x7x16xf32>, tensor<1x1x16x16xf32>) outs(%eb : tensor<1x7x7x16xf32>) -> tensor<1x7x7x16xf32>
  %ae = tensor.empty() : tensor<1x7x7x16xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c : tensor<1x7x7x16xf32>) outs(%ae : tensor<1x7x7x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  } -> tensor<1x7x7x16xf32>
  return %a : tensor<1x7x7x16xf32>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>
// Must not fire: an 8x8 image is 64 rows, 4 whole tiles for IREE.
// CHECK-LABEL: func.func @rows_fill_tiles(
// CHECK-NOT: call
// CHECK: linalg.conv_2d_nhwc_hwcf
func.func @rows_fill_tiles(%x: tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32> {
  %w = arith.constant dense<0.25> : tensor<1x1x16x16xf32>
  %b = arith.constant 0.1 : f32
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %e0 = tensor.empty() : tensor<1x8x8x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x8x8x16xf32>, tensor<1x1x16x16xf32>) outs(%eb : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  return %c : tensor<1x8x8x16xf32>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>
// Must not fire: 24 output channels (the kernel writes 16-channel vectors).
// CHECK-LABEL: func.func @channels_not_16(
// CHECK-NOT: call
// CHECK: linalg.conv_2d_nhwc_hwcf
func.func @channels_not_16(%x: tensor<1x7x7x16xf32>) -> tensor<1x7x7x24xf32> {
  %w = arith.constant dense<0.25> : tensor<1x1x16x24xf32>
  %b = arith.constant 0.1 : f32
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %e0 = tensor.empty() : tensor<1x7x7x24xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x7x7x24xf32>) -> tensor<1x7x7x24xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x7x7x16xf32>, tensor<1x1x16x24xf32>) outs(%eb : tensor<1x7x7x24xf32>) -> tensor<1x7x7x24xf32>
  return %c : tensor<1x7x7x24xf32>
}
