// RUN: not xgen-opt %s --split-input-file -p xgen-verify-iree-input --keep-temps 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=ERR < %t.err

// Upstream linalg/tensor/arith: accepted unchanged.
// CHECK-LABEL: func.func @ok
// CHECK: linalg.matmul
func.func @ok(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = linalg.matmul ins(%a, %b : tensor<2x3xf32>, tensor<3x4xf32>) outs(%c : tensor<2x4xf32>) -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// -----
// Leftover torch ops: every one is listed with its count and location, and (--keep-temps) a
// reproducer command is printed.
// ERR: xgen-verify-iree-input: 3 unsupported op occurrence(s) of 2 kind(s) found during the hand-off to IREE:
// ERR-NEXT: torch.aten.erfinv x2 at {{.*}}verify-iree-input.mlir:26:8; {{.*}}verify-iree-input.mlir:27:8
// ERR-NEXT: torch.aten.fft_fft x1 at
// ERR: reproduce with:
// ERR-NEXT: xgen-opt {{.*}}input.mlir --pass-pipeline=xgen-verify-iree-input
func.func @bad(%x: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> {
  %none = torch.constant.none
  %int0 = torch.constant.int 0
  %a = torch.aten.erfinv %x : !torch.vtensor<[4],f32> -> !torch.vtensor<[4],f32>
  %b = torch.aten.erfinv %a : !torch.vtensor<[4],f32> -> !torch.vtensor<[4],f32>
  %c = torch.aten.fft_fft %b, %none, %int0, %none : !torch.vtensor<[4],f32>, !torch.none, !torch.int, !torch.none -> !torch.vtensor<[4],complex<f32>>
  return %b : !torch.vtensor<[4],f32>
}
