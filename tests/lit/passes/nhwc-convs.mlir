// RUN: xgen-opt %s --split-input-file -p 'xgen-nhwc-convs{convs=depthwise}' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-nhwc-convs{convs=all}' | FileCheck %s --check-prefix=ALL
// RUN: xgen-opt %s --split-input-file -p 'xgen-nhwc-convs{convs=tuned}' | FileCheck %s --check-prefix=ALL
// RUN: not xgen-opt %s --split-input-file -p 'xgen-nhwc-convs{convs=some}' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: convs must be one of tuned, all, depthwise, got 'some'

// A depthwise block (pad, depthwise 3x3, relu, 1x1 conv with bias): both convs become named
// NHWC ops on permuted constant weights (chw -> hwc, fchw -> hwcf), the zero pad is redone on
// the NHWC input, the bias broadcast is built along NHWC's channel dim, and transposes wrap
// each conv (IREE cancels the pairs between them).
// CHECK-LABEL: func.func @depthwise_block
// CHECK: %[[T:.*]] = linalg.transpose ins(%arg0 : tensor<1x2x5x5xf32>) {{.*}} permutation = [0, 2, 3, 1]
// CHECK: tensor.pad %[[T]] low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK: } : tensor<1x5x5x2xf32> to tensor<1x7x7x2xf32>
// CHECK: arith.constant dense<{{\[\[\[}}0.000000e+00, 9.000000e+00], [1.000000e+00, 1.000000e+01]{{.*}}> : tensor<3x3x2xf32>
// CHECK: linalg.depthwise_conv_2d_nhwc_hwc
// CHECK-SAME: -> tensor<1x5x5x2xf32>
// CHECK: linalg.transpose {{.*}} permutation = [0, 3, 1, 2]
// CHECK: arith.cmpf ugt
// CHECK: linalg.transpose {{.*}} permutation = [0, 2, 3, 1]
// CHECK: arith.constant dense<{{\[\[\[\[}}0.000000e+00, 2.000000e+00, 4.000000e+00], [1.000000e+00, 3.000000e+00, 5.000000e+00]]]]> : tensor<1x1x2x3xf32>
// CHECK: linalg.broadcast ins(%{{.*}} : tensor<3xf32>) outs(%{{.*}} : tensor<1x5x5x3xf32>) dimensions = [0, 1, 2]
// CHECK: linalg.conv_2d_nhwc_hwcf
// CHECK-SAME: -> tensor<1x5x5x3xf32>
// CHECK: linalg.transpose {{.*}} permutation = [0, 3, 1, 2]
// CHECK-NOT: nchw
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @depthwise_block(%arg0: tensor<1x2x5x5xf32>) -> tensor<1x3x5x5xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %b = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %wp = arith.constant dense<[[[[0.0]], [[1.0]]], [[[2.0]], [[3.0]]], [[[4.0]], [[5.0]]]]> : tensor<3x2x1x1xf32>
  %wd = arith.constant dense<[[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]], [[9.0, 10.0, 11.0], [12.0, 13.0, 14.0], [15.0, 16.0, 17.0]]]> : tensor<2x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x2x5x5xf32> to tensor<1x2x7x7xf32>
  %0 = tensor.empty() : tensor<1x2x5x5xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %2 = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %wd : tensor<1x2x7x7xf32>, tensor<2x3x3xf32>) outs(%1 : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%2 : tensor<1x2x5x5xf32>) outs(%0 : tensor<1x2x5x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    %6 = arith.cmpf ugt, %in, %cst : f32
    %7 = arith.select %6, %in, %cst : f32
    linalg.yield %7 : f32
  } -> tensor<1x2x5x5xf32>
  %4 = tensor.empty() : tensor<1x3x5x5xf32>
  %bc = linalg.broadcast ins(%b : tensor<3xf32>) outs(%4 : tensor<1x3x5x5xf32>) dimensions = [0, 2, 3]
  %5 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%3, %wp : tensor<1x2x5x5xf32>, tensor<3x2x1x1xf32>) outs(%bc : tensor<1x3x5x5xf32>) -> tensor<1x3x5x5xf32>
  return %5 : tensor<1x3x5x5xf32>
}

// -----
// Must not fire under convs=depthwise: a module without depthwise convs keeps NCHW, for
// IREE's channels-last rewrite. Under convs=all, and under convs=tuned without a record of
// this host (the prior), it becomes the named NHWC conv (the filter as (k, n): hwcf).
// CHECK-LABEL: func.func @dense_only
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK-NOT: linalg.transpose
// ALL-LABEL: func.func @dense_only
// ALL: linalg.transpose {{.*}} permutation = [0, 2, 3, 1]
// ALL: linalg.conv_2d_nhwc_hwcf {{.*}} tensor<1x1x2x3xf32>
// ALL: linalg.transpose {{.*}} permutation = [0, 3, 1, 2]
// ALL-NOT: conv_2d_nchw
func.func @dense_only(%arg0: tensor<1x2x5x5xf32>) -> tensor<1x3x5x5xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %wp = arith.constant dense<1.0> : tensor<3x2x1x1xf32>
  %0 = tensor.empty() : tensor<1x3x5x5xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x3x5x5xf32>) -> tensor<1x3x5x5xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%arg0, %wp : tensor<1x2x5x5xf32>, tensor<3x2x1x1xf32>) outs(%1 : tensor<1x3x5x5xf32>) -> tensor<1x3x5x5xf32>
  return %2 : tensor<1x3x5x5xf32>
}

// -----
// Must not fire: weights that are not constants (a function argument) stay as they are.
// CHECK-LABEL: func.func @runtime_weights
// ALL-LABEL: func.func @runtime_weights
// CHECK: linalg.depthwise_conv_2d_nchw_chw
// CHECK-NOT: linalg.transpose
func.func @runtime_weights(%arg0: tensor<1x2x5x5xf32>, %w: tensor<2x1x1xf32>) -> tensor<1x2x5x5xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<1x2x5x5xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %2 = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%arg0, %w : tensor<1x2x5x5xf32>, tensor<2x1x1xf32>) outs(%1 : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  return %2 : tensor<1x2x5x5xf32>
}

// -----

// A max pool in a function without depthwise convs (ResNet's stem): its convs stay NCHW,
// but the pool becomes the named NHWC pool (-inf pad redone on the NHWC input, -inf fill on
// an NHWC init) between transposes. IREE lowers the NCHW pool slowly (measured 1.19 ms vs
// 0.13 ms NHWC in ResNet-18).
// CHECK-LABEL: func.func @stem_max_pool
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK: %[[T:.*]] = linalg.transpose ins(%{{.*}} : tensor<1x2x6x6xf32>) {{.*}} permutation = [0, 2, 3, 1]
// CHECK: tensor.pad %[[T]] low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x3x3x2xf32>)
// CHECK: linalg.pooling_nhwc_max {{.*}} strides = dense<2>
// CHECK-SAME: -> tensor<1x3x3x2xf32>
// CHECK: linalg.transpose {{.*}} permutation = [0, 3, 1, 2]
// CHECK-NOT: pooling_nchw
func.func @stem_max_pool(%arg0: tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %w = arith.constant dense<1.0> : tensor<2x2x1x1xf32>
  %e = tensor.empty() : tensor<1x2x6x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%arg0, %w : tensor<1x2x6x6xf32>, tensor<2x2x1x1xf32>) outs(%f : tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  %p = tensor.pad %c low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %ninf : f32
  } : tensor<1x2x6x6xf32> to tensor<1x2x8x8xf32>
  %e2 = tensor.empty() : tensor<1x2x3x3xf32>
  %f2 = linalg.fill ins(%ninf : f32) outs(%e2 : tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %m = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%p, %win : tensor<1x2x8x8xf32>, tensor<3x3xf32>) outs(%f2 : tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  return %m : tensor<1x2x3x3xf32>
}

// -----

// pools=false leaves the pool alone.
// RUN: xgen-opt %s --split-input-file -p 'xgen-nhwc-convs{convs=depthwise pools=false}' | FileCheck %s --check-prefix=OFF
// OFF-LABEL: func.func @stem_max_pool
// OFF: linalg.pooling_nchw_max
// OFF-NOT: pooling_nhwc

// -----

// An int8 max pool (xgen-quantized-max-pool's) goes to NHWC too (the named NHWC max is
// signed: arith.maxsi); an int8 sum pool does not (its sum would wrap in i8).
// CHECK-LABEL: func.func @int8_pools
// CHECK: linalg.pooling_nhwc_max {{.*}} -> tensor<1x3x3x2xi8>
// CHECK: linalg.pooling_nchw_sum {{.*}} -> tensor<1x2x3x3xi8>
// OFF-LABEL: func.func @int8_pools
func.func @int8_pools(%x: tensor<1x2x8x8xi8>) -> (tensor<1x2x3x3xi8>, tensor<1x2x3x3xi8>) {
  %low = arith.constant -128 : i8
  %zero = arith.constant 0 : i8
  %e = tensor.empty() : tensor<1x2x3x3xi8>
  %f = linalg.fill ins(%low : i8) outs(%e : tensor<1x2x3x3xi8>) -> tensor<1x2x3x3xi8>
  %z = linalg.fill ins(%zero : i8) outs(%e : tensor<1x2x3x3xi8>) -> tensor<1x2x3x3xi8>
  %win = tensor.empty() : tensor<3x3xf32>
  %m = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %win : tensor<1x2x8x8xi8>, tensor<3x3xf32>) outs(%f : tensor<1x2x3x3xi8>) -> tensor<1x2x3x3xi8>
  %s = linalg.pooling_nchw_sum {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %win : tensor<1x2x8x8xi8>, tensor<3x3xf32>) outs(%z : tensor<1x2x3x3xi8>) -> tensor<1x2x3x3xi8>
  return %m, %s : tensor<1x2x3x3xi8>, tensor<1x2x3x3xi8>
}

// -----

// A pool of a generated kernel's output (a call: the kernel stores NCHW itself) stays NCHW:
// no transposes of IREE's cancel against the pair around it.
// CHECK-LABEL: func.func @pool_of_a_kernel
// CHECK: %[[K:.*]] = call @xgen_int8_pattern_1_call
// CHECK: %[[P:.*]] = tensor.pad %[[K]]
// CHECK: linalg.pooling_nchw_max {{.*}} ins(%[[P]], %{{.*}} : tensor<1x2x10x10xi8>, tensor<3x3xf32>)
// CHECK-NOT: linalg.transpose
func.func private @xgen_int8_pattern_1_call(tensor<1x2x8x8xi8>) -> tensor<1x2x8x8xi8>
func.func @pool_of_a_kernel(%x: tensor<1x2x8x8xi8>) -> tensor<1x2x4x4xi8> {
  %low = arith.constant -128 : i8
  %k = call @xgen_int8_pattern_1_call(%x) : (tensor<1x2x8x8xi8>) -> tensor<1x2x8x8xi8>
  %p = tensor.pad %k low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %low : i8
  } : tensor<1x2x8x8xi8> to tensor<1x2x10x10xi8>
  %e = tensor.empty() : tensor<1x2x4x4xi8>
  %f = linalg.fill ins(%low : i8) outs(%e : tensor<1x2x4x4xi8>) -> tensor<1x2x4x4xi8>
  %win = tensor.empty() : tensor<3x3xf32>
  %m = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%p, %win : tensor<1x2x10x10xi8>, tensor<3x3xf32>) outs(%f : tensor<1x2x4x4xi8>) -> tensor<1x2x4x4xi8>
  return %m : tensor<1x2x4x4xi8>
}
