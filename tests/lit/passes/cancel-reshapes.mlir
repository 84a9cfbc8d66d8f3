// RUN: xgen-opt %s --split-input-file -p xgen-cancel-reshapes | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-cancel-reshapes,func.func(canonicalize)' | FileCheck %s --check-prefix=CANON

// BERT's FFN: 2-D matmul result -> expand to 3-D -> GELU -> collapse back to 2-D. The GELU
// runs on the 2-D tensor; both reshapes go. (A captured scalar and a rank-0 operand are fine.)
// CHECK-LABEL: func.func @reshape_sandwich
// CHECK-NOT: tensor.expand_shape
// CHECK-NOT: tensor.collapse_shape
// CHECK: %[[G:.*]] = linalg.generic {{.*}} ins(%arg0, %cst{{.*}} : tensor<4x8xf32>, tensor<f32>) outs(%{{.*}} : tensor<4x8xf32>)
// CHECK: math.exp
// CHECK: return %[[G]] : tensor<4x8xf32>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#s3 = affine_map<(d0, d1, d2) -> ()>
func.func @reshape_sandwich(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %half = arith.constant 0.5 : f32
  %k = arith.constant dense<2.0> : tensor<f32>
  %a = tensor.expand_shape %x [[0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xf32> into tensor<1x4x8xf32>
  %e = tensor.empty() : tensor<1x4x8xf32>
  %g = linalg.generic {indexing_maps = [#id3, #s3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a, %k : tensor<1x4x8xf32>, tensor<f32>) outs(%e : tensor<1x4x8xf32>) {
  ^bb0(%in: f32, %kk: f32, %out: f32):
    %m = arith.mulf %in, %kk : f32
    %t = math.exp %m : f32
    %r = arith.mulf %t, %half : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8xf32>
  %c = tensor.collapse_shape %g [[0, 1], [2]] : tensor<1x4x8xf32> into tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

// -----
// A transpose, a per-row bias add and the inverse transpose: the add runs on the original
// layout with its bias map renamed (rows of the transposed tensor are columns of %x).
// CHECK: #map1 = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @transpose_sandwich
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {indexing_maps = [#map, #map1, #map]{{.*}} ins(%arg0, %arg1 : tensor<2x3xf32>, tensor<3xf32>)
// CHECK: return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @transpose_sandwich(%x: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %e0 = tensor.empty() : tensor<3x2xf32>
  %t0 = linalg.transpose ins(%x : tensor<2x3xf32>) outs(%e0 : tensor<3x2xf32>) permutation = [1, 0]
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%t0, %b : tensor<3x2xf32>, tensor<3xf32>) outs(%e0 : tensor<3x2xf32>) {
  ^bb0(%in: f32, %bb: f32, %out: f32):
    %s = arith.addf %in, %bb : f32
    linalg.yield %s : f32
  } -> tensor<3x2xf32>
  %e1 = tensor.empty() : tensor<2x3xf32>
  %t1 = linalg.transpose ins(%y : tensor<3x2xf32>) outs(%e1 : tensor<2x3xf32>) permutation = [1, 0]
  return %t1 : tensor<2x3xf32>
}

// -----
// Must not fire: the elementwise op reads a tensor along the expanded dimensions (it would
// need reshaping too).
// CHECK-LABEL: func.func @sandwich_other_operand
// CHECK: tensor.expand_shape
// CHECK: tensor.collapse_shape
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @sandwich_other_operand(%x: tensor<4x8xf32>, %y: tensor<1x4x8xf32>) -> tensor<4x8xf32> {
  %a = tensor.expand_shape %x [[0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xf32> into tensor<1x4x8xf32>
  %e = tensor.empty() : tensor<1x4x8xf32>
  %g = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a, %y : tensor<1x4x8xf32>, tensor<1x4x8xf32>) outs(%e : tensor<1x4x8xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %s = arith.addf %in, %in2 : f32
    linalg.yield %s : f32
  } -> tensor<1x4x8xf32>
  %c = tensor.collapse_shape %g [[0, 1], [2]] : tensor<1x4x8xf32> into tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

// -----
// Must not fire: the collapse is not the expand's inverse (different grouping, other shape).
// CHECK-LABEL: func.func @not_inverse
// CHECK: tensor.expand_shape
// CHECK: tensor.collapse_shape
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @not_inverse(%x: tensor<4x8xf32>) -> tensor<16x2xf32> {
  %a = tensor.expand_shape %x [[0], [1, 2]] output_shape [4, 4, 2] : tensor<4x8xf32> into tensor<4x4x2xf32>
  %e = tensor.empty() : tensor<4x4x2xf32>
  %g = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a : tensor<4x4x2xf32>) outs(%e : tensor<4x4x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = math.exp %in : f32
    linalg.yield %s : f32
  } -> tensor<4x4x2xf32>
  %c = tensor.collapse_shape %g [[0, 1], [2]] : tensor<4x4x2xf32> into tensor<16x2xf32>
  return %c : tensor<16x2xf32>
}

// -----
// Must not fire: the reshaped value has another use.
// CHECK-LABEL: func.func @sandwich_shared
// CHECK: tensor.expand_shape
// CHECK: tensor.collapse_shape
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @sandwich_shared(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<1x4x8xf32>) {
  %a = tensor.expand_shape %x [[0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xf32> into tensor<1x4x8xf32>
  %e = tensor.empty() : tensor<1x4x8xf32>
  %g = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a : tensor<1x4x8xf32>) outs(%e : tensor<1x4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = math.exp %in : f32
    linalg.yield %s : f32
  } -> tensor<1x4x8xf32>
  %c = tensor.collapse_shape %g [[0, 1], [2]] : tensor<1x4x8xf32> into tensor<4x8xf32>
  return %c, %a : tensor<4x8xf32>, tensor<1x4x8xf32>
}

// -----
// A transpose written as a generic, then a named transpose back: cancelled.
// CHECK-LABEL: func.func @generic_transpose_cancel
// CHECK-NOT: linalg.generic
// CHECK-NOT: linalg.transpose
// CHECK: return %arg0
func.func @generic_transpose_cancel(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %e0 = tensor.empty() : tensor<4x2x3xf32>
  %t0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d2, d0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<2x3x4xf32>) outs(%e0 : tensor<4x2x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x2x3xf32>
  %e1 = tensor.empty() : tensor<2x3x4xf32>
  %t1 = linalg.transpose ins(%t0 : tensor<4x2x3xf32>) outs(%e1 : tensor<2x3x4xf32>) permutation = [1, 2, 0]
  return %t1 : tensor<2x3x4xf32>
}

// -----
// Two generic transposes that do not cancel: one named transpose by their composition.
// CHECK-LABEL: func.func @generic_transpose_compose
// CHECK-NOT: linalg.generic
// CHECK: linalg.transpose ins(%arg0 : tensor<2x3x4xf32>) outs(%{{.*}} : tensor<3x4x2xf32>) permutation = [1, 2, 0]
func.func @generic_transpose_compose(%x: tensor<2x3x4xf32>) -> tensor<3x4x2xf32> {
  %e0 = tensor.empty() : tensor<3x2x4xf32>
  %t0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<2x3x4xf32>) outs(%e0 : tensor<3x2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<3x2x4xf32>
  %e1 = tensor.empty() : tensor<3x4x2xf32>
  %t1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t0 : tensor<3x2x4xf32>) outs(%e1 : tensor<3x4x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<3x4x2xf32>
  return %t1 : tensor<3x4x2xf32>
}

// -----
// Not ours: two named transposes are composed by upstream canonicalize (left alone here).
// CHECK-LABEL: func.func @named_pair_left_to_canonicalize
// CHECK-COUNT-2: linalg.transpose
// CANON-LABEL: func.func @named_pair_left_to_canonicalize
// CANON-NOT: linalg.transpose
// CANON: return %arg0
func.func @named_pair_left_to_canonicalize(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e0 = tensor.empty() : tensor<3x2xf32>
  %t0 = linalg.transpose ins(%x : tensor<2x3xf32>) outs(%e0 : tensor<3x2xf32>) permutation = [1, 0]
  %e1 = tensor.empty() : tensor<2x3xf32>
  %t1 = linalg.transpose ins(%t0 : tensor<3x2xf32>) outs(%e1 : tensor<2x3xf32>) permutation = [1, 0]
  return %t1 : tensor<2x3xf32>
}

// -----
// A transpose that only moves a size-1 dimension is a reshape; with the reshapes around it
// canonicalize then removes everything.
// CHECK-LABEL: func.func @unit_transpose
// CHECK-NOT: linalg.transpose
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : tensor<1x4x8xf32> into tensor<4x8xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [4, 1, 8] : tensor<4x8xf32> into tensor<4x1x8xf32>
// CANON-LABEL: func.func @unit_transpose
// CANON-NEXT: return %arg0
func.func @unit_transpose(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = tensor.expand_shape %x [[0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xf32> into tensor<1x4x8xf32>
  %e = tensor.empty() : tensor<4x1x8xf32>
  %t = linalg.transpose ins(%a : tensor<1x4x8xf32>) outs(%e : tensor<4x1x8xf32>) permutation = [1, 0, 2]
  %c = tensor.collapse_shape %t [[0, 1], [2]] : tensor<4x1x8xf32> into tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

// -----
// Must not fire: this transpose moves data (two non-unit dimensions swap).
// CHECK-LABEL: func.func @real_transpose
// CHECK: linalg.transpose
// CHECK-NOT: tensor.collapse_shape
func.func @real_transpose(%x: tensor<1x4x8xf32>) -> tensor<8x1x4xf32> {
  %e = tensor.empty() : tensor<8x1x4xf32>
  %t = linalg.transpose ins(%x : tensor<1x4x8xf32>) outs(%e : tensor<8x1x4xf32>) permutation = [2, 0, 1]
  return %t : tensor<8x1x4xf32>
}

// -----
// GPT-2's tanh GELU: the expanded value feeds several generics (a region, not a chain);
// the whole region moves to the 2-D layout.
// CHECK-LABEL: func.func @reshape_region
// CHECK-NOT: tensor.expand_shape
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<4x8xf32>)
// CHECK: math.tanh
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%arg0, %[[P]] : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK-NOT: tensor.collapse_shape
// CHECK: return %[[R]] : tensor<4x8xf32>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @reshape_region(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = tensor.expand_shape %x [[0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xf32> into tensor<1x4x8xf32>
  %e = tensor.empty() : tensor<1x4x8xf32>
  %t = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a : tensor<1x4x8xf32>) outs(%e : tensor<1x4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = math.tanh %in : f32
    linalg.yield %s : f32
  } -> tensor<1x4x8xf32>
  %g = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a, %t : tensor<1x4x8xf32>, tensor<1x4x8xf32>) outs(%e : tensor<1x4x8xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %s = arith.mulf %in, %in2 : f32
    linalg.yield %s : f32
  } -> tensor<1x4x8xf32>
  %c = tensor.collapse_shape %g [[0, 1], [2]] : tensor<1x4x8xf32> into tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

// -----
// Must not fire: a value inside the region is also used outside it.
// CHECK-LABEL: func.func @region_leaks
// CHECK: tensor.expand_shape
// CHECK: tensor.collapse_shape
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @region_leaks(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<1x4x8xf32>) {
  %a = tensor.expand_shape %x [[0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xf32> into tensor<1x4x8xf32>
  %e = tensor.empty() : tensor<1x4x8xf32>
  %t = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a : tensor<1x4x8xf32>) outs(%e : tensor<1x4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = math.tanh %in : f32
    linalg.yield %s : f32
  } -> tensor<1x4x8xf32>
  %g = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a, %t : tensor<1x4x8xf32>, tensor<1x4x8xf32>) outs(%e : tensor<1x4x8xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %s = arith.mulf %in, %in2 : f32
    linalg.yield %s : f32
  } -> tensor<1x4x8xf32>
  %c = tensor.collapse_shape %g [[0, 1], [2]] : tensor<1x4x8xf32> into tensor<4x8xf32>
  return %c, %t : tensor<4x8xf32>, tensor<1x4x8xf32>
}

// -----
// A squeeze-excite block after NHWC convs: transpose to NCHW, SiLU, back to NHWC for the
// project conv; the SiLU's output is also pooled over H and W. The SiLU runs NHWC and the
// pool reads the NHWC value through a permuted map (channel = source dim 3 = loop d1). The
// pool comes before the closing transpose in the IR: the moved ops are placed where the
// originals were, so it still sees them defined.
// CHECK: #[[NHWC:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
// CHECK-LABEL: func.func @transpose_sandwich_pooled
// CHECK-NOT: linalg.transpose
// CHECK: %[[S:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<1x4x4x8xf32>) outs(%{{.*}} : tensor<1x4x4x8xf32>)
// CHECK: math.exp
// CHECK: %[[M:.*]] = linalg.generic {{.*}} ins(%arg0, %[[S]] : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>)
// CHECK: %[[P:.*]] = linalg.generic {indexing_maps = [#[[NHWC]], #{{.*}}], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%[[M]] : tensor<1x4x4x8xf32>) outs(%{{.*}} : tensor<1x8xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: return %[[M]], %[[P]]
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#pool = affine_map<(d0, d1, d2, d3) -> (d0, d1)>
func.func @transpose_sandwich_pooled(%x: tensor<1x4x4x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x4x4xf32>
  %t = linalg.transpose ins(%x : tensor<1x4x4x8xf32>) outs(%e : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %s = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%t : tensor<1x8x4x4xf32>) outs(%e : tensor<1x8x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    %x1 = math.exp %n : f32
    linalg.yield %x1 : f32
  } -> tensor<1x8x4x4xf32>
  %m = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%t, %s : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) outs(%e : tensor<1x8x4x4xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %p = arith.mulf %in, %in2 : f32
    linalg.yield %p : f32
  } -> tensor<1x8x4x4xf32>
  %pe = tensor.empty() : tensor<1x8xf32>
  %pz = linalg.fill ins(%zero : f32) outs(%pe : tensor<1x8xf32>) -> tensor<1x8xf32>
  %pool = linalg.generic {indexing_maps = [#id4, #pool], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%m : tensor<1x8x4x4xf32>) outs(%pz : tensor<1x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<1x8xf32>
  %e2 = tensor.empty() : tensor<1x4x4x8xf32>
  %back = linalg.transpose ins(%m : tensor<1x8x4x4xf32>) outs(%e2 : tensor<1x4x4x8xf32>) permutation = [0, 2, 3, 1]
  return %back, %pool : tensor<1x4x4x8xf32>, tensor<1x8xf32>
}

// -----
// Must not fire: the value also escapes to an elementwise op (it would read the source
// layout through a permuted map and write the other layout: a transpose of its own).
// CHECK-LABEL: func.func @transpose_sandwich_elementwise_escape
// CHECK: linalg.transpose {{.*}} permutation = [0, 3, 1, 2]
// CHECK: linalg.transpose {{.*}} permutation = [0, 2, 3, 1]
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @transpose_sandwich_elementwise_escape(%x: tensor<1x4x4x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x8x4x4xf32>) {
  %e = tensor.empty() : tensor<1x8x4x4xf32>
  %t = linalg.transpose ins(%x : tensor<1x4x4x8xf32>) outs(%e : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %s = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%t : tensor<1x8x4x4xf32>) outs(%e : tensor<1x8x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %x1 = math.exp %in : f32
    linalg.yield %x1 : f32
  } -> tensor<1x8x4x4xf32>
  %u = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x8x4x4xf32>) outs(%e : tensor<1x8x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %x1 = math.sqrt %in : f32
    linalg.yield %x1 : f32
  } -> tensor<1x8x4x4xf32>
  %e2 = tensor.empty() : tensor<1x4x4x8xf32>
  %back = linalg.transpose ins(%s : tensor<1x8x4x4xf32>) outs(%e2 : tensor<1x4x4x8xf32>) permutation = [0, 2, 3, 1]
  return %back, %u : tensor<1x4x4x8xf32>, tensor<1x8x4x4xf32>
}

// -----
// Must not fire: a reshape sandwich whose value is pooled outside (a reshape cannot be
// folded into the pool's map).
// CHECK-LABEL: func.func @reshape_sandwich_pooled
// CHECK: tensor.expand_shape
// CHECK: tensor.collapse_shape
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#rows = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @reshape_sandwich_pooled(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<1x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = tensor.expand_shape %x [[0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xf32> into tensor<1x4x8xf32>
  %e = tensor.empty() : tensor<1x4x8xf32>
  %t = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a : tensor<1x4x8xf32>) outs(%e : tensor<1x4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = math.tanh %in : f32
    linalg.yield %s : f32
  } -> tensor<1x4x8xf32>
  %pe = tensor.empty() : tensor<1x4xf32>
  %pz = linalg.fill ins(%zero : f32) outs(%pe : tensor<1x4xf32>) -> tensor<1x4xf32>
  %pool = linalg.generic {indexing_maps = [#id3, #rows], iterator_types = ["parallel", "parallel", "reduction"]} ins(%t : tensor<1x4x8xf32>) outs(%pz : tensor<1x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<1x4xf32>
  %c = tensor.collapse_shape %t [[0, 1], [2]] : tensor<1x4x8xf32> into tensor<4x8xf32>
  return %c, %pool : tensor<4x8xf32>, tensor<1x4xf32>
}

// -----
// The ONNX form of the squeeze-excite block: the pool is a named NHWC pool behind its own
// transpose back, so the SiLU has two closing transposes (the pool's comes first in the IR).
// Both go; the pool and the project side read the NHWC SiLU output.
// CHECK-LABEL: func.func @transpose_sandwich_two_closings
// CHECK-NOT: linalg.transpose
// CHECK: %[[M:.*]] = linalg.generic {{.*}} ins(%arg0, %{{.*}} : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>)
// CHECK: linalg.pooling_nhwc_sum {{.*}} ins(%[[M]], %{{.*}} : tensor<1x4x4x8xf32>, tensor<4x4xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: return %[[M]]
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @transpose_sandwich_two_closings(%x: tensor<1x4x4x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x1x1x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x4x4xf32>
  %t = linalg.transpose ins(%x : tensor<1x4x4x8xf32>) outs(%e : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %s = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%t : tensor<1x8x4x4xf32>) outs(%e : tensor<1x8x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %x1 = math.exp %in : f32
    linalg.yield %x1 : f32
  } -> tensor<1x8x4x4xf32>
  %m = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%t, %s : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) outs(%e : tensor<1x8x4x4xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %p = arith.mulf %in, %in2 : f32
    linalg.yield %p : f32
  } -> tensor<1x8x4x4xf32>
  %e1 = tensor.empty() : tensor<1x4x4x8xf32>
  %tp = linalg.transpose ins(%m : tensor<1x8x4x4xf32>) outs(%e1 : tensor<1x4x4x8xf32>) permutation = [0, 2, 3, 1]
  %win = tensor.empty() : tensor<4x4xf32>
  %pe = tensor.empty() : tensor<1x1x1x8xf32>
  %pz = linalg.fill ins(%zero : f32) outs(%pe : tensor<1x1x1x8xf32>) -> tensor<1x1x1x8xf32>
  %pool = linalg.pooling_nhwc_sum {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%tp, %win : tensor<1x4x4x8xf32>, tensor<4x4xf32>) outs(%pz : tensor<1x1x1x8xf32>) -> tensor<1x1x1x8xf32>
  %e2 = tensor.empty() : tensor<1x4x4x8xf32>
  %back = linalg.transpose ins(%m : tensor<1x8x4x4xf32>) outs(%e2 : tensor<1x4x4x8xf32>) permutation = [0, 2, 3, 1]
  return %back, %pool : tensor<1x4x4x8xf32>, tensor<1x1x1x8xf32>
}
