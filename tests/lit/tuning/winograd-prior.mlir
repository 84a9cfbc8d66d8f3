// RUN: python %S/Inputs/winograd_choices_db.py %s %t.db
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=tuned vector-bits=256 verbose=true db=%t.db}' 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=WHY < %t.err
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=none vector-bits=512 db=%t.db}' | FileCheck %s
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=false offload=none vector-bits=256 db=%t.db}' | FileCheck %s --check-prefix=OFF
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=none db=%t.db}' | FileCheck %s --check-prefix=OFF
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=none precision=bf16 vector-bits=512 db=%t.db}' | FileCheck %s --check-prefix=OFF

// The Winograd prior: under enable=tuned an f32 3x3 stride-1 conv with no record for this
// host, of at least 64 input and output channels and at most 56x56 output pixels, on a
// target of known vector width, starts as Winograd with the tile min-tiles picks (F(4x4)
// with 16 4x4 tiles, else F(2x2)). A record of this host overrides it (@measured_direct:
// F(4x4) 0.91x, F(2x2) 0.67x). Not under enable=false, an unknown vector width, or bf16.

// CHECK-LABEL: func.func @prior_f4
// CHECK: linalg.batch_matmul {{.*}} -> tensor<36x16x64xf32>
// CHECK-NOT: linalg.conv_2d
// CHECK-LABEL: func.func @prior_f2
// CHECK: linalg.batch_matmul {{.*}} -> tensor<16x16x64xf32>
// CHECK-NOT: linalg.conv_2d
// CHECK-LABEL: func.func @prior_nhwc
// CHECK: linalg.batch_matmul {{.*}} -> tensor<36x16x64xf32>
// CHECK-NOT: linalg.conv_2d
// Must not fire: 32 input channels, 64x64 output pixels, stride 2, too few tiles, a record.
// CHECK-LABEL: func.func @few_channels
// CHECK-NOT: linalg.batch_matmul
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK-LABEL: func.func @many_pixels
// CHECK-NOT: linalg.batch_matmul
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK-LABEL: func.func @strided
// CHECK-NOT: linalg.batch_matmul
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK-LABEL: func.func @few_tiles
// CHECK-NOT: linalg.batch_matmul
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK-LABEL: func.func @measured_direct
// CHECK-NOT: linalg.batch_matmul
// CHECK: linalg.conv_2d_nchw_fchw

// WHY: conv3x3 64->64 16x16 nchw pad -> Winograd F(4x4, 3x3), 16 tiles (no measurement on this host: a 3x3 stride-1 conv of 64+ channels starts as Winograd F(4x4) (xgen_mlir.tune decides))
// WHY: conv3x3 64->64 7x7 nchw pad -> Winograd F(2x2, 3x3), 16 tiles (no measurement on this host
// WHY: conv3x3 64->72 16x16 nchw pad: direct, measured F(4x4) 1.100 ms vs direct 1.000 ms (0.91x)

// OFF-COUNT-8: linalg.conv_2d_
// OFF-NOT: linalg.batch_matmul

func.func @prior_f4(%arg0: tensor<1x64x16x16xf32>) -> tensor<1x64x16x16xf32> {
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

func.func @prior_f2(%arg0: tensor<1x64x7x7xf32>) -> tensor<1x64x7x7xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<64x64x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x64x7x7xf32> to tensor<1x64x9x9xf32>
  %0 = tensor.empty() : tensor<1x64x7x7xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x64x7x7xf32>) -> tensor<1x64x7x7xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x64x9x9xf32>, tensor<64x64x3x3xf32>) outs(%1 : tensor<1x64x7x7xf32>) -> tensor<1x64x7x7xf32>
  return %2 : tensor<1x64x7x7xf32>
}

func.func @prior_nhwc(%arg0: tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<3x3x64x64xf32>
  %padded = tensor.pad %arg0 low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x16x16x64xf32> to tensor<1x18x18x64xf32>
  %0 = tensor.empty() : tensor<1x16x16x64xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32>
  %2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x18x18x64xf32>, tensor<3x3x64x64xf32>) outs(%1 : tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32>
  return %2 : tensor<1x16x16x64xf32>
}

func.func @few_channels(%arg0: tensor<1x32x16x16xf32>) -> tensor<1x64x16x16xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<64x32x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x32x16x16xf32> to tensor<1x32x18x18xf32>
  %0 = tensor.empty() : tensor<1x64x16x16xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x64x16x16xf32>) -> tensor<1x64x16x16xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x32x18x18xf32>, tensor<64x32x3x3xf32>) outs(%1 : tensor<1x64x16x16xf32>) -> tensor<1x64x16x16xf32>
  return %2 : tensor<1x64x16x16xf32>
}

func.func @many_pixels(%arg0: tensor<1x64x64x64xf32>) -> tensor<1x64x64x64xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<64x64x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x64x64x64xf32> to tensor<1x64x66x66xf32>
  %0 = tensor.empty() : tensor<1x64x64x64xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x64x64x64xf32>) -> tensor<1x64x64x64xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x64x66x66xf32>, tensor<64x64x3x3xf32>) outs(%1 : tensor<1x64x64x64xf32>) -> tensor<1x64x64x64xf32>
  return %2 : tensor<1x64x64x64xf32>
}

func.func @strided(%arg0: tensor<1x64x31x31xf32>) -> tensor<1x64x16x16xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<64x64x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x64x31x31xf32> to tensor<1x64x33x33xf32>
  %0 = tensor.empty() : tensor<1x64x16x16xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x64x16x16xf32>) -> tensor<1x64x16x16xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%padded, %w : tensor<1x64x33x33xf32>, tensor<64x64x3x3xf32>) outs(%1 : tensor<1x64x16x16xf32>) -> tensor<1x64x16x16xf32>
  return %2 : tensor<1x64x16x16xf32>
}

func.func @few_tiles(%arg0: tensor<1x64x2x2xf32>) -> tensor<1x64x2x2xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<64x64x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x64x2x2xf32> to tensor<1x64x4x4xf32>
  %0 = tensor.empty() : tensor<1x64x2x2xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x64x2x2xf32>) -> tensor<1x64x2x2xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x64x4x4xf32>, tensor<64x64x3x3xf32>) outs(%1 : tensor<1x64x2x2xf32>) -> tensor<1x64x2x2xf32>
  return %2 : tensor<1x64x2x2xf32>
}

func.func @measured_direct(%arg0: tensor<1x64x16x16xf32>) -> tensor<1x72x16x16xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<72x64x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x64x16x16xf32> to tensor<1x64x18x18xf32>
  %0 = tensor.empty() : tensor<1x72x16x16xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x72x16x16xf32>) -> tensor<1x72x16x16xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x64x18x18xf32>, tensor<72x64x3x3xf32>) outs(%1 : tensor<1x72x16x16xf32>) -> tensor<1x72x16x16xf32>
  return %2 : tensor<1x72x16x16xf32>
}
