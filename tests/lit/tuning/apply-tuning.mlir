// RUN: xgen-opt %s --split-input-file -p 'xgen-apply-tuning{print=true records=%S/Inputs/records.json}' 2>&1 >/dev/null | FileCheck %s --check-prefix=SAY
// RUN: xgen-opt %s --split-input-file -p 'xgen-apply-tuning{records=%S/Inputs/records.json}' | FileCheck %s

// A contraction whose signature has a record gets the record's tiles as its
// compilation_info (IREE's llvm-cpu lowering config), whatever it had before.
// SAY: matmul_64x32x16_f32_+elementwise#{{.*}}: tuned
// CHECK: #[[CONFIG:.*]] = #iree_cpu.lowering_config<distribution = [16, 32, 0], vector_common_parallel = [8, 16, 0], vector_reduction = [0, 0, 4]>
// CHECK: #[[PIPE:.*]] = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>>
// CHECK: #[[INFO:.*]] = #iree_codegen.compilation_info<lowering_config = #[[CONFIG]], translation_info = #[[PIPE]]>
// CHECK-LABEL: func.func @tuned
// CHECK: linalg.matmul {compilation_info = #[[INFO]]}
#bias = affine_map<(d0, d1) -> (d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @tuned(%a: tensor<64x16xf32>, %b: tensor<16x32xf32>, %c: tensor<32xf32>) -> tensor<64x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x32xf32>) -> tensor<64x32xf32>
  %m = linalg.matmul ins(%a, %b : tensor<64x16xf32>, tensor<16x32xf32>) outs(%f : tensor<64x32xf32>) -> tensor<64x32xf32>
  %r = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]} ins(%m, %c : tensor<64x32xf32>, tensor<32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<64x32xf32>
  return %r : tensor<64x32xf32>
}

// -----
// Must not fire: the same matmul without its bias epilogue is another signature (the
// epilogue changes which tiles win), and it has no record.
// SAY: matmul_64x32x16_f32#{{.*}}: untuned
// CHECK-LABEL: func.func @other_signature
// CHECK-NOT: {compilation_info
func.func @other_signature(%a: tensor<64x16xf32>, %b: tensor<16x32xf32>) -> tensor<64x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x32xf32>) -> tensor<64x32xf32>
  %m = linalg.matmul ins(%a, %b : tensor<64x16xf32>, tensor<16x32xf32>) outs(%f : tensor<64x32xf32>) -> tensor<64x32xf32>
  return %m : tensor<64x32xf32>
}

// -----
// A record overrides the data-tiling rule: the op loses IREE's data-tiling hint and gets the
// record's tiles (same signature as @tuned: the hint is not part of it).
// SAY: matmul_64x32x16_f32_+elementwise#{{.*}}: tuned
// CHECK-LABEL: func.func @hinted_but_tuned_plain
// CHECK: linalg.matmul {compilation_info =
// CHECK-NOT: iree.opt.data_tiling
#bias = affine_map<(d0, d1) -> (d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @hinted_but_tuned_plain(%a: tensor<64x16xf32>, %b: tensor<16x32xf32>, %c: tensor<32xf32>) -> tensor<64x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x32xf32>) -> tensor<64x32xf32>
  %m = linalg.matmul {iree.opt.data_tiling} ins(%a, %b : tensor<64x16xf32>, tensor<16x32xf32>) outs(%f : tensor<64x32xf32>) -> tensor<64x32xf32>
  %r = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]} ins(%m, %c : tensor<64x32xf32>, tensor<32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<64x32xf32>
  return %r : tensor<64x32xf32>
}

// -----
// A "data-tiled" record puts IREE's data-tiling hint on a plain op.
// SAY: matmul_32x48x64_f32#{{.*}}: tuned
// CHECK-LABEL: func.func @tuned_data_tiled
// CHECK: linalg.matmul {iree.opt.data_tiling}
// CHECK-NOT: {compilation_info
func.func @tuned_data_tiled(%a: tensor<32x64xf32>, %b: tensor<64x48xf32>) -> tensor<32x48xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x48xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x48xf32>) -> tensor<32x48xf32>
  %m = linalg.matmul ins(%a, %b : tensor<32x64xf32>, tensor<64x48xf32>) outs(%f : tensor<32x48xf32>) -> tensor<32x48xf32>
  return %m : tensor<32x48xf32>
}

// -----
// Must not fire: a data-tiled op without a record keeps the rule's choice (the hint).
// SAY: matmul_16x48x64_f32#{{.*}}: untuned
// CHECK-LABEL: func.func @data_tiled_untuned
// CHECK: linalg.matmul {iree.opt.data_tiling}
// CHECK-NOT: {compilation_info
func.func @data_tiled_untuned(%a: tensor<16x64xf32>, %b: tensor<64x48xf32>) -> tensor<16x48xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x48xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x48xf32>) -> tensor<16x48xf32>
  %m = linalg.matmul {iree.opt.data_tiling} ins(%a, %b : tensor<16x64xf32>, tensor<64x48xf32>) outs(%f : tensor<16x48xf32>) -> tensor<16x48xf32>
  return %m : tensor<16x48xf32>
}

// -----
// Must not fire: a record whose tiles do not fit the op (3 numbers for a batch matmul's 4
// loops: a damaged or hand-edited record) is not applied.
// SAY: batch_matmul_4x64x32x16_f32#{{.*}}: untuned
// CHECK-LABEL: func.func @bad_record
// CHECK-NOT: {compilation_info
func.func @bad_record(%a: tensor<4x64x16xf32>, %b: tensor<4x16x32xf32>) -> tensor<4x64x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x64x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x64x32xf32>) -> tensor<4x64x32xf32>
  %m = linalg.batch_matmul ins(%a, %b : tensor<4x64x16xf32>, tensor<4x16x32xf32>) outs(%f : tensor<4x64x32xf32>) -> tensor<4x64x32xf32>
  return %m : tensor<4x64x32xf32>
}
