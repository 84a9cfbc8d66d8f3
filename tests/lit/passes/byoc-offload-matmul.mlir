// Matmuls with constant weights (Linear layers, as torch-mlir imports them) become calls of
// oneDNN matmul primitives in the call phase; a bias add after the matmul becomes the
// primitive's bias, a ReLU or a GELU its post-op. Matmuls of two activations stay with IREE.
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn}' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn verbose=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=WHY
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn precision=bf16}' | FileCheck %s --check-prefix=%if onednn-bf16 %{BF16%} %else %{NOBF16%}
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=none}' | FileCheck %s --check-prefix=NONE
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=tuned}' | FileCheck %s --check-prefix=NONE
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn phase=layout}' | FileCheck %s --check-prefix=NONE
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn threads=5}' | FileCheck %s --check-prefix=PARTS
// threads=T: up to T workgroups along the rows, never more than there are (4, then 5 of 5).
// PARTS: %parts = arith.constant 4 : index
// PARTS-SAME: @xgen_dnnl_matmul_f32_none_b_4_2_3_p4(
// PARTS: %parts = arith.constant 5 : index
// PARTS-SAME: @xgen_dnnl_matmul_f32_relu_b_5_4_2_p5(
// Without bf16 primitives on this CPU (AVX2 only), precision=bf16 keeps every matmul with IREE.
// NOBF16-NOT: xgen_dnnl
// NOBF16: func.func @linear(
// NOBF16: linalg.matmul
// NOBF16-NOT: xgen_dnnl

// xgen_dnnl_matmul_<compute>_<post>_<bias>_M_K_N: row-major [M,K] input, [K,N] weights
// (flattened), bias [N], [M,N] output.
// NONE-NOT: xgen_dnnl
// NONE-NOT: xgen.executable

// A Linear: x [4,2] times the transpose of W [3,2] (the [K,N] weights go flattened, row by
// row: [[1,3,5],[2,4,6]]), plus bias; the bias add and the matmul are gone.
// CHECK: func.func private @[[K:xgen_onednn_matmul_[0-9]+]](tensor<8xf32>, tensor<6xf32>, tensor<3xf32>) -> tensor<12xf32>
// CHECK-SAME: xgen.executable = "{{.*}}stream.return %parts, %c1, %c1
// CHECK-SAME: func.func private @xgen_dnnl_matmul_f32_none_b_4_2_3_p1(memref<8xf32>, memref<6xf32>, memref<3xf32>, memref<12xf32>, index) attributes {llvm.bareptr = true}
// CHECK-SAME: func.call @xgen_dnnl_matmul_f32_none_b_4_2_3_p1(%m0, %m1, %m2, %m3, %id)
// CHECK-LABEL: func.func @linear
// CHECK-DAG: %[[W:.*]] = arith.constant dense<[1.000000e+00, 3.000000e+00, 5.000000e+00, 2.000000e+00, 4.000000e+00, 6.000000e+00]> : tensor<6xf32>
// CHECK-DAG: %[[B:.*]] = arith.constant dense<[1.000000e-01, 2.000000e-01, 3.000000e-01]> : tensor<3xf32>
// CHECK: %[[R:.*]] = call @[[K]]_call(%arg0, %[[W]], %[[B]])
// CHECK-NOT: linalg
// CHECK: return %[[R]]
// BF16: xgen_dnnl_matmul_bf16_none_b_4_2_3_p1(
// BF16-NOT: xgen_dnnl_matmul_f32
// WHY: model.py:3:7: linalg.matmul -> onednn (+bias)
func.func @linear(%x: tensor<4x2xf32>) -> tensor<4x3xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %b = arith.constant dense<[0.1, 0.2, 0.3]> : tensor<3xf32>
  %et = tensor.empty() : tensor<2x3xf32>
  %wt = linalg.transpose ins(%w : tensor<3x2xf32>) outs(%et : tensor<2x3xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<4x3xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = linalg.matmul ins(%x, %wt : tensor<4x2xf32>, tensor<2x3xf32>) outs(%i : tensor<4x3xf32>) -> tensor<4x3xf32> loc("model.py":3:7)
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y, %b : tensor<4x3xf32>, tensor<3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %s = arith.addf %in, %in_1 : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  return %z : tensor<4x3xf32>
}

// -----

// An accumulator that is a per-column constant (a broadcast bias) plus a bias add: one bias,
// their sum; a NaN-keeping ReLU after it (torch-mlir's select of cmpf ugt) is the post-op.
// CHECK: @xgen_dnnl_matmul_f32_relu_b_5_4_2_p1(memref<20xf32>, memref<8xf32>, memref<2xf32>, memref<10xf32>, index)
// CHECK-LABEL: func.func @init_bias_relu
// CHECK-DAG: arith.constant dense<[1.500000e+00, -3.000000e+00]> : tensor<2xf32>
// CHECK-NOT: linalg
// CHECK: return
// BF16: xgen_dnnl_matmul_bf16_relu_b_5_4_2_p1(
// WHY: linalg.matmul -> onednn (+bias+relu)
func.func @init_bias_relu(%x: tensor<5x4xf32>) -> tensor<5x2xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.25> : tensor<4x2xf32>
  %c = arith.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %b = arith.constant dense<[0.5, -2.0]> : tensor<2xf32>
  %e = tensor.empty() : tensor<5x2xf32>
  %i = linalg.broadcast ins(%c : tensor<2xf32>) outs(%e : tensor<5x2xf32>) dimensions = [0]
  %y = linalg.matmul ins(%x, %w : tensor<5x4xf32>, tensor<4x2xf32>) outs(%i : tensor<5x2xf32>) -> tensor<5x2xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b, %y : tensor<2xf32>, tensor<5x2xf32>) outs(%e : tensor<5x2xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %s = arith.addf %in_1, %in : f32
    linalg.yield %s : f32
  } -> tensor<5x2xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%z : tensor<5x2xf32>) outs(%e : tensor<5x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %p = arith.cmpf ugt, %in, %zero : f32
    %s = arith.select %p, %in, %zero : f32
    linalg.yield %s : f32
  } -> tensor<5x2xf32>
  return %r : tensor<5x2xf32>
}

// -----

// A batch_matmul whose weights are one constant broadcast over the batch: one matmul of
// B*M = 6 rows, no bias add (a zero bias).
// CHECK: @xgen_dnnl_matmul_f32_none_b_6_4_5_p1(memref<24xf32>, memref<20xf32>, memref<5xf32>, memref<30xf32>, index)
// CHECK-LABEL: func.func @batch_broadcast_weights
// CHECK: dense<0.000000e+00> : tensor<5xf32>
// CHECK-NOT: linalg.batch_matmul
// CHECK: return
// WHY: linalg.batch_matmul -> onednn
func.func @batch_broadcast_weights(%x: tensor<2x3x4xf32>) -> tensor<2x3x5xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<4x5xf32>
  %eb = tensor.empty() : tensor<2x4x5xf32>
  %wb = linalg.broadcast ins(%w : tensor<4x5xf32>) outs(%eb : tensor<2x4x5xf32>) dimensions = [0]
  %e = tensor.empty() : tensor<2x3x5xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %y = linalg.batch_matmul ins(%x, %wb : tensor<2x3x4xf32>, tensor<2x4x5xf32>) outs(%i : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  return %y : tensor<2x3x5xf32>
}

// -----

// Must not fire: attention's matmul of two activations (QK^T).
// CHECK-LABEL: func.func @activations_only
// CHECK-NOT: xgen_dnnl
// CHECK: linalg.batch_matmul
// WHY: linalg.batch_matmul kept: right operand not a constant
func.func @activations_only(%q: tensor<2x8x4xf32>, %k: tensor<2x4x8xf32>) -> tensor<2x8x8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<2x8x8xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %y = linalg.batch_matmul ins(%q, %k : tensor<2x8x4xf32>, tensor<2x4x8xf32>) outs(%i : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  return %y : tensor<2x8x8xf32>
}

// -----

// Must not fire: weights that are an argument.
// CHECK-LABEL: func.func @weights_argument
// CHECK-NOT: xgen_dnnl
// CHECK: linalg.matmul
// WHY: linalg.matmul kept: right operand not a constant
func.func @weights_argument(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>) -> tensor<4x6xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x6xf32>) outs(%i : tensor<4x6xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

// Must not fire: a batch_matmul whose constant weights differ per batch.
// CHECK-LABEL: func.func @weights_per_batch
// CHECK-NOT: xgen_dnnl
// CHECK: linalg.batch_matmul
// WHY: linalg.batch_matmul kept: constant right operand differs per batch
func.func @weights_per_batch(%x: tensor<2x3x1xf32>) -> tensor<2x3x2xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<[[[1.0, 2.0]], [[3.0, 4.0]]]> : tensor<2x1x2xf32>
  %e = tensor.empty() : tensor<2x3x2xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x2xf32>) -> tensor<2x3x2xf32>
  %y = linalg.batch_matmul ins(%x, %w : tensor<2x3x1xf32>, tensor<2x1x2xf32>) outs(%i : tensor<2x3x2xf32>) -> tensor<2x3x2xf32>
  return %y : tensor<2x3x2xf32>
}

// -----

// Must not fire: an accumulator that is not a constant (a matmul accumulating onto an input).
// CHECK-LABEL: func.func @accumulates_onto_input
// CHECK-NOT: xgen_dnnl
// CHECK: linalg.matmul
// WHY: linalg.matmul kept: accumulator init not a per-column constant
func.func @accumulates_onto_input(%x: tensor<4x8xf32>, %r: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %w = arith.constant dense<0.5> : tensor<8x6xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x6xf32>) outs(%r : tensor<4x6xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

// Must not fire: a dynamic row count (the import's name fixes M).
// CHECK-LABEL: func.func @dynamic_rows
// CHECK-NOT: xgen_dnnl
// CHECK: linalg.matmul
// WHY: linalg.matmul kept: dynamic shape
func.func @dynamic_rows(%x: tensor<?x8xf32>) -> tensor<?x6xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<8x6xf32>
  %m = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%m) : tensor<?x6xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<?x6xf32>) -> tensor<?x6xf32>
  %y = linalg.matmul ins(%x, %w : tensor<?x8xf32>, tensor<8x6xf32>) outs(%i : tensor<?x6xf32>) -> tensor<?x6xf32>
  return %y : tensor<?x6xf32>
}

// -----

// Must not fire: f16 (the plugin's imports take f32).
// CHECK-LABEL: func.func @half
// CHECK-NOT: xgen_dnnl
// CHECK: linalg.matmul
// WHY: linalg.matmul kept: f16 elements, not f32
func.func @half(%x: tensor<4x8xf16>) -> tensor<4x6xf16> {
  %zero = arith.constant 0.000000e+00 : f16
  %w = arith.constant dense<0.5> : tensor<8x6xf16>
  %e = tensor.empty() : tensor<4x6xf16>
  %i = linalg.fill ins(%zero : f16) outs(%e : tensor<4x6xf16>) -> tensor<4x6xf16>
  %y = linalg.matmul ins(%x, %w : tensor<4x8xf16>, tensor<8x6xf16>) outs(%i : tensor<4x6xf16>) -> tensor<4x6xf16>
  return %y : tensor<4x6xf16>
}

// -----

// GELU after the bias add is the primitive's post-op, in either form, whatever the order of
// its factors: found by evaluating the body (erf form: gelu; tanh form with sqrt(2/pi):
// gelut). Must not fire: the tanh form with another constant (torch-mlir writes 0.797724 for
// approximate="tanh", not sqrt(2/pi) = 0.7978846, and oneDNN's GELU would change the numbers);
// x * sigmoid(1.702 x) (a different curve, here with a tanh in its body).
// CHECK: @xgen_dnnl_matmul_f32_gelu_b_4_8_5_p1(
// CHECK-LABEL: func.func @gelu_erf
// CHECK-NOT: linalg.generic
// CHECK: return
// WHY: linalg.matmul -> onednn (+bias+gelu)
func.func @gelu_erf(%x: tensor<4x8xf32>) -> tensor<4x5xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.125> : tensor<8x5xf32>
  %b = arith.constant dense<0.5> : tensor<5xf32>
  %e = tensor.empty() : tensor<4x5xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<4x5xf32>) -> tensor<4x5xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x5xf32>) outs(%i : tensor<4x5xf32>) -> tensor<4x5xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b, %y : tensor<5xf32>, tensor<4x5xf32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %s = arith.addf %in_1, %in : f32
    linalg.yield %s : f32
  } -> tensor<4x5xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%z : tensor<4x5xf32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    %c2 = arith.constant 1.41421354 : f32
    %one = arith.constant 1.000000e+00 : f32
    %half = arith.constant 5.000000e-01 : f32
    %0 = arith.divf %in, %c2 : f32
    %1 = math.erf %0 : f32
    %2 = arith.addf %1, %one : f32
    %3 = arith.mulf %2, %half : f32
    %4 = arith.mulf %in, %3 : f32
    linalg.yield %4 : f32
  } -> tensor<4x5xf32>
  return %r : tensor<4x5xf32>
}

// -----

// CHECK: @xgen_dnnl_matmul_f32_gelut_b_4_8_6_p1(
// CHECK-LABEL: func.func @gelu_tanh
// CHECK-NOT: linalg.generic
// WHY: linalg.matmul -> onednn (+bias+gelut)
func.func @gelu_tanh(%x: tensor<4x8xf32>) -> tensor<4x6xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.125> : tensor<8x6xf32>
  %b = arith.constant dense<0.5> : tensor<6xf32>
  %e = tensor.empty() : tensor<4x6xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x6xf32>) outs(%i : tensor<4x6xf32>) -> tensor<4x6xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b, %y : tensor<6xf32>, tensor<4x6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %s = arith.addf %in_1, %in : f32
    linalg.yield %s : f32
  } -> tensor<4x6xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%z : tensor<4x6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %c3 = arith.constant 3 : i64
    %a = arith.constant 4.471500e-02 : f32
    %k = arith.constant 0.797884583 : f32
    %one = arith.constant 1.000000e+00 : f32
    %half = arith.constant 5.000000e-01 : f32
    %0 = math.fpowi %in, %c3 : f32, i64
    %1 = arith.mulf %0, %a : f32
    %2 = arith.addf %in, %1 : f32
    %3 = arith.mulf %2, %k : f32
    %4 = math.tanh %3 : f32
    %5 = arith.addf %4, %one : f32
    %6 = arith.mulf %5, %half : f32
    %7 = arith.mulf %in, %6 : f32
    linalg.yield %7 : f32
  } -> tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}

// -----

// CHECK: @xgen_dnnl_matmul_f32_none_b_4_8_7_p1(
// CHECK-LABEL: func.func @gelu_tanh_other_constant
// CHECK: math.tanh
// WHY: linalg.matmul -> onednn (+bias)
func.func @gelu_tanh_other_constant(%x: tensor<4x8xf32>) -> tensor<4x7xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.125> : tensor<8x7xf32>
  %b = arith.constant dense<0.5> : tensor<7xf32>
  %e = tensor.empty() : tensor<4x7xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<4x7xf32>) -> tensor<4x7xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x7xf32>) outs(%i : tensor<4x7xf32>) -> tensor<4x7xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b, %y : tensor<7xf32>, tensor<4x7xf32>) outs(%e : tensor<4x7xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %s = arith.addf %in_1, %in : f32
    linalg.yield %s : f32
  } -> tensor<4x7xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%z : tensor<4x7xf32>) outs(%e : tensor<4x7xf32>) {
  ^bb0(%in: f32, %out: f32):
    %c3 = arith.constant 3 : i64
    %a = arith.constant 4.471500e-02 : f32
    %k = arith.constant 0.797724 : f32
    %one = arith.constant 1.000000e+00 : f32
    %half = arith.constant 5.000000e-01 : f32
    %0 = math.fpowi %in, %c3 : f32, i64
    %1 = arith.mulf %0, %a : f32
    %2 = arith.addf %in, %1 : f32
    %3 = arith.mulf %2, %k : f32
    %4 = math.tanh %3 : f32
    %5 = arith.addf %4, %one : f32
    %6 = arith.mulf %5, %half : f32
    %7 = arith.mulf %in, %6 : f32
    linalg.yield %7 : f32
  } -> tensor<4x7xf32>
  return %r : tensor<4x7xf32>
}

// -----

// CHECK: @xgen_dnnl_matmul_f32_none_b_4_8_9_p1(
// CHECK-LABEL: func.func @sigmoid_gelu
// CHECK: math.exp
// WHY: linalg.matmul -> onednn (+bias)
func.func @sigmoid_gelu(%x: tensor<4x8xf32>) -> tensor<4x9xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.125> : tensor<8x9xf32>
  %b = arith.constant dense<0.5> : tensor<9xf32>
  %e = tensor.empty() : tensor<4x9xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<4x9xf32>) -> tensor<4x9xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x9xf32>) outs(%i : tensor<4x9xf32>) -> tensor<4x9xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b, %y : tensor<9xf32>, tensor<4x9xf32>) outs(%e : tensor<4x9xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %s = arith.addf %in_1, %in : f32
    linalg.yield %s : f32
  } -> tensor<4x9xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%z : tensor<4x9xf32>) outs(%e : tensor<4x9xf32>) {
  ^bb0(%in: f32, %out: f32):
    %c = arith.constant 1.702000e+00 : f32
    %one = arith.constant 1.000000e+00 : f32
    %0 = arith.mulf %in, %c : f32
    %1 = arith.negf %0 : f32
    %2 = math.exp %1 : f32
    %3 = arith.addf %2, %one : f32
    %4 = arith.divf %in, %3 : f32
    %t = math.tanh %4 : f32
    %5 = arith.subf %t, %t : f32
    %6 = arith.addf %4, %5 : f32
    linalg.yield %6 : f32
  } -> tensor<4x9xf32>
  return %r : tensor<4x9xf32>
}

// -----

// Must not fire: a source computed from constants alone (a recurrent layer's first step on a
// constant initial state). IREE evaluates such a matmul at compile time, where a kernel
// library's import cannot run; a source that reaches the function's input is offloaded.
// CHECK-LABEL: func.func @constant_source
// CHECK-NOT: xgen_onednn
// CHECK: linalg.matmul
// CHECK: call @xgen_onednn_matmul_{{[0-9]+}}_call
// WHY: linalg.matmul kept: a constant source (IREE computes it at compile time)
func.func @constant_source(%x: tensor<4x2xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %h0 = arith.constant dense<0.5> : tensor<4x2xf32>
  %eh = tensor.empty() : tensor<4x2xf32>
  %h = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%h0 : tensor<4x2xf32>) outs(%eh : tensor<4x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.tanh %in : f32
    linalg.yield %t : f32
  } -> tensor<4x2xf32>
  %w = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %e = tensor.empty() : tensor<4x3xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %a = linalg.matmul ins(%h, %w : tensor<4x2xf32>, tensor<2x3xf32>) outs(%i : tensor<4x3xf32>) -> tensor<4x3xf32>
  %b = linalg.matmul ins(%x, %w : tensor<4x2xf32>, tensor<2x3xf32>) outs(%i : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %a, %b : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// GELU as an ONNX export writes it, five elementwise ops (x / sqrt 2, erf, + 1, * x, * 0.5),
// is the post-op too.
// CHECK: @xgen_dnnl_matmul_f32_gelu_b_4_8_5_p1(
// CHECK-LABEL: func.func @gelu_as_onnx_writes_it
// CHECK-NOT: math.erf
// CHECK: return
// WHY: linalg.matmul -> onednn (+bias+gelu)
#id = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
func.func @gelu_as_onnx_writes_it(%x: tensor<4x8xf32>) -> tensor<4x5xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.125> : tensor<8x5xf32>
  %b = arith.constant dense<0.5> : tensor<5xf32>
  %sqrt2 = arith.constant dense<1.41421354> : tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %half = arith.constant dense<0.5> : tensor<f32>
  %e = tensor.empty() : tensor<4x5xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<4x5xf32>) -> tensor<4x5xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x5xf32>) outs(%i : tensor<4x5xf32>) -> tensor<4x5xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%b, %y : tensor<5xf32>, tensor<4x5xf32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %s = arith.addf %in_1, %in : f32
    linalg.yield %s : f32
  } -> tensor<4x5xf32>
  %d = linalg.generic {indexing_maps = [#id, #all, #id], iterator_types = ["parallel", "parallel"]} ins(%z, %sqrt2 : tensor<4x5xf32>, tensor<f32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %v = arith.divf %a, %c : f32
    linalg.yield %v : f32
  } -> tensor<4x5xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<4x5xf32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.erf %a : f32
    linalg.yield %v : f32
  } -> tensor<4x5xf32>
  %p = linalg.generic {indexing_maps = [#id, #all, #id], iterator_types = ["parallel", "parallel"]} ins(%r, %one : tensor<4x5xf32>, tensor<f32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %v = arith.addf %a, %c : f32
    linalg.yield %v : f32
  } -> tensor<4x5xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%z, %p : tensor<4x5xf32>, tensor<4x5xf32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %v = arith.mulf %a, %c : f32
    linalg.yield %v : f32
  } -> tensor<4x5xf32>
  %g = linalg.generic {indexing_maps = [#id, #all, #id], iterator_types = ["parallel", "parallel"]} ins(%m, %half : tensor<4x5xf32>, tensor<f32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %v = arith.mulf %a, %c : f32
    linalg.yield %v : f32
  } -> tensor<4x5xf32>
  return %g : tensor<4x5xf32>
}

// -----

// Must not fire: the same chain with 0.6 for 0.5 is not a GELU; the call stops at the bias
// add and the chain stays.
// CHECK: @xgen_dnnl_matmul_f32_none_b_4_8_5_p1(
// CHECK-LABEL: func.func @not_quite_gelu
// CHECK: math.erf
// WHY: linalg.matmul -> onednn (+bias)
#id = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
func.func @not_quite_gelu(%x: tensor<4x8xf32>) -> tensor<4x5xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.125> : tensor<8x5xf32>
  %b = arith.constant dense<0.5> : tensor<5xf32>
  %sqrt2 = arith.constant dense<1.41421354> : tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %half = arith.constant dense<0.6> : tensor<f32>
  %e = tensor.empty() : tensor<4x5xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<4x5xf32>) -> tensor<4x5xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x5xf32>) outs(%i : tensor<4x5xf32>) -> tensor<4x5xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%b, %y : tensor<5xf32>, tensor<4x5xf32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %s = arith.addf %in_1, %in : f32
    linalg.yield %s : f32
  } -> tensor<4x5xf32>
  %d = linalg.generic {indexing_maps = [#id, #all, #id], iterator_types = ["parallel", "parallel"]} ins(%z, %sqrt2 : tensor<4x5xf32>, tensor<f32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %v = arith.divf %a, %c : f32
    linalg.yield %v : f32
  } -> tensor<4x5xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<4x5xf32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.erf %a : f32
    linalg.yield %v : f32
  } -> tensor<4x5xf32>
  %p = linalg.generic {indexing_maps = [#id, #all, #id], iterator_types = ["parallel", "parallel"]} ins(%r, %one : tensor<4x5xf32>, tensor<f32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %v = arith.addf %a, %c : f32
    linalg.yield %v : f32
  } -> tensor<4x5xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%z, %p : tensor<4x5xf32>, tensor<4x5xf32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %v = arith.mulf %a, %c : f32
    linalg.yield %v : f32
  } -> tensor<4x5xf32>
  %g = linalg.generic {indexing_maps = [#id, #all, #id], iterator_types = ["parallel", "parallel"]} ins(%m, %half : tensor<4x5xf32>, tensor<f32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %v = arith.mulf %a, %c : f32
    linalg.yield %v : f32
  } -> tensor<4x5xf32>
  return %g : tensor<4x5xf32>
}
