// RUN: iree-compile %s --iree-hal-target-backends=llvm-cpu --iree-llvmcpu-target-cpu=x86-64 --iree-opt-data-tiling --iree-dispatch-creation-experimental-multi-use-encoding-fusion --compile-to=dispatch-creation -o %t.mlir
// RUN: FileCheck %s --check-prefix=IREE < %t.mlir
// RUN: xgen-opt %t.mlir -p 'xgen-merge-duplicate-outputs{print=true}' -o %t.merged.mlir 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: iree-opt --canonicalize %t.merged.mlir | FileCheck %s
// RUN: iree-compile %t.merged.mlir --iree-hal-target-backends=llvm-cpu --iree-llvmcpu-target-cpu=x86-64 --iree-opt-data-tiling --compile-from=dispatch-creation -o %t.vmfb
// RUN: not iree-compile %t.mlir --iree-hal-target-backends=llvm-cpu --iree-llvmcpu-target-cpu=x86-64 --iree-opt-data-tiling --compile-from=dispatch-creation -o %t.bad.vmfb 2>&1 | FileCheck %s --check-prefix=UNMERGED

// The merge xgen_mlir applies after IREE's dispatch creation when multi-reader packs are fused
// into their producers (xgen-merge-duplicate-outputs, fusion/shared_packs.py). Only the first
// function has a duplicate output; the merged module compiles, the unmerged one does not.
// COUNT: merged 1 duplicate dispatch outputs
// UNMERGED: write affecting operations on global resources are restricted to workgroup distributed contexts

#id = affine_map<(d0, d1) -> (d0, d1)>

// An activation read by two data-tiled matmuls: IREE's flag moves one pack per reader into
// the producer's dispatch, which then writes the same packed value twice. After the merge
// both readers read one output, and canonicalization drops the other and its store.
// IREE-LABEL: util.func public @two_readers
// IREE: flow.dispatch.workgroups
// IREE: %[[PACKED:.+]] = iree_encoding.set_encoding
// IREE: iree_tensor_ext.dispatch.tensor.store %[[PACKED]]
// IREE: iree_tensor_ext.dispatch.tensor.store %[[PACKED]]
// CHECK-LABEL: util.func public @two_readers
// CHECK: %[[P:.+]] = flow.dispatch.workgroups
// CHECK-SAME: -> tensor<128x64xf32, #encoding> =
// CHECK-COUNT-1: iree_tensor_ext.dispatch.tensor.store
// CHECK-NOT: iree_tensor_ext.dispatch.tensor.store
// CHECK: flow.return
// CHECK: flow.dispatch.workgroups(%[[P]],
// CHECK: flow.dispatch.workgroups(%[[P]],
func.func @two_readers(%x: tensor<128x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x64xf32>, %w2: tensor<64x64xf32>) -> (tensor<128x64xf32>, tensor<128x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<128x64xf32>) -> tensor<128x64xf32>
  %m0 = linalg.matmul ins(%x, %w0 : tensor<128x64xf32>, tensor<64x64xf32>) outs(%f : tensor<128x64xf32>) -> tensor<128x64xf32>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%m0 : tensor<128x64xf32>) outs(%e : tensor<128x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  } -> tensor<128x64xf32>
  %m1 = linalg.matmul ins(%h, %w1 : tensor<128x64xf32>, tensor<64x64xf32>) outs(%f : tensor<128x64xf32>) -> tensor<128x64xf32>
  %m2 = linalg.matmul ins(%h, %w2 : tensor<128x64xf32>, tensor<64x64xf32>) outs(%f : tensor<128x64xf32>) -> tensor<128x64xf32>
  return %m1, %m2 : tensor<128x64xf32>, tensor<128x64xf32>
}

// Read as one matmul's input and as another's accumulator: two different packs (two layouts),
// two outputs that stay.
// CHECK-LABEL: util.func public @two_layouts
// CHECK: flow.dispatch.workgroups
// CHECK-SAME: -> (tensor<128x64xf32, #encoding>, tensor<128x64xf32, #encoding
// CHECK-COUNT-2: iree_tensor_ext.dispatch.tensor.store
// CHECK: flow.return
func.func @two_layouts(%x: tensor<128x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x64xf32>) -> tensor<128x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<128x64xf32>) -> tensor<128x64xf32>
  %m0 = linalg.matmul ins(%x, %w0 : tensor<128x64xf32>, tensor<64x64xf32>) outs(%f : tensor<128x64xf32>) -> tensor<128x64xf32>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%m0 : tensor<128x64xf32>) outs(%e : tensor<128x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  } -> tensor<128x64xf32>
  %m1 = linalg.matmul ins(%h, %w1 : tensor<128x64xf32>, tensor<64x64xf32>) outs(%h : tensor<128x64xf32>) -> tensor<128x64xf32>
  return %m1 : tensor<128x64xf32>
}
