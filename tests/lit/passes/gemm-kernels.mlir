// RUN: rm -rf %t.cache
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p "xgen-gemm-kernels{vector-bits=256 all=true}" | FileCheck %s
// RUN: cat %t.cache/kernels/*.c | FileCheck %s --check-prefix=SRC
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p "xgen-gemm-kernels{vector-bits=256}" | FileCheck %s --check-prefix=MARKED

// A Linear as torch-mlir emits it (zero fill, matmul with constant weights, bias add) and a
// ReLU: one call of the generated kernel, bias and ReLU in its epilogue, no generic left.
// CHECK: func.func private @xgen_gemm_1(tensor<2100xf32>, tensor<{{[0-9]+}}xf32>) -> tensor<140xf32> attributes {xgen.executable = {{.*}}%gx = arith.constant 2 : index
// CHECK: tensor.collapse_shape %arg0 {{.*}} : tensor<7x300xf32> into tensor<2100xf32>
// CHECK-LABEL: func.func @linear_relu
// CHECK: %[[Y:.*]] = call @xgen_gemm_1_call(%arg0, %{{.*}}) : (tensor<7x300xf32>, tensor<{{[0-9]+}}xf32>) -> tensor<7x20xf32>
// CHECK-NOT: linalg.
// CHECK: return %[[Y]]
// SRC-DAG: 7 x 300 -> 20, tile 6x16, kc 256
// SRC-DAG: case 1: tile(
// SRC-DAG: v = e0; }
// Without all=true only marked layers are lowered: this one is not.
// MARKED-NOT: xgen_gemm
// MARKED-LABEL: func.func @linear_relu
// MARKED: linalg.matmul
// MARKED-NOT: xgen_gemm
// MARKED: return
#map = affine_map<(d0, d1) -> (d0, d1)>
#mapb = affine_map<(d0, d1) -> (d1)>
func.func @linear_relu(%x: tensor<7x300xf32>) -> tensor<7x20xf32> {
  %w = arith.constant dense<0.5> : tensor<300x20xf32>
  %b = arith.constant dense<0.25> : tensor<20xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<7x20xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<7x20xf32>) -> tensor<7x20xf32>
  %m = linalg.matmul ins(%x, %w : tensor<7x300xf32>, tensor<300x20xf32>) outs(%f : tensor<7x20xf32>) -> tensor<7x20xf32>
  %a = linalg.generic {indexing_maps = [#map, #mapb, #map], iterator_types = ["parallel", "parallel"]} ins(%m, %b : tensor<7x20xf32>, tensor<20xf32>) outs(%e : tensor<7x20xf32>) {
  ^bb0(%in: f32, %bi: f32, %out: f32):
    %s = arith.addf %in, %bi : f32
    linalg.yield %s : f32
  } -> tensor<7x20xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<7x20xf32>) outs(%e : tensor<7x20xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.maximumf %in, %z : f32
    linalg.yield %s : f32
  } -> tensor<7x20xf32>
  return %r : tensor<7x20xf32>
}

// -----

// A layer xgen-winograd-convs marked (a tuning record said the kernel wins): lowered also
// without all=true.
// CHECK-LABEL: func.func @marked
// CHECK: call @xgen_gemm_{{[0-9]+}}_call
// MARKED-LABEL: func.func @marked
// MARKED-NOT: linalg.matmul
// MARKED: call @xgen_gemm_{{[0-9]+}}_call
// MARKED-NOT: linalg.matmul
// MARKED: return
func.func @marked(%x: tensor<4x8xf32>) -> tensor<4x16xf32> {
  %w = arith.constant dense<1.0> : tensor<8x16xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %m = linalg.matmul {xgen.kernel = "gemm"} ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %m : tensor<4x16xf32>
}

// -----

// Must not fire: weights that are an input (attention's q @ k^T), and a dynamic row count.
// CHECK-LABEL: func.func @activations
// CHECK: linalg.matmul
// CHECK-NOT: xgen_gemm
func.func @activations(%x: tensor<4x8xf32>, %y: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %m = linalg.matmul ins(%x, %y : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %m : tensor<4x16xf32>
}

// -----

// CHECK-LABEL: func.func @dynamic_rows
// CHECK: linalg.matmul
// CHECK-NOT: xgen_gemm
// CHECK: return
func.func @dynamic_rows(%x: tensor<?x8xf32>) -> tensor<?x16xf32> {
  %w = arith.constant dense<1.0> : tensor<8x16xf32>
  %c0 = arith.constant 0 : index
  %d = tensor.dim %x, %c0 : tensor<?x8xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%d) : tensor<?x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x16xf32>) -> tensor<?x16xf32>
  %m = linalg.matmul ins(%x, %w : tensor<?x8xf32>, tensor<8x16xf32>) outs(%f : tensor<?x16xf32>) -> tensor<?x16xf32>
  return %m : tensor<?x16xf32>
}

// -----

// The tuner's measured panels per workgroup (xgen.gemm_group) set the grid: 64 outputs are
// 4 panels of 16 (AVX2), 2 per workgroup.
// CHECK: func.func private @xgen_gemm_{{[0-9]+}}(tensor<32xf32>, {{.*}}%gx = arith.constant 2 : index
// CHECK-LABEL: func.func @grouped
// MARKED: func.func private @xgen_gemm_{{[0-9]+}}(tensor<32xf32>, {{.*}}%gx = arith.constant 2 : index
// MARKED-LABEL: func.func @grouped
func.func @grouped(%x: tensor<4x8xf32>) -> tensor<4x64xf32> {
  %w = arith.constant dense<1.0> : tensor<8x64xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x64xf32>) -> tensor<4x64xf32>
  %m = linalg.matmul {xgen.kernel = "gemm", xgen.gemm_group = 2} ins(%x, %w : tensor<4x8xf32>, tensor<8x64xf32>) outs(%f : tensor<4x64xf32>) -> tensor<4x64xf32>
  return %m : tensor<4x64xf32>
}

// -----

// A 1x1 NCHW conv with its bias in the init: transposed to rows of pixels (2*3*5 = 30 x 8),
// the kernel, and back. A strided 1x1 conv and a 3x3 conv are not GEMMs of the input: kept.
// CHECK-LABEL: func.func @convs
// CHECK: linalg.transpose
// CHECK-SAME: permutation = [0, 2, 3, 1]
// CHECK: tensor.collapse_shape {{.*}} into tensor<30x8xf32>
// CHECK: call @xgen_gemm_{{[0-9]+}}_call({{.*}}) : (tensor<30x8xf32>, tensor<{{[0-9]+}}xf32>) -> tensor<30x4xf32>
// CHECK: tensor.expand_shape {{.*}} into tensor<2x3x5x4xf32>
// CHECK: linalg.transpose
// CHECK-SAME: permutation = [0, 3, 1, 2]
// CHECK: linalg.conv_2d_nchw_fchw {{.*}}strides = dense<2>
// CHECK: linalg.conv_2d_nchw_fchw {{.*}}tensor<4x4x3x3xf32>
// CHECK-NOT: xgen_gemm
// CHECK: return
func.func @convs(%x: tensor<2x8x3x5xf32>) -> (tensor<2x4x3x5xf32>, tensor<2x4x2x3xf32>, tensor<2x4x1x3xf32>) {
  %w = arith.constant dense<0.5> : tensor<4x8x1x1xf32>
  %b = arith.constant dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %e = tensor.empty() : tensor<2x4x3x5xf32>
  %init = linalg.broadcast ins(%b : tensor<4xf32>) outs(%e : tensor<2x4x3x5xf32>) dimensions = [0, 2, 3]
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<2x8x3x5xf32>, tensor<4x8x1x1xf32>) outs(%init : tensor<2x4x3x5xf32>) -> tensor<2x4x3x5xf32>
  %z = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<2x4x2x3xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<2x4x2x3xf32>) -> tensor<2x4x2x3xf32>
  %s = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<2x8x3x5xf32>, tensor<4x8x1x1xf32>) outs(%f2 : tensor<2x4x2x3xf32>) -> tensor<2x4x2x3xf32>
  %w3 = arith.constant dense<0.5> : tensor<4x4x3x3xf32>
  %e3 = tensor.empty() : tensor<2x4x1x3xf32>
  %f3 = linalg.fill ins(%z : f32) outs(%e3 : tensor<2x4x1x3xf32>) -> tensor<2x4x1x3xf32>
  %t = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%c, %w3 : tensor<2x4x3x5xf32>, tensor<4x4x3x3xf32>) outs(%f3 : tensor<2x4x1x3xf32>) -> tensor<2x4x1x3xf32>
  return %c, %s, %t : tensor<2x4x3x5xf32>, tensor<2x4x2x3xf32>, tensor<2x4x1x3xf32>
}
