// In bf16, the activations between library ops stay bf16 tensors (activations=bf16, the
// default): an op writes bf16 where every user is a bf16 library op reading it as its source
// or residual, and reads its source as bf16 where that comes from such an op or from IREE's
// code (a truncf generic, which IREE fuses into the dispatch computing it). The name's type
// field says which: bf16t + source, residual, output, each b (bf16) or f (f32).
// Where an op's output also goes elsewhere (a result of the function), it stays f32, and its
// reader converts it itself (plain bf16); so with activations=f32, and in f32.
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn threads=1 precision=bf16}' | FileCheck %s --check-prefix=%if onednn-bf16 %{BF16%} %else %{NOBF16%}
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn threads=1 precision=bf16 activations=f32}' | FileCheck %s --check-prefix=%if onednn-bf16 %{F32ACT%} %else %{NOBF16%}
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn threads=1}' | FileCheck %s --check-prefix=FP32
// RUN: not xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn activations=f16}' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: activations 'f16' is not one of bf16, f32
// NOBF16-NOT: xgen_dnnl
// F32ACT-NOT: bf16t
// F32ACT-NOT: arith.truncf
// FP32-NOT: bf16
// FP32: xgen_dnnl_conv_f32_relu

// A ReLU (IREE's) -> conv1 + ReLU -> conv2 + ReLU -> conv3 + conv1's output (+ ReLU) -> the
// result: conv1 reads a truncf of the ReLU and writes bf16 (conv2's source and conv3's
// residual), conv2 reads and writes bf16, conv3 reads both in bf16 and writes f32.
// BF16-DAG: @xgen_dnnl_conv_bf16tbfb_relu_b_1_4_4_16_4_4_16_1_1_1_1_0_0_0_0_1_1_1_p1(
// BF16-DAG: @xgen_dnnl_conv_bf16tbbf_addrelu_b_1_4_4_16_4_4_16_1_1_1_1_0_0_0_0_1_1_1_p1(
// BF16-LABEL: func.func @chain
// BF16: %[[P:.*]] = linalg.generic
// BF16: arith.maximumf
// BF16: %[[T:.*]] = linalg.generic {{.*}} ins(%[[P]] : tensor<1x4x4x16xf32>) outs({{.*}} : tensor<1x4x4x16xbf16>)
// BF16-NEXT: ^bb0
// BF16-NEXT: arith.truncf
// BF16: %[[C1:.*]] = call @{{.*}}(%[[T]], {{.*}}) -> tensor<1x4x4x16xbf16>
// BF16: %[[C2:.*]] = call @{{.*}}(%[[C1]], {{.*}}) -> tensor<1x4x4x16xbf16>
// BF16: %[[C3:.*]] = call @{{.*}}(%[[C2]], %{{.*}}, %{{.*}}, %[[C1]]) : (tensor<1x4x4x16xbf16>, tensor<256xf32>, tensor<16xf32>, tensor<1x4x4x16xbf16>) -> tensor<1x4x4x16xf32>
// BF16: return %[[C3]]
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @chain(%x: tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.125> : tensor<1x1x16x16xf32>
  %e = tensor.empty() : tensor<1x4x4x16xf32>
  %p = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x4x4x16xf32>) outs(%e : tensor<1x4x4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.maximumf %a, %zero : f32
    linalg.yield %v : f32
  } -> tensor<1x4x4x16xf32>
  %c1i = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w : tensor<1x4x4x16xf32>, tensor<1x1x16x16xf32>) outs(%c1i : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %r1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c1 : tensor<1x4x4x16xf32>) outs(%e : tensor<1x4x4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.maximumf %a, %zero : f32
    linalg.yield %v : f32
  } -> tensor<1x4x4x16xf32>
  %c2i = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%r1, %w : tensor<1x4x4x16xf32>, tensor<1x1x16x16xf32>) outs(%c2i : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %r2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c2 : tensor<1x4x4x16xf32>) outs(%e : tensor<1x4x4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.maximumf %a, %zero : f32
    linalg.yield %v : f32
  } -> tensor<1x4x4x16xf32>
  %c3i = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %c3 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%r2, %w : tensor<1x4x4x16xf32>, tensor<1x1x16x16xf32>) outs(%c3i : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %s3 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c3, %r1 : tensor<1x4x4x16xf32>, tensor<1x4x4x16xf32>) outs(%e : tensor<1x4x4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.addf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x4x4x16xf32>
  %r3 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s3 : tensor<1x4x4x16xf32>) outs(%e : tensor<1x4x4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.maximumf %a, %zero : f32
    linalg.yield %v : f32
  } -> tensor<1x4x4x16xf32>
  return %r3 : tensor<1x4x4x16xf32>
}

// -----

// conv1's output is also a result of the function: it stays f32, and conv2 converts it.
// BF16-NOT: bf16t
// BF16-LABEL: func.func @shared
// BF16-NOT: arith.truncf
// BF16: call @{{.*}} -> tensor<1x4x4x16xf32>
// BF16: call @{{.*}} -> tensor<1x4x4x16xf32>
// BF16: return

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @shared(%x: tensor<1x4x4x16xf32>) -> (tensor<1x4x4x16xf32>, tensor<1x4x4x16xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.125> : tensor<1x1x16x16xf32>
  %e = tensor.empty() : tensor<1x4x4x16xf32>
  %c1i = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x4x4x16xf32>, tensor<1x1x16x16xf32>) outs(%c1i : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %r1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c1 : tensor<1x4x4x16xf32>) outs(%e : tensor<1x4x4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.maximumf %a, %zero : f32
    linalg.yield %v : f32
  } -> tensor<1x4x4x16xf32>
  %c2i = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%r1, %w : tensor<1x4x4x16xf32>, tensor<1x1x16x16xf32>) outs(%c2i : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  return %r1, %c2 : tensor<1x4x4x16xf32>, tensor<1x4x4x16xf32>
}
