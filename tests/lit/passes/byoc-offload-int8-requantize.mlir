// REQUIRES: onednn-s8
// An integer NHWC conv whose result the model requantizes straight away (a QDQ conv followed
// by its output's QuantizeLinear: float(sums) * scale[c] + bias[c], / out_scale, round to
// nearest even, + zero point, clamped to int8) is one s8q primitive writing the int8 tensor:
// the output's scale folded into the per-channel scales and the bias (constants), its zero
// point in the name after the source's ("0zm128"), a ReLU folded into the low clamp (at the
// zero point) its post-op. Must not fire: a clamp below 127 (a ReLU6), a quantize that reads
// a second tensor (a residual add): the plain s8 primitive, int32 out, the rest with IREE.
// A 1x1 conv imported as a matmul is requantized the same way, through the reshape back to
// NHWC and a transpose to NCHW before the quantize (the call then writes NHWC int8 and the
// transpose moves to the int8 tensor).
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn}' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn verbose=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=WHY

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>

// Requantized: the scales and the bias divided by the output's scale 0.25 (0.5 -> 2.0, ...;
// 1.0 -> 4.0, ...), zero points -3 (source) and -128 (output): int8 out.
// CHECK: @xgen_dnnl_conv_s8q_none_b_1_4_4_2_2_2_4_3_3_1_1_0_0_0_0_1_1_1_m3zm128_p1(memref<32xi8>, memref<72xi8>, memref<4xf32>, memref<4xf32>, memref<16xi8>, index)
// CHECK-LABEL: func.func @requantized
// CHECK-DAG: arith.constant dense<[4.000000e+00, -8.000000e+00, 2.000000e+00, 0.000000e+00]> : tensor<4xf32>
// CHECK-DAG: arith.constant dense<[2.000000e+00, 1.000000e+00, 5.000000e-01, 4.000000e+00]> : tensor<4xf32>
// CHECK: %[[Q:.*]] = call @xgen_onednn_conv_{{[0-9]+}}_call({{.*}}) : (tensor<1x4x4x2xi8>, tensor<72xi8>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x2x2x4xi8>
// CHECK-NOT: math.roundeven
// CHECK: return %[[Q]]
// WHY: linalg.conv_2d_nhwc_hwcf_q -> onednn (int8 +requantize+bias)
func.func @requantized(%x: tensor<1x4x4x2xi8>) -> tensor<1x2x2x4xi8> {
  %zp = arith.constant -3 : i32
  %c0 = arith.constant 0 : i32
  %os = arith.constant 0.25 : f32
  %ozp = arith.constant -128.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %w = arith.constant dense<[[[[1, 2, 3, 4], [-1, -2, -3, -4]], [[2, 0, 0, 1], [0, 2, 1, 0]], [[1, 1, 1, 1], [-1, 0, 1, 0]]], [[[1, 0, 0, 0], [0, 1, 0, 0]], [[0, 0, 1, 0], [0, 0, 0, 1]], [[3, 3, 3, 3], [1, 1, 1, 1]]], [[[0, 1, 0, 1], [1, 0, 1, 0]], [[2, 2, 2, 2], [-2, -2, -2, -2]], [[1, 2, 1, 2], [2, 1, 2, 1]]]]> : tensor<3x3x2x4xi8>
  %scale = arith.constant dense<[0.5, 0.25, 0.125, 1.0]> : tensor<4xf32>
  %bias = arith.constant dense<[1.0, -2.0, 0.5, 0.0]> : tensor<4xf32>
  %e = tensor.empty() : tensor<1x2x2x4xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x2x2x4xi32>) -> tensor<1x2x2x4xi32>
  %acc = linalg.conv_2d_nhwc_hwcf_q {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w, %zp, %c0 : tensor<1x4x4x2xi8>, tensor<3x3x2x4xi8>, i32, i32) outs(%i : tensor<1x2x2x4xi32>) -> tensor<1x2x2x4xi32>
  %ef = tensor.empty() : tensor<1x2x2x4xf32>
  %f = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%acc : tensor<1x2x2x4xi32>) outs(%ef : tensor<1x2x2x4xf32>) {
  ^bb0(%a: i32, %o: f32):
    %v = arith.sitofp %a : i32 to f32
    linalg.yield %v : f32
  } -> tensor<1x2x2x4xf32>
  %s = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%f, %scale : tensor<1x2x2x4xf32>, tensor<4xf32>) outs(%ef : tensor<1x2x2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x2x2x4xf32>
  %y = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %bias : tensor<1x2x2x4xf32>, tensor<4xf32>) outs(%ef : tensor<1x2x2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.addf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x2x2x4xf32>
  %eq = tensor.empty() : tensor<1x2x2x4xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : tensor<1x2x2x4xf32>) outs(%eq : tensor<1x2x2x4xi8>) {
  ^bb0(%a: f32, %o: i8):
    %v = arith.divf %a, %os : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %ozp : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    %r4 = arith.fptosi %r3 : f32 to i8
    linalg.yield %r4 : i8
  } -> tensor<1x2x2x4xi8>
  return %q : tensor<1x2x2x4xi8>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>

// A ReLU folded into the clamp: the low bound is the zero point 5, a ReLU post-op.
// CHECK: @xgen_dnnl_conv_s8q_relu_b_1_4_4_2_2_2_4_3_3_1_1_0_0_0_0_1_1_1_m3z5_p1(
// CHECK-LABEL: func.func @relu_folded
// WHY: linalg.conv_2d_nhwc_hwcf_q -> onednn (int8 +requantize+bias+relu)
func.func @relu_folded(%x: tensor<1x4x4x2xi8>) -> tensor<1x2x2x4xi8> {
  %zp = arith.constant -3 : i32
  %c0 = arith.constant 0 : i32
  %os = arith.constant 0.25 : f32
  %ozp = arith.constant 5.0 : f32
  %lo = arith.constant 5.0 : f32
  %hi = arith.constant 127.0 : f32
  %w = arith.constant dense<[[[[1, 2, 3, 4], [-1, -2, -3, -4]], [[2, 0, 0, 1], [0, 2, 1, 0]], [[1, 1, 1, 1], [-1, 0, 1, 0]]], [[[1, 0, 0, 0], [0, 1, 0, 0]], [[0, 0, 1, 0], [0, 0, 0, 1]], [[3, 3, 3, 3], [1, 1, 1, 1]]], [[[0, 1, 0, 1], [1, 0, 1, 0]], [[2, 2, 2, 2], [-2, -2, -2, -2]], [[1, 2, 1, 2], [2, 1, 2, 1]]]]> : tensor<3x3x2x4xi8>
  %scale = arith.constant dense<[0.5, 0.25, 0.125, 1.0]> : tensor<4xf32>
  %bias = arith.constant dense<[1.0, -2.0, 0.5, 0.0]> : tensor<4xf32>
  %e = tensor.empty() : tensor<1x2x2x4xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x2x2x4xi32>) -> tensor<1x2x2x4xi32>
  %acc = linalg.conv_2d_nhwc_hwcf_q {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w, %zp, %c0 : tensor<1x4x4x2xi8>, tensor<3x3x2x4xi8>, i32, i32) outs(%i : tensor<1x2x2x4xi32>) -> tensor<1x2x2x4xi32>
  %ef = tensor.empty() : tensor<1x2x2x4xf32>
  %f = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%acc : tensor<1x2x2x4xi32>) outs(%ef : tensor<1x2x2x4xf32>) {
  ^bb0(%a: i32, %o: f32):
    %v = arith.sitofp %a : i32 to f32
    linalg.yield %v : f32
  } -> tensor<1x2x2x4xf32>
  %s = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%f, %scale : tensor<1x2x2x4xf32>, tensor<4xf32>) outs(%ef : tensor<1x2x2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x2x2x4xf32>
  %y = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %bias : tensor<1x2x2x4xf32>, tensor<4xf32>) outs(%ef : tensor<1x2x2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.addf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x2x2x4xf32>
  %eq = tensor.empty() : tensor<1x2x2x4xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : tensor<1x2x2x4xf32>) outs(%eq : tensor<1x2x2x4xi8>) {
  ^bb0(%a: f32, %o: i8):
    %v = arith.divf %a, %os : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %ozp : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    %r4 = arith.fptosi %r3 : f32 to i8
    linalg.yield %r4 : i8
  } -> tensor<1x2x2x4xi8>
  return %q : tensor<1x2x2x4xi8>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>

// Must not fire: a clamp at 100 (a ReLU6 folded into the quantize): the plain s8 primitive.
// CHECK: @xgen_dnnl_conv_s8_none_nb_1_4_4_2_2_2_4_3_3_1_1_0_0_0_0_1_1_1_m3_p1(
// CHECK-LABEL: func.func @relu6_folded
// CHECK: math.roundeven
// WHY: linalg.conv_2d_nhwc_hwcf_q -> onednn (int8)
func.func @relu6_folded(%x: tensor<1x4x4x2xi8>) -> tensor<1x2x2x4xi8> {
  %zp = arith.constant -3 : i32
  %c0 = arith.constant 0 : i32
  %os = arith.constant 0.25 : f32
  %ozp = arith.constant -128.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 100.0 : f32
  %w = arith.constant dense<[[[[1, 2, 3, 4], [-1, -2, -3, -4]], [[2, 0, 0, 1], [0, 2, 1, 0]], [[1, 1, 1, 1], [-1, 0, 1, 0]]], [[[1, 0, 0, 0], [0, 1, 0, 0]], [[0, 0, 1, 0], [0, 0, 0, 1]], [[3, 3, 3, 3], [1, 1, 1, 1]]], [[[0, 1, 0, 1], [1, 0, 1, 0]], [[2, 2, 2, 2], [-2, -2, -2, -2]], [[1, 2, 1, 2], [2, 1, 2, 1]]]]> : tensor<3x3x2x4xi8>
  %scale = arith.constant dense<[0.5, 0.25, 0.125, 1.0]> : tensor<4xf32>
  %bias = arith.constant dense<[1.0, -2.0, 0.5, 0.0]> : tensor<4xf32>
  %e = tensor.empty() : tensor<1x2x2x4xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x2x2x4xi32>) -> tensor<1x2x2x4xi32>
  %acc = linalg.conv_2d_nhwc_hwcf_q {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w, %zp, %c0 : tensor<1x4x4x2xi8>, tensor<3x3x2x4xi8>, i32, i32) outs(%i : tensor<1x2x2x4xi32>) -> tensor<1x2x2x4xi32>
  %ef = tensor.empty() : tensor<1x2x2x4xf32>
  %f = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%acc : tensor<1x2x2x4xi32>) outs(%ef : tensor<1x2x2x4xf32>) {
  ^bb0(%a: i32, %o: f32):
    %v = arith.sitofp %a : i32 to f32
    linalg.yield %v : f32
  } -> tensor<1x2x2x4xf32>
  %s = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%f, %scale : tensor<1x2x2x4xf32>, tensor<4xf32>) outs(%ef : tensor<1x2x2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x2x2x4xf32>
  %y = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %bias : tensor<1x2x2x4xf32>, tensor<4xf32>) outs(%ef : tensor<1x2x2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.addf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x2x2x4xf32>
  %eq = tensor.empty() : tensor<1x2x2x4xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : tensor<1x2x2x4xf32>) outs(%eq : tensor<1x2x2x4xi8>) {
  ^bb0(%a: f32, %o: i8):
    %v = arith.divf %a, %os : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %ozp : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    %r4 = arith.fptosi %r3 : f32 to i8
    linalg.yield %r4 : i8
  } -> tensor<1x2x2x4xi8>
  return %q : tensor<1x2x2x4xi8>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>

// Must not fire: the quantize adds a residual first.
// CHECK: @xgen_dnnl_conv_s8_none_nb_1_4_4_2_2_2_4_3_3_1_1_0_0_0_0_1_1_1_m3_p1(
// CHECK-LABEL: func.func @residual
// CHECK: math.roundeven
// WHY: linalg.conv_2d_nhwc_hwcf_q -> onednn (int8)
func.func @residual(%x: tensor<1x4x4x2xi8>, %r: tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xi8> {
  %zp = arith.constant -3 : i32
  %c0 = arith.constant 0 : i32
  %os = arith.constant 0.25 : f32
  %ozp = arith.constant -128.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %w = arith.constant dense<[[[[1, 2, 3, 4], [-1, -2, -3, -4]], [[2, 0, 0, 1], [0, 2, 1, 0]], [[1, 1, 1, 1], [-1, 0, 1, 0]]], [[[1, 0, 0, 0], [0, 1, 0, 0]], [[0, 0, 1, 0], [0, 0, 0, 1]], [[3, 3, 3, 3], [1, 1, 1, 1]]], [[[0, 1, 0, 1], [1, 0, 1, 0]], [[2, 2, 2, 2], [-2, -2, -2, -2]], [[1, 2, 1, 2], [2, 1, 2, 1]]]]> : tensor<3x3x2x4xi8>
  %scale = arith.constant dense<[0.5, 0.25, 0.125, 1.0]> : tensor<4xf32>
  %bias = arith.constant dense<[1.0, -2.0, 0.5, 0.0]> : tensor<4xf32>
  %e = tensor.empty() : tensor<1x2x2x4xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x2x2x4xi32>) -> tensor<1x2x2x4xi32>
  %acc = linalg.conv_2d_nhwc_hwcf_q {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w, %zp, %c0 : tensor<1x4x4x2xi8>, tensor<3x3x2x4xi8>, i32, i32) outs(%i : tensor<1x2x2x4xi32>) -> tensor<1x2x2x4xi32>
  %ef = tensor.empty() : tensor<1x2x2x4xf32>
  %f = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%acc : tensor<1x2x2x4xi32>) outs(%ef : tensor<1x2x2x4xf32>) {
  ^bb0(%a: i32, %o: f32):
    %v = arith.sitofp %a : i32 to f32
    linalg.yield %v : f32
  } -> tensor<1x2x2x4xf32>
  %s = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%f, %scale : tensor<1x2x2x4xf32>, tensor<4xf32>) outs(%ef : tensor<1x2x2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x2x2x4xf32>
  %y = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %bias : tensor<1x2x2x4xf32>, tensor<4xf32>) outs(%ef : tensor<1x2x2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.addf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x2x2x4xf32>
  %eq = tensor.empty() : tensor<1x2x2x4xi8>
  %q = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y, %r : tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) outs(%eq : tensor<1x2x2x4xi8>) {
  ^bb0(%a: f32, %rr: f32, %o: i8):
    %a2 = arith.addf %a, %rr : f32
    %v = arith.divf %a2, %os : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %ozp : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    %r4 = arith.fptosi %r3 : f32 to i8
    linalg.yield %r4 : i8
  } -> tensor<1x2x2x4xi8>
  return %q : tensor<1x2x2x4xi8>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>
// A quantized matmul [4,2] x [2,3] (a 1x1 conv on 2x2 pixels), expanded to NHWC, requantized
// after a transpose to NCHW: the call returns the NHWC int8 tensor, then the transpose.
// CHECK: @xgen_dnnl_matmul_s8q_none_b_4_2_3_7zm128_p1(memref<8xi8>, memref<6xi8>, memref<3xf32>, memref<3xf32>, memref<12xi8>, index)
// CHECK-LABEL: func.func @matmul_through_views
// CHECK: %[[Q:.*]] = call @xgen_onednn_matmul_{{[0-9]+}}_call({{.*}}) -> tensor<1x2x2x3xi8>
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[Q]] : tensor<1x2x2x3xi8>) {{.*}} permutation = [0, 3, 1, 2]
// CHECK-NOT: math.roundeven
// CHECK: return %[[T]]
// WHY: linalg.quantized_matmul -> onednn (int8 +requantize+bias)
func.func @matmul_through_views(%x: tensor<4x2xi8>) -> tensor<1x3x2x2xi8> {
  %zp = arith.constant 7 : i32
  %c0 = arith.constant 0 : i32
  %os = arith.constant 0.5 : f32
  %ozp = arith.constant -128.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %w = arith.constant dense<[[1, 2, 3], [-4, -5, -6]]> : tensor<2x3xi8>
  %scale = arith.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %bias = arith.constant dense<[1.0, -2.0, 0.5]> : tensor<3xf32>
  %e = tensor.empty() : tensor<4x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<4x3xi32>) -> tensor<4x3xi32>
  %acc = linalg.quantized_matmul ins(%x, %w, %zp, %c0 : tensor<4x2xi8>, tensor<2x3xi8>, i32, i32) outs(%i : tensor<4x3xi32>) -> tensor<4x3xi32>
  %nhwc = tensor.expand_shape %acc [[0, 1, 2], [3]] output_shape [1, 2, 2, 3] : tensor<4x3xi32> into tensor<1x2x2x3xi32>
  %ef = tensor.empty() : tensor<1x2x2x3xf32>
  %f = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%nhwc : tensor<1x2x2x3xi32>) outs(%ef : tensor<1x2x2x3xf32>) {
  ^bb0(%a: i32, %o: f32):
    %v = arith.sitofp %a : i32 to f32
    linalg.yield %v : f32
  } -> tensor<1x2x2x3xf32>
  %s = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%f, %scale : tensor<1x2x2x3xf32>, tensor<3xf32>) outs(%ef : tensor<1x2x2x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x2x2x3xf32>
  %y = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %bias : tensor<1x2x2x3xf32>, tensor<3xf32>) outs(%ef : tensor<1x2x2x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.addf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x2x2x3xf32>
  %et = tensor.empty() : tensor<1x3x2x2xf32>
  %t = linalg.transpose ins(%y : tensor<1x2x2x3xf32>) outs(%et : tensor<1x3x2x2xf32>) permutation = [0, 3, 1, 2]
  %eq = tensor.empty() : tensor<1x3x2x2xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%t : tensor<1x3x2x2xf32>) outs(%eq : tensor<1x3x2x2xi8>) {
  ^bb0(%a: f32, %o: i8):
    %v = arith.divf %a, %os : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %ozp : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    %r4 = arith.fptosi %r3 : f32 to i8
    linalg.yield %r4 : i8
  } -> tensor<1x3x2x2xi8>
  return %q : tensor<1x3x2x2xi8>
}
