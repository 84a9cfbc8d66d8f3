// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{tag-groups=true print=true},xgen-share-pads{print=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=DECIDE
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{tag-groups=true},xgen-share-pads' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true tag-groups=true},xgen-share-pads' | FileCheck %s --check-prefix=REGION

#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#ch = affine_map<(d0, d1, d2) -> (d2)>
#in = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0 + d3, d1 + d4, d5)>
#w = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d4, d5, d2)>
#out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2)>

// A residual: %r is padded for the next 3x3 conv AND read plain by the add after it. The add
// now reads the padded buffer's interior (offset = low), through IREE's compute barrier (which
// keeps IREE's canonicalizer from folding the slice back); the pad moves up to its producer.
// DECIDE: pad of linalg.generic -> tensor<6x6x4xf32>: share: 1 other reader(s) read the padded buffer's interior
// CHECK-LABEL: func.func @residual
// CHECK: %[[R:.+]] = linalg.generic
// CHECK: } -> tensor<4x4x4xf32>
// CHECK-NEXT: %[[P:.+]] = tensor.pad %[[R]] low[1, 1, 0] high[1, 1, 0]
// CHECK: %[[B:.+]] = iree_tensor_ext.compute_barrier.start %[[P]] : tensor<6x6x4xf32> -> tensor<6x6x4xf32>
// CHECK: linalg.generic {{.*}} ins(%[[P]], %{{.*}} : tensor<6x6x4xf32>, tensor<3x3x4x4xf32>)
// CHECK: %[[S:.+]] = tensor.extract_slice %[[B]][1, 1, 0] [4, 4, 4] [1, 1, 1] : tensor<6x6x4xf32> to tensor<4x4x4xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[S]] : tensor<4x4x4xf32>, tensor<4x4x4xf32>)
// CHECK-NOT: ins(%{{.*}}, %[[R]] :
// A reader inside a planned region gets its slice inside that region.
// REGION-LABEL: func.func @residual
// REGION: tensor.pad
// REGION: iree_tensor_ext.compute_barrier.start
// REGION: flow.dispatch.region
// REGION: tensor.extract_slice
// REGION: flow.return
func.func @residual(%x: tensor<4x4x4xf32>, %w: tensor<3x3x4x4xf32>, %b: tensor<4xf32>) -> tensor<4x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %b : tensor<4x4x4xf32>, tensor<4xf32>) outs(%e : tensor<4x4x4xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x4x4xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %p = tensor.pad %r low[1, 1, 0] high[1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<4x4x4xf32> to tensor<6x6x4xf32>
  %conv = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%p, %w : tensor<6x6x4xf32>, tensor<3x3x4x4xf32>) outs(%fill : tensor<4x4x4xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %m = arith.mulf %a, %c : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x4x4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%conv, %r : tensor<4x4x4xf32>, tensor<4x4x4xf32>) outs(%e : tensor<4x4x4xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<4x4x4xf32>
  return %sum : tensor<4x4x4xf32>
}

// -----

#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// A downsampling block reads the value through a strided slice (a stride-2 1x1 conv): that
// slice becomes one slice of the padded buffer, its offsets shifted by low.
// DECIDE: pad of linalg.generic -> tensor<6x6x4xf32>: share: 1 other reader(s)
// CHECK-LABEL: func.func @strided_reader
// CHECK: %[[P:.+]] = tensor.pad
// CHECK: %[[B:.+]] = iree_tensor_ext.compute_barrier.start %[[P]] : tensor<6x6x4xf32> -> tensor<6x6x4xf32>
// CHECK: tensor.extract_slice %[[B]][1, 1, 0] [2, 2, 4] [2, 2, 1] : tensor<6x6x4xf32> to tensor<2x2x4xf32>
// CHECK-NOT: tensor.extract_slice
// CHECK: return
func.func @strided_reader(%x: tensor<4x4x4xf32>) -> (tensor<6x6x4xf32>, tensor<2x2x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<4x4x4xf32>) outs(%e : tensor<4x4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x4x4xf32>
  %s = tensor.extract_slice %r[0, 0, 0] [2, 2, 4] [2, 2, 1] : tensor<4x4x4xf32> to tensor<2x2x4xf32>
  %p = tensor.pad %r low[1, 1, 0] high[1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<4x4x4xf32> to tensor<6x6x4xf32>
  return %p, %s : tensor<6x6x4xf32>, tensor<2x2x4xf32>
}

// -----

#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// Must not fire: a single-use pad (IREE already writes it in place), a padded function
// argument (no producer writes it), a value also returned (the return would need a copy),
// and a value padded twice.
// DECIDE-NOT: pad of {{.*}}: share
// DECIDE: pad of a function argument -> tensor<6x6x4xf32>: keep copy: the value is not produced in this block
// DECIDE: pad of linalg.generic -> tensor<6x6x4xf32>: keep copy: a reader is func.return, not a tensor computation
// DECIDE: pad of linalg.generic -> tensor<6x6x4xf32>: keep copy: the value is padded twice
// DECIDE: pad of linalg.generic -> tensor<8x8x4xf32>: keep copy: the value is padded twice
// DECIDE-NOT: pad of
// CHECK-LABEL: func.func @keep_copies
// CHECK-NOT: compute_barrier
// CHECK-NOT: tensor.extract_slice
// CHECK: return
func.func @keep_copies(%x: tensor<4x4x4xf32>) -> (tensor<6x6x4xf32>, tensor<6x6x4xf32>, tensor<4x4x4xf32>, tensor<6x6x4xf32>, tensor<4x4x4xf32>, tensor<6x6x4xf32>, tensor<8x8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4x4xf32>
  %single = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<4x4x4xf32>) outs(%e : tensor<4x4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x4x4xf32>
  %p0 = tensor.pad %single low[1, 1, 0] high[1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<4x4x4xf32> to tensor<6x6x4xf32>
  %arg_padded = tensor.pad %x low[1, 1, 0] high[1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<4x4x4xf32> to tensor<6x6x4xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<4x4x4xf32>) outs(%e : tensor<4x4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.negf %a : f32
    linalg.yield %m : f32
  } -> tensor<4x4x4xf32>
  %p1 = tensor.pad %neg low[1, 1, 0] high[1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<4x4x4xf32> to tensor<6x6x4xf32>
  %twice = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<4x4x4xf32>) outs(%e : tensor<4x4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<4x4x4xf32>
  %p2 = tensor.pad %twice low[1, 1, 0] high[1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<4x4x4xf32> to tensor<6x6x4xf32>
  %p3 = tensor.pad %twice low[2, 2, 0] high[2, 2, 0] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<4x4x4xf32> to tensor<8x8x4xf32>
  return %p0, %arg_padded, %neg, %p1, %x, %p2, %p3 : tensor<6x6x4xf32>, tensor<6x6x4xf32>, tensor<4x4x4xf32>, tensor<6x6x4xf32>, tensor<4x4x4xf32>, tensor<6x6x4xf32>, tensor<8x8x4xf32>
}
