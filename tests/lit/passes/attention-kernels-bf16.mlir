// The attention kernel in a bf16 compile: on a 512-bit target its two products are bf16 dot
// products (vdpbf16ps: K^T packed as pairs of features, V as pairs of keys, Q and P rounded
// to pairs as used; f32 sums); on a 256-bit target, or in an fp32 compile, the f32 kernel.
// (The kernel is compiled for a Sapphire Rapids CPU: the test runs on any host.)
// RUN: rm -rf %t.bf16 %t.narrow %t.f32
// RUN: env XGEN_CACHE_DIR=%t.bf16 xgen-opt %s -p "xgen-attention-kernels{vector-bits=512 precision=bf16 cflags=-march=sapphirerapids}" | FileCheck %s
// RUN: cat %t.bf16/kernels/*.c | FileCheck %s --check-prefix=BF16
// RUN: env XGEN_CACHE_DIR=%t.narrow xgen-opt %s -p "xgen-attention-kernels{vector-bits=256 precision=bf16 cflags=-march=sapphirerapids}" | FileCheck %s
// RUN: cat %t.narrow/kernels/*.c | FileCheck %s --check-prefix=F32
// RUN: env XGEN_CACHE_DIR=%t.f32 xgen-opt %s -p "xgen-attention-kernels{vector-bits=512 cflags=-march=sapphirerapids}" | FileCheck %s
// RUN: cat %t.f32/kernels/*.c | FileCheck %s --check-prefix=F32
// An int8 compile keeps attention's float products in f32, or in bf16 with int8-float=bf16
// (the cpu target's int8_float_ops).
// RUN: rm -rf %t.i8 %t.i8bf16
// RUN: env XGEN_CACHE_DIR=%t.i8 xgen-opt %s -p "xgen-attention-kernels{vector-bits=512 precision=int8 cflags=-march=sapphirerapids}" | FileCheck %s
// RUN: cat %t.i8/kernels/*.c | FileCheck %s --check-prefix=F32
// RUN: env XGEN_CACHE_DIR=%t.i8bf16 xgen-opt %s -p "xgen-attention-kernels{vector-bits=512 precision=int8 int8-float=bf16 cflags=-march=sapphirerapids}" | FileCheck %s
// RUN: cat %t.i8bf16/kernels/*.c | FileCheck %s --check-prefix=BF16
// bf16 matrix tiles change neither the 256-bit target's kernel nor an fp32 compile's.
// RUN: rm -rf %t.narrow %t.f32
// RUN: env XGEN_CACHE_DIR=%t.narrow xgen-opt %s -p "xgen-attention-kernels{vector-bits=256 precision=bf16 bf16-tiles=1 cflags=-march=sapphirerapids}" | FileCheck %s
// RUN: cat %t.narrow/kernels/*.c | FileCheck %s --check-prefix=F32
// RUN: env XGEN_CACHE_DIR=%t.f32 xgen-opt %s -p "xgen-attention-kernels{vector-bits=512 bf16-tiles=1 cflags=-march=sapphirerapids}" | FileCheck %s
// RUN: cat %t.f32/kernels/*.c | FileCheck %s --check-prefix=F32
// CHECK-LABEL: func.func @attention
// CHECK: call @xgen_attention_{{[0-9]+}}_call(%arg0, %arg1)
// CHECK-NOT: linalg.batch_matmul
// 8 features: 4 pairs; 8 keys: 4 pairs of V rows
// BF16: attention, 2 heads, 8 x 8 keys, d 8, tile 12x32, {{.*}}, bf16 products
// BF16-DAG: #define DP 4
// BF16-DAG: #define JP ((TK + 1) / 2)
// BF16-DAG: uint32_t kt[DPA * TKP]
// BF16-DAG: #define DPA 4
// BF16-DAG: to_bf16(k + {{.*}}, row, D);
// BF16-DAG: _mm512_cvtneps_pbh(hi)
// BF16-DAG: qb[r][fp] = pair(
// BF16-DAG: to_bf16(s + (size_t)r * TKP, pb[r], TK);
// BF16-DAG: _mm512_dpbf16_ps((__m512)acc[r][n], a, b[n])
// BF16-NOT: amx_rows
// F32-NOT: bf16
// F32-NOT: dpbf16
// F32-NOT: _tile_
// F32: acc[r][n] += a * b[n];

#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map3 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
  func.func @attention(%arg0: tensor<8x48xf32>, %arg1: tensor<1x1x8x8xf32>) -> tensor<8x16xf32> {
    %c0_i64 = arith.constant 0 : i64
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 0xFF800000 : f32
    %cst_1 = arith.constant 0.35355339000000002 : f64
    %expanded = tensor.expand_shape %arg0 [[0, 1], [2, 3, 4]] output_shape [1, 8, 3, 2, 8] : tensor<8x48xf32> into tensor<1x8x3x2x8xf32>
    %0 = tensor.empty() : tensor<3x1x2x8x8xf32>
    %transposed = linalg.transpose ins(%expanded : tensor<1x8x3x2x8xf32>) outs(%0 : tensor<3x1x2x8x8xf32>) permutation = [2, 0, 3, 1, 4] 
    %extracted_slice = tensor.extract_slice %transposed[0, 0, 0, 0, 0] [1, 1, 2, 8, 8] [1, 1, 1, 1, 1] : tensor<3x1x2x8x8xf32> to tensor<1x1x2x8x8xf32>
    %extracted_slice_2 = tensor.extract_slice %transposed[1, 0, 0, 0, 0] [1, 1, 2, 8, 8] [1, 1, 1, 1, 1] : tensor<3x1x2x8x8xf32> to tensor<1x1x2x8x8xf32>
    %collapsed = tensor.collapse_shape %extracted_slice_2 [[0, 1], [2], [3], [4]] : tensor<1x1x2x8x8xf32> into tensor<1x2x8x8xf32>
    %extracted_slice_3 = tensor.extract_slice %transposed[2, 0, 0, 0, 0] [1, 1, 2, 8, 8] [1, 1, 1, 1, 1] : tensor<3x1x2x8x8xf32> to tensor<1x1x2x8x8xf32>
    %1 = tensor.empty() : tensor<1x2x8x8xf32>
    %transposed_4 = linalg.transpose ins(%collapsed : tensor<1x2x8x8xf32>) outs(%1 : tensor<1x2x8x8xf32>) permutation = [0, 1, 3, 2] 
    %collapsed_5 = tensor.collapse_shape %extracted_slice [[0, 1, 2], [3], [4]] : tensor<1x1x2x8x8xf32> into tensor<2x8x8xf32>
    %collapsed_6 = tensor.collapse_shape %transposed_4 [[0, 1], [2], [3]] : tensor<1x2x8x8xf32> into tensor<2x8x8xf32>
    %2 = tensor.empty() : tensor<2x8x8xf32>
    %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
    %4 = linalg.batch_matmul ins(%collapsed_5, %collapsed_6 : tensor<2x8x8xf32>, tensor<2x8x8xf32>) outs(%3 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
    %expanded_7 = tensor.expand_shape %4 [[0, 1], [2], [3]] output_shape [1, 2, 8, 8] : tensor<2x8x8xf32> into tensor<1x2x8x8xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_7 : tensor<1x2x8x8xf32>) outs(%1 : tensor<1x2x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %20 = arith.truncf %cst_1 : f64 to f32
      %21 = arith.mulf %in, %20 : f32
      linalg.yield %21 : f32
    } -> tensor<1x2x8x8xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%5, %arg1 : tensor<1x2x8x8xf32>, tensor<1x1x8x8xf32>) outs(%1 : tensor<1x2x8x8xf32>) {
    ^bb0(%in: f32, %in_14: f32, %out: f32):
      %20 = arith.addf %in, %in_14 : f32
      linalg.yield %20 : f32
    } -> tensor<1x2x8x8xf32>
    %7 = tensor.empty() : tensor<1x2x8xi64>
    %8 = linalg.fill ins(%c0_i64 : i64) outs(%7 : tensor<1x2x8xi64>) -> tensor<1x2x8xi64>
    %9 = tensor.empty() : tensor<1x2x8xf32>
    %10 = linalg.fill ins(%cst_0 : f32) outs(%9 : tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
    %11:2 = linalg.generic {indexing_maps = [#map, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%6 : tensor<1x2x8x8xf32>) outs(%10, %8 : tensor<1x2x8xf32>, tensor<1x2x8xi64>) {
    ^bb0(%in: f32, %out: f32, %out_14: i64):
      %20 = linalg.index 3 : index
      %21 = arith.index_cast %20 : index to i64
      %22 = arith.maximumf %in, %out : f32
      %23 = arith.cmpf ogt, %in, %out : f32
      %24 = arith.select %23, %21, %out_14 : i64
      linalg.yield %22, %24 : f32, i64
    } -> (tensor<1x2x8xf32>, tensor<1x2x8xi64>)
    %expanded_8 = tensor.expand_shape %11#0 [[0], [1], [2, 3]] output_shape [1, 2, 8, 1] : tensor<1x2x8xf32> into tensor<1x2x8x1xf32>
    %12 = linalg.generic {indexing_maps = [#map, #map3, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%6, %expanded_8 : tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) outs(%1 : tensor<1x2x8x8xf32>) {
    ^bb0(%in: f32, %in_14: f32, %out: f32):
      %20 = arith.subf %in, %in_14 : f32
      linalg.yield %20 : f32
    } -> tensor<1x2x8x8xf32>
    %13 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%12 : tensor<1x2x8x8xf32>) outs(%1 : tensor<1x2x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %20 = math.exp %in : f32
      linalg.yield %20 : f32
    } -> tensor<1x2x8x8xf32>
    %14 = tensor.empty() : tensor<1x2x8x1xf32>
    %15 = linalg.fill ins(%cst : f32) outs(%14 : tensor<1x2x8x1xf32>) -> tensor<1x2x8x1xf32>
    %16 = linalg.generic {indexing_maps = [#map, #map3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%13 : tensor<1x2x8x8xf32>) outs(%15 : tensor<1x2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %20 = arith.addf %in, %out : f32
      linalg.yield %20 : f32
    } -> tensor<1x2x8x1xf32>
    %17 = linalg.generic {indexing_maps = [#map, #map3, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%13, %16 : tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) outs(%1 : tensor<1x2x8x8xf32>) {
    ^bb0(%in: f32, %in_14: f32, %out: f32):
      %20 = arith.divf %in, %in_14 : f32
      linalg.yield %20 : f32
    } -> tensor<1x2x8x8xf32>
    %collapsed_9 = tensor.collapse_shape %17 [[0, 1], [2], [3]] : tensor<1x2x8x8xf32> into tensor<2x8x8xf32>
    %collapsed_10 = tensor.collapse_shape %extracted_slice_3 [[0, 1, 2], [3], [4]] : tensor<1x1x2x8x8xf32> into tensor<2x8x8xf32>
    %18 = linalg.batch_matmul ins(%collapsed_9, %collapsed_10 : tensor<2x8x8xf32>, tensor<2x8x8xf32>) outs(%3 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
    %expanded_11 = tensor.expand_shape %18 [[0, 1], [2], [3]] output_shape [1, 2, 8, 8] : tensor<2x8x8xf32> into tensor<1x2x8x8xf32>
    %19 = tensor.empty() : tensor<1x8x2x8xf32>
    %transposed_12 = linalg.transpose ins(%expanded_11 : tensor<1x2x8x8xf32>) outs(%19 : tensor<1x8x2x8xf32>) permutation = [0, 2, 1, 3] 
    %collapsed_13 = tensor.collapse_shape %transposed_12 [[0, 1], [2, 3]] : tensor<1x8x2x8xf32> into tensor<8x16xf32>
    return %collapsed_13 : tensor<8x16xf32>
  }

