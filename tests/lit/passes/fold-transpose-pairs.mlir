// RUN: xgen-opt %s --split-input-file -p xgen-fold-transpose-pairs | FileCheck %s

// Inverse permutations cancel: the pair disappears.
// CHECK-LABEL: func.func @cancel
// CHECK-NOT: linalg.transpose
// CHECK: return %arg0
func.func @cancel(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %e0 = tensor.empty() : tensor<3x2x4xf32>
  %t0 = linalg.transpose ins(%x : tensor<2x3x4xf32>) outs(%e0 : tensor<3x2x4xf32>) permutation = [1, 0, 2]
  %e1 = tensor.empty() : tensor<2x3x4xf32>
  %t1 = linalg.transpose ins(%t0 : tensor<3x2x4xf32>) outs(%e1 : tensor<2x3x4xf32>) permutation = [1, 0, 2]
  return %t1 : tensor<2x3x4xf32>
}

// -----
// Two non-inverse permutations become one transpose by their composition.
// CHECK-LABEL: func.func @compose
// CHECK: linalg.transpose ins(%arg0 : tensor<2x3x4xf32>) outs(%{{.*}} : tensor<4x2x3xf32>) permutation = [2, 0, 1]
// CHECK-NOT: linalg.transpose
func.func @compose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %e0 = tensor.empty() : tensor<3x2x4xf32>
  %t0 = linalg.transpose ins(%x : tensor<2x3x4xf32>) outs(%e0 : tensor<3x2x4xf32>) permutation = [1, 0, 2]
  %e1 = tensor.empty() : tensor<4x2x3xf32>
  %t1 = linalg.transpose ins(%t0 : tensor<3x2x4xf32>) outs(%e1 : tensor<4x2x3xf32>) permutation = [2, 1, 0]
  return %t1 : tensor<4x2x3xf32>
}

// -----
// Must not fire: a single transpose stays.
// CHECK-LABEL: func.func @single
// CHECK: linalg.transpose ins(%arg0 {{.*}} permutation = [1, 0]
func.func @single(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %e = tensor.empty() : tensor<3x2xf32>
  %t = linalg.transpose ins(%x : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = [1, 0]
  return %t : tensor<3x2xf32>
}

// -----
// Must not fire: an elementwise op between the transposes blocks the fold.
// CHECK-LABEL: func.func @blocked
// CHECK: linalg.transpose
// CHECK: math.exp
// CHECK: linalg.transpose
func.func @blocked(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e0 = tensor.empty() : tensor<3x2xf32>
  %t0 = linalg.transpose ins(%x : tensor<2x3xf32>) outs(%e0 : tensor<3x2xf32>) permutation = [1, 0]
  %x1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                        iterator_types = ["parallel", "parallel"]}
        ins(%t0 : tensor<3x2xf32>) outs(%e0 : tensor<3x2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %y = math.exp %a : f32
    linalg.yield %y : f32
  } -> tensor<3x2xf32>
  %e1 = tensor.empty() : tensor<2x3xf32>
  %t1 = linalg.transpose ins(%x1 : tensor<3x2xf32>) outs(%e1 : tensor<2x3xf32>) permutation = [1, 0]
  return %t1 : tensor<2x3xf32>
}
