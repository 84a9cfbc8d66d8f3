// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{tag-groups=true print=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=DECIDE
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true delegate-contractions=true tag-groups=true}' | FileCheck %s

// Squeeze-excite on 32 channels: squeeze matvec (32 -> 8), ReLU, excite matvec (8 -> 32),
// scale of a 32x16 weight. The excite recomputes the squeeze per 8-row vector tile:
// 4 x 256 multiply-adds, far under the limit, so the chain is one group and, although it holds
// contractions, the planner forms its region itself (IREE would make two dispatches).
// DECIDE: group 0: seed linalg.generic #0: fuse: seed: contraction (Many-to-Many)
// DECIDE: group 0: successor linalg.generic #1: fuse: legal
// DECIDE: group 0: successor linalg.generic #2: fuse: legal
// DECIDE: group 0: successor linalg.generic #3: fuse: legal
// CHECK-LABEL: func.func @small_squeeze_excite
// CHECK: flow.dispatch.region -> (tensor<32x16xf32>) {
// CHECK: "reduction"
// CHECK: arith.maximumf
// CHECK: "reduction"
// CHECK: arith.mulf
// CHECK: flow.return %{{.*}} : tensor<32x16xf32>
// CHECK-NEXT: }
// CHECK-NOT: linalg.generic
// CHECK: return
#v_in = affine_map<(j, i) -> (i)>
#w = affine_map<(j, i) -> (j, i)>
#v_out = affine_map<(j, i) -> (j)>
#id2 = affine_map<(c, f) -> (c, f)>
#col = affine_map<(c, f) -> (c)>
#id1 = affine_map<(d0) -> (d0)>
func.func @small_squeeze_excite(%p: tensor<32xf32>, %w1: tensor<8x32xf32>, %w2: tensor<32x8xf32>,
                                %w: tensor<32x16xf32>) -> tensor<32x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e8 = tensor.empty() : tensor<8xf32>
  %z8 = linalg.fill ins(%zero : f32) outs(%e8 : tensor<8xf32>) -> tensor<8xf32>
  %sq = linalg.generic {indexing_maps = [#v_in, #w, #v_out], iterator_types = ["parallel", "reduction"]}
      ins(%p, %w1 : tensor<32xf32>, tensor<8x32xf32>) outs(%z8 : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %act = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%sq : tensor<8xf32>) outs(%e8 : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %e32 = tensor.empty() : tensor<32xf32>
  %z32 = linalg.fill ins(%zero : f32) outs(%e32 : tensor<32xf32>) -> tensor<32xf32>
  %ex = linalg.generic {indexing_maps = [#v_in, #w, #v_out], iterator_types = ["parallel", "reduction"]}
      ins(%act, %w2 : tensor<8xf32>, tensor<32x8xf32>) outs(%z32 : tensor<32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<32xf32>
  %e = tensor.empty() : tensor<32x16xf32>
  %scaled = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%w, %ex : tensor<32x16xf32>, tensor<32xf32>) outs(%e : tensor<32x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<32x16xf32>
  return %scaled : tensor<32x16xf32>
}

// -----
// The same on 512 channels (squeeze to 128): recomputing the 64K multiply-add squeeze for
// each of the excite's 64 vector tiles is 4M, over the limit. The excite is refused and seeds
// its own group with the scale. Both groups' only contractions are small matvecs, so the
// planner forms both regions (two dispatches, as IREE would make).
// DECIDE: group 0: seed linalg.generic #0: fuse: seed: contraction (Many-to-Many)
// DECIDE: group 0: successor linalg.generic #1: fuse: legal
// DECIDE: group 0: successor linalg.generic #2: refuse: matvec chain: recomputing the group's matvecs per vector tile costs 4194304 multiply-adds (> 131072)
// DECIDE: group 1: seed linalg.generic #2: fuse: seed: contraction (Many-to-Many)
// DECIDE: group 1: successor linalg.generic #3: fuse: legal
// CHECK-LABEL: func.func @large_squeeze_excite
// CHECK: flow.dispatch.region -> (tensor<128xf32>) {
// CHECK: "reduction"
// CHECK: arith.maximumf
// CHECK: flow.return %{{.*}} : tensor<128xf32>
// CHECK-NEXT: }
// CHECK: flow.dispatch.region -> (tensor<512x16xf32>) {
// CHECK: "reduction"
// CHECK: arith.mulf
// CHECK: flow.return %{{.*}} : tensor<512x16xf32>
// CHECK-NEXT: }
// CHECK: return
#v_in = affine_map<(j, i) -> (i)>
#w = affine_map<(j, i) -> (j, i)>
#v_out = affine_map<(j, i) -> (j)>
#id2 = affine_map<(c, f) -> (c, f)>
#col = affine_map<(c, f) -> (c)>
#id1 = affine_map<(d0) -> (d0)>
func.func @large_squeeze_excite(%p: tensor<512xf32>, %w1: tensor<128x512xf32>, %w2: tensor<512x128xf32>,
                                %w: tensor<512x16xf32>) -> tensor<512x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e8 = tensor.empty() : tensor<128xf32>
  %z8 = linalg.fill ins(%zero : f32) outs(%e8 : tensor<128xf32>) -> tensor<128xf32>
  %sq = linalg.generic {indexing_maps = [#v_in, #w, #v_out], iterator_types = ["parallel", "reduction"]}
      ins(%p, %w1 : tensor<512xf32>, tensor<128x512xf32>) outs(%z8 : tensor<128xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<128xf32>
  %act = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%sq : tensor<128xf32>) outs(%e8 : tensor<128xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  } -> tensor<128xf32>
  %e32 = tensor.empty() : tensor<512xf32>
  %z32 = linalg.fill ins(%zero : f32) outs(%e32 : tensor<512xf32>) -> tensor<512xf32>
  %ex = linalg.generic {indexing_maps = [#v_in, #w, #v_out], iterator_types = ["parallel", "reduction"]}
      ins(%act, %w2 : tensor<128xf32>, tensor<512x128xf32>) outs(%z32 : tensor<512xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<512xf32>
  %e = tensor.empty() : tensor<512x16xf32>
  %scaled = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%w, %ex : tensor<512x16xf32>, tensor<512xf32>) outs(%e : tensor<512x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<512x16xf32>
  return %scaled : tensor<512x16xf32>
}

// -----
// A classifier head (one row, 1024 -> 256: 262K multiply-adds) is not a small matvec: its
// group (matvec + bias) holds a contraction and is left to IREE.
// DECIDE: group 0: seed linalg.generic #0: fuse: seed: contraction (Many-to-Many)
// DECIDE: group 0: successor linalg.generic #1: fuse: legal
// CHECK-LABEL: func.func @classifier_head
// CHECK-NOT: flow.dispatch.region
// CHECK: return
#v_in = affine_map<(j, i) -> (i)>
#w = affine_map<(j, i) -> (j, i)>
#v_out = affine_map<(j, i) -> (j)>
#id1 = affine_map<(d0) -> (d0)>
func.func @classifier_head(%x: tensor<1024xf32>, %w1: tensor<256x1024xf32>, %b: tensor<256xf32>) -> tensor<256xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<256xf32>) -> tensor<256xf32>
  %mv = linalg.generic {indexing_maps = [#v_in, #w, #v_out], iterator_types = ["parallel", "reduction"]}
      ins(%x, %w1 : tensor<1024xf32>, tensor<256x1024xf32>) outs(%z : tensor<256xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %m = arith.mulf %a, %bb : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<256xf32>
  %biased = linalg.generic {indexing_maps = [#id1, #id1, #id1], iterator_types = ["parallel"]}
      ins(%mv, %b : tensor<256xf32>, tensor<256xf32>) outs(%e : tensor<256xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %s = arith.addf %a, %bb : f32
    linalg.yield %s : f32
  } -> tensor<256xf32>
  return %biased : tensor<256xf32>
}
