// torch-mlir's dequantize, sitofp(extsi(q) - zp) in i64, as sitofp(q) - zp in f32 (exact: both
// sides are integers below 2^24); AVX2 has no vector i64 -> f32 conversion.
// RUN: xgen-opt %s -p 'xgen-narrow-dequantize,func.func(canonicalize)' | FileCheck %s
// CHECK-LABEL: func.func @dq
// CHECK: %[[ZP:.*]] = arith.constant 1.400000e+01 : f32
// CHECK: arith.sitofp %{{.*}} : i8 to f32
// CHECK-NEXT: arith.subf %{{.*}}, %[[ZP]]
// A zero point read at run time (dynamic quantization, unsigned): both sides converted.
// CHECK: %[[A:.*]] = arith.uitofp %{{.*}} : i8 to f32
// CHECK-NEXT: %[[B:.*]] = arith.uitofp %{{.*}} : i8 to f32
// CHECK-NEXT: arith.subf %[[A]], %[[B]]
// Must not fire: a zero point of 2^24 (the difference is not exact in f32).
// CHECK: arith.extsi %{{.*}} : i8 to i64
// CHECK-NEXT: arith.subi
// CHECK-NEXT: arith.sitofp %{{.*}} : i64 to f32
func.func @dq(%x: tensor<4xi8>, %z: tensor<i8>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %c14 = arith.constant 14 : i64
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<4xi8>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: i8, %o: f32):
    %w = arith.extsi %a : i8 to i64
    %s = arith.subi %w, %c14 : i64
    %f = arith.sitofp %s : i64 to f32
    linalg.yield %f : f32
  } -> tensor<4xf32>
  %r2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x, %z : tensor<4xi8>, tensor<i8>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: i8, %zz: i8, %o: f32):
    %w = arith.extui %a : i8 to i64
    %zw = arith.extui %zz : i8 to i64
    %s = arith.subi %w, %zw : i64
    %f = arith.sitofp %s : i64 to f32
    linalg.yield %f : f32
  } -> tensor<4xf32>
  %r3 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<4xi8>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: i8, %o: f32):
    %w = arith.extsi %a : i8 to i64
    %big = arith.constant 16777216 : i64
    %s = arith.subi %w, %big : i64
    %f = arith.sitofp %s : i64 to f32
    linalg.yield %f : f32
  } -> tensor<4xf32>
  return %r, %r2, %r3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// Must not fire: a 32-bit source (an integer accumulator: not exact in f32) and a
// conversion of something other than a difference.
// CHECK-LABEL: func.func @kept
// CHECK: arith.extsi %{{.*}} : i32 to i64
// CHECK: arith.sitofp %{{.*}} : i64 to f32
// CHECK: arith.sitofp %{{.*}} : i64 to f32
func.func @kept(%x: tensor<4xi32>, %y: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xf32>) {
  %c1 = arith.constant 1 : i64
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<4xi32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: i32, %o: f32):
    %w = arith.extsi %a : i32 to i64
    %s = arith.subi %w, %c1 : i64
    %f = arith.sitofp %s : i64 to f32
    linalg.yield %f : f32
  } -> tensor<4xf32>
  %r2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%y : tensor<4xi64>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: i64, %o: f32):
    %f = arith.sitofp %a : i64 to f32
    linalg.yield %f : f32
  } -> tensor<4xf32>
  return %r, %r2 : tensor<4xf32>, tensor<4xf32>
}
