// RUN: rm -rf %t.cache
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s -p "xgen-lower-bcsr-kernels{vector-bits=256 threads=2}" | FileCheck %s
// RUN: cat %t.cache/kernels/xgen_bcsr_1-*.c | FileCheck %s --check-prefix=COLUMNS
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s -p "xgen-lower-bcsr-kernels{vector-bits=256 threads=2 nan-checks=false}" -o /dev/null
// RUN: cat %t.cache/kernels/xgen_bcsr_1-*.c | FileCheck %s --check-prefix=NOFLAGS
// RUN: rm -rf %t.arm
// RUN: env XGEN_CACHE_DIR=%t.arm xgen-opt %s -p "xgen-lower-bcsr-kernels{cc=aarch64-linux-gnu-gcc cflags=-march=armv8-a,-ffixed-x18 object_format=embedded-elf-arm_64 vector-bits=128 threads=4}" | FileCheck %s --check-prefix=ARM
// RUN: cat %t.arm/kernels/xgen_bcsr_1-*.c | FileCheck %s --check-prefix=ARMSRC

// Blocks of 8 rows (one AVX2 vector) that keep all their rows (@whole_columns: block-row 0
// keeps columns 1, 3 and 4 over two blocks, block-row 1 columns 5 and 6): the whole-column
// kernel, outputs in the vectors, x read in place (no pack), one kept-column table for
// each panel. @some_rows, where one block keeps 4 of its 8 rows, must not take it: the
// row-and-column kernel with its pack.
// CHECK-LABEL: func.func private @xgen_bcsr_2_call(%{{.*}}: tensor<3x8xf32>, %{{.*}}: tensor<48xf32>) -> tensor<3x16xf32>
// CHECK: call @xgen_bcsr_2_pack
// CHECK-LABEL: func.func private @xgen_bcsr_1_call(%{{.*}}: tensor<3x8xf32>, %{{.*}}: tensor<56xf32>) -> tensor<3x16xf32>
// CHECK-NOT: _pack
// CHECK: call @xgen_bcsr_1(%{{.*}}, %{{.*}}) : (tensor<24xf32>, tensor<56xf32>) -> tensor<48xf32>
// CHECK-LABEL: func.func @whole_columns
// CHECK: call @xgen_bcsr_1_call(%arg0
// CHECK-NOT: xgen_sparse.bcsr_linear
// CHECK-LABEL: func.func @some_rows
// CHECK: call @xgen_bcsr_2_call(%arg0
// CHECK-NOT: xgen_sparse.bcsr_linear
// COLUMNS: whole-column blocks, 5 kept columns over 2 panels of 8
// COLUMNS: #define NR 8
// COLUMNS: static const int POFF[3] = {0,3,5};
// COLUMNS: static const unsigned short KEPT[5] = {1,3,4,5,6};
// COLUMNS: acc[r][j] += a * b[j];
// COLUMNS: fl[r] = flag_of(x + (size_t)r * K);
// NOFLAGS: fl[r] = 0.0f;
// The arm64 target's build (NEON: 4-float vectors): the 8-row blocks are two vectors of rows,
// still the whole-column kernel; the same kernels cross-compiled into aarch64 objects.
// ARM: func.func private @xgen_bcsr_2({{.*}}embedded-elf-arm_64
// ARM: func.func private @xgen_bcsr_2_pack(
// ARM: func.func private @xgen_bcsr_1({{.*}}embedded-elf-arm_64
// ARM-NOT: xgen_sparse.bcsr_linear
// ARMSRC: whole-column blocks, 5 kept columns over 2 panels of 8, tile 6x8
// ARMSRC: #define VL 4
// ARMSRC: #define NV 2
func.func @whole_columns(%x: tensor<3x8xf32>) -> tensor<3x16xf32> {
  %v = arith.constant dense<[-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0]> : tensor<40xf32>
  %b = arith.constant dense<[0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.10, 0.11, 0.12, 0.13, 0.14, 0.15]> : tensor<16xf32>
  %bo = arith.constant dense<[0, 2, 3]> : tensor<3xi32>
  %ro = arith.constant dense<[0, 8, 16, 24]> : tensor<4xi32>
  %co = arith.constant dense<[0, 2, 3, 5]> : tensor<4xi32>
  %kr = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]> : tensor<24xi32>
  %kc = arith.constant dense<[1, 3, 4, 5, 6]> : tensor<5xi32>
  %y = "xgen_sparse.bcsr_linear"(%x, %v, %b, %bo, %ro, %co, %kr, %kc) {block = [8, 4], weight_shape = [16, 8]} : (tensor<3x8xf32>, tensor<40xf32>, tensor<16xf32>, tensor<3xi32>, tensor<4xi32>, tensor<4xi32>, tensor<24xi32>, tensor<5xi32>) -> tensor<3x16xf32>
  return %y : tensor<3x16xf32>
}
func.func @some_rows(%x: tensor<3x8xf32>) -> tensor<3x16xf32> {
  %v = arith.constant dense<[-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0]> : tensor<32xf32>
  %b = arith.constant dense<[0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.10, 0.11, 0.12, 0.13, 0.14, 0.15]> : tensor<16xf32>
  %bo = arith.constant dense<[0, 2, 3]> : tensor<3xi32>
  %ro = arith.constant dense<[0, 8, 16, 20]> : tensor<4xi32>
  %co = arith.constant dense<[0, 2, 3, 5]> : tensor<4xi32>
  %kr = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]> : tensor<20xi32>
  %kc = arith.constant dense<[1, 3, 4, 5, 6]> : tensor<5xi32>
  %y = "xgen_sparse.bcsr_linear"(%x, %v, %b, %bo, %ro, %co, %kr, %kc) {block = [8, 4], weight_shape = [16, 8]} : (tensor<3x8xf32>, tensor<32xf32>, tensor<16xf32>, tensor<3xi32>, tensor<4xi32>, tensor<4xi32>, tensor<20xi32>, tensor<5xi32>) -> tensor<3x16xf32>
  return %y : tensor<3x16xf32>
}
