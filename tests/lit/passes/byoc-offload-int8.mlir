// REQUIRES: onednn-s8
// Integer contractions of quantized models (int8 source and weights, int32 result, zero
// points: torch-mlir's linalg.conv_2d_nchw_fchw_q and linalg.quantized_matmul) become calls of
// oneDNN s8 primitives: the conv goes NHWC in the layout phase, and a pad of its source with
// the source's zero point (a real zero) becomes the primitive's padding. The rescale after it
// stays with IREE; a zero point computed at run time is an operand. Not offloaded: weights
// zero point other than 0, weights that are not constant int8 (or differ per batch), an
// accumulator that is not zero.
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn phase=layout},xgen-cancel-reshapes,xgen-byoc-offload{backend=onednn}' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn phase=layout},xgen-cancel-reshapes,xgen-byoc-offload{backend=onednn verbose=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=WHY
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn phase=layout never=model.py:5:3,model.py:9:3},xgen-byoc-offload{backend=onednn never=model.py:5:3,model.py:9:3}' | FileCheck %s --check-prefix=NEVER
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=none}' | FileCheck %s --check-prefix=NONE
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=tuned}' | FileCheck %s --check-prefix=NONE

// NONE-NOT: xgen_dnnl

// NCHW conv, pad 1 with the zero point -3: NHWC int8 source [1,4,4,2] unpadded, HWIO weights
// (flattened), int32 result; zero point m3 (= -3) last, pads 1,1,1,1 in the name.
// CHECK: func.func private @[[K:xgen_onednn_conv_[0-9]+]](tensor<32xi8>, tensor<54xi8>) -> tensor<48xi32>
// CHECK-SAME: func.func private @xgen_dnnl_conv_s8_none_nb_1_4_4_2_4_4_3_3_3_1_1_1_1_1_1_1_1_1_m3_p1(memref<32xi8>, memref<54xi8>, memref<48xi32>, index) attributes {llvm.bareptr = true}
// CHECK-LABEL: func.func @conv_nchw
// CHECK: %[[T:.*]] = linalg.transpose ins(%arg0 : tensor<1x2x4x4xi8>) {{.*}} permutation = [0, 2, 3, 1]
// CHECK: call @[[K]]_call(%[[T]], %{{.*}}) : (tensor<1x4x4x2xi8>, tensor<54xi8>) -> tensor<1x4x4x3xi32>
// CHECK-NOT: tensor.pad
// CHECK-NOT: linalg.conv
// CHECK: return
// WHY: model.py:5:3: linalg.conv_2d_nhwc_hwcf_q -> onednn (int8)
// The user forbids it (offload_never): it stays NCHW, with IREE.
// NEVER-NOT: xgen_dnnl_conv_s8_none_nb_1_4_4_2
// NEVER-LABEL: func.func @conv_nchw
// NEVER: linalg.conv_2d_nchw_fchw_q
func.func @conv_nchw(%x: tensor<1x2x4x4xi8>) -> tensor<1x3x4x4xi32> {
  %zp = arith.constant -3 : i32
  %zp8 = arith.constant -3 : i8
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<[[[[1, 2, 3], [4, 5, 6], [7, 8, 9]], [[-1, -2, -3], [-4, -5, -6], [-7, -8, -9]]], [[[1, 0, 0], [0, 1, 0], [0, 0, 1]], [[2, 0, 0], [0, 2, 0], [0, 0, 2]]], [[[0, 0, 1], [0, 1, 0], [1, 0, 0]], [[3, 3, 3], [3, 3, 3], [3, 3, 3]]]]> : tensor<3x2x3x3xi8>
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zp8 : i8
  } : tensor<1x2x4x4xi8> to tensor<1x2x6x6xi8>
  %e = tensor.empty() : tensor<1x3x4x4xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x3x4x4xi32>) -> tensor<1x3x4x4xi32>
  %y = linalg.conv_2d_nchw_fchw_q {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w, %zp, %c0 : tensor<1x2x6x6xi8>, tensor<3x2x3x3xi8>, i32, i32) outs(%i : tensor<1x3x4x4xi32>) -> tensor<1x3x4x4xi32> loc("model.py":5:3)
  return %y : tensor<1x3x4x4xi32>
}

// -----

// A pad with another value than the zero point is not the conv's padding: the padded tensor
// is the source (pads 0 in the name), and the pad stays.
// CHECK: @xgen_dnnl_conv_s8_none_nb_1_4_4_1_2_2_1_3_3_1_1_0_0_0_0_1_1_1_5_p1(memref<16xi8>, memref<9xi8>, memref<4xi32>, index)
// CHECK-LABEL: func.func @pad_not_zero_point
// CHECK: tensor.pad
// CHECK: call @xgen_onednn_conv_{{[0-9]+}}_call
// WHY: linalg.conv_2d_nhwc_hwcf_q -> onednn (int8)
func.func @pad_not_zero_point(%x: tensor<1x2x2x1xi8>) -> tensor<1x2x2x1xi32> {
  %zp = arith.constant 5 : i32
  %v = arith.constant 0 : i8
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<1> : tensor<3x3x1x1xi8>
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %v : i8
  } : tensor<1x2x2x1xi8> to tensor<1x4x4x1xi8>
  %e = tensor.empty() : tensor<1x2x2x1xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x2x2x1xi32>) -> tensor<1x2x2x1xi32>
  %y = linalg.conv_2d_nhwc_hwcf_q {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w, %zp, %c0 : tensor<1x4x4x1xi8>, tensor<3x3x1x1xi8>, i32, i32) outs(%i : tensor<1x2x2x1xi32>) -> tensor<1x2x2x1xi32>
  return %y : tensor<1x2x2x1xi32>
}

// -----

// A quantized Linear: [4,2] int8 x constant [2,3] int8 -> [4,3] int32, zero point 7.
// CHECK: @xgen_dnnl_matmul_s8_none_nb_4_2_3_7_p1(memref<8xi8>, memref<6xi8>, memref<12xi32>, index)
// CHECK-LABEL: func.func @quantized_linear
// CHECK-DAG: %[[W:.*]] = arith.constant dense<[1, 2, 3, -4, -5, -6]> : tensor<6xi8>
// CHECK: call @xgen_onednn_matmul_{{[0-9]+}}_call(%arg0, %[[W]])
// CHECK-NOT: linalg.quantized_matmul
// WHY: model.py:9:3: linalg.quantized_matmul -> onednn (int8)
// NEVER-NOT: xgen_dnnl_matmul
// NEVER-LABEL: func.func @quantized_linear
// NEVER: linalg.quantized_matmul
func.func @quantized_linear(%x: tensor<4x2xi8>) -> tensor<4x3xi32> {
  %zp = arith.constant 7 : i32
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<[[1, 2, 3], [-4, -5, -6]]> : tensor<2x3xi8>
  %e = tensor.empty() : tensor<4x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<4x3xi32>) -> tensor<4x3xi32>
  %y = linalg.quantized_matmul ins(%x, %w, %zp, %c0 : tensor<4x2xi8>, tensor<2x3xi8>, i32, i32) outs(%i : tensor<4x3xi32>) -> tensor<4x3xi32> loc("model.py":9:3)
  return %y : tensor<4x3xi32>
}

// -----

// Must not fire: the weights' zero point is not 0 (oneDNN takes a source zero point only).
// CHECK-LABEL: func.func @weights_zero_point
// CHECK: linalg.quantized_matmul
// WHY: linalg.quantized_matmul kept: weights zero point not 0
func.func @weights_zero_point(%x: tensor<4x2xi8>) -> tensor<4x3xi32> {
  %zp = arith.constant 7 : i32
  %wzp = arith.constant 1 : i32
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<[[1, 2, 3], [-4, -5, -6]]> : tensor<2x3xi8>
  %e = tensor.empty() : tensor<4x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<4x3xi32>) -> tensor<4x3xi32>
  %y = linalg.quantized_matmul ins(%x, %w, %zp, %wzp : tensor<4x2xi8>, tensor<2x3xi8>, i32, i32) outs(%i : tensor<4x3xi32>) -> tensor<4x3xi32>
  return %y : tensor<4x3xi32>
}

// -----

// A zero point computed at run time (dynamic quantization) is an operand of the call, after
// the weights, as a tensor<1xi32>; the name ends in r. A batch matmul with one weight for
// every batch is one matmul of B*M rows.
// CHECK: @xgen_dnnl_matmul_s8_none_nb_8_2_3_r_p1(memref<16xi8>, memref<6xi8>, memref<1xi32>, memref<24xi32>, index)
// CHECK-LABEL: func.func @runtime_zero_point
// CHECK: %[[ZP:.*]] = tensor.from_elements %arg1 : tensor<1xi32>
// CHECK: call @xgen_onednn_matmul_{{[0-9]+}}_call(%arg0, %{{.*}}, %[[ZP]])
// CHECK-NOT: linalg.quantized_batch_matmul
// WHY: linalg.quantized_batch_matmul -> onednn (int8)
func.func @runtime_zero_point(%x: tensor<2x4x2xi8>, %zp: i32) -> tensor<2x4x3xi32> {
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<[[[1, 2, 3], [-4, -5, -6]], [[1, 2, 3], [-4, -5, -6]]]> : tensor<2x2x3xi8>
  %e = tensor.empty() : tensor<2x4x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<2x4x3xi32>) -> tensor<2x4x3xi32>
  %y = linalg.quantized_batch_matmul ins(%x, %w, %zp, %c0 : tensor<2x4x2xi8>, tensor<2x2x3xi8>, i32, i32) outs(%i : tensor<2x4x3xi32>) -> tensor<2x4x3xi32>
  return %y : tensor<2x4x3xi32>
}

// -----

// Must not fire: weights that are an argument, weights that differ per batch, an accumulator
// that is not zero.
// CHECK-LABEL: func.func @not_constant
// CHECK-COUNT-3: linalg.quantized
// WHY: linalg.quantized_matmul kept: weights not constant int8
// WHY: linalg.quantized_batch_matmul kept: constant weights differ per batch
// WHY: linalg.quantized_matmul kept: accumulator init not zero
func.func @not_constant(%x: tensor<4x2xi8>, %x3: tensor<2x4x2xi8>, %wa: tensor<2x3xi8>) -> (tensor<4x3xi32>, tensor<2x4x3xi32>, tensor<4x3xi32>) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %w = arith.constant dense<[[1, 2, 3], [-4, -5, -6]]> : tensor<2x3xi8>
  %w2 = arith.constant dense<[[[1, 2, 3], [-4, -5, -6]], [[1, 2, 3], [-4, -5, 6]]]> : tensor<2x2x3xi8>
  %e = tensor.empty() : tensor<4x3xi32>
  %e3 = tensor.empty() : tensor<2x4x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<4x3xi32>) -> tensor<4x3xi32>
  %i3 = linalg.fill ins(%c0 : i32) outs(%e3 : tensor<2x4x3xi32>) -> tensor<2x4x3xi32>
  %one = linalg.fill ins(%c1 : i32) outs(%e : tensor<4x3xi32>) -> tensor<4x3xi32>
  %a = linalg.quantized_matmul ins(%x, %wa, %c0, %c0 : tensor<4x2xi8>, tensor<2x3xi8>, i32, i32) outs(%i : tensor<4x3xi32>) -> tensor<4x3xi32>
  %b = linalg.quantized_batch_matmul ins(%x3, %w2, %c0, %c0 : tensor<2x4x2xi8>, tensor<2x2x3xi8>, i32, i32) outs(%i3 : tensor<2x4x3xi32>) -> tensor<2x4x3xi32>
  %c = linalg.quantized_matmul ins(%x, %w, %c0, %c0 : tensor<4x2xi8>, tensor<2x3xi8>, i32, i32) outs(%one : tensor<4x3xi32>) -> tensor<4x3xi32>
  return %a, %b, %c : tensor<4x3xi32>, tensor<2x4x3xi32>, tensor<4x3xi32>
}
