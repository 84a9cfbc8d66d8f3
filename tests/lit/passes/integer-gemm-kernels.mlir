// int8 Linear layers as the exact 16-bit multiply-add kernel: the input converted once to
// int16 less its zero point (run time or constant), a zero input appended where K is odd, the
// weights less their zero point packed as int16 pairs, the accumulator's start (a bias
// quantized to i32) an i32 constant; the kernel's i32 result replaces the op's.
// RUN: rm -rf %t.cache
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p "xgen-integer-gemm-kernels{vector-bits=256}" | FileCheck %s
// RUN: cat %t.cache/kernels/*.c | FileCheck %s --check-prefix=SRC
// RUN: rm -rf %t.cache512
// RUN: env XGEN_CACHE_DIR=%t.cache512 xgen-opt %s --split-input-file -p "xgen-integer-gemm-kernels{vector-bits=512 cflags=-march=x86-64-v4}" | FileCheck %s --check-prefix=AVX512
// RUN: cat %t.cache512/kernels/*.c | FileCheck %s --check-prefix=SRC512
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p "xgen-integer-gemm-kernels{mode=float}" | FileCheck %s --check-prefix=OFF
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p "xgen-integer-gemm-kernels{vector-bits=128}" | FileCheck %s --check-prefix=OFF
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p "xgen-integer-gemm-kernels{vector-bits=256 verbose=true}" 2>&1 >/dev/null | FileCheck %s --check-prefix=WHY
// RUN: not xgen-opt %s --split-input-file -p "xgen-integer-gemm-kernels{mode=fast}" 2>&1 | FileCheck %s --check-prefix=BAD

// SRC-DAG: 2 x 4 -> 3, tile 6x16, int16 pairs
// SRC-DAG: 8 x 6 -> 5, tile 6x16, int16 pairs
// SRC-DAG: _mm256_madd_epi16
// With AVX-512 (built here, not run): 12 rows of two 16-lane vectors, vpmaddwd on 512 bits.
// AVX512-LABEL: func.func @dynamic_linear
// AVX512: call @xgen_igemm_1_call
// SRC512-DAG: 2 x 4 -> 3, tile 12x32, int16 pairs
// SRC512-DAG: _mm512_madd_epi16
// WHY: model.py:9:3: generated kernel
// WHY: model.py:20:3: generated kernel
// WHY: model.py:21:3: generated kernel
// WHY: model.py:70:3: generated kernel
// WHY: model.py:80:3: generated kernel
// WHY: model.py:81:3: generated kernel
// WHY: model.py:30:3: kept: the weights or their zero point are not constant
// WHY: model.py:40:3: kept: the accumulator is not a constant per column
// WHY: model.py:50:3: kept: weights more than 255 from their zero point
// WHY: model.py:60:3: kept: a 1x1 conv over image rows
// BAD: mode='fast' is not one of float, integer, convs, kernel
// OFF-NOT: xgen_igemm

// A quantized matmul with the input's zero point computed at run time (dynamic
// quantization), K odd (3): the conversion subtracts %zp and pads one zero input; the
// weights' zero point (1) is subtracted at compile time.
// CHECK-LABEL: func.func @dynamic_linear
// CHECK: %[[X:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<2x3xi8>) outs(%{{.*}} : tensor<2x3xi16>)
// CHECK: arith.extsi %{{.*}} : i8 to i32
// CHECK: arith.subi %{{.*}}, %arg1 : i32
// CHECK: arith.trunci %{{.*}} : i32 to i16
// CHECK: %[[P:.*]] = tensor.pad %[[X]] low[0, 0] high[0, 1]
// CHECK: call @xgen_igemm_1_call(%[[P]], %{{.*}}, %{{.*}}) : (tensor<2x4xi16>, tensor<{{[0-9]+}}xi16>, tensor<16xi32>) -> tensor<2x3xi32>
// CHECK-NOT: linalg.quantized_matmul
// OFF-LABEL: func.func @dynamic_linear
// OFF: linalg.quantized_matmul
func.func @dynamic_linear(%x: tensor<2x3xi8>, %zp: i32) -> tensor<2x3xi32> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %w = arith.constant dense<[[1, 2, 3], [-4, -5, -6], [7, 8, 9]]> : tensor<3x3xi8>
  %e = tensor.empty() : tensor<2x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<2x3xi32>) -> tensor<2x3xi32>
  %y = linalg.quantized_matmul ins(%x, %w, %zp, %c1 : tensor<2x3xi8>, tensor<3x3xi8>, i32, i32) outs(%i : tensor<2x3xi32>) -> tensor<2x3xi32> loc("model.py":9:3)
  return %y : tensor<2x3xi32>
}

// -----

// torch-mlir's int8 Linear: one weight broadcast over the batch, a bias quantized to i32
// broadcast into the accumulator. Two layers read one input and zero point: one conversion.
// CHECK-LABEL: func.func @batched_siblings
// CHECK: %[[R:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<2x4x6xi8> into tensor<8x6xi8>
// CHECK: %[[X:.*]] = linalg.generic {{.*}} ins(%[[R]] : tensor<8x6xi8>) outs(%{{.*}} : tensor<8x6xi16>)
// CHECK-NOT: tensor.pad
// CHECK: call @xgen_igemm_{{[0-9]+}}_call(%[[X]],
// CHECK-SAME: -> tensor<2x4x5xi32>
// CHECK: call @xgen_igemm_{{[0-9]+}}_call(%[[X]],
// CHECK-SAME: -> tensor<2x4x5xi32>
// CHECK-NOT: linalg.quantized_batch_matmul
#bcast = affine_map<(d0, d1, d2) -> (d1, d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @batched_siblings(%x: tensor<2x4x6xi8>) -> (tensor<2x4x5xi32>, tensor<2x4x5xi32>) {
  %zx = arith.constant -3 : i32
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<[[1, 2, 3, 4, 5], [0, 0, 0, 0, 1], [-1, -2, -3, -4, -5], [5, 4, 3, 2, 1], [9, 9, 9, 9, 9], [-9, 0, 9, 0, -9]]> : tensor<6x5xi8>
  %bias = arith.constant dense<[10, -20, 30, -40, 50]> : tensor<5xi32>
  %we = tensor.empty() : tensor<2x6x5xi8>
  %wb = linalg.generic {indexing_maps = [#bcast, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%w : tensor<6x5xi8>) outs(%we : tensor<2x6x5xi8>) {
  ^bb0(%in: i8, %out: i8):
    linalg.yield %in : i8
  } -> tensor<2x6x5xi8>
  %e = tensor.empty() : tensor<2x4x5xi32>
  %i = linalg.broadcast ins(%bias : tensor<5xi32>) outs(%e : tensor<2x4x5xi32>) dimensions = [0, 1]
  %y = linalg.quantized_batch_matmul ins(%x, %wb, %zx, %c0 : tensor<2x4x6xi8>, tensor<2x6x5xi8>, i32, i32) outs(%i : tensor<2x4x5xi32>) -> tensor<2x4x5xi32> loc("model.py":20:3)
  %y2 = linalg.quantized_batch_matmul ins(%x, %wb, %zx, %c0 : tensor<2x4x6xi8>, tensor<2x6x5xi8>, i32, i32) outs(%i : tensor<2x4x5xi32>) -> tensor<2x4x5xi32> loc("model.py":21:3)
  return %y, %y2 : tensor<2x4x5xi32>, tensor<2x4x5xi32>
}

// -----

// The dequantize fused: the i32 result's one user converts it to f32 (sitofp), then a scale
// computed at run time (the input's scale times each column's: one row, read at the columns)
// and a constant bias; the kernel returns the f32 output and no generic is left after it.
// CHECK-LABEL: func.func @dequantize_fused
// CHECK: %[[S:.*]] = linalg.generic {{.*}} ins(%arg2, %{{.*}} : tensor<f32>, tensor<3xf32>)
// CHECK: call @xgen_igemm_{{[0-9]+}}_call(%{{.*}}, %{{.*}}, %{{.*}}, %[[S]]) : (tensor<2x4xi16>, tensor<{{[0-9]+}}xi16>, tensor<32xi32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NOT: arith.sitofp
// CHECK-NOT: linalg.generic
// CHECK: return
// SRC-DAG: act(__builtin_convertvector((vs32)acc[r][j], v16), COLUMN(0), TENSOR(0))
#row = affine_map<(d0, d1) -> (d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#scalar = affine_map<(d0) -> ()>
#vec = affine_map<(d0) -> (d0)>
func.func @dequantize_fused(%x: tensor<2x4xi8>, %zp: i32, %sx: tensor<f32>) -> tensor<2x3xf32> {
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<[[1, 2, 3], [-4, -5, -6], [7, 8, 9], [0, 1, 0]]> : tensor<4x3xi8>
  %sw = arith.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %bias = arith.constant dense<[1.0, -2.0, 3.0]> : tensor<3xf32>
  %se = tensor.empty() : tensor<3xf32>
  %s = linalg.generic {indexing_maps = [#scalar, #vec, #vec], iterator_types = ["parallel"]} ins(%sx, %sw : tensor<f32>, tensor<3xf32>) outs(%se : tensor<3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<3xf32>
  %e = tensor.empty() : tensor<2x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<2x3xi32>) -> tensor<2x3xi32>
  %y = linalg.quantized_matmul ins(%x, %w, %zp, %c0 : tensor<2x4xi8>, tensor<4x3xi8>, i32, i32) outs(%i : tensor<2x3xi32>) -> tensor<2x3xi32> loc("model.py":70:3)
  %fe = tensor.empty() : tensor<2x3xf32>
  %f = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<2x3xi32>) outs(%fe : tensor<2x3xf32>) {
  ^bb0(%a: i32, %o: f32):
    %c = arith.sitofp %a : i32 to f32
    linalg.yield %c : f32
  } -> tensor<2x3xf32>
  %d = linalg.generic {indexing_maps = [#id2, #row, #row, #id2], iterator_types = ["parallel", "parallel"]} ins(%f, %s, %bias : tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) outs(%fe : tensor<2x3xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %p = arith.addf %m, %c : f32
    linalg.yield %p : f32
  } -> tensor<2x3xf32>
  return %d : tensor<2x3xf32>
}

// -----

// The dequantize not fused: the i32 result has a second user (the kernel returns i32, the
// sitofp stays); and a tensor read neither whole nor as one row ([1, 4, 5] over a batch of 2).
// CHECK-LABEL: func.func @dequantize_not_fused
// CHECK: %[[A:.*]] = call @xgen_igemm_{{[0-9]+}}_call({{.*}}) : ({{.*}}) -> tensor<2x3xi32>
// CHECK: arith.sitofp
// CHECK: call @xgen_igemm_{{[0-9]+}}_call({{.*}}) : ({{.*}}) -> tensor<2x4x5xi32>
// CHECK: arith.sitofp
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#bcast = affine_map<(d0, d1, d2) -> (d1, d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#batch1 = affine_map<(d0, d1, d2) -> (0, d1, d2)>
func.func @dequantize_not_fused(%x: tensor<2x4xi8>, %xb: tensor<2x4x6xi8>, %t: tensor<1x4x5xf32>) -> (tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x4x5xf32>) {
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<[[1, 2, 3], [-4, -5, -6], [7, 8, 9], [0, 1, 0]]> : tensor<4x3xi8>
  %e = tensor.empty() : tensor<2x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<2x3xi32>) -> tensor<2x3xi32>
  %y = linalg.quantized_matmul ins(%x, %w, %c0, %c0 : tensor<2x4xi8>, tensor<4x3xi8>, i32, i32) outs(%i : tensor<2x3xi32>) -> tensor<2x3xi32> loc("model.py":80:3)
  %fe = tensor.empty() : tensor<2x3xf32>
  %f = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<2x3xi32>) outs(%fe : tensor<2x3xf32>) {
  ^bb0(%a: i32, %o: f32):
    %c = arith.sitofp %a : i32 to f32
    linalg.yield %c : f32
  } -> tensor<2x3xf32>
  %g = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%f : tensor<2x3xf32>) outs(%fe : tensor<2x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %h = arith.mulf %a, %a : f32
    linalg.yield %h : f32
  } -> tensor<2x3xf32>
  %wb0 = arith.constant dense<3> : tensor<6x5xi8>
  %we = tensor.empty() : tensor<2x6x5xi8>
  %wb = linalg.generic {indexing_maps = [#bcast, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%wb0 : tensor<6x5xi8>) outs(%we : tensor<2x6x5xi8>) {
  ^bb0(%in: i8, %out: i8):
    linalg.yield %in : i8
  } -> tensor<2x6x5xi8>
  %eb = tensor.empty() : tensor<2x4x5xi32>
  %ib = linalg.fill ins(%c0 : i32) outs(%eb : tensor<2x4x5xi32>) -> tensor<2x4x5xi32>
  %yb = linalg.quantized_batch_matmul ins(%xb, %wb, %c0, %c0 : tensor<2x4x6xi8>, tensor<2x6x5xi8>, i32, i32) outs(%ib : tensor<2x4x5xi32>) -> tensor<2x4x5xi32> loc("model.py":81:3)
  %fbe = tensor.empty() : tensor<2x4x5xf32>
  %fb = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%yb : tensor<2x4x5xi32>) outs(%fbe : tensor<2x4x5xf32>) {
  ^bb0(%a: i32, %o: f32):
    %c = arith.sitofp %a : i32 to f32
    linalg.yield %c : f32
  } -> tensor<2x4x5xf32>
  %db = linalg.generic {indexing_maps = [#id3, #batch1, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%fb, %t : tensor<2x4x5xf32>, tensor<1x4x5xf32>) outs(%fbe : tensor<2x4x5xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.addf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<2x4x5xf32>
  return %g, %y, %db : tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x4x5xf32>
}

// -----

// Must not fire: weights computed at run time.
// CHECK-LABEL: func.func @runtime_weights
// CHECK: linalg.quantized_matmul
// CHECK-NOT: xgen_igemm
func.func @runtime_weights(%x: tensor<2x4xi8>, %w: tensor<4x3xi8>) -> tensor<2x3xi32> {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<2x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<2x3xi32>) -> tensor<2x3xi32>
  %y = linalg.quantized_matmul ins(%x, %w, %c0, %c0 : tensor<2x4xi8>, tensor<4x3xi8>, i32, i32) outs(%i : tensor<2x3xi32>) -> tensor<2x3xi32> loc("model.py":30:3)
  return %y : tensor<2x3xi32>
}

// -----

// Must not fire: an accumulator computed at run time.
// CHECK-LABEL: func.func @runtime_accumulator
// CHECK: linalg.quantized_matmul
// CHECK-NOT: xgen_igemm
func.func @runtime_accumulator(%x: tensor<2x4xi8>, %acc: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<1> : tensor<4x3xi8>
  %y = linalg.quantized_matmul ins(%x, %w, %c0, %c0 : tensor<2x4xi8>, tensor<4x3xi8>, i32, i32) outs(%acc : tensor<2x3xi32>) -> tensor<2x3xi32> loc("model.py":40:3)
  return %y : tensor<2x3xi32>
}

// -----

// Must not fire: weights 256 from their zero point (-128 less 128) do not fit the kernel's
// exactness bound.
// CHECK-LABEL: func.func @wide_weights
// CHECK: linalg.quantized_matmul
// CHECK-NOT: xgen_igemm
func.func @wide_weights(%x: tensor<2x4xi8>) -> tensor<2x3xi32> {
  %c0 = arith.constant 0 : i32
  %zw = arith.constant 128 : i32
  %w = arith.constant dense<-128> : tensor<4x3xi8>
  %e = tensor.empty() : tensor<2x3xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<2x3xi32>) -> tensor<2x3xi32>
  %y = linalg.quantized_matmul ins(%x, %w, %c0, %zw : tensor<2x4xi8>, tensor<4x3xi8>, i32, i32) outs(%i : tensor<2x3xi32>) -> tensor<2x3xi32> loc("model.py":50:3)
  return %y : tensor<2x3xi32>
}

// -----

// Must not fire: an f32 matmul (xgen-gemm-kernels' business).
// CHECK-LABEL: func.func @float_linear
// CHECK: linalg.matmul
// CHECK-NOT: xgen_igemm
func.func @float_linear(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %z = arith.constant 0.0 : f32
  %w = arith.constant dense<1.0> : tensor<4x3xf32>
  %e = tensor.empty() : tensor<2x3xf32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
  %y = linalg.matmul ins(%x, %w : tensor<2x4xf32>, tensor<4x3xf32>) outs(%i : tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// Must not fire: a 1x1 conv as torch-mlir writes it, a batch matmul over an image's pixel
// rows (NHWC [1, H, W, C] collapsed to [H, W, C]).
// CHECK-LABEL: func.func @image_rows
// CHECK: linalg.quantized_batch_matmul
// CHECK-NOT: xgen_igemm
#rows_b = affine_map<(d0, d1, d2) -> (d1, d2)>
#rows_i = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @image_rows(%img: tensor<1x4x4x6xi8>) -> tensor<4x4x5xi32> {
  %c0 = arith.constant 0 : i32
  %x = tensor.collapse_shape %img [[0, 1], [2], [3]] : tensor<1x4x4x6xi8> into tensor<4x4x6xi8>
  %w = arith.constant dense<3> : tensor<6x5xi8>
  %we = tensor.empty() : tensor<4x6x5xi8>
  %wb = linalg.generic {indexing_maps = [#rows_b, #rows_i], iterator_types = ["parallel", "parallel", "parallel"]} ins(%w : tensor<6x5xi8>) outs(%we : tensor<4x6x5xi8>) {
  ^bb0(%in: i8, %out: i8):
    linalg.yield %in : i8
  } -> tensor<4x6x5xi8>
  %e = tensor.empty() : tensor<4x4x5xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<4x4x5xi32>) -> tensor<4x4x5xi32>
  %y = linalg.quantized_batch_matmul ins(%x, %wb, %c0, %c0 : tensor<4x4x6xi8>, tensor<4x6x5xi8>, i32, i32) outs(%i : tensor<4x4x5xi32>) -> tensor<4x4x5xi32> loc("model.py":60:3)
  return %y : tensor<4x4x5xi32>
}
