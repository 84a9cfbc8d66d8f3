// RUN: rm -rf %t.cache
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s -p "xgen-lower-bcsr-kernels{vector-bits=512 threads=2}" | FileCheck %s
// RUN: cat %t.cache/kernels/xgen_bcsr_1-*.c | FileCheck %s --check-prefix=SRC
// RUN: cat %t.cache/kernels/xgen_bcsr_1_pack-*.c | FileCheck %s --check-prefix=PACK
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s -p "xgen-lower-bcsr-kernels{vector-bits=512 threads=1}" | FileCheck %s --check-prefix=ONE

// A compact block-sparse linear with the ReLU after it: a pack of x into one token tile of
// 16 (3 tokens, 8 columns, then the 16 NaN flags: 144 floats) and one kernel call (the ReLU
// in the kernel). Two block-rows: one workgroup each for two threads (both busy), one for
// both on one thread. The kernel indexes only the compact tables: per block-row its blocks
// in each chunk of columns, per block its (rows, columns) case and its columns as byte
// offsets into the chunk (column x 16 tokens x 4 bytes).
// CHECK: func.func private @xgen_bcsr_1(tensor<144xf32>, tensor<9xf32>) -> tensor<12xf32>{{.*}}%gx = arith.constant 2 : index
// CHECK: func.func private @xgen_bcsr_1_pack(tensor<24xf32>) -> tensor<144xf32>{{.*}}%gx = arith.constant 1 : index
// CHECK-LABEL: func.func private @xgen_bcsr_1_call
// CHECK: tensor.collapse_shape
// CHECK: call @xgen_bcsr_1_pack(%{{.*}}) : (tensor<24xf32>) -> tensor<144xf32>
// CHECK: call @xgen_bcsr_1(%{{.*}}, %{{.*}}) : (tensor<144xf32>, tensor<9xf32>) -> tensor<12xf32>
// CHECK-LABEL: func.func @relu
// CHECK: %[[Y:.*]] = call @xgen_bcsr_1_call(%arg0, %{{.*}}) : (tensor<3x8xf32>, tensor<9xf32>) -> tensor<3x4xf32>
// CHECK-NOT: linalg.generic
// CHECK: return %[[Y]]
// ONE: func.func private @xgen_bcsr_1(tensor<144xf32>, tensor<9xf32>) -> tensor<12xf32>{{.*}}%gx = arith.constant 1 : index
// SRC: static const int CHUNK_START[4] = {0,2,2,3};
// SRC: static const unsigned char CASE[3] = {1,0,1};
// SRC: static const unsigned short COLS[5] = {64,128,320,64,128};
// SRC: { const vi16 e0_0 = ~(v <= SPLAT(0x0.0p+0f)); const v16 e0_1 = SEL(e0_0, v, SPLAT(0x0.0p+0f)); const v16 e0 = e0_1; v = e0; }
// SRC: blk_1_1(
// SRC: blk_1_2(
// SRC: case 0: blk_1_1(
// SRC: case 1: blk_1_2(
// PACK: #define M 3
// PACK: #define MT 16
// PACK: transpose8(r);
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
