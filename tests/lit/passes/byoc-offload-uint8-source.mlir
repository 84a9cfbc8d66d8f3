// REQUIRES: onednn-s8
// An integer matmul whose int8 source is the frontend's "- 128" of a uint8 quantization's
// bytes reads those bytes as a uint8 source (compute types u8, u8f, u8q), its zero point
// plus 128 (a run-time one that is "z - 128" is z): the same sums, and oneDNN's u8 x s8
// kernels then need no compensation of an int8 source. The "- 128" goes where nothing else
// reads it. Must not fire on an int8 source that is not such a flip ("- 127"), nor with
// int8-bytes=int8; a flip that something else reads stays for that reader.
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn}' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn int8-bytes=int8}' | FileCheck %s --check-prefix=INT8

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// Dynamic quantization: the zero point computed at run time from a uint8 one, the sums
// dequantized in the primitive (u8f); the call reads the uint8 bytes and z itself.
// CHECK: @xgen_dnnl_matmul_u8f_none_nb_4_2_3_r_p1(memref<8xi8>, memref<6xi8>, memref<1xi32>, memref<3xf32>, memref<12xf32>, index)
// CHECK-LABEL: func.func @dynamic_uint8
// CHECK: %[[ZP:.*]] = linalg.generic {{.*}} ins(%arg1 : tensor<i8>)
// CHECK-NEXT: ^bb0(%[[Z:.*]]: i8, %{{.*}}: i32):
// CHECK-NEXT: %[[W:.*]] = arith.extui %[[Z]] : i8 to i32
// CHECK-NEXT: linalg.yield %[[W]] : i32
// CHECK: call @xgen_onednn_matmul_{{[0-9]+}}_call(%arg0, %{{.*}}, %[[ZP]], %arg2)
// CHECK-NOT: arith.addi
// CHECK: return
func.func @dynamic_uint8(%u: tensor<4x2xi8>, %z: tensor<i8>, %scale: tensor<3xf32>) -> tensor<4x3xf32> {
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<[[1, 2, 3], [-4, -5, -6]]> : tensor<2x3xi8>
  %f = arith.constant -128 : i8
  %m128 = arith.constant -128 : i32
  %zu = tensor.extract %z[] : tensor<i8>
  %zw = arith.extui %zu : i8 to i32
  %zp = arith.addi %zw, %m128 : i32
  %e8 = tensor.empty() : tensor<4x2xi8>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%u : tensor<4x2xi8>) outs(%e8 : tensor<4x2xi8>) {
  ^bb0(%a: i8, %o: i8):
    %v = arith.addi %a, %f : i8
    linalg.yield %v : i8
  } -> tensor<4x2xi8>
  %e = tensor.empty() : tensor<4x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<4x3xi32>) -> tensor<4x3xi32>
  %acc = linalg.quantized_matmul ins(%x, %w, %zp, %c0 : tensor<4x2xi8>, tensor<2x3xi8>, i32, i32) outs(%i : tensor<4x3xi32>) -> tensor<4x3xi32>
  %ef = tensor.empty() : tensor<4x3xf32>
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%acc : tensor<4x3xi32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: i32, %o: f32):
    %v = arith.sitofp %a : i32 to f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %s = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%d, %scale : tensor<4x3xf32>, tensor<3xf32>) outs(%ef : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  return %s : tensor<4x3xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// A constant zero point (static uint8 QDQ), the int32 sums out (u8): -3 as int8 is 125 as
// uint8.
// CHECK: @xgen_dnnl_matmul_u8_none_nb_4_2_3_125_p1(memref<8xi8>, memref<6xi8>, memref<12xi32>, index)
// CHECK-LABEL: func.func @static_uint8
// CHECK-NOT: linalg.generic
// CHECK: call @xgen_onednn_matmul_{{[0-9]+}}_call(%arg0, %{{.*}}) : (tensor<4x2xi8>, tensor<6xi8>) -> tensor<4x3xi32>
func.func @static_uint8(%u: tensor<4x2xi8>) -> tensor<4x3xi32> {
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<[[1, 2, 3], [-4, -5, -6]]> : tensor<2x3xi8>
  %f = arith.constant 128 : i8
  %zp = arith.constant -3 : i32
  %e8 = tensor.empty() : tensor<4x2xi8>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%u : tensor<4x2xi8>) outs(%e8 : tensor<4x2xi8>) {
  ^bb0(%a: i8, %o: i8):
    %v = arith.addi %a, %f : i8
    linalg.yield %v : i8
  } -> tensor<4x2xi8>
  %e = tensor.empty() : tensor<4x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<4x3xi32>) -> tensor<4x3xi32>
  %acc = linalg.quantized_matmul ins(%x, %w, %zp, %c0 : tensor<4x2xi8>, tensor<2x3xi8>, i32, i32) outs(%i : tensor<4x3xi32>) -> tensor<4x3xi32>
  return %acc : tensor<4x3xi32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// The flip read by something else too: the call still reads the uint8 bytes, the flip stays
// for its other reader.
// CHECK: @xgen_dnnl_matmul_u8_none_nb_4_2_3_125_p1(
// CHECK-LABEL: func.func @flip_read_elsewhere
// CHECK: %[[X:.*]] = linalg.generic
// CHECK: arith.addi
// CHECK: %[[Y:.*]] = call @xgen_onednn_matmul_{{[0-9]+}}_call(%arg0, %{{.*}})
// CHECK: return %[[Y]], %[[X]]
func.func @flip_read_elsewhere(%u: tensor<4x2xi8>) -> (tensor<4x3xi32>, tensor<4x2xi8>) {
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<[[1, 2, 3], [-4, -5, -6]]> : tensor<2x3xi8>
  %f = arith.constant -128 : i8
  %zp = arith.constant -3 : i32
  %e8 = tensor.empty() : tensor<4x2xi8>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%u : tensor<4x2xi8>) outs(%e8 : tensor<4x2xi8>) {
  ^bb0(%a: i8, %o: i8):
    %v = arith.addi %a, %f : i8
    linalg.yield %v : i8
  } -> tensor<4x2xi8>
  %e = tensor.empty() : tensor<4x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<4x3xi32>) -> tensor<4x3xi32>
  %acc = linalg.quantized_matmul ins(%x, %w, %zp, %c0 : tensor<4x2xi8>, tensor<2x3xi8>, i32, i32) outs(%i : tensor<4x3xi32>) -> tensor<4x3xi32>
  return %acc, %x : tensor<4x3xi32>, tensor<4x2xi8>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// Not a flip ("- 127"): the int8 values it computes, which the call reads plus 128 (the op
// computes its uint8 bytes instead: keep_uint8_between, byoc-offload-uint8-between.mlir);
// int8 with int8-bytes=int8.
// CHECK: @xgen_dnnl_matmul_u8_none_nb_4_2_3_125_p1(
// CHECK-LABEL: func.func @not_a_flip
// CHECK: %[[X:.*]] = linalg.generic {{.*}} ins(%arg0
// CHECK: %[[A:.*]] = arith.addi %in, %{{.*}} : i8
// CHECK: %[[B:.*]] = arith.addi %[[A]], %{{.*}} : i8
// CHECK-NEXT: linalg.yield %[[B]]
// CHECK: call @xgen_onednn_matmul_{{[0-9]+}}_call(%[[X]], %{{.*}})
// INT8: @xgen_dnnl_matmul_s8_none_nb_4_2_3_m3_p1(
// INT8-LABEL: func.func @not_a_flip
// INT8: %[[X:.*]] = linalg.generic
// INT8: call @xgen_onednn_matmul_{{[0-9]+}}_call(%[[X]], %{{.*}})
func.func @not_a_flip(%u: tensor<4x2xi8>) -> tensor<4x3xi32> {
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<[[1, 2, 3], [-4, -5, -6]]> : tensor<2x3xi8>
  %f = arith.constant -127 : i8
  %zp = arith.constant -3 : i32
  %e8 = tensor.empty() : tensor<4x2xi8>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%u : tensor<4x2xi8>) outs(%e8 : tensor<4x2xi8>) {
  ^bb0(%a: i8, %o: i8):
    %v = arith.addi %a, %f : i8
    linalg.yield %v : i8
  } -> tensor<4x2xi8>
  %e = tensor.empty() : tensor<4x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<4x3xi32>) -> tensor<4x3xi32>
  %acc = linalg.quantized_matmul ins(%x, %w, %zp, %c0 : tensor<4x2xi8>, tensor<2x3xi8>, i32, i32) outs(%i : tensor<4x3xi32>) -> tensor<4x3xi32>
  return %acc : tensor<4x3xi32>
}
