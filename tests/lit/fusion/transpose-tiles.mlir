// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true print=true},xgen-transpose-tiles{vector-bits=512 print=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=DECIDE
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true},xgen-transpose-tiles{vector-bits=512}' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true}' | FileCheck %s --check-prefix=OFF
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true},xgen-transpose-tiles{vector-bits=256}' | FileCheck %s --check-prefix=NARROW
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true},xgen-transpose-tiles{vector-bits=256 print=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=HELD

// Must not fire on a target whose vectors are not 512 bits wide (vector-bits=256): the tiles
// were chosen for 512-bit vectors, so the pass holds back and says so; no transpose gets a
// record or tiles, not even the CNN entry below.
// HELD-NOT: transpose {{[0-9]}}
// HELD: transpose tiles: none: tiles chosen for 512-bit vectors, the target has 256
// HELD-NOT: transpose {{[0-9]}}
// NARROW-NOT: compilation_info
// NARROW-LABEL: func.func @image_entry
// NARROW-NOT: compilation_info

// A CNN's entry: 3-channel CHW image -> HWC. Rewritten with its loops in the input's order
// (input map the identity), carrying 3 x 16 vectors and 8-row workgroups.
// DECIDE: transpose 3x8x32 -> 8x32x3: tiles workgroup [3, 8, 32] vector [3, 1, 16]: 3-wide innermost output: 3 x 16 vectors
// CHECK-DAG: #[[CFG:.+]] = #iree_cpu.lowering_config<distribution = [3, 8, 32], vector_common_parallel = [3, 1, 16]>
// CHECK-DAG: #[[TR:.+]] = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>>
// CHECK-DAG: #[[COMP:.+]] = #iree_codegen.compilation_info<lowering_config = #[[CFG]], translation_info = #[[TR]]>
// CHECK-DAG: #[[ID:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[HWC:.+]] = affine_map<(d0, d1, d2) -> (d1, d2, d0)>
// CHECK-LABEL: func.func @image_entry
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[HWC]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%{{.*}} : tensor<3x8x32xf32>) outs(%{{.*}} : tensor<8x32x3xf32>)
// CHECK-SAME: {compilation_info = #[[COMP]]}
// CHECK-NEXT: ^bb0(%[[IN:.+]]: f32, %{{.*}}: f32):
// CHECK-NEXT: linalg.yield %[[IN]] : f32
// OFF-LABEL: func.func @image_entry
// OFF-NOT: compilation_info
#chw = affine_map<(d0, d1, d2) -> (d2, d0, d1)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @image_entry(%x: tensor<3x8x32xf32>) -> tensor<8x32x3xf32> {
  %e = tensor.empty() : tensor<8x32x3xf32>
  %t = linalg.generic {indexing_maps = [#chw, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<3x8x32xf32>) outs(%e : tensor<8x32x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<8x32x3xf32>
  return %t : tensor<8x32x3xf32>
}

// -----

// 64 channels innermost: IREE's 16-lane vectors are full; it keeps its own tiles.
// DECIDE: transpose 64x8x8 -> 8x8x64: IREE's tiles: innermost output dimension of 64 (> 4): IREE's vectors fit
// CHECK-LABEL: func.func @wide_channels
// CHECK-NOT: compilation_info
#chw = affine_map<(d0, d1, d2) -> (d2, d0, d1)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @wide_channels(%x: tensor<64x8x8xf32>) -> tensor<8x8x64xf32> {
  %e = tensor.empty() : tensor<8x8x64xf32>
  %t = linalg.generic {indexing_maps = [#chw, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<64x8x8xf32>) outs(%e : tensor<8x8x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<8x8x64xf32>
  return %t : tensor<8x8x64xf32>
}

// -----

// Swapping the outer dims keeps the innermost one: each row is a contiguous copy already.
// DECIDE: transpose 4x2x3 -> 2x4x3: IREE's tiles: same innermost dimension on both sides (a plain row copy)
// CHECK-LABEL: func.func @outer_swap
// CHECK-NOT: compilation_info
#swap = affine_map<(d0, d1, d2) -> (d1, d0, d2)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @outer_swap(%x: tensor<4x2x3xf32>) -> tensor<2x4x3xf32> {
  %e = tensor.empty() : tensor<2x4x3xf32>
  %t = linalg.generic {indexing_maps = [#swap, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<4x2x3xf32>) outs(%e : tensor<2x4x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x4x3xf32>
  return %t : tensor<2x4x3xf32>
}

// -----

// A 4-pixel-wide NHWC pool output back to NCHW (a small net's last pool): it reads a computed
// tensor, so IREE may fuse it into the pool's dispatch, whose root would then carry tiles of
// loops it does not have (IREE failed to build that dispatch's pipeline and the whole
// module fell back to IREE's own dispatches). It keeps IREE's tiles.
// DECIDE: transpose 4x4x16 -> 16x4x4: IREE's tiles: reads a computed tensor: IREE may fuse it into its producer
// CHECK-LABEL: func.func @pooled_back_to_nchw
// CHECK-NOT: compilation_info
#hwc = affine_map<(d0, d1, d2) -> (d1, d2, d0)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @pooled_back_to_nchw(%x: tensor<8x8x16xf32>) -> tensor<16x4x4xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %w = tensor.empty() : tensor<2x2xf32>
  %e = tensor.empty() : tensor<4x4x16xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<4x4x16xf32>) -> tensor<4x4x16xf32>
  %x4 = tensor.expand_shape %x [[0, 1], [2], [3]] output_shape [1, 8, 8, 16] : tensor<8x8x16xf32> into tensor<1x8x8x16xf32>
  %f4 = tensor.expand_shape %f [[0, 1], [2], [3]] output_shape [1, 4, 4, 16] : tensor<4x4x16xf32> into tensor<1x4x4x16xf32>
  %p4 = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%x4, %w : tensor<1x8x8x16xf32>, tensor<2x2xf32>) outs(%f4 : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %p = tensor.collapse_shape %p4 [[0, 1], [2], [3]] : tensor<1x4x4x16xf32> into tensor<4x4x16xf32>
  %o = tensor.empty() : tensor<16x4x4xf32>
  %t = linalg.generic {indexing_maps = [#hwc, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%p : tensor<4x4x16xf32>) outs(%o : tensor<16x4x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    linalg.yield %a : f32
  } -> tensor<16x4x4xf32>
  return %t : tensor<16x4x4xf32>
}

// -----

// Not a copy (it scales while it permutes), and a transpose the planner fused with its ReLU
// (inside a dispatch region): neither is touched, and neither gets a record.
// DECIDE-NOT: transpose
// CHECK-LABEL: func.func @computes
// CHECK-NOT: compilation_info
#chw = affine_map<(d0, d1, d2) -> (d2, d0, d1)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @computes(%x: tensor<3x8x32xf32>) -> (tensor<8x32x3xf32>, tensor<8x32x3xf32>) {
  %two = arith.constant 2.0 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32x3xf32>
  %s = linalg.generic {indexing_maps = [#chw, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<3x8x32xf32>) outs(%e : tensor<8x32x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %two : f32
    linalg.yield %m : f32
  } -> tensor<8x32x3xf32>
  %t = linalg.generic {indexing_maps = [#chw, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<3x8x32xf32>) outs(%e : tensor<8x32x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<8x32x3xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%t : tensor<8x32x3xf32>) outs(%e : tensor<8x32x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x32x3xf32>
  return %s, %r : tensor<8x32x3xf32>, tensor<8x32x3xf32>
}

