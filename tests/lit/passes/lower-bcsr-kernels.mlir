// RUN: rm -rf %t.cache
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s -p "xgen-lower-bcsr-kernels{vector-bits=512}" | FileCheck %s
// RUN: cat %t.cache/kernels/*.c | FileCheck %s --check-prefix=SRC

// A compact block-sparse linear with the ReLU after it: one kernel call (the ReLU in the
// kernel), x transposed and padded to a whole token tile by the wrapper, one workgroup per
// block-row; the kernel indexes only the compact tables.
// CHECK-LABEL: func.func private @xgen_bcsr_1(tensor<128xf32>, tensor<9xf32>, tensor<16xf32>) -> tensor<12xf32>
// CHECK-SAME: %gx = arith.constant 2 : index
// CHECK: func.func private @xgen_bcsr_1_call
// CHECK: linalg.transpose
// CHECK: tensor.pad
// CHECK-LABEL: func.func @relu
// CHECK: %[[Y:.*]] = call @xgen_bcsr_1_call(%arg0, %{{.*}}) : (tensor<3x8xf32>, tensor<9xf32>) -> tensor<3x4xf32>
// CHECK-NOT: linalg.generic
// CHECK: return %[[Y]]
// SRC: static const int BLOCK_OFF[3] = {0,2,3};
// SRC: static const unsigned short COLS[5] = {1,2,5,1,2};
// SRC: { const vi16 e0_0 = ~(v <= SPLAT(0x0.0p+0f)); const v16 e0_1 = SEL(e0_0, v, SPLAT(0x0.0p+0f)); const v16 e0 = e0_1; v = e0; }
// SRC: case 2: run_block(
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @relu(%x: tensor<3x8xf32>) -> tensor<3x4xf32> {
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
  return %r : tensor<3x4xf32>
}
