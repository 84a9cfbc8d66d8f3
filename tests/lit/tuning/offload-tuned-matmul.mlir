// RUN: python %S/Inputs/offload_choices_db.py %s %t.db
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=tuned db=%t.db verbose=true},xgen-byoc-offload{backend=tuned}' 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=WHY < %t.err
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=tuned precision=bf16 db=%t.db},xgen-byoc-offload{backend=tuned precision=bf16}' | FileCheck %s --check-prefix=%if onednn-bf16 %{BF16%} %else %{NOBF16%}
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=none db=%t.db},xgen-byoc-offload{backend=none}' | FileCheck %s --check-prefix=OFF
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=false offload=tuned db=%t.db},xgen-byoc-offload{backend=tuned}' | FileCheck %s --check-prefix=NOWINO
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=tuned db=%t.db vector-bits=512 verbose=true},xgen-byoc-offload{backend=tuned}' 2>%t.512.err | FileCheck %s --check-prefix=P512
// RUN: FileCheck %s --check-prefix=WHY512 < %t.512.err
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=tuned precision=bf16 db=%t.db vector-bits=512},xgen-byoc-offload{backend=tuned precision=bf16}' | FileCheck %s --check-prefix=P512BF16
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=tuned precision=bf16 db=%t.db vector-bits=512 bf16-tiles=1 verbose=true},xgen-byoc-offload{backend=tuned precision=bf16}' 2>%t.tiles.err | FileCheck %s --check-prefix=%if onednn-bf16 %{TILES%} %else %{NOTILES%}
// RUN: FileCheck %s --check-prefix=%if onednn-bf16 %{WHYTILES%} %else %{NOTILES%} < %t.tiles.err
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=tuned gemm=tuned db=%t.db vector-bits=256 verbose=true}' 2>%t.256.err | FileCheck %s --check-prefix=P256
// RUN: FileCheck %s --check-prefix=WHY256 < %t.256.err
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=tuned gemm=false db=%t.db vector-bits=256}' | FileCheck %s --check-prefix=P256OFF
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=tuned gemm=tuned precision=bf16 db=%t.db vector-bits=256}' | FileCheck %s --check-prefix=P256OFF

// offload=tuned for linear layers: a matmul with constant weights is offloaded to oneDNN
// exactly where this host's record (Inputs/offload_choices_db.py, per function) says oneDNN
// was faster in the compile's compute type: oneDNN f32 2x; oneDNN f32 0.77x; oneDNN bf16
// only; no record; and a matmul of two activations (attention's, never a candidate).

// CHECK-LABEL: func.func @linear_onednn_wins
// CHECK: call @xgen_onednn_matmul_{{[0-9]+}}_call
// CHECK-NOT: linalg.matmul
// Must not fire: oneDNN slower; a bf16 record for an fp32 compile; no record; no constant.
// CHECK-LABEL: func.func @linear_onednn_slower
// CHECK-NOT: xgen_onednn
// CHECK: linalg.matmul
// CHECK-LABEL: func.func @linear_bf16_only
// CHECK-NOT: xgen_onednn
// CHECK: linalg.matmul
// CHECK-LABEL: func.func @linear_no_record
// CHECK-NOT: xgen_onednn
// CHECK: linalg.matmul
// CHECK-LABEL: func.func @two_activations
// CHECK-NOT: xgen_onednn
// CHECK: linalg.matmul

// WHY: matmul 4x2 * 2x3 +addf: onednn f32, measured onednn f32 0.500 ms vs direct 1.000 ms (2.00x)
// WHY: matmul 4x2 * 2x5 +addf: IREE, measured onednn f32 1.300 ms vs direct 1.000 ms (0.77x): below the 1.03x needed
// WHY: matmul 4x2 * 2x6 +addf: IREE, no measurement on this host
// WHY: matmul 4x2 * 2x7 +addf: IREE, no measurement on this host
// WHY-NOT: 4x2 * 2x8

// precision=bf16: only the bf16 record counts.
// BF16-LABEL: func.func @linear_onednn_wins
// BF16-NOT: xgen_onednn
// BF16-LABEL: func.func @linear_bf16_only
// BF16: call @xgen_onednn_matmul_{{[0-9]+}}_call
// BF16-LABEL: func.func @linear_no_record
// Without bf16 primitives on this CPU (AVX2 only) the bf16 record cannot apply: no offload.
// NOBF16-LABEL: func.func @linear_bf16_only
// NOBF16-NOT: call @xgen_onednn
// NOBF16: linalg.matmul
// NOBF16-NOT: call @xgen_onednn

// offload=none: nothing marked, nothing offloaded.
// OFF-NOT: xgen.offload
// OFF-NOT: xgen_onednn

// The prior (an AVX-512 target, fp32): an f32 Linear layer with no record, of at least 16
// rows and 256 inputs and outputs, starts in oneDNN. Must not fire: 8 rows; 128 inputs; the
// 4-row layers above; a record that says oneDNN is slower; a bf16 compile (IREE's bf16
// matmuls keep them).
// P512-LABEL: func.func @linear_onednn_wins
// P512: call @xgen_onednn_matmul_{{[0-9]+}}_call
// P512-LABEL: func.func @linear_onednn_slower
// P512-NOT: xgen_onednn
// P512-LABEL: func.func @linear_no_record
// P512-NOT: xgen_onednn
// P512: linalg.matmul
// P512-LABEL: func.func @linear_prior
// P512: call @xgen_onednn_matmul_{{[0-9]+}}_call
// P512-NOT: linalg.matmul
// P512-LABEL: func.func @linear_prior_few_rows
// P512-NOT: xgen_onednn
// P512: linalg.matmul
// P512-LABEL: func.func @linear_prior_narrow
// P512-NOT: xgen_onednn
// P512: linalg.matmul
// WHY512: matmul 16x256 * 256x256 +addf: onednn f32, no measurement on this host: an f32 Linear layer starts in oneDNN
// WHY512: matmul 8x256 * 256x256 +addf: IREE, no measurement on this host
// WHY512: matmul 16x128 * 128x256 +addf: IREE, no measurement on this host
// P512BF16-LABEL: func.func @linear_prior
// P512BF16-NOT: xgen_onednn
// P512BF16: linalg.matmul

// bf16 on a target with bf16 matrix tiles (AMX-BF16): the same Linear layers start in
// oneDNN's bf16 matmul. Must not fire: 8 rows; 128 inputs; the 4-row layers; offload=none
// (OFF above); a target without the tiles (P512BF16 above); a CPU where oneDNN makes no
// bf16 primitives (NOTILES).
// TILES-LABEL: func.func @linear_onednn_slower
// TILES-NOT: xgen_onednn
// TILES-LABEL: func.func @linear_bf16_only
// TILES: call @xgen_onednn_matmul_{{[0-9]+}}_call
// TILES-LABEL: func.func @linear_no_record
// TILES-NOT: xgen_onednn
// TILES-LABEL: func.func @linear_prior
// TILES: call @xgen_onednn_matmul_{{[0-9]+}}_call
// TILES-NOT: linalg.matmul
// TILES-LABEL: func.func @linear_prior_few_rows
// TILES-NOT: xgen_onednn
// TILES: linalg.matmul
// TILES-LABEL: func.func @linear_prior_narrow
// TILES-NOT: xgen_onednn
// TILES: linalg.matmul
// WHYTILES: matmul 16x256 * 256x256 +addf: onednn bf16, no measurement on this host: a bf16 Linear layer starts in oneDNN, whose bf16 GEMMs run on the target's matrix tiles
// WHYTILES: matmul 8x256 * 256x256 +addf: IREE, no measurement on this host
// WHYTILES: matmul 16x128 * 128x256 +addf: IREE, no measurement on this host
// NOTILES-NOT: call @xgen_onednn
// NOTILES-NOT: onednn bf16

// The prior on a narrower target (AVX2, fp32, gemm=tuned): an f32 Linear layer with no record
// and at least 16 rows starts in xgen_mlir's GEMM kernel, narrow ones too. Must not fire: 8
// rows; the 4-row layers; a layer whose records name a winner (oneDNN); gemm=false; bf16.
// P256-LABEL: func.func @linear_onednn_wins
// P256-NOT: xgen.kernel
// P256: linalg.matmul {{.*}}xgen.offload = "onednn"
// P256-LABEL: func.func @linear_no_record
// P256-NOT: xgen.kernel
// P256-LABEL: func.func @linear_prior
// P256: linalg.matmul {{.*}}xgen.kernel = "gemm"
// P256-LABEL: func.func @linear_prior_few_rows
// P256-NOT: xgen.kernel
// P256-LABEL: func.func @linear_prior_narrow
// P256: linalg.matmul {{.*}}xgen.kernel = "gemm"
// WHY256: matmul 16x256 * 256x256 +addf: xgen_gemm f32, no measurement on this host: an f32 Linear layer starts in xgen_mlir's GEMM kernel
// WHY256: matmul 8x256 * 256x256 +addf: IREE, no measurement on this host
// WHY256: matmul 16x128 * 128x256 +addf: xgen_gemm f32, no measurement on this host
// P256OFF-NOT: xgen.kernel

// winograd=false does not turn off the measured offload of linear layers.
// NOWINO-LABEL: func.func @linear_onednn_wins
// NOWINO: call @xgen_onednn_matmul_{{[0-9]+}}_call

func.func @linear_onednn_wins(%x: tensor<4x2xf32>) -> tensor<4x3xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %b = arith.constant dense<[0.1, 0.2, 0.3]> : tensor<3xf32>
  %e = tensor.empty() : tensor<4x3xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x2xf32>, tensor<2x3xf32>) outs(%i : tensor<4x3xf32>) -> tensor<4x3xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y, %b : tensor<4x3xf32>, tensor<3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %s = arith.addf %in, %in_1 : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  return %z : tensor<4x3xf32>
}

func.func @linear_onednn_slower(%x: tensor<4x2xf32>) -> tensor<4x5xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<2x5xf32>
  %b = arith.constant dense<0.25> : tensor<5xf32>
  %e = tensor.empty() : tensor<4x5xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<4x5xf32>) -> tensor<4x5xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x2xf32>, tensor<2x5xf32>) outs(%i : tensor<4x5xf32>) -> tensor<4x5xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y, %b : tensor<4x5xf32>, tensor<5xf32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %s = arith.addf %in, %in_1 : f32
    linalg.yield %s : f32
  } -> tensor<4x5xf32>
  return %z : tensor<4x5xf32>
}

func.func @linear_bf16_only(%x: tensor<4x2xf32>) -> tensor<4x6xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<2x6xf32>
  %b = arith.constant dense<0.25> : tensor<6xf32>
  %e = tensor.empty() : tensor<4x6xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x2xf32>, tensor<2x6xf32>) outs(%i : tensor<4x6xf32>) -> tensor<4x6xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y, %b : tensor<4x6xf32>, tensor<6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %s = arith.addf %in, %in_1 : f32
    linalg.yield %s : f32
  } -> tensor<4x6xf32>
  return %z : tensor<4x6xf32>
}

func.func @linear_no_record(%x: tensor<4x2xf32>) -> tensor<4x7xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<2x7xf32>
  %b = arith.constant dense<0.25> : tensor<7xf32>
  %e = tensor.empty() : tensor<4x7xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<4x7xf32>) -> tensor<4x7xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x2xf32>, tensor<2x7xf32>) outs(%i : tensor<4x7xf32>) -> tensor<4x7xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y, %b : tensor<4x7xf32>, tensor<7xf32>) outs(%e : tensor<4x7xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %s = arith.addf %in, %in_1 : f32
    linalg.yield %s : f32
  } -> tensor<4x7xf32>
  return %z : tensor<4x7xf32>
}

func.func @two_activations(%x: tensor<4x2xf32>, %w: tensor<2x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x2xf32>, tensor<2x8xf32>) outs(%i : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

func.func @linear_prior(%x: tensor<16x256xf32>) -> tensor<16x256xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<256x256xf32>
  %b = arith.constant dense<0.25> : tensor<256xf32>
  %e = tensor.empty() : tensor<16x256xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<16x256xf32>) -> tensor<16x256xf32>
  %y = linalg.matmul ins(%x, %w : tensor<16x256xf32>, tensor<256x256xf32>) outs(%i : tensor<16x256xf32>) -> tensor<16x256xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y, %b : tensor<16x256xf32>, tensor<256xf32>) outs(%e : tensor<16x256xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %s = arith.addf %in, %in_1 : f32
    linalg.yield %s : f32
  } -> tensor<16x256xf32>
  return %z : tensor<16x256xf32>
}

func.func @linear_prior_few_rows(%x: tensor<8x256xf32>) -> tensor<8x256xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<256x256xf32>
  %b = arith.constant dense<0.25> : tensor<256xf32>
  %e = tensor.empty() : tensor<8x256xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<8x256xf32>) -> tensor<8x256xf32>
  %y = linalg.matmul ins(%x, %w : tensor<8x256xf32>, tensor<256x256xf32>) outs(%i : tensor<8x256xf32>) -> tensor<8x256xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y, %b : tensor<8x256xf32>, tensor<256xf32>) outs(%e : tensor<8x256xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %s = arith.addf %in, %in_1 : f32
    linalg.yield %s : f32
  } -> tensor<8x256xf32>
  return %z : tensor<8x256xf32>
}

func.func @linear_prior_narrow(%x: tensor<16x128xf32>) -> tensor<16x256xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<128x256xf32>
  %b = arith.constant dense<0.25> : tensor<256xf32>
  %e = tensor.empty() : tensor<16x256xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<16x256xf32>) -> tensor<16x256xf32>
  %y = linalg.matmul ins(%x, %w : tensor<16x128xf32>, tensor<128x256xf32>) outs(%i : tensor<16x256xf32>) -> tensor<16x256xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y, %b : tensor<16x256xf32>, tensor<256xf32>) outs(%e : tensor<16x256xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %s = arith.addf %in, %in_1 : f32
    linalg.yield %s : f32
  } -> tensor<16x256xf32>
  return %z : tensor<16x256xf32>
}
