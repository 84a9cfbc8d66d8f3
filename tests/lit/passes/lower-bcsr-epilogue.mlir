// RUN: rm -rf %t.cache
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p "xgen-lower-bcsr-kernels{vector-bits=512}" | FileCheck %s
// RUN: cat %t.cache/kernels/*.c | FileCheck %s --check-prefix=SRC

// GPT-2's tanh GELU as torch-mlir emits transformers' formula: separate elementwise ops that
// read the layer's output three times (a DAG, not a chain), x^3 as math.fpowi, constants
// captured from outside the bodies and an f64 constant truncated inside one. All of it runs
// in the kernel's epilogue: one call, no generic left.
// CHECK-LABEL: func.func @gelu_tanh
// CHECK: %[[Y:.*]] = call @xgen_bcsr_1_call
// CHECK-NOT: linalg.generic
// CHECK: return %[[Y]]
// SRC: = v * v * v;
// SRC: xg_tanh(
// SRC: v = e7; }
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @gelu_tanh(%x: tensor<3x8xf32>) -> tensor<3x4xf32> {
  %v = arith.constant dense<[1.0, 2.0, 5.0, 3.0, 4.0]> : tensor<5xf32>
  %b = arith.constant dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %bo = arith.constant dense<[0, 2, 3]> : tensor<3xi32>
  %ro = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
  %co = arith.constant dense<[0, 2, 3, 5]> : tensor<4xi32>
  %kr = arith.constant dense<[1, 0, 2]> : tensor<3xi32>
  %kc = arith.constant dense<[1, 2, 5, 1, 2]> : tensor<5xi32>
  %y = "xgen_sparse.bcsr_linear"(%x, %v, %b, %bo, %ro, %co, %kr, %kc) {block = [2, 4], weight_shape = [4, 8]} : (tensor<3x8xf32>, tensor<5xf32>, tensor<4xf32>, tensor<3xi32>, tensor<4xi32>, tensor<4xi32>, tensor<3xi32>, tensor<5xi32>) -> tensor<3x4xf32>
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %c3 = arith.constant 3 : i64
  %k0 = arith.constant 0.044714999999999998 : f64
  %k1 = arith.constant 0.79788456080286541 : f64
  %e = tensor.empty() : tensor<3x4xf32>
  %h = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %half : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>
  %p = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.fpowi %in, %c3 : f32, i64
    linalg.yield %r : f32
  } -> tensor<3x4xf32>
  %q = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %k = arith.truncf %k0 : f64 to f32
    %r = arith.mulf %in, %k : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>
  %s = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%y, %q : tensor<3x4xf32>, tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %r = arith.addf %in, %in2 : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>
  %u = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %k = arith.truncf %k1 : f64 to f32
    %r = arith.mulf %in, %k : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>
  %t = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%u : tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.tanh %in : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>
  %a = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%t : tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %one : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>
  %g = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%h, %a : tensor<3x4xf32>, tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %r = arith.mulf %in, %in2 : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>
  return %g : tensor<3x4xf32>
}

// -----
// Must not fuse: the add reads another tensor (a residual), and the value before it is also
// returned; the kernel stores the layer's output as it is.
// CHECK-LABEL: func.func @residual
// CHECK: %[[Y:.*]] = call @xgen_bcsr_1_call
// CHECK: %[[R:.*]] = linalg.generic
// CHECK-SAME: ins(%[[Y]], %arg1
// CHECK: return %[[R]], %[[Y]]
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @residual(%x: tensor<3x8xf32>, %res: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
  %v = arith.constant dense<[1.0, 2.0, 5.0, 3.0, 4.0]> : tensor<5xf32>
  %b = arith.constant dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %bo = arith.constant dense<[0, 2, 3]> : tensor<3xi32>
  %ro = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
  %co = arith.constant dense<[0, 2, 3, 5]> : tensor<4xi32>
  %kr = arith.constant dense<[1, 0, 2]> : tensor<3xi32>
  %kc = arith.constant dense<[1, 2, 5, 1, 2]> : tensor<5xi32>
  %y = "xgen_sparse.bcsr_linear"(%x, %v, %b, %bo, %ro, %co, %kr, %kc) {block = [2, 4], weight_shape = [4, 8]} : (tensor<3x8xf32>, tensor<5xf32>, tensor<4xf32>, tensor<3xi32>, tensor<4xi32>, tensor<4xi32>, tensor<3xi32>, tensor<5xi32>) -> tensor<3x4xf32>
  %e = tensor.empty() : tensor<3x4xf32>
  %r = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%y, %res : tensor<3x4xf32>, tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %s = arith.addf %in, %in2 : f32
    linalg.yield %s : f32
  } -> tensor<3x4xf32>
  return %r, %y : tensor<3x4xf32>, tensor<3x4xf32>
}
