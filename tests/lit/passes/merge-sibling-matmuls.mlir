// RUN: xgen-opt %s --split-input-file -p 'xgen-merge-sibling-matmuls{min-width=1}' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p xgen-merge-sibling-matmuls | FileCheck %s --check-prefix=THIN

// With the default min-width (256), these thin (N=2) projections are not worth merging: the
// three matmuls of @qkv stay as they are.
// THIN-LABEL: func.func @qkv
// THIN-COUNT-3: linalg.matmul
// THIN-NOT: linalg.matmul
// THIN: return

// Attention's Q/K/V: three nn.Linear projections of the same input (torch-mlir form: matmul
// on transpose(W), then + bias). One matmul on the concatenated weights, one bias add on
// the concatenated bias, and a slice per original result.
// CHECK-LABEL: func.func @qkv
// CHECK: %[[W:.*]] = arith.constant dense<{{\[\[}}1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00, 3.000000e+00, 3.000000e+00]{{.*}}> : tensor<3x6xf32>
// CHECK: %[[M:.*]] = linalg.matmul ins(%arg0, %[[W]] : tensor<4x3xf32>, tensor<3x6xf32>) outs(%{{.*}} : tensor<4x6xf32>)
// CHECK: %[[B:.*]] = arith.constant dense<[1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00, 3.000000e+00, 3.000000e+00]> : tensor<6xf32>
// CHECK: %[[A:.*]] = linalg.generic {{.*}} ins(%[[M]], %[[B]] : tensor<4x6xf32>, tensor<6xf32>)
// CHECK: arith.addf
// CHECK: %[[Q:.*]] = tensor.extract_slice %[[A]][0, 0] [4, 2] [1, 1]
// CHECK: %[[K:.*]] = tensor.extract_slice %[[A]][0, 2] [4, 2] [1, 1]
// CHECK: %[[V:.*]] = tensor.extract_slice %[[A]][0, 4] [4, 2] [1, 1]
// CHECK-NOT: linalg.matmul
// CHECK-NOT: linalg.transpose
// CHECK: return %[[Q]], %[[K]], %[[V]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @qkv(%x: tensor<4x3xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %wq = arith.constant dense<1.0> : tensor<2x3xf32>
  %wk = arith.constant dense<2.0> : tensor<2x3xf32>
  %wv = arith.constant dense<3.0> : tensor<2x3xf32>
  %bq = arith.constant dense<1.0> : tensor<2xf32>
  %bk = arith.constant dense<2.0> : tensor<2xf32>
  %bv = arith.constant dense<3.0> : tensor<2xf32>
  %et = tensor.empty() : tensor<3x2xf32>
  %e = tensor.empty() : tensor<4x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %wqt = linalg.transpose ins(%wq : tensor<2x3xf32>) outs(%et : tensor<3x2xf32>) permutation = [1, 0]
  %q = linalg.matmul ins(%x, %wqt : tensor<4x3xf32>, tensor<3x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  %q1 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%q, %bq : tensor<4x2xf32>, tensor<2xf32>) outs(%e : tensor<4x2xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x2xf32>
  %wkt = linalg.transpose ins(%wk : tensor<2x3xf32>) outs(%et : tensor<3x2xf32>) permutation = [1, 0]
  %k = linalg.matmul ins(%x, %wkt : tensor<4x3xf32>, tensor<3x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  %k1 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%k, %bk : tensor<4x2xf32>, tensor<2xf32>) outs(%e : tensor<4x2xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x2xf32>
  %wvt = linalg.transpose ins(%wv : tensor<2x3xf32>) outs(%et : tensor<3x2xf32>) permutation = [1, 0]
  %v = linalg.matmul ins(%x, %wvt : tensor<4x3xf32>, tensor<3x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  %v1 = linalg.generic {indexing_maps = [#col, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%bv, %v : tensor<2xf32>, tensor<4x2xf32>) outs(%e : tensor<4x2xf32>) {
  ^bb0(%b: f32, %in: f32, %out: f32):
    %s = arith.addf %b, %in : f32
    linalg.yield %s : f32
  } -> tensor<4x2xf32>
  return %q1, %k1, %v1 : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>
}

// -----
// Without bias adds (and of different widths): a merged matmul and slices.
// CHECK-LABEL: func.func @no_bias
// CHECK: %[[M:.*]] = linalg.matmul ins(%arg0, %{{.*}} : tensor<4x3xf32>, tensor<3x5xf32>)
// CHECK: tensor.extract_slice %[[M]][0, 0] [4, 2] [1, 1]
// CHECK: tensor.extract_slice %[[M]][0, 2] [4, 3] [1, 1]
// CHECK-NOT: linalg.matmul
func.func @no_bias(%x: tensor<4x3xf32>) -> (tensor<4x2xf32>, tensor<4x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %w1 = arith.constant dense<1.0> : tensor<3x2xf32>
  %w2 = arith.constant dense<2.0> : tensor<3x3xf32>
  %e1 = tensor.empty() : tensor<4x2xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %e2 = tensor.empty() : tensor<4x3xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %a = linalg.matmul ins(%x, %w1 : tensor<4x3xf32>, tensor<3x2xf32>) outs(%f1 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %b = linalg.matmul ins(%x, %w2 : tensor<4x3xf32>, tensor<3x3xf32>) outs(%f2 : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %a, %b : tensor<4x2xf32>, tensor<4x3xf32>
}

// -----
// Must not fire: the LHS values differ.
// CHECK-LABEL: func.func @different_lhs
// CHECK: linalg.matmul ins(%arg0,
// CHECK: linalg.matmul ins(%arg1,
// CHECK-NOT: tensor.extract_slice
func.func @different_lhs(%x: tensor<4x3xf32>, %y: tensor<4x3xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %w1 = arith.constant dense<1.0> : tensor<3x2xf32>
  %w2 = arith.constant dense<2.0> : tensor<3x2xf32>
  %e = tensor.empty() : tensor<4x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %a = linalg.matmul ins(%x, %w1 : tensor<4x3xf32>, tensor<3x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  %b = linalg.matmul ins(%y, %w2 : tensor<4x3xf32>, tensor<3x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %a, %b : tensor<4x2xf32>, tensor<4x2xf32>
}

// -----
// Must not fire: one weight is not a constant.
// CHECK-LABEL: func.func @weight_not_constant
// CHECK: linalg.matmul ins(%arg0, %cst
// CHECK: linalg.matmul ins(%arg0, %arg1
// CHECK-NOT: tensor.extract_slice
func.func @weight_not_constant(%x: tensor<4x3xf32>, %w2: tensor<3x2xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %w1 = arith.constant dense<1.0> : tensor<3x2xf32>
  %e = tensor.empty() : tensor<4x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %a = linalg.matmul ins(%x, %w1 : tensor<4x3xf32>, tensor<3x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  %b = linalg.matmul ins(%x, %w2 : tensor<4x3xf32>, tensor<3x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %a, %b : tensor<4x2xf32>, tensor<4x2xf32>
}

// -----
// Must not fire: same LHS value, but the second matmul reads it transposed (contracts over
// its first dimension: K = 4, not 3).
// CHECK-LABEL: func.func @different_k
// CHECK: linalg.matmul ins(%arg0, %cst
// CHECK: linalg.matmul indexing_maps
// CHECK-NOT: tensor.extract_slice
func.func @different_k(%x: tensor<4x4xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %w1 = arith.constant dense<1.0> : tensor<4x2xf32>
  %w2 = arith.constant dense<2.0> : tensor<4x2xf32>
  %e = tensor.empty() : tensor<4x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %a = linalg.matmul ins(%x, %w1 : tensor<4x4xf32>, tensor<4x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  %b = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
    ins(%x, %w2 : tensor<4x4xf32>, tensor<4x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %a, %b : tensor<4x2xf32>, tensor<4x2xf32>
}

// -----
// Must not fire: one has a bias add, the other not (no group of two either way).
// CHECK-LABEL: func.func @mixed_bias
// CHECK-COUNT-2: linalg.matmul ins(%arg0
// CHECK-NOT: tensor.extract_slice
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @mixed_bias(%x: tensor<4x3xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %w1 = arith.constant dense<1.0> : tensor<3x2xf32>
  %w2 = arith.constant dense<2.0> : tensor<3x2xf32>
  %b1 = arith.constant dense<1.0> : tensor<2xf32>
  %e = tensor.empty() : tensor<4x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %a = linalg.matmul ins(%x, %w1 : tensor<4x3xf32>, tensor<3x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  %a1 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %b1 : tensor<4x2xf32>, tensor<2xf32>) outs(%e : tensor<4x2xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x2xf32>
  %c = linalg.matmul ins(%x, %w2 : tensor<4x3xf32>, tensor<3x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %a1, %c : tensor<4x2xf32>, tensor<4x2xf32>
}

// -----
// Epilogue guard (MobileBERT's bottleneck): %a's result, through a reshape and an elementwise
// scale, is the residual of another matmul's `%d + residual`. IREE would make the slice of the
// merged result a side operand of %d's dispatch, which data tiling cannot compile. %a stays
// alone; its siblings %b and %c still merge.
// CHECK-LABEL: func.func @epilogue_guard
// CHECK: linalg.matmul ins(%arg0, %{{.*}} : tensor<4x3xf32>, tensor<3x2xf32>)
// CHECK: linalg.matmul ins(%arg0, %{{.*}} : tensor<4x3xf32>, tensor<3x4xf32>)
// CHECK: linalg.matmul ins(%arg1, %{{.*}} : tensor<4x2xf32>, tensor<2x2xf32>)
// CHECK-NOT: linalg.matmul
#id = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @epilogue_guard(%x: tensor<4x3xf32>, %y: tensor<4x2xf32>) -> (tensor<1x4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %w1 = arith.constant dense<1.0> : tensor<3x2xf32>
  %w2 = arith.constant dense<2.0> : tensor<3x2xf32>
  %w3 = arith.constant dense<3.0> : tensor<3x2xf32>
  %w4 = arith.constant dense<4.0> : tensor<2x2xf32>
  %e = tensor.empty() : tensor<4x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %a = linalg.matmul ins(%x, %w1 : tensor<4x3xf32>, tensor<3x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  %b = linalg.matmul ins(%x, %w2 : tensor<4x3xf32>, tensor<3x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  %c = linalg.matmul ins(%x, %w3 : tensor<4x3xf32>, tensor<3x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  %d = linalg.matmul ins(%y, %w4 : tensor<4x2xf32>, tensor<2x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  %a3 = tensor.expand_shape %a [[0, 1], [2]] output_shape [1, 4, 2] : tensor<4x2xf32> into tensor<1x4x2xf32>
  %d3 = tensor.expand_shape %d [[0, 1], [2]] output_shape [1, 4, 2] : tensor<4x2xf32> into tensor<1x4x2xf32>
  %e3 = tensor.empty() : tensor<1x4x2xf32>
  %two = arith.constant 2.0 : f32
  %s = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a3 : tensor<1x4x2xf32>) outs(%e3 : tensor<1x4x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %two : f32
    linalg.yield %m : f32
  } -> tensor<1x4x2xf32>
  %r = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%d3, %s : tensor<1x4x2xf32>, tensor<1x4x2xf32>) outs(%e3 : tensor<1x4x2xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %t = arith.addf %in, %in2 : f32
    linalg.yield %t : f32
  } -> tensor<1x4x2xf32>
  return %r, %b, %c : tensor<1x4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>
}

// -----
// Must not fire: two siblings, one of them guarded (its result is added to another matmul's
// result, the shape of /tmp/eval/min/slice_residual.mlir): no group of two is left.
// CHECK-LABEL: func.func @epilogue_guard_pair
// CHECK-COUNT-3: linalg.matmul
// CHECK-NOT: tensor.extract_slice
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @epilogue_guard_pair(%x: tensor<4x3xf32>, %y: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %w1 = arith.constant dense<1.0> : tensor<3x2xf32>
  %w2 = arith.constant dense<2.0> : tensor<3x2xf32>
  %w4 = arith.constant dense<4.0> : tensor<2x2xf32>
  %e = tensor.empty() : tensor<4x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %a = linalg.matmul ins(%x, %w1 : tensor<4x3xf32>, tensor<3x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  %b = linalg.matmul ins(%x, %w2 : tensor<4x3xf32>, tensor<3x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  %d = linalg.matmul ins(%y, %w4 : tensor<4x2xf32>, tensor<2x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%d, %a : tensor<4x2xf32>, tensor<4x2xf32>) outs(%e : tensor<4x2xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %t = arith.addf %in, %in2 : f32
    linalg.yield %t : f32
  } -> tensor<4x2xf32>
  return %r, %b : tensor<4x2xf32>, tensor<4x2xf32>
}

// -----
// A dynamic sequence length: the merged matmul, its bias add and the slices take the rows'
// size from the first member's init (tensor.dim), not the dynamic sentinel.
// CHECK-LABEL: func.func @dynamic_rows
// CHECK: %[[D:.*]] = tensor.dim %{{[0-9]+}}, %c0
// CHECK: %[[M:.*]] = linalg.matmul ins(%arg0, %{{.*}} : tensor<?x3xf32>, tensor<3x4xf32>) outs(%{{.*}} : tensor<?x4xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[M]], %{{.*}} : tensor<?x4xf32>, tensor<4xf32>)
// CHECK: tensor.extract_slice %{{.*}}[0, 0] [%[[D]], 2] [1, 1] : tensor<?x4xf32> to tensor<?x2xf32>
// CHECK: tensor.extract_slice %{{.*}}[0, 2] [%[[D]], 2] [1, 1] : tensor<?x4xf32> to tensor<?x2xf32>
// CHECK-NOT: linalg.matmul
#idd = affine_map<(d0, d1) -> (d0, d1)>
#cold = affine_map<(d0, d1) -> (d1)>
func.func @dynamic_rows(%x: tensor<?x3xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x3xf32>
  %wq = arith.constant dense<1.0> : tensor<3x2xf32>
  %wk = arith.constant dense<2.0> : tensor<3x2xf32>
  %bq = arith.constant dense<1.0> : tensor<2xf32>
  %bk = arith.constant dense<2.0> : tensor<2xf32>
  %e = tensor.empty(%n) : tensor<?x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x2xf32>) -> tensor<?x2xf32>
  %q = linalg.matmul ins(%x, %wq : tensor<?x3xf32>, tensor<3x2xf32>) outs(%f : tensor<?x2xf32>) -> tensor<?x2xf32>
  %q1 = linalg.generic {indexing_maps = [#idd, #cold, #idd], iterator_types = ["parallel", "parallel"]} ins(%q, %bq : tensor<?x2xf32>, tensor<2xf32>) outs(%e : tensor<?x2xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    linalg.yield %s : f32
  } -> tensor<?x2xf32>
  %k = linalg.matmul ins(%x, %wk : tensor<?x3xf32>, tensor<3x2xf32>) outs(%f : tensor<?x2xf32>) -> tensor<?x2xf32>
  %k1 = linalg.generic {indexing_maps = [#idd, #cold, #idd], iterator_types = ["parallel", "parallel"]} ins(%k, %bk : tensor<?x2xf32>, tensor<2xf32>) outs(%e : tensor<?x2xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    linalg.yield %s : f32
  } -> tensor<?x2xf32>
  return %q1, %k1 : tensor<?x2xf32>, tensor<?x2xf32>
}
