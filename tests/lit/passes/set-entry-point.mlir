// RUN: not xgen-opt %s --split-input-file -p "xgen-set-entry-point{name=main}" 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=ERR < %t.err

// The single public function is renamed (names from ONNX graphs may hold dots and spaces).
// CHECK-LABEL: func.func @main(
func.func @"torch-jit.export graph"(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}

// -----
// Must not fire: `main` already exists; private helpers are left alone.
// CHECK-LABEL: func.func private @helper
// CHECK-LABEL: func.func @main
func.func private @helper(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = func.call @helper(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----
// Ambiguous: two public functions, neither named main -> error naming both.
// ERR: xgen-set-entry-point: cannot choose the entry function 'main': public functions are ['a', 'b']
func.func @a(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
func.func @b(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
