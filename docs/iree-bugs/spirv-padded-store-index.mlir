// IREE SPIR-V codegen: a 1x1 conv (matmul-like) whose result is zero-padded is stored
// straight into the padded buffer's interior (offset 1 along W), with the buffer typed as
// vector<2xf32> and the element index divided by 2 (floored): each vector lands one element
// off, so the padded tensor (what MobileNetV2's depthwise convs read) is wrong on Mesa's
// llvmpipe; llvm-cpu is right. With util.optimization_barrier between the ReLU and the pad
// (a separate copy dispatch) it is right too. Run: python run.py
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @main(%x: tensor<1x16x32x32xf32>, %w1: tensor<96x16x1x1xf32>) -> tensor<1x96x34x34xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x96x32x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<1x96x32x32xf32>) -> tensor<1x96x32x32xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w1 : tensor<1x16x32x32xf32>, tensor<96x16x1x1xf32>) outs(%acc : tensor<1x96x32x32xf32>) -> tensor<1x96x32x32xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c : tensor<1x96x32x32xf32>) outs(%e : tensor<1x96x32x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x96x32x32xf32>
  %p = tensor.pad %r low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x96x32x32xf32> to tensor<1x96x34x34xf32>
  return %p : tensor<1x96x34x34xf32>
}
