// RUN: xgen-opt %s --split-input-file -p xgen-split-reductions | FileCheck %s

// EfficientNet-B0's first squeeze-excite pool, NHWC: 12544 pixels for each of 32 channels.
// H (input dim 1, the outermost reduced one) splits into 16 chunks of 7 rows; the chunk sums
// have the chunk as a new leading parallel loop, then one sum over the chunks into the
// original init.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d0, d3, d4, d2)>
// CHECK-DAG: #[[PART:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, 0, 0)>
// CHECK-DAG: #[[ID5:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
// CHECK-DAG: #[[DROP:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d2, d3, d4)>
// CHECK-LABEL: func.func @nhwc_pool
// CHECK: %[[INIT:.*]] = linalg.fill {{.*}} -> tensor<1x32x1x1xf32>
// CHECK: %[[X:.*]] = tensor.expand_shape %arg0 {{\[\[}}0], [1, 2], [3], [4]] output_shape [1, 16, 7, 112, 32]
// CHECK: %[[Z:.*]] = linalg.fill {{.*}} -> tensor<16x1x32x1x1xf32>
// CHECK: %[[P:.*]] = linalg.generic {indexing_maps = [#[[IN]], #[[PART]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%[[X]] : tensor<1x16x7x112x32xf32>) outs(%[[Z]] : tensor<16x1x32x1x1xf32>)
// CHECK: arith.addf
// CHECK: %[[S:.*]] = linalg.generic {indexing_maps = [#[[ID5]], #[[DROP]]], iterator_types = ["reduction", "parallel", "parallel", "parallel", "parallel"]} ins(%[[P]] : tensor<16x1x32x1x1xf32>) outs(%[[INIT]] : tensor<1x32x1x1xf32>)
// CHECK: return %[[S]]
#nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
#pool = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>
func.func @nhwc_pool(%x: tensor<1x112x112x32xf32>) -> tensor<1x32x1x1xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x32x1x1xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x32x1x1xf32>) -> tensor<1x32x1x1xf32>
  %r = linalg.generic {indexing_maps = [#nhwc, #pool], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%x : tensor<1x112x112x32xf32>) outs(%z : tensor<1x32x1x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<1x32x1x1xf32>
  return %r : tensor<1x32x1x1xf32>
}

// -----
// A 2-D row sum with the reduction first: 4096 rows of 8 columns; 4096 = 16 x 256.
// CHECK-LABEL: func.func @column_sums
// CHECK: tensor.expand_shape %arg0 {{\[\[}}0, 1], [2]] output_shape [16, 256, 8]
// CHECK: iterator_types = ["parallel", "reduction", "parallel"]} {{.*}} outs(%{{.*}} : tensor<16x8xf32>)
// CHECK: iterator_types = ["reduction", "parallel"]} {{.*}} outs(%{{.*}} : tensor<8xf32>)
func.func @column_sums(%x: tensor<4096x8xf32>, %init: tensor<8xf32>) -> tensor<8xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<4096x8xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %out, %in : f32
    linalg.yield %a : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----
// Must not fire: 14x14 = 196 pixels per channel (below min-elems).
// CHECK-LABEL: func.func @short_pool
// CHECK-NOT: tensor.expand_shape
// CHECK: linalg.generic
// CHECK-NOT: linalg.generic
#nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
#pool = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>
func.func @short_pool(%x: tensor<1x14x14x32xf32>, %z: tensor<1x32x1x1xf32>) -> tensor<1x32x1x1xf32> {
  %r = linalg.generic {indexing_maps = [#nhwc, #pool], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%x : tensor<1x14x14x32xf32>) outs(%z : tensor<1x32x1x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<1x32x1x1xf32>
  return %r : tensor<1x32x1x1xf32>
}

// -----
// Must not fire: 144 outputs (over max-outputs; IREE's own workgroups do well there).
// CHECK-LABEL: func.func @many_outputs
// CHECK-NOT: tensor.expand_shape
#nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
#pool = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>
func.func @many_outputs(%x: tensor<1x56x56x144xf32>, %z: tensor<1x144x1x1xf32>) -> tensor<1x144x1x1xf32> {
  %r = linalg.generic {indexing_maps = [#nhwc, #pool], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%x : tensor<1x56x56x144xf32>) outs(%z : tensor<1x144x1x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<1x144x1x1xf32>
  return %r : tensor<1x144x1x1xf32>
}

// -----
// Dynamic quantization's range of an activation: the max over all of a 1x128x384 tensor into
// a 0-d init. The unit batch dim is skipped: the 128 rows split into 16 chunks of 8, each
// chunk's max starting from -inf, then the max over the chunks into the original init.
// CHECK-LABEL: func.func @activation_max
// CHECK: tensor.expand_shape %arg0 {{\[\[}}0], [1, 2], [3]] output_shape [1, 16, 8, 384]
// CHECK: %[[NEG:.*]] = arith.constant 0xFF800000 : f32
// CHECK: linalg.fill ins(%[[NEG]] : f32) outs({{.*}} : tensor<16xf32>)
// CHECK: %[[P:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "reduction", "reduction"]
// CHECK: arith.maximumf
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[P]] : tensor<16xf32>) outs(%arg1 : tensor<f32>)
// CHECK: arith.maximumf
func.func @activation_max(%x: tensor<1x128x384xf32>, %init: tensor<f32>) -> tensor<f32> {
  %m = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> ()>], iterator_types = ["reduction", "reduction", "reduction"]} ins(%x : tensor<1x128x384xf32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.maximumf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  return %m : tensor<f32>
}

// -----
// The min of a 4096x8 tensor per column splits the same way, from +inf.
// CHECK-LABEL: func.func @column_min
// CHECK: tensor.expand_shape
// CHECK: arith.constant 0x7F800000 : f32
// CHECK-COUNT-2: arith.minimumf
func.func @column_min(%x: tensor<4096x8xf32>, %init: tensor<8xf32>) -> tensor<8xf32> {
  %m = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<4096x8xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.minimumf %out, %in : f32
    linalg.yield %a : f32
  } -> tensor<8xf32>
  return %m : tensor<8xf32>
}

// -----
// Must not fire: a sum of squares (the body is not out + in), a product (not a combiner split).
// CHECK-LABEL: func.func @not_a_plain_sum
// CHECK-NOT: tensor.expand_shape
func.func @not_a_plain_sum(%x: tensor<4096x8xf32>, %init: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %m = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<4096x8xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.mulf %out, %in : f32
    linalg.yield %a : f32
  } -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<4096x8xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %q = arith.mulf %in, %in : f32
    %a = arith.addf %out, %q : f32
    linalg.yield %a : f32
  } -> tensor<8xf32>
  return %m, %s : tensor<8xf32>, tensor<8xf32>
}

// -----
// Must not fire: 4099 rows (prime) cannot be cut into 4 or more equal chunks.
// CHECK-LABEL: func.func @prime_rows
// CHECK-NOT: tensor.expand_shape
func.func @prime_rows(%x: tensor<4099x8xf32>, %init: tensor<8xf32>) -> tensor<8xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<4099x8xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %out, %in : f32
    linalg.yield %a : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----
// ONNX's GlobalAveragePool after xgen-nhwc-convs: a named NHWC sum pool whose window is the
// whole 112x112 image. It is the same sum, and is split the same way.
// CHECK-LABEL: func.func @global_named_pool
// CHECK-NOT: linalg.pooling_nhwc_sum
// CHECK: tensor.expand_shape %arg0 {{\[\[}}0], [1, 2], [3], [4]] output_shape [1, 16, 7, 112, 32]
// CHECK: iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} {{.*}} outs(%{{.*}} : tensor<16x1x1x1x32xf32>)
// CHECK: iterator_types = ["reduction", "parallel", "parallel", "parallel", "parallel"]} {{.*}} outs(%{{.*}} : tensor<1x1x1x32xf32>)
func.func @global_named_pool(%x: tensor<1x112x112x32xf32>, %z: tensor<1x1x1x32xf32>) -> tensor<1x1x1x32xf32> {
  %win = tensor.empty() : tensor<112x112xf32>
  %p = linalg.pooling_nhwc_sum {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %win : tensor<1x112x112x32xf32>, tensor<112x112xf32>) outs(%z : tensor<1x1x1x32xf32>) -> tensor<1x1x1x32xf32>
  return %p : tensor<1x1x1x32xf32>
}

// -----
// Must not fire: a 2x2 sum pool (a window, not the whole image).
// CHECK-LABEL: func.func @windowed_pool
// CHECK: linalg.pooling_nhwc_sum
// CHECK-NOT: linalg.generic
func.func @windowed_pool(%x: tensor<1x112x112x32xf32>, %z: tensor<1x56x56x32xf32>) -> tensor<1x56x56x32xf32> {
  %win = tensor.empty() : tensor<2x2xf32>
  %p = linalg.pooling_nhwc_sum {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %win : tensor<1x112x112x32xf32>, tensor<2x2xf32>) outs(%z : tensor<1x56x56x32xf32>) -> tensor<1x56x56x32xf32>
  return %p : tensor<1x56x56x32xf32>
}
