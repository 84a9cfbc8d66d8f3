// A malformed chunk is reported with file:line:col; the other chunks still print; exit 1.
// RUN: not xgen-opt %s --split-input-file > %t.out 2> %t.err
// RUN: FileCheck %s --check-prefix=ERR < %t.err
// RUN: FileCheck %s --check-prefix=OUT < %t.out

// ERR: parse-error.mlir:8:3: error: custom op 'retur' is unknown
func.func @bad(%x: tensor<2xf32>) -> tensor<2xf32> {
  retur %x : tensor<2xf32>
}

// -----
// OUT-LABEL: func.func @good
func.func @good(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
