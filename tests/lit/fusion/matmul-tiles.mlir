// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true delegate-contractions=true print=true},xgen-matmul-tiles{vector-bits=512 print=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=DECIDE
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true delegate-contractions=true},xgen-matmul-tiles{vector-bits=512}' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true delegate-contractions=true}' | FileCheck %s --check-prefix=OFF
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true delegate-contractions=true},xgen-matmul-tiles{vector-bits=256}' | FileCheck %s --check-prefix=NARROW
// RUN: xgen-opt %s --split-input-file -p 'xgen-plan-fusion{form-regions=true delegate-contractions=true},xgen-matmul-tiles{vector-bits=256 print=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=HELD

// Must not fire on a target whose vectors are not 512 bits wide (vector-bits=256): the tiles
// were chosen for 512-bit vectors, so the pass holds back and says so; no matmul gets a
// record or tiles, and none is collapsed, not even the ones taken below.
// HELD-NOT: matmul {{[0-9]}}
// HELD: matmul tiles: none: tiles chosen for 512-bit vectors, the target has 256
// HELD-NOT: matmul {{[0-9]}}
// NARROW-NOT: compilation_info
// NARROW-LABEL: func.func @silu_expand
// NARROW-NOT: compilation_info
// NARROW-NOT: tensor.collapse_shape

// A 14x14 1x1 expand conv with a SiLU epilogue, padded for the next depthwise conv
// (EfficientNet-B0): IREE would vectorize 7 rows at a time; it gets 14 rows x 16 columns and
// workgroups of one 14-pixel row x all of N.
// DECIDE: matmul 196x96x64: tiles workgroup [1, 14, 96, 0] vector [1, 14, 16, 0] reduction [0, 0, 0, 16]: 14 rows x 16 columns per step (IREE's: 7 rows) under a transcendental epilogue
// CHECK-DAG: #[[CFG:.+]] = #iree_cpu.lowering_config<distribution = [1, 14, 96, 0], vector_common_parallel = [1, 14, 16, 0], vector_reduction = [0, 0, 0, 16]>
// CHECK-DAG: #[[TR:.+]] = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>>
// CHECK-DAG: #[[COMP:.+]] = #iree_codegen.compilation_info<lowering_config = #[[CFG]], translation_info = #[[TR]]>
// CHECK-LABEL: func.func @silu_expand
// CHECK: linalg.generic
// CHECK-SAME: {compilation_info = #[[COMP]]}
// CHECK: math.exp
// OFF-LABEL: func.func @silu_expand
// OFF-NOT: compilation_info
#x = affine_map<(h, w, n, k) -> (h, w, k)>
#w = affine_map<(h, w, n, k) -> (k, n)>
#y = affine_map<(h, w, n, k) -> (h, w, n)>
#id = affine_map<(h, w, n) -> (h, w, n)>
func.func @silu_expand(%x: tensor<14x14x64xf32>, %w: tensor<64x96xf32>) -> tensor<16x16x96xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<14x14x96xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<14x14x96xf32>) -> tensor<14x14x96xf32>
  %mm = linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<14x14x64xf32>, tensor<64x96xf32>) outs(%acc : tensor<14x14x96xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<14x14x96xf32>
  %silu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%mm : tensor<14x14x96xf32>) outs(%e : tensor<14x14x96xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    %ex = math.exp %n : f32
    %d = arith.addf %ex, %one : f32
    %r = arith.divf %a, %d : f32
    linalg.yield %r : f32
  } -> tensor<14x14x96xf32>
  %p = tensor.pad %silu low[1, 1, 0] high[1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<14x14x96xf32> to tensor<16x16x96xf32>
  return %p : tensor<16x16x96xf32>
}

// -----

// Not taken: the same conv under a ReLU (IREE's 7-row tiles measured as fast), 28x28 pixels
// (M = 784: IREE's tiles have 8 rows), and K = 24 (a partial 16-wide k step). A contraction
// with no operand indexed (k, n), here (k, i) x (j, k), is not a matmul of this kind: no record.
// DECIDE: matmul 196x96x64: IREE's tiles: no padded transcendental epilogue: not clearly faster, or tiles IREE drops
// DECIDE: matmul 784x96x64: IREE's tiles: M = 784: not 14 x an odd number (IREE's 7-row tiles; measured only there)
// DECIDE: matmul 196x96x24: IREE's tiles: N = 96, K = 24: not multiples of 16 of at least 64 (partial or short vector steps measured slower)
// DECIDE-NOT: matmul 64x
// CHECK-LABEL: func.func @not_taken
// CHECK-NOT: compilation_info
#x = affine_map<(h, w, n, k) -> (h, w, k)>
#w = affine_map<(h, w, n, k) -> (k, n)>
#y = affine_map<(h, w, n, k) -> (h, w, n)>
#id = affine_map<(h, w, n) -> (h, w, n)>
#xt = affine_map<(i, j, k) -> (k, i)>
#xx = affine_map<(i, j, k) -> (j, k)>
#g = affine_map<(i, j, k) -> (i, j)>
func.func @not_taken(%x: tensor<14x14x64xf32>, %w: tensor<64x96xf32>, %big: tensor<28x28x64xf32>, %x24: tensor<14x14x24xf32>, %w24: tensor<24x96xf32>, %m: tensor<64x64xf32>)
    -> (tensor<14x14x96xf32>, tensor<28x28x96xf32>, tensor<14x14x96xf32>, tensor<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<14x14x96xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<14x14x96xf32>) -> tensor<14x14x96xf32>
  %mm = linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<14x14x64xf32>, tensor<64x96xf32>) outs(%acc : tensor<14x14x96xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<14x14x96xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%mm : tensor<14x14x96xf32>) outs(%e : tensor<14x14x96xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  } -> tensor<14x14x96xf32>
  %e2 = tensor.empty() : tensor<28x28x96xf32>
  %acc2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<28x28x96xf32>) -> tensor<28x28x96xf32>
  %mm2 = linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%big, %w : tensor<28x28x64xf32>, tensor<64x96xf32>) outs(%acc2 : tensor<28x28x96xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<28x28x96xf32>
  %mm3 = linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x24, %w24 : tensor<14x14x24xf32>, tensor<24x96xf32>) outs(%acc : tensor<14x14x96xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<14x14x96xf32>
  %e4 = tensor.empty() : tensor<64x64xf32>
  %acc4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<64x64xf32>) -> tensor<64x64xf32>
  %gram = linalg.generic {indexing_maps = [#xt, #xx, #g], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%m, %m : tensor<64x64xf32>, tensor<64x64xf32>) outs(%acc4 : tensor<64x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  return %relu, %mm2, %mm3, %gram : tensor<14x14x96xf32>, tensor<28x28x96xf32>, tensor<14x14x96xf32>, tensor<64x64xf32>
}

// -----

// A 7x7 image's 1x1 conv (M = 49 pixels, read row-major, k innermost) whose result is not
// padded (MobileNetV2's last convs): 7 rows x 16 columns per step, workgroups of all 49 rows x
// 16 columns, whatever the epilogue. IREE would collapse the two row loops and rebuild the op
// without the tiles, so the op is collapsed to one row loop first; the reshapes keep the
// result's 7x7 shape.
// DECIDE: matmul 49x96x64: tiles workgroup [49, 16, 0] vector [7, 16, 0] reduction [0, 0, 16]: 49 rows: 7 rows x 16 columns per step, workgroups of all rows x 16 columns (not data-tiled)
// CHECK-DAG: #[[CFG:.+]] = #iree_cpu.lowering_config<distribution = [49, 16, 0], vector_common_parallel = [7, 16, 0], vector_reduction = [0, 0, 16]>
// CHECK-DAG: #[[COMP:.+]] = #iree_codegen.compilation_info<lowering_config = #[[CFG]], translation_info = #{{.+}}>
// CHECK-LABEL: func.func @seven_by_seven
// CHECK: %[[X:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : tensor<7x7x64xf32> into tensor<49x64xf32>
// CHECK: %[[ACC:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : tensor<7x7x96xf32> into tensor<49x96xf32>
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME: ins(%[[X]], %{{.*}} : tensor<49x64xf32>, tensor<64x96xf32>) outs(%[[ACC]] : tensor<49x96xf32>)
// CHECK-SAME: {compilation_info = #[[COMP]]}
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2]] output_shape [7, 7, 96] : tensor<49x96xf32> into tensor<7x7x96xf32>
// OFF-LABEL: func.func @seven_by_seven
// OFF-NOT: compilation_info
// OFF-NOT: tensor.collapse_shape
#x = affine_map<(h, w, n, k) -> (h, w, k)>
#w = affine_map<(h, w, n, k) -> (k, n)>
#y = affine_map<(h, w, n, k) -> (h, w, n)>
func.func @seven_by_seven(%x: tensor<7x7x64xf32>, %w: tensor<64x96xf32>) -> tensor<7x7x96xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<7x7x96xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<7x7x96xf32>) -> tensor<7x7x96xf32>
  %mm = linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<7x7x64xf32>, tensor<64x96xf32>) outs(%acc : tensor<7x7x96xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<7x7x96xf32>
  return %mm : tensor<7x7x96xf32>
}

// -----

// Not taken at 49 rows: a result padded for the next depthwise conv (IREE keeps the row
// loops there, and its 64-column workgroups measured faster), an activation read
// channels-first (k, h, w) (EfficientNet-B0's project convs: packing it once measured
// faster), N = 24 (a partial 16-wide step), and a large GEMM (N, K >= 512: packed weights
// stream better). Nothing is collapsed.
// DECIDE: matmul 49x96x64: IREE's tiles: 49 rows padded for a conv: IREE's tiles (7 x 16, 64-column workgroups) measured faster than 16-column ones
// DECIDE: matmul 49x96x64: IREE's tiles: 49 rows read channels-first (k, rows): data tiling packs them once, measured faster than these tiles
// DECIDE: matmul 49x24x64: IREE's tiles: N = 24, K = 64: not multiples of 16 of at least 64 (partial or short vector steps measured slower)
// DECIDE: matmul 49x512x512: IREE's tiles: a large GEMM (N, K >= 512): packed weights measured faster (49x2048x512: 0.85 against 1.00 ms)
// CHECK-LABEL: func.func @seven_by_seven_not_taken
// CHECK-NOT: compilation_info
// CHECK-NOT: tensor.collapse_shape
#x = affine_map<(h, w, n, k) -> (h, w, k)>
#xt = affine_map<(h, w, n, k) -> (k, h, w)>
#w = affine_map<(h, w, n, k) -> (k, n)>
#y = affine_map<(h, w, n, k) -> (h, w, n)>
func.func @seven_by_seven_not_taken(%x: tensor<7x7x64xf32>, %xt: tensor<64x7x7xf32>, %w: tensor<64x96xf32>, %w24: tensor<64x24xf32>,
    %xb: tensor<7x7x512xf32>, %wb: tensor<512x512xf32>) -> (tensor<9x9x96xf32>, tensor<7x7x96xf32>, tensor<7x7x24xf32>, tensor<7x7x512xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<7x7x96xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<7x7x96xf32>) -> tensor<7x7x96xf32>
  %mm = linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<7x7x64xf32>, tensor<64x96xf32>) outs(%acc : tensor<7x7x96xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<7x7x96xf32>
  %p = tensor.pad %mm low[1, 1, 0] high[1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<7x7x96xf32> to tensor<9x9x96xf32>
  %mmt = linalg.generic {indexing_maps = [#xt, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%xt, %w : tensor<64x7x7xf32>, tensor<64x96xf32>) outs(%acc : tensor<7x7x96xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<7x7x96xf32>
  %e24 = tensor.empty() : tensor<7x7x24xf32>
  %acc24 = linalg.fill ins(%zero : f32) outs(%e24 : tensor<7x7x24xf32>) -> tensor<7x7x24xf32>
  %mm24 = linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w24 : tensor<7x7x64xf32>, tensor<64x24xf32>) outs(%acc24 : tensor<7x7x24xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<7x7x24xf32>
  %eb = tensor.empty() : tensor<7x7x512xf32>
  %accb = linalg.fill ins(%zero : f32) outs(%eb : tensor<7x7x512xf32>) -> tensor<7x7x512xf32>
  %mmb = linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%xb, %wb : tensor<7x7x512xf32>, tensor<512x512xf32>) outs(%accb : tensor<7x7x512xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<7x7x512xf32>
  return %p, %mmt, %mm24, %mmb : tensor<9x9x96xf32>, tensor<7x7x96xf32>, tensor<7x7x24xf32>, tensor<7x7x512xf32>
}

// -----

// A 56x56 1x1 project conv to 24 channels (MobileNetV2's; N = 24: one full and one half-empty
// 16-wide vector per step with IREE's tiles): 8 rows x 8 columns per step in 64-row
// workgroups, on the op collapsed to one row loop. Not taken: the same conv on a 28x28 image
// (M = 784, not a multiple of 64 rows), and one whose result is padded for a conv.
// DECIDE: matmul 3136x24x96: tiles workgroup [64, 24, 0] vector [8, 8, 0] reduction [0, 0, 16]: N = 24: 8 rows x 8 columns per step (IREE's: 16-wide, half empty), 64-row workgroups
// DECIDE: matmul 784x24x96: IREE's tiles: N = 24, M = 784: M is not a multiple of 64 rows
// DECIDE: matmul 3136x40x96: IREE's tiles: N = 40: {{.*}}result padded for a conv
// CHECK-DAG: #[[CFG:.+]] = #iree_cpu.lowering_config<distribution = [64, 24, 0], vector_common_parallel = [8, 8, 0], vector_reduction = [0, 0, 16]>
// CHECK-DAG: #[[COMP:.+]] = #iree_codegen.compilation_info<lowering_config = #[[CFG]], translation_info = #{{.+}}>
// CHECK-LABEL: func.func @narrow_project
// CHECK: %[[X:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : tensor<56x56x96xf32> into tensor<3136x96xf32>
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[X]]
// CHECK-SAME: {compilation_info = #[[COMP]]}
// CHECK: tensor.expand_shape {{.*}} into tensor<56x56x24xf32>
// CHECK-NOT: compilation_info
// OFF-LABEL: func.func @narrow_project
// OFF-NOT: compilation_info
#x = affine_map<(h, w, n, k) -> (h, w, k)>
#w = affine_map<(h, w, n, k) -> (k, n)>
#y = affine_map<(h, w, n, k) -> (h, w, n)>
func.func @narrow_project(%x: tensor<56x56x96xf32>, %w: tensor<96x24xf32>, %small: tensor<28x28x96xf32>, %w40: tensor<96x40xf32>)
    -> (tensor<56x56x24xf32>, tensor<28x28x24xf32>, tensor<58x58x40xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<56x56x24xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<56x56x24xf32>) -> tensor<56x56x24xf32>
  %mm = linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<56x56x96xf32>, tensor<96x24xf32>) outs(%acc : tensor<56x56x24xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<56x56x24xf32>
  %e2 = tensor.empty() : tensor<28x28x24xf32>
  %acc2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<28x28x24xf32>) -> tensor<28x28x24xf32>
  %mm2 = linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%small, %w : tensor<28x28x96xf32>, tensor<96x24xf32>) outs(%acc2 : tensor<28x28x24xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<28x28x24xf32>
  %e3 = tensor.empty() : tensor<56x56x40xf32>
  %acc3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<56x56x40xf32>) -> tensor<56x56x40xf32>
  %mm3 = linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w40 : tensor<56x56x96xf32>, tensor<96x40xf32>) outs(%acc3 : tensor<56x56x40xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<56x56x40xf32>
  %pad = tensor.pad %mm3 low[1, 1, 0] high[1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<56x56x40xf32> to tensor<58x58x40xf32>
  return %mm, %mm2, %pad : tensor<56x56x24xf32>, tensor<28x28x24xf32>, tensor<58x58x40xf32>
}
