// RUN: python %S/Inputs/winograd_choices_db.py %s %t.db
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned gemm=tuned vector-bits=256 db=%t.db}' | FileCheck %s
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned gemm=tuned vector-bits=512 db=%t.db}' | FileCheck %s --check-prefix=IREE
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned gemm=false vector-bits=256 db=%t.db}' | FileCheck %s --check-prefix=IREE

// Where the Winograd prior's batched GEMM runs, with no record for this host (the database
// has none for these functions): on a target narrower than AVX-512 under gemm=tuned, in
// xgen_mlir's generated GEMM kernel (marked xgen.kernel = "gemm") from 32 rows per batch
// (output tiles); IREE's batch_matmul with fewer rows, on an AVX-512 target, or under
// gemm=false.

// 24x24 output: 36 4x4 tiles, the kernel.
// CHECK-LABEL: func.func @rows_36
// CHECK: linalg.batch_matmul {{.*}}xgen.kernel = "gemm"{{.*}} -> tensor<36x36x64xf32>
// Must not take the kernel: 16x16 output, 16 tiles.
// CHECK-LABEL: func.func @rows_16
// CHECK-NOT: xgen.kernel
// CHECK: linalg.batch_matmul {{.*}} -> tensor<36x16x64xf32>
// CHECK-NOT: xgen.kernel

// IREE-NOT: xgen.kernel
// IREE: linalg.batch_matmul {{.*}} -> tensor<36x36x64xf32>
// IREE: linalg.batch_matmul {{.*}} -> tensor<36x16x64xf32>
// IREE-NOT: xgen.kernel

func.func @rows_36(%arg0: tensor<1x64x24x24xf32>) -> tensor<1x64x24x24xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<64x64x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x64x24x24xf32> to tensor<1x64x26x26xf32>
  %0 = tensor.empty() : tensor<1x64x24x24xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x64x24x24xf32>) -> tensor<1x64x24x24xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x64x26x26xf32>, tensor<64x64x3x3xf32>) outs(%1 : tensor<1x64x24x24xf32>) -> tensor<1x64x24x24xf32>
  return %2 : tensor<1x64x24x24xf32>
}

func.func @rows_16(%arg0: tensor<1x64x16x16xf32>) -> tensor<1x64x16x16xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<64x64x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x64x16x16xf32> to tensor<1x64x18x18xf32>
  %0 = tensor.empty() : tensor<1x64x16x16xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x64x16x16xf32>) -> tensor<1x64x16x16xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x64x18x18xf32>, tensor<64x64x3x3xf32>) outs(%1 : tensor<1x64x16x16xf32>) -> tensor<1x64x16x16xf32>
  return %2 : tensor<1x64x16x16xf32>
}
