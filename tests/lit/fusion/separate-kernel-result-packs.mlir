// RUN: xgen-opt %s --split-input-file -p 'xgen-separate-kernel-result-packs{print=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=DECIDE
// RUN: xgen-opt %s --split-input-file -p 'xgen-separate-kernel-result-packs' | FileCheck %s

// xgen-separate-kernel-result-packs: a generated kernel's flat result, reshaped, converted to
// bf16 and read by a data-tiled matmul. Fused with the conversion, IREE would collapse the
// dispatch to one loop and write the pack element by element; the matmul reads it through a
// compute barrier instead, so the pack gets a dispatch of its own.
// DECIDE: @kernel_result: 1 matmul input(s) from kernel results packed apart
// CHECK-LABEL: util.func public @kernel_result
// CHECK: %[[R:.+]] = flow.dispatch @k_ex::@k
// CHECK: %[[E:.+]] = tensor.expand_shape %[[R]]
// CHECK: %[[B:.+]] = linalg.generic {{.*}} ins(%[[E]] : tensor<64x64xf32>)
// CHECK: %[[S:.+]] = iree_tensor_ext.compute_barrier.start %[[B]] : tensor<64x64xbf16>
// CHECK: linalg.matmul {iree.opt.data_tiling} ins(%[[S]], %{{.*}} : tensor<64x64xbf16>, tensor<64x64xbf16>)
#map = affine_map<(d0, d1) -> (d0, d1)>
stream.executable private @k_ex {
  stream.executable.export public @k workgroups() -> (index, index, index) {
    %c1 = arith.constant 1 : index
    stream.return %c1, %c1, %c1 : index, index, index
  }
  builtin.module {
    func.func @k(%arg0: !stream.binding, %arg1: !stream.binding) {
      return
    }
  }
}
util.func public @kernel_result(%x: tensor<4096xf32>, %w: tensor<64x64xbf16>) -> tensor<64x64xf32> {
  %z = arith.constant 0.0 : f32
  %r = flow.dispatch @k_ex::@k(%x) : (tensor<4096xf32>) -> tensor<4096xf32>
  %e = tensor.expand_shape %r [[0, 1]] output_shape [64, 64] : tensor<4096xf32> into tensor<64x64xf32>
  %ob = tensor.empty() : tensor<64x64xbf16>
  %b = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%e : tensor<64x64xf32>) outs(%ob : tensor<64x64xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<64x64xbf16>
  %o = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%o : tensor<64x64xf32>) -> tensor<64x64xf32>
  %m = linalg.matmul {iree.opt.data_tiling} ins(%b, %w : tensor<64x64xbf16>, tensor<64x64xbf16>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  util.return %m : tensor<64x64xf32>
}

// -----

// The matmul is not data-tiled: nothing is packed, nothing changes (nothing printed: the
// file's only line is the first case's).
// DECIDE-NOT: plain_matmul
// CHECK-LABEL: util.func public @plain_matmul
// CHECK-NOT: compute_barrier
// CHECK: util.return
#map = affine_map<(d0, d1) -> (d0, d1)>
stream.executable private @k_ex {
  stream.executable.export public @k workgroups() -> (index, index, index) {
    %c1 = arith.constant 1 : index
    stream.return %c1, %c1, %c1 : index, index, index
  }
  builtin.module {
    func.func @k(%arg0: !stream.binding, %arg1: !stream.binding) {
      return
    }
  }
}
util.func public @plain_matmul(%x: tensor<4096xf32>, %w: tensor<64x64xbf16>) -> tensor<64x64xf32> {
  %z = arith.constant 0.0 : f32
  %r = flow.dispatch @k_ex::@k(%x) : (tensor<4096xf32>) -> tensor<4096xf32>
  %e = tensor.expand_shape %r [[0, 1]] output_shape [64, 64] : tensor<4096xf32> into tensor<64x64xf32>
  %ob = tensor.empty() : tensor<64x64xbf16>
  %b = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%e : tensor<64x64xf32>) outs(%ob : tensor<64x64xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<64x64xbf16>
  %o = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%o : tensor<64x64xf32>) -> tensor<64x64xf32>
  %m = linalg.matmul ins(%b, %w : tensor<64x64xbf16>, tensor<64x64xbf16>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  util.return %m : tensor<64x64xf32>
}

// -----

// The conversion reads a reshaped argument, not a kernel's result: IREE fuses and packs it
// as it does any elementwise producer.
// DECIDE-NOT: not_a_kernel
// CHECK-LABEL: util.func public @not_a_kernel
// CHECK-NOT: compute_barrier
// CHECK: util.return
#map = affine_map<(d0, d1) -> (d0, d1)>
util.func public @not_a_kernel(%x: tensor<4096xf32>, %w: tensor<64x64xbf16>) -> tensor<64x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.expand_shape %x [[0, 1]] output_shape [64, 64] : tensor<4096xf32> into tensor<64x64xf32>
  %ob = tensor.empty() : tensor<64x64xbf16>
  %b = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%e : tensor<64x64xf32>) outs(%ob : tensor<64x64xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<64x64xbf16>
  %o = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%o : tensor<64x64xf32>) -> tensor<64x64xf32>
  %m = linalg.matmul {iree.opt.data_tiling} ins(%b, %w : tensor<64x64xbf16>, tensor<64x64xbf16>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  util.return %m : tensor<64x64xf32>
}
