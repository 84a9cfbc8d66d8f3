// Entry names are checked before the IR is touched: an empty or unsafe name fails the pass
// (exit 1, no IR printed) instead of printing `func.func @""` with exit 0.
// RUN: xgen-opt %s -p "xgen-set-entry-point{name=run.v2_\$x-y}" | FileCheck %s --check-prefix=OK
// RUN: not xgen-opt %s -p "xgen-set-entry-point{name=}" 2>%t.empty | FileCheck %s --allow-empty --check-prefix=NOIR
// RUN: FileCheck %s --check-prefix=EMPTY < %t.empty
// RUN: not xgen-opt %s -p "xgen-set-entry-point{name=a/b}" 2>%t.slash | FileCheck %s --allow-empty --check-prefix=NOIR
// RUN: FileCheck %s --check-prefix=SLASH < %t.slash
// RUN: not xgen-opt %s -p "xgen-set-entry-point{name=9lives}" 2>&1 | FileCheck %s --check-prefix=DIGIT

// Must not fire: letters, digits, '_', '.', '$' and '-' are accepted.
// OK: func.func @"run.v2_$x-y"(
// NOIR-NOT: func.func
// EMPTY: xgen-set-entry-point: invalid entry name '': it must be a letter or '_'
// SLASH: xgen-set-entry-point: invalid entry name 'a/b'
// DIGIT: xgen-set-entry-point: invalid entry name '9lives'
func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
