// RUN: python %S/Inputs/winograd_choices_db.py %s %t.db
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=tuned gemm=tuned vector-bits=256 verbose=true db=%t.db}' 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=WHY < %t.err
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=tuned gemm=tuned vector-bits=512 db=%t.db}' | FileCheck %s --check-prefix=OFF
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=tuned gemm=false vector-bits=256 db=%t.db}' | FileCheck %s --check-prefix=OFF
// RUN: xgen-opt %s -p 'xgen-winograd-convs{enable=tuned offload=none gemm=tuned precision=bf16 vector-bits=256 db=%t.db}' | FileCheck %s --check-prefix=OFF

// On a target narrower than 512 bits (AVX2) an unmeasured f32 1x1 stride-1 conv starts in
// the generated GEMM kernel (xgen.kernel = "gemm"), as an f32 Linear layer does; not on the
// 512-bit target, not under gemm=false or bf16, and never a strided 1x1 conv (no GEMM of its
// pixels in place). The database holds no records for these functions.

// CHECK-LABEL: func.func @pointwise
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}}xgen.kernel = "gemm"
// CHECK-LABEL: func.func @strided
// CHECK-NOT: xgen.kernel
// CHECK: return
// WHY: conv1x1 32->64 14x14 nhwc: xgen_gemm, no measurement on this host: a 1x1 conv starts in xgen_mlir's GEMM kernel
// OFF-NOT: xgen.kernel

func.func @pointwise(%x: tensor<1x14x14x32xf32>) -> tensor<1x14x14x64xf32> {
  %w = arith.constant dense<0.5> : tensor<1x1x32x64xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x14x14x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x14x14x64xf32>) -> tensor<1x14x14x64xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x14x14x32xf32>, tensor<1x1x32x64xf32>) outs(%f : tensor<1x14x14x64xf32>) -> tensor<1x14x14x64xf32>
  return %c : tensor<1x14x14x64xf32>
}

func.func @strided(%x: tensor<1x14x14x32xf32>) -> tensor<1x7x7x64xf32> {
  %w = arith.constant dense<0.5> : tensor<1x1x32x64xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x7x7x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x7x7x64xf32>) -> tensor<1x7x7x64xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<1x14x14x32xf32>, tensor<1x1x32x64xf32>) outs(%f : tensor<1x7x7x64xf32>) -> tensor<1x7x7x64xf32>
  return %c : tensor<1x7x7x64xf32>
}
