// RUN: xgen-opt %s --split-input-file -p 'xgen-separate-accumulator-packs{print=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=DECIDE
// RUN: xgen-opt %s --split-input-file -p 'xgen-separate-accumulator-packs' | FileCheck %s

// xgen-separate-accumulator-packs: a LayerNorm-like region returns its f32 output and a bf16
// copy. The copy feeds a data-tiled matmul (its pack goes into the region); the f32 output
// feeds a residual add outside any region on another data-tiled matmul's result (IREE folds it
// into that matmul's accumulator and would pack it in the region too: two packs of whole rows
// on one dispatch's stack). The add reads the f32 output through a compute barrier, so IREE
// packs it in a dispatch of its own; nothing else changes.
// DECIDE: accumulator 64x384xf32 after the reduction at {{.*}}: pack in a dispatch of its own: another result is packed as an input
// CHECK-LABEL: util.func public @both_packed
// CHECK: %[[LN:.+]]:2 = flow.dispatch.region -> (tensor<64x384xf32>, tensor<64x384xbf16>)
// CHECK: linalg.matmul {iree.opt.data_tiling} ins(%[[LN]]#1, %{{.*}} : tensor<64x384xbf16>, tensor<384x384xbf16>)
// CHECK: %[[M2:.+]] = linalg.matmul {iree.opt.data_tiling}
// CHECK: %[[B:.+]] = iree_tensor_ext.compute_barrier.start %[[LN]]#0 : tensor<64x384xf32>
// CHECK: linalg.generic {{.*}} ins(%[[M2]], %[[B]] : tensor<64x384xf32>, tensor<64x384xf32>)
// CHECK-NOT: flow.dispatch.region
// CHECK: util.return
#row = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>
util.func public @both_packed(%x: tensor<64x384xf32>, %w: tensor<384x384xbf16>, %a: tensor<64x384xbf16>) -> tensor<64x384xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %o = tensor.empty() : tensor<64x384xf32>
  %ob = tensor.empty() : tensor<64x384xbf16>
  %ln:2 = flow.dispatch.region -> (tensor<64x384xf32>, tensor<64x384xbf16>) {
    %s = linalg.generic {indexing_maps = [#row, #red], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<64x384xf32>) outs(%f : tensor<64xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %t = arith.addf %in, %acc : f32
      linalg.yield %t : f32
    } -> tensor<64xf32>
    %n:2 = linalg.generic {indexing_maps = [#row, #red, #row, #row], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<64x384xf32>, tensor<64xf32>) outs(%o, %ob : tensor<64x384xf32>, tensor<64x384xbf16>) {
    ^bb0(%in: f32, %sum: f32, %out: f32, %outb: bf16):
      %d = arith.subf %in, %sum : f32
      %b = arith.truncf %d : f32 to bf16
      linalg.yield %d, %b : f32, bf16
    } -> (tensor<64x384xf32>, tensor<64x384xbf16>)
    flow.return %n#0, %n#1 : tensor<64x384xf32>, tensor<64x384xbf16>
  }
  %e2 = tensor.empty() : tensor<64x384xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<64x384xf32>) -> tensor<64x384xf32>
  %m = linalg.matmul {iree.opt.data_tiling} ins(%ln#1, %w : tensor<64x384xbf16>, tensor<384x384xbf16>) outs(%f2 : tensor<64x384xf32>) -> tensor<64x384xf32>
  %m2 = linalg.matmul {iree.opt.data_tiling} ins(%a, %w : tensor<64x384xbf16>, tensor<384x384xbf16>) outs(%f2 : tensor<64x384xf32>) -> tensor<64x384xf32>
  %r = linalg.generic {indexing_maps = [#row, #row, #row], iterator_types = ["parallel", "parallel"]} ins(%m2, %ln#0 : tensor<64x384xf32>, tensor<64x384xf32>) outs(%o : tensor<64x384xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %t = arith.addf %p, %q : f32
    linalg.yield %t : f32
  } -> tensor<64x384xf32>
  %y = arith.addf %m, %r : tensor<64x384xf32>
  util.return %y : tensor<64x384xf32>
}

// -----

// The residual add is already in a region (the planner fused it into the next LayerNorm, as
// at batch 1): IREE does not fold it into the matmul, and nothing changes (nothing printed:
// the next case's line is the very next one).
// CHECK-LABEL: util.func public @add_in_a_region
// CHECK-NOT: compute_barrier
// CHECK: util.return
#row = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>
util.func public @add_in_a_region(%x: tensor<64x384xf32>, %w: tensor<384x384xbf16>, %a: tensor<64x384xbf16>) -> tensor<64x384xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %o = tensor.empty() : tensor<64x384xf32>
  %ob = tensor.empty() : tensor<64x384xbf16>
  %ln:2 = flow.dispatch.region -> (tensor<64x384xf32>, tensor<64x384xbf16>) {
    %s = linalg.generic {indexing_maps = [#row, #red], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<64x384xf32>) outs(%f : tensor<64xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %t = arith.addf %in, %acc : f32
      linalg.yield %t : f32
    } -> tensor<64xf32>
    %n:2 = linalg.generic {indexing_maps = [#row, #red, #row, #row], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<64x384xf32>, tensor<64xf32>) outs(%o, %ob : tensor<64x384xf32>, tensor<64x384xbf16>) {
    ^bb0(%in: f32, %sum: f32, %out: f32, %outb: bf16):
      %d = arith.subf %in, %sum : f32
      %b = arith.truncf %d : f32 to bf16
      linalg.yield %d, %b : f32, bf16
    } -> (tensor<64x384xf32>, tensor<64x384xbf16>)
    flow.return %n#0, %n#1 : tensor<64x384xf32>, tensor<64x384xbf16>
  }
  %e2 = tensor.empty() : tensor<64x384xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<64x384xf32>) -> tensor<64x384xf32>
  %m = linalg.matmul {iree.opt.data_tiling} ins(%ln#1, %w : tensor<64x384xbf16>, tensor<384x384xbf16>) outs(%f2 : tensor<64x384xf32>) -> tensor<64x384xf32>
  %m2 = linalg.matmul {iree.opt.data_tiling} ins(%a, %w : tensor<64x384xbf16>, tensor<384x384xbf16>) outs(%f2 : tensor<64x384xf32>) -> tensor<64x384xf32>
  %r = flow.dispatch.region -> (tensor<64x384xf32>) {
    %g = linalg.generic {indexing_maps = [#row, #row, #row], iterator_types = ["parallel", "parallel"]} ins(%m2, %ln#0 : tensor<64x384xf32>, tensor<64x384xf32>) outs(%o : tensor<64x384xf32>) {
    ^bb0(%p: f32, %q: f32, %out: f32):
      %t = arith.addf %p, %q : f32
      linalg.yield %t : f32
    } -> tensor<64x384xf32>
    flow.return %g : tensor<64x384xf32>
  }
  %y = arith.addf %m, %r : tensor<64x384xf32>
  util.return %y : tensor<64x384xf32>
}

// -----

// The copy's matmul is not data-tiled (nothing packs the copy in the region): the
// accumulator's pack may go there alone.
// DECIDE-NEXT: accumulator 64x384xf32 after the reduction at {{.*}}: pack left to IREE: the region packs no other result
// CHECK-LABEL: util.func public @copy_not_packed
// CHECK-NOT: compute_barrier
// CHECK: util.return
#row = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>
util.func public @copy_not_packed(%x: tensor<64x384xf32>, %w: tensor<384x384xbf16>, %a: tensor<64x384xbf16>) -> tensor<64x384xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %o = tensor.empty() : tensor<64x384xf32>
  %ob = tensor.empty() : tensor<64x384xbf16>
  %ln:2 = flow.dispatch.region -> (tensor<64x384xf32>, tensor<64x384xbf16>) {
    %s = linalg.generic {indexing_maps = [#row, #red], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<64x384xf32>) outs(%f : tensor<64xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %t = arith.addf %in, %acc : f32
      linalg.yield %t : f32
    } -> tensor<64xf32>
    %n:2 = linalg.generic {indexing_maps = [#row, #red, #row, #row], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<64x384xf32>, tensor<64xf32>) outs(%o, %ob : tensor<64x384xf32>, tensor<64x384xbf16>) {
    ^bb0(%in: f32, %sum: f32, %out: f32, %outb: bf16):
      %d = arith.subf %in, %sum : f32
      %b = arith.truncf %d : f32 to bf16
      linalg.yield %d, %b : f32, bf16
    } -> (tensor<64x384xf32>, tensor<64x384xbf16>)
    flow.return %n#0, %n#1 : tensor<64x384xf32>, tensor<64x384xbf16>
  }
  %e2 = tensor.empty() : tensor<64x384xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<64x384xf32>) -> tensor<64x384xf32>
  %m = linalg.matmul ins(%ln#1, %w : tensor<64x384xbf16>, tensor<384x384xbf16>) outs(%f2 : tensor<64x384xf32>) -> tensor<64x384xf32>
  %m2 = linalg.matmul {iree.opt.data_tiling} ins(%a, %w : tensor<64x384xbf16>, tensor<384x384xbf16>) outs(%f2 : tensor<64x384xf32>) -> tensor<64x384xf32>
  %r = linalg.generic {indexing_maps = [#row, #row, #row], iterator_types = ["parallel", "parallel"]} ins(%m2, %ln#0 : tensor<64x384xf32>, tensor<64x384xf32>) outs(%o : tensor<64x384xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %t = arith.addf %p, %q : f32
    linalg.yield %t : f32
  } -> tensor<64x384xf32>
  %y = arith.addf %m, %r : tensor<64x384xf32>
  util.return %y : tensor<64x384xf32>
}

// -----

// No reduction in the region (an elementwise op with an f32 and a bf16 result): IREE tiles it
// in small blocks, the packs fit, and the pass does not look at it.
// DECIDE-NOT: accumulator
// CHECK-LABEL: util.func public @no_reduction
// CHECK-NOT: compute_barrier
// CHECK: util.return
#row = affine_map<(d0, d1) -> (d0, d1)>
util.func public @no_reduction(%x: tensor<64x384xf32>, %w: tensor<384x384xbf16>, %a: tensor<64x384xbf16>) -> tensor<64x384xf32> {
  %z = arith.constant 0.0 : f32
  %o = tensor.empty() : tensor<64x384xf32>
  %ob = tensor.empty() : tensor<64x384xbf16>
  %ln:2 = flow.dispatch.region -> (tensor<64x384xf32>, tensor<64x384xbf16>) {
    %n:2 = linalg.generic {indexing_maps = [#row, #row, #row], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<64x384xf32>) outs(%o, %ob : tensor<64x384xf32>, tensor<64x384xbf16>) {
    ^bb0(%in: f32, %out: f32, %outb: bf16):
      %d = arith.mulf %in, %in : f32
      %b = arith.truncf %d : f32 to bf16
      linalg.yield %d, %b : f32, bf16
    } -> (tensor<64x384xf32>, tensor<64x384xbf16>)
    flow.return %n#0, %n#1 : tensor<64x384xf32>, tensor<64x384xbf16>
  }
  %e2 = tensor.empty() : tensor<64x384xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<64x384xf32>) -> tensor<64x384xf32>
  %m = linalg.matmul {iree.opt.data_tiling} ins(%ln#1, %w : tensor<64x384xbf16>, tensor<384x384xbf16>) outs(%f2 : tensor<64x384xf32>) -> tensor<64x384xf32>
  %m2 = linalg.matmul {iree.opt.data_tiling} ins(%a, %w : tensor<64x384xbf16>, tensor<384x384xbf16>) outs(%f2 : tensor<64x384xf32>) -> tensor<64x384xf32>
  %r = linalg.generic {indexing_maps = [#row, #row, #row], iterator_types = ["parallel", "parallel"]} ins(%m2, %ln#0 : tensor<64x384xf32>, tensor<64x384xf32>) outs(%o : tensor<64x384xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %t = arith.addf %p, %q : f32
    linalg.yield %t : f32
  } -> tensor<64x384xf32>
  %y = arith.addf %m, %r : tensor<64x384xf32>
  util.return %y : tensor<64x384xf32>
}
