// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{tag-groups=true print=true},xgen-depthwise-pads{print=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=DECIDE
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{tag-groups=true},xgen-depthwise-pads' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{tag-groups=true}' | FileCheck %s --check-prefix=OFF

#dwin = affine_map<(d0, d1, d2, d3, d4) -> (d0 + d3, d1 + d4, d2)>
#dwin2 = affine_map<(d0, d1, d2, d3, d4) -> (d0 * 2 + d3, d1 * 2 + d4, d2)>
#dww = affine_map<(d0, d1, d2, d3, d4) -> (d3, d4, d2)>
#dwout = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>

// A zero pad read only by a 3x3 depthwise conv (stride 1 and 2) stays a pad: IREE computes
// it inside the conv's dispatch (its fuse-padding-into-consumer flag), not as a whole-buffer
// fill before the producer writes the interior.
// DECIDE: pad -> tensor<10x10x8xf32> read by depthwise conv 3x3: in the reader's dispatch
// DECIDE: pad -> tensor<9x9x8xf32> read by depthwise conv 3x3: in the reader's dispatch
// CHECK-LABEL: func.func @depthwise_3x3
// CHECK-COUNT-2: tensor.pad
// CHECK-NOT: tensor.insert_slice
// OFF-LABEL: func.func @depthwise_3x3
// OFF-COUNT-2: tensor.pad
func.func @depthwise_3x3(%x: tensor<8x8x8xf32>, %w: tensor<3x3x8xf32>, %x2: tensor<7x7x8xf32>) -> (tensor<8x8x8xf32>, tensor<4x4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[1, 1, 0] high[1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<8x8x8xf32> to tensor<10x10x8xf32>
  %e = tensor.empty() : tensor<8x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  %c = linalg.generic {indexing_maps = [#dwin, #dww, #dwout], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%p, %w : tensor<10x10x8xf32>, tensor<3x3x8xf32>) outs(%f : tensor<8x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x8x8xf32>
  %p2 = tensor.pad %x2 low[1, 1, 0] high[1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<7x7x8xf32> to tensor<9x9x8xf32>
  %e2 = tensor.empty() : tensor<4x4x8xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x4x8xf32>) -> tensor<4x4x8xf32>
  %c2 = linalg.generic {indexing_maps = [#dwin2, #dww, #dwout], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%p2, %w : tensor<9x9x8xf32>, tensor<3x3x8xf32>) outs(%f2 : tensor<4x4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x4x8xf32>
  return %c, %c2 : tensor<8x8x8xf32>, tensor<4x4x8xf32>
}

// -----

#dwin = affine_map<(d0, d1, d2, d3, d4) -> (d0 + d3, d1 + d4, d2)>
#dww = affine_map<(d0, d1, d2, d3, d4) -> (d3, d4, d2)>
#dwout = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>
#in = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0 + d3, d1 + d4, d5)>
#w = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d4, d5, d2)>
#out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2)>

// Must not stay a pad: read by a dense 3x3 conv (its tiles re-read the padded windows), by a
// 5x5 depthwise conv, or by two readers. Each becomes IREE's own form, fill + insert_slice,
// which the producer writes in place. A pad with a non-constant value is left to IREE.
// DECIDE: pad -> tensor<6x6x4xf32> read by linalg.generic: written in place (fill): not read by a depthwise conv or a pooling op alone
// DECIDE: pad -> tensor<8x8x4xf32> read by depthwise conv 5x5: written in place (fill): wider windows
// DECIDE: pad -> tensor<6x6x4xf32> read by 2 readers: written in place (fill)
// DECIDE: pad -> tensor<6x6x4xf32> read by linalg.generic: written in place (fill): not a static constant pad
// CHECK-LABEL: func.func @not_depthwise_3x3
// CHECK: %[[F1:.+]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<6x6x4xf32>)
// CHECK: tensor.insert_slice %{{.*}} into %[[F1]][1, 1, 0] [4, 4, 4] [1, 1, 1] : tensor<4x4x4xf32> into tensor<6x6x4xf32>
// CHECK: %[[F2:.+]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<8x8x4xf32>)
// CHECK: tensor.insert_slice %{{.*}} into %[[F2]][2, 2, 0]
// CHECK: tensor.insert_slice
// CHECK: tensor.pad
// CHECK-NOT: tensor.pad
// CHECK: return
// OFF-LABEL: func.func @not_depthwise_3x3
// OFF-COUNT-4: tensor.pad
// OFF-NOT: tensor.insert_slice
func.func @not_depthwise_3x3(%x: tensor<4x4x4xf32>, %w: tensor<3x3x4x4xf32>, %w5: tensor<5x5x4xf32>, %v: f32) -> (tensor<4x4x4xf32>, tensor<4x4x4xf32>, tensor<6x6x4xf32>, tensor<4x4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %p = tensor.pad %x low[1, 1, 0] high[1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<4x4x4xf32> to tensor<6x6x4xf32>
  %c = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%p, %w : tensor<6x6x4xf32>, tensor<3x3x4x4xf32>) outs(%f : tensor<4x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x4x4xf32>
  %p5 = tensor.pad %x low[2, 2, 0] high[2, 2, 0] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<4x4x4xf32> to tensor<8x8x4xf32>
  %c5 = linalg.generic {indexing_maps = [#dwin, #dww, #dwout], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%p5, %w5 : tensor<8x8x4xf32>, tensor<5x5x4xf32>) outs(%f : tensor<4x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x4x4xf32>
  %p2 = tensor.pad %x low[1, 1, 0] high[1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<4x4x4xf32> to tensor<6x6x4xf32>
  %pv = tensor.pad %x low[1, 1, 0] high[1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %v : f32
  } : tensor<4x4x4xf32> to tensor<6x6x4xf32>
  %cv = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%pv, %w : tensor<6x6x4xf32>, tensor<3x3x4x4xf32>) outs(%f : tensor<4x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x4x4xf32>
  %r = arith.addf %p2, %p2 : tensor<6x6x4xf32>
  return %c, %c5, %r, %cv : tensor<4x4x4xf32>, tensor<4x4x4xf32>, tensor<6x6x4xf32>, tensor<4x4x4xf32>
}

// -----

#dwin = affine_map<(d0, d1, d2, d3, d4) -> (d0 + d3, d1 + d4, d2)>
#dww = affine_map<(d0, d1, d2, d3, d4) -> (d3, d4, d2)>
#dwout = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// Must not stay a pad either: the 3x3 depthwise conv reads the epilogue of an op carrying
// xgen_mlir's tiles (matmul_tiling sets compilation_info), which IREE keeps only while that
// result is written into the padded buffer.
// DECIDE: pad -> tensor<6x6x4xf32> read by depthwise conv 3x3: written in place (fill): its producer has xgen_mlir's tiles
// CHECK-LABEL: func.func @tiled_producer
// CHECK: linalg.fill
// CHECK: tensor.insert_slice
// CHECK-NOT: tensor.pad
func.func @tiled_producer(%x: tensor<4x4x4xf32>, %w: tensor<3x3x4xf32>) -> tensor<4x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4x4xf32>
  %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<4x4x4xf32>) outs(%e : tensor<4x4x4xf32>) attrs = {compilation_info = "tiles"} {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<4x4x4xf32>
  %act = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%t : tensor<4x4x4xf32>) outs(%e : tensor<4x4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x4x4xf32>
  %p = tensor.pad %act low[1, 1, 0] high[1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<4x4x4xf32> to tensor<6x6x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %c = linalg.generic {indexing_maps = [#dwin, #dww, #dwout], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%p, %w : tensor<6x6x4xf32>, tensor<3x3x4xf32>) outs(%f : tensor<4x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x4x4xf32>
  return %c : tensor<4x4x4xf32>
}

// -----

#pin = affine_map<(d0, d1, d2, d3, d4) -> (d0 * 2 + d3, d1 * 2 + d4, d2)>
#pwin = affine_map<(d0, d1, d2, d3, d4) -> (d3, d4)>
#pout = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>

// A 3x3 max pool's -inf pad (ResNet's stem pool) stays a pad like a depthwise conv's: its
// producer is often a library call that cannot write into a filled buffer, so the fill
// form cost a fill and a copy of the whole tensor (ResNet-18 in bf16: 0.12 ms).
// DECIDE: pad -> tensor<9x9x8xf32> read by pooling 3x3: in the reader's dispatch
// CHECK-LABEL: func.func @max_pool_3x3
// CHECK: tensor.pad
// CHECK-NOT: tensor.insert_slice
func.func @max_pool_3x3(%x: tensor<7x7x8xf32>) -> tensor<4x4x8xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %p = tensor.pad %x low[1, 1, 0] high[1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %ninf : f32
  } : tensor<7x7x8xf32> to tensor<9x9x8xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %e = tensor.empty() : tensor<4x4x8xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<4x4x8xf32>) -> tensor<4x4x8xf32>
  %c = linalg.generic {indexing_maps = [#pin, #pwin, #pout], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%p, %win : tensor<9x9x8xf32>, tensor<3x3xf32>) outs(%f : tensor<4x4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.maximumf %o, %a : f32
    linalg.yield %m : f32
  } -> tensor<4x4x8xf32>
  return %c : tensor<4x4x8xf32>
}
