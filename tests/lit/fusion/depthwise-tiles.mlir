// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true delegate-contractions=true},xgen-depthwise-tiles{threads=2 vector-bits=256 print=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=DECIDE
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true delegate-contractions=true},xgen-depthwise-tiles{threads=2 vector-bits=256}' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true delegate-contractions=true},xgen-depthwise-tiles{threads=2 vector-bits=512 print=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=AVX512
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true delegate-contractions=true},xgen-depthwise-tiles{threads=2 print=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=UNKNOWN
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true delegate-contractions=true}' | FileCheck %s --check-prefix=OFF
// RUN: not xgen-opt %s --split-input-file -p 'xgen-depthwise-tiles{threads=2 vector-bits=256}' 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true delegate-contractions=true},xgen-depthwise-pads,xgen-depthwise-tiles{threads=2 vector-bits=256}' | FileCheck %s --check-prefix=PADS

// Depthwise tiles work on the fusion plan's groups.
// ORDER: xgen-opt: error: pass order: xgen-depthwise-tiles needs xgen-plan-fusion earlier in the pipeline

#dwin = affine_map<(d0, d1, d2, d3, d4) -> (d0 + d3, d1 + d4, d2)>
#dww = affine_map<(d0, d1, d2, d3, d4) -> (d3, d4, d2)>
#dwout = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#ch = affine_map<(d0, d1, d2) -> (d2)>

// A 3x3 depthwise conv with a 7-wide output (IREE's own pick there is 2 pixels: scalar code).
// The vector takes all 7 pixels; with 2 threads the 64 channels split in 4 workgroups. The
// conv is re-batched with the tiles, in a region with its bias + ReLU, and the zero pad it
// reads joins the region (IREE makes its zeros per tile, as xgen-depthwise-pads decides for
// 3x3 windows).
// DECIDE: depthwise conv 7x7x64 3x3: tiles workgroup [0, 7, 7, 16, 0, 0] vector [1, 1, 7, 8, 0, 0] reduction [0, 0, 0, 0, 1, 3]: 7-pixel vectors divide the 7-wide output{{.*}}; its input's pad computed in its dispatch
// At 512-bit vectors IREE's own pick divides the width (7 pixels x 16 channels here): its
// tiles stay.
// AVX512: depthwise tiles: none: at 512-bit vectors IREE's own vector tile divides the output width
// AVX512-NOT: tiles workgroup
// UNKNOWN: depthwise conv 7x7x64 3x3: IREE's tiles: the target's vector width is unknown
// CHECK-DAG: #[[CFG:.+]] = #iree_cpu.lowering_config<distribution = [0, 7, 7, 16, 0, 0], vector_common_parallel = [1, 1, 7, 8, 0, 0], vector_reduction = [0, 0, 0, 0, 1, 3]>
// CHECK-DAG: #[[IN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1 + d4, d2 + d5, d3)>
// CHECK-DAG: #[[W:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5, d3)>
// CHECK-DAG: #[[OUT:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[TR:.+]] = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<ConvTileAndDecomposeExpert>>
// CHECK-DAG: #[[COMP:.+]] = #iree_codegen.compilation_info<lowering_config = #[[CFG]], translation_info = #[[TR]]>
// CHECK-LABEL: func.func @odd_width
// CHECK: %[[R:.+]] = flow.dispatch.region -> (tensor<7x7x64xf32>) {
// CHECK: %[[P:.+]] = tensor.pad
// CHECK: %[[X4:.+]] = tensor.expand_shape %[[P]] {{\[\[}}0, 1], [2], [3]] output_shape [1, 9, 9, 64]
// CHECK: %[[C:.+]] = linalg.generic {indexing_maps = [#[[IN]], #[[W]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%[[X4]], %{{.*}} : tensor<1x9x9x64xf32>, tensor<3x3x64xf32>) outs(%{{.*}} : tensor<1x7x7x64xf32>)
// CHECK-SAME: {compilation_info = #[[COMP]]}
// CHECK: tensor.collapse_shape %[[C]] {{\[\[}}0, 1], [2], [3]] : tensor<1x7x7x64xf32> into tensor<7x7x64xf32>
// CHECK: arith.maximumf
// CHECK: flow.return
// CHECK: return %[[R]]
// As in the cpu pipeline, after xgen-depthwise-pads: the pad it left for the conv's dispatch
// goes into the region.
// PADS-LABEL: func.func @odd_width
// PADS: flow.dispatch.region
// PADS-NEXT: tensor.pad
// OFF-LABEL: func.func @odd_width
// OFF-NOT: flow.dispatch.region
// OFF-NOT: compilation_info
func.func @odd_width(%x: tensor<7x7x64xf32>, %w: tensor<3x3x64xf32>, %b: tensor<64xf32>) -> tensor<7x7x64xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[1, 1, 0] high[1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<7x7x64xf32> to tensor<9x9x64xf32>
  %e = tensor.empty() : tensor<7x7x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<7x7x64xf32>) -> tensor<7x7x64xf32>
  %c = linalg.generic {indexing_maps = [#dwin, #dww, #dwout], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%p, %w : tensor<9x9x64xf32>, tensor<3x3x64xf32>) outs(%f : tensor<7x7x64xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %m = arith.mulf %a, %bb : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<7x7x64xf32>
  %r = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%c, %b : tensor<7x7x64xf32>, tensor<64xf32>) outs(%e : tensor<7x7x64xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %s = arith.addf %a, %bb : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<7x7x64xf32>
  return %r : tensor<7x7x64xf32>
}

// -----

#dwin2 = affine_map<(d0, d1, d2, d3, d4) -> (d0 * 2 + d3, d1 * 2 + d4, d2)>
#dww = affine_map<(d0, d1, d2, d3, d4) -> (d3, d4, d2)>
#dwout = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>

// A 5x5 stride-2 depthwise conv with a 14-wide output: 7-pixel vectors (the largest divisor
// up to 8), the whole 5-wide filter row per reduction step, two rows x 32 channels per
// workgroup (7 workgroups: enough for 2 threads). Its
// pad stays outside the region: fused pads made 5x5 windows slower (xgen-depthwise-pads
// writes it in place instead).
// DECIDE: depthwise conv 14x14x32 5x5 s2: tiles workgroup [0, 2, 14, 32, 0, 0] vector [1, 1, 7, 8, 0, 0] reduction [0, 0, 0, 0, 1, 5]
// DECIDE-NOT: its input's pad
// After xgen-depthwise-pads, the 5x5 window's pad is a fill the producer writes in place.
// PADS-LABEL: func.func @wide_window
// PADS: %[[F:.+]] = linalg.fill {{.*}} -> tensor<31x31x32xf32>
// PADS: %[[I:.+]] = tensor.insert_slice %{{.*}} into %[[F]][1, 1, 0] [28, 28, 32]
// PADS: flow.dispatch.region
// PADS: tensor.expand_shape %[[I]]
// PADS-NOT: tensor.pad
// CHECK-LABEL: func.func @wide_window
// CHECK: tensor.pad
// CHECK: flow.dispatch.region
// CHECK-NOT: tensor.pad
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x31x31x32xf32>, tensor<5x5x32xf32>) outs(%{{.*}} : tensor<1x14x14x32xf32>)
// CHECK-SAME: compilation_info
func.func @wide_window(%x: tensor<28x28x32xf32>, %w: tensor<5x5x32xf32>) -> tensor<14x14x32xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[1, 1, 0] high[2, 2, 0] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<28x28x32xf32> to tensor<31x31x32xf32>
  %e = tensor.empty() : tensor<14x14x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<14x14x32xf32>) -> tensor<14x14x32xf32>
  %c = linalg.generic {indexing_maps = [#dwin2, #dww, #dwout], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%p, %w : tensor<31x31x32xf32>, tensor<5x5x32xf32>) outs(%f : tensor<14x14x32xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %m = arith.mulf %a, %bb : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<14x14x32xf32>
  return %c : tensor<14x14x32xf32>
}

// -----

#dwin = affine_map<(d0, d1, d2, d3, d4) -> (d0 + d3, d1 + d4, d2)>
#dil = affine_map<(d0, d1, d2, d3, d4) -> (d0 + d3 * 2, d1 + d4 * 2, d2)>
#dww = affine_map<(d0, d1, d2, d3, d4) -> (d3, d4, d2)>
#dwout = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>
#in = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0 + d3, d1 + d4, d5)>
#w = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d4, d5, d2)>
#out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2)>

// Must not fire: 12 channels are not a multiple of an 8-lane vector (IREE keeps its own, and
// says why); a dilated depthwise conv, a dense conv and an f16 depthwise conv are not this
// pass's (no record, no tiles).
// DECIDE: depthwise conv 5x5x12 3x3: IREE's tiles: 12 channels: not a multiple of the 8-lane vector
// DECIDE-NOT: 5x5x8
// DECIDE-NOT: 7x7x8
// CHECK-LABEL: func.func @not_these
// CHECK-NOT: compilation_info
// CHECK-NOT: flow.dispatch.region
// CHECK: return
func.func @not_these(%x: tensor<7x7x12xf32>, %w: tensor<3x3x12xf32>, %x9: tensor<9x9x8xf32>, %w8: tensor<3x3x8xf32>, %wd: tensor<3x3x8x8xf32>, %xh: tensor<7x7x8xf16>, %wh: tensor<3x3x8xf16>) -> (tensor<5x5x12xf32>, tensor<5x5x8xf32>, tensor<7x7x8xf32>, tensor<5x5x8xf16>) {
  %zero = arith.constant 0.0 : f32
  %zh = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<5x5x12xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<5x5x12xf32>) -> tensor<5x5x12xf32>
  %c = linalg.generic {indexing_maps = [#dwin, #dww, #dwout], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %w : tensor<7x7x12xf32>, tensor<3x3x12xf32>) outs(%f : tensor<5x5x12xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %m = arith.mulf %a, %bb : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<5x5x12xf32>
  %e8 = tensor.empty() : tensor<5x5x8xf32>
  %f8 = linalg.fill ins(%zero : f32) outs(%e8 : tensor<5x5x8xf32>) -> tensor<5x5x8xf32>
  %cd = linalg.generic {indexing_maps = [#dil, #dww, #dwout], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x9, %w8 : tensor<9x9x8xf32>, tensor<3x3x8xf32>) outs(%f8 : tensor<5x5x8xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %m = arith.mulf %a, %bb : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<5x5x8xf32>
  %e7 = tensor.empty() : tensor<7x7x8xf32>
  %f7 = linalg.fill ins(%zero : f32) outs(%e7 : tensor<7x7x8xf32>) -> tensor<7x7x8xf32>
  %cn = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x9, %wd : tensor<9x9x8xf32>, tensor<3x3x8x8xf32>) outs(%f7 : tensor<7x7x8xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %m = arith.mulf %a, %bb : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<7x7x8xf32>
  %eh = tensor.empty() : tensor<5x5x8xf16>
  %fh = linalg.fill ins(%zh : f16) outs(%eh : tensor<5x5x8xf16>) -> tensor<5x5x8xf16>
  %ch = linalg.generic {indexing_maps = [#dwin, #dww, #dwout], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%xh, %wh : tensor<7x7x8xf16>, tensor<3x3x8xf16>) outs(%fh : tensor<5x5x8xf16>) {
  ^bb0(%a: f16, %bb: f16, %o: f16):
    %m = arith.mulf %a, %bb : f16
    %s = arith.addf %o, %m : f16
    linalg.yield %s : f16
  } -> tensor<5x5x8xf16>
  return %c, %cd, %cn, %ch : tensor<5x5x12xf32>, tensor<5x5x8xf32>, tensor<7x7x8xf32>, tensor<5x5x8xf16>
}

// -----

#dwin = affine_map<(d0, d1, d2, d3, d4) -> (d0 + d3, d1 + d4, d2)>
#dww = affine_map<(d0, d1, d2, d3, d4) -> (d3, d4, d2)>
#dwout = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// Must not fire either: the conv's dispatch quantizes its result to int8 (MobileNetV2 int8
// runs its depthwise convs in f32 on integer values); IREE rejected such dispatches with
// these tiles ("large vector sizes"), so IREE's own stay.
// DECIDE: depthwise conv 7x7x64 3x3: IREE's tiles: its dispatch converts element types (int8)
// CHECK-LABEL: func.func @quantized_epilogue
// CHECK-NOT: compilation_info
// CHECK: return
func.func @quantized_epilogue(%x: tensor<9x9x64xf32>, %w: tensor<3x3x64xf32>) -> tensor<7x7x64xi8> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<7x7x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<7x7x64xf32>) -> tensor<7x7x64xf32>
  %c = linalg.generic {indexing_maps = [#dwin, #dww, #dwout], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %w : tensor<9x9x64xf32>, tensor<3x3x64xf32>) outs(%f : tensor<7x7x64xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %m = arith.mulf %a, %bb : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<7x7x64xf32>
  %e8 = tensor.empty() : tensor<7x7x64xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%c : tensor<7x7x64xf32>) outs(%e8 : tensor<7x7x64xi8>) {
  ^bb0(%a: f32, %o: i8):
    %i = arith.fptosi %a : f32 to i8
    linalg.yield %i : i8
  } -> tensor<7x7x64xi8>
  return %q : tensor<7x7x64xi8>
}
