// RUN: python %S/Inputs/winograd_choices_db.py %s %t.db
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned verbose=true db=%t.db}' 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=WHY < %t.err
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=false db=%t.db}' | FileCheck %s --check-prefix=OFF

// enable=tuned rewrites exactly the convs whose record for this host says a Winograd tile
// was at least tunedb.MIN_GAIN (1.03x) faster than the direct conv, with that tile. The
// database (Inputs/winograd_choices_db.py) holds, per function below: this host's records
// (F(4x4) 2x / F(2x2) 1.25x; F(4x4) 0.91x / F(2x2) 1.67x; 0.99x / 0.67x; F(4x4) wrong
// numbers), another host's record (2x), or nothing. Each conv has its own channel counts,
// hence its own signature.

// CHECK-LABEL: func.func @winograd_wins
// CHECK: linalg.batch_matmul {{.*}} -> tensor<36x4x3xf32>
// CHECK-NOT: linalg.conv_2d
// CHECK-LABEL: func.func @f2_wins
// CHECK: linalg.batch_matmul {{.*}} -> tensor<16x16x4xf32>
// CHECK-NOT: linalg.conv_2d
// Must not fire: the record says direct (below 1.03x), F(4x4) computed wrong numbers,
// only another host measured it, no record at all.
// CHECK-LABEL: func.func @direct_wins
// CHECK-NOT: linalg.batch_matmul
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK-LABEL: func.func @wrong_numbers
// CHECK-NOT: linalg.batch_matmul
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK-LABEL: func.func @other_host
// CHECK-NOT: linalg.batch_matmul
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK-LABEL: func.func @no_record
// CHECK-NOT: linalg.batch_matmul
// CHECK: linalg.conv_2d_nchw_fchw

// Each decision says why, from the measurements.
// WHY: conv3x3 2->3 8x8 nchw pad -> Winograd F(4x4, 3x3), 4 tiles (measured F(4x4) 0.500 ms vs direct 1.000 ms (2.00x), F(2x2) 0.800 ms vs direct 1.000 ms (1.25x))
// WHY: conv3x3 2->4 8x8 nchw pad -> Winograd F(2x2, 3x3), 16 tiles
// WHY: conv3x3 2->5 8x8 nchw pad: direct, measured F(4x4) 1.010 ms vs direct 1.000 ms (0.99x), F(2x2) 1.500 ms vs direct 1.000 ms (0.67x): below the 1.03x needed
// WHY: conv3x3 2->6 8x8 nchw pad: direct, measured F(4x4) wrong_numbers: below the 1.03x needed
// WHY: conv3x3 2->7 8x8 nchw pad: direct, no measurement on this host
// WHY: conv3x3 2->8 8x8 nchw pad: direct, no measurement on this host

// OFF-COUNT-6: linalg.conv_2d_nchw_fchw

func.func @winograd_wins(%arg0: tensor<1x2x8x8xf32>) -> tensor<1x3x8x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<3x2x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x2x8x8xf32> to tensor<1x2x10x10xf32>
  %0 = tensor.empty() : tensor<1x3x8x8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x2x10x10xf32>, tensor<3x2x3x3xf32>) outs(%1 : tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  return %2 : tensor<1x3x8x8xf32>
}

func.func @f2_wins(%arg0: tensor<1x2x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<4x2x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x2x8x8xf32> to tensor<1x2x10x10xf32>
  %0 = tensor.empty() : tensor<1x4x8x8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x2x10x10xf32>, tensor<4x2x3x3xf32>) outs(%1 : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %2 : tensor<1x4x8x8xf32>
}

func.func @direct_wins(%arg0: tensor<1x2x8x8xf32>) -> tensor<1x5x8x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<5x2x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x2x8x8xf32> to tensor<1x2x10x10xf32>
  %0 = tensor.empty() : tensor<1x5x8x8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x5x8x8xf32>) -> tensor<1x5x8x8xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x2x10x10xf32>, tensor<5x2x3x3xf32>) outs(%1 : tensor<1x5x8x8xf32>) -> tensor<1x5x8x8xf32>
  return %2 : tensor<1x5x8x8xf32>
}

func.func @wrong_numbers(%arg0: tensor<1x2x8x8xf32>) -> tensor<1x6x8x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<6x2x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x2x8x8xf32> to tensor<1x2x10x10xf32>
  %0 = tensor.empty() : tensor<1x6x8x8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x6x8x8xf32>) -> tensor<1x6x8x8xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x2x10x10xf32>, tensor<6x2x3x3xf32>) outs(%1 : tensor<1x6x8x8xf32>) -> tensor<1x6x8x8xf32>
  return %2 : tensor<1x6x8x8xf32>
}

func.func @other_host(%arg0: tensor<1x2x8x8xf32>) -> tensor<1x7x8x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<7x2x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x2x8x8xf32> to tensor<1x2x10x10xf32>
  %0 = tensor.empty() : tensor<1x7x8x8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x7x8x8xf32>) -> tensor<1x7x8x8xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x2x10x10xf32>, tensor<7x2x3x3xf32>) outs(%1 : tensor<1x7x8x8xf32>) -> tensor<1x7x8x8xf32>
  return %2 : tensor<1x7x8x8xf32>
}

func.func @no_record(%arg0: tensor<1x2x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<8x2x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x2x8x8xf32> to tensor<1x2x10x10xf32>
  %0 = tensor.empty() : tensor<1x8x8x8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x2x10x10xf32>, tensor<8x2x3x3xf32>) outs(%1 : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %2 : tensor<1x8x8x8xf32>
}
