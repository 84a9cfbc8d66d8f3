// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true delegate-contractions=true print=true},xgen-gemv-tiles{vector-bits=512 print=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=DECIDE
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true delegate-contractions=true},xgen-gemv-tiles{vector-bits=512}' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true delegate-contractions=true}' | FileCheck %s --check-prefix=OFF
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true delegate-contractions=true},xgen-gemv-tiles{vector-bits=256}' | FileCheck %s --check-prefix=NARROW
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true delegate-contractions=true},xgen-gemv-tiles{vector-bits=256 print=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=HELD

// Must not fire on a target whose vectors are not 512 bits wide (vector-bits=256): the tiles
// were chosen for 512-bit vectors, so the pass holds back and says so; no matmul gets a
// record or tiles, not even the classifier head below.
// HELD-NOT: gemv {{[0-9]}}
// HELD: gemv tiles: none: tiles chosen for 512-bit vectors, the target has 256
// HELD-NOT: gemv {{[0-9]}}
// NARROW-NOT: compilation_info
// NARROW-LABEL: func.func @classifier
// NARROW-NOT: compilation_info

// A classifier head: one row times a row-major [N, K] weight, plus a bias. The matmul (left
// to IREE's dispatch formation with its bias; too big for a planner matvec region) carries
// 16-row x 16-k vector steps.
// DECIDE: gemv 1x512x512: tiles workgroup [0, 32, 0] vector [1, 16, 0] reduction [0, 0, 16]: 16 rows x 16 k per step
// CHECK-DAG: #[[CFG:.+]] = #iree_cpu.lowering_config<distribution = [0, 32, 0], vector_common_parallel = [1, 16, 0], vector_reduction = [0, 0, 16]>
// CHECK-DAG: #[[TR:.+]] = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>>
// CHECK-DAG: #[[COMP:.+]] = #iree_codegen.compilation_info<lowering_config = #[[CFG]], translation_info = #[[TR]]>
// CHECK-LABEL: func.func @classifier
// CHECK: linalg.matmul
// CHECK-SAME: {compilation_info = #[[COMP]]}
// CHECK: arith.addf
// OFF-LABEL: func.func @classifier
// OFF-NOT: compilation_info
#x = affine_map<(m, n, k) -> (m, k)>
#wt = affine_map<(m, n, k) -> (n, k)>
#y = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>
#b = affine_map<(m, n) -> (n)>
func.func @classifier(%x: tensor<1x512xf32>, %w: tensor<512x512xf32>, %bias: tensor<512xf32>) -> tensor<1x512xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x512xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<1x512xf32>) -> tensor<1x512xf32>
  %mm = linalg.matmul indexing_maps = [#x, #wt, #y] ins(%x, %w : tensor<1x512xf32>, tensor<512x512xf32>) outs(%acc : tensor<1x512xf32>) -> tensor<1x512xf32>
  %r = linalg.generic {indexing_maps = [#id, #b, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<1x512xf32>, tensor<512xf32>) outs(%e : tensor<1x512xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<1x512xf32>
  return %r : tensor<1x512xf32>
}

// -----

// Not taken: too few rows, k not a multiple of 16, and a data-tiled one (IREE packs it into
// its own layout). A weight stored [K, N] (n innermost) is not a row-major gemv at all, and
// neither is a 4-row matmul: no record for those.
// DECIDE: gemv 1x128x64: IREE's tiles: 128 rows (< 256): a small weight, IREE's tiles kept
// DECIDE: gemv 1x256x100: IREE's tiles: k = 100 is not a multiple of 16
// DECIDE: gemv 1x256x64: IREE's tiles: data-tiled: IREE packs it
// DECIDE-NOT: gemv
// CHECK-LABEL: func.func @not_taken
// CHECK-NOT: compilation_info
#x = affine_map<(m, n, k) -> (m, k)>
#wt = affine_map<(m, n, k) -> (n, k)>
#w = affine_map<(m, n, k) -> (k, n)>
#y = affine_map<(m, n, k) -> (m, n)>
func.func @not_taken(%x: tensor<1x64xf32>, %small: tensor<128x64xf32>, %x100: tensor<1x100xf32>, %odd: tensor<256x100xf32>, %w: tensor<256x64xf32>, %kn: tensor<64x256xf32>, %x4: tensor<4x64xf32>)
    -> (tensor<1x128xf32>, tensor<1x256xf32>, tensor<1x256xf32>, tensor<1x256xf32>, tensor<4x256xf32>) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<1x128xf32>
  %a1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x128xf32>) -> tensor<1x128xf32>
  %m1 = linalg.matmul indexing_maps = [#x, #wt, #y] ins(%x, %small : tensor<1x64xf32>, tensor<128x64xf32>) outs(%a1 : tensor<1x128xf32>) -> tensor<1x128xf32>
  %e2 = tensor.empty() : tensor<1x256xf32>
  %a2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x256xf32>) -> tensor<1x256xf32>
  %m2 = linalg.matmul indexing_maps = [#x, #wt, #y] ins(%x100, %odd : tensor<1x100xf32>, tensor<256x100xf32>) outs(%a2 : tensor<1x256xf32>) -> tensor<1x256xf32>
  %m3 = linalg.matmul indexing_maps = [#x, #wt, #y] {iree.opt.data_tiling} ins(%x, %w : tensor<1x64xf32>, tensor<256x64xf32>) outs(%a2 : tensor<1x256xf32>) -> tensor<1x256xf32>
  %m4 = linalg.matmul ins(%x, %kn : tensor<1x64xf32>, tensor<64x256xf32>) outs(%a2 : tensor<1x256xf32>) -> tensor<1x256xf32>
  %e5 = tensor.empty() : tensor<4x256xf32>
  %a5 = linalg.fill ins(%zero : f32) outs(%e5 : tensor<4x256xf32>) -> tensor<4x256xf32>
  %m5 = linalg.matmul indexing_maps = [#x, #wt, #y] ins(%x4, %w : tensor<4x64xf32>, tensor<256x64xf32>) outs(%a5 : tensor<4x256xf32>) -> tensor<4x256xf32>
  return %m1, %m2, %m3, %m4, %m5 : tensor<1x128xf32>, tensor<1x256xf32>, tensor<1x256xf32>, tensor<1x256xf32>, tensor<4x256xf32>
}
