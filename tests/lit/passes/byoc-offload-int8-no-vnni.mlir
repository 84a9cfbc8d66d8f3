// UNSUPPORTED: onednn-s8
// On a CPU without VNNI (an AVX2-only AMD EPYC) oneDNN's u8 x s8 kernels saturate pairs of
// products at int16, so the plugin refuses s8 primitives and every integer conv and matmul
// stays with IREE's exact integer code, each counted with the reason. (byoc-offload-int8.mlir
// checks the offload on a CPU with VNNI.)
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn phase=layout},xgen-cancel-reshapes,xgen-byoc-offload{backend=onednn}' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn phase=layout verbose=true},xgen-cancel-reshapes,xgen-byoc-offload{backend=onednn verbose=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=WHY

// CHECK-NOT: xgen_dnnl
// CHECK-LABEL: func.func @conv_nchw
// CHECK: linalg.conv_2d_nchw_fchw_q
// CHECK-LABEL: func.func @quantized_linear
// CHECK: linalg.quantized_matmul
// CHECK-NOT: xgen_dnnl
// WHY: model.py:5:3: linalg.conv_2d_nchw_fchw_q kept: onednn has no primitive for it
// WHY: model.py:9:3: linalg.quantized_matmul kept: onednn has no primitive for it
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

func.func @quantized_linear(%x: tensor<4x2xi8>) -> tensor<4x3xi32> {
  %zp = arith.constant 7 : i32
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<[[1, 2, 3], [-4, -5, -6]]> : tensor<2x3xi8>
  %e = tensor.empty() : tensor<4x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<4x3xi32>) -> tensor<4x3xi32>
  %y = linalg.quantized_matmul ins(%x, %w, %zp, %c0 : tensor<4x2xi8>, tensor<2x3xi8>, i32, i32) outs(%i : tensor<4x3xi32>) -> tensor<4x3xi32> loc("model.py":9:3)
  return %y : tensor<4x3xi32>
}
