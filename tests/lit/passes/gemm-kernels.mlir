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
// CHECK: call @xgen_gemm_{{[0-9]+}}_call({{.*}}) : (tensor<2x3x5x8xf32>, tensor<{{[0-9]+}}xf32>) -> tensor<2x3x5x4xf32>
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

// -----

// MobileBERT's bottleneck output: the Linear's result viewed as [1, 5, 20] (a reshape that
// keeps the last dim whole), a residual add of a tensor defined before the layer, NoNorm's
// per-channel scale and shift: one kernel call that reads the residual (its third operand)
// and the two column constants. Not the kernel's, so left after it: an add of a tensor
// computed after the layer, and a row-wise scale (a [5] constant read along d1).
// CHECK-LABEL: func.func @residual_nonorm
// CHECK: %[[Y:.*]] = call @xgen_gemm_{{[0-9]+}}_call(%arg0, %{{.*}}, %arg1) : (tensor<5x300xf32>, tensor<{{[0-9]+}}xf32>, tensor<1x5x20xf32>) -> tensor<1x5x20xf32>
// CHECK: %[[A:.*]] = linalg.generic {{.*}} ins(%[[Y]], %{{.*}} : tensor<1x5x20xf32>, tensor<1x5x20xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[A]], %{{.*}} : tensor<1x5x20xf32>, tensor<5xf32>)
// CHECK: return
// SRC-DAG: act(acc[r][j], COLUMN(0), COLUMN(1), TENSOR(0))
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col2 = affine_map<(d0, d1) -> (d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#col3 = affine_map<(d0, d1, d2) -> (d2)>
#row3 = affine_map<(d0, d1, d2) -> (d1)>
func.func @residual_nonorm(%x: tensor<5x300xf32>, %res: tensor<1x5x20xf32>) -> tensor<1x5x20xf32> {
  %w = arith.constant dense<0.5> : tensor<300x20xf32>
  %b = arith.constant dense<0.25> : tensor<20xf32>
  %s = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0]> : tensor<20xf32>
  %t = arith.constant dense<[0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5, 12.5, 13.5, 14.5, 15.5, 16.5, 17.5, 18.5, 19.5]> : tensor<20xf32>
  %rw = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0]> : tensor<5xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x20xf32>
  %e3 = tensor.empty() : tensor<1x5x20xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<5x20xf32>) -> tensor<5x20xf32>
  %m = linalg.matmul ins(%x, %w : tensor<5x300xf32>, tensor<300x20xf32>) outs(%f : tensor<5x20xf32>) -> tensor<5x20xf32>
  %late = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%res : tensor<1x5x20xf32>) outs(%e3 : tensor<1x5x20xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %z : f32
    linalg.yield %r : f32
  } -> tensor<1x5x20xf32>
  %a = linalg.generic {indexing_maps = [#id2, #col2, #id2], iterator_types = ["parallel", "parallel"]} ins(%m, %b : tensor<5x20xf32>, tensor<20xf32>) outs(%e : tensor<5x20xf32>) {
  ^bb0(%in: f32, %bi: f32, %out: f32):
    %r = arith.addf %in, %bi : f32
    linalg.yield %r : f32
  } -> tensor<5x20xf32>
  %v = tensor.expand_shape %a [[0, 1], [2]] output_shape [1, 5, 20] : tensor<5x20xf32> into tensor<1x5x20xf32>
  %plus = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%v, %res : tensor<1x5x20xf32>, tensor<1x5x20xf32>) outs(%e3 : tensor<1x5x20xf32>) {
  ^bb0(%in: f32, %r2: f32, %out: f32):
    %r = arith.addf %in, %r2 : f32
    linalg.yield %r : f32
  } -> tensor<1x5x20xf32>
  %scaled = linalg.generic {indexing_maps = [#id3, #col3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%plus, %s : tensor<1x5x20xf32>, tensor<20xf32>) outs(%e3 : tensor<1x5x20xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %r = arith.mulf %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x5x20xf32>
  %shifted = linalg.generic {indexing_maps = [#id3, #col3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%scaled, %t : tensor<1x5x20xf32>, tensor<20xf32>) outs(%e3 : tensor<1x5x20xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %r = arith.addf %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x5x20xf32>
  %more = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%shifted, %late : tensor<1x5x20xf32>, tensor<1x5x20xf32>) outs(%e3 : tensor<1x5x20xf32>) {
  ^bb0(%in: f32, %l: f32, %out: f32):
    %r = arith.addf %in, %l : f32
    linalg.yield %r : f32
  } -> tensor<1x5x20xf32>
  %rows = linalg.generic {indexing_maps = [#id3, #row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%more, %rw : tensor<1x5x20xf32>, tensor<5xf32>) outs(%e3 : tensor<1x5x20xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %r = arith.mulf %in, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x5x20xf32>
  return %rows : tensor<1x5x20xf32>
}
