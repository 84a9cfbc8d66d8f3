// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{tag-groups=true print=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=DECIDE
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{tag-groups=true}' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true tag-groups=true}' | FileCheck %s --check-prefix=REGION

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#col = affine_map<(d0, d1) -> (d0)>
#id1 = affine_map<(d0) -> (d0)>

// LayerNorm: two row reductions over the same rows and the elementwise work between them
// become ONE group (IREE alone makes two dispatches of it).
// DECIDE: group 0: seed linalg.generic #0: fuse: seed: reduction (Many-to-Many)
// DECIDE: group 0: successor linalg.generic #1: fuse: legal
// DECIDE: group 0: successor linalg.generic #2: fuse: legal
// DECIDE: group 0: successor linalg.generic #3: fuse: legal
// DECIDE: group 0: successor linalg.generic #4: fuse: legal
// DECIDE: group 0: successor linalg.generic #5: fuse: legal
// CHECK-LABEL: func.func @layernorm
// CHECK-COUNT-6: xgen.fusion_group = 0
// REGION-LABEL: func.func @layernorm
// REGION: flow.dispatch.region -> (tensor<4x8xf32>) {
// REGION-COUNT-2: "reduction"
// REGION: flow.return %{{.*}} : tensor<4x8xf32>
// REGION-NEXT: }
// REGION-NOT: linalg.generic
// REGION: return
func.func @layernorm(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 8.0 : f32
  %e4 = tensor.empty() : tensor<4xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %mean = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%sum : tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.divf %a, %n : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %centered = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %mean : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  %sq = linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["parallel", "reduction"]}
      ins(%centered : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.mulf %a, %a : f32
    %s = arith.addf %p, %o : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %rstd = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%sq : tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.divf %a, %n : f32
    %r = math.rsqrt %d : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %out = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%centered, %rstd : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %r: f32, %o: f32):
    %m = arith.mulf %a, %r : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %out : tensor<4x8xf32>
}

// -----
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#col = affine_map<(d0, d1) -> (d0)>
#id1 = affine_map<(d0) -> (d0)>
// A matmul takes its bias add; the next matmul is refused (two contraction roots) and seeds
// its own group.
// DECIDE: group 0: seed linalg.matmul #0: fuse: seed: contraction (Many-to-Many)
// DECIDE: group 0: successor linalg.generic #1: fuse: legal
// DECIDE: group 0: successor linalg.matmul #2: refuse: two contraction roots in one dispatch
// CHECK-LABEL: func.func @two_matmuls
// CHECK: linalg.matmul {{.*}}xgen.fusion_group = 0
// CHECK: linalg.generic {{.*}}xgen.fusion_group = 0
// CHECK: linalg.matmul {{.*}}xgen.fusion_group = 1
// REGION-LABEL: func.func @two_matmuls
// REGION: %[[R:.+]] = flow.dispatch.region
// REGION: linalg.matmul
// REGION: linalg.generic
// REGION: flow.return
// REGION: linalg.matmul {{.*}}ins(%[[R]],
func.func @two_matmuls(%a: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm = linalg.matmul ins(%a, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %biased = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %mm2 = linalg.matmul ins(%biased, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %mm2 : tensor<4x8xf32>
}

// -----
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#col = affine_map<(d0, d1) -> (d0)>
#id1 = affine_map<(d0) -> (d0)>
// Must not fuse: a producer whose result is also returned (fusing would recompute it), and a
// gather reading a tensor the group computes (the whole table must exist first).
// DECIDE: group 0: seed linalg.generic #1: fuse: seed: reduction (Many-to-Many)
// DECIDE: group 0: predecessor linalg.generic #0: refuse: its result is also returned/exported
// DECIDE: group 1: seed linalg.generic #0: fuse: seed: left over (One-to-One)
// DECIDE: group 1: successor linalg.generic #2: refuse: it gathers from a tensor the group computes
// CHECK-LABEL: func.func @must_not_fuse
// REGION-LABEL: func.func @must_not_fuse
// REGION-NOT: flow.dispatch.region
// REGION: return
func.func @must_not_fuse(%x: tensor<4x8xf32>, %idx: tensor<4xindex>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %e4 = tensor.empty() : tensor<4xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %ex = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["parallel", "reduction"]}
      ins(%ex : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %g = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%idx : tensor<4xindex>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%i: index, %o: f32):
    %v = tensor.extract %ex[%i, %c0] : tensor<4x8xf32>
    linalg.yield %v : f32
  } -> tensor<4xf32>
  return %ex, %sum, %g : tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// A reshape that splits rows (MiniLM at batch 8: the residual add on 1024x384 rows, LayerNorm
// on 8x128x384) stays outside the reduction's group: IREE cannot tile the add through it and
// would keep the whole 1024x384 result on the stack (1.5 MB, over its 32 KB limit). The same
// chain with only a unit dim added (batch 1) fuses.
// DECIDE: group 0: seed linalg.generic #1: fuse: seed: reduction (Many-to-Many)
// DECIDE: group 0: predecessor linalg.generic #0: refuse: a reshape that splits or merges dims
// DECIDE: group 1: seed linalg.generic #0: fuse: seed: left over (One-to-One)
// CHECK-LABEL: func.func @split_rows
// CHECK: linalg.generic {{.*}}xgen.fusion_group = 1
// CHECK: linalg.generic {{.*}}xgen.fusion_group = 0
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#rows3 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @split_rows(%x: tensor<8x4xf32>, %y: tensor<8x4xf32>) -> tensor<2x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %add = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %r = tensor.expand_shape %add [[0, 1], [2]] output_shape [2, 4, 4] : tensor<8x4xf32> into tensor<2x4x4xf32>
  %e2 = tensor.empty() : tensor<2x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %sum = linalg.generic {indexing_maps = [#id3, #rows3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%r : tensor<2x4x4xf32>) outs(%init : tensor<2x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<2x4xf32>
  return %sum : tensor<2x4xf32>
}

// -----

// DECIDE: group 0: seed linalg.generic #1: fuse: seed: reduction (Many-to-Many)
// DECIDE: group 0: predecessor linalg.generic #0: fuse: legal
// CHECK-LABEL: func.func @unit_dim
// CHECK-COUNT-2: xgen.fusion_group = 0
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#rows3 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @unit_dim(%x: tensor<4x4xf32>, %y: tensor<4x4xf32>) -> tensor<1x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %add = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %r = tensor.expand_shape %add [[0, 1], [2]] output_shape [1, 4, 4] : tensor<4x4xf32> into tensor<1x4x4xf32>
  %e2 = tensor.empty() : tensor<1x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x4xf32>) -> tensor<1x4xf32>
  %sum = linalg.generic {indexing_maps = [#id3, #rows3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%r : tensor<1x4x4xf32>) outs(%init : tensor<1x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<1x4xf32>
  return %sum : tensor<1x4xf32>
}
