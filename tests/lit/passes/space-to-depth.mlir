// RUN: xgen-opt %s --split-input-file -p 'xgen-space-to-depth{verbose=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=WHY
// RUN: xgen-opt %s --split-input-file -p 'xgen-space-to-depth' | FileCheck %s

// YOLOX's Focus as torch-mlir imports it: rows sliced first, then columns; the phases in
// the order (0,0) (1,0) (0,1) (1,1) (row offset, column offset), so the concat index is
// 2 * column phase + row phase: the column digit goes first in the transpose.
// WHY: xgen-space-to-depth: {{.*}}: 4 strided slices (2x2 phases) -> one transpose
// CHECK-LABEL: func.func @focus
// CHECK-NOT: tensor.extract_slice
// CHECK-NOT: tensor.concat
// CHECK: %[[E:.+]] = tensor.expand_shape %arg0 {{\[}}[0], [1], [2, 3], [4, 5]] output_shape [1, 3, 4, 2, 4, 2]
// CHECK: %[[T:.+]] = linalg.transpose ins(%[[E]] : tensor<1x3x4x2x4x2xf32>) outs(%{{.*}} : tensor<1x2x2x3x4x4xf32>) permutation = [0, 5, 3, 1, 2, 4]
// CHECK: %[[C:.+]] = tensor.collapse_shape %[[T]] {{\[}}[0], [1, 2, 3], [4], [5]] : tensor<1x2x2x3x4x4xf32> into tensor<1x12x4x4xf32>
// CHECK: return %[[C]]
func.func @focus(%arg0: tensor<1x3x8x8xf32>) -> tensor<1x12x4x4xf32> {
  %a = tensor.extract_slice %arg0[0, 0, 0, 0] [1, 3, 4, 8] [1, 1, 2, 1] : tensor<1x3x8x8xf32> to tensor<1x3x4x8xf32>
  %a0 = tensor.extract_slice %a[0, 0, 0, 0] [1, 3, 4, 4] [1, 1, 1, 2] : tensor<1x3x4x8xf32> to tensor<1x3x4x4xf32>
  %a1 = tensor.extract_slice %a[0, 0, 0, 1] [1, 3, 4, 4] [1, 1, 1, 2] : tensor<1x3x4x8xf32> to tensor<1x3x4x4xf32>
  %b = tensor.extract_slice %arg0[0, 0, 1, 0] [1, 3, 4, 8] [1, 1, 2, 1] : tensor<1x3x8x8xf32> to tensor<1x3x4x8xf32>
  %b0 = tensor.extract_slice %b[0, 0, 0, 0] [1, 3, 4, 4] [1, 1, 1, 2] : tensor<1x3x4x8xf32> to tensor<1x3x4x4xf32>
  %b1 = tensor.extract_slice %b[0, 0, 0, 1] [1, 3, 4, 4] [1, 1, 1, 2] : tensor<1x3x4x8xf32> to tensor<1x3x4x4xf32>
  %c = tensor.concat dim(1) %a0, %b0, %a1, %b1 : (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>) -> tensor<1x12x4x4xf32>
  return %c : tensor<1x12x4x4xf32>
}

// -----

// One slice per phase in row-major phase order, 3x3 phases, NHWC (concat along the last
// dim): the row digit goes first.
// WHY: xgen-space-to-depth: {{.*}}: 9 strided slices (3x3 phases) -> one transpose
// CHECK-LABEL: func.func @nhwc_3x3
// CHECK: tensor.expand_shape %arg0 {{\[}}[0], [1, 2], [3, 4], [5]] output_shape [1, 2, 3, 2, 3, 2]
// CHECK: linalg.transpose {{.*}} permutation = [0, 1, 3, 2, 4, 5]
// CHECK: tensor.collapse_shape {{.*}} {{\[}}[0], [1], [2], [3, 4, 5]] : tensor<1x2x2x3x3x2xf32> into tensor<1x2x2x18xf32>
// CHECK-NOT: tensor.concat
func.func @nhwc_3x3(%x: tensor<1x6x6x2xf32>) -> tensor<1x2x2x18xf32> {
  %p00 = tensor.extract_slice %x[0, 0, 0, 0] [1, 2, 2, 2] [1, 3, 3, 1] : tensor<1x6x6x2xf32> to tensor<1x2x2x2xf32>
  %p01 = tensor.extract_slice %x[0, 0, 1, 0] [1, 2, 2, 2] [1, 3, 3, 1] : tensor<1x6x6x2xf32> to tensor<1x2x2x2xf32>
  %p02 = tensor.extract_slice %x[0, 0, 2, 0] [1, 2, 2, 2] [1, 3, 3, 1] : tensor<1x6x6x2xf32> to tensor<1x2x2x2xf32>
  %p10 = tensor.extract_slice %x[0, 1, 0, 0] [1, 2, 2, 2] [1, 3, 3, 1] : tensor<1x6x6x2xf32> to tensor<1x2x2x2xf32>
  %p11 = tensor.extract_slice %x[0, 1, 1, 0] [1, 2, 2, 2] [1, 3, 3, 1] : tensor<1x6x6x2xf32> to tensor<1x2x2x2xf32>
  %p12 = tensor.extract_slice %x[0, 1, 2, 0] [1, 2, 2, 2] [1, 3, 3, 1] : tensor<1x6x6x2xf32> to tensor<1x2x2x2xf32>
  %p20 = tensor.extract_slice %x[0, 2, 0, 0] [1, 2, 2, 2] [1, 3, 3, 1] : tensor<1x6x6x2xf32> to tensor<1x2x2x2xf32>
  %p21 = tensor.extract_slice %x[0, 2, 1, 0] [1, 2, 2, 2] [1, 3, 3, 1] : tensor<1x6x6x2xf32> to tensor<1x2x2x2xf32>
  %p22 = tensor.extract_slice %x[0, 2, 2, 0] [1, 2, 2, 2] [1, 3, 3, 1] : tensor<1x6x6x2xf32> to tensor<1x2x2x2xf32>
  %c = tensor.concat dim(3) %p00, %p01, %p02, %p10, %p11, %p12, %p20, %p21, %p22 : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x18xf32>
  return %c : tensor<1x2x2x18xf32>
}

// -----

// Must not fire: the phases in an order that is no digit expansion ((0,0) (1,1) (0,1) (1,0)):
// the concat is a gather, not a transpose.
// WHY: xgen-space-to-depth: {{.*}}: left: the phases are not listed in a digit order
// CHECK-LABEL: func.func @scrambled
// CHECK: tensor.concat
// CHECK-NOT: linalg.transpose
func.func @scrambled(%x: tensor<1x1x4x4xf32>) -> tensor<1x4x2x2xf32> {
  %p00 = tensor.extract_slice %x[0, 0, 0, 0] [1, 1, 2, 2] [1, 1, 2, 2] : tensor<1x1x4x4xf32> to tensor<1x1x2x2xf32>
  %p11 = tensor.extract_slice %x[0, 0, 1, 1] [1, 1, 2, 2] [1, 1, 2, 2] : tensor<1x1x4x4xf32> to tensor<1x1x2x2xf32>
  %p01 = tensor.extract_slice %x[0, 0, 0, 1] [1, 1, 2, 2] [1, 1, 2, 2] : tensor<1x1x4x4xf32> to tensor<1x1x2x2xf32>
  %p10 = tensor.extract_slice %x[0, 0, 1, 0] [1, 1, 2, 2] [1, 1, 2, 2] : tensor<1x1x4x4xf32> to tensor<1x1x2x2xf32>
  %c = tensor.concat dim(1) %p00, %p11, %p01, %p10 : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x4x2x2xf32>
  return %c : tensor<1x4x2x2xf32>
}

// -----

// Must not fire: a phase missing and one repeated.
// WHY: xgen-space-to-depth: {{.*}}: left: the phases are not listed in a digit order
// CHECK-LABEL: func.func @repeated
// CHECK: tensor.concat
func.func @repeated(%x: tensor<1x1x4x4xf32>) -> tensor<1x4x2x2xf32> {
  %p00 = tensor.extract_slice %x[0, 0, 0, 0] [1, 1, 2, 2] [1, 1, 2, 2] : tensor<1x1x4x4xf32> to tensor<1x1x2x2xf32>
  %p01 = tensor.extract_slice %x[0, 0, 0, 1] [1, 1, 2, 2] [1, 1, 2, 2] : tensor<1x1x4x4xf32> to tensor<1x1x2x2xf32>
  %c = tensor.concat dim(1) %p00, %p01, %p01, %p00 : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x4x2x2xf32>
  return %c : tensor<1x4x2x2xf32>
}

// -----

// Must not fire: an odd extent (5 rows: phase 0 has 3 rows, phase 1 has 2).
// WHY: xgen-space-to-depth: {{.*}}: left: a piece is not one whole phase
// CHECK-LABEL: func.func @odd_extent
// CHECK: tensor.concat
func.func @odd_extent(%x: tensor<1x1x5x4xf32>) -> tensor<1x2x2x4xf32> {
  %p0 = tensor.extract_slice %x[0, 0, 0, 0] [1, 1, 2, 4] [1, 1, 2, 1] : tensor<1x1x5x4xf32> to tensor<1x1x2x4xf32>
  %p1 = tensor.extract_slice %x[0, 0, 1, 0] [1, 1, 2, 4] [1, 1, 2, 1] : tensor<1x1x5x4xf32> to tensor<1x1x2x4xf32>
  %c = tensor.concat dim(1) %p0, %p1 : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  return %c : tensor<1x2x2x4xf32>
}

// -----

// Must not fire: unit-stride pieces (an ordinary concat of two halves) and pieces of two
// different tensors.
// WHY: xgen-space-to-depth: {{.*}}: left: the pieces slice different tensors
// CHECK-LABEL: func.func @not_phases
// CHECK: tensor.concat
// CHECK: tensor.concat
// CHECK-NOT: linalg.transpose
func.func @not_phases(%x: tensor<1x1x4x4xf32>, %y: tensor<1x1x4x4xf32>) -> (tensor<1x2x2x4xf32>, tensor<1x2x2x2xf32>) {
  %h0 = tensor.extract_slice %x[0, 0, 0, 0] [1, 1, 2, 4] [1, 1, 1, 1] : tensor<1x1x4x4xf32> to tensor<1x1x2x4xf32>
  %h1 = tensor.extract_slice %x[0, 0, 2, 0] [1, 1, 2, 4] [1, 1, 1, 1] : tensor<1x1x4x4xf32> to tensor<1x1x2x4xf32>
  %c = tensor.concat dim(1) %h0, %h1 : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %a = tensor.extract_slice %x[0, 0, 0, 0] [1, 1, 2, 2] [1, 1, 2, 2] : tensor<1x1x4x4xf32> to tensor<1x1x2x2xf32>
  %b = tensor.extract_slice %y[0, 0, 0, 1] [1, 1, 2, 2] [1, 1, 2, 2] : tensor<1x1x4x4xf32> to tensor<1x1x2x2xf32>
  %d = tensor.concat dim(1) %a, %b : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32>
  return %c, %d : tensor<1x2x2x4xf32>, tensor<1x2x2x2xf32>
}

// -----

// Must not fire: the concat runs along the strided dim itself.
// WHY: xgen-space-to-depth: {{.*}}: left: the concat runs along a strided dim
// CHECK-LABEL: func.func @along_strided
// CHECK: tensor.concat
func.func @along_strided(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> {
  %p0 = tensor.extract_slice %x[0, 0, 0, 0] [1, 1, 2, 4] [1, 1, 2, 1] : tensor<1x1x4x4xf32> to tensor<1x1x2x4xf32>
  %p1 = tensor.extract_slice %x[0, 0, 1, 0] [1, 1, 2, 4] [1, 1, 2, 1] : tensor<1x1x4x4xf32> to tensor<1x1x2x4xf32>
  %c = tensor.concat dim(2) %p0, %p1 : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x4x4xf32>
  return %c : tensor<1x1x4x4xf32>
}

// -----

// Must not fire: a dynamic batch (its slices' sizes are values).
// WHY: xgen-space-to-depth: {{.*}}: left: a slice with dynamic offsets, sizes or strides
// CHECK-LABEL: func.func @dynamic_batch
// CHECK: tensor.concat
func.func @dynamic_batch(%x: tensor<?x1x4x4xf32>, %n: index) -> tensor<?x2x4x2xf32> {
  %p0 = tensor.extract_slice %x[0, 0, 0, 0] [%n, 1, 4, 2] [1, 1, 1, 2] : tensor<?x1x4x4xf32> to tensor<?x1x4x2xf32>
  %p1 = tensor.extract_slice %x[0, 0, 0, 1] [%n, 1, 4, 2] [1, 1, 1, 2] : tensor<?x1x4x4xf32> to tensor<?x1x4x2xf32>
  %c = tensor.concat dim(1) %p0, %p1 : (tensor<?x1x4x2xf32>, tensor<?x1x4x2xf32>) -> tensor<?x2x4x2xf32>
  return %c : tensor<?x2x4x2xf32>
}
