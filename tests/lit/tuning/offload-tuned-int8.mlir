// REQUIRES: onednn-s8
// RUN: python %S/Inputs/offload_choices_db.py %s %t.db
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=tuned precision=int8 db=%t.db verbose=true},xgen-byoc-offload{backend=tuned phase=layout},xgen-byoc-offload{backend=tuned}' 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=WHY < %t.err
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=none precision=int8 db=%t.db},xgen-byoc-offload{backend=none phase=layout},xgen-byoc-offload{backend=none}' | FileCheck %s --check-prefix=OFF

// offload=tuned on the integer convs of a quantized model: the s8 records decide (oneDNN 2x:
// offloaded; oneDNN 0.67x: kept with IREE); an integer conv with no record starts in oneDNN
// (the prior: IREE has no fast integer conv), and so does an integer matmul with no record
// (IREE's i8 matmuls lost to oneDNN's on both AMD hosts measured). offload=none: nothing
// marked, nothing offloaded.

// CHECK-LABEL: func.func @int8_conv_onednn_wins
// CHECK: call @xgen_onednn_conv_{{[0-9]+}}_call
// CHECK-NOT: linalg.conv_2d
// CHECK-LABEL: func.func @int8_conv_onednn_slower
// CHECK-NOT: xgen_onednn
// CHECK: linalg.conv_2d_nchw_fchw_q
// CHECK-LABEL: func.func @int8_conv_no_record
// CHECK: call @xgen_onednn_conv_{{[0-9]+}}_call
// CHECK-LABEL: func.func @int8_matmul_no_record
// CHECK: call @xgen_onednn_matmul_{{[0-9]+}}_call
// CHECK-NOT: linalg.quantized_matmul
// Must not fire: a record says oneDNN is slower for this layer.
// CHECK-LABEL: func.func @int8_matmul_onednn_slower
// CHECK-NOT: xgen_onednn
// CHECK: linalg.quantized_matmul

// WHY: matmul 4x2 * 2x3 int8: onednn s8, no measurement on this host: an integer Linear layer starts in oneDNN
// WHY: matmul 4x2 * 2x5 int8: IREE, measured onednn s8 1.500 ms
// WHY: conv3x3 2->3 8x8 nchw pad int8: onednn, measured onednn s8 0.500 ms vs direct 1.000 ms (2.00x)
// WHY: conv3x3 2->4 8x8 nchw pad int8: direct, measured onednn s8 1.500 ms vs direct 1.000 ms (0.67x): below the 1.03x needed
// WHY: conv3x3 2->5 8x8 nchw pad int8: onednn, no measurement on this host: an integer conv starts in oneDNN

// OFF-NOT: xgen.offload
// OFF-NOT: xgen_onednn

func.func @int8_conv_onednn_wins(%x: tensor<1x2x8x8xi8>) -> tensor<1x3x8x8xi32> {
  %zp = arith.constant -3 : i32
  %zp8 = arith.constant -3 : i8
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<2> : tensor<3x2x3x3xi8>
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zp8 : i8
  } : tensor<1x2x8x8xi8> to tensor<1x2x10x10xi8>
  %e = tensor.empty() : tensor<1x3x8x8xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x3x8x8xi32>) -> tensor<1x3x8x8xi32>
  %y = linalg.conv_2d_nchw_fchw_q {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w, %zp, %c0 : tensor<1x2x10x10xi8>, tensor<3x2x3x3xi8>, i32, i32) outs(%i : tensor<1x3x8x8xi32>) -> tensor<1x3x8x8xi32>
  return %y : tensor<1x3x8x8xi32>
}

func.func @int8_conv_onednn_slower(%x: tensor<1x2x8x8xi8>) -> tensor<1x4x8x8xi32> {
  %zp = arith.constant -3 : i32
  %zp8 = arith.constant -3 : i8
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<2> : tensor<4x2x3x3xi8>
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zp8 : i8
  } : tensor<1x2x8x8xi8> to tensor<1x2x10x10xi8>
  %e = tensor.empty() : tensor<1x4x8x8xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x4x8x8xi32>) -> tensor<1x4x8x8xi32>
  %y = linalg.conv_2d_nchw_fchw_q {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w, %zp, %c0 : tensor<1x2x10x10xi8>, tensor<4x2x3x3xi8>, i32, i32) outs(%i : tensor<1x4x8x8xi32>) -> tensor<1x4x8x8xi32>
  return %y : tensor<1x4x8x8xi32>
}

func.func @int8_conv_no_record(%x: tensor<1x2x8x8xi8>) -> tensor<1x5x8x8xi32> {
  %zp = arith.constant -3 : i32
  %zp8 = arith.constant -3 : i8
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<2> : tensor<5x2x3x3xi8>
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zp8 : i8
  } : tensor<1x2x8x8xi8> to tensor<1x2x10x10xi8>
  %e = tensor.empty() : tensor<1x5x8x8xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x5x8x8xi32>) -> tensor<1x5x8x8xi32>
  %y = linalg.conv_2d_nchw_fchw_q {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w, %zp, %c0 : tensor<1x2x10x10xi8>, tensor<5x2x3x3xi8>, i32, i32) outs(%i : tensor<1x5x8x8xi32>) -> tensor<1x5x8x8xi32>
  return %y : tensor<1x5x8x8xi32>
}

func.func @int8_matmul_no_record(%x: tensor<4x2xi8>) -> tensor<4x3xi32> {
  %zp = arith.constant 7 : i32
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<[[1, 2, 3], [-4, -5, -6]]> : tensor<2x3xi8>
  %e = tensor.empty() : tensor<4x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<4x3xi32>) -> tensor<4x3xi32>
  %y = linalg.quantized_matmul ins(%x, %w, %zp, %c0 : tensor<4x2xi8>, tensor<2x3xi8>, i32, i32) outs(%i : tensor<4x3xi32>) -> tensor<4x3xi32>
  return %y : tensor<4x3xi32>
}

func.func @int8_matmul_onednn_slower(%x: tensor<4x2xi8>) -> tensor<4x5xi32> {
  %zp = arith.constant 7 : i32
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<[[1, 2, 3, 4, 5], [-4, -5, -6, -7, -8]]> : tensor<2x5xi8>
  %e = tensor.empty() : tensor<4x5xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<4x5xi32>) -> tensor<4x5xi32>
  %y = linalg.quantized_matmul ins(%x, %w, %zp, %c0 : tensor<4x2xi8>, tensor<2x5xi8>, i32, i32) outs(%i : tensor<4x5xi32>) -> tensor<4x5xi32>
  return %y : tensor<4x5xi32>
}
