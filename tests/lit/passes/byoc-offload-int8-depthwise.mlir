// REQUIRES: onednn-s8
// A quantized model's depthwise conv, as the ONNX frontend imports it: an f32 conv of the exact
// integers (a quantize that writes them as f32, minus the zero point -3, padded with zeros),
// integer weights, then its requantization (scale and bias per channel, the output's quantize).
// With integer=convs (the target's integer_contractions keeps integer convs integer) it is one
// s8q primitive of 2 groups: the quantize made to write int8 is its source, the zero point -3
// its source's (a padded tap is a real zero), its output the requantized int8 tensor
// ("m3zm128"). Must not fire: integer=float (the f32 depthwise conv is the main walk's, an f32
// primitive), integer-depthwise=float, weights that are not integers, a source that is not a
// quantize's integers, sums read without a scale. An output the model reads as floats is an s8f
// primitive (dequantized in it). (int8-bytes=int8: the int8 forms; with uint8, the default,
// the quantize computes its uint8 bytes: byoc-offload-uint8-between.mlir.)
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn integer=convs int8-bytes=int8}' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn integer=convs int8-bytes=int8 verbose=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=WHY
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn}' | FileCheck %s --check-prefix=FLOAT
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn integer=convs integer-depthwise=float}' | FileCheck %s --check-prefix=FLOAT

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>

// The scales and the bias divided by the output's scale 0.25; the weights as int8.
// CHECK: @xgen_dnnl_conv_s8q_none_b_1_4_4_2_4_4_2_3_3_1_1_1_1_1_1_1_1_2_m3zm128_p1(memref<32xi8>, memref<18xi8>, memref<2xf32>, memref<2xf32>, memref<32xi8>, index)
// CHECK-LABEL: func.func @requantized
// CHECK: %[[SRC:.*]] = linalg.generic
// CHECK: arith.fptosi %{{.*}} : f32 to i8
// CHECK-DAG: arith.constant dense<[1, -2, 3, 4, 0, 1, -1, 2, 2, 2, 1, -128, 5, -5, 127, 3, 1, 0]> : tensor<18xi8>
// CHECK-DAG: arith.constant dense<[4.000000e+00, -8.000000e+00]> : tensor<2xf32>
// CHECK-DAG: arith.constant dense<[2.000000e+00, 5.000000e-01]> : tensor<2xf32>
// CHECK: %[[Q:.*]] = call @xgen_onednn_conv_{{[0-9]+}}_call(%[[SRC]], {{.*}}) : (tensor<1x4x4x2xi8>, tensor<18xi8>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x4x4x2xi8>
// CHECK-NOT: linalg.depthwise_conv_2d_nhwc_hwc
// CHECK-NOT: tensor.pad
// CHECK: return %[[Q]]
// WHY: linalg.depthwise_conv_2d_nhwc_hwc -> onednn (int8 +requantize+bias)
// FLOAT-LABEL: func.func @requantized
// FLOAT: call @xgen_onednn_conv_{{[0-9]+}}_call({{.*}}) : (tensor<1x4x4x2xf32>, tensor<18xf32>, tensor<2xf32>) -> tensor<1x4x4x2xf32>

func.func @requantized(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xi8> {
  %s0 = arith.constant 0.5 : f32
  %zp0 = arith.constant -3.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %zpt = arith.constant dense<-3.0> : tensor<f32>
  %zero = arith.constant 0.0 : f32
  %os = arith.constant 0.25 : f32
  %ozp = arith.constant -128.0 : f32
  %w = arith.constant dense<[[[1.0, -2.0], [3.0, 4.0], [0.0, 1.0]], [[-1.0, 2.0], [2.0, 2.0], [1.0, -128.0]], [[5.0, -5.0], [127.0, 3.0], [1.0, 0.0]]]> : tensor<3x3x2xf32>
  %scale = arith.constant dense<[0.5, 0.125]> : tensor<2xf32>
  %bias = arith.constant dense<[1.0, -2.0]> : tensor<2xf32>
  %e = tensor.empty() : tensor<1x4x4x2xf32>
  %qf = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x4x4x2xf32>) outs(%e : tensor<1x4x4x2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.divf %a, %s0 : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %zp0 : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    linalg.yield %r3 : f32
  } -> tensor<1x4x4x2xf32>
  %int = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qf, %zpt : tensor<1x4x4x2xf32>, tensor<f32>) outs(%e : tensor<1x4x4x2xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.subf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x4x4x2xf32>
  %p = tensor.pad %int low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero : f32
  } : tensor<1x4x4x2xf32> to tensor<1x6x6x2xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %acc = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w : tensor<1x6x6x2xf32>, tensor<3x3x2xf32>) outs(%i : tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %s = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%acc, %scale : tensor<1x4x4x2xf32>, tensor<2xf32>) outs(%e : tensor<1x4x4x2xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x4x4x2xf32>
  %y = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %bias : tensor<1x4x4x2xf32>, tensor<2xf32>) outs(%e : tensor<1x4x4x2xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.addf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x4x4x2xf32>
  %eq = tensor.empty() : tensor<1x4x4x2xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : tensor<1x4x4x2xf32>) outs(%eq : tensor<1x4x4x2xi8>) {
  ^bb0(%a: f32, %o: i8):
    %v = arith.divf %a, %os : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %ozp : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    %r4 = arith.fptosi %r3 : f32 to i8
    linalg.yield %r4 : i8
  } -> tensor<1x4x4x2xi8>
  return %q : tensor<1x4x4x2xi8>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>

// Weights that are not all integers: an f32 depthwise conv (the main walk's).
// CHECK-LABEL: func.func @fractional_weights
// CHECK: call @xgen_onednn_conv_{{[0-9]+}}_call({{.*}}) : (tensor<1x4x4x2xf32>, tensor<18xf32>, tensor<2xf32>) -> tensor<1x4x4x2xf32>
// WHY: linalg.depthwise_conv_2d_nhwc_hwc -> onednn

func.func @fractional_weights(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xi8> {
  %s0 = arith.constant 0.5 : f32
  %zp0 = arith.constant -3.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %zpt = arith.constant dense<-3.0> : tensor<f32>
  %zero = arith.constant 0.0 : f32
  %os = arith.constant 0.25 : f32
  %ozp = arith.constant -128.0 : f32
  %w = arith.constant dense<[[[1.0, -2.0], [3.0, 4.0], [0.0, 1.0]], [[-1.0, 2.0], [2.0, 2.0], [1.0, -128.0]], [[5.0, -5.0], [127.0, 3.0], [1.0, 0.5]]]> : tensor<3x3x2xf32>
  %scale = arith.constant dense<[0.5, 0.125]> : tensor<2xf32>
  %bias = arith.constant dense<[1.0, -2.0]> : tensor<2xf32>
  %e = tensor.empty() : tensor<1x4x4x2xf32>
  %qf = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x4x4x2xf32>) outs(%e : tensor<1x4x4x2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.divf %a, %s0 : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %zp0 : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    linalg.yield %r3 : f32
  } -> tensor<1x4x4x2xf32>
  %int = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qf, %zpt : tensor<1x4x4x2xf32>, tensor<f32>) outs(%e : tensor<1x4x4x2xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.subf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x4x4x2xf32>
  %p = tensor.pad %int low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero : f32
  } : tensor<1x4x4x2xf32> to tensor<1x6x6x2xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %acc = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w : tensor<1x6x6x2xf32>, tensor<3x3x2xf32>) outs(%i : tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %s = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%acc, %scale : tensor<1x4x4x2xf32>, tensor<2xf32>) outs(%e : tensor<1x4x4x2xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x4x4x2xf32>
  %y = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %bias : tensor<1x4x4x2xf32>, tensor<2xf32>) outs(%e : tensor<1x4x4x2xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.addf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x4x4x2xf32>
  %eq = tensor.empty() : tensor<1x4x4x2xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : tensor<1x4x4x2xf32>) outs(%eq : tensor<1x4x4x2xi8>) {
  ^bb0(%a: f32, %o: i8):
    %v = arith.divf %a, %os : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %ozp : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    %r4 = arith.fptosi %r3 : f32 to i8
    linalg.yield %r4 : i8
  } -> tensor<1x4x4x2xi8>
  return %q : tensor<1x4x4x2xi8>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>

// A source that is not a quantize's integers: f32.
// CHECK-LABEL: func.func @not_quantized_source
// CHECK: call @xgen_onednn_conv_{{[0-9]+}}_call({{.*}}) : (tensor<1x4x4x2xf32>, tensor<18xf32>, tensor<2xf32>) -> tensor<1x4x4x2xf32>
// WHY: linalg.depthwise_conv_2d_nhwc_hwc -> onednn

func.func @not_quantized_source(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xi8> {
  %s0 = arith.constant 0.5 : f32
  %zp0 = arith.constant -3.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %zpt = arith.constant dense<-3.0> : tensor<f32>
  %zero = arith.constant 0.0 : f32
  %os = arith.constant 0.25 : f32
  %ozp = arith.constant -128.0 : f32
  %w = arith.constant dense<[[[1.0, -2.0], [3.0, 4.0], [0.0, 1.0]], [[-1.0, 2.0], [2.0, 2.0], [1.0, -128.0]], [[5.0, -5.0], [127.0, 3.0], [1.0, 0.0]]]> : tensor<3x3x2xf32>
  %scale = arith.constant dense<[0.5, 0.125]> : tensor<2xf32>
  %bias = arith.constant dense<[1.0, -2.0]> : tensor<2xf32>
  %e = tensor.empty() : tensor<1x4x4x2xf32>
  %int = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x4x4x2xf32>) outs(%e : tensor<1x4x4x2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.roundeven %a : f32
    linalg.yield %v : f32
  } -> tensor<1x4x4x2xf32>
  %p = tensor.pad %int low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero : f32
  } : tensor<1x4x4x2xf32> to tensor<1x6x6x2xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %acc = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w : tensor<1x6x6x2xf32>, tensor<3x3x2xf32>) outs(%i : tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %s = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%acc, %scale : tensor<1x4x4x2xf32>, tensor<2xf32>) outs(%e : tensor<1x4x4x2xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x4x4x2xf32>
  %y = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %bias : tensor<1x4x4x2xf32>, tensor<2xf32>) outs(%e : tensor<1x4x4x2xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.addf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x4x4x2xf32>
  %eq = tensor.empty() : tensor<1x4x4x2xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : tensor<1x4x4x2xf32>) outs(%eq : tensor<1x4x4x2xi8>) {
  ^bb0(%a: f32, %o: i8):
    %v = arith.divf %a, %os : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %ozp : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    %r4 = arith.fptosi %r3 : f32 to i8
    linalg.yield %r4 : i8
  } -> tensor<1x4x4x2xi8>
  return %q : tensor<1x4x4x2xi8>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>

// An output the model reads as floats (a SiLU after it, say): the dequantization (scale,
// bias) in the s8f primitive, which writes f32.
// CHECK: @xgen_dnnl_conv_s8f_none_b_1_4_4_2_4_4_2_3_3_1_1_1_1_1_1_1_1_2_m3_p1(memref<32xi8>, memref<18xi8>, memref<2xf32>, memref<2xf32>, memref<32xf32>, index)
// CHECK-LABEL: func.func @dequantized
// CHECK-DAG: arith.constant dense<[1.000000e+00, -2.000000e+00]> : tensor<2xf32>
// CHECK-DAG: arith.constant dense<[5.000000e-01, 1.250000e-01]> : tensor<2xf32>
// CHECK: %[[Y:.*]] = call @xgen_onednn_conv_{{[0-9]+}}_call({{.*}}) : (tensor<1x4x4x2xi8>, tensor<18xi8>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x4x4x2xf32>
// CHECK-NEXT: return %[[Y]]
// WHY: linalg.depthwise_conv_2d_nhwc_hwc -> onednn (int8 +dequantize+bias)

func.func @dequantized(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32> {
  %s0 = arith.constant 0.5 : f32
  %zp0 = arith.constant -3.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %zpt = arith.constant dense<-3.0> : tensor<f32>
  %zero = arith.constant 0.0 : f32
  %os = arith.constant 0.25 : f32
  %ozp = arith.constant -128.0 : f32
  %w = arith.constant dense<[[[1.0, -2.0], [3.0, 4.0], [0.0, 1.0]], [[-1.0, 2.0], [2.0, 2.0], [1.0, -128.0]], [[5.0, -5.0], [127.0, 3.0], [1.0, 0.0]]]> : tensor<3x3x2xf32>
  %scale = arith.constant dense<[0.5, 0.125]> : tensor<2xf32>
  %bias = arith.constant dense<[1.0, -2.0]> : tensor<2xf32>
  %e = tensor.empty() : tensor<1x4x4x2xf32>
  %qf = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x4x4x2xf32>) outs(%e : tensor<1x4x4x2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.divf %a, %s0 : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %zp0 : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    linalg.yield %r3 : f32
  } -> tensor<1x4x4x2xf32>
  %int = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qf, %zpt : tensor<1x4x4x2xf32>, tensor<f32>) outs(%e : tensor<1x4x4x2xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.subf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x4x4x2xf32>
  %p = tensor.pad %int low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero : f32
  } : tensor<1x4x4x2xf32> to tensor<1x6x6x2xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %acc = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w : tensor<1x6x6x2xf32>, tensor<3x3x2xf32>) outs(%i : tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %s = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%acc, %scale : tensor<1x4x4x2xf32>, tensor<2xf32>) outs(%e : tensor<1x4x4x2xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x4x4x2xf32>
  %y = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %bias : tensor<1x4x4x2xf32>, tensor<2xf32>) outs(%e : tensor<1x4x4x2xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.addf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x4x4x2xf32>
  return %y : tensor<1x4x4x2xf32>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>

// The sums themselves read (no scale after them): f32.
// CHECK-LABEL: func.func @raw_sums
// CHECK: call @xgen_onednn_conv_{{[0-9]+}}_call({{.*}}) : (tensor<1x4x4x2xf32>, tensor<18xf32>, tensor<2xf32>) -> tensor<1x4x4x2xf32>
// WHY: linalg.depthwise_conv_2d_nhwc_hwc -> onednn

func.func @raw_sums(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32> {
  %s0 = arith.constant 0.5 : f32
  %zp0 = arith.constant -3.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %zpt = arith.constant dense<-3.0> : tensor<f32>
  %zero = arith.constant 0.0 : f32
  %os = arith.constant 0.25 : f32
  %ozp = arith.constant -128.0 : f32
  %w = arith.constant dense<[[[1.0, -2.0], [3.0, 4.0], [0.0, 1.0]], [[-1.0, 2.0], [2.0, 2.0], [1.0, -128.0]], [[5.0, -5.0], [127.0, 3.0], [1.0, 0.0]]]> : tensor<3x3x2xf32>
  %scale = arith.constant dense<[0.5, 0.125]> : tensor<2xf32>
  %bias = arith.constant dense<[1.0, -2.0]> : tensor<2xf32>
  %e = tensor.empty() : tensor<1x4x4x2xf32>
  %qf = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x4x4x2xf32>) outs(%e : tensor<1x4x4x2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.divf %a, %s0 : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %zp0 : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    linalg.yield %r3 : f32
  } -> tensor<1x4x4x2xf32>
  %int = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qf, %zpt : tensor<1x4x4x2xf32>, tensor<f32>) outs(%e : tensor<1x4x4x2xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.subf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x4x4x2xf32>
  %p = tensor.pad %int low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero : f32
  } : tensor<1x4x4x2xf32> to tensor<1x6x6x2xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %acc = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w : tensor<1x6x6x2xf32>, tensor<3x3x2xf32>) outs(%i : tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %s = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%acc, %scale : tensor<1x4x4x2xf32>, tensor<2xf32>) outs(%e : tensor<1x4x4x2xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x4x4x2xf32>
  %y = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %bias : tensor<1x4x4x2xf32>, tensor<2xf32>) outs(%e : tensor<1x4x4x2xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.addf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x4x4x2xf32>
  return %acc : tensor<1x4x4x2xf32>
}
