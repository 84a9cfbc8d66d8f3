// RUN: xgen-opt %s -p "xgen-inline-bf16-constants{max-bytes=8}" | FileCheck %s

// A small bf16 resource (a bias) goes inline with the same bits (NaN and -Inf as hex); one
// over max-bytes and constants of other types stay resources.
// CHECK-LABEL: func.func @bias
// CHECK-DAG: arith.constant dense<[1.500000e+00, 0x7FC0, 0xFF80, -2.000000e+00]> : tensor<4xbf16>
// CHECK-DAG: arith.constant dense_resource<big_bf16> : tensor<8xbf16>
// CHECK-DAG: arith.constant dense_resource<small_f16> : tensor<2xf16>
func.func @bias() -> (tensor<4xbf16>, tensor<8xbf16>, tensor<2xf16>) {
  %0 = arith.constant dense_resource<small_bf16> : tensor<4xbf16>
  %1 = arith.constant dense_resource<big_bf16> : tensor<8xbf16>
  %2 = arith.constant dense_resource<small_f16> : tensor<2xf16>
  return %0, %1, %2 : tensor<4xbf16>, tensor<8xbf16>, tensor<2xf16>
}

{-#
  dialect_resources: {
    builtin: {
      small_bf16: "0x02000000C03FC07F80FF00C0",
      big_bf16: "0x02000000803F803F803F803F803F803F803F803F",
      small_f16: "0x02000000003C0040"
    }
  }
#-}
