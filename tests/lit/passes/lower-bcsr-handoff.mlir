// RUN: rm -rf %t.cache
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s -p "xgen-lower-bcsr-kernels{vector-bits=512 threads=2}" | FileCheck %s
// RUN: cat %t.cache/kernels/xgen_bcsr_1-*.c | FileCheck %s --check-prefix=PRODUCER
// RUN: cat %t.cache/kernels/xgen_bcsr_2-*.c | FileCheck %s --check-prefix=CONSUMER

// Two kernels in a row, the first's result (after its fused ReLU) used only as the second's
// x: the first writes its output in the second's packed layout (one token tile of 16: 4
// columns x 16 = 64 floats, then one row of NaN flags per workgroup of the first, 2 x 16),
// and the second has no pack of its own; it adds up both rows of flags.
// @two_uses (its kernels come first): the ReLU's output is also returned, so each kernel
// packs its own x and writes y[M][N].
// CHECK-LABEL: func.func private @xgen_bcsr_4_call(%{{.*}}: tensor<3x4xf32>, %{{.*}}: tensor<6xf32>) -> tensor<3x2xf32>
// CHECK: call @xgen_bcsr_4_pack
// CHECK-LABEL: func.func private @xgen_bcsr_3_call(%{{.*}}: tensor<3x8xf32>, %{{.*}}: tensor<9xf32>) -> tensor<3x4xf32>
// CHECK: call @xgen_bcsr_3_pack
// CHECK: call @xgen_bcsr_3(%{{.*}}, %{{.*}}) : (tensor<144xf32>, tensor<9xf32>) -> tensor<12xf32>
// CHECK-LABEL: func.func private @xgen_bcsr_2_call(%{{.*}}: tensor<96xf32>, %{{.*}}: tensor<6xf32>) -> tensor<3x2xf32>
// CHECK-NOT: _pack
// CHECK: call @xgen_bcsr_2(%{{.*}}, %{{.*}}) : (tensor<96xf32>, tensor<6xf32>) -> tensor<6xf32>
// CHECK: tensor.expand_shape
// CHECK-LABEL: func.func private @xgen_bcsr_1_call(%{{.*}}: tensor<3x8xf32>, %{{.*}}: tensor<9xf32>) -> tensor<96xf32>
// CHECK: call @xgen_bcsr_1_pack(%{{.*}}) : (tensor<24xf32>) -> tensor<144xf32>
// CHECK: call @xgen_bcsr_1(%{{.*}}, %{{.*}}) : (tensor<144xf32>, tensor<9xf32>) -> tensor<96xf32>
// CHECK-NEXT: return
// CHECK-LABEL: func.func @chain
// CHECK: %[[P:.*]] = call @xgen_bcsr_1_call(%arg0, %{{.*}}) : (tensor<3x8xf32>, tensor<9xf32>) -> tensor<96xf32>
// CHECK: %[[Y:.*]] = call @xgen_bcsr_2_call(%[[P]], %{{.*}}) : (tensor<96xf32>, tensor<6xf32>) -> tensor<3x2xf32>
// CHECK: return %[[Y]]
// CHECK-LABEL: func.func @two_uses
// CHECK: %[[H:.*]] = call @xgen_bcsr_3_call
// CHECK: %[[Y2:.*]] = call @xgen_bcsr_4_call(%[[H]]
// CHECK: return %[[H]], %[[Y2]]
// PRODUCER: #define FLAG_ROWS 1
// PRODUCER: *(v16*)(out + (size_t)m0 * N + (size_t)n * MT + VL * j) = t;
// PRODUCER: *(v16*)(out + (size_t)N * MP + gx * MP + m0 + VL * j) = fl[j];
// PRODUCER-NOT: transpose8(r);
// CONSUMER: #define FLAG_ROWS 2
// CONSUMER: for (int f = 0; f < FLAG_ROWS; ++f)
// CONSUMER: transpose8(r);
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @chain(%x: tensor<3x8xf32>) -> tensor<3x2xf32> {
  %v = arith.constant dense<[1.0, 2.0, 5.0, 3.0, 4.0]> : tensor<5xf32>
  %b = arith.constant dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %bo = arith.constant dense<[0, 2, 3]> : tensor<3xi32>
  %ro = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
  %co = arith.constant dense<[0, 2, 3, 5]> : tensor<4xi32>
  %kr = arith.constant dense<[1, 0, 2]> : tensor<3xi32>
  %kc = arith.constant dense<[1, 2, 5, 1, 2]> : tensor<5xi32>
  %y = "xgen_sparse.bcsr_linear"(%x, %v, %b, %bo, %ro, %co, %kr, %kc) {block = [2, 4], weight_shape = [4, 8]} : (tensor<3x8xf32>, tensor<5xf32>, tensor<4xf32>, tensor<3xi32>, tensor<4xi32>, tensor<4xi32>, tensor<3xi32>, tensor<5xi32>) -> tensor<3x4xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x4xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %c = arith.cmpf ugt, %in, %z : f32
    %s = arith.select %c, %in, %z : f32
    linalg.yield %s : f32
  } -> tensor<3x4xf32>
  %v2 = arith.constant dense<[1.0, -2.0, 0.5, 3.0]> : tensor<4xf32>
  %b2 = arith.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %bo2 = arith.constant dense<[0, 1]> : tensor<2xi32>
  %ro2 = arith.constant dense<[0, 2]> : tensor<2xi32>
  %co2 = arith.constant dense<[0, 2]> : tensor<2xi32>
  %kr2 = arith.constant dense<[0, 1]> : tensor<2xi32>
  %kc2 = arith.constant dense<[1, 3]> : tensor<2xi32>
  %y2 = "xgen_sparse.bcsr_linear"(%r, %v2, %b2, %bo2, %ro2, %co2, %kr2, %kc2) {block = [2, 4], weight_shape = [2, 4]} : (tensor<3x4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<3x2xf32>
  return %y2 : tensor<3x2xf32>
}
func.func @two_uses(%x: tensor<3x8xf32>) -> (tensor<3x4xf32>, tensor<3x2xf32>) {
  %v = arith.constant dense<[1.0, 2.0, 5.0, 3.0, 4.0]> : tensor<5xf32>
  %b = arith.constant dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %bo = arith.constant dense<[0, 2, 3]> : tensor<3xi32>
  %ro = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
  %co = arith.constant dense<[0, 2, 3, 5]> : tensor<4xi32>
  %kr = arith.constant dense<[1, 0, 2]> : tensor<3xi32>
  %kc = arith.constant dense<[1, 2, 5, 1, 2]> : tensor<5xi32>
  %y = "xgen_sparse.bcsr_linear"(%x, %v, %b, %bo, %ro, %co, %kr, %kc) {block = [2, 4], weight_shape = [4, 8]} : (tensor<3x8xf32>, tensor<5xf32>, tensor<4xf32>, tensor<3xi32>, tensor<4xi32>, tensor<4xi32>, tensor<3xi32>, tensor<5xi32>) -> tensor<3x4xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x4xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %c = arith.cmpf ugt, %in, %z : f32
    %s = arith.select %c, %in, %z : f32
    linalg.yield %s : f32
  } -> tensor<3x4xf32>
  %v2 = arith.constant dense<[1.0, -2.0, 0.5, 3.0]> : tensor<4xf32>
  %b2 = arith.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %bo2 = arith.constant dense<[0, 1]> : tensor<2xi32>
  %ro2 = arith.constant dense<[0, 2]> : tensor<2xi32>
  %co2 = arith.constant dense<[0, 2]> : tensor<2xi32>
  %kr2 = arith.constant dense<[0, 1]> : tensor<2xi32>
  %kc2 = arith.constant dense<[1, 3]> : tensor<2xi32>
  %y2 = "xgen_sparse.bcsr_linear"(%r, %v2, %b2, %bo2, %ro2, %co2, %kr2, %kc2) {block = [2, 4], weight_shape = [2, 4]} : (tensor<3x4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<3x2xf32>
  return %r, %y2 : tensor<3x4xf32>, tensor<3x2xf32>
}
