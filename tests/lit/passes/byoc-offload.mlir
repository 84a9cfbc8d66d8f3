// Both phases, as the cpu pipeline runs them (with xgen-cancel-reshapes between): layout makes
// the NCHW convs the library takes NHWC; call turns NHWC convs into calls of its primitives.
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn phase=layout},xgen-byoc-offload{backend=onednn}' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn phase=layout},xgen-byoc-offload{backend=onednn verbose=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=WHY
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn phase=layout precision=bf16},xgen-byoc-offload{backend=onednn precision=bf16}' | FileCheck %s --check-prefix=%if onednn-bf16 %{BF16%} %else %{NOBF16%}
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn phase=layout}' | FileCheck %s --check-prefix=LAYOUT
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=none phase=layout},xgen-byoc-offload{backend=none}' | FileCheck %s --check-prefix=NONE
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{phase=layout},xgen-byoc-offload' | FileCheck %s --check-prefix=NONE
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn phase=layout only=other.py:1:1},xgen-byoc-offload{backend=onednn only=other.py:1:1}' | FileCheck %s --check-prefix=NONE
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn phase=layout only=other.py:1:1,model.py:20:5},xgen-byoc-offload{backend=onednn only=other.py:1:1,model.py:20:5}' | FileCheck %s --check-prefix=ONLY
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn phase=layout never=model.py:20:5},xgen-byoc-offload{backend=onednn never=model.py:20:5 verbose=true}' 2>%t.never.err | FileCheck %s --check-prefix=NEVER
// RUN: FileCheck %s --check-prefix=NEVER-WHY < %t.never.err
// RUN: not xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=mkl}' 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn phase=layout},xgen-byoc-offload{backend=onednn threads=2}' | FileCheck %s --check-prefix=PARTS
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn phase=layout},xgen-byoc-offload{backend=onednn threads=16}' | FileCheck %s --check-prefix=ROWS
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn phase=layout},xgen-byoc-offload{backend=onednn threads=2 impl=jit verbose=true}' 2>%t.impl.err | FileCheck %s --check-prefix=IMPL
// RUN: FileCheck %s --check-prefix=IMPL-WHY < %t.impl.err
// RUN: not xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn impl=mkl}' 2>&1 | FileCheck %s --check-prefix=BADIMPL
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=tuned verbose=true}' 2>%t.tuned.err | FileCheck %s --check-prefix=TUNED
// RUN: FileCheck %s --check-prefix=TUNED-WHY < %t.tuned.err
// impl=F asks for the library's implementation family F in the name (_iF, before the parts);
// the plugin takes oneDNN's first implementation of that family.
// IMPL: @xgen_dnnl_conv_f32_none_b_1_8_8_4_8_8_8_3_3_1_1_1_1_1_1_1_1_1_ijit_p2(
// IMPL-NOT: _ijit_ijit
// IMPL-WHY: linalg.conv_2d_nhwc_hwcf -> onednn[jit]
// BADIMPL: impl 'mkl' is not one of jit, br
// threads=T: each conv runs as up to T workgroups (the name's _pP), each calling the import
// with its id: one per thread, never more than the output's rows (8 and 4 here).
// PARTS: %parts = arith.constant 2 : index
// PARTS-SAME: @xgen_dnnl_conv_f32_none_b_1_8_8_4_8_8_8_3_3_1_1_1_1_1_1_1_1_1_p2(memref<256xf32>, memref<288xf32>, memref<8xf32>, memref<512xf32>, index)
// PARTS-SAME: %id = stream.dispatch.workgroup.id[0] : index
// PARTS-SAME: (%m0, %m1, %m2, %m3, %id)
// ROWS: %parts = arith.constant 8 : index
// ROWS-SAME: @xgen_dnnl_conv_f32_none_b_1_8_8_4_8_8_8_3_3_1_1_1_1_1_1_1_1_1_p8(
// ROWS-DAG: @xgen_dnnl_conv_f32_none_b_1_9_7_4_4_3_6_3_3_2_2_0_0_0_0_1_1_1_p4(
// Without bf16 primitives on this CPU (AVX2 only), precision=bf16 keeps every conv with IREE.
// NOBF16-NOT: xgen_dnnl
// NOBF16: func.func @
// NOBF16: linalg.conv_2d
// NOBF16-NOT: xgen_dnnl

// The import's name is the whole conv, read by the plugin when the module loads:
// xgen_dnnl_conv_<compute>_<post>_<bias>_ N IH IW IC OH OW OC KH KW SH SW PT PL PB PR DH DW G
// (NHWC activations, HWIO weights). Operands: input, weights (flattened), bias, then output.

// NONE-NOT: xgen_dnnl
// NONE-NOT: xgen.executable
// UNKNOWN: unknown offload backend 'mkl' (known: onednn)

// An NCHW conv (as torch imports it): converted to NHWC, whose constant-zero pad of H and W
// becomes the primitive's padding (1 on every side) and whose NCHW bias broadcast the bias
// operand; the transposes around the call stay for xgen-cancel-reshapes.
// CHECK: func.func private @[[K:xgen_onednn_conv_[0-9]+]](tensor<256xf32>, tensor<288xf32>, tensor<8xf32>) -> tensor<512xf32>
// CHECK-SAME: xgen.executable = "{{.*}}workgroups() -> (index, index, index) {{.*}}stream.return %parts, %c1, %c1
// CHECK-SAME: func.func private @xgen_dnnl_conv_f32_none_b_1_8_8_4_8_8_8_3_3_1_1_1_1_1_1_1_1_1_p1(memref<256xf32>, memref<288xf32>, memref<8xf32>, memref<512xf32>, index) attributes {llvm.bareptr = true}
// CHECK-SAME: func.call @xgen_dnnl_conv_f32_none_b_1_8_8_4_8_8_8_3_3_1_1_1_1_1_1_1_1_1_p1(%m0, %m1, %m2, %m3, %id)
// CHECK-LABEL: func.func @nchw_padded
// CHECK: %[[T:.*]] = linalg.transpose ins(%arg0 : tensor<1x4x8x8xf32>) {{.*}} permutation = [0, 2, 3, 1]
// CHECK: %[[B:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00, 7.000000e+00, 8.000000e+00]> : tensor<8xf32>
// CHECK: call @[[K]]_call(%[[T]], %{{.*}}, %[[B]])
// CHECK-NOT: linalg.conv
// CHECK: linalg.transpose {{.*}} permutation = [0, 3, 1, 2]
// (its source a transpose: the conv converts it itself, no truncf joins the transpose)
// BF16: xgen_dnnl_conv_bf16_none_b_1_8_8_4_8_8_8_3_3_1_1_1_1_1_1_1_1_1_p1(
// LAYOUT-LABEL: func.func @nchw_padded
// LAYOUT: linalg.transpose ins(%arg0 : tensor<1x4x8x8xf32>) {{.*}} permutation = [0, 2, 3, 1]
// LAYOUT: linalg.conv_2d_nhwc_hwcf
// LAYOUT-NOT: xgen_dnnl
// BF16-NOT: xgen_dnnl_conv_f32
// WHY: linalg.conv_2d_nhwc_hwcf -> onednn
func.func @nchw_padded(%x: tensor<1x4x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.25> : tensor<8x4x3x3xf32>
  %b = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x4x8x8xf32> to tensor<1x4x10x10xf32>
  %e = tensor.empty() : tensor<1x8x8x8xf32>
  %init = linalg.broadcast ins(%b : tensor<8xf32>) outs(%e : tensor<1x8x8x8xf32>) dimensions = [0, 2, 3]
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w : tensor<1x4x10x10xf32>, tensor<8x4x3x3xf32>) outs(%init : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %y : tensor<1x8x8x8xf32>
}

// -----

// NHWC, stride 2, H != W, a zero fill as the init (a zero bias). Two convs: `only` picks the
// one at model.py:20:5.
// CHECK-DAG: xgen.executable = "{{.*}}@xgen_dnnl_conv_f32_none_b_1_9_7_4_4_3_6_3_3_2_2_0_0_0_0_1_1_1_p1(memref<252xf32>, memref<216xf32>, memref<6xf32>, memref<72xf32>, index)
// CHECK-DAG: xgen.executable = "{{.*}}@xgen_dnnl_conv_f32_none_b_1_4_3_6_4_3_5_1_1_1_1_0_0_0_0_1_1_1_p1(memref<72xf32>, memref<30xf32>, memref<5xf32>, memref<60xf32>, index)
// CHECK-LABEL: func.func @nhwc_strided
// CHECK-NOT: linalg.conv
// CHECK: return
// ONLY-NOT: xgen.executable
// ONLY: func.func private @xgen_onednn_conv_{{[0-9]+}}(tensor<72xf32>
// ONLY-SAME: @xgen_dnnl_conv_f32_none_b_1_4_3_6_4_3_5_1_1_1_1_0_0_0_0_1_1_1_p1(
// ONLY: func.func @nhwc_strided
// ONLY: linalg.conv_2d_nhwc_hwcf {{.*}}strides = dense<2>
// ONLY-NOT: xgen.executable
// WHY: model.py:10:5: linalg.conv_2d_nhwc_hwcf -> onednn
// WHY: model.py:20:5: linalg.conv_2d_nhwc_hwcf -> onednn
// `never` forbids the one at model.py:20:5 (the user's annotation); the other still goes.
// NEVER: xgen.executable = "{{.*}}@xgen_dnnl_conv_f32_none_b_1_9_7_4_4_3_6_3_3_2_2_0_0_0_0_1_1_1_p1(
// NEVER-NOT: xgen_dnnl_conv_f32_none_b_1_4_3_6_4_3_5
// NEVER-LABEL: func.func @nhwc_strided
// NEVER: call @xgen_onednn_conv_{{[0-9]+}}_call
// NEVER: linalg.conv_2d_nhwc_hwcf {{.*}}strides = dense<1>
// NEVER-WHY: model.py:10:5: linalg.conv_2d_nhwc_hwcf -> onednn
// NEVER-WHY: model.py:20:5: linalg.conv_2d_nhwc_hwcf kept: forbidden by never=
func.func @nhwc_strided(%x: tensor<1x9x7x4xf32>) -> tensor<1x4x3x5xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<3x3x4x6xf32>
  %w2 = arith.constant dense<-0.5> : tensor<1x1x6x5xf32>
  %e = tensor.empty() : tensor<1x4x3x6xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x3x6xf32>) -> tensor<1x4x3x6xf32>
  %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%x, %w : tensor<1x9x7x4xf32>, tensor<3x3x4x6xf32>) outs(%init : tensor<1x4x3x6xf32>) -> tensor<1x4x3x6xf32> loc("model.py":10:5)
  %e2 = tensor.empty() : tensor<1x4x3x5xf32>
  %init2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x4x3x5xf32>) -> tensor<1x4x3x5xf32>
  %z = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%y, %w2 : tensor<1x4x3x6xf32>, tensor<1x1x6x5xf32>) outs(%init2 : tensor<1x4x3x5xf32>) -> tensor<1x4x3x5xf32> loc("model.py":20:5)
  return %z : tensor<1x4x3x5xf32>
}

// -----

// Depthwise NHWC (HWC weights), dilation 2: groups = channels.
// CHECK: xgen.executable = "{{.*}}@xgen_dnnl_conv_f32_none_b_1_8_8_4_4_4_4_3_3_1_1_0_0_0_0_2_2_4_p1(memref<256xf32>, memref<36xf32>, memref<4xf32>, memref<64xf32>, index)
// CHECK-LABEL: func.func @depthwise
// CHECK-NOT: linalg.depthwise
// CHECK: return
// BF16: xgen_dnnl_conv_bf16_none_b_1_8_8_4_4_4_4_3_3_1_1_0_0_0_0_2_2_4_p1(
// WHY: linalg.depthwise_conv_2d_nhwc_hwc -> onednn
func.func @depthwise(%x: tensor<1x8x8x4xf32>) -> tensor<1x4x4x4xf32> {
  %w = arith.constant dense<0.5> : tensor<3x3x4xf32>
  %b = arith.constant dense<[1.0, -1.0, 2.0, -2.0]> : tensor<4xf32>
  %e = tensor.empty() : tensor<1x4x4x4xf32>
  %init = linalg.broadcast ins(%b : tensor<4xf32>) outs(%e : tensor<1x4x4x4xf32>) dimensions = [0, 1, 2]
  %y = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x8x8x4xf32>, tensor<3x3x4xf32>) outs(%init : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %y : tensor<1x4x4x4xf32>
}

// -----

// Must not fire: an NCHW conv whose weights are an argument stays NCHW (no transposes for
// a conv the library will not run).
// CHECK-LABEL: func.func @nchw_weights_argument
// CHECK-NOT: xgen_dnnl
// CHECK: linalg.conv_2d_nchw_fchw
// LAYOUT-LABEL: func.func @nchw_weights_argument
// LAYOUT-NOT: linalg.transpose
// LAYOUT: linalg.conv_2d_nchw_fchw
func.func @nchw_weights_argument(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<1x8x6x6xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) outs(%init : tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  return %y : tensor<1x8x6x6xf32>
}

// -----

// Must not fire: weights that are an argument (not constants of the module).
// CHECK-LABEL: func.func @weights_argument
// CHECK-NOT: xgen_dnnl
// CHECK: linalg.conv_2d_nhwc_hwcf
// WHY: kept: weights not constant f32
func.func @weights_argument(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<1x6x6x8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<1x6x6x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x8x8x4xf32>, tensor<3x3x4x8xf32>) outs(%init : tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  return %y : tensor<1x6x6x8xf32>
}

// -----

// Must not fire: an accumulator that is not a per-channel constant (a residual input).
// CHECK-LABEL: func.func @accumulates_onto_input
// CHECK-NOT: xgen_dnnl
// CHECK: linalg.conv_2d_nhwc_hwcf
// WHY: kept: accumulator init not a per-channel constant
func.func @accumulates_onto_input(%x: tensor<1x8x8x4xf32>, %r: tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32> {
  %w = arith.constant dense<0.5> : tensor<3x3x4x8xf32>
  %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x8x8x4xf32>, tensor<3x3x4x8xf32>) outs(%r : tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  return %y : tensor<1x6x6x8xf32>
}

// -----

// Must not fire: a dynamic batch (the import's name fixes every size).
// CHECK-LABEL: func.func @dynamic_batch
// CHECK-NOT: xgen_dnnl
// CHECK: linalg.conv_2d_nhwc_hwcf
func.func @dynamic_batch(%x: tensor<?x8x8x4xf32>) -> tensor<?x6x6x8xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<3x3x4x8xf32>
  %n = tensor.dim %x, %c0 : tensor<?x8x8x4xf32>
  %e = tensor.empty(%n) : tensor<?x6x6x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<?x6x6x8xf32>) -> tensor<?x6x6x8xf32>
  %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<?x8x8x4xf32>, tensor<3x3x4x8xf32>) outs(%init : tensor<?x6x6x8xf32>) -> tensor<?x6x6x8xf32>
  return %y : tensor<?x6x6x8xf32>
}

// -----

// Must not fire: f16 (the plugin's imports take f32 activations).
// CHECK-LABEL: func.func @half
// CHECK-NOT: xgen_dnnl
// CHECK: linalg.conv_2d_nhwc_hwcf
func.func @half(%x: tensor<1x8x8x4xf16>) -> tensor<1x6x6x8xf16> {
  %zero = arith.constant 0.000000e+00 : f16
  %w = arith.constant dense<0.5> : tensor<3x3x4x8xf16>
  %e = tensor.empty() : tensor<1x6x6x8xf16>
  %init = linalg.fill ins(%zero : f16) outs(%e : tensor<1x6x6x8xf16>) -> tensor<1x6x6x8xf16>
  %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x8x8x4xf16>, tensor<3x3x4x8xf16>) outs(%init : tensor<1x6x6x8xf16>) -> tensor<1x6x6x8xf16>
  return %y : tensor<1x6x6x8xf16>
}

// -----

// backend=tuned offloads the convs xgen-winograd-convs marked, in the implementation family
// the mark names ("onednn:jit": the tuner measured oneDNN's JIT kernel fastest); an unmarked
// conv stays.
// TUNED: xgen_dnnl_conv_f32_none_b_1_8_8_4_6_6_8_3_3_1_1_0_0_0_0_1_1_1_ijit_p1(
// TUNED-LABEL: func.func @marked
// TUNED: linalg.conv_2d_nhwc_hwcf
// TUNED-NOT: xgen.offload
// TUNED-WHY: linalg.conv_2d_nhwc_hwcf -> onednn[jit]
// TUNED-WHY-NOT: -> onednn
func.func @marked(%x: tensor<1x8x8x4xf32>) -> (tensor<1x6x6x8xf32>, tensor<1x6x6x8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<3x3x4x8xf32>
  %e = tensor.empty() : tensor<1x6x6x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>, xgen.offload = "onednn:jit"} ins(%x, %w : tensor<1x8x8x4xf32>, tensor<3x3x4x8xf32>) outs(%init : tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  %z = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x8x8x4xf32>, tensor<3x3x4x8xf32>) outs(%init : tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  return %y, %z : tensor<1x6x6x8xf32>, tensor<1x6x6x8xf32>
}
