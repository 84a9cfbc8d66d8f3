// RUN: xgen-opt %s --split-input-file -p xgen-nan-minmax | FileCheck %s

// torch.maximum / torch.minimum: `a ogt b ? a : b` and `a olt b ? a : b` pick b for a NaN a;
// maximumf / minimumf give NaN for a NaN in either operand.
// CHECK-LABEL: func.func @maximum_minimum
// CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[M:.*]] = arith.maximumf %[[A]], %[[B]] : f32
// CHECK-NEXT: linalg.yield %[[M]]
// CHECK: ^bb0(%[[C:.*]]: f32, %[[D:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[N:.*]] = arith.minimumf %[[C]], %[[D]] : f32
// CHECK-NEXT: linalg.yield %[[N]]
#id = affine_map<(d0) -> (d0)>
func.func @maximum_minimum(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %c = arith.cmpf ogt, %x, %y : f32
    %s = arith.select %c, %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %c = arith.cmpf olt, %x, %y : f32
    %s = arith.select %c, %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----
// The other operand order and the other predicates: `a ogt b ? b : a` is min(a, b),
// `a ule b ? b : a` and `a uge b ? a : b` are max(a, b).
// CHECK-LABEL: func.func @orders
// CHECK: arith.minimumf %[[X:.*]], %[[Y:[^ ]*]] : f32
// CHECK-NEXT: arith.maximumf %[[X]], %[[Y]] : f32
// CHECK-NEXT: arith.maximumf %[[X]], %[[Y]] : f32
// CHECK-NOT: arith.select
// CHECK-NOT: arith.cmpf
#id = affine_map<(d0) -> (d0)>
func.func @orders(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %c0 = arith.cmpf ogt, %x, %y : f32
    %s0 = arith.select %c0, %y, %x : f32
    %c1 = arith.cmpf ule, %x, %y : f32
    %s1 = arith.select %c1, %y, %x : f32
    %c2 = arith.cmpf uge, %x, %y : f32
    %s2 = arith.select %c2, %x, %y : f32
    %t = arith.addf %s0, %s1 : f32
    %r = arith.addf %t, %s2 : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----
// torch.clamp(x, -1, 2) as torch-mlir emits it: `x ult -1 ? -1 : x` (NaN -> -1), then
// `y ugt 2 ? 2 : y`. Nonzero bounds: no signed-zero tie, so maximumf / minimumf are exact.
// CHECK-LABEL: func.func @clamp
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[L:.*]] = arith.maximumf %[[X]], %{{.*}} : f32
// CHECK-NEXT: %[[H:.*]] = arith.minimumf %[[L]], %{{.*}} : f32
// CHECK-NEXT: linalg.yield %[[H]]
#id = affine_map<(d0) -> (d0)>
func.func @clamp(%a: tensor<4xf32>) -> tensor<4xf32> {
  %lo = arith.constant -1.0 : f32
  %hi = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c0 = arith.cmpf ult, %x, %lo : f32
    %s0 = arith.select %c0, %lo, %x : f32
    %c1 = arith.cmpf ugt, %s0, %hi : f32
    %s1 = arith.select %c1, %hi, %s0 : f32
    linalg.yield %s1 : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----
// relu6 / hardtanh(x, 0, 6): the bounds come in as rank-0 constant tensors. The lower bound
// `x ogt 0 ? x : 0` maps NaN to 0 and -0 to +0, which is maximumf(x, 0). The upper bound
// `6 olt y ? 6 : y` already passes a NaN y through: left alone.
// CHECK-LABEL: func.func @relu6
// CHECK: ^bb0(%[[X:.*]]: f32, %[[Z:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[M:.*]] = arith.maximumf %[[X]], %[[Z]] : f32
// CHECK-NEXT: linalg.yield %[[M]]
// CHECK: ^bb0(%[[S:.*]]: f32, %[[Y:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[C:.*]] = arith.cmpf olt, %[[S]], %[[Y]] : f32
// CHECK-NEXT: %[[R:.*]] = arith.select %[[C]], %[[S]], %[[Y]] : f32
// CHECK-NEXT: linalg.yield %[[R]]
#id = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>
func.func @relu6(%a: tensor<4xf32>) -> tensor<4xf32> {
  %zero = arith.constant dense<0.0> : tensor<f32>
  %six = arith.constant dense<6.0> : tensor<f32>
  %e = tensor.empty() : tensor<4xf32>
  %0 = linalg.generic {indexing_maps = [#id, #s, #id], iterator_types = ["parallel"]} ins(%a, %zero : tensor<4xf32>, tensor<f32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %z: f32, %o: f32):
    %c = arith.cmpf ogt, %x, %z : f32
    %s = arith.select %c, %x, %z : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %1 = linalg.generic {indexing_maps = [#s, #id, #id], iterator_types = ["parallel"]} ins(%six, %0 : tensor<f32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%k: f32, %y: f32, %o: f32):
    %c = arith.cmpf olt, %k, %y : f32
    %s = arith.select %c, %k, %y : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----
// torch-mlir's ReLU `x ugt 0 ? x : 0` keeps NaN (and makes -0 +0): left exactly as it is.
// CHECK-LABEL: func.func @relu
// CHECK: %[[C:.*]] = arith.cmpf ugt, %[[X:.*]], %[[Z:.*]] : f32
// CHECK-NEXT: arith.select %[[C]], %[[X]], %[[Z]] : f32
// CHECK-NOT: arith.maximumf
#id = affine_map<(d0) -> (d0)>
func.func @relu(%a: tensor<4xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.cmpf ugt, %x, %zero : f32
    %s = arith.select %c, %x, %zero : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----
// clamp(x, min=0): `x ult 0 ? 0 : x` keeps -0 (as PyTorch does), maximumf would make it +0:
// only the predicate becomes ordered, so a NaN x now gives x. clamp(x, max=0) `x ugt 0 ? 0 : x`
// keeps -0 too, which minimumf(-0, +0) = -0 also does: minimumf.
// CHECK-LABEL: func.func @clamp_at_zero
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[C:.*]] = arith.cmpf olt, %[[X]], %[[Z:.*]] : f32
// CHECK-NEXT: %[[S:.*]] = arith.select %[[C]], %[[Z]], %[[X]] : f32
// CHECK-NEXT: %[[M:.*]] = arith.minimumf %[[S]], %[[Z]] : f32
// CHECK-NEXT: linalg.yield %[[M]]
#id = affine_map<(d0) -> (d0)>
func.func @clamp_at_zero(%a: tensor<4xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.cmpf ult, %x, %zero : f32
    %s = arith.select %c, %zero, %x : f32
    %c1 = arith.cmpf ugt, %s, %zero : f32
    %s1 = arith.select %c1, %zero, %s : f32
    linalg.yield %s1 : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----
// Not max/min, left alone: a select of a third value, a compare of other operands,
// an equality predicate, an integer compare, a compare flagged nnan.
// CHECK-LABEL: func.func @not_minmax
// CHECK-NOT: arith.maximumf
// CHECK-NOT: arith.minimumf
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// CHECK: arith.cmpf olt
// CHECK: arith.select
// CHECK: arith.cmpf oeq
// CHECK: arith.select
// CHECK: arith.cmpi sgt
// CHECK: arith.select
// CHECK: arith.cmpf ogt, {{.*}} fastmath<nnan>
// CHECK: arith.select
// CHECK: linalg.yield
#id = affine_map<(d0) -> (d0)>
func.func @not_minmax(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>, %i: tensor<4xi32>, %j: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xi32>) {
  %e = tensor.empty() : tensor<4xf32>
  %ei = tensor.empty() : tensor<4xi32>
  %0 = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel"]} ins(%a, %b, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32, %o: f32):
    %c0 = arith.cmpf ogt, %x, %y : f32
    %s0 = arith.select %c0, %x, %z : f32
    %c1 = arith.cmpf olt, %x, %z : f32
    %s1 = arith.select %c1, %x, %y : f32
    %c2 = arith.cmpf oeq, %x, %y : f32
    %s2 = arith.select %c2, %x, %y : f32
    %t0 = arith.addf %s0, %s1 : f32
    %t1 = arith.addf %t0, %s2 : f32
    linalg.yield %t1 : f32
  } -> tensor<4xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%i, %j : tensor<4xi32>, tensor<4xi32>) outs(%ei : tensor<4xi32>) {
  ^bb0(%x: i32, %y: i32, %o: i32):
    %c0 = arith.cmpi sgt, %x, %y : i32
    %s0 = arith.select %c0, %x, %y : i32
    linalg.yield %s0 : i32
  } -> tensor<4xi32>
  %2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%0, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %c0 = arith.cmpf ogt, %x, %y fastmath<nnan> : f32
    %s0 = arith.select %c0, %x, %y : f32
    linalg.yield %s0 : f32
  } -> tensor<4xf32>
  return %2, %1 : tensor<4xf32>, tensor<4xi32>
}

// -----
// A reduction's select (an argmax's running maximum, with its index select) stays: only
// elementwise generics are rewritten.
// CHECK-LABEL: func.func @argmax_reduction
// CHECK-NOT: arith.maximumf
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// CHECK: arith.select
#in = affine_map<(d0) -> (d0)>
#out = affine_map<(d0) -> ()>
func.func @argmax_reduction(%a: tensor<8xf32>, %v0: tensor<f32>, %i0: tensor<i64>) -> (tensor<f32>, tensor<i64>) {
  %0:2 = linalg.generic {indexing_maps = [#in, #out, #out], iterator_types = ["reduction"]} ins(%a : tensor<8xf32>) outs(%v0, %i0 : tensor<f32>, tensor<i64>) {
  ^bb0(%x: f32, %acc: f32, %idx: i64):
    %k = linalg.index 0 : index
    %ki = arith.index_cast %k : index to i64
    %c = arith.cmpf ogt, %x, %acc : f32
    %s = arith.select %c, %x, %acc : f32
    %si = arith.select %c, %ki, %idx : i64
    linalg.yield %s, %si : f32, i64
  } -> (tensor<f32>, tensor<i64>)
  return %0#0, %0#1 : tensor<f32>, tensor<i64>
}

// -----
// Two constant operands are left to constant folding.
// CHECK-LABEL: func.func @constants
// CHECK: arith.cmpf ult
// CHECK: arith.select
#id = affine_map<(d0) -> (d0)>
func.func @constants(%a: tensor<4xf32>) -> tensor<4xf32> {
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.cmpf ult, %one, %two : f32
    %s = arith.select %c, %one, %two : f32
    %r = arith.addf %x, %s : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
