// RUN: xgen-opt %s --split-input-file -p 'xgen-data-tiling-hints{print=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=DECIDE
// RUN: xgen-opt %s --split-input-file -p 'xgen-data-tiling-hints' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-data-tiling-hints{leave-seven-row-matmuls=true vector-bits=512 print=true}' 2>&1 | FileCheck %s --check-prefix=LEAVE
// RUN: xgen-opt %s --split-input-file -p 'xgen-data-tiling-hints{leave-seven-row-matmuls=true vector-bits=256}' | FileCheck %s --check-prefix=NARROW

// xgen-data-tiling-hints: IREE data-tiles only the contractions that carry its hint
// (iree.opt.data_tiling; IREE's own hint pass does nothing once one op has it). A few-row GEMM
// takes it; a tiny one stays plain (packing costs more than it saves).
// DECIDE: linalg.matmul at {{.*}}: tiled: few rows (M=64 <= 128)
// DECIDE: linalg.matmul at {{.*}}: plain: tiny (4x16x8 < 1048576 multiply-adds)
// CHECK-LABEL: util.func public @few_rows
// CHECK: linalg.matmul {iree.opt.data_tiling} ins(%{{.*}}, %{{.*}} : tensor<64x512xf32>, tensor<512x512xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x16xf32>)
util.func public @few_rows(%a: tensor<64x512xf32>, %b: tensor<512x512xf32>, %c: tensor<4x8xf32>, %d: tensor<8x16xf32>) -> (tensor<64x512xf32>, tensor<4x16xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x512xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x512xf32>) -> tensor<64x512xf32>
  %m = linalg.matmul ins(%a, %b : tensor<64x512xf32>, tensor<512x512xf32>) outs(%f : tensor<64x512xf32>) -> tensor<64x512xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %t = linalg.matmul ins(%c, %d : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f2 : tensor<4x16xf32>) -> tensor<4x16xf32>
  util.return %m, %t : tensor<64x512xf32>, tensor<4x16xf32>
}

// -----

// A 7x7 image's 1x1 conv (49 rows): few rows, so tiled by the rule, unless xgen-matmul-tiles
// takes it, which it does on 512-bit targets only (leave-seven-row-matmuls + vector-bits).
// DECIDE: linalg.matmul at {{.*}}: tiled: few rows (M=49 <= 128)
// LEAVE: linalg.matmul at {{.*}}: plain: xgen_mlir's tiles instead
// LEAVE-LABEL: util.func public @seven_rows
// LEAVE-NOT: iree.opt.data_tiling
// NARROW-LABEL: util.func public @seven_rows
// NARROW: linalg.matmul {iree.opt.data_tiling} ins(%{{.*}}, %{{.*}} : tensor<49x960xf32>, tensor<960x160xf32>)
util.func public @seven_rows(%a: tensor<49x960xf32>, %b: tensor<960x160xf32>) -> tensor<49x160xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<49x160xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<49x160xf32>) -> tensor<49x160xf32>
  %m = linalg.matmul ins(%a, %b : tensor<49x960xf32>, tensor<960x160xf32>) outs(%f : tensor<49x160xf32>) -> tensor<49x160xf32>
  util.return %m : tensor<49x160xf32>
}

// -----

// A dynamic sequence length (M unknown): a GEMM with large N and K is tiled at any M; an
// attention-style product with a small K and dynamic N is left plain (its work is unknown).
// DECIDE: linalg.matmul at {{.*}}: tiled: large GEMM (?x768x3072
// DECIDE: linalg.matmul at {{.*}}: plain: dynamic ?x?x64
// CHECK-LABEL: util.func public @dynamic_rows
// LEAVE-LABEL: util.func public @dynamic_rows
// CHECK: linalg.matmul {iree.opt.data_tiling} ins(%{{.*}}, %{{.*}} : tensor<?x3072xf32>, tensor<3072x768xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<64x?xf32>)
util.func public @dynamic_rows(%a: tensor<?x3072xf32>, %b: tensor<3072x768xf32>, %q: tensor<?x64xf32>, %k: tensor<64x?xf32>) -> (tensor<?x768xf32>, tensor<?x?xf32>) {
  %z = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = tensor.dim %a, %c0 : tensor<?x3072xf32>
  %e = tensor.empty(%s) : tensor<?x768xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x768xf32>) -> tensor<?x768xf32>
  %m = linalg.matmul ins(%a, %b : tensor<?x3072xf32>, tensor<3072x768xf32>) outs(%f : tensor<?x768xf32>) -> tensor<?x768xf32>
  %r = tensor.dim %q, %c0 : tensor<?x64xf32>
  %n = tensor.dim %k, %c1 : tensor<64x?xf32>
  %e2 = tensor.empty(%r, %n) : tensor<?x?xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<?x?xf32>) -> tensor<?x?xf32>
  %t = linalg.matmul ins(%q, %k : tensor<?x64xf32>, tensor<64x?xf32>) outs(%f2 : tensor<?x?xf32>) -> tensor<?x?xf32>
  util.return %m, %t : tensor<?x768xf32>, tensor<?x?xf32>
}

// -----

// A GEMM whose result feeds a reduction to a scalar (the next layer's dynamic quantization:
// max |x| of the whole tensor) is not next to a pool: it is tiled like any few-row GEMM.
// DECIDE: linalg.matmul at {{.*}}: tiled: few rows (M=64 <= 128)
// CHECK-LABEL: util.func public @feeds_scalar_reduction
// CHECK: linalg.matmul {iree.opt.data_tiling}
util.func public @feeds_scalar_reduction(%a: tensor<64x512xf32>, %b: tensor<512x512xf32>) -> (tensor<64x512xf32>, tensor<f32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x512xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x512xf32>) -> tensor<64x512xf32>
  %m = linalg.matmul ins(%a, %b : tensor<64x512xf32>, tensor<512x512xf32>) outs(%f : tensor<64x512xf32>) -> tensor<64x512xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%z : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%m : tensor<64x512xf32>) outs(%f0 : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %abs = math.absf %in : f32
    %mx = arith.maximumf %abs, %acc : f32
    linalg.yield %mx : f32
  } -> tensor<f32>
  util.return %m, %r : tensor<64x512xf32>, tensor<f32>
}

// -----

// bf16 operands (precision="bf16": IREE's demotion truncates them before the dispatch phase):
// IREE's bf16 dot products exist only in its packed (mmt4d) path, so a 1x1 conv over 16x32
// pixels with N and K under 512 is tiled in bf16, where its f32 twin stays plain (the rule
// measured on MobileNetV2's 1x1 convs). A matmul over 512 tokens (one row loop) is tiled in
// both: IREE's default. Even on a 512-bit target a 49-row bf16 GEMM is tiled (xgen-matmul-tiles'
// f32 tiles would leave it plain); a tiny bf16 GEMM stays plain.
// DECIDE: linalg.matmul at {{.*}}: tiled: bf16/f16 operands
// DECIDE: linalg.matmul at {{.*}}: tiled: M=512 rows of one loop (tokens, not pixels)
// DECIDE: linalg.generic at {{.*}}: tiled: bf16/f16 operands
// DECIDE: linalg.generic at {{.*}}: plain: M=512 rows with N=384/K=384
// DECIDE: linalg.matmul at {{.*}}: tiled: bf16/f16 operands
// DECIDE: linalg.matmul at {{.*}}: plain: tiny (4x16x8 < 1048576 multiply-adds)
// LEAVE-LABEL: util.func public @bf16_operands
// LEAVE: linalg.matmul {iree.opt.data_tiling} ins(%{{.*}}, %{{.*}} : tensor<512x384xbf16>, tensor<384x384xbf16>)
// LEAVE: linalg.matmul {iree.opt.data_tiling} ins(%{{.*}}, %{{.*}} : tensor<49x960xbf16>, tensor<960x160xbf16>)
// CHECK-LABEL: util.func public @bf16_operands
// CHECK: linalg.matmul {iree.opt.data_tiling} ins(%{{.*}}, %{{.*}} : tensor<512x384xbf16>, tensor<384x384xbf16>)
// CHECK: linalg.matmul {iree.opt.data_tiling} ins(%{{.*}}, %{{.*}} : tensor<512x384xf32>, tensor<384x384xf32>)
// CHECK: linalg.matmul {iree.opt.data_tiling} ins(%{{.*}}, %{{.*}} : tensor<49x960xbf16>, tensor<960x160xbf16>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x8xbf16>, tensor<8x16xbf16>)
#pix_x = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#pix_w = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
#pix_y = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
util.func public @bf16_operands(%a: tensor<512x384xbf16>, %b: tensor<384x384xbf16>, %a32: tensor<512x384xf32>, %b32: tensor<384x384xf32>, %x: tensor<16x32x384xbf16>, %x32: tensor<16x32x384xf32>, %c: tensor<49x960xbf16>, %d: tensor<960x160xbf16>, %s: tensor<4x8xbf16>, %t: tensor<8x16xbf16>) -> (tensor<512x384xf32>, tensor<512x384xf32>, tensor<16x32x384xf32>, tensor<16x32x384xf32>, tensor<49x160xf32>, tensor<4x16xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x384xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<512x384xf32>) -> tensor<512x384xf32>
  %m = linalg.matmul ins(%a, %b : tensor<512x384xbf16>, tensor<384x384xbf16>) outs(%f : tensor<512x384xf32>) -> tensor<512x384xf32>
  %m32 = linalg.matmul ins(%a32, %b32 : tensor<512x384xf32>, tensor<384x384xf32>) outs(%f : tensor<512x384xf32>) -> tensor<512x384xf32>
  %ep = tensor.empty() : tensor<16x32x384xf32>
  %fp = linalg.fill ins(%z : f32) outs(%ep : tensor<16x32x384xf32>) -> tensor<16x32x384xf32>
  %p = linalg.generic {indexing_maps = [#pix_x, #pix_w, #pix_y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x, %b : tensor<16x32x384xbf16>, tensor<384x384xbf16>) outs(%fp : tensor<16x32x384xf32>) {
  ^bb0(%u: bf16, %v: bf16, %o: f32):
    %u32 = arith.extf %u : bf16 to f32
    %v32 = arith.extf %v : bf16 to f32
    %uv = arith.mulf %u32, %v32 : f32
    %acc = arith.addf %o, %uv : f32
    linalg.yield %acc : f32
  } -> tensor<16x32x384xf32>
  %p32 = linalg.generic {indexing_maps = [#pix_x, #pix_w, #pix_y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x32, %b32 : tensor<16x32x384xf32>, tensor<384x384xf32>) outs(%fp : tensor<16x32x384xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %uv = arith.mulf %u, %v : f32
    %acc = arith.addf %o, %uv : f32
    linalg.yield %acc : f32
  } -> tensor<16x32x384xf32>
  %e7 = tensor.empty() : tensor<49x160xf32>
  %f7 = linalg.fill ins(%z : f32) outs(%e7 : tensor<49x160xf32>) -> tensor<49x160xf32>
  %m7 = linalg.matmul ins(%c, %d : tensor<49x960xbf16>, tensor<960x160xbf16>) outs(%f7 : tensor<49x160xf32>) -> tensor<49x160xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %tt = linalg.matmul ins(%s, %t : tensor<4x8xbf16>, tensor<8x16xbf16>) outs(%f2 : tensor<4x16xf32>) -> tensor<4x16xf32>
  util.return %m, %m32, %p, %p32, %m7, %tt : tensor<512x384xf32>, tensor<512x384xf32>, tensor<16x32x384xf32>, tensor<16x32x384xf32>, tensor<49x160xf32>, tensor<4x16xf32>
}
