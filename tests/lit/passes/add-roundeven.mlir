// RUN: xgen-opt %s --split-input-file -p xgen-add-roundeven | FileCheck %s

// f32 roundeven (a quantize's rounding) becomes x + c - c with c = copysign(2^23, x), kept
// for |x| >= 2^23 and NaN (the compare fails), with x's sign on the result.
// CHECK-LABEL: func.func @quantize
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: i8):
// CHECK: %[[Q:.*]] = arith.divf %[[X]]
// CHECK: %[[L:.*]] = arith.constant 0x4B000000 : f32
// CHECK: %[[C:.*]] = math.copysign %[[L]], %[[Q]] : f32
// CHECK: %[[S:.*]] = arith.addf %[[Q]], %[[C]] : f32
// CHECK: %[[R:.*]] = arith.subf %[[S]], %[[C]] : f32
// CHECK: %[[A:.*]] = math.absf %[[Q]] : f32
// CHECK: %[[SMALL:.*]] = arith.cmpf olt, %[[A]], %[[L]] : f32
// CHECK: %[[Y:.*]] = arith.select %[[SMALL]], %[[R]], %[[Q]] : f32
// CHECK: %[[OUT:.*]] = math.copysign %[[Y]], %[[Q]] : f32
// CHECK: arith.fptosi %[[OUT]] : f32 to i8
// CHECK-NOT: math.roundeven
func.func @quantize(%x: tensor<8xf32>) -> tensor<8xi8> {
  %e = tensor.empty() : tensor<8xi8>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xi8>) {
  ^bb0(%a: f32, %o: i8):
    %s = arith.constant 0.05 : f32
    %q = arith.divf %a, %s : f32
    %v = math.roundeven %q : f32
    %i = arith.fptosi %v : f32 to i8
    linalg.yield %i : i8
  } -> tensor<8xi8>
  return %r : tensor<8xi8>
}

// -----
// Must not fire: f64 and f16 (other spacings than f32's) and math.round (half away from zero).
// CHECK-LABEL: func.func @other_types_and_round
// CHECK: math.roundeven %{{.*}} : f64
// CHECK: math.roundeven %{{.*}} : f16
// CHECK: math.round %{{.*}} : f32
// CHECK-NOT: math.copysign
func.func @other_types_and_round(%x: f64, %h: f16, %f: f32) -> (f64, f16, f32) {
  %a = math.roundeven %x : f64
  %b = math.roundeven %h : f16
  %c = math.round %f : f32
  return %a, %b, %c : f64, f16, f32
}
