// RUN: xgen-opt %s --split-input-file -p xgen-quantized-max-pool | FileCheck %s

// A QDQ model's stem pool: the conv's output quantized to floats, dequantized, padded with
// -inf, pooled, quantized again with the same scale and zero point. The first quantize
// writes int8, the pool takes the int8 values padded with -128, and replaces the second.
// CHECK-LABEL: func.func @stem_pool
// CHECK: %[[Q:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x64x8x8xi8>)
// CHECK: arith.fptosi {{.*}} : f32 to i8
// CHECK: %[[P:.*]] = tensor.pad %[[Q]] low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor.yield %{{.*}} : i8
// CHECK: %[[INIT:.*]] = linalg.fill ins(%{{.*}} : i8) outs(%{{.*}} : tensor<1x64x4x4xi8>)
// CHECK: %[[R:.*]] = linalg.pooling_nchw_max {{.*}} ins(%[[P]], %{{.*}} : tensor<1x64x10x10xi8>, tensor<3x3xf32>) outs(%[[INIT]] : tensor<1x64x4x4xi8>)
// CHECK-NOT: arith.subf
// CHECK: return %[[R]]
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @stem_pool(%x: tensor<1x64x8x8xf32>) -> tensor<1x64x4x4xi8> {
  %s = arith.constant 0.0625 : f32
  %zp = arith.constant -128.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x64x8x8xf32>
  %fq = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x64x8x8xf32>) outs(%e : tensor<1x64x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.divf %in, %s : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %zp : f32
    %3 = arith.maximumf %2, %lo : f32
    %4 = arith.minimumf %3, %hi : f32
    linalg.yield %4 : f32
  } -> tensor<1x64x8x8xf32>
  %dq = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%fq : tensor<1x64x8x8xf32>) outs(%e : tensor<1x64x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.subf %in, %zp : f32
    %1 = arith.mulf %0, %s : f32
    linalg.yield %1 : f32
  } -> tensor<1x64x8x8xf32>
  %padded = tensor.pad %dq low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %ninf : f32
  } : tensor<1x64x8x8xf32> to tensor<1x64x10x10xf32>
  %pe = tensor.empty() : tensor<1x64x4x4xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%pe : tensor<1x64x4x4xf32>) -> tensor<1x64x4x4xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %pool = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%padded, %win : tensor<1x64x10x10xf32>, tensor<3x3xf32>) outs(%init : tensor<1x64x4x4xf32>) -> tensor<1x64x4x4xf32>
  %qe = tensor.empty() : tensor<1x64x4x4xi8>
  %q = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%pool : tensor<1x64x4x4xf32>) outs(%qe : tensor<1x64x4x4xi8>) {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.divf %in, %s : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %zp : f32
    %3 = arith.maximumf %2, %lo : f32
    %4 = arith.minimumf %3, %hi : f32
    %5 = arith.fptosi %4 : f32 to i8
    linalg.yield %5 : i8
  } -> tensor<1x64x4x4xi8>
  return %q : tensor<1x64x4x4xi8>
}

// -----
// Must not fire: the quantize after the pool has another scale (0.125): the pooled maximum
// requantized is not the integer pooled.
// CHECK-LABEL: func.func @other_scale
// CHECK: linalg.pooling_nchw_max {{.*}} -> tensor<1x64x4x4xf32>
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @other_scale(%x: tensor<1x64x8x8xf32>) -> tensor<1x64x4x4xi8> {
  %s = arith.constant 0.0625 : f32
  %s2 = arith.constant 0.125 : f32
  %zp = arith.constant -128.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x64x8x8xf32>
  %fq = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x64x8x8xf32>) outs(%e : tensor<1x64x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.divf %in, %s : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %zp : f32
    %3 = arith.maximumf %2, %lo : f32
    %4 = arith.minimumf %3, %hi : f32
    linalg.yield %4 : f32
  } -> tensor<1x64x8x8xf32>
  %dq = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%fq : tensor<1x64x8x8xf32>) outs(%e : tensor<1x64x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.subf %in, %zp : f32
    %1 = arith.mulf %0, %s : f32
    linalg.yield %1 : f32
  } -> tensor<1x64x8x8xf32>
  %pe = tensor.empty() : tensor<1x64x4x4xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%pe : tensor<1x64x4x4xf32>) -> tensor<1x64x4x4xf32>
  %win = tensor.empty() : tensor<2x2xf32>
  %pool = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%dq, %win : tensor<1x64x8x8xf32>, tensor<2x2xf32>) outs(%init : tensor<1x64x4x4xf32>) -> tensor<1x64x4x4xf32>
  %qe = tensor.empty() : tensor<1x64x4x4xi8>
  %q = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%pool : tensor<1x64x4x4xf32>) outs(%qe : tensor<1x64x4x4xi8>) {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.divf %in, %s2 : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %zp : f32
    %3 = arith.maximumf %2, %lo : f32
    %4 = arith.minimumf %3, %hi : f32
    %5 = arith.fptosi %4 : f32 to i8
    linalg.yield %5 : i8
  } -> tensor<1x64x4x4xi8>
  return %q : tensor<1x64x4x4xi8>
}

// -----
// Must not fire: the dequantized values are also returned (read by something else).
// CHECK-LABEL: func.func @dequantize_also_read
// CHECK: linalg.pooling_nchw_max {{.*}} -> tensor<1x64x4x4xf32>
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @dequantize_also_read(%x: tensor<1x64x8x8xf32>) -> (tensor<1x64x4x4xi8>, tensor<1x64x8x8xf32>) {
  %s = arith.constant 0.0625 : f32
  %zp = arith.constant -128.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x64x8x8xf32>
  %fq = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x64x8x8xf32>) outs(%e : tensor<1x64x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.divf %in, %s : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %zp : f32
    %3 = arith.maximumf %2, %lo : f32
    %4 = arith.minimumf %3, %hi : f32
    linalg.yield %4 : f32
  } -> tensor<1x64x8x8xf32>
  %dq = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%fq : tensor<1x64x8x8xf32>) outs(%e : tensor<1x64x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.subf %in, %zp : f32
    %1 = arith.mulf %0, %s : f32
    linalg.yield %1 : f32
  } -> tensor<1x64x8x8xf32>
  %pe = tensor.empty() : tensor<1x64x4x4xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%pe : tensor<1x64x4x4xf32>) -> tensor<1x64x4x4xf32>
  %win = tensor.empty() : tensor<2x2xf32>
  %pool = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%dq, %win : tensor<1x64x8x8xf32>, tensor<2x2xf32>) outs(%init : tensor<1x64x4x4xf32>) -> tensor<1x64x4x4xf32>
  %qe = tensor.empty() : tensor<1x64x4x4xi8>
  %q = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%pool : tensor<1x64x4x4xf32>) outs(%qe : tensor<1x64x4x4xi8>) {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.divf %in, %s : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %zp : f32
    %3 = arith.maximumf %2, %lo : f32
    %4 = arith.minimumf %3, %hi : f32
    %5 = arith.fptosi %4 : f32 to i8
    linalg.yield %5 : i8
  } -> tensor<1x64x4x4xi8>
  return %q, %dq : tensor<1x64x4x4xi8>, tensor<1x64x8x8xf32>
}

// -----
// Must not fire: padded with 1.0, above the smallest dequantized value ((-128 - zp) * s = 0.0
// here): a window whose values are all below 1.0 pools to the pad's 1.0, which pooling the
// integers padded with -128 would not give.
// CHECK-LABEL: func.func @pad_with_zero
// CHECK: linalg.pooling_nchw_max {{.*}} -> tensor<1x64x4x4xf32>
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @pad_with_zero(%x: tensor<1x64x8x8xf32>) -> tensor<1x64x4x4xi8> {
  %s = arith.constant 0.0625 : f32
  %zp = arith.constant -128.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<1x64x8x8xf32>
  %fq = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x64x8x8xf32>) outs(%e : tensor<1x64x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.divf %in, %s : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %zp : f32
    %3 = arith.maximumf %2, %lo : f32
    %4 = arith.minimumf %3, %hi : f32
    linalg.yield %4 : f32
  } -> tensor<1x64x8x8xf32>
  %dq = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%fq : tensor<1x64x8x8xf32>) outs(%e : tensor<1x64x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.subf %in, %zp : f32
    %1 = arith.mulf %0, %s : f32
    linalg.yield %1 : f32
  } -> tensor<1x64x8x8xf32>
  %padded = tensor.pad %dq low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x64x8x8xf32> to tensor<1x64x10x10xf32>
  %pe = tensor.empty() : tensor<1x64x4x4xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%pe : tensor<1x64x4x4xf32>) -> tensor<1x64x4x4xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %pool = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%padded, %win : tensor<1x64x10x10xf32>, tensor<3x3xf32>) outs(%init : tensor<1x64x4x4xf32>) -> tensor<1x64x4x4xf32>
  %qe = tensor.empty() : tensor<1x64x4x4xi8>
  %q = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%pool : tensor<1x64x4x4xf32>) outs(%qe : tensor<1x64x4x4xi8>) {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.divf %in, %s : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %zp : f32
    %3 = arith.maximumf %2, %lo : f32
    %4 = arith.minimumf %3, %hi : f32
    %5 = arith.fptosi %4 : f32 to i8
    linalg.yield %5 : i8
  } -> tensor<1x64x4x4xi8>
  return %q : tensor<1x64x4x4xi8>
}


// -----
// The dequantize reads an int8 tensor (a generated kernel that requantized its conv itself):
// the pool takes that tensor, padded with -128.
// CHECK-LABEL: func.func @int8_source
// CHECK: %[[P:.*]] = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor.yield %{{.*}} : i8
// CHECK: %[[R:.*]] = linalg.pooling_nchw_max {{.*}} ins(%[[P]], %{{.*}} : tensor<1x64x10x10xi8>, tensor<3x3xf32>) outs(%{{.*}} : tensor<1x64x4x4xi8>)
// CHECK-NOT: arith.sitofp
// CHECK: return %[[R]]
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @int8_source(%x: tensor<1x64x8x8xi8>) -> tensor<1x64x4x4xi8> {
  %s = arith.constant 0.0625 : f32
  %zp = arith.constant -128.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x64x8x8xf32>
  %dq = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x64x8x8xi8>) outs(%e : tensor<1x64x8x8xf32>) {
  ^bb0(%in: i8, %out: f32):
    %f = arith.sitofp %in : i8 to f32
    %0 = arith.subf %f, %zp : f32
    %1 = arith.mulf %0, %s : f32
    linalg.yield %1 : f32
  } -> tensor<1x64x8x8xf32>
  %padded = tensor.pad %dq low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %ninf : f32
  } : tensor<1x64x8x8xf32> to tensor<1x64x10x10xf32>
  %pe = tensor.empty() : tensor<1x64x4x4xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%pe : tensor<1x64x4x4xf32>) -> tensor<1x64x4x4xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %pool = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%padded, %win : tensor<1x64x10x10xf32>, tensor<3x3xf32>) outs(%init : tensor<1x64x4x4xf32>) -> tensor<1x64x4x4xf32>
  %qe = tensor.empty() : tensor<1x64x4x4xi8>
  %q = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%pool : tensor<1x64x4x4xf32>) outs(%qe : tensor<1x64x4x4xi8>) {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.divf %in, %s : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %zp : f32
    %3 = arith.maximumf %2, %lo : f32
    %4 = arith.minimumf %3, %hi : f32
    %5 = arith.fptosi %4 : f32 to i8
    linalg.yield %5 : i8
  } -> tensor<1x64x4x4xi8>
  return %q : tensor<1x64x4x4xi8>
}
