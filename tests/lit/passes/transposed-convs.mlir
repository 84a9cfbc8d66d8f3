// RUN: xgen-opt %s --split-input-file -p xgen-transposed-convs | FileCheck %s

// A 2x2 stride-2 ConvTranspose (2 -> 3 channels) as torch-mlir lowers it: the input inserted
// at stride 2 into zeros, the filter flipped by a gather, a stride-1 conv. It becomes one 1x1
// conv with 2*2*3 filters over the real input (filter (a, b, f) = W[:, f, a, b]: the taps of
// output phase (a, b)), then the phases interleaved (expand, transpose, collapse).
// CHECK-LABEL: func.func @k2s2
// CHECK: %[[W:.*]] = arith.constant dense<{{.*}}0.000000e+00{{.*}}1.200000e+01{{.*}}4.000000e+00{{.*}}1.600000e+01{{.*}}> : tensor<12x2x1x1xf32>
// CHECK: %[[Z:.*]] = linalg.conv_2d_nchw_fchw {{.*}} ins(%arg0, %[[W]] : tensor<1x2x3x3xf32>, tensor<12x2x1x1xf32>) outs(%{{.*}} : tensor<1x12x3x3xf32>)
// CHECK: %[[E:.*]] = tensor.expand_shape %[[Z]] {{\[\[}}0], [1, 2, 3], [4], [5]] {{.*}} into tensor<1x2x2x3x3x3xf32>
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[E]] : tensor<1x2x2x3x3x3xf32>) {{.*}} permutation = [0, 3, 4, 1, 5, 2]
// CHECK: %[[Y:.*]] = tensor.collapse_shape %[[T]] {{\[\[}}0], [1], [2, 3], [4, 5]] : tensor<1x3x3x2x3x2xf32> into tensor<1x3x6x6xf32>
// CHECK: return %[[Y]]
// CHECK-NOT: tensor.insert_slice
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @k2s2(%x: tensor<1x2x3x3xf32>) -> tensor<1x3x6x6xf32> {
  %zero = arith.constant 0.0 : f32
  %dv = arith.constant 0.0 : f32
  %w = arith.constant dense<[[[[0.0, 1.0],   [2.0, 3.0]],  [[4.0, 5.0],   [6.0, 7.0]],  [[8.0, 9.0],   [10.0, 11.0]]], [[[12.0, 13.0],   [14.0, 15.0]],  [[16.0, 17.0],   [18.0, 19.0]],  [[20.0, 21.0],   [22.0, 23.0]]]]> : tensor<2x3x2x2xf32>
  %c1 = arith.constant 1 : index
  %fe = tensor.empty() : tensor<3x2x2x2xf32>
  %ff = linalg.fill ins(%zero : f32) outs(%fe : tensor<3x2x2x2xf32>) -> tensor<3x2x2x2xf32>
  %flip = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%ff : tensor<3x2x2x2xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %i3 = linalg.index 3 : index
    %r2 = arith.subi %c1, %i2 : index
    %r3 = arith.subi %c1, %i3 : index
    %e = tensor.extract %w[%i1, %i0, %r2, %r3] : tensor<2x3x2x2xf32>
    linalg.yield %e : f32
  } -> tensor<3x2x2x2xf32>
  %ze = tensor.empty() : tensor<1x2x7x7xf32>
  %z = linalg.fill ins(%dv : f32) outs(%ze : tensor<1x2x7x7xf32>) -> tensor<1x2x7x7xf32>
  %ins = tensor.insert_slice %x into %z[0, 0, 1, 1] [1, 2, 3, 3] [1, 1, 2, 2] : tensor<1x2x3x3xf32> into tensor<1x2x7x7xf32>
  %oe = tensor.empty() : tensor<1x3x6x6xf32>
  %o = linalg.fill ins(%zero : f32) outs(%oe : tensor<1x3x6x6xf32>) -> tensor<1x3x6x6xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%ins, %flip : tensor<1x2x7x7xf32>, tensor<3x2x2x2xf32>) outs(%o : tensor<1x3x6x6xf32>) -> tensor<1x3x6x6xf32>
  return %c : tensor<1x3x6x6xf32>
}

// -----

// A 4x4 stride-2 pad-1 ConvTranspose: phase 0 reads input rows u-1, u; phase 1 rows u, u+1
// (one conv for both would multiply inputs by zero weights): one 2x2-tap conv per phase, each
// over its own window of the input (a zero pad), concatenated, then interleaved.
// CHECK-LABEL: func.func @k4s2p1
// CHECK-COUNT-4: linalg.conv_2d_nchw_fchw {{.*}} tensor<1x2x4x4xf32>, tensor<3x2x2x2xf32>) outs(%{{.*}} : tensor<1x3x3x3xf32>)
// CHECK: tensor.concat dim(1) {{.*}} -> tensor<1x12x3x3xf32>
// CHECK: tensor.expand_shape
// CHECK: linalg.transpose
// CHECK: tensor.collapse_shape {{.*}} into tensor<1x3x6x6xf32>
// CHECK-NOT: tensor.insert_slice
func.func @k4s2p1(%x: tensor<1x2x3x3xf32>) -> tensor<1x3x6x6xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<1.5> : tensor<3x2x4x4xf32>
  %ze = tensor.empty() : tensor<1x2x9x9xf32>
  %z = linalg.fill ins(%zero : f32) outs(%ze : tensor<1x2x9x9xf32>) -> tensor<1x2x9x9xf32>
  %ins = tensor.insert_slice %x into %z[0, 0, 2, 2] [1, 2, 3, 3] [1, 1, 2, 2] : tensor<1x2x3x3xf32> into tensor<1x2x9x9xf32>
  %oe = tensor.empty() : tensor<1x3x6x6xf32>
  %o = linalg.fill ins(%zero : f32) outs(%oe : tensor<1x3x6x6xf32>) -> tensor<1x3x6x6xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%ins, %w : tensor<1x2x9x9xf32>, tensor<3x2x4x4xf32>) outs(%o : tensor<1x3x6x6xf32>) -> tensor<1x3x6x6xf32>
  return %c : tensor<1x3x6x6xf32>
}

// -----

// Must not fire: the tensor the input goes into is not zeros.
// CHECK-LABEL: func.func @ones
// CHECK: tensor.insert_slice
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} tensor<1x2x7x7xf32>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @ones(%x: tensor<1x2x3x3xf32>) -> tensor<1x3x6x6xf32> {
  %zero = arith.constant 0.0 : f32
  %dv = arith.constant 1.0 : f32
  %w = arith.constant dense<[[[[0.0, 1.0],   [2.0, 3.0]],  [[4.0, 5.0],   [6.0, 7.0]],  [[8.0, 9.0],   [10.0, 11.0]]], [[[12.0, 13.0],   [14.0, 15.0]],  [[16.0, 17.0],   [18.0, 19.0]],  [[20.0, 21.0],   [22.0, 23.0]]]]> : tensor<2x3x2x2xf32>
  %c1 = arith.constant 1 : index
  %fe = tensor.empty() : tensor<3x2x2x2xf32>
  %ff = linalg.fill ins(%zero : f32) outs(%fe : tensor<3x2x2x2xf32>) -> tensor<3x2x2x2xf32>
  %flip = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%ff : tensor<3x2x2x2xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %i3 = linalg.index 3 : index
    %r2 = arith.subi %c1, %i2 : index
    %r3 = arith.subi %c1, %i3 : index
    %e = tensor.extract %w[%i1, %i0, %r2, %r3] : tensor<2x3x2x2xf32>
    linalg.yield %e : f32
  } -> tensor<3x2x2x2xf32>
  %ze = tensor.empty() : tensor<1x2x7x7xf32>
  %z = linalg.fill ins(%dv : f32) outs(%ze : tensor<1x2x7x7xf32>) -> tensor<1x2x7x7xf32>
  %ins = tensor.insert_slice %x into %z[0, 0, 1, 1] [1, 2, 3, 3] [1, 1, 2, 2] : tensor<1x2x3x3xf32> into tensor<1x2x7x7xf32>
  %oe = tensor.empty() : tensor<1x3x6x6xf32>
  %o = linalg.fill ins(%zero : f32) outs(%oe : tensor<1x3x6x6xf32>) -> tensor<1x3x6x6xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%ins, %flip : tensor<1x2x7x7xf32>, tensor<3x2x2x2xf32>) outs(%o : tensor<1x3x6x6xf32>) -> tensor<1x3x6x6xf32>
  return %c : tensor<1x3x6x6xf32>
}

// -----

// Must not fire: the filter is not a constant (a function argument).
// CHECK-LABEL: func.func @runtime_filter
// CHECK: tensor.insert_slice
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} tensor<1x2x7x7xf32>, tensor<3x2x2x2xf32>
func.func @runtime_filter(%x: tensor<1x2x3x3xf32>, %f: tensor<3x2x2x2xf32>) -> tensor<1x3x6x6xf32> {
  %zero = arith.constant 0.0 : f32
  %dv = arith.constant 0.0 : f32
  %ze = tensor.empty() : tensor<1x2x7x7xf32>
  %z = linalg.fill ins(%dv : f32) outs(%ze : tensor<1x2x7x7xf32>) -> tensor<1x2x7x7xf32>
  %ins = tensor.insert_slice %x into %z[0, 0, 1, 1] [1, 2, 3, 3] [1, 1, 2, 2] : tensor<1x2x3x3xf32> into tensor<1x2x7x7xf32>
  %oe = tensor.empty() : tensor<1x3x6x6xf32>
  %o = linalg.fill ins(%zero : f32) outs(%oe : tensor<1x3x6x6xf32>) -> tensor<1x3x6x6xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%ins, %f : tensor<1x2x7x7xf32>, tensor<3x2x2x2xf32>) outs(%o : tensor<1x3x6x6xf32>) -> tensor<1x3x6x6xf32>
  return %c : tensor<1x3x6x6xf32>
}

// -----

// Must not fire: output_padding (a 7x7 output is no multiple of the stride).
// CHECK-LABEL: func.func @output_padding
// CHECK: tensor.insert_slice
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} tensor<1x2x8x8xf32>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @output_padding(%x: tensor<1x2x3x3xf32>) -> tensor<1x3x7x7xf32> {
  %zero = arith.constant 0.0 : f32
  %dv = arith.constant 0.0 : f32
  %w = arith.constant dense<[[[[0.0, 1.0],   [2.0, 3.0]],  [[4.0, 5.0],   [6.0, 7.0]],  [[8.0, 9.0],   [10.0, 11.0]]], [[[12.0, 13.0],   [14.0, 15.0]],  [[16.0, 17.0],   [18.0, 19.0]],  [[20.0, 21.0],   [22.0, 23.0]]]]> : tensor<2x3x2x2xf32>
  %c1 = arith.constant 1 : index
  %fe = tensor.empty() : tensor<3x2x2x2xf32>
  %ff = linalg.fill ins(%zero : f32) outs(%fe : tensor<3x2x2x2xf32>) -> tensor<3x2x2x2xf32>
  %flip = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%ff : tensor<3x2x2x2xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %i3 = linalg.index 3 : index
    %r2 = arith.subi %c1, %i2 : index
    %r3 = arith.subi %c1, %i3 : index
    %e = tensor.extract %w[%i1, %i0, %r2, %r3] : tensor<2x3x2x2xf32>
    linalg.yield %e : f32
  } -> tensor<3x2x2x2xf32>
  %ze = tensor.empty() : tensor<1x2x8x8xf32>
  %z = linalg.fill ins(%dv : f32) outs(%ze : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %ins = tensor.insert_slice %x into %z[0, 0, 1, 1] [1, 2, 3, 3] [1, 1, 2, 2] : tensor<1x2x3x3xf32> into tensor<1x2x8x8xf32>
  %oe = tensor.empty() : tensor<1x3x7x7xf32>
  %o = linalg.fill ins(%zero : f32) outs(%oe : tensor<1x3x7x7xf32>) -> tensor<1x3x7x7xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%ins, %flip : tensor<1x2x8x8xf32>, tensor<3x2x2x2xf32>) outs(%o : tensor<1x3x7x7xf32>) -> tensor<1x3x7x7xf32>
  return %c : tensor<1x3x7x7xf32>
}
