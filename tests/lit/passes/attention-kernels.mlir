// RUN: rm -rf %t.cache
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p "xgen-attention-kernels{vector-bits=256}" | FileCheck %s
// RUN: cat %t.cache/kernels/*.c | FileCheck %s --check-prefix=SRC
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p "xgen-attention-kernels{vector-bits=256 enable=false}" | FileCheck %s --check-prefix=OFF
// RUN: rm -rf %t.wide
// RUN: env XGEN_CACHE_DIR=%t.wide xgen-opt %s --split-input-file -p "xgen-attention-kernels{vector-bits=512}" | FileCheck %s --check-prefix=WIDE
// RUN: cat %t.wide/kernels/*.c | FileCheck %s --check-prefix=WIDESRC

// Attention as torch-mlir lowers it (a fused QKV [T, 3 x heads x D] viewed per head, Q K^T,
// a scale and a mask broadcast over the heads, the softmax's five generics, P V, back to
// [T, heads x D]): one call of the generated kernel, nothing of the chain left.
// CHECK-LABEL: func.func @attention
// CHECK: %[[O:.*]] = call @xgen_attention_{{[0-9]+}}_call(%arg0, %arg1) : (tensor<8x48xf32>, tensor<1x1x8x8xf32>) -> tensor<8x16xf32>
// CHECK-NOT: linalg.
// CHECK: return %[[O]]
// The kernel reads Q, K, V in place (Q of head h, token i, feature f at h*8 + i*48 + f; K at
// 16 more; V at 32 more), the mask at i*8 + j for every head, and writes O at h*8 + i*16.
// WIDESRC-DAG: #define DV 16
// WIDESRC-DAG: else for (int c = 0; c < D - VL * (fv + n); ++c)
// SRC-DAG: attention, 2 heads, 8 x 8 keys, d 8, tile 6x16
// SRC-DAG: q[(0 + (size_t)(h) * 8 + (size_t)(i + r) * 48 + (size_t)(f) * 1)]
// SRC-DAG: k[(16 + (size_t)(h) * 8 + (size_t)(j) * 48 + (size_t)(f) * 1)]
// SRC-DAG: TLOAD(t0, (0 + (size_t)(h) * 0 + (size_t)(i + r) * 8 + (size_t)(VL * (jv + n)) * 1))
// SRC-DAG: (0 + (size_t)(h) * 8 + (size_t)(i + r) * 16 + (size_t)(VL * (fv + n)) * 1)
// With enable=false nothing changes.
// OFF-LABEL: func.func @attention
// OFF: linalg.batch_matmul
// OFF: linalg.batch_matmul
// OFF-NOT: xgen_attention
// At 512 bits 8 features per head are half a vector: V is packed into whole (zero-padded)
// vectors on the stack and the output's rows are stored in part.
// WIDE-LABEL: func.func @attention
// WIDE: call @xgen_attention_{{[0-9]+}}_call
// WIDE-NOT: linalg.batch_matmul
// WIDE: return
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

// -----

// A row sum where the softmax takes the row maximum: not a softmax, left alone.
// CHECK-LABEL: func.func @no_softmax_max
// CHECK-NOT: xgen_attention
// CHECK: linalg.batch_matmul
// CHECK: linalg.batch_matmul
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map3 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
  func.func @no_softmax_max(%arg0: tensor<8x48xf32>, %arg1: tensor<1x1x8x8xf32>) -> tensor<8x16xf32> {
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
      %22 = arith.addf %in, %out : f32
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

// -----

// The maximum starts from 0, not -inf (max(0, row) is another function): left alone.
// CHECK-LABEL: func.func @max_from_zero
// CHECK-NOT: xgen_attention
// CHECK: linalg.batch_matmul
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map3 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
  func.func @max_from_zero(%arg0: tensor<8x48xf32>, %arg1: tensor<1x1x8x8xf32>) -> tensor<8x16xf32> {
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
    %10 = linalg.fill ins(%cst : f32) outs(%9 : tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
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
