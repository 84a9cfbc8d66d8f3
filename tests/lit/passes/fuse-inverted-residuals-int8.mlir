// RUN: rm -rf %t.cache
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p "xgen-fuse-inverted-residuals{min-expanded-bytes=0 vector-bits=256}" | FileCheck %s
// RUN: cat %t.cache/kernels/*.c | FileCheck %s --check-prefix=SRC

// An int8 block computed in f32 (xgen-integer-in-float, xgen-elide-int-roundtrips): its 1x1
// convs are matmuls on NHWC rows, and between the layers the requantizes round, scale by
// per-channel constants and clamp. The kernel takes it: the activations' C reads the
// per-channel constants (c0, c1) for each block of channels, and rounds with xg_roundeven.
// SRC: static inline v16 xg_roundeven(v16 x)
// SRC: static inline v16 act_e(v16 v, const float* restrict cols)
// SRC-NEXT: (void)cols;
// SRC-NEXT: const v16 c0 = *(const v16u*)(cols + 0 * CE);
// SRC: xg_roundeven(v)
// SRC: static inline v16 act_d(v16 v, const float* restrict cols)
// SRC-NEXT: (void)cols;
// SRC-NEXT: const v16 c0 = *(const v16u*)(cols + 0 * CE);

#rows = affine_map<(d0, d1) -> (d0, d1)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>
// CHECK-LABEL: func.func @fires_rows(
// CHECK: %[[Y:.*]] = call @xgen_inverted_residual_1_call(%arg0, %{{.*}}) : (tensor<16x8xf32>, tensor<{{[0-9]+}}xf32>) -> tensor<16x8xf32>
// CHECK-NOT: linalg.matmul
// CHECK-NOT: linalg.depthwise
// CHECK: return %[[Y]] : tensor<16x8xf32>
func.func @fires_rows(%x: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %we = arith.constant dense<2.0> : tensor<8x16xf32>
  %wd = arith.constant dense<1.0> : tensor<3x3x16xf32>
  %wp = arith.constant dense<3.0> : tensor<16x8xf32>
  %s = arith.constant dense<[0.5, 0.25, 0.5, 0.25, 0.5, 0.25, 0.5, 0.25, 0.5, 0.25, 0.5, 0.25, 0.5, 0.25, 0.5, 0.25]> : tensor<16xf32>
  %zero = arith.constant 0.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %q = arith.constant 0.1 : f32
  %e0 = tensor.empty() : tensor<16x16xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %mm = linalg.matmul ins(%x, %we : tensor<16x8xf32>, tensor<8x16xf32>) outs(%f0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %r = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%mm : tensor<16x16xf32>) outs(%e0 : tensor<16x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.roundeven %a : f32
    linalg.yield %t : f32
  } -> tensor<16x16xf32>
  %v = tensor.expand_shape %r [[0, 1, 2], [3]] output_shape [1, 4, 4, 16] : tensor<16x16xf32> into tensor<1x4x4x16xf32>
  %e1 = tensor.empty() : tensor<1x4x4x16xf32>
  %sc = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v, %s : tensor<1x4x4x16xf32>, tensor<16xf32>) outs(%e1 : tensor<1x4x4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %d = arith.divf %m, %q : f32
    %t = math.roundeven %d : f32
    %u = arith.maximumf %t, %lo : f32
    %w = arith.minimumf %u, %hi : f32
    linalg.yield %w : f32
  } -> tensor<1x4x4x16xf32>
  %p = tensor.pad %sc low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x4x4x16xf32> to tensor<1x6x6x16xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %dw = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %wd : tensor<1x6x6x16xf32>, tensor<3x3x16xf32>) outs(%f1 : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %sd = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dw, %s : tensor<1x4x4x16xf32>, tensor<16xf32>) outs(%e1 : tensor<1x4x4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %t = math.roundeven %m : f32
    linalg.yield %t : f32
  } -> tensor<1x4x4x16xf32>
  %c = tensor.collapse_shape %sd [[0, 1, 2], [3]] : tensor<1x4x4x16xf32> into tensor<16x16xf32>
  %dq = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%c : tensor<16x16xf32>) outs(%e0 : tensor<16x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.subf %a, %lo : f32
    linalg.yield %t : f32
  } -> tensor<16x16xf32>
  %e2 = tensor.empty() : tensor<16x8xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<16x8xf32>) -> tensor<16x8xf32>
  %pm = linalg.matmul ins(%dq, %wp : tensor<16x16xf32>, tensor<16x8xf32>) outs(%f2 : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %pm : tensor<16x8xf32>
}

// -----

#rows = affine_map<(d0, d1) -> (d0, d1)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// Must not fire: an op between the convs that the kernel's C does not translate (a square
// root), so the expanded tensor is not the kernel's to keep.
// CHECK-LABEL: func.func @untranslated_op(
// CHECK-NOT: call
// CHECK: linalg.matmul
// CHECK: math.sqrt
// CHECK: linalg.depthwise_conv_2d_nhwc_hwc
// CHECK: linalg.matmul
func.func @untranslated_op(%x: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %we = arith.constant dense<2.0> : tensor<8x16xf32>
  %wd = arith.constant dense<1.0> : tensor<3x3x16xf32>
  %wp = arith.constant dense<3.0> : tensor<16x8xf32>
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<16x16xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %mm = linalg.matmul ins(%x, %we : tensor<16x8xf32>, tensor<8x16xf32>) outs(%f0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %v = tensor.expand_shape %mm [[0, 1, 2], [3]] output_shape [1, 4, 4, 16] : tensor<16x16xf32> into tensor<1x4x4x16xf32>
  %e1 = tensor.empty() : tensor<1x4x4x16xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v : tensor<1x4x4x16xf32>) outs(%e1 : tensor<1x4x4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.sqrt %a : f32
    linalg.yield %t : f32
  } -> tensor<1x4x4x16xf32>
  %p = tensor.pad %sq low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x4x4x16xf32> to tensor<1x6x6x16xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %dw = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %wd : tensor<1x6x6x16xf32>, tensor<3x3x16xf32>) outs(%f1 : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  %c = tensor.collapse_shape %dw [[0, 1, 2], [3]] : tensor<1x4x4x16xf32> into tensor<16x16xf32>
  %e2 = tensor.empty() : tensor<16x8xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<16x8xf32>) -> tensor<16x8xf32>
  %pm = linalg.matmul ins(%c, %wp : tensor<16x16xf32>, tensor<16x8xf32>) outs(%f2 : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %pm : tensor<16x8xf32>
}
