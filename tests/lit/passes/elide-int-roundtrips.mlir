// A quantize (round, clamp, fptosi to i8) read only by dequantizes (sitofp - zp), through a
// reshape and a transpose, stays f32; a contraction's result rounded to i32 and converted
// straight back too (an integer: fptosi to i32 is exact or poison).
// RUN: xgen-opt %s -p 'xgen-elide-int-roundtrips,func.func(canonicalize)' | FileCheck %s
// CHECK-LABEL: func.func @chain
// CHECK-NOT: arith.fptosi
// CHECK-NOT: arith.sitofp
// CHECK-NOT: xi8>
// CHECK: math.roundeven
// CHECK: arith.minimumf
// CHECK: linalg.transpose ins(%{{.*}} : tensor<2x3xf32>)
// CHECK: return
func.func @chain(%x: tensor<6xf32>) -> (tensor<6xf32>, tensor<3x2xf32>, tensor<6xf32>) {
  %zp = arith.constant -3.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %s = arith.constant 0.5 : f32
  %e8 = tensor.empty() : tensor<6xi8>
  %q = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<6xf32>) outs(%e8 : tensor<6xi8>) {
  ^bb0(%a: f32, %o: i8):
    %d = arith.divf %a, %s : f32
    %r = math.roundeven %d : f32
    %z = arith.addf %r, %zp : f32
    %m = arith.maximumf %z, %lo : f32
    %n = arith.minimumf %m, %hi : f32
    %i = arith.fptosi %n : f32 to i8
    linalg.yield %i : i8
  } -> tensor<6xi8>
  %ef = tensor.empty() : tensor<6xf32>
  %dq = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%q : tensor<6xi8>) outs(%ef : tensor<6xf32>) {
  ^bb0(%a: i8, %o: f32):
    %f = arith.sitofp %a : i8 to f32
    %g = arith.subf %f, %zp : f32
    linalg.yield %g : f32
  } -> tensor<6xf32>
  %v = tensor.expand_shape %q [[0, 1]] output_shape [2, 3] : tensor<6xi8> into tensor<2x3xi8>
  %et = tensor.empty() : tensor<3x2xi8>
  %t = linalg.transpose ins(%v : tensor<2x3xi8>) outs(%et : tensor<3x2xi8>) permutation = [1, 0]
  %ef2 = tensor.empty() : tensor<3x2xf32>
  %dq2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%t : tensor<3x2xi8>) outs(%ef2 : tensor<3x2xf32>) {
  ^bb0(%a: i8, %o: f32):
    %f = arith.sitofp %a : i8 to f32
    %g = arith.mulf %f, %s : f32
    linalg.yield %g : f32
  } -> tensor<3x2xf32>
  %e32 = tensor.empty() : tensor<6xi32>
  %acc = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<6xf32>) outs(%e32 : tensor<6xi32>) {
  ^bb0(%a: f32, %o: i32):
    %r = math.roundeven %a : f32
    %i = arith.fptosi %r : f32 to i32
    linalg.yield %i : i32
  } -> tensor<6xi32>
  %back = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%acc : tensor<6xi32>) outs(%ef : tensor<6xf32>) {
  ^bb0(%a: i32, %o: f32):
    %f = arith.sitofp %a : i32 to f32
    %g = arith.mulf %f, %s : f32
    linalg.yield %g : f32
  } -> tensor<6xf32>
  return %dq, %dq2, %back : tensor<6xf32>, tensor<3x2xf32>, tensor<6xf32>
}

// Must not fire: i8 without its clamp (the value may not fit), a value not proven an integer
// (no rounding), an integer result returned, a consumer that converts unsigned, and one that
// reads the integer otherwise (an extsi for an integer op).
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-5: arith.fptosi
// CHECK: return
func.func @kept(%x: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xi8>, tensor<6xf32>, tensor<6xi32>) {
  %lo = arith.constant -128.0 : f32
  %e8 = tensor.empty() : tensor<6xi8>
  %ef = tensor.empty() : tensor<6xf32>
  %e32 = tensor.empty() : tensor<6xi32>
  %q1 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<6xf32>) outs(%e8 : tensor<6xi8>) {
  ^bb0(%a: f32, %o: i8):
    %r = math.roundeven %a : f32
    %m = arith.maximumf %r, %lo : f32
    %i = arith.fptosi %m : f32 to i8
    linalg.yield %i : i8
  } -> tensor<6xi8>
  %d1 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%q1 : tensor<6xi8>) outs(%ef : tensor<6xf32>) {
  ^bb0(%a: i8, %o: f32):
    %f = arith.sitofp %a : i8 to f32
    linalg.yield %f : f32
  } -> tensor<6xf32>
  %q2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<6xf32>) outs(%e32 : tensor<6xi32>) {
  ^bb0(%a: f32, %o: i32):
    %i = arith.fptosi %a : f32 to i32
    linalg.yield %i : i32
  } -> tensor<6xi32>
  %d2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%q2 : tensor<6xi32>) outs(%ef : tensor<6xf32>) {
  ^bb0(%a: i32, %o: f32):
    %f = arith.sitofp %a : i32 to f32
    linalg.yield %f : f32
  } -> tensor<6xf32>
  %q3 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<6xf32>) outs(%e8 : tensor<6xi8>) {
  ^bb0(%a: f32, %o: i8):
    %r = math.roundeven %a : f32
    %m = arith.maximumf %r, %lo : f32
    %n = arith.minimumf %m, %lo : f32
    %i = arith.fptosi %n : f32 to i8
    linalg.yield %i : i8
  } -> tensor<6xi8>
  %q4 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<6xf32>) outs(%e8 : tensor<6xi8>) {
  ^bb0(%a: f32, %o: i8):
    %r = math.roundeven %a : f32
    %m = arith.maximumf %r, %lo : f32
    %n = arith.minimumf %m, %lo : f32
    %i = arith.fptosi %n : f32 to i8
    linalg.yield %i : i8
  } -> tensor<6xi8>
  %d4 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%q4 : tensor<6xi8>) outs(%ef : tensor<6xf32>) {
  ^bb0(%a: i8, %o: f32):
    %f = arith.uitofp %a : i8 to f32
    linalg.yield %f : f32
  } -> tensor<6xf32>
  %q5 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<6xf32>) outs(%e32 : tensor<6xi32>) {
  ^bb0(%a: f32, %o: i32):
    %r = math.roundeven %a : f32
    %i = arith.fptosi %r : f32 to i32
    linalg.yield %i : i32
  } -> tensor<6xi32>
  %d5 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%q5 : tensor<6xi32>) outs(%e32 : tensor<6xi32>) {
  ^bb0(%a: i32, %o: i32):
    %m = arith.muli %a, %a : i32
    linalg.yield %m : i32
  } -> tensor<6xi32>
  return %d1, %d2, %q3, %d4, %d5 : tensor<6xf32>, tensor<6xf32>, tensor<6xi8>, tensor<6xf32>, tensor<6xi32>
}
