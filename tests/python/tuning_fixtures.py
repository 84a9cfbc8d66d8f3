"""IR the tuning tests share: a 32x64x48 matmul against a constant weight (small enough to
measure in a test, tunable by every config kind)."""

MATMUL = """
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d2, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
util.global private @w = dense<0.5> : tensor<64x48xf32>
func.func @main(%a: tensor<32x64xf32>) -> tensor<32x48xf32> {
  %zero = arith.constant 0.0 : f32
  %b = util.global.load @w : tensor<64x48xf32>
  %e = tensor.empty() : tensor<32x48xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x48xf32>) -> tensor<32x48xf32>
  %m = linalg.matmul ins(%a, %b : tensor<32x64xf32>, tensor<64x48xf32>)
         outs(%f : tensor<32x48xf32>) -> tensor<32x48xf32>
  return %m : tensor<32x48xf32>
}
"""
