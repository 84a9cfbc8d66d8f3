// REQUIRES: onednn-s8
// A quantized Linear's dequantization goes into its oneDNN primitive (compute type s8f): the
// int32 sums' conversion and product by a scale per column (or one for all), the bias add
// and a ReLU or GELU after them, the GELU also as ONNX exports it (five elementwise ops). The
// scales are an operand after the zero point, a [N] f32 tensor; the call returns f32.
// Where the conversion has another user, the scale is not per column, or the GELU's
// intermediates are read elsewhere, the plain s8 primitive (int32 out) or an epilogue
// without the post-op is what fires.
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn}' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn verbose=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=WHY

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#all = affine_map<(d0, d1) -> ()>

// Dynamic quantization's shape: the zero point and the scales computed at run time, then the
// bias and an ONNX-style GELU (x / sqrt 2, erf, + 1, * x, * 0.5).
// CHECK: @xgen_dnnl_matmul_s8f_gelu_b_4_2_3_r_p1(memref<8xi8>, memref<6xi8>, memref<3xf32>, memref<1xi32>, memref<3xf32>, memref<12xf32>, index)
// CHECK-LABEL: func.func @dequantize_bias_gelu
// CHECK-DAG: %[[W:.*]] = arith.constant dense<[1, 2, 3, -4, -5, -6]> : tensor<6xi8>
// CHECK-DAG: %[[B:.*]] = arith.constant dense<[5.000000e-01, -1.000000e+00, 2.000000e+00]> : tensor<3xf32>
// CHECK-DAG: %[[ZP:.*]] = tensor.from_elements %arg1 : tensor<1xi32>
// CHECK: %[[Y:.*]] = call @xgen_onednn_matmul_{{[0-9]+}}_call(%arg0, %[[W]], %[[B]], %[[ZP]], %arg2) : (tensor<4x2xi8>, tensor<6xi8>, tensor<3xf32>, tensor<1xi32>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK-NOT: math.erf
// CHECK-NOT: arith.sitofp
// CHECK: return %[[Y]]
// WHY: linalg.quantized_matmul -> onednn (int8 +dequantize+bias+gelu)
func.func @dequantize_bias_gelu(%x: tensor<4x2xi8>, %zp: i32, %scale: tensor<3xf32>) -> tensor<4x3xf32> {
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<[[1, 2, 3], [-4, -5, -6]]> : tensor<2x3xi8>
  %bias = arith.constant dense<[0.5, -1.0, 2.0]> : tensor<3xf32>
  %sqrt2 = arith.constant dense<1.41421354> : tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %half = arith.constant dense<0.5> : tensor<f32>
  %e = tensor.empty() : tensor<4x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<4x3xi32>) -> tensor<4x3xi32>
  %acc = linalg.quantized_matmul ins(%x, %w, %zp, %c0 : tensor<4x2xi8>, tensor<2x3xi8>, i32, i32) outs(%i : tensor<4x3xi32>) -> tensor<4x3xi32>
  %ef = tensor.empty() : tensor<4x3xf32>
  %f = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%acc : tensor<4x3xi32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: i32, %o: f32):
    %v = arith.sitofp %a : i32 to f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %s = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%f, %scale : tensor<4x3xf32>, tensor<3xf32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %y = linalg.generic {indexing_maps = [#col, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%bias, %s : tensor<3xf32>, tensor<4x3xf32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.addf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %d = linalg.generic {indexing_maps = [#id, #all, #id], iterator_types = ["parallel", "parallel"]} ins(%y, %sqrt2 : tensor<4x3xf32>, tensor<f32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.divf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<4x3xf32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.erf %a : f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %p = linalg.generic {indexing_maps = [#id, #all, #id], iterator_types = ["parallel", "parallel"]} ins(%r, %one : tensor<4x3xf32>, tensor<f32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.addf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%y, %p : tensor<4x3xf32>, tensor<4x3xf32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %g = linalg.generic {indexing_maps = [#id, #all, #id], iterator_types = ["parallel", "parallel"]} ins(%m, %half : tensor<4x3xf32>, tensor<f32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  return %g : tensor<4x3xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#all = affine_map<(d0, d1) -> ()>

// One scale for all (0-d), no bias, a ReLU: the scale is broadcast to the [N] operand.
// CHECK: @xgen_dnnl_matmul_s8f_relu_nb_4_2_3_7_p1(memref<8xi8>, memref<6xi8>, memref<3xf32>, memref<12xf32>, index)
// CHECK-LABEL: func.func @one_scale_relu
// CHECK: %[[S:.*]] = linalg.generic {{.*}} ins(%arg1 : tensor<f32>) outs(%{{.*}} : tensor<3xf32>)
// CHECK: call @xgen_onednn_matmul_{{[0-9]+}}_call(%arg0, %{{.*}}, %[[S]]) : (tensor<4x2xi8>, tensor<6xi8>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK-NOT: arith.sitofp
// WHY: linalg.quantized_matmul -> onednn (int8 +dequantize+relu)
func.func @one_scale_relu(%x: tensor<4x2xi8>, %scale: tensor<f32>) -> tensor<4x3xf32> {
  %zp = arith.constant 7 : i32
  %c0 = arith.constant 0 : i32
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[[1, 2, 3], [-4, -5, -6]]> : tensor<2x3xi8>
  %e = tensor.empty() : tensor<4x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<4x3xi32>) -> tensor<4x3xi32>
  %acc = linalg.quantized_matmul ins(%x, %w, %zp, %c0 : tensor<4x2xi8>, tensor<2x3xi8>, i32, i32) outs(%i : tensor<4x3xi32>) -> tensor<4x3xi32>
  %ef = tensor.empty() : tensor<4x3xf32>
  %f = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%acc : tensor<4x3xi32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: i32, %o: f32):
    %v = arith.sitofp %a : i32 to f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %s = linalg.generic {indexing_maps = [#all, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%scale, %f : tensor<f32>, tensor<4x3xf32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<4x3xf32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.maximumf %a, %zero : f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#all = affine_map<(d0, d1) -> ()>

// Must not fire: the converted sums are read twice; the scale is per row, not per column.
// The plain s8 primitive takes both (int32 out), the epilogues stay with IREE.
// CHECK-LABEL: func.func @not_a_dequantize
// CHECK: call @xgen_onednn_matmul_{{[0-9]+}}_call({{.*}}) -> tensor<4x3xi32>
// CHECK: arith.sitofp
// CHECK: call @xgen_onednn_matmul_{{[0-9]+}}_call({{.*}}) -> tensor<4x3xi32>
// CHECK: arith.sitofp
// WHY: linalg.quantized_matmul -> onednn (int8)
// WHY: linalg.quantized_matmul -> onednn (int8)
func.func @not_a_dequantize(%x: tensor<4x2xi8>, %rows: tensor<4xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) {
  %zp = arith.constant 7 : i32
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<[[1, 2, 3], [-4, -5, -6]]> : tensor<2x3xi8>
  %e = tensor.empty() : tensor<4x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<4x3xi32>) -> tensor<4x3xi32>
  %ef = tensor.empty() : tensor<4x3xf32>
  %acc = linalg.quantized_matmul ins(%x, %w, %zp, %c0 : tensor<4x2xi8>, tensor<2x3xi8>, i32, i32) outs(%i : tensor<4x3xi32>) -> tensor<4x3xi32>
  %f = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%acc : tensor<4x3xi32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: i32, %o: f32):
    %v = arith.sitofp %a : i32 to f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%f, %f : tensor<4x3xf32>, tensor<4x3xf32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %acc2 = linalg.quantized_matmul ins(%x, %w, %zp, %c0 : tensor<4x2xi8>, tensor<2x3xi8>, i32, i32) outs(%i : tensor<4x3xi32>) -> tensor<4x3xi32>
  %f2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%acc2 : tensor<4x3xi32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: i32, %o: f32):
    %v = arith.sitofp %a : i32 to f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %r = linalg.generic {indexing_maps = [#id, affine_map<(d0, d1) -> (d0)>, #id], iterator_types = ["parallel", "parallel"]} ins(%f2, %rows : tensor<4x3xf32>, tensor<4xf32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  return %s, %f, %r : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#all = affine_map<(d0, d1) -> ()>

// The GELU's erf is read elsewhere too: the chain cannot go into the primitive, so the call
// stops at the dequantization (post-op none) and the GELU stays with IREE.
// CHECK: @xgen_dnnl_matmul_s8f_none_nb_4_2_3_0_p1
// CHECK-LABEL: func.func @gelu_read_elsewhere
// CHECK: call @xgen_onednn_matmul_{{[0-9]+}}_call
// CHECK: math.erf
// WHY: linalg.quantized_matmul -> onednn (int8 +dequantize)
func.func @gelu_read_elsewhere(%x: tensor<4x2xi8>, %scale: tensor<3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<[[1, 2, 3], [-4, -5, -6]]> : tensor<2x3xi8>
  %sqrt2 = arith.constant dense<1.41421354> : tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %half = arith.constant dense<0.5> : tensor<f32>
  %e = tensor.empty() : tensor<4x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<4x3xi32>) -> tensor<4x3xi32>
  %acc = linalg.quantized_matmul ins(%x, %w, %c0, %c0 : tensor<4x2xi8>, tensor<2x3xi8>, i32, i32) outs(%i : tensor<4x3xi32>) -> tensor<4x3xi32>
  %ef = tensor.empty() : tensor<4x3xf32>
  %f = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%acc : tensor<4x3xi32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: i32, %o: f32):
    %v = arith.sitofp %a : i32 to f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %y = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%f, %scale : tensor<4x3xf32>, tensor<3xf32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %d = linalg.generic {indexing_maps = [#id, #all, #id], iterator_types = ["parallel", "parallel"]} ins(%y, %sqrt2 : tensor<4x3xf32>, tensor<f32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.divf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<4x3xf32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.erf %a : f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %p = linalg.generic {indexing_maps = [#id, #all, #id], iterator_types = ["parallel", "parallel"]} ins(%r, %one : tensor<4x3xf32>, tensor<f32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.addf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%y, %p : tensor<4x3xf32>, tensor<4x3xf32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %g = linalg.generic {indexing_maps = [#id, #all, #id], iterator_types = ["parallel", "parallel"]} ins(%m, %half : tensor<4x3xf32>, tensor<f32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  return %g, %r : tensor<4x3xf32>, tensor<4x3xf32>
}
