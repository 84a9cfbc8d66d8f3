// Pattern-pruned int8 convs as the VNNI pattern kernel: the input padded with its zero point
// (the conv's own pad taken in), split into stride x stride phases, one kernel call whose i32
// result replaces the conv's. Built with an Ice Lake server's flags (VNNI, VBMI), not run.
// RUN: rm -rf %t.cache %t.arm
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p "xgen-int8-pattern-kernels{cflags=-march=icelake-server}" | FileCheck %s
// With AMX-INT8 (Sapphire Rapids) only under enable=always: the library's s8 tiles otherwise
// (tuned, the default, with no tuning records, and vnni: the rule).
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p "xgen-int8-pattern-kernels{enable=vnni cflags=-march=sapphirerapids}" | FileCheck %s --check-prefix=OFF
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p "xgen-int8-pattern-kernels{cflags=-march=sapphirerapids}" | FileCheck %s --check-prefix=OFF
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p "xgen-int8-pattern-kernels{enable=always cflags=-march=sapphirerapids}" | FileCheck %s --check-prefix=AMX
// AMX-LABEL: func.func @stride1
// AMX: call @xgen_int8_pattern_1_call
// RUN: not xgen-opt %s --split-input-file -p "xgen-int8-pattern-kernels{enable=yes}" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: enable must be one of tuned, vnni, always, false, got 'yes'
// RUN: cat %t.cache/kernels/*.c | FileCheck %s --check-prefix=SRC
// RUN: cat %t.cache/kernels/*.c | FileCheck %s --check-prefix=SRCQ
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p "xgen-int8-pattern-kernels{epilogues=false cflags=-march=icelake-server}" | FileCheck %s --check-prefix=EPI
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p "xgen-int8-pattern-kernels{cflags=-march=icelake-server verbose=true}" 2>&1 >/dev/null | FileCheck %s --check-prefix=WHY
// A target without VNNI (x86-64-v4: AVX-512 alone), or enable=false: nothing fires.
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p "xgen-int8-pattern-kernels{cflags=-march=x86-64-v4}" | FileCheck %s --check-prefix=OFF
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p "xgen-int8-pattern-kernels{enable=false cflags=-march=icelake-server}" | FileCheck %s --check-prefix=OFF
// aarch64 with the dot product (+dotprod in the target's features): the sdot kernel, whose
// 8-pixel steps read 8 bytes more past the last row and whose weights end in 64 bytes of zeros
// that a step's weight loads may reach; without +dotprod nothing fires.
// RUN: env XGEN_CACHE_DIR=%t.arm xgen-opt %s --split-input-file -p "xgen-int8-pattern-kernels{enable=always features=+neon,+dotprod cc=aarch64-linux-gnu-gcc cflags=-march=armv8-a,-ffixed-x18 object_format=embedded-elf-arm_64}" | FileCheck %s --check-prefix=ARM
// RUN: cat %t.arm/kernels/*.c | FileCheck %s --check-prefix=ARMSRC
// RUN: env XGEN_CACHE_DIR=%t.arm xgen-opt %s --split-input-file -p "xgen-int8-pattern-kernels{enable=always features=+neon cc=aarch64-linux-gnu-gcc cflags=-march=armv8-a,-ffixed-x18 object_format=embedded-elf-arm_64}" | FileCheck %s --check-prefix=OFF
// ARM-LABEL: func.func @stride1
// ARM: call @xgen_int8_pattern_1_call(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<266xi8>, tensor<192xi8>, tensor<16xi32>) -> tensor<1x16x6x6xi32>
// ARMSRC-DAG: vdotq_laneq_s32
// ARMSRC-DAG: vzip1q_s8
// ARMSRC-NOT: _mm512
// integer_contractions=float: the user asked for every integer contraction in f32.
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p "xgen-int8-pattern-kernels{mode=float cflags=-march=icelake-server}" | FileCheck %s --check-prefix=OFF

// SRC-DAG: vpdpbusd
// SRC-DAG: _mm512_permutexvar_epi8
// SRC-DAG: _mm512_maskz_compress_epi32
// WHY: model.py:10:3: kernel, 2 patterns, density 0.222, 1 groups
// WHY: model.py:20:3: kernel, 2 patterns, density 0.222, 1 groups
// WHY: model.py:40:3: kernel, 2 patterns, density 0.222, 1 groups
// WHY: model.py:30:3: stays: the weights' zero point is not 0
// WHY: model.py:50:3: stays: the input's zero point is not a constant
// OFF-NOT: xgen_int8_pattern

// Stride 1: the conv's pad (value -3, the zero point) and the phase pad are one pad; the
// accumulator's start (7) goes into the kernel's start values.
// CHECK-LABEL: func.func @stride1
// CHECK: %[[P:.*]] = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor.yield %c-3_i8{{.*}} : i8
// CHECK: %[[F:.*]] = tensor.collapse_shape %[[P]] {{\[\[}}0, 1, 2, 3]] : tensor<1x4x8x8xi8> into tensor<256xi8>
// CHECK: %[[S:.*]] = tensor.pad %[[F]] low[0] high[2]
// CHECK: tensor.yield %c-3_i8{{.*}} : i8
// CHECK: call @xgen_int8_pattern_1_call(%[[S]], %{{.*}}, %{{.*}}) : (tensor<258xi8>, tensor<128xi8>, tensor<16xi32>) -> tensor<1x16x6x6xi32>
// CHECK-NOT: linalg.conv_2d_nchw_fchw_q
func.func @stride1(%x: tensor<1x4x6x6xi8>) -> tensor<1x16x6x6xi32> {
  %zp = arith.constant -3 : i32
  %zp8 = arith.constant -3 : i8
  %c0 = arith.constant 0 : i32
  %c7 = arith.constant 7 : i32
  %w = arith.constant dense<[[[[ 85,  64,   0],   [ -8,  -2,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -50, -61],   [  0, -56,  93]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 40, -85,   0],   [-84, -18,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   8,  30],   [  0,  -1, -13]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 26, -61,   0],   [-80, -98,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  84,  69],   [  0, -58,  72]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-42, -49,   0],   [-53,  36,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  72,  59],   [  0,  33, -89]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ -5,  -9,   0],   [-32,  24,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  67,  34],   [  0,  89,  79]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 57,  41,   0],   [ 62, -58,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -89,  20],   [  0, -64, -11]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-41,  44,   0],   [ -5, -43,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  60, -94],   [  0, -41, -50]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ -8, -42,   0],   [ 92, -93,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -97,  92],   [  0, -12, -86]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-36, -15,   0],   [ 38,  82,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -89,  80],   [  0,  43, -54]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-69,  -5,   0],   [-50,   3,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -10, -76],   [  0, -27,   7]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 65, -35,   0],   [ 14,  56,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  21,  88],   [  0, -78, -29]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-76,  81,   0],   [-45, -41,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  71, -95],   [  0, -23,  59]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-82,  41,   0],   [ 59, -82,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  12,   1],   [  0,  26, -65]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 63, -94,   0],   [ 41,   6,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -32, -49],   [  0,   1, -31]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-64,  88,   0],   [ 57,  99,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -27, -88],   [  0, -53, -95]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 63,  86,   0],   [-11,  67,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -68, -40],   [  0,  71, -58]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]]]> : tensor<16x4x3x3xi8>
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zp8 : i8
  } : tensor<1x4x6x6xi8> to tensor<1x4x8x8xi8>
  %e = tensor.empty() : tensor<1x16x6x6xi32>
  %i = linalg.fill ins(%c7 : i32) outs(%e : tensor<1x16x6x6xi32>) -> tensor<1x16x6x6xi32>
  %y = linalg.conv_2d_nchw_fchw_q {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%p, %w, %zp, %c0 : tensor<1x4x8x8xi8>, tensor<16x4x3x3xi8>, i32, i32) outs(%i : tensor<1x16x6x6xi32>) -> tensor<1x16x6x6xi32> loc("model.py":10:3)
  return %y : tensor<1x16x6x6xi32>
}

// -----

// Stride 2: the padded input (9 x 9) padded on to whole 2 x 2 phases (10 x 10) and split into
// them, phase-major.
// CHECK-LABEL: func.func @stride2
// CHECK: tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 2, 2]
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1], [2, 3], [4, 5]] output_shape [1, 4, 5, 2, 5, 2]
// CHECK: linalg.transpose ins(%{{.*}} : tensor<1x4x5x2x5x2xi8>) outs(%{{.*}} : tensor<1x2x2x4x5x5xi8>) permutation = [0, 3, 5, 1, 2, 4]
// CHECK: call @xgen_int8_pattern_1_call({{.*}}) -> tensor<1x16x4x4xi32>
// CHECK-NOT: linalg.conv_2d_nchw_fchw_q
func.func @stride2(%x: tensor<1x4x7x7xi8>) -> tensor<1x16x4x4xi32> {
  %zp = arith.constant 5 : i32
  %zp8 = arith.constant 5 : i8
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<[[[[ 85,  64,   0],   [ -8,  -2,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -50, -61],   [  0, -56,  93]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 40, -85,   0],   [-84, -18,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   8,  30],   [  0,  -1, -13]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 26, -61,   0],   [-80, -98,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  84,  69],   [  0, -58,  72]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-42, -49,   0],   [-53,  36,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  72,  59],   [  0,  33, -89]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ -5,  -9,   0],   [-32,  24,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  67,  34],   [  0,  89,  79]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 57,  41,   0],   [ 62, -58,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -89,  20],   [  0, -64, -11]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-41,  44,   0],   [ -5, -43,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  60, -94],   [  0, -41, -50]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ -8, -42,   0],   [ 92, -93,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -97,  92],   [  0, -12, -86]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-36, -15,   0],   [ 38,  82,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -89,  80],   [  0,  43, -54]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-69,  -5,   0],   [-50,   3,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -10, -76],   [  0, -27,   7]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 65, -35,   0],   [ 14,  56,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  21,  88],   [  0, -78, -29]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-76,  81,   0],   [-45, -41,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  71, -95],   [  0, -23,  59]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-82,  41,   0],   [ 59, -82,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  12,   1],   [  0,  26, -65]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 63, -94,   0],   [ 41,   6,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -32, -49],   [  0,   1, -31]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-64,  88,   0],   [ 57,  99,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -27, -88],   [  0, -53, -95]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 63,  86,   0],   [-11,  67,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -68, -40],   [  0,  71, -58]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]]]> : tensor<16x4x3x3xi8>
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zp8 : i8
  } : tensor<1x4x7x7xi8> to tensor<1x4x9x9xi8>
  %e = tensor.empty() : tensor<1x16x4x4xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x16x4x4xi32>) -> tensor<1x16x4x4xi32>
  %y = linalg.conv_2d_nchw_fchw_q {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%p, %w, %zp, %c0 : tensor<1x4x9x9xi8>, tensor<16x4x3x3xi8>, i32, i32) outs(%i : tensor<1x16x4x4xi32>) -> tensor<1x16x4x4xi32> loc("model.py":20:3)
  return %y : tensor<1x16x4x4xi32>
}

// -----

// The requantize after the conv (sums to f32, the per-channel scale and bias, the quantize to
// int8) goes into the kernel, which stores int8: the call replaces the quantize. The
// dequantize after it stays. With epilogues=false the kernel stores i32 and IREE requantizes.
// CHECK-LABEL: func.func @requantized
// CHECK: %[[Y:.*]] = call @xgen_int8_pattern_1_call({{.*}}) : ({{.*}}) -> tensor<1x16x6x6xi8>
// CHECK-NOT: arith.sitofp %{{.*}} : i32 to f32
// CHECK: linalg.generic {{.*}} ins(%[[Y]] : tensor<1x16x6x6xi8>)
// CHECK: arith.sitofp %{{.*}} : i8 to f32
// EPI-LABEL: func.func @requantized
// EPI: call @xgen_int8_pattern_1_call({{.*}}) : ({{.*}}) -> tensor<1x16x6x6xi32>
// EPI: arith.sitofp %{{.*}} : i32 to f32
// SRCQ: _mm512_cvtepi32_epi8
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#col = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>
func.func @requantized(%x: tensor<1x4x8x8xi8>) -> tensor<1x16x6x6xf32> {
  %zp = arith.constant -3 : i32
  %c0 = arith.constant 0 : i32
  %s = arith.constant 0.25 : f32
  %qz = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %w = arith.constant dense<[[[[ 85,  64,   0],   [ -8,  -2,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -50, -61],   [  0, -56,  93]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 40, -85,   0],   [-84, -18,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   8,  30],   [  0,  -1, -13]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 26, -61,   0],   [-80, -98,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  84,  69],   [  0, -58,  72]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-42, -49,   0],   [-53,  36,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  72,  59],   [  0,  33, -89]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ -5,  -9,   0],   [-32,  24,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  67,  34],   [  0,  89,  79]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 57,  41,   0],   [ 62, -58,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -89,  20],   [  0, -64, -11]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-41,  44,   0],   [ -5, -43,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  60, -94],   [  0, -41, -50]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ -8, -42,   0],   [ 92, -93,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -97,  92],   [  0, -12, -86]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-36, -15,   0],   [ 38,  82,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -89,  80],   [  0,  43, -54]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-69,  -5,   0],   [-50,   3,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -10, -76],   [  0, -27,   7]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 65, -35,   0],   [ 14,  56,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  21,  88],   [  0, -78, -29]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-76,  81,   0],   [-45, -41,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  71, -95],   [  0, -23,  59]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-82,  41,   0],   [ 59, -82,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  12,   1],   [  0,  26, -65]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 63, -94,   0],   [ 41,   6,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -32, -49],   [  0,   1, -31]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-64,  88,   0],   [ 57,  99,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -27, -88],   [  0, -53, -95]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 63,  86,   0],   [-11,  67,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -68, -40],   [  0,  71, -58]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]]]> : tensor<16x4x3x3xi8>
  %scale = arith.constant dense<[[[[0.5]], [[0.25]], [[0.125]], [[1.0]], [[0.5]], [[0.25]], [[0.125]], [[1.0]], [[0.5]], [[0.25]], [[0.125]], [[1.0]], [[0.5]], [[0.25]], [[0.125]], [[1.0]]]]> : tensor<1x16x1x1xf32>
  %e = tensor.empty() : tensor<1x16x6x6xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x16x6x6xi32>) -> tensor<1x16x6x6xi32>
  %y = linalg.conv_2d_nchw_fchw_q {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w, %zp, %c0 : tensor<1x4x8x8xi8>, tensor<16x4x3x3xi8>, i32, i32) outs(%i : tensor<1x16x6x6xi32>) -> tensor<1x16x6x6xi32>
  %fe = tensor.empty() : tensor<1x16x6x6xf32>
  %f = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : tensor<1x16x6x6xi32>) outs(%fe : tensor<1x16x6x6xf32>) {
  ^bb0(%in: i32, %out: f32):
    %0 = arith.sitofp %in : i32 to f32
    linalg.yield %0 : f32
  } -> tensor<1x16x6x6xf32>
  %m = linalg.generic {indexing_maps = [#map, #col, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%f, %scale : tensor<1x16x6x6xf32>, tensor<1x16x1x1xf32>) outs(%fe : tensor<1x16x6x6xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %0 = arith.mulf %in, %c : f32
    linalg.yield %0 : f32
  } -> tensor<1x16x6x6xf32>
  %qe = tensor.empty() : tensor<1x16x6x6xi8>
  %q = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%m : tensor<1x16x6x6xf32>) outs(%qe : tensor<1x16x6x6xi8>) {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.divf %in, %s : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %qz : f32
    %3 = arith.maximumf %2, %qz : f32
    %4 = arith.minimumf %3, %hi : f32
    %5 = arith.fptosi %4 : f32 to i8
    linalg.yield %5 : i8
  } -> tensor<1x16x6x6xi8>
  %dq = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%q : tensor<1x16x6x6xi8>) outs(%fe : tensor<1x16x6x6xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.sitofp %in : i8 to f32
    %1 = arith.subf %0, %qz : f32
    %2 = arith.mulf %1, %s : f32
    linalg.yield %2 : f32
  } -> tensor<1x16x6x6xf32>
  return %dq : tensor<1x16x6x6xf32>
}

// -----

// A batch of 2: the images one after another in the flat input (one workgroup z each).
// CHECK-LABEL: func.func @batch2
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1, 2, 3]] : tensor<2x4x8x8xi8> into tensor<512xi8>
// CHECK: call @xgen_int8_pattern_1_call({{.*}}) : (tensor<514xi8>, tensor<128xi8>, tensor<16xi32>) -> tensor<2x16x6x6xi32>
func.func @batch2(%x: tensor<2x4x8x8xi8>) -> tensor<2x16x6x6xi32> {
  %zp = arith.constant -3 : i32
  %c0 = arith.constant 0 : i32
  %w = arith.constant dense<[[[[ 85,  64,   0],   [ -8,  -2,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -50, -61],   [  0, -56,  93]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 40, -85,   0],   [-84, -18,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   8,  30],   [  0,  -1, -13]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 26, -61,   0],   [-80, -98,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  84,  69],   [  0, -58,  72]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-42, -49,   0],   [-53,  36,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  72,  59],   [  0,  33, -89]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ -5,  -9,   0],   [-32,  24,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  67,  34],   [  0,  89,  79]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 57,  41,   0],   [ 62, -58,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -89,  20],   [  0, -64, -11]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-41,  44,   0],   [ -5, -43,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  60, -94],   [  0, -41, -50]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ -8, -42,   0],   [ 92, -93,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -97,  92],   [  0, -12, -86]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-36, -15,   0],   [ 38,  82,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -89,  80],   [  0,  43, -54]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-69,  -5,   0],   [-50,   3,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -10, -76],   [  0, -27,   7]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 65, -35,   0],   [ 14,  56,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  21,  88],   [  0, -78, -29]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-76,  81,   0],   [-45, -41,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  71, -95],   [  0, -23,  59]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-82,  41,   0],   [ 59, -82,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  12,   1],   [  0,  26, -65]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 63, -94,   0],   [ 41,   6,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -32, -49],   [  0,   1, -31]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-64,  88,   0],   [ 57,  99,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -27, -88],   [  0, -53, -95]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 63,  86,   0],   [-11,  67,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -68, -40],   [  0,  71, -58]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]]]> : tensor<16x4x3x3xi8>
  %e = tensor.empty() : tensor<2x16x6x6xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<2x16x6x6xi32>) -> tensor<2x16x6x6xi32>
  %y = linalg.conv_2d_nchw_fchw_q {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w, %zp, %c0 : tensor<2x4x8x8xi8>, tensor<16x4x3x3xi8>, i32, i32) outs(%i : tensor<2x16x6x6xi32>) -> tensor<2x16x6x6xi32> loc("model.py":40:3)
  return %y : tensor<2x16x6x6xi32>
}

// -----

// Must not fire: weights with a zero point (not symmetric), an input zero point known only at
// run time, a dense conv (no pattern: not even said with verbose).
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-3: linalg.conv_2d_nchw_fchw_q
// CHECK-NOT: xgen_int8_pattern
func.func @kept(%x: tensor<1x4x8x8xi8>, %zr: i32) -> (tensor<1x16x6x6xi32>, tensor<1x16x6x6xi32>, tensor<1x16x6x6xi32>) {
  %zp = arith.constant -3 : i32
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %w = arith.constant dense<[[[[ 85,  64,   0],   [ -8,  -2,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -50, -61],   [  0, -56,  93]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 40, -85,   0],   [-84, -18,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   8,  30],   [  0,  -1, -13]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 26, -61,   0],   [-80, -98,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  84,  69],   [  0, -58,  72]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-42, -49,   0],   [-53,  36,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  72,  59],   [  0,  33, -89]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ -5,  -9,   0],   [-32,  24,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  67,  34],   [  0,  89,  79]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 57,  41,   0],   [ 62, -58,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -89,  20],   [  0, -64, -11]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-41,  44,   0],   [ -5, -43,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  60, -94],   [  0, -41, -50]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ -8, -42,   0],   [ 92, -93,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -97,  92],   [  0, -12, -86]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-36, -15,   0],   [ 38,  82,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -89,  80],   [  0,  43, -54]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-69,  -5,   0],   [-50,   3,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -10, -76],   [  0, -27,   7]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 65, -35,   0],   [ 14,  56,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  21,  88],   [  0, -78, -29]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-76,  81,   0],   [-45, -41,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  71, -95],   [  0, -23,  59]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-82,  41,   0],   [ 59, -82,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,  12,   1],   [  0,  26, -65]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 63, -94,   0],   [ 41,   6,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -32, -49],   [  0,   1, -31]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[-64,  88,   0],   [ 57,  99,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -27, -88],   [  0, -53, -95]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]], [[[ 63,  86,   0],   [-11,  67,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0, -68, -40],   [  0,  71, -58]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]],  [[  0,   0,   0],   [  0,   0,   0],   [  0,   0,   0]]]]> : tensor<16x4x3x3xi8>
  %dense = arith.constant dense<3> : tensor<16x4x3x3xi8>
  %e = tensor.empty() : tensor<1x16x6x6xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x16x6x6xi32>) -> tensor<1x16x6x6xi32>
  %a = linalg.conv_2d_nchw_fchw_q {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w, %zp, %c1 : tensor<1x4x8x8xi8>, tensor<16x4x3x3xi8>, i32, i32) outs(%i : tensor<1x16x6x6xi32>) -> tensor<1x16x6x6xi32> loc("model.py":30:3)
  %c = linalg.conv_2d_nchw_fchw_q {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w, %zr, %c0 : tensor<1x4x8x8xi8>, tensor<16x4x3x3xi8>, i32, i32) outs(%i : tensor<1x16x6x6xi32>) -> tensor<1x16x6x6xi32> loc("model.py":50:3)
  %d = linalg.conv_2d_nchw_fchw_q {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %dense, %zp, %c0 : tensor<1x4x8x8xi8>, tensor<16x4x3x3xi8>, i32, i32) outs(%i : tensor<1x16x6x6xi32>) -> tensor<1x16x6x6xi32> loc("model.py":60:3)
  return %a, %c, %d : tensor<1x16x6x6xi32>, tensor<1x16x6x6xi32>, tensor<1x16x6x6xi32>
}
