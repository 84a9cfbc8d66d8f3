// How an offloaded matmul is split among T workers (threads=T): along its columns when it
// has more columns than rows and T shares of a whole number of 16 columns (each part then
// reads 1/T of the weights instead of all of them), else along its rows, never more parts
// than rows. One worker: one part. Under split=count (the default) only f32: a bf16 (and
// s8) column share is computed into a dense buffer and copied into place, so they stay on
// rows. split=columns takes the columns in bf16 too, in shares of any width (the copy does
// not need whole registers): it must not fire where the rows outnumber the columns.
// split=rows never takes the columns.
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn threads=2}' | FileCheck %s --check-prefix=T2
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn threads=3}' | FileCheck %s --check-prefix=T3
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn threads=1}' | FileCheck %s --check-prefix=T1
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn threads=2 precision=bf16}' | FileCheck %s --check-prefix=%if onednn-bf16 %{BF16%} %else %{NOBF16%}
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn threads=3 precision=bf16 split=columns}' | FileCheck %s --check-prefix=%if onednn-bf16 %{COLS%} %else %{NOBF16%}
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn threads=3 split=rows}' | FileCheck %s --check-prefix=ROWS
// RUN: not xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn split=diagonal}' 2>&1 | FileCheck %s --check-prefix=BAD
// NOBF16-NOT: xgen_dnnl
// BAD: split 'diagonal' is not one of count, rows, columns

// 4 rows, 64 columns: two shares of 32 columns; three shares would be 21.3 columns, so
// three parts go along the rows.
// T2: %parts = arith.constant 2 : index
// T2-SAME: @xgen_dnnl_matmul_f32_none_b_4_8_64_c2(
// T3: %parts = arith.constant 3 : index
// T3-SAME: @xgen_dnnl_matmul_f32_none_b_4_8_64_p3(
// T1: @xgen_dnnl_matmul_f32_none_b_4_8_64_p1(
// BF16: @xgen_dnnl_matmul_bf16_none_b_4_8_64_p2(
// COLS: @xgen_dnnl_matmul_bf16_none_b_4_8_64_c3(
// ROWS: @xgen_dnnl_matmul_f32_none_b_4_8_64_p3(
func.func @wide(%x: tensor<4x8xf32>) -> tensor<4x64xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<8x64xf32>
  %e = tensor.empty() : tensor<4x64xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<4x64xf32>) -> tensor<4x64xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x64xf32>) outs(%i : tensor<4x64xf32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// 4 rows, 96 columns: shares of 48 or 32 columns, both splits along the columns.
// T2: @xgen_dnnl_matmul_f32_none_b_4_8_96_c2(
// T3: @xgen_dnnl_matmul_f32_none_b_4_8_96_c3(
// T1: @xgen_dnnl_matmul_f32_none_b_4_8_96_p1(
// BF16: @xgen_dnnl_matmul_bf16_none_b_4_8_96_p2(
// COLS: @xgen_dnnl_matmul_bf16_none_b_4_8_96_c3(
// ROWS: @xgen_dnnl_matmul_f32_none_b_4_8_96_p3(
func.func @wider(%x: tensor<4x8xf32>) -> tensor<4x96xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<8x96xf32>
  %e = tensor.empty() : tensor<4x96xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<4x96xf32>) -> tensor<4x96xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x96xf32>) outs(%i : tensor<4x96xf32>) -> tensor<4x96xf32>
  return %y : tensor<4x96xf32>
}

// -----

// More rows (64) than columns (32): the rows, whatever the columns' shares.
// T2: @xgen_dnnl_matmul_f32_none_b_64_8_32_p2(
// T3: @xgen_dnnl_matmul_f32_none_b_64_8_32_p3(
// T1: @xgen_dnnl_matmul_f32_none_b_64_8_32_p1(
// BF16: @xgen_dnnl_matmul_bf16_none_b_64_8_32_p2(
// COLS: @xgen_dnnl_matmul_bf16_none_b_64_8_32_p3(
// ROWS: @xgen_dnnl_matmul_f32_none_b_64_8_32_p3(
func.func @tall(%x: tensor<64x8xf32>) -> tensor<64x32xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %w = arith.constant dense<0.5> : tensor<8x32xf32>
  %e = tensor.empty() : tensor<64x32xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<64x32xf32>) -> tensor<64x32xf32>
  %y = linalg.matmul ins(%x, %w : tensor<64x8xf32>, tensor<8x32xf32>) outs(%i : tensor<64x32xf32>) -> tensor<64x32xf32>
  return %y : tensor<64x32xf32>
}
