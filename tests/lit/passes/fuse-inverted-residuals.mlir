// RUN: rm -rf %t.cache
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p "xgen-fuse-inverted-residuals{min-expanded-bytes=0 without-expand=true}" | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p "xgen-fuse-inverted-residuals{min-expanded-bytes=0}" | FileCheck %s --check-prefix=EXPAND
// RUN: cat %t.cache/kernels/*.c | FileCheck %s --check-prefix=SRC
// RUN: xgen-opt %s --split-input-file -p xgen-fuse-inverted-residuals | FileCheck %s --check-prefix=SMALL

// expand 1x1 -> ReLU6 -> zero pad -> depthwise 3x3 -> ReLU6 -> project 1x1 becomes one call of
// a generated kernel, declared with the stream.executable that links its object (one workgroup
// per band of output rows). By default only blocks whose expanded tensor has at least 1 MiB
// are fused: none of these small ones (SMALL).
// SMALL-NOT: xgen_inverted_residual

// torch-mlir's ReLU6 translated op by op: x > 0 ? x : 0 (ordered: NaN -> 0), 6 < x ? 6 : x.
// SRC: const vi16 t0 = (v > SPLAT(0x0.0p+0f)); const v16 t1 = SEL(t0, v, SPLAT(0x0.0p+0f)); v = t1;
// SRC: const vi16 t0 = (SPLAT(0x1.8000000000000p+2f) < v); const v16 t1 = SEL(t0, SPLAT(0x1.8000000000000p+2f), v); v = t1;

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>
// CHECK-LABEL: func.func private @xgen_inverted_residual_1(tensor<128xf32>, tensor<440xf32>) -> tensor<128xf32>
// CHECK-SAME: xgen.executable = {{.*}}%gx = arith.constant 4 : index{{.*}}hal.import.static
// CHECK-LABEL: func.func @fires_stride1(
// CHECK: %[[W:.*]] = arith.constant dense_resource<xgen_block_weights_{{[0-9]+}}> : tensor<440xf32>
// CHECK: %[[Y:.*]] = call @xgen_inverted_residual_1_call(%arg0, %[[W]])
// CHECK-NOT: linalg
// CHECK: return %[[Y]] : tensor<1x4x4x8xf32>
func.func @fires_stride1(%x: tensor<1x4x4x8xf32>) -> (tensor<1x4x4x8xf32>) {
  %we = arith.constant dense<0.25> : tensor<1x1x8x16xf32>
  %wd = arith.constant dense<0.5> : tensor<3x3x16xf32>
  %wp = arith.constant dense<0.125> : tensor<1x1x16x8xf32>
  %b = arith.constant 0.1 : f32
  %zero = arith.constant 0.0 : f32
  %padv = arith.constant 0.0 : f32
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %six_t = arith.constant dense<6.0> : tensor<f32>
  %e0 = tensor.empty() : tensor<1x4x4x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %ex = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %we : tensor<1x4x4x8xf32>, tensor<1x1x8x16xf32>) outs(%eb : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %a1e = tensor.empty() : tensor<1x4x4x16xf32>
  %a1a = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %zero_t : tensor<1x4x4x16xf32>, tensor<f32>) outs(%a1e : tensor<1x4x4x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %m = arith.cmpf ogt, %in, %c : f32
    %r = arith.select %m, %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %a1 = linalg.generic {indexing_maps = [#sc, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%six_t, %a1a : tensor<f32>, tensor<1x4x4x16xf32>) outs(%a1e : tensor<1x4x4x16xf32>) {
  ^bb0(%c: f32, %in: f32, %out: f32):
    %m = arith.cmpf olt, %c, %in : f32
    %r = arith.select %m, %c, %in : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %pd = tensor.pad %a1 low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %padv : f32
  } : tensor<1x4x4x16xf32> to tensor<1x6x6x16xf32>
  %d0 = tensor.empty() : tensor<1x4x4x16xf32>
  %db = linalg.fill ins(%b : f32) outs(%d0 : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %dw = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%pd, %wd : tensor<1x6x6x16xf32>, tensor<3x3x16xf32>) outs(%db : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %a2e = tensor.empty() : tensor<1x4x4x16xf32>
  %a2a = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dw, %zero_t : tensor<1x4x4x16xf32>, tensor<f32>) outs(%a2e : tensor<1x4x4x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %m = arith.cmpf ogt, %in, %c : f32
    %r = arith.select %m, %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %a2 = linalg.generic {indexing_maps = [#sc, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%six_t, %a2a : tensor<f32>, tensor<1x4x4x16xf32>) outs(%a2e : tensor<1x4x4x16xf32>) {
  ^bb0(%c: f32, %in: f32, %out: f32):
    %m = arith.cmpf olt, %c, %in : f32
    %r = arith.select %m, %c, %in : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %p0 = tensor.empty() : tensor<1x4x4x8xf32>
  %pb = linalg.fill ins(%zero : f32) outs(%p0 : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %pr = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%a2, %wp : tensor<1x4x4x16xf32>, tensor<1x1x16x8xf32>) outs(%pb : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %pr : tensor<1x4x4x8xf32>
}

// -----
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>
// Stride 2: 8x8 in, 4x4 out.
// EXPAND-LABEL: func.func @fires_stride2(
// EXPAND: call @xgen_inverted_residual_1_call(%arg0,
// CHECK-LABEL: func.func @fires_stride2(
// CHECK: call @xgen_inverted_residual_1_call(%arg0,
// CHECK-NOT: linalg.depthwise
func.func @fires_stride2(%x: tensor<1x8x8x8xf32>) -> (tensor<1x4x4x8xf32>) {
  %we = arith.constant dense<0.25> : tensor<1x1x8x16xf32>
  %wd = arith.constant dense<0.5> : tensor<3x3x16xf32>
  %wp = arith.constant dense<0.125> : tensor<1x1x16x8xf32>
  %b = arith.constant 0.1 : f32
  %zero = arith.constant 0.0 : f32
  %padv = arith.constant 0.0 : f32
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %six_t = arith.constant dense<6.0> : tensor<f32>
  %e0 = tensor.empty() : tensor<1x8x8x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  %ex = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %we : tensor<1x8x8x8xf32>, tensor<1x1x8x16xf32>) outs(%eb : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  %a1e = tensor.empty() : tensor<1x8x8x16xf32>
  %a1a = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %zero_t : tensor<1x8x8x16xf32>, tensor<f32>) outs(%a1e : tensor<1x8x8x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %m = arith.cmpf ogt, %in, %c : f32
    %r = arith.select %m, %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x8x8x16xf32>
  %a1 = linalg.generic {indexing_maps = [#sc, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%six_t, %a1a : tensor<f32>, tensor<1x8x8x16xf32>) outs(%a1e : tensor<1x8x8x16xf32>) {
  ^bb0(%c: f32, %in: f32, %out: f32):
    %m = arith.cmpf olt, %c, %in : f32
    %r = arith.select %m, %c, %in : f32
    linalg.yield %r : f32
  } -> tensor<1x8x8x16xf32>
  %pd = tensor.pad %a1 low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %padv : f32
  } : tensor<1x8x8x16xf32> to tensor<1x10x10x16xf32>
  %d0 = tensor.empty() : tensor<1x4x4x16xf32>
  %db = linalg.fill ins(%b : f32) outs(%d0 : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %dw = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%pd, %wd : tensor<1x10x10x16xf32>, tensor<3x3x16xf32>) outs(%db : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %a2e = tensor.empty() : tensor<1x4x4x16xf32>
  %a2a = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dw, %zero_t : tensor<1x4x4x16xf32>, tensor<f32>) outs(%a2e : tensor<1x4x4x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %m = arith.cmpf ogt, %in, %c : f32
    %r = arith.select %m, %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %a2 = linalg.generic {indexing_maps = [#sc, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%six_t, %a2a : tensor<f32>, tensor<1x4x4x16xf32>) outs(%a2e : tensor<1x4x4x16xf32>) {
  ^bb0(%c: f32, %in: f32, %out: f32):
    %m = arith.cmpf olt, %c, %in : f32
    %r = arith.select %m, %c, %in : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %p0 = tensor.empty() : tensor<1x4x4x8xf32>
  %pb = linalg.fill ins(%zero : f32) outs(%p0 : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %pr = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%a2, %wp : tensor<1x4x4x16xf32>, tensor<1x1x16x8xf32>) outs(%pb : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %pr : tensor<1x4x4x8xf32>
}

// -----
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>
// Must not fire: the depthwise conv's padding is 1.0, not zero.
// CHECK-LABEL: func.func @pad_not_zero(
// CHECK-NOT: call
// CHECK: linalg.depthwise_conv_2d_nhwc_hwc
func.func @pad_not_zero(%x: tensor<1x4x4x8xf32>) -> (tensor<1x4x4x8xf32>) {
  %we = arith.constant dense<0.25> : tensor<1x1x8x16xf32>
  %wd = arith.constant dense<0.5> : tensor<3x3x16xf32>
  %wp = arith.constant dense<0.125> : tensor<1x1x16x8xf32>
  %b = arith.constant 0.1 : f32
  %zero = arith.constant 0.0 : f32
  %padv = arith.constant 1.0 : f32
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %six_t = arith.constant dense<6.0> : tensor<f32>
  %e0 = tensor.empty() : tensor<1x4x4x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %ex = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %we : tensor<1x4x4x8xf32>, tensor<1x1x8x16xf32>) outs(%eb : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %a1e = tensor.empty() : tensor<1x4x4x16xf32>
  %a1a = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %zero_t : tensor<1x4x4x16xf32>, tensor<f32>) outs(%a1e : tensor<1x4x4x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %m = arith.cmpf ogt, %in, %c : f32
    %r = arith.select %m, %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %a1 = linalg.generic {indexing_maps = [#sc, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%six_t, %a1a : tensor<f32>, tensor<1x4x4x16xf32>) outs(%a1e : tensor<1x4x4x16xf32>) {
  ^bb0(%c: f32, %in: f32, %out: f32):
    %m = arith.cmpf olt, %c, %in : f32
    %r = arith.select %m, %c, %in : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %pd = tensor.pad %a1 low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %padv : f32
  } : tensor<1x4x4x16xf32> to tensor<1x6x6x16xf32>
  %d0 = tensor.empty() : tensor<1x4x4x16xf32>
  %db = linalg.fill ins(%b : f32) outs(%d0 : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %dw = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%pd, %wd : tensor<1x6x6x16xf32>, tensor<3x3x16xf32>) outs(%db : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %a2e = tensor.empty() : tensor<1x4x4x16xf32>
  %a2a = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dw, %zero_t : tensor<1x4x4x16xf32>, tensor<f32>) outs(%a2e : tensor<1x4x4x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %m = arith.cmpf ogt, %in, %c : f32
    %r = arith.select %m, %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %a2 = linalg.generic {indexing_maps = [#sc, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%six_t, %a2a : tensor<f32>, tensor<1x4x4x16xf32>) outs(%a2e : tensor<1x4x4x16xf32>) {
  ^bb0(%c: f32, %in: f32, %out: f32):
    %m = arith.cmpf olt, %c, %in : f32
    %r = arith.select %m, %c, %in : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %p0 = tensor.empty() : tensor<1x4x4x8xf32>
  %pb = linalg.fill ins(%zero : f32) outs(%p0 : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %pr = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%a2, %wp : tensor<1x4x4x16xf32>, tensor<1x1x16x8xf32>) outs(%pb : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %pr : tensor<1x4x4x8xf32>
}

// -----
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>
// The expanded tensor is also returned: the expand conv and its activation stay, the
// kernel starts at the activation's result (no expand step: 16 channels in, no we/be).
// Only with without-expand=true:
// EXPAND-LABEL: func.func @expanded_has_other_use(
// EXPAND-NOT: call
// EXPAND: linalg.depthwise_conv_2d_nhwc_hwc
// CHECK-LABEL: func.func private @xgen_inverted_residual_1(tensor<256xf32>, tensor<296xf32>)
// CHECK-LABEL: func.func @expanded_has_other_use(
// CHECK: %[[E:.*]] = linalg.conv_2d_nhwc_hwcf
// CHECK: %[[A:.*]] = linalg.generic
// CHECK: %[[A6:.*]] = linalg.generic
// CHECK-NOT: linalg.depthwise
// CHECK: %[[Y:.*]] = call @xgen_inverted_residual_1_call(%[[A6]],
// CHECK: return %[[Y]], %[[E]]
func.func @expanded_has_other_use(%x: tensor<1x4x4x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x4x4x16xf32>) {
  %we = arith.constant dense<0.25> : tensor<1x1x8x16xf32>
  %wd = arith.constant dense<0.5> : tensor<3x3x16xf32>
  %wp = arith.constant dense<0.125> : tensor<1x1x16x8xf32>
  %b = arith.constant 0.1 : f32
  %zero = arith.constant 0.0 : f32
  %padv = arith.constant 0.0 : f32
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %six_t = arith.constant dense<6.0> : tensor<f32>
  %e0 = tensor.empty() : tensor<1x4x4x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %ex = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %we : tensor<1x4x4x8xf32>, tensor<1x1x8x16xf32>) outs(%eb : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %a1e = tensor.empty() : tensor<1x4x4x16xf32>
  %a1a = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %zero_t : tensor<1x4x4x16xf32>, tensor<f32>) outs(%a1e : tensor<1x4x4x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %m = arith.cmpf ogt, %in, %c : f32
    %r = arith.select %m, %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %a1 = linalg.generic {indexing_maps = [#sc, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%six_t, %a1a : tensor<f32>, tensor<1x4x4x16xf32>) outs(%a1e : tensor<1x4x4x16xf32>) {
  ^bb0(%c: f32, %in: f32, %out: f32):
    %m = arith.cmpf olt, %c, %in : f32
    %r = arith.select %m, %c, %in : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %pd = tensor.pad %a1 low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %padv : f32
  } : tensor<1x4x4x16xf32> to tensor<1x6x6x16xf32>
  %d0 = tensor.empty() : tensor<1x4x4x16xf32>
  %db = linalg.fill ins(%b : f32) outs(%d0 : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %dw = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%pd, %wd : tensor<1x6x6x16xf32>, tensor<3x3x16xf32>) outs(%db : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %a2e = tensor.empty() : tensor<1x4x4x16xf32>
  %a2a = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dw, %zero_t : tensor<1x4x4x16xf32>, tensor<f32>) outs(%a2e : tensor<1x4x4x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %m = arith.cmpf ogt, %in, %c : f32
    %r = arith.select %m, %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %a2 = linalg.generic {indexing_maps = [#sc, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%six_t, %a2a : tensor<f32>, tensor<1x4x4x16xf32>) outs(%a2e : tensor<1x4x4x16xf32>) {
  ^bb0(%c: f32, %in: f32, %out: f32):
    %m = arith.cmpf olt, %c, %in : f32
    %r = arith.select %m, %c, %in : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %p0 = tensor.empty() : tensor<1x4x4x8xf32>
  %pb = linalg.fill ins(%zero : f32) outs(%p0 : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %pr = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%a2, %wp : tensor<1x4x4x16xf32>, tensor<1x1x16x8xf32>) outs(%pb : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %pr, %ex : tensor<1x4x4x8xf32>, tensor<1x4x4x16xf32>
}

// -----
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>
// An activation the kernel does not translate (math.exp) stays with the expand conv; the
// kernel starts after it. Only with without-expand=true:
// EXPAND-LABEL: func.func @exp_activation(
// EXPAND-NOT: call
// EXPAND: linalg.depthwise_conv_2d_nhwc_hwc
// CHECK-LABEL: func.func @exp_activation(
// CHECK: linalg.conv_2d_nhwc_hwcf
// CHECK: %[[X:.*]] = linalg.generic
// CHECK: math.exp
// CHECK: call @xgen_inverted_residual_1_call(%[[X]],
// CHECK-NOT: linalg.depthwise
func.func @exp_activation(%x: tensor<1x4x4x8xf32>) -> (tensor<1x4x4x8xf32>) {
  %we = arith.constant dense<0.25> : tensor<1x1x8x16xf32>
  %wd = arith.constant dense<0.5> : tensor<3x3x16xf32>
  %wp = arith.constant dense<0.125> : tensor<1x1x16x8xf32>
  %b = arith.constant 0.1 : f32
  %zero = arith.constant 0.0 : f32
  %padv = arith.constant 0.0 : f32
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %six_t = arith.constant dense<6.0> : tensor<f32>
  %e0 = tensor.empty() : tensor<1x4x4x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %ex = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %we : tensor<1x4x4x8xf32>, tensor<1x1x8x16xf32>) outs(%eb : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %a1e = tensor.empty() : tensor<1x4x4x16xf32>
  %a1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex : tensor<1x4x4x16xf32>) outs(%a1e : tensor<1x4x4x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %pd = tensor.pad %a1 low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %padv : f32
  } : tensor<1x4x4x16xf32> to tensor<1x6x6x16xf32>
  %d0 = tensor.empty() : tensor<1x4x4x16xf32>
  %db = linalg.fill ins(%b : f32) outs(%d0 : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %dw = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%pd, %wd : tensor<1x6x6x16xf32>, tensor<3x3x16xf32>) outs(%db : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %a2e = tensor.empty() : tensor<1x4x4x16xf32>
  %a2a = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dw, %zero_t : tensor<1x4x4x16xf32>, tensor<f32>) outs(%a2e : tensor<1x4x4x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %m = arith.cmpf ogt, %in, %c : f32
    %r = arith.select %m, %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %a2 = linalg.generic {indexing_maps = [#sc, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%six_t, %a2a : tensor<f32>, tensor<1x4x4x16xf32>) outs(%a2e : tensor<1x4x4x16xf32>) {
  ^bb0(%c: f32, %in: f32, %out: f32):
    %m = arith.cmpf olt, %c, %in : f32
    %r = arith.select %m, %c, %in : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %p0 = tensor.empty() : tensor<1x4x4x8xf32>
  %pb = linalg.fill ins(%zero : f32) outs(%p0 : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %pr = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%a2, %wp : tensor<1x4x4x16xf32>, tensor<1x1x16x8xf32>) outs(%pb : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %pr : tensor<1x4x4x8xf32>
}

// -----
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>
#nchw_swapped = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3, d2)>
// A residual block as torch-mlir gives it: the NCHW input is transposed for the block, the
// project's result transposed back and added to it. The add is taken into the kernel (it
// adds the input to its output); the kernel's NHWC result is transposed to the add's layout.
// CHECK-LABEL: func.func @residual_nchw(
// CHECK: %[[X:.*]] = linalg.transpose ins(%arg0 {{.*}} permutation = [0, 2, 3, 1]
// CHECK: %[[Y:.*]] = call @xgen_inverted_residual_1_call(%[[X]],
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[Y]] {{.*}} permutation = [0, 3, 1, 2]
// CHECK-NOT: arith.addf
// CHECK: return %[[T]]
func.func @residual_nchw(%xn: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %xe = tensor.empty() : tensor<1x4x4x8xf32>
  %x = linalg.transpose ins(%xn : tensor<1x8x4x4xf32>) outs(%xe : tensor<1x4x4x8xf32>) permutation = [0, 2, 3, 1]
  %we = arith.constant dense<0.25> : tensor<1x1x8x16xf32>
  %wd = arith.constant dense<0.5> : tensor<3x3x16xf32>
  %wp = arith.constant dense<0.125> : tensor<1x1x16x8xf32>
  %b = arith.constant 0.1 : f32
  %zero = arith.constant 0.0 : f32
  %padv = arith.constant 0.0 : f32
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %six_t = arith.constant dense<6.0> : tensor<f32>
  %e0 = tensor.empty() : tensor<1x4x4x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %ex = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %we : tensor<1x4x4x8xf32>, tensor<1x1x8x16xf32>) outs(%eb : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %a1e = tensor.empty() : tensor<1x4x4x16xf32>
  %a1a = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %zero_t : tensor<1x4x4x16xf32>, tensor<f32>) outs(%a1e : tensor<1x4x4x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %m = arith.cmpf ogt, %in, %c : f32
    %r = arith.select %m, %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %a1 = linalg.generic {indexing_maps = [#sc, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%six_t, %a1a : tensor<f32>, tensor<1x4x4x16xf32>) outs(%a1e : tensor<1x4x4x16xf32>) {
  ^bb0(%c: f32, %in: f32, %out: f32):
    %m = arith.cmpf olt, %c, %in : f32
    %r = arith.select %m, %c, %in : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %pd = tensor.pad %a1 low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %padv : f32
  } : tensor<1x4x4x16xf32> to tensor<1x6x6x16xf32>
  %d0 = tensor.empty() : tensor<1x4x4x16xf32>
  %db = linalg.fill ins(%b : f32) outs(%d0 : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %dw = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%pd, %wd : tensor<1x6x6x16xf32>, tensor<3x3x16xf32>) outs(%db : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %a2e = tensor.empty() : tensor<1x4x4x16xf32>
  %a2a = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dw, %zero_t : tensor<1x4x4x16xf32>, tensor<f32>) outs(%a2e : tensor<1x4x4x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %m = arith.cmpf ogt, %in, %c : f32
    %r = arith.select %m, %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %a2 = linalg.generic {indexing_maps = [#sc, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%six_t, %a2a : tensor<f32>, tensor<1x4x4x16xf32>) outs(%a2e : tensor<1x4x4x16xf32>) {
  ^bb0(%c: f32, %in: f32, %out: f32):
    %m = arith.cmpf olt, %c, %in : f32
    %r = arith.select %m, %c, %in : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %p0 = tensor.empty() : tensor<1x4x4x8xf32>
  %pb = linalg.fill ins(%zero : f32) outs(%p0 : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %pr = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%a2, %wp : tensor<1x4x4x16xf32>, tensor<1x1x16x8xf32>) outs(%pb : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %te = tensor.empty() : tensor<1x8x4x4xf32>
  %pt = linalg.transpose ins(%pr : tensor<1x4x4x8xf32>) outs(%te : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %re = tensor.empty() : tensor<1x8x4x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%xn, %pt : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) outs(%re : tensor<1x8x4x4xf32>) {
  ^bb0(%a: f32, %b2: f32, %out: f32):
    %s = arith.addf %a, %b2 : f32
    linalg.yield %s : f32
  } -> tensor<1x8x4x4xf32>
  return %r : tensor<1x8x4x4xf32>
}

// -----
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>
#nchw_swapped = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3, d2)>
// Must not take the add in: it adds another tensor (the block stays fused, the add stays).
// CHECK-LABEL: func.func @residual_other_tensor(
// CHECK: call @xgen_inverted_residual_1_call(
// CHECK: arith.addf
func.func @residual_other_tensor(%xn: tensor<1x8x4x4xf32>, %other: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %xe = tensor.empty() : tensor<1x4x4x8xf32>
  %x = linalg.transpose ins(%xn : tensor<1x8x4x4xf32>) outs(%xe : tensor<1x4x4x8xf32>) permutation = [0, 2, 3, 1]
  %we = arith.constant dense<0.25> : tensor<1x1x8x16xf32>
  %wd = arith.constant dense<0.5> : tensor<3x3x16xf32>
  %wp = arith.constant dense<0.125> : tensor<1x1x16x8xf32>
  %b = arith.constant 0.1 : f32
  %zero = arith.constant 0.0 : f32
  %padv = arith.constant 0.0 : f32
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %six_t = arith.constant dense<6.0> : tensor<f32>
  %e0 = tensor.empty() : tensor<1x4x4x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %ex = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %we : tensor<1x4x4x8xf32>, tensor<1x1x8x16xf32>) outs(%eb : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %a1e = tensor.empty() : tensor<1x4x4x16xf32>
  %a1a = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %zero_t : tensor<1x4x4x16xf32>, tensor<f32>) outs(%a1e : tensor<1x4x4x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %m = arith.cmpf ogt, %in, %c : f32
    %r = arith.select %m, %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %a1 = linalg.generic {indexing_maps = [#sc, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%six_t, %a1a : tensor<f32>, tensor<1x4x4x16xf32>) outs(%a1e : tensor<1x4x4x16xf32>) {
  ^bb0(%c: f32, %in: f32, %out: f32):
    %m = arith.cmpf olt, %c, %in : f32
    %r = arith.select %m, %c, %in : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %pd = tensor.pad %a1 low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %padv : f32
  } : tensor<1x4x4x16xf32> to tensor<1x6x6x16xf32>
  %d0 = tensor.empty() : tensor<1x4x4x16xf32>
  %db = linalg.fill ins(%b : f32) outs(%d0 : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %dw = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%pd, %wd : tensor<1x6x6x16xf32>, tensor<3x3x16xf32>) outs(%db : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %a2e = tensor.empty() : tensor<1x4x4x16xf32>
  %a2a = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dw, %zero_t : tensor<1x4x4x16xf32>, tensor<f32>) outs(%a2e : tensor<1x4x4x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %m = arith.cmpf ogt, %in, %c : f32
    %r = arith.select %m, %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %a2 = linalg.generic {indexing_maps = [#sc, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%six_t, %a2a : tensor<f32>, tensor<1x4x4x16xf32>) outs(%a2e : tensor<1x4x4x16xf32>) {
  ^bb0(%c: f32, %in: f32, %out: f32):
    %m = arith.cmpf olt, %c, %in : f32
    %r = arith.select %m, %c, %in : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %p0 = tensor.empty() : tensor<1x4x4x8xf32>
  %pb = linalg.fill ins(%zero : f32) outs(%p0 : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %pr = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%a2, %wp : tensor<1x4x4x16xf32>, tensor<1x1x16x8xf32>) outs(%pb : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %te = tensor.empty() : tensor<1x8x4x4xf32>
  %pt = linalg.transpose ins(%pr : tensor<1x4x4x8xf32>) outs(%te : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %re = tensor.empty() : tensor<1x8x4x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%other, %pt : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) outs(%re : tensor<1x8x4x4xf32>) {
  ^bb0(%a: f32, %b2: f32, %out: f32):
    %s = arith.addf %a, %b2 : f32
    linalg.yield %s : f32
  } -> tensor<1x8x4x4xf32>
  return %r : tensor<1x8x4x4xf32>
}

// -----
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>
#nchw_swapped = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3, d2)>
// Must not take the add in: it reads the input with H and W swapped, not element for element.
// CHECK-LABEL: func.func @residual_hw_swapped(
// CHECK: call @xgen_inverted_residual_1_call(
// CHECK: arith.addf
func.func @residual_hw_swapped(%xn: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %xe = tensor.empty() : tensor<1x4x4x8xf32>
  %x = linalg.transpose ins(%xn : tensor<1x8x4x4xf32>) outs(%xe : tensor<1x4x4x8xf32>) permutation = [0, 2, 3, 1]
  %we = arith.constant dense<0.25> : tensor<1x1x8x16xf32>
  %wd = arith.constant dense<0.5> : tensor<3x3x16xf32>
  %wp = arith.constant dense<0.125> : tensor<1x1x16x8xf32>
  %b = arith.constant 0.1 : f32
  %zero = arith.constant 0.0 : f32
  %padv = arith.constant 0.0 : f32
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %six_t = arith.constant dense<6.0> : tensor<f32>
  %e0 = tensor.empty() : tensor<1x4x4x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %ex = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %we : tensor<1x4x4x8xf32>, tensor<1x1x8x16xf32>) outs(%eb : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %a1e = tensor.empty() : tensor<1x4x4x16xf32>
  %a1a = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %zero_t : tensor<1x4x4x16xf32>, tensor<f32>) outs(%a1e : tensor<1x4x4x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %m = arith.cmpf ogt, %in, %c : f32
    %r = arith.select %m, %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %a1 = linalg.generic {indexing_maps = [#sc, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%six_t, %a1a : tensor<f32>, tensor<1x4x4x16xf32>) outs(%a1e : tensor<1x4x4x16xf32>) {
  ^bb0(%c: f32, %in: f32, %out: f32):
    %m = arith.cmpf olt, %c, %in : f32
    %r = arith.select %m, %c, %in : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %pd = tensor.pad %a1 low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %padv : f32
  } : tensor<1x4x4x16xf32> to tensor<1x6x6x16xf32>
  %d0 = tensor.empty() : tensor<1x4x4x16xf32>
  %db = linalg.fill ins(%b : f32) outs(%d0 : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %dw = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%pd, %wd : tensor<1x6x6x16xf32>, tensor<3x3x16xf32>) outs(%db : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %a2e = tensor.empty() : tensor<1x4x4x16xf32>
  %a2a = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dw, %zero_t : tensor<1x4x4x16xf32>, tensor<f32>) outs(%a2e : tensor<1x4x4x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %m = arith.cmpf ogt, %in, %c : f32
    %r = arith.select %m, %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %a2 = linalg.generic {indexing_maps = [#sc, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%six_t, %a2a : tensor<f32>, tensor<1x4x4x16xf32>) outs(%a2e : tensor<1x4x4x16xf32>) {
  ^bb0(%c: f32, %in: f32, %out: f32):
    %m = arith.cmpf olt, %c, %in : f32
    %r = arith.select %m, %c, %in : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x16xf32>
  %p0 = tensor.empty() : tensor<1x4x4x8xf32>
  %pb = linalg.fill ins(%zero : f32) outs(%p0 : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %pr = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%a2, %wp : tensor<1x4x4x16xf32>, tensor<1x1x16x8xf32>) outs(%pb : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %te = tensor.empty() : tensor<1x8x4x4xf32>
  %pt = linalg.transpose ins(%pr : tensor<1x4x4x8xf32>) outs(%te : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %re = tensor.empty() : tensor<1x8x4x4xf32>
  %r = linalg.generic {indexing_maps = [#nchw_swapped, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%xn, %pt : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) outs(%re : tensor<1x8x4x4xf32>) {
  ^bb0(%a: f32, %b2: f32, %out: f32):
    %s = arith.addf %a, %b2 : f32
    linalg.yield %s : f32
  } -> tensor<1x8x4x4xf32>
  return %r : tensor<1x8x4x4xf32>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>
// Batch 2: one call for both images; the executable's grid is (bands, images), and the kernel
// takes the image as workgroup y.
// CHECK-LABEL: func.func private @xgen_inverted_residual_1(tensor<256xf32>, tensor<440xf32>) -> tensor<256xf32>
// CHECK-SAME: xgen.executable = {{.*}}%gx = arith.constant 4 : index{{.*}}%gy = arith.constant 2 : index{{.*}}hal.import.static{{.*}}stream.dispatch.workgroup.id[1]
// CHECK-LABEL: func.func @batch2(
// CHECK: %[[Y:.*]] = call @xgen_inverted_residual_1_call(%arg0, %{{.*}})
// CHECK-NOT: linalg
// CHECK: return %[[Y]] : tensor<2x4x4x8xf32>
// SRC-DAG: size_t gx, size_t gy) {
// SRC-DAG: run_band(x + x_off + gy * 128, w + w_off,
func.func @batch2(%x: tensor<2x4x4x8xf32>) -> (tensor<2x4x4x8xf32>) {
  %we = arith.constant dense<0.25> : tensor<1x1x8x16xf32>
  %wd = arith.constant dense<0.5> : tensor<3x3x16xf32>
  %wp = arith.constant dense<0.125> : tensor<1x1x16x8xf32>
  %b = arith.constant 0.1 : f32
  %zero = arith.constant 0.0 : f32
  %padv = arith.constant 0.0 : f32
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %six_t = arith.constant dense<6.0> : tensor<f32>
  %e0 = tensor.empty() : tensor<2x4x4x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<2x4x4x16xf32>) -> tensor<2x4x4x16xf32>
  %ex = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %we : tensor<2x4x4x8xf32>, tensor<1x1x8x16xf32>) outs(%eb : tensor<2x4x4x16xf32>) -> tensor<2x4x4x16xf32>
  %a1e = tensor.empty() : tensor<2x4x4x16xf32>
  %a1a = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %zero_t : tensor<2x4x4x16xf32>, tensor<f32>) outs(%a1e : tensor<2x4x4x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %m = arith.cmpf ogt, %in, %c : f32
    %r = arith.select %m, %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4x16xf32>
  %a1 = linalg.generic {indexing_maps = [#sc, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%six_t, %a1a : tensor<f32>, tensor<2x4x4x16xf32>) outs(%a1e : tensor<2x4x4x16xf32>) {
  ^bb0(%c: f32, %in: f32, %out: f32):
    %m = arith.cmpf olt, %c, %in : f32
    %r = arith.select %m, %c, %in : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4x16xf32>
  %pd = tensor.pad %a1 low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %padv : f32
  } : tensor<2x4x4x16xf32> to tensor<2x6x6x16xf32>
  %d0 = tensor.empty() : tensor<2x4x4x16xf32>
  %db = linalg.fill ins(%b : f32) outs(%d0 : tensor<2x4x4x16xf32>) -> tensor<2x4x4x16xf32>
  %dw = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%pd, %wd : tensor<2x6x6x16xf32>, tensor<3x3x16xf32>) outs(%db : tensor<2x4x4x16xf32>) -> tensor<2x4x4x16xf32>
  %a2e = tensor.empty() : tensor<2x4x4x16xf32>
  %a2a = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dw, %zero_t : tensor<2x4x4x16xf32>, tensor<f32>) outs(%a2e : tensor<2x4x4x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %m = arith.cmpf ogt, %in, %c : f32
    %r = arith.select %m, %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4x16xf32>
  %a2 = linalg.generic {indexing_maps = [#sc, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%six_t, %a2a : tensor<f32>, tensor<2x4x4x16xf32>) outs(%a2e : tensor<2x4x4x16xf32>) {
  ^bb0(%c: f32, %in: f32, %out: f32):
    %m = arith.cmpf olt, %c, %in : f32
    %r = arith.select %m, %c, %in : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4x16xf32>
  %p0 = tensor.empty() : tensor<2x4x4x8xf32>
  %pb = linalg.fill ins(%zero : f32) outs(%p0 : tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32>
  %pr = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%a2, %wp : tensor<2x4x4x16xf32>, tensor<1x1x16x8xf32>) outs(%pb : tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32>
  return %pr : tensor<2x4x4x8xf32>
}


// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>
// Must not fire: a dynamic batch (the kernel is generated for a static one).
// CHECK-LABEL: func.func @dynamic_batch(
// CHECK-NOT: call
// CHECK: linalg.depthwise_conv_2d_nhwc_hwc
func.func @dynamic_batch(%x: tensor<?x4x4x8xf32>) -> (tensor<?x4x4x8xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x4x4x8xf32>
  %we = arith.constant dense<0.25> : tensor<1x1x8x16xf32>
  %wd = arith.constant dense<0.5> : tensor<3x3x16xf32>
  %wp = arith.constant dense<0.125> : tensor<1x1x16x8xf32>
  %b = arith.constant 0.1 : f32
  %zero = arith.constant 0.0 : f32
  %padv = arith.constant 0.0 : f32
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %six_t = arith.constant dense<6.0> : tensor<f32>
  %e0 = tensor.empty(%n) : tensor<?x4x4x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<?x4x4x16xf32>) -> tensor<?x4x4x16xf32>
  %ex = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %we : tensor<?x4x4x8xf32>, tensor<1x1x8x16xf32>) outs(%eb : tensor<?x4x4x16xf32>) -> tensor<?x4x4x16xf32>
  %a1e = tensor.empty(%n) : tensor<?x4x4x16xf32>
  %a1a = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %zero_t : tensor<?x4x4x16xf32>, tensor<f32>) outs(%a1e : tensor<?x4x4x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %m = arith.cmpf ogt, %in, %c : f32
    %r = arith.select %m, %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<?x4x4x16xf32>
  %a1 = linalg.generic {indexing_maps = [#sc, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%six_t, %a1a : tensor<f32>, tensor<?x4x4x16xf32>) outs(%a1e : tensor<?x4x4x16xf32>) {
  ^bb0(%c: f32, %in: f32, %out: f32):
    %m = arith.cmpf olt, %c, %in : f32
    %r = arith.select %m, %c, %in : f32
    linalg.yield %r : f32
  } -> tensor<?x4x4x16xf32>
  %pd = tensor.pad %a1 low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %padv : f32
  } : tensor<?x4x4x16xf32> to tensor<?x6x6x16xf32>
  %d0 = tensor.empty(%n) : tensor<?x4x4x16xf32>
  %db = linalg.fill ins(%b : f32) outs(%d0 : tensor<?x4x4x16xf32>) -> tensor<?x4x4x16xf32>
  %dw = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%pd, %wd : tensor<?x6x6x16xf32>, tensor<3x3x16xf32>) outs(%db : tensor<?x4x4x16xf32>) -> tensor<?x4x4x16xf32>
  %a2e = tensor.empty(%n) : tensor<?x4x4x16xf32>
  %a2a = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dw, %zero_t : tensor<?x4x4x16xf32>, tensor<f32>) outs(%a2e : tensor<?x4x4x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %m = arith.cmpf ogt, %in, %c : f32
    %r = arith.select %m, %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<?x4x4x16xf32>
  %a2 = linalg.generic {indexing_maps = [#sc, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%six_t, %a2a : tensor<f32>, tensor<?x4x4x16xf32>) outs(%a2e : tensor<?x4x4x16xf32>) {
  ^bb0(%c: f32, %in: f32, %out: f32):
    %m = arith.cmpf olt, %c, %in : f32
    %r = arith.select %m, %c, %in : f32
    linalg.yield %r : f32
  } -> tensor<?x4x4x16xf32>
  %p0 = tensor.empty(%n) : tensor<?x4x4x8xf32>
  %pb = linalg.fill ins(%zero : f32) outs(%p0 : tensor<?x4x4x8xf32>) -> tensor<?x4x4x8xf32>
  %pr = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%a2, %wp : tensor<?x4x4x16xf32>, tensor<1x1x16x8xf32>) outs(%pb : tensor<?x4x4x8xf32>) -> tensor<?x4x4x8xf32>
  return %pr : tensor<?x4x4x8xf32>
}

