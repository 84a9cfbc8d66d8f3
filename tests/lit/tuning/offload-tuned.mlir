// RUN: python %S/Inputs/offload_choices_db.py %s %t.db
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=tuned db=%t.db verbose=true},xgen-byoc-offload{backend=tuned phase=layout},xgen-byoc-offload{backend=tuned}' 2>%t.err | FileCheck %s --check-prefixes=CHECK,NOPRIOR
// RUN: FileCheck %s --check-prefix=WHY < %t.err
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=tuned precision=bf16 db=%t.db},xgen-byoc-offload{backend=tuned precision=bf16 phase=layout},xgen-byoc-offload{backend=tuned precision=bf16}' | FileCheck %s --check-prefix=%if onednn-bf16 %{BF16%} %else %{NOBF16%}
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=none db=%t.db},xgen-byoc-offload{backend=none phase=layout},xgen-byoc-offload{backend=none}' | FileCheck %s --check-prefix=OFF
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=tuned db=%t.db vector-bits=256 verbose=true},xgen-byoc-offload{backend=tuned phase=layout},xgen-byoc-offload{backend=tuned}' 2>%t.prior.err | FileCheck %s --check-prefix=PRIOR
// RUN: FileCheck %s --check-prefix=WHY-PRIOR < %t.prior.err
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=tuned db=%t.db vector-bits=512 verbose=true},xgen-byoc-offload{backend=tuned phase=layout},xgen-byoc-offload{backend=tuned}' 2>%t.512.err | FileCheck %s --check-prefixes=CHECK,AVX512
// RUN: FileCheck %s --check-prefix=WHY512 < %t.512.err
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=tuned precision=bf16 db=%t.db vector-bits=512},xgen-byoc-offload{backend=tuned precision=bf16 phase=layout},xgen-byoc-offload{backend=tuned precision=bf16}' | FileCheck %s --check-prefix=%if onednn-bf16 %{BFP%} %else %{NOBFP%}

// offload=tuned: xgen-winograd-convs weighs each conv's measured variants (Winograd's and the
// oneDNN offload's in the compute type of the precision) and marks the convs whose best is
// oneDNN (xgen.offload); xgen-byoc-offload{backend=tuned} offloads exactly those. The database
// (Inputs/offload_choices_db.py) holds, per function: oneDNN f32 2x; Winograd 2.5x and oneDNN
// 1.67x; Winograd 1.25x and oneDNN 2x; oneDNN bf16 only; oneDNN 0.83x; a stride-2 conv (no
// Winograd form) with oneDNN 2x; and no record.

// CHECK-LABEL: func.func @onednn_wins
// CHECK: call @xgen_onednn_conv_{{[0-9]+}}_call
// CHECK-NOT: linalg.conv_2d
// CHECK-LABEL: func.func @winograd_beats_onednn
// CHECK: linalg.batch_matmul
// CHECK-NOT: xgen_onednn
// CHECK-LABEL: func.func @onednn_beats_winograd
// CHECK-NOT: linalg.batch_matmul
// CHECK: call @xgen_onednn_conv_{{[0-9]+}}_call
// Must not fire: bf16 records do not count for an fp32 compile; oneDNN slower; no record.
// NOPRIOR-LABEL: func.func @bf16_only
// NOPRIOR-NOT: xgen_onednn
// NOPRIOR: linalg.conv_2d_nchw_fchw
// AVX512-LABEL: func.func @bf16_only
// AVX512: call @xgen_onednn_conv_{{[0-9]+}}_call
// CHECK-LABEL: func.func @onednn_slower
// CHECK-NOT: xgen_onednn
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK-LABEL: func.func @strided_onednn_wins
// CHECK: call @xgen_onednn_conv_{{[0-9]+}}_call
// NOPRIOR-LABEL: func.func @no_record
// NOPRIOR-NOT: xgen_onednn
// NOPRIOR: linalg.conv_2d_nchw_fchw
// AVX512-LABEL: func.func @no_record
// AVX512: call @xgen_onednn_conv_{{[0-9]+}}_call

// WHY: conv3x3 2->3 8x8 nchw pad: onednn, measured onednn f32 0.500 ms vs direct 1.000 ms (2.00x)
// WHY: conv3x3 2->4 8x8 nchw pad -> Winograd F(4x4, 3x3)
// WHY: conv3x3 2->5 8x8 nchw pad: onednn, measured onednn f32 0.500 ms vs direct 1.000 ms (2.00x), F(4x4) 0.800 ms
// WHY: conv3x3 2->7 8x8 nchw pad: direct, measured onednn f32 1.200 ms vs direct 1.000 ms (0.83x): below the 1.03x needed
// WHY: conv3x3 s[2, 2] d[1, 1] 2->8 4x4 nchw pad: onednn

// precision=bf16: the bf16 record counts, the f32 ones do not.
// BF16-LABEL: func.func @onednn_wins
// BF16-NOT: xgen_onednn
// BF16-LABEL: func.func @bf16_only
// BF16: call @xgen_onednn_conv_{{[0-9]+}}_call
// BF16-LABEL: func.func @onednn_slower
// Without bf16 primitives on this CPU (AVX2 only) the bf16 record cannot apply: no offload.
// NOBF16-LABEL: func.func @bf16_only
// NOBF16-NOT: call @xgen_onednn
// NOBF16: linalg.conv_2d_nchw_fchw
// NOBF16-NOT: call @xgen_onednn

// The prior (vector-bits=256: a target without xgen_mlir's own conv tiles): an f32 KxK conv
// with no f32 record starts in oneDNN; measured ones follow their records; a 1x1 conv (a
// matmul) stays with IREE. At 512 bits, no prior: as CHECK.
// PRIOR-LABEL: func.func @bf16_only
// PRIOR: call @xgen_onednn_conv_{{[0-9]+}}_call
// PRIOR-LABEL: func.func @onednn_slower
// PRIOR-NOT: xgen_onednn
// PRIOR: linalg.conv_2d_nchw_fchw
// PRIOR-LABEL: func.func @no_record
// PRIOR: call @xgen_onednn_conv_{{[0-9]+}}_call
// PRIOR-LABEL: func.func @no_record_1x1
// PRIOR-NOT: xgen_onednn
// PRIOR: linalg.conv_2d_nchw_fchw
// PRIOR-LABEL: func.func @no_record_fits
// PRIOR: call @xgen_onednn_conv_{{[0-9]+}}_call
// WHY-PRIOR: conv3x3 2->9 8x8 nchw pad: onednn, no measurement on this host: an f32 KxK conv starts in oneDNN
// WHY-PRIOR-NOT: conv1x1 {{.*}}: onednn

// At 512 bits (xgen_mlir's own tiles) the prior takes only the convs IREE's vector tiles (16
// output channels x 4 to 7 pixels of a row) do not divide: 6 or 9 output channels, rows of 13
// pixels. Must not fire: 16 channels on rows of 8 pixels; a 1x1 conv; a measured conv.
// AVX512-LABEL: func.func @no_record_1x1
// AVX512-NOT: xgen_onednn
// AVX512-LABEL: func.func @no_record_fits
// AVX512-NOT: xgen_onednn
// AVX512: linalg.conv_2d_nchw_fchw
// AVX512-LABEL: func.func @no_record_short_rows
// AVX512: call @xgen_onednn_conv_{{[0-9]+}}_call
// AVX512-NOT: linalg.conv_2d
// AVX512-LABEL: func.func @no_record_4_channels
// AVX512-NOT: xgen_onednn
// AVX512: linalg.conv_2d_nchw_fchw
// AVX512-LABEL: func.func @rejected_in_model
// AVX512-NOT: xgen_onednn
// AVX512: linalg.conv_2d_nchw_fchw
// WHY512: conv3x3 2->6 8x8 nchw pad: onednn, no measurement on this host: an f32 KxK conv starts in oneDNN where IREE's vector tiles do not divide it: 6 output channels are not a multiple of the 16-float vector
// WHY512: conv3x3 2->7 8x8 nchw pad: direct, measured onednn f32 1.200 ms
// WHY512: conv3x3 2->9 8x8 nchw pad: onednn, no measurement on this host
// WHY512: conv3x3 2->16 8x8 nchw pad: direct
// WHY512: conv3x3 2->16 13x13 nchw pad: onednn, {{.*}}output rows of 13 pixels have no divisor in 4..7

// precision=bf16 on a target with a vector width: every KxK conv without a bf16 record starts
// in oneDNN's bf16 primitive (IREE's convs stay f32 under bf16), whatever its shape, except
// one of fewer than 32 multiply-adds per output (3x3 over 2 channels: 18, like a 3x3 stem on
// an RGB image), which stays IREE's f32 code; a 1x1 conv stays with IREE. Without bf16
// primitives (AVX2 only) nothing is offloaded.
// BFP-LABEL: func.func @onednn_wins
// BFP-NOT: xgen_onednn
// BFP-LABEL: func.func @winograd_beats_onednn
// BFP-LABEL: func.func @no_record_1x1
// BFP-NOT: xgen_onednn
// BFP-LABEL: func.func @no_record_fits
// BFP-NOT: xgen_onednn
// BFP-LABEL: func.func @no_record_4_channels
// BFP: call @xgen_onednn_conv_{{[0-9]+}}_call
// A conv whose only record (oneDNN bf16, faster alone) a tune rejected in the model: the
// model it lost to had the prior, so the prior stays (oneDNN), not IREE's direct conv.
// BFP-LABEL: func.func @rejected_in_model
// BFP: call @xgen_onednn_conv_{{[0-9]+}}_call
// BFP-NOT: linalg.conv_2d
// NOBFP-NOT: xgen_onednn

// offload=none: nothing marked, nothing offloaded (Winograd still chosen where it won).
// OFF-NOT: xgen.offload
// OFF-NOT: xgen_onednn

func.func @onednn_wins(%arg0: tensor<1x2x8x8xf32>) -> tensor<1x3x8x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<3x2x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x2x8x8xf32> to tensor<1x2x10x10xf32>
  %0 = tensor.empty() : tensor<1x3x8x8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x2x10x10xf32>, tensor<3x2x3x3xf32>) outs(%1 : tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  return %2 : tensor<1x3x8x8xf32>
}

func.func @winograd_beats_onednn(%arg0: tensor<1x2x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<4x2x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x2x8x8xf32> to tensor<1x2x10x10xf32>
  %0 = tensor.empty() : tensor<1x4x8x8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x2x10x10xf32>, tensor<4x2x3x3xf32>) outs(%1 : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %2 : tensor<1x4x8x8xf32>
}

func.func @onednn_beats_winograd(%arg0: tensor<1x2x8x8xf32>) -> tensor<1x5x8x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<5x2x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x2x8x8xf32> to tensor<1x2x10x10xf32>
  %0 = tensor.empty() : tensor<1x5x8x8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x5x8x8xf32>) -> tensor<1x5x8x8xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x2x10x10xf32>, tensor<5x2x3x3xf32>) outs(%1 : tensor<1x5x8x8xf32>) -> tensor<1x5x8x8xf32>
  return %2 : tensor<1x5x8x8xf32>
}

func.func @bf16_only(%arg0: tensor<1x2x8x8xf32>) -> tensor<1x6x8x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<6x2x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x2x8x8xf32> to tensor<1x2x10x10xf32>
  %0 = tensor.empty() : tensor<1x6x8x8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x6x8x8xf32>) -> tensor<1x6x8x8xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x2x10x10xf32>, tensor<6x2x3x3xf32>) outs(%1 : tensor<1x6x8x8xf32>) -> tensor<1x6x8x8xf32>
  return %2 : tensor<1x6x8x8xf32>
}

func.func @onednn_slower(%arg0: tensor<1x2x8x8xf32>) -> tensor<1x7x8x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<7x2x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x2x8x8xf32> to tensor<1x2x10x10xf32>
  %0 = tensor.empty() : tensor<1x7x8x8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x7x8x8xf32>) -> tensor<1x7x8x8xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x2x10x10xf32>, tensor<7x2x3x3xf32>) outs(%1 : tensor<1x7x8x8xf32>) -> tensor<1x7x8x8xf32>
  return %2 : tensor<1x7x8x8xf32>
}

func.func @strided_onednn_wins(%arg0: tensor<1x2x8x8xf32>) -> tensor<1x8x4x4xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<8x2x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x2x8x8xf32> to tensor<1x2x10x10xf32>
  %0 = tensor.empty() : tensor<1x8x4x4xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%padded, %w : tensor<1x2x10x10xf32>, tensor<8x2x3x3xf32>) outs(%1 : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  return %2 : tensor<1x8x4x4xf32>
}

func.func @no_record(%arg0: tensor<1x2x8x8xf32>) -> tensor<1x9x8x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<9x2x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x2x8x8xf32> to tensor<1x2x10x10xf32>
  %0 = tensor.empty() : tensor<1x9x8x8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x9x8x8xf32>) -> tensor<1x9x8x8xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x2x10x10xf32>, tensor<9x2x3x3xf32>) outs(%1 : tensor<1x9x8x8xf32>) -> tensor<1x9x8x8xf32>
  return %2 : tensor<1x9x8x8xf32>
}

func.func @no_record_1x1(%arg0: tensor<1x2x8x8xf32>) -> tensor<1x9x8x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<9x2x1x1xf32>
  %0 = tensor.empty() : tensor<1x9x8x8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x9x8x8xf32>) -> tensor<1x9x8x8xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%arg0, %w : tensor<1x2x8x8xf32>, tensor<9x2x1x1xf32>) outs(%1 : tensor<1x9x8x8xf32>) -> tensor<1x9x8x8xf32>
  return %2 : tensor<1x9x8x8xf32>
}

func.func @no_record_fits(%arg0: tensor<1x2x8x8xf32>) -> tensor<1x16x8x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<16x2x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x2x8x8xf32> to tensor<1x2x10x10xf32>
  %0 = tensor.empty() : tensor<1x16x8x8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x2x10x10xf32>, tensor<16x2x3x3xf32>) outs(%1 : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  return %2 : tensor<1x16x8x8xf32>
}

func.func @no_record_short_rows(%arg0: tensor<1x2x13x13xf32>) -> tensor<1x16x13x13xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<16x2x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x2x13x13xf32> to tensor<1x2x15x15xf32>
  %0 = tensor.empty() : tensor<1x16x13x13xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x16x13x13xf32>) -> tensor<1x16x13x13xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x2x15x15xf32>, tensor<16x2x3x3xf32>) outs(%1 : tensor<1x16x13x13xf32>) -> tensor<1x16x13x13xf32>
  return %2 : tensor<1x16x13x13xf32>
}

func.func @no_record_4_channels(%arg0: tensor<1x4x8x8xf32>) -> tensor<1x16x8x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<16x4x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x4x8x8xf32> to tensor<1x4x10x10xf32>
  %0 = tensor.empty() : tensor<1x16x8x8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x4x10x10xf32>, tensor<16x4x3x3xf32>) outs(%1 : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  return %2 : tensor<1x16x8x8xf32>
}

func.func @rejected_in_model(%arg0: tensor<1x4x8x8xf32>) -> tensor<1x32x8x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<32x4x3x3xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x4x8x8xf32> to tensor<1x4x10x10xf32>
  %0 = tensor.empty() : tensor<1x32x8x8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<1x4x10x10xf32>, tensor<32x4x3x3xf32>) outs(%1 : tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  return %2 : tensor<1x32x8x8xf32>
}
