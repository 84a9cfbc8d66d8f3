// RUN: xgen-opt %s -p xgen-mapping-types | FileCheck %s
// Mapping types come from indexing maps and structure, not op names: named and generic forms
// of the same computation get the same type.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#col = affine_map<(d0, d1) -> (d0)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
#str = affine_map<(d0, d1) -> (d0 * 2, d1)>

// CHECK-LABEL: func.func @types
func.func @types(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %bias: tensor<8xf32>,
                 %big: tensor<8x8xf32>, %idx: tensor<4xindex>, %img: tensor<1x3x8x8xf32>,
                 %w: tensor<2x3x3x3xf32>) -> () {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  // CHECK: linalg.generic {{.*}}ins(%arg0, %arg0 {{.*}}xgen.mapping = "One-to-One"
  %add = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a, %a : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  // A bias add broadcasts a side operand but keeps its main input's map: One-to-One.
  // CHECK: linalg.generic {{.*}}ins(%arg0, %arg2 {{.*}}xgen.mapping = "One-to-One"
  %biased = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a, %bias : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  // Only a projected input: a broadcast, One-to-Many.
  // CHECK: linalg.generic {{.*}}ins(%arg2 : {{.*}}xgen.mapping = "One-to-Many"
  %bcast = linalg.generic {indexing_maps = [#row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%bias : tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%y: f32, %o: f32):
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  // CHECK: linalg.fill {{.*}}xgen.mapping = "One-to-Many"
  %fill = linalg.fill ins(%cst : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  // The same loops in another order: Shuffle, as a generic and as linalg.transpose.
  // CHECK: linalg.generic {{.*}}ins(%arg1 : {{.*}}xgen.mapping = "Shuffle"
  %t = linalg.generic {indexing_maps = [#tr, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%b : tensor<8x4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%y: f32, %o: f32):
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  // CHECK: linalg.transpose {{.*}}xgen.mapping = "Shuffle"
  %t2 = linalg.transpose ins(%b : tensor<8x4xf32>) outs(%e : tensor<4x8xf32>) permutation = [1, 0]
  // Index arithmetic in a map (a strided read): Reorganize.
  // CHECK: linalg.generic {{.*}}ins(%arg3 : {{.*}}xgen.mapping = "Reorganize"
  %s2 = linalg.generic {indexing_maps = [#str, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%big : tensor<8x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%y: f32, %o: f32):
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  // CHECK: tensor.expand_shape {{.*}}xgen.mapping = "Reorganize"
  %r = tensor.expand_shape %a [[0], [1, 2]] output_shape [4, 2, 4] : tensor<4x8xf32> into tensor<4x2x4xf32>
  // CHECK: tensor.pad
  // CHECK: } {xgen.mapping = "Reorganize"}
  %p = tensor.pad %a low[1, 1] high[1, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %cst : f32
  } : tensor<4x8xf32> to tensor<6x10xf32>
  // Reads through tensor.extract: a gather, One-to-Many.
  // CHECK: linalg.generic {{.*}}ins(%arg4 : {{.*}}xgen.mapping = "One-to-Many"
  // CHECK: tensor.extract
  %g = linalg.generic {indexing_maps = [#col, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%idx : tensor<4xindex>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%i: index, %o: f32):
    %j = linalg.index 1 : index
    %v = tensor.extract %big[%i, %j] : tensor<8x8xf32>
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  // Reductions are Many-to-Many: contractions (named or generic), convolutions, row sums.
  %e44 = tensor.empty() : tensor<4x4xf32>
  // CHECK: linalg.matmul {{.*}}xgen.mapping = "Many-to-Many"
  %mm = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x4xf32>) outs(%e44 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %eo = tensor.empty() : tensor<1x2x6x6xf32>
  // CHECK: linalg.conv_2d_nchw_fchw {{.*}}xgen.mapping = "Many-to-Many"
  %conv = linalg.conv_2d_nchw_fchw ins(%img, %w : tensor<1x3x8x8xf32>, tensor<2x3x3x3xf32>) outs(%eo : tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  %e4 = tensor.empty() : tensor<4xf32>
  // CHECK: linalg.generic {{.*}}"reduction"{{.*}}xgen.mapping = "Many-to-Many"
  %sum = linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x8xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  // A keepdim reduction writes a constant index: still a reduction, not index arithmetic.
  %e41 = tensor.empty() : tensor<4x1xf32>
  // CHECK: linalg.generic {{.*}}"reduction"{{.*}}xgen.mapping = "Many-to-Many"
  %keep = linalg.generic {indexing_maps = [#id2, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x8xf32>) outs(%e41 : tensor<4x1xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    linalg.yield %s : f32
  } -> tensor<4x1xf32>
  // CHECK: linalg.softmax {{.*}}xgen.mapping = "Many-to-Many"
  %sm = linalg.softmax dimension(1) ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// Not computations (constants, empty tensors, scalar extracts): no tag.
// CHECK-LABEL: func.func @not_compute
// CHECK-NOT: xgen.mapping
// CHECK: return
func.func @not_compute(%a: tensor<4xf32>) -> (tensor<4xf32>, f32) {
  %c0 = arith.constant 0 : index
  %e = tensor.empty() : tensor<4xf32>
  %x = tensor.extract %a[%c0] : tensor<4xf32>
  return %e, %x : tensor<4xf32>, f32
}
