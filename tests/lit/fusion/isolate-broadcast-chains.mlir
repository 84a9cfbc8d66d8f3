// RUN: xgen-opt %s --split-input-file -p 'xgen-isolate-broadcast-chains{print=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=SAY
// RUN: xgen-opt %s --split-input-file -p 'xgen-isolate-broadcast-chains' | FileCheck %s

// A sigmoid of 8 values (an int8 squeeze-excite's excite: the library call's int32 sums
// dequantized, then the sigmoid) that a 16x16x8 product reads broadcast: the product reads
// it through a barrier, so IREE's elementwise fusion keeps the sigmoid out of the product's
// loop (it would compute it again for each of the 2048 elements).
// SAY: xgen-isolate-broadcast-chains: excite: tensor<1x1x1x8xf32> into tensor<1x16x16x8xf32>
// CHECK-LABEL: func.func @excite
// CHECK: %[[S:.*]] = linalg.generic
// CHECK: math.exp
// CHECK: %[[B:.*]] = util.optimization_barrier %[[S]] : tensor<1x1x1x8xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[B]] : tensor<1x16x16x8xf32>, tensor<1x1x1x8xf32>)
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#bc = affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, d3)>
func.func @excite(%x: tensor<1x16x16x8xf32>, %sums: tensor<1x1x1x8xi32>) -> tensor<1x16x16x8xf32> {
  %one = arith.constant 1.0 : f32
  %s0 = arith.constant 0.01 : f32
  %e = tensor.empty() : tensor<1x1x1x8xf32>
  %sig = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sums : tensor<1x1x1x8xi32>) outs(%e : tensor<1x1x1x8xf32>) {
  ^bb0(%a: i32, %o: f32):
    %f = arith.sitofp %a : i32 to f32
    %d = arith.mulf %f, %s0 : f32
    %n = arith.negf %d : f32
    %ex = math.exp %n : f32
    %den = arith.addf %ex, %one : f32
    %v = arith.divf %one, %den : f32
    linalg.yield %v : f32
  } -> tensor<1x1x1x8xf32>
  %ew = tensor.empty() : tensor<1x16x16x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #bc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %sig : tensor<1x16x16x8xf32>, tensor<1x1x1x8xf32>) outs(%ew : tensor<1x16x16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x16x16x8xf32>
  return %y : tensor<1x16x16x8xf32>
}

// -----
// Must not fire: no transcendental in the chain (a dequantize alone is cheaper to recompute).
// SAY-NOT: xgen-isolate-broadcast-chains: cheap
// CHECK-LABEL: func.func @cheap
// CHECK-NOT: util.optimization_barrier
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#bc = affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, d3)>
func.func @cheap(%x: tensor<1x16x16x8xf32>, %sums: tensor<1x1x1x8xi32>) -> tensor<1x16x16x8xf32> {
  %s0 = arith.constant 0.01 : f32
  %e = tensor.empty() : tensor<1x1x1x8xf32>
  %sig = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sums : tensor<1x1x1x8xi32>) outs(%e : tensor<1x1x1x8xf32>) {
  ^bb0(%a: i32, %o: f32):
    %f = arith.sitofp %a : i32 to f32
    %d = arith.mulf %f, %s0 : f32
    linalg.yield %d : f32
  } -> tensor<1x1x1x8xf32>
  %ew = tensor.empty() : tensor<1x16x16x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #bc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %sig : tensor<1x16x16x8xf32>, tensor<1x1x1x8xf32>) outs(%ew : tensor<1x16x16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x16x16x8xf32>
  return %y : tensor<1x16x16x8xf32>
}

// -----
// Must not fire: a broadcast of only 4 times the chain's size (2x2 pixels).
// SAY-NOT: xgen-isolate-broadcast-chains: small_broadcast
// CHECK-LABEL: func.func @small_broadcast
// CHECK-NOT: util.optimization_barrier
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#bc = affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, d3)>
func.func @small_broadcast(%x: tensor<1x2x2x8xf32>, %sums: tensor<1x1x1x8xi32>) -> tensor<1x2x2x8xf32> {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<1x1x1x8xf32>
  %sig = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sums : tensor<1x1x1x8xi32>) outs(%e : tensor<1x1x1x8xf32>) {
  ^bb0(%a: i32, %o: f32):
    %f = arith.sitofp %a : i32 to f32
    %ex = math.exp %f : f32
    linalg.yield %ex : f32
  } -> tensor<1x1x1x8xf32>
  %ew = tensor.empty() : tensor<1x2x2x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #bc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %sig : tensor<1x2x2x8xf32>, tensor<1x1x1x8xf32>) outs(%ew : tensor<1x2x2x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x2x2x8xf32>
  return %y : tensor<1x2x2x8xf32>
}

// -----
// Must not fire: the chain reaches a reduction (LayerNorm's rsqrt of the variance, or an f32
// squeeze-excite's matvecs: the fusion plan's to decide).
// SAY-NOT: xgen-isolate-broadcast-chains: after_reduction
// CHECK-LABEL: func.func @after_reduction
// CHECK-NOT: util.optimization_barrier
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#bc = affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, d3)>
#rin = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#rout = affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, d3)>
func.func @after_reduction(%x: tensor<1x16x16x8xf32>) -> tensor<1x16x16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x1x1x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x1x1x8xf32>) -> tensor<1x1x1x8xf32>
  %sum = linalg.generic {indexing_maps = [#rin, #rout], iterator_types = ["parallel", "reduction", "reduction", "parallel"]} ins(%x : tensor<1x16x16x8xf32>) outs(%z : tensor<1x1x1x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.addf %a, %o : f32
    linalg.yield %v : f32
  } -> tensor<1x1x1x8xf32>
  %sig = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sum : tensor<1x1x1x8xf32>) outs(%e : tensor<1x1x1x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %ex = math.exp %a : f32
    linalg.yield %ex : f32
  } -> tensor<1x1x1x8xf32>
  %ew = tensor.empty() : tensor<1x16x16x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #bc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %sig : tensor<1x16x16x8xf32>, tensor<1x1x1x8xf32>) outs(%ew : tensor<1x16x16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x16x16x8xf32>
  return %y : tensor<1x16x16x8xf32>
}
