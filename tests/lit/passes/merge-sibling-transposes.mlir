// RUN: xgen-opt %s --split-input-file -p xgen-merge-sibling-transposes | FileCheck %s

// Q/K/V after xgen-merge-sibling-matmuls (S=4, 2 heads of 2): three column slices of one
// [S, 3*H*D] tensor, each reshaped to heads and transposed (K to K^T). One reshape of the
// whole to [1, S, 3, H, D], one transpose to [3, 1, H, S, D], a slice per member along the
// leading dimension; K keeps a transpose of its slice by the composed permutation.
// CHECK-LABEL: func.func @qkv
// CHECK: %[[X:.*]] = tensor.expand_shape %arg0 {{\[\[}}0, 1], [2, 3, 4]] output_shape [1, 4, 3, 2, 2] : tensor<4x12xf32> into tensor<1x4x3x2x2xf32>
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[X]] : tensor<1x4x3x2x2xf32>) outs(%{{.*}} : tensor<3x1x2x4x2xf32>) permutation = [2, 0, 3, 1, 4]
// CHECK: %[[Q:.*]] = tensor.extract_slice %[[T]][0, 0, 0, 0, 0] [1, 1, 2, 4, 2] [1, 1, 1, 1, 1] : tensor<3x1x2x4x2xf32> to tensor<1x2x4x2xf32>
// CHECK: %[[K:.*]] = tensor.extract_slice %[[T]][1, 0, 0, 0, 0] [1, 1, 2, 4, 2] [1, 1, 1, 1, 1] : tensor<3x1x2x4x2xf32> to tensor<1x2x4x2xf32>
// CHECK: %[[KT:.*]] = linalg.transpose ins(%[[K]] : tensor<1x2x4x2xf32>) outs(%{{.*}} : tensor<1x2x2x4xf32>) permutation = [0, 1, 3, 2]
// CHECK: %[[V:.*]] = tensor.extract_slice %[[T]][2, 0, 0, 0, 0] [1, 1, 2, 4, 2] [1, 1, 1, 1, 1] : tensor<3x1x2x4x2xf32> to tensor<1x2x4x2xf32>
// CHECK-NOT: linalg.transpose
// CHECK: return %[[Q]], %[[KT]], %[[V]]
func.func @qkv(%x: tensor<4x12xf32>) -> (tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>, tensor<1x2x4x2xf32>) {
  %q = tensor.extract_slice %x[0, 0] [4, 4] [1, 1] : tensor<4x12xf32> to tensor<4x4xf32>
  %k = tensor.extract_slice %x[0, 4] [4, 4] [1, 1] : tensor<4x12xf32> to tensor<4x4xf32>
  %v = tensor.extract_slice %x[0, 8] [4, 4] [1, 1] : tensor<4x12xf32> to tensor<4x4xf32>
  %q4 = tensor.expand_shape %q [[0, 1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<4x4xf32> into tensor<1x4x2x2xf32>
  %k4 = tensor.expand_shape %k [[0, 1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<4x4xf32> into tensor<1x4x2x2xf32>
  %v4 = tensor.expand_shape %v [[0, 1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<4x4xf32> into tensor<1x4x2x2xf32>
  %e = tensor.empty() : tensor<1x2x4x2xf32>
  %ek = tensor.empty() : tensor<1x2x2x4xf32>
  %qt = linalg.transpose ins(%q4 : tensor<1x4x2x2xf32>) outs(%e : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  %kt = linalg.transpose ins(%k4 : tensor<1x4x2x2xf32>) outs(%ek : tensor<1x2x2x4xf32>) permutation = [0, 2, 3, 1]
  %vt = linalg.transpose ins(%v4 : tensor<1x4x2x2xf32>) outs(%e : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  return %qt, %kt, %vt : tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>, tensor<1x2x4x2xf32>
}

// -----
// GPT-2's c_attn split: slices of a 3-D [1, S, 3*H*D] tensor, in any order in the IR, all
// with the same permutation: no transpose is left on any member.
// CHECK-LABEL: func.func @gpt2_split
// CHECK: %[[X:.*]] = tensor.expand_shape %arg0 {{\[\[}}0], [1], [2, 3, 4]] output_shape [1, 4, 3, 2, 2] : tensor<1x4x12xf32> into tensor<1x4x3x2x2xf32>
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[X]] : tensor<1x4x3x2x2xf32>) outs(%{{.*}} : tensor<3x1x2x4x2xf32>) permutation = [2, 0, 3, 1, 4]
// CHECK-DAG: %[[A:.*]] = tensor.extract_slice %[[T]][0, 0, 0, 0, 0]
// CHECK-DAG: %[[B:.*]] = tensor.extract_slice %[[T]][1, 0, 0, 0, 0]
// CHECK-DAG: %[[C:.*]] = tensor.extract_slice %[[T]][2, 0, 0, 0, 0]
// CHECK-NOT: linalg.transpose
// CHECK: return %[[B]], %[[A]], %[[C]]
func.func @gpt2_split(%x: tensor<1x4x12xf32>) -> (tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>) {
  %b = tensor.extract_slice %x[0, 0, 4] [1, 4, 4] [1, 1, 1] : tensor<1x4x12xf32> to tensor<1x4x4xf32>
  %a = tensor.extract_slice %x[0, 0, 0] [1, 4, 4] [1, 1, 1] : tensor<1x4x12xf32> to tensor<1x4x4xf32>
  %c = tensor.extract_slice %x[0, 0, 8] [1, 4, 4] [1, 1, 1] : tensor<1x4x12xf32> to tensor<1x4x4xf32>
  %b4 = tensor.expand_shape %b [[0], [1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<1x4x4xf32> into tensor<1x4x2x2xf32>
  %a4 = tensor.expand_shape %a [[0], [1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<1x4x4xf32> into tensor<1x4x2x2xf32>
  %c4 = tensor.expand_shape %c [[0], [1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<1x4x4xf32> into tensor<1x4x2x2xf32>
  %e = tensor.empty() : tensor<1x2x4x2xf32>
  %bt = linalg.transpose ins(%b4 : tensor<1x4x2x2xf32>) outs(%e : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  %at = linalg.transpose ins(%a4 : tensor<1x4x2x2xf32>) outs(%e : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  %ct = linalg.transpose ins(%c4 : tensor<1x4x2x2xf32>) outs(%e : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  return %bt, %at, %ct : tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>
}

// -----
// Must not fire: the slices do not cover the tensor (the last third is not used).
// CHECK-LABEL: func.func @not_covering
// CHECK-COUNT-2: linalg.transpose ins(%expanded
// CHECK-NOT: tensor<1x4x3x2x2xf32>
func.func @not_covering(%x: tensor<4x12xf32>) -> (tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>) {
  %q = tensor.extract_slice %x[0, 0] [4, 4] [1, 1] : tensor<4x12xf32> to tensor<4x4xf32>
  %k = tensor.extract_slice %x[0, 4] [4, 4] [1, 1] : tensor<4x12xf32> to tensor<4x4xf32>
  %q4 = tensor.expand_shape %q [[0, 1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<4x4xf32> into tensor<1x4x2x2xf32>
  %k4 = tensor.expand_shape %k [[0, 1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<4x4xf32> into tensor<1x4x2x2xf32>
  %e = tensor.empty() : tensor<1x2x4x2xf32>
  %qt = linalg.transpose ins(%q4 : tensor<1x4x2x2xf32>) outs(%e : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  %kt = linalg.transpose ins(%k4 : tensor<1x4x2x2xf32>) outs(%e : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  return %qt, %kt : tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>
}

// -----
// Must not fire: the slices are reshaped differently (2 heads of 2 vs 4 heads of 1).
// CHECK-LABEL: func.func @different_expand
// CHECK-COUNT-2: linalg.transpose ins(%expanded
// CHECK-NOT: tensor<1x4x2x2x2xf32>
func.func @different_expand(%x: tensor<4x8xf32>) -> (tensor<1x2x4x2xf32>, tensor<1x4x4x1xf32>) {
  %q = tensor.extract_slice %x[0, 0] [4, 4] [1, 1] : tensor<4x8xf32> to tensor<4x4xf32>
  %k = tensor.extract_slice %x[0, 4] [4, 4] [1, 1] : tensor<4x8xf32> to tensor<4x4xf32>
  %q4 = tensor.expand_shape %q [[0, 1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<4x4xf32> into tensor<1x4x2x2xf32>
  %k4 = tensor.expand_shape %k [[0, 1], [2, 3]] output_shape [1, 4, 4, 1] : tensor<4x4xf32> into tensor<1x4x4x1xf32>
  %e = tensor.empty() : tensor<1x2x4x2xf32>
  %ek = tensor.empty() : tensor<1x4x4x1xf32>
  %qt = linalg.transpose ins(%q4 : tensor<1x4x2x2xf32>) outs(%e : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  %kt = linalg.transpose ins(%k4 : tensor<1x4x4x1xf32>) outs(%ek : tensor<1x4x4x1xf32>) permutation = [0, 2, 1, 3]
  return %qt, %kt : tensor<1x2x4x2xf32>, tensor<1x4x4x1xf32>
}

// -----
// Must not fire: a slice has another user (it is also returned), so it stays materialized.
// CHECK-LABEL: func.func @slice_other_user
// CHECK-COUNT-2: linalg.transpose ins(%expanded
// CHECK-NOT: tensor<1x4x2x2x2xf32>
func.func @slice_other_user(%x: tensor<4x8xf32>) -> (tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>, tensor<4x4xf32>) {
  %q = tensor.extract_slice %x[0, 0] [4, 4] [1, 1] : tensor<4x8xf32> to tensor<4x4xf32>
  %k = tensor.extract_slice %x[0, 4] [4, 4] [1, 1] : tensor<4x8xf32> to tensor<4x4xf32>
  %q4 = tensor.expand_shape %q [[0, 1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<4x4xf32> into tensor<1x4x2x2xf32>
  %k4 = tensor.expand_shape %k [[0, 1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<4x4xf32> into tensor<1x4x2x2xf32>
  %e = tensor.empty() : tensor<1x2x4x2xf32>
  %qt = linalg.transpose ins(%q4 : tensor<1x4x2x2xf32>) outs(%e : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  %kt = linalg.transpose ins(%k4 : tensor<1x4x2x2xf32>) outs(%e : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  return %qt, %kt, %k : tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>, tensor<4x4xf32>
}

// -----
// Must not fire: a reshaped slice has another user besides its transpose.
// CHECK-LABEL: func.func @expand_other_user
// CHECK-COUNT-2: linalg.transpose ins(%expanded
// CHECK-NOT: tensor<1x4x2x2x2xf32>
func.func @expand_other_user(%x: tensor<4x8xf32>) -> (tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>, tensor<1x4x2x2xf32>) {
  %q = tensor.extract_slice %x[0, 0] [4, 4] [1, 1] : tensor<4x8xf32> to tensor<4x4xf32>
  %k = tensor.extract_slice %x[0, 4] [4, 4] [1, 1] : tensor<4x8xf32> to tensor<4x4xf32>
  %q4 = tensor.expand_shape %q [[0, 1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<4x4xf32> into tensor<1x4x2x2xf32>
  %k4 = tensor.expand_shape %k [[0, 1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<4x4xf32> into tensor<1x4x2x2xf32>
  %e = tensor.empty() : tensor<1x2x4x2xf32>
  %qt = linalg.transpose ins(%q4 : tensor<1x4x2x2xf32>) outs(%e : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  %kt = linalg.transpose ins(%k4 : tensor<1x4x2x2xf32>) outs(%e : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  return %qt, %kt, %q4 : tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>, tensor<1x4x2x2xf32>
}

// -----
// Must not fire: the slices overlap (offsets 0 and 2 of width 4 in a width-8 tensor).
// CHECK-LABEL: func.func @overlapping
// CHECK-COUNT-2: linalg.transpose ins(%expanded
// CHECK-NOT: tensor<1x4x2x2x2xf32>
func.func @overlapping(%x: tensor<4x8xf32>) -> (tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>) {
  %q = tensor.extract_slice %x[0, 0] [4, 4] [1, 1] : tensor<4x8xf32> to tensor<4x4xf32>
  %k = tensor.extract_slice %x[0, 2] [4, 4] [1, 1] : tensor<4x8xf32> to tensor<4x4xf32>
  %q4 = tensor.expand_shape %q [[0, 1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<4x4xf32> into tensor<1x4x2x2xf32>
  %k4 = tensor.expand_shape %k [[0, 1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<4x4xf32> into tensor<1x4x2x2xf32>
  %e = tensor.empty() : tensor<1x2x4x2xf32>
  %qt = linalg.transpose ins(%q4 : tensor<1x4x2x2xf32>) outs(%e : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  %kt = linalg.transpose ins(%k4 : tensor<1x4x2x2xf32>) outs(%e : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  return %qt, %kt : tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>
}

// -----
// A member transposed by a linalg.generic that only permutes (some frontends' `permute`)
// counts like a named transpose.
// CHECK-LABEL: func.func @generic_transpose
// CHECK: %[[T:.*]] = linalg.transpose ins(%{{.*}} : tensor<1x4x2x2x2xf32>) outs(%{{.*}} : tensor<2x1x2x4x2xf32>) permutation = [2, 0, 3, 1, 4]
// CHECK: %[[Q:.*]] = tensor.extract_slice %[[T]][0, 0, 0, 0, 0]
// CHECK: %[[K:.*]] = tensor.extract_slice %[[T]][1, 0, 0, 0, 0]
// CHECK-NOT: linalg.generic
// CHECK: return %[[Q]], %[[K]]
#in = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @generic_transpose(%x: tensor<4x8xf32>) -> (tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>) {
  %q = tensor.extract_slice %x[0, 0] [4, 4] [1, 1] : tensor<4x8xf32> to tensor<4x4xf32>
  %k = tensor.extract_slice %x[0, 4] [4, 4] [1, 1] : tensor<4x8xf32> to tensor<4x4xf32>
  %q4 = tensor.expand_shape %q [[0, 1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<4x4xf32> into tensor<1x4x2x2xf32>
  %k4 = tensor.expand_shape %k [[0, 1], [2, 3]] output_shape [1, 4, 2, 2] : tensor<4x4xf32> into tensor<1x4x2x2xf32>
  %e = tensor.empty() : tensor<1x2x4x2xf32>
  %qt = linalg.transpose ins(%q4 : tensor<1x4x2x2xf32>) outs(%e : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
  %kt = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%k4 : tensor<1x4x2x2xf32>) outs(%e : tensor<1x2x4x2xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<1x2x4x2xf32>
  return %qt, %kt : tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>
}
