// xgen-opt re-reads IR holding the dialects torch-mlir's lowering emits (tm_tensor: a cumsum's
// scan; torch_c: the casts at the torch/builtin boundary), as a failing pipeline's reproducer
// does: its own output parses again.
// RUN: xgen-opt %s --split-input-file | xgen-opt - --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @cumsum
// CHECK: tm_tensor.scan dimension(1) inclusive(true)
// CHECK: arith.addf
// CHECK: tm_tensor.yield
func.func @cumsum(%arg0: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<2x8xf32>
  %e1 = tensor.empty() : tensor<2xf32>
  %out = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x8xf32>) -> tensor<2x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2xf32>) -> tensor<2xf32>
  %r:2 = tm_tensor.scan dimension(1) inclusive(true)
      ins(%arg0 : tensor<2x8xf32>) outs(%out, %acc : tensor<2x8xf32>, tensor<2xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    tm_tensor.yield %s : f32
  } -> tensor<2x8xf32>, tensor<2xf32>
  return %r#0 : tensor<2x8xf32>
}

// -----
// CHECK-LABEL: func.func @boundary
// CHECK: torch_c.from_builtin_tensor
// CHECK: torch_c.to_builtin_tensor
func.func @boundary(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %t = torch_c.from_builtin_tensor %arg0 : tensor<4xf32> -> !torch.vtensor<[4],f32>
  %b = torch_c.to_builtin_tensor %t : !torch.vtensor<[4],f32> -> tensor<4xf32>
  return %b : tensor<4xf32>
}
