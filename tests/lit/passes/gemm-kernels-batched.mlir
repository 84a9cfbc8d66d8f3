// RUN: rm -rf %t.cache
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s -p "xgen-gemm-kernels{vector-bits=256 verbose=true}" 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=WHY < %t.err
// RUN: cat %t.cache/kernels/*.c | FileCheck %s --check-prefix=SRC
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s -p "xgen-gemm-kernels{vector-bits=256 all=true}" | FileCheck %s --check-prefix=ALL

// A batched GEMM with one constant matrix per batch (Winograd's [a*a, tiles, C] x
// [a*a, C, F]) that xgen-winograd-convs marked (xgen.kernel = "gemm"): one call of the
// generated kernel over a third workgroup id (the batch), the weights of the 4 batches
// packed back to back.
// CHECK: func.func private @xgen_gemm_1(tensor<280xf32>, tensor<{{[0-9]+}}xf32>) -> tensor<560xf32> attributes {xgen.executable = {{.*}}%gz = arith.constant 4 : index
// CHECK-LABEL: func.func @marked
// CHECK: call @xgen_gemm_1_call(%arg0, %{{.*}}) : (tensor<4x7x10xf32>, tensor<{{[0-9]+}}xf32>) -> tensor<4x7x20xf32>
// CHECK-NOT: linalg.batch_matmul
// SRC: 4 x (7 x 10 -> 20, tile 6x16)
// SRC: size_t gx, size_t gy, size_t gz)
// Must not fire: an unmarked batched GEMM (also under all=true, which is for linear
// layers), and a marked one whose right-hand side is not a constant.
// CHECK-LABEL: func.func @unmarked
// CHECK: linalg.batch_matmul
// CHECK-LABEL: func.func @not_constant
// CHECK: linalg.batch_matmul
// WHY: kept: the right-hand side is not a constant f32 matrix per batch
// ALL-LABEL: func.func @unmarked
// ALL: linalg.batch_matmul

func.func @marked(%x: tensor<4x7x10xf32>) -> tensor<4x7x20xf32> {
  %w = arith.constant dense<0.5> : tensor<4x10x20xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x7x20xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x7x20xf32>) -> tensor<4x7x20xf32>
  %m = linalg.batch_matmul {xgen.kernel = "gemm"} ins(%x, %w : tensor<4x7x10xf32>, tensor<4x10x20xf32>) outs(%f : tensor<4x7x20xf32>) -> tensor<4x7x20xf32>
  return %m : tensor<4x7x20xf32>
}

func.func @unmarked(%x: tensor<4x7x10xf32>) -> tensor<4x7x20xf32> {
  %w = arith.constant dense<0.5> : tensor<4x10x20xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x7x20xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x7x20xf32>) -> tensor<4x7x20xf32>
  %m = linalg.batch_matmul ins(%x, %w : tensor<4x7x10xf32>, tensor<4x10x20xf32>) outs(%f : tensor<4x7x20xf32>) -> tensor<4x7x20xf32>
  return %m : tensor<4x7x20xf32>
}

func.func @not_constant(%x: tensor<4x7x10xf32>, %w: tensor<4x10x20xf32>) -> tensor<4x7x20xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x7x20xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x7x20xf32>) -> tensor<4x7x20xf32>
  %m = linalg.batch_matmul {xgen.kernel = "gemm"} ins(%x, %w : tensor<4x7x10xf32>, tensor<4x10x20xf32>) outs(%f : tensor<4x7x20xf32>) -> tensor<4x7x20xf32>
  return %m : tensor<4x7x20xf32>
}
