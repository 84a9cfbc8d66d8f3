// RUN: xgen-opt %s --split-input-file -p 'xgen-cancel-reshapes{sink=true verbose=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=WHY
// RUN: xgen-opt %s --split-input-file -p 'xgen-cancel-reshapes{sink=true},func.func(canonicalize)' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-cancel-reshapes' | FileCheck %s --check-prefix=OFF

// An FPN level as the GEMM kernel leaves it: the 1x1 conv's NHWC result goes back to NCHW,
// a squeeze-excite scale (a 1xCx1x1 broadcast) and a residual add run in NCHW, the coarser
// level (also an NHWC kernel result) is upsampled 2x by broadcasting and added, and the sum
// goes to the next kernel as NHWC. Sunk, every generic runs NHWC, the upsample keeps each
// repeated loop after the loop it repeats, and the transposes cancel: none is left.
// WHY: xgen-cancel-reshapes: collapse-of-transpose 1, sunk-transpose 4
// CHECK-LABEL: func.func @fpn_level
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg2 : tensor<1x4x4x8xf32>, tensor<1x8x1x1xf32>) outs(%{{.*}} : tensor<1x4x4x8xf32>)
// CHECK: linalg.generic {{.*}} ins(%arg1 : tensor<1x2x2x8xf32>) outs(%{{.*}} : tensor<1x2x2x2x2x8xf32>)
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2], [3, 4], [5]] : tensor<1x2x2x2x2x8xf32> into tensor<1x4x4x8xf32>
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %collapsed : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: return %[[SUM]] : tensor<1x4x4x8xf32>
// OFF-LABEL: func.func @fpn_level
// OFF-COUNT-3: linalg.transpose
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>
#up_in = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d4)>
#up_out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
func.func @fpn_level(%fine: tensor<1x4x4x8xf32>, %coarse: tensor<1x2x2x8xf32>, %scale: tensor<1x8x1x1xf32>) -> tensor<1x4x4x8xf32> {
  %e = tensor.empty() : tensor<1x8x4x4xf32>
  %t = linalg.transpose ins(%fine : tensor<1x4x4x8xf32>) outs(%e : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %se = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%t, %scale : tensor<1x8x4x4xf32>, tensor<1x8x1x1xf32>) outs(%e : tensor<1x8x4x4xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %m = arith.mulf %a, %s : f32
    linalg.yield %m : f32
  } -> tensor<1x8x4x4xf32>
  %res = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%t, %se : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) outs(%e : tensor<1x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<1x8x4x4xf32>
  %ec = tensor.empty() : tensor<1x8x2x2xf32>
  %tc = linalg.transpose ins(%coarse : tensor<1x2x2x8xf32>) outs(%ec : tensor<1x8x2x2xf32>) permutation = [0, 3, 1, 2]
  %eu = tensor.empty() : tensor<1x8x2x2x2x2xf32>
  %up = linalg.generic {indexing_maps = [#up_in, #up_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%tc : tensor<1x8x2x2xf32>) outs(%eu : tensor<1x8x2x2x2x2xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<1x8x2x2x2x2xf32>
  %upc = tensor.collapse_shape %up [[0], [1], [2, 3], [4, 5]] : tensor<1x8x2x2x2x2xf32> into tensor<1x8x4x4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%res, %upc : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) outs(%e : tensor<1x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<1x8x4x4xf32>
  %eb = tensor.empty() : tensor<1x4x4x8xf32>
  %back = linalg.transpose ins(%sum : tensor<1x8x4x4xf32>) outs(%eb : tensor<1x4x4x8xf32>) permutation = [0, 2, 3, 1]
  return %back : tensor<1x4x4x8xf32>
}

// -----
// Must not fire: the add's other input is a full-size NCHW tensor of its own (sunk, that
// read would become the strided one).
// WHY: xgen-cancel-reshapes: nothing
// CHECK-LABEL: func.func @other_input_in_own_layout
// CHECK: linalg.transpose
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %arg1 : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>)
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @other_input_in_own_layout(%x: tensor<1x4x4x8xf32>, %y: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %e = tensor.empty() : tensor<1x8x4x4xf32>
  %t = linalg.transpose ins(%x : tensor<1x4x4x8xf32>) outs(%e : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%t, %y : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) outs(%e : tensor<1x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x8x4x4xf32>
  %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x8x4x4xf32>) outs(%e : tensor<1x8x4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.negf %a : f32
    linalg.yield %r : f32
  } -> tensor<1x8x4x4xf32>
  return %n : tensor<1x8x4x4xf32>
}

// -----
// Must not fire: the two transposed inputs come from different layouts.
// WHY: xgen-cancel-reshapes: nothing
// CHECK-LABEL: func.func @two_layouts
// CHECK-COUNT-2: linalg.transpose
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @two_layouts(%x: tensor<4x8x2xf32>, %y: tensor<8x4x2xf32>) -> tensor<2x4x8xf32> {
  %e = tensor.empty() : tensor<2x4x8xf32>
  %tx = linalg.transpose ins(%x : tensor<4x8x2xf32>) outs(%e : tensor<2x4x8xf32>) permutation = [2, 0, 1]
  %ty = linalg.transpose ins(%y : tensor<8x4x2xf32>) outs(%e : tensor<2x4x8xf32>) permutation = [2, 1, 0]
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%tx, %ty : tensor<2x4x8xf32>, tensor<2x4x8xf32>) outs(%e : tensor<2x4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x4x8xf32>
  %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x8xf32>) outs(%e : tensor<2x4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.negf %a : f32
    linalg.yield %r : f32
  } -> tensor<2x4x8xf32>
  return %n : tensor<2x4x8xf32>
}

// -----
// Must not fire: nothing after the generic takes the transpose further (a reduction reads
// the result), so sinking would only move it.
// WHY: xgen-cancel-reshapes: nothing
// CHECK-LABEL: func.func @nothing_further
// CHECK: linalg.transpose
// CHECK: arith.maximumf
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @nothing_further(%x: tensor<8x4xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %t = linalg.transpose ins(%x : tensor<8x4xf32>) outs(%e : tensor<4x8xf32>) permutation = [1, 0]
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%t : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %a, %z : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%r : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %q = arith.addf %a, %o : f32
    linalg.yield %q : f32
  } -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----
// Must not fire: a collapse whose group would join dims of the source out of order.
// WHY: xgen-cancel-reshapes: nothing
// CHECK-LABEL: func.func @collapse_across_the_permutation
// CHECK: linalg.transpose
// CHECK: tensor.collapse_shape
func.func @collapse_across_the_permutation(%x: tensor<2x3x4xf32>) -> tensor<12x2xf32> {
  %e = tensor.empty() : tensor<4x3x2xf32>
  %t = linalg.transpose ins(%x : tensor<2x3x4xf32>) outs(%e : tensor<4x3x2xf32>) permutation = [2, 1, 0]
  %c = tensor.collapse_shape %t [[0, 1], [2]] : tensor<4x3x2xf32> into tensor<12x2xf32>
  return %c : tensor<12x2xf32>
}

// -----
// Must not fire: the generic reads its loop indices (an average pool's border divisor
// depends on them), so reordering its loops would change what it computes. torch-mlir's
// avg pool with count_include_pad=false looks like this; Inception v2 returned NaN when
// these moved.
// WHY: xgen-cancel-reshapes: nothing
// CHECK-LABEL: func.func @reads_loop_indices
// CHECK: linalg.transpose
// CHECK: linalg.index 3
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @reads_loop_indices(%x: tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32> {
  %e = tensor.empty() : tensor<1x8x4x4xf32>
  %t = linalg.transpose ins(%x : tensor<1x4x4x8xf32>) outs(%e : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%t : tensor<1x8x4x4xf32>) outs(%e : tensor<1x8x4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %w = linalg.index 3 : index
    %wi = arith.index_cast %w : index to i64
    %wf = arith.sitofp %wi : i64 to f32
    %r = arith.divf %a, %wf : f32
    linalg.yield %r : f32
  } -> tensor<1x8x4x4xf32>
  %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%d : tensor<1x8x4x4xf32>) outs(%e : tensor<1x8x4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.negf %a : f32
    linalg.yield %r : f32
  } -> tensor<1x8x4x4xf32>
  return %n : tensor<1x8x4x4xf32>
}
