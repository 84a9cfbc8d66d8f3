// Integer contractions (i8 x i8 -> i32 with zero points) as the f32 contraction of the same
// integers, rounded back to i32: operands sitofp(x) - zp (constants folded, a broadcast of a
// constant stays a broadcast of f32), an input pad with the zero point becomes a zero pad of
// the converted input, the result roundeven + fptosi.
// RUN: xgen-opt %s --split-input-file -p 'xgen-integer-in-float{mode=float}' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-integer-in-float{mode=integer}' | FileCheck %s --check-prefix=INT
// RUN: xgen-opt %s --split-input-file -p 'xgen-integer-in-float{mode=convs offload=none}' | FileCheck %s --check-prefix=CONVS
// RUN: xgen-opt %s --split-input-file -p 'xgen-integer-in-float{mode=float verbose=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=WHY
// RUN: not xgen-opt %s --split-input-file -p 'xgen-integer-in-float{mode=fast}' 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: xgen-opt %s --split-input-file -p 'xgen-integer-in-float{mode=float matvec=true}' | FileCheck %s --check-prefix=MV

// WHY: model.py:5:3: linalg.conv_2d_nchw_fchw_q -> f32
// WHY: model.py:9:3: linalg.quantized_matmul -> f32
// WHY: model.py:13:3: linalg.quantized_batch_matmul -> f32
// WHY: model.py:17:3: linalg.quantized_matmul -> f32
// WHY-NOT: model.py:21:3
// BAD: mode='fast' is not one of float, integer, convs

// CHECK-LABEL: func.func @conv_nchw
// CHECK-NOT: conv_2d_nchw_fchw_q
// CHECK: %[[X:.*]] = linalg.generic
// CHECK-SAME: ins(%arg0 : tensor<1x2x4x4xi8>) outs(%{{.*}} : tensor<1x2x4x4xf32>)
// CHECK: arith.sitofp %{{.*}} : i8 to f32
// CHECK: arith.subf %{{.*}}, %cst
// CHECK: %[[P:.*]] = tensor.pad %[[X]] low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor.yield %{{.*}} : f32
// CHECK: %[[W:.*]] = arith.constant dense<{{\[\[\[\[}}1.000000e+00, 2.000000e+00{{.*}} : tensor<3x2x3x3xf32>
// CHECK: %[[C:.*]] = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%[[P]], %[[W]] : tensor<1x2x6x6xf32>, tensor<3x2x3x3xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[C]] : tensor<1x3x4x4xf32>) outs(%{{.*}} : tensor<1x3x4x4xi32>)
// CHECK: math.roundeven
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// INT-LABEL: func.func @conv_nchw
// INT: linalg.conv_2d_nchw_fchw_q
// CONVS-LABEL: func.func @conv_nchw
// CONVS: linalg.conv_2d_nchw_fchw {
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

// A zero point computed at run time (dynamic quantization): converted inside the generic.
// CHECK-LABEL: func.func @quantized_linear
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<4x2xi8>)
// CHECK: %[[A:.*]] = arith.sitofp %{{.*}} : i8 to f32
// CHECK: %[[Z:.*]] = arith.sitofp %arg1 : i32 to f32
// CHECK: arith.subf %[[A]], %[[Z]]
// CHECK: arith.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [-4.000000e+00
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x2xf32>, tensor<2x3xf32>)
// CHECK: math.roundeven
// INT-LABEL: func.func @quantized_linear
// INT: linalg.quantized_matmul
// CONVS-LABEL: func.func @quantized_linear
// CONVS: linalg.quantized_matmul
func.func @quantized_linear(%x: tensor<4x2xi8>, %zp: i32) -> tensor<4x3xi32> {
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<[[1, 2, 3], [-4, -5, -6]]> : tensor<2x3xi8>
  %e = tensor.empty() : tensor<4x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<4x3xi32>) -> tensor<4x3xi32>
  %y = linalg.quantized_matmul ins(%x, %w, %zp, %c0 : tensor<4x2xi8>, tensor<2x3xi8>, i32, i32) outs(%i : tensor<4x3xi32>) -> tensor<4x3xi32> loc("model.py":9:3)
  return %y : tensor<4x3xi32>
}

// -----

// A weight broadcast over the batch (torch-mlir's batched Linear, and a 1x1 conv over image
// rows): one Linear, [B*M, K] x [K, N] by the folded f32 weights (zero point 2 subtracted).
// CHECK-LABEL: func.func @batched_linear
// CHECK: %[[R:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<2x4x2xi8> into tensor<8x2xi8>
// CHECK: %[[X:.*]] = linalg.generic {{.*}} ins(%[[R]] : tensor<8x2xi8>) outs(%{{.*}} : tensor<8x2xf32>)
// CHECK: %[[W:.*]] = arith.constant dense<{{\[\[}}-1.000000e+00, 0.000000e+00, 1.000000e+00], [-6.000000e+00{{.*}} : tensor<2x3xf32>
// CHECK: %[[M:.*]] = linalg.matmul ins(%[[X]], %[[W]] : tensor<8x2xf32>, tensor<2x3xf32>)
// CHECK: %[[I:.*]] = linalg.generic {{.*}} ins(%[[M]] : tensor<8x3xf32>) outs(%{{.*}} : tensor<8x3xi32>)
// CHECK: tensor.expand_shape %[[I]] {{\[\[}}0, 1], [2]] output_shape [2, 4, 3] : tensor<8x3xi32> into tensor<2x4x3xi32>
func.func @batched_linear(%x: tensor<2x4x2xi8>) -> tensor<2x4x3xi32> {
  %zp = arith.constant 5 : i32
  %wzp = arith.constant 2 : i32
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<[[1, 2, 3], [-4, -5, -6]]> : tensor<2x3xi8>
  %eb = tensor.empty() : tensor<2x2x3xi8>
  %wb = linalg.generic {indexing_maps = [affine_map<(b, k, n) -> (k, n)>, affine_map<(b, k, n) -> (b, k, n)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%w : tensor<2x3xi8>) outs(%eb : tensor<2x2x3xi8>) {
  ^bb0(%in: i8, %out: i8):
    linalg.yield %in : i8
  } -> tensor<2x2x3xi8>
  %e = tensor.empty() : tensor<2x4x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<2x4x3xi32>) -> tensor<2x4x3xi32>
  %y = linalg.quantized_batch_matmul ins(%x, %wb, %zp, %wzp : tensor<2x4x2xi8>, tensor<2x2x3xi8>, i32, i32) outs(%i : tensor<2x4x3xi32>) -> tensor<2x4x3xi32> loc("model.py":13:3)
  return %y : tensor<2x4x3xi32>
}

// -----

// Weights that differ per batch stay a batch matmul, of f32 constants.
// CHECK-LABEL: func.func @per_batch_weights
// CHECK: %[[W:.*]] = arith.constant dense<{{.*}}> : tensor<2x2x3xf32>
// CHECK: linalg.batch_matmul ins(%{{.*}}, %[[W]] : tensor<2x4x2xf32>, tensor<2x2x3xf32>)
func.func @per_batch_weights(%x: tensor<2x4x2xi8>) -> tensor<2x4x3xi32> {
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<[[[1, 2, 3], [-4, -5, -6]], [[1, 2, 3], [-4, -5, 7]]]> : tensor<2x2x3xi8>
  %e = tensor.empty() : tensor<2x4x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<2x4x3xi32>) -> tensor<2x4x3xi32>
  %y = linalg.quantized_batch_matmul ins(%x, %w, %c0, %c0 : tensor<2x4x2xi8>, tensor<2x2x3xi8>, i32, i32) outs(%i : tensor<2x4x3xi32>) -> tensor<2x4x3xi32>
  return %y : tensor<2x4x3xi32>
}

// -----

// A bias quantized to i32 in the accumulator (a fill, a per-channel broadcast): the same
// values as f32.
// CHECK-LABEL: func.func @bias_fill
// CHECK: %[[C:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[F:.*]] = linalg.fill ins(%[[C]] : f32)
// CHECK: linalg.matmul {{.*}} outs(%[[F]] : tensor<4x3xf32>)
func.func @bias_fill(%x: tensor<4x2xi8>) -> tensor<4x3xi32> {
  %zp = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %w = arith.constant dense<[[1, 2, 3], [-4, -5, -6]]> : tensor<2x3xi8>
  %e = tensor.empty() : tensor<4x3xi32>
  %i = linalg.fill ins(%c1 : i32) outs(%e : tensor<4x3xi32>) -> tensor<4x3xi32>
  %y = linalg.quantized_matmul ins(%x, %w, %zp, %zp : tensor<4x2xi8>, tensor<2x3xi8>, i32, i32) outs(%i : tensor<4x3xi32>) -> tensor<4x3xi32> loc("model.py":17:3)
  return %y : tensor<4x3xi32>
}

// -----

// CHECK-LABEL: func.func @bias_broadcast
// CHECK: %[[B:.*]] = arith.constant dense<[7.000000e+00, -2.000000e+00, 1.000000e+00]> : tensor<3xf32>
// CHECK: %[[I:.*]] = linalg.broadcast ins(%[[B]] : tensor<3xf32>) outs(%{{.*}} : tensor<4x3xf32>) dimensions = [0]
// CHECK: linalg.matmul {{.*}} outs(%[[I]] : tensor<4x3xf32>)
func.func @bias_broadcast(%x: tensor<4x2xi8>) -> tensor<4x3xi32> {
  %zp = arith.constant 0 : i32
  %bias = arith.constant dense<[7, -2, 1]> : tensor<3xi32>
  %w = arith.constant dense<[[1, 2, 3], [-4, -5, -6]]> : tensor<2x3xi8>
  %e = tensor.empty() : tensor<4x3xi32>
  %i = linalg.broadcast ins(%bias : tensor<3xi32>) outs(%e : tensor<4x3xi32>) dimensions = [0]
  %y = linalg.quantized_matmul ins(%x, %w, %zp, %zp : tensor<4x2xi8>, tensor<2x3xi8>, i32, i32) outs(%i : tensor<4x3xi32>) -> tensor<4x3xi32>
  return %y : tensor<4x3xi32>
}

// -----

// Must not fire: an accumulator computed at run time, and one not exact in f32 (2^24 + 1).
// CHECK-LABEL: func.func @kept_inits
// CHECK-COUNT-2: linalg.quantized_matmul
// CHECK-NOT: linalg.matmul
func.func @kept_inits(%x: tensor<4x2xi8>, %acc: tensor<4x3xi32>) -> (tensor<4x3xi32>, tensor<4x3xi32>) {
  %zp = arith.constant 0 : i32
  %big = arith.constant 16777217 : i32
  %w = arith.constant dense<[[1, 2, 3], [-4, -5, -6]]> : tensor<2x3xi8>
  %y = linalg.quantized_matmul ins(%x, %w, %zp, %zp : tensor<4x2xi8>, tensor<2x3xi8>, i32, i32) outs(%acc : tensor<4x3xi32>) -> tensor<4x3xi32>
  %e = tensor.empty() : tensor<4x3xi32>
  %i = linalg.fill ins(%big : i32) outs(%e : tensor<4x3xi32>) -> tensor<4x3xi32>
  %z = linalg.quantized_matmul ins(%x, %w, %zp, %zp : tensor<4x2xi8>, tensor<2x3xi8>, i32, i32) outs(%i : tensor<4x3xi32>) -> tensor<4x3xi32>
  return %y, %z : tensor<4x3xi32>, tensor<4x3xi32>
}

// -----

// Must not fire: an f32 contraction (nothing integer about it).
// CHECK-LABEL: func.func @float_matmul
// CHECK-NOT: linalg.generic
// CHECK: linalg.matmul ins(%arg0, %arg1 : tensor<4x2xf32>, tensor<2x3xf32>)
// CHECK-NOT: math.roundeven
func.func @float_matmul(%x: tensor<4x2xf32>, %w: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %i = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x2xf32>, tensor<2x3xf32>) outs(%i : tensor<4x3xf32>) -> tensor<4x3xf32> loc("model.py":21:3)
  return %y : tensor<4x3xf32>
}

// -----

// Two Linear layers reading one activation (attention's Q and K): one conversion of it, so
// xgen-merge-sibling-matmuls can still merge the two f32 matmuls.
// CHECK-LABEL: func.func @siblings
// CHECK-COUNT-1: arith.sitofp %{{.*}} : i8 to f32
// CHECK-NOT: arith.sitofp %{{.*}} : i8 to f32
// CHECK-COUNT-2: linalg.matmul ins(%[[X:.*]], %{{.*}} : tensor<4x2xf32>, tensor<2x3xf32>)
func.func @siblings(%x: tensor<1x4x2xi8>) -> (tensor<1x4x3xi32>, tensor<1x4x3xi32>) {
  %zp = arith.constant 3 : i32
  %c0 = arith.constant 0 : i32
  %w1 = arith.constant dense<[[[1, 2, 3], [-4, -5, -6]]]> : tensor<1x2x3xi8>
  %w2 = arith.constant dense<[[[7, 2, 3], [-4, -5, -6]]]> : tensor<1x2x3xi8>
  %e = tensor.empty() : tensor<1x4x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x4x3xi32>) -> tensor<1x4x3xi32>
  %y1 = linalg.quantized_batch_matmul ins(%x, %w1, %zp, %c0 : tensor<1x4x2xi8>, tensor<1x2x3xi8>, i32, i32) outs(%i : tensor<1x4x3xi32>) -> tensor<1x4x3xi32>
  %y2 = linalg.quantized_batch_matmul ins(%x, %w2, %zp, %c0 : tensor<1x4x2xi8>, tensor<1x2x3xi8>, i32, i32) outs(%i : tensor<1x4x3xi32>) -> tensor<1x4x3xi32>
  return %y1, %y2 : tensor<1x4x3xi32>, tensor<1x4x3xi32>
}

// -----

// Must not fire: weights computed at run time (a product of two activations).
// CHECK-LABEL: func.func @runtime_weights
// CHECK: linalg.quantized_matmul
// CHECK-NOT: linalg.matmul
func.func @runtime_weights(%x: tensor<4x2xi8>, %w: tensor<2x3xi8>) -> tensor<4x3xi32> {
  %zp = arith.constant 0 : i32
  %e = tensor.empty() : tensor<4x3xi32>
  %i = linalg.fill ins(%zp : i32) outs(%e : tensor<4x3xi32>) -> tensor<4x3xi32>
  %y = linalg.quantized_matmul ins(%x, %w, %zp, %zp : tensor<4x2xi8>, tensor<2x3xi8>, i32, i32) outs(%i : tensor<4x3xi32>) -> tensor<4x3xi32>
  return %y : tensor<4x3xi32>
}

// -----

// Must not fire: a one-row matmul (a classifier, a squeeze-excite's fc): IREE rejected the
// dispatch steps on its f32 form. Unless matvec=true (the pipeline's pointwise_matvec): then
// xgen-pointwise-kernels' matrix-vector kernel takes the f32 form, and IREE never sees it.
// CHECK-LABEL: func.func @one_row
// CHECK: linalg.quantized_matmul
// CHECK-NOT: linalg.matmul
// MV-LABEL: func.func @one_row
// MV-NOT: linalg.quantized_matmul
// MV: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<1x2xf32>, tensor<2x3xf32>)
// MV: math.roundeven
// MV: arith.fptosi %{{.*}} : f32 to i32
func.func @one_row(%x: tensor<1x2xi8>) -> tensor<1x3xi32> {
  %zp = arith.constant 0 : i32
  %w = arith.constant dense<[[1, 2, 3], [-4, -5, -6]]> : tensor<2x3xi8>
  %e = tensor.empty() : tensor<1x3xi32>
  %i = linalg.fill ins(%zp : i32) outs(%e : tensor<1x3xi32>) -> tensor<1x3xi32>
  %y = linalg.quantized_matmul ins(%x, %w, %zp, %zp : tensor<1x2xi8>, tensor<2x3xi8>, i32, i32) outs(%i : tensor<1x3xi32>) -> tensor<1x3xi32>
  return %y : tensor<1x3xi32>
}
