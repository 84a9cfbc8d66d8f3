// RUN: xgen-opt %s --split-input-file -p xgen-fold-batchnorm | FileCheck %s

// torch-mlir's eval-mode conv2d + BatchNorm2d: conv with a bias init, then x - mean,
// * 1/sqrt(var + eps) (computed from the constants), * gamma, + beta. With var = [3, 0],
// eps = 1: invstd = [0.5, 1]; a = invstd * gamma = [1, 3]; b = beta - mean * a = [0, -7];
// new weights W * a = [1, 3]; new bias a * [0.5, 1] + b = [0.5, -4].
// CHECK-LABEL: func.func @conv_bn
// CHECK-DAG: %[[W:.*]] = arith.constant dense<{{\[\[\[\[}}1.000000e+00]]], {{\[\[\[}}3.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK-DAG: %[[B:.*]] = arith.constant dense<[5.000000e-01, -4.000000e+00]> : tensor<2xf32>
// CHECK: %[[INIT:.*]] = linalg.broadcast ins(%[[B]] : tensor<2xf32>) {{.*}} dimensions = [0, 2, 3]
// CHECK: %[[C:.*]] = linalg.conv_2d_nchw_fchw {{.*}} ins(%arg0, %[[W]] : {{.*}}) outs(%[[INIT]] : tensor<1x2x4x4xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return %[[C]]
#id1 = affine_map<(d0) -> (d0)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
func.func @conv_bn(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %eps = arith.constant 1.0 : f64
  %w = arith.constant dense<1.0> : tensor<2x1x1x1xf32>
  %bias = arith.constant dense<[0.5, 1.0]> : tensor<2xf32>
  %mean = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %var = arith.constant dense<[3.0, 0.0]> : tensor<2xf32>
  %gamma = arith.constant dense<[[[2.0]], [[3.0]]]> : tensor<2x1x1xf32>
  %beta = arith.constant dense<[[[1.0]], [[-1.0]]]> : tensor<2x1x1xf32>
  %e = tensor.empty() : tensor<1x2x4x4xf32>
  %f = linalg.broadcast ins(%bias : tensor<2xf32>) outs(%e : tensor<1x2x4x4xf32>) dimensions = [0, 2, 3]
  %conv = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) outs(%f : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %ev = tensor.empty() : tensor<2xf32>
  %ve = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%var : tensor<2xf32>) outs(%ev : tensor<2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = arith.truncf %eps : f64 to f32
    %s = arith.addf %in, %t : f32
    linalg.yield %s : f32
  } -> tensor<2xf32>
  %sq = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%ve : tensor<2xf32>) outs(%ev : tensor<2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = math.sqrt %in : f32
    linalg.yield %s : f32
  } -> tensor<2xf32>
  %inv = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%sq : tensor<2xf32>) outs(%ev : tensor<2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %nz = arith.cmpf one, %in, %zero : f32
    cf.assert %nz, "unimplemented: tensor with zero element"
    %s = arith.divf %one, %in : f32
    linalg.yield %s : f32
  } -> tensor<2xf32>
  %mean3 = tensor.expand_shape %mean [[0, 1, 2]] output_shape [2, 1, 1] : tensor<2xf32> into tensor<2x1x1xf32>
  %inv3 = tensor.expand_shape %inv [[0, 1, 2]] output_shape [2, 1, 1] : tensor<2xf32> into tensor<2x1x1xf32>
  %1 = linalg.generic {indexing_maps = [#id4, #ch, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%conv, %mean3 : tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) outs(%e : tensor<1x2x4x4xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %s = arith.subf %in, %c : f32
    linalg.yield %s : f32
  } -> tensor<1x2x4x4xf32>
  %2 = linalg.generic {indexing_maps = [#id4, #ch, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%1, %inv3 : tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) outs(%e : tensor<1x2x4x4xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %s = arith.mulf %in, %c : f32
    linalg.yield %s : f32
  } -> tensor<1x2x4x4xf32>
  %3 = linalg.generic {indexing_maps = [#ch, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%gamma, %2 : tensor<2x1x1xf32>, tensor<1x2x4x4xf32>) outs(%e : tensor<1x2x4x4xf32>) {
  ^bb0(%c: f32, %in: f32, %out: f32):
    %s = arith.mulf %c, %in : f32
    linalg.yield %s : f32
  } -> tensor<1x2x4x4xf32>
  %4 = linalg.generic {indexing_maps = [#id4, #ch, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%3, %beta : tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) outs(%e : tensor<1x2x4x4xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %s = arith.addf %in, %c : f32
    linalg.yield %s : f32
  } -> tensor<1x2x4x4xf32>
  return %4 : tensor<1x2x4x4xf32>
}

// -----
// linear + BatchNorm1d: matmul on transpose(W), the linear's bias add, then the affine chain
// (here * scale and - shift: a = [2, 4], b = [1, 3]). The weights become W^T * a; the bias
// add and the chain become one broadcast init a * [1, 1] + b = [3, 7].
// CHECK-LABEL: func.func @linear_bn
// CHECK-DAG: %[[W:.*]] = arith.constant dense<{{\[\[}}2.000000e+00, 4.000000e+00], [2.000000e+00, 4.000000e+00], [2.000000e+00, 4.000000e+00]]> : tensor<3x2xf32>
// CHECK-DAG: %[[B:.*]] = arith.constant dense<[3.000000e+00, 7.000000e+00]> : tensor<2xf32>
// CHECK: %[[INIT:.*]] = linalg.broadcast ins(%[[B]] : tensor<2xf32>) {{.*}} dimensions = [0]
// CHECK: %[[M:.*]] = linalg.matmul ins(%arg0, %[[W]] : tensor<4x3xf32>, tensor<3x2xf32>) outs(%[[INIT]] : tensor<4x2xf32>)
// CHECK-NOT: linalg.generic
// CHECK-NOT: linalg.transpose
// CHECK: return %[[M]]
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @linear_bn(%x: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %w = arith.constant dense<1.0> : tensor<2x3xf32>
  %bias = arith.constant dense<1.0> : tensor<2xf32>
  %scale = arith.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %shift = arith.constant dense<[-1.0, -3.0]> : tensor<2xf32>
  %et = tensor.empty() : tensor<3x2xf32>
  %wt = linalg.transpose ins(%w : tensor<2x3xf32>) outs(%et : tensor<3x2xf32>) permutation = [1, 0]
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %m = linalg.matmul ins(%x, %wt : tensor<4x3xf32>, tensor<3x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  %1 = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]} ins(%m, %bias : tensor<4x2xf32>, tensor<2xf32>) outs(%e : tensor<4x2xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %s = arith.addf %in, %c : f32
    linalg.yield %s : f32
  } -> tensor<4x2xf32>
  %2 = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]} ins(%1, %scale : tensor<4x2xf32>, tensor<2xf32>) outs(%e : tensor<4x2xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %s = arith.mulf %in, %c : f32
    linalg.yield %s : f32
  } -> tensor<4x2xf32>
  %3 = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]} ins(%2, %shift : tensor<4x2xf32>, tensor<2xf32>) outs(%e : tensor<4x2xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %s = arith.subf %in, %c : f32
    linalg.yield %s : f32
  } -> tensor<4x2xf32>
  return %3 : tensor<4x2xf32>
}

// -----
// Depthwise convolution: weights (C, kh, kw) scaled per channel.
// CHECK-LABEL: func.func @depthwise_bn
// CHECK: arith.constant dense<{{\[\[\[}}2.000000e+00]], {{\[\[}}3.000000e+00]]]> : tensor<2x1x1xf32>
// CHECK: linalg.depthwise_conv_2d_nchw_chw
// CHECK-NOT: linalg.generic
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
func.func @depthwise_bn(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = arith.constant dense<1.0> : tensor<2x1x1xf32>
  %scale = arith.constant dense<[[[2.0]], [[3.0]]]> : tensor<2x1x1xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %conv = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) outs(%f : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %1 = linalg.generic {indexing_maps = [#id4, #ch, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%conv, %scale : tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) outs(%e : tensor<1x2x4x4xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %s = arith.mulf %in, %c : f32
    linalg.yield %s : f32
  } -> tensor<1x2x4x4xf32>
  return %1 : tensor<1x2x4x4xf32>
}

// -----
// Must not fire: the conv result has another user (it is returned too).
// CHECK-LABEL: func.func @conv_other_user
// CHECK: %[[C:.*]] = linalg.conv_2d_nchw_fchw {{.*}} ins(%arg0, %cst
// CHECK: linalg.generic {{.*}} ins(%[[C]],
// CHECK: arith.mulf
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
func.func @conv_other_user(%x: tensor<1x1x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %w = arith.constant dense<1.0> : tensor<2x1x1x1xf32>
  %scale = arith.constant dense<[[[2.0]], [[3.0]]]> : tensor<2x1x1xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %conv = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) outs(%f : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %1 = linalg.generic {indexing_maps = [#id4, #ch, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%conv, %scale : tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) outs(%e : tensor<1x2x4x4xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %s = arith.mulf %in, %c : f32
    linalg.yield %s : f32
  } -> tensor<1x2x4x4xf32>
  return %1, %conv : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// -----
// Must not fire: the weights are not a constant.
// CHECK-LABEL: func.func @weights_not_constant
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} ins(%arg0, %arg1
// CHECK: arith.mulf
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
func.func @weights_not_constant(%x: tensor<1x1x4x4xf32>, %w: tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32> {
  %scale = arith.constant dense<[[[2.0]], [[3.0]]]> : tensor<2x1x1xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %conv = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) outs(%f : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %1 = linalg.generic {indexing_maps = [#id4, #ch, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%conv, %scale : tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) outs(%e : tensor<1x2x4x4xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %s = arith.mulf %in, %c : f32
    linalg.yield %s : f32
  } -> tensor<1x2x4x4xf32>
  return %1 : tensor<1x2x4x4xf32>
}

// -----
// Must not fire: the batch-norm scale is not a constant (a function argument).
// CHECK-LABEL: func.func @scale_not_constant
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} ins(%arg0, %cst
// CHECK: linalg.generic {{.*}} ins({{.*}}, %arg1 :
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
func.func @scale_not_constant(%x: tensor<1x1x4x4xf32>, %scale: tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32> {
  %w = arith.constant dense<1.0> : tensor<2x1x1x1xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %conv = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) outs(%f : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %1 = linalg.generic {indexing_maps = [#id4, #ch, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%conv, %scale : tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) outs(%e : tensor<1x2x4x4xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %s = arith.mulf %in, %c : f32
    linalg.yield %s : f32
  } -> tensor<1x2x4x4xf32>
  return %1 : tensor<1x2x4x4xf32>
}

// -----
// Must not fire: the constant varies along a spatial dimension (not per channel).
// CHECK-LABEL: func.func @not_per_channel
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} ins(%arg0, %cst
// CHECK: arith.mulf
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
#w_dim = affine_map<(d0, d1, d2, d3) -> (d3)>
func.func @not_per_channel(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %scale = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %w = arith.constant dense<1.0> : tensor<2x1x1x1xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %conv = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) outs(%f : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %1 = linalg.generic {indexing_maps = [#id4, #w_dim, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%conv, %scale : tensor<1x2x4x4xf32>, tensor<4xf32>) outs(%e : tensor<1x2x4x4xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %s = arith.mulf %in, %c : f32
    linalg.yield %s : f32
  } -> tensor<1x2x4x4xf32>
  return %1 : tensor<1x2x4x4xf32>
}

// -----
// Must not fire: a chain that only adds (a linear layer's bias) gains nothing from folding.
// CHECK-LABEL: func.func @bias_only
// CHECK: linalg.matmul
// CHECK: linalg.generic
// CHECK: arith.addf
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @bias_only(%x: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %w = arith.constant dense<1.0> : tensor<3x2xf32>
  %bias = arith.constant dense<1.0> : tensor<2xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %m = linalg.matmul ins(%x, %w : tensor<4x3xf32>, tensor<3x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  %1 = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]} ins(%m, %bias : tensor<4x2xf32>, tensor<2xf32>) outs(%e : tensor<4x2xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %s = arith.addf %in, %c : f32
    linalg.yield %s : f32
  } -> tensor<4x2xf32>
  return %1 : tensor<4x2xf32>
}

// -----
// Must not fire: c / x is not affine in x.
// CHECK-LABEL: func.func @reciprocal
// CHECK: linalg.matmul
// CHECK: arith.divf %in, %in_
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @reciprocal(%x: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %w = arith.constant dense<1.0> : tensor<3x2xf32>
  %two = arith.constant dense<2.0> : tensor<2xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %m = linalg.matmul ins(%x, %w : tensor<4x3xf32>, tensor<3x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  %1 = linalg.generic {indexing_maps = [#col, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%two, %m : tensor<2xf32>, tensor<4x2xf32>) outs(%e : tensor<4x2xf32>) {
  ^bb0(%c: f32, %in: f32, %out: f32):
    %s = arith.divf %c, %in : f32
    linalg.yield %s : f32
  } -> tensor<4x2xf32>
  return %1 : tensor<4x2xf32>
}
