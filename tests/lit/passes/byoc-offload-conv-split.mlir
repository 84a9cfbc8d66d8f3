// How an offloaded conv is split among T workers (threads=T): along its output channels
// (the name's _cT) where its weights outnumber its source 16 times or more (each part then
// reads 1/T of the weights: a conv net's deep layers), in shares of whole 16-channel blocks,
// else along its output rows (_pT). conv-split=columns takes the channels wherever each
// thread gets a 16-channel block; conv-split=rows never does; one thread: one part.
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn threads=2}' | FileCheck %s --check-prefix=T2
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn threads=1}' | FileCheck %s --check-prefix=T1
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn threads=2 conv-split=rows}' | FileCheck %s --check-prefix=ROWS
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn threads=2 conv-split=columns}' | FileCheck %s --check-prefix=COLS
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn threads=2 precision=bf16}' | FileCheck %s --check-prefix=%if onednn-bf16 %{BF16%} %else %{NOBF16%}
// RUN: not xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn conv-split=diagonal}' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: conv-split 'diagonal' is not one of count, rows, columns, tuned
// NOBF16-NOT: xgen_dnnl

// 2x2 pixels of 64 channels (256 values) against 3x3x64x64 weights (36864, 144 times more):
// two shares of 32 channels, the residual add and ReLU after it in the name as for rows.
// T2: %parts = arith.constant 2 : index
// T2-SAME: @xgen_dnnl_conv_f32_addrelu_b_1_2_2_64_2_2_64_3_3_1_1_1_1_1_1_1_1_1_c2(
// T1: @xgen_dnnl_conv_f32_addrelu_b_1_2_2_64_2_2_64_3_3_1_1_1_1_1_1_1_1_1_p1(
// ROWS: @xgen_dnnl_conv_f32_addrelu_b_1_2_2_64_2_2_64_3_3_1_1_1_1_1_1_1_1_1_p2(
// COLS: @xgen_dnnl_conv_f32_addrelu_b_1_2_2_64_2_2_64_3_3_1_1_1_1_1_1_1_1_1_c2(
// BF16: @xgen_dnnl_conv_bf16_addrelu_b_1_2_2_64_2_2_64_3_3_1_1_1_1_1_1_1_1_1_c2(
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @deep(%x: tensor<1x2x2x64xf32>) -> tensor<1x2x2x64xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.25> : tensor<3x3x64x64xf32>
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x2x2x64xf32> to tensor<1x4x4x64xf32>
  %e = tensor.empty() : tensor<1x2x2x64xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x2x64xf32>) -> tensor<1x2x2x64xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w : tensor<1x4x4x64xf32>, tensor<3x3x64x64xf32>) outs(%i : tensor<1x2x2x64xf32>) -> tensor<1x2x2x64xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c, %x : tensor<1x2x2x64xf32>, tensor<1x2x2x64xf32>) outs(%e : tensor<1x2x2x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.addf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<1x2x2x64xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x2x2x64xf32>) outs(%e : tensor<1x2x2x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.maximumf %a, %zero : f32
    linalg.yield %v : f32
  } -> tensor<1x2x2x64xf32>
  return %r : tensor<1x2x2x64xf32>
}

// -----

// 16x16 pixels (16384 values) against the same weights (2.25 times more): the rows under
// count; the channels only when asked.
// T2: @xgen_dnnl_conv_f32_none_b_1_16_16_64_16_16_64_3_3_1_1_1_1_1_1_1_1_1_p2(
// ROWS: @xgen_dnnl_conv_f32_none_b_1_16_16_64_16_16_64_3_3_1_1_1_1_1_1_1_1_1_p2(
// COLS: @xgen_dnnl_conv_f32_none_b_1_16_16_64_16_16_64_3_3_1_1_1_1_1_1_1_1_1_c2(
// BF16: @xgen_dnnl_conv_bf16_none_b_1_16_16_64_16_16_64_3_3_1_1_1_1_1_1_1_1_1_p2(
func.func @shallow(%x: tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.25> : tensor<3x3x64x64xf32>
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x16x16x64xf32> to tensor<1x18x18x64xf32>
  %e = tensor.empty() : tensor<1x16x16x64xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w : tensor<1x18x18x64xf32>, tensor<3x3x64x64xf32>) outs(%i : tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32>
  return %c : tensor<1x16x16x64xf32>
}

// -----

// 16 output channels: one 16-channel block, not one for each thread, so the rows even when
// asked (channels that are not whole blocks share by any width: the share is dense).
// COLS: @xgen_dnnl_conv_f32_none_b_1_2_2_64_2_2_16_3_3_1_1_1_1_1_1_1_1_1_p2(
func.func @narrow(%x: tensor<1x2x2x64xf32>) -> tensor<1x2x2x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.25> : tensor<3x3x64x16xf32>
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x2x2x64xf32> to tensor<1x4x4x64xf32>
  %e = tensor.empty() : tensor<1x2x2x16xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x2x16xf32>) -> tensor<1x2x2x16xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w : tensor<1x4x4x64xf32>, tensor<3x3x64x16xf32>) outs(%i : tensor<1x2x2x16xf32>) -> tensor<1x2x2x16xf32>
  return %c : tensor<1x2x2x16xf32>
}
