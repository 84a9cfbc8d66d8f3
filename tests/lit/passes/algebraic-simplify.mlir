// RUN: xgen-opt %s --split-input-file -p xgen-algebraic-simplify | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-algebraic-simplify{unsafe-math=true}' | FileCheck %s --check-prefix=UNSAFE

// x * 1 (a splat constant operand, torch-mlir's scalar form) is x exactly: the op goes.
// CHECK-LABEL: func.func @mul_one
// UNSAFE-LABEL: func.func @mul_one
// CHECK-NOT: linalg.generic
// CHECK: return %arg0
#id = affine_map<(d0, d1) -> (d0, d1)>
#sc = affine_map<(d0, d1) -> ()>
func.func @mul_one(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = tensor.empty() : tensor<2x3xf32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %0 = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %one : tensor<2x3xf32>, tensor<f32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.mulf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----
// x / 1 with the 1 captured from outside the body: removed.
// CHECK-LABEL: func.func @div_one
// UNSAFE-LABEL: func.func @div_one
// CHECK-NOT: linalg.generic
// CHECK: return %arg0
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @div_one(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = tensor.empty() : tensor<2x3xf32>
  %one = arith.constant 1.0 : f32
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %out: f32):
    %r = arith.divf %p, %one : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----
// x + (-0.0) and x - (+0.0) are x for every x (also -0.0 and NaN): removed by default.
// CHECK-LABEL: func.func @exact_zeros
// UNSAFE-LABEL: func.func @exact_zeros
// CHECK-NOT: linalg.generic
// CHECK: return %arg0
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @exact_zeros(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = tensor.empty() : tensor<2x3xf32>
  %nz = arith.constant -0.0 : f32
  %z = arith.constant 0.0 : f32
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %out: f32):
    %r = arith.addf %nz, %p : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %out: f32):
    %r = arith.subf %p, %z : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----
// x + (+0.0) turns -0.0 into +0.0: kept by default, removed only with unsafe-math.
// CHECK-LABEL: func.func @add_positive_zero
// CHECK: arith.addf
// UNSAFE-LABEL: func.func @add_positive_zero
// UNSAFE-NOT: linalg.generic
// UNSAFE: return %arg0
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @add_positive_zero(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = tensor.empty() : tensor<2x3xf32>
  %z = arith.constant 0.0 : f32
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %out: f32):
    %r = arith.addf %p, %z : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----
// -(-x) is x: both negations go.
// CHECK-LABEL: func.func @double_negation
// UNSAFE-LABEL: func.func @double_negation
// CHECK-NOT: arith.negf
// CHECK: return %arg0
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @double_negation(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = tensor.empty() : tensor<2x3xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %out: f32):
    %r = arith.negf %p : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %out: f32):
    %r = arith.negf %p : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----
// Must not fire: the inner negation has another use (it is returned as well).
// CHECK-LABEL: func.func @double_negation_shared
// UNSAFE-LABEL: func.func @double_negation_shared
// CHECK: arith.negf
// CHECK: arith.negf
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @double_negation_shared(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %e = tensor.empty() : tensor<2x3xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %out: f32):
    %r = arith.negf %p : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %out: f32):
    %r = arith.negf %p : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  return %1, %0 : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----
// Distributive with a finite constant factor (2*x + 2*y -> 2*(x+y)): on by default.
// Three generics (3 FLOPs per element) become one (2 FLOPs).
// CHECK-LABEL: func.func @distributive_constant
// UNSAFE-LABEL: func.func @distributive_constant
// CHECK: linalg.generic
// CHECK: %[[S:.*]] = arith.addf %in, %in_
// CHECK: arith.mulf %{{.*}}, %[[S]]
// CHECK-NOT: linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
#sc = affine_map<(d0, d1) -> ()>
func.func @distributive_constant(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = tensor.empty() : tensor<2x3xf32>
  %two = arith.constant dense<2.0> : tensor<f32>
  %0 = linalg.generic {indexing_maps = [#sc, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%two, %x : tensor<f32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.mulf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %1 = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel"]} ins(%y, %two : tensor<2x3xf32>, tensor<f32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.mulf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%0, %1 : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}

// -----
// Distributive with a runtime factor (A*C + A*B): A = inf, C = 0 gives NaN before and inf
// after, so it needs unsafe-math.
// CHECK-LABEL: func.func @distributive_runtime
// CHECK-COUNT-3: linalg.generic
// UNSAFE-LABEL: func.func @distributive_runtime
// UNSAFE: linalg.generic
// UNSAFE: %[[S:.*]] = arith.subf
// UNSAFE: arith.mulf %in, %[[S]]
// UNSAFE-NOT: linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @distributive_runtime(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %c: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = tensor.empty() : tensor<2x3xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %c : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.mulf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%b, %a : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.mulf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%0, %1 : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.subf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}

// -----
// The same inside one generic body (the fused form), with a captured constant factor.
// CHECK-LABEL: func.func @distributive_in_body
// UNSAFE-LABEL: func.func @distributive_in_body
// CHECK: ^bb0
// CHECK-NEXT: %[[C:.*]] = arith.constant 3.000000e+00
// CHECK-NEXT: %[[S:.*]] = arith.addf %in, %in_
// CHECK-NEXT: arith.mulf %[[C]], %[[S]]
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @distributive_in_body(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = tensor.empty() : tensor<2x3xf32>
  %three = arith.constant 3.0 : f32
  %0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %u = arith.mulf %three, %p : f32
    %v = arith.mulf %three, %q : f32
    %r = arith.addf %u, %v : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----
// Must not fire (either mode): no common factor.
// CHECK-LABEL: func.func @no_common_factor
// CHECK-COUNT-3: linalg.generic
// UNSAFE-LABEL: func.func @no_common_factor
// UNSAFE-COUNT-3: linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @no_common_factor(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %c: tensor<2x3xf32>, %d: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = tensor.empty() : tensor<2x3xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %c : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.mulf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%b, %d : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.mulf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%0, %1 : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}

// -----
// Must not fire (either mode): a product has another use, absorbing it would not save it.
// CHECK-LABEL: func.func @product_shared
// CHECK-COUNT-3: linalg.generic
// UNSAFE-LABEL: func.func @product_shared
// UNSAFE-COUNT-3: linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @product_shared(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %c: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %e = tensor.empty() : tensor<2x3xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %c : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.mulf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.mulf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%0, %1 : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  return %2, %0 : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----
// Division by a zero constant: x/0 + y/0 is not (x+y)/0 (1/0 + 0/0 is NaN, 1/0 is inf).
// CHECK-LABEL: func.func @divide_by_zero_constant
// CHECK-COUNT-3: linalg.generic
// UNSAFE-LABEL: func.func @divide_by_zero_constant
// UNSAFE: arith.addf
// UNSAFE-NEXT: arith.constant 0.0
// UNSAFE-NEXT: arith.divf
#id = affine_map<(d0, d1) -> (d0, d1)>
#sc = affine_map<(d0, d1) -> ()>
func.func @divide_by_zero_constant(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = tensor.empty() : tensor<2x3xf32>
  %z = arith.constant dense<0.0> : tensor<f32>
  %0 = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %z : tensor<2x3xf32>, tensor<f32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.divf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %1 = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel"]} ins(%y, %z : tensor<2x3xf32>, tensor<f32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.divf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%0, %1 : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}

// -----
// DNNFusion's associative example (A*sqrt(B)) * (sqrt(B)*C) -> A*B*C: 5 -> 2 FLOPs per
// element, but sqrt(B)*sqrt(B) is NaN for B < 0 and B after: unsafe-math only.
// CHECK-LABEL: func.func @sqrt_product
// CHECK: math.sqrt
// CHECK-COUNT-3: arith.mulf
// UNSAFE-LABEL: func.func @sqrt_product
// UNSAFE-NOT: math.sqrt
// UNSAFE: linalg.generic {{.*}} ins(%arg0, %arg1, %arg2 :
// UNSAFE: %[[AB:.*]] = arith.mulf %in, %in_
// UNSAFE-NEXT: arith.mulf %[[AB]], %in_
// UNSAFE-NOT: linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @sqrt_product(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %c: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = tensor.empty() : tensor<2x3xf32>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %out: f32):
    %r = math.sqrt %p : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %s : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.mulf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%s, %c : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.mulf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%0, %1 : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = arith.mulf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}

// -----
// ReduceProd(Exp(A)) -> Exp(ReduceSum(A)): n exps become one per row, but the product of
// exps overflows where the exp of the sum does not: unsafe-math only.
// CHECK-LABEL: func.func @reduce_prod_exp
// CHECK: math.exp
// CHECK: arith.mulf
// UNSAFE-LABEL: func.func @reduce_prod_exp
// UNSAFE: linalg.fill ins(%{{.*}} : f32)
// UNSAFE: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%arg0
// UNSAFE: arith.addf
// UNSAFE: linalg.generic
// UNSAFE: math.exp
// UNSAFE-NOT: arith.mulf
#id = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>
func.func @reduce_prod_exp(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %e = tensor.empty() : tensor<2x3xf32>
  %init = arith.constant 1.0 : f32
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %out: f32):
    %r = math.exp %p : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %er = tensor.empty() : tensor<2xf32>
  %f = linalg.fill ins(%init : f32) outs(%er : tensor<2xf32>) -> tensor<2xf32>
  %1 = linalg.generic {indexing_maps = [#id, #red], iterator_types = ["parallel", "reduction"]} ins(%0 : tensor<2x3xf32>) outs(%f : tensor<2xf32>) {
  ^bb0(%p: f32, %acc: f32):
    %r = arith.mulf %p, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2xf32>
  return %1 : tensor<2xf32>
}

// -----
// Must not fire (either mode): the product starts from 2, not 1.
// CHECK-LABEL: func.func @reduce_prod_exp_init
// CHECK: math.exp
// CHECK: arith.mulf
// UNSAFE-LABEL: func.func @reduce_prod_exp_init
// UNSAFE: math.exp
// UNSAFE: arith.mulf
#id = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>
func.func @reduce_prod_exp_init(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %e = tensor.empty() : tensor<2x3xf32>
  %init = arith.constant 2.0 : f32
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%p: f32, %out: f32):
    %r = math.exp %p : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %er = tensor.empty() : tensor<2xf32>
  %f = linalg.fill ins(%init : f32) outs(%er : tensor<2xf32>) -> tensor<2xf32>
  %1 = linalg.generic {indexing_maps = [#id, #red], iterator_types = ["parallel", "reduction"]} ins(%0 : tensor<2x3xf32>) outs(%f : tensor<2xf32>) {
  ^bb0(%p: f32, %acc: f32):
    %r = arith.mulf %p, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2xf32>
  return %1 : tensor<2xf32>
}
