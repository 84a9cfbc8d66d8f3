// A scalar that a linalg.generic reads from outside, computed from elements of 0-d tensors
// (tensor.extract, then scalar arith: dynamic quantization's zero point and scale), is
// computed in the generic's body from those tensors, which become its inputs (map to ()).
// RUN: xgen-opt %s --split-input-file -p 'xgen-scalar-operands,func.func(canonicalize)' | FileCheck %s

// CHECK-LABEL: func.func @quantize
// CHECK-NOT: tensor.extract
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[S:.*]], #[[S]], #{{.*}}]
// CHECK-SAME: ins(%arg0, %arg2, %arg1 : tensor<4x8xf32>, tensor<i8>, tensor<f32>)
// CHECK: ^bb0(%[[X:.*]]: f32, %[[ZP:.*]]: i8, %[[SC:.*]]: f32, %{{.*}}: i8):
// (canonicalize folds the cloned extui + sitofp into one uitofp)
// CHECK-NEXT: arith.uitofp %[[ZP]] : i8 to f32
// CHECK: arith.divf %[[X]], %[[SC]] : f32
func.func @quantize(%x: tensor<4x8xf32>, %scale: tensor<f32>, %zp: tensor<i8>) -> tensor<4x8xi8> {
  %lo = arith.constant -1.280000e+02 : f32
  %hi = arith.constant 1.270000e+02 : f32
  %z = tensor.extract %zp[] : tensor<i8>
  %zw = arith.extui %z : i8 to i64
  %s = tensor.extract %scale[] : tensor<f32>
  %e = tensor.empty() : tensor<4x8xi8>
  %q = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xi8>) {
  ^bb0(%in: f32, %out: i8):
    %zf = arith.sitofp %zw : i64 to f32
    %d = arith.divf %in, %s : f32
    %r = math.roundeven %d : f32
    %a = arith.addf %r, %zf : f32
    %c0 = arith.maximumf %a, %lo : f32
    %c1 = arith.minimumf %c0, %hi : f32
    %i = arith.fptosi %c1 : f32 to i8
    linalg.yield %i : i8
  } -> tensor<4x8xi8>
  return %q : tensor<4x8xi8>
}

// -----

// Must not fire: an element of a larger tensor (a gather), a function argument, a constant.
// CHECK-LABEL: func.func @not_from_0d
// CHECK: tensor.extract %arg1[%c1]
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<4xf32>)
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<4xf32>)
func.func @not_from_0d(%x: tensor<4xf32>, %t: tensor<3xf32>, %s: f32) -> (tensor<4xf32>, tensor<4xf32>) {
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f32
  %g = tensor.extract %t[%c1] : tensor<3xf32>
  %e = tensor.empty() : tensor<4xf32>
  %a = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %g : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %s : f32
    %n = arith.mulf %m, %two : f32
    linalg.yield %n : f32
  } -> tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}
