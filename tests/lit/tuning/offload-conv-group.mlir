// RUN: python %S/Inputs/conv_group_db.py %s %t.db
// RUN: python %S/Inputs/conv_group_db.py %s %t.rejected.db rejected
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=tuned convs=tuned db=%t.db verbose=true},xgen-byoc-offload{backend=tuned phase=layout},xgen-byoc-offload{backend=tuned}' | FileCheck %s --check-prefix=ALL
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=tuned convs=all db=%t.rejected.db},xgen-byoc-offload{backend=tuned phase=layout},xgen-byoc-offload{backend=tuned}' | FileCheck %s --check-prefix=ALL
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=tuned convs=each db=%t.db},xgen-byoc-offload{backend=tuned phase=layout},xgen-byoc-offload{backend=tuned}' | FileCheck %s --check-prefix=EACH
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=tuned convs=tuned db=%t.rejected.db},xgen-byoc-offload{backend=tuned phase=layout},xgen-byoc-offload{backend=tuned}' | FileCheck %s --check-prefix=EACH
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=none convs=tuned db=%t.db},xgen-byoc-offload{backend=none phase=layout},xgen-byoc-offload{backend=none}' | FileCheck %s --check-prefix=EACH
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=tuned convs=tuned precision=bf16 db=%t.db},xgen-byoc-offload{backend=tuned precision=bf16 phase=layout},xgen-byoc-offload{backend=tuned precision=bf16}' | FileCheck %s --check-prefix=EACH
// RUN: not xgen-opt %s -p 'xgen-winograd-convs{offload=tuned convs=some}' 2>&1 | FileCheck %s --check-prefix=BAD

// The model's float convs a kernel library takes, as one group (the target option
// offload_convs): with convs=tuned and this host's record for the group measured faster in
// the model, every one of them is marked for oneDNN whatever its own records say (here none:
// each would stay IREE's direct conv); convs=all does so without a record. Must not fire:
// convs=each, a record rejected in the model, offload=none, and another precision's group
// (bf16: the record is fp32's).
// ALL-LABEL: func.func @two_convs
// ALL-COUNT-2: call @xgen_onednn_conv_{{[0-9]+}}_call
// ALL-NOT: linalg.conv_2d
// EACH-LABEL: func.func @two_convs
// EACH-NOT: xgen_onednn
// EACH-COUNT-2: linalg.conv_2d_nchw_fchw
// EACH-NOT: xgen_onednn
// BAD: convs='some' is not one of each, all, tuned
func.func @two_convs(%x: tensor<1x2x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w1 = arith.constant dense<0.25> : tensor<3x2x3x3xf32>
  %w2 = arith.constant dense<0.5> : tensor<4x3x1x1xf32>
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x2x8x8xf32> to tensor<1x2x10x10xf32>
  %e1 = tensor.empty() : tensor<1x3x8x8xf32>
  %i1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  %c1 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %w1 : tensor<1x2x10x10xf32>, tensor<3x2x3x3xf32>) outs(%i1 : tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  %e2 = tensor.empty() : tensor<1x4x8x8xf32>
  %i2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %c2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%c1, %w2 : tensor<1x3x8x8xf32>, tensor<4x3x1x1xf32>) outs(%i2 : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %c2 : tensor<1x4x8x8xf32>
}
