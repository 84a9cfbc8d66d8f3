// RUN: xgen-opt %s --split-input-file -p 'xgen-fuse-gather-views{verbose=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=WHY
// RUN: xgen-opt %s --split-input-file -p 'xgen-fuse-gather-views,func.func(canonicalize),cse' | FileCheck %s

#ids = affine_map<(d0, d1, d2) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// MobileBERT's trigram embedding: [next token | token | previous token], zero past the ends.
// One gather over the 1x4x24 result: each element picks its piece by the channel index,
// shifts the row, reads ids and table there, and gives the pad value outside the rows.
// WHY: xgen-fuse-gather-views: {{.*}}: 3 views of a [1, 4, 8] gather -> one gather
// CHECK-LABEL: func.func @trigram
// CHECK-NOT: tensor.concat
// CHECK-NOT: tensor.pad
// CHECK-NOT: tensor.extract_slice
// CHECK: %[[OUT:.+]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x4x24xf32>)
// CHECK: %[[ROW:.+]] = linalg.index 1 : index
// CHECK: %[[CH:.+]] = linalg.index 2 : index
// CHECK-DAG: arith.addi %[[ROW]], %c1
// CHECK-DAG: arith.addi %[[ROW]], %c-1
// CHECK: %[[ID:.+]] = tensor.extract %arg0[
// CHECK: %[[I:.+]] = arith.index_cast %[[ID]]
// CHECK: %[[V:.+]] = tensor.extract %arg1[%[[I]],
// CHECK: arith.select {{.*}}, %[[V]], %{{.*}} : f32
// CHECK: return %[[OUT]]
func.func @trigram(%ids: tensor<1x4xi64>, %table: tensor<10x8xf32>) -> tensor<1x4x24xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x8xf32>
  %g = linalg.generic {indexing_maps = [#ids, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<1x4xi64>) outs(%e : tensor<1x4x8xf32>) {
  ^bb0(%i: i64, %o: f32):
    %row = arith.index_cast %i : i64 to index
    %col = linalg.index 2 : index
    %v = tensor.extract %table[%row, %col] : tensor<10x8xf32>
    linalg.yield %v : f32
  } -> tensor<1x4x8xf32>
  %next = tensor.extract_slice %g[0, 1, 0] [1, 3, 8] [1, 1, 1] : tensor<1x4x8xf32> to tensor<1x3x8xf32>
  %next_p = tensor.pad %next low[0, 0, 0] high[0, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index):
    tensor.yield %zero : f32
  } : tensor<1x3x8xf32> to tensor<1x4x8xf32>
  %prev = tensor.extract_slice %g[0, 0, 0] [1, 3, 8] [1, 1, 1] : tensor<1x4x8xf32> to tensor<1x3x8xf32>
  %prev_p = tensor.pad %prev low[0, 1, 0] high[0, 0, 0] {
  ^bb0(%a: index, %b: index, %c: index):
    tensor.yield %zero : f32
  } : tensor<1x3x8xf32> to tensor<1x4x8xf32>
  %cat = tensor.concat dim(2) %next_p, %g, %prev_p : (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x24xf32>
  return %cat : tensor<1x4x24xf32>
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// Must not fire: views of a computed (non-gather) tensor; recomputing its producer per view
// could cost more than the copies.
// WHY: left: the producer is not a gather
// CHECK-LABEL: func.func @not_a_gather
// CHECK: tensor.pad
// CHECK: tensor.concat
func.func @not_a_gather(%x: tensor<1x4x8xf32>) -> tensor<1x4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x8xf32>
  %g = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x4x8xf32>) outs(%e : tensor<1x4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<1x4x8xf32>
  %prev = tensor.extract_slice %g[0, 0, 0] [1, 3, 8] [1, 1, 1] : tensor<1x4x8xf32> to tensor<1x3x8xf32>
  %prev_p = tensor.pad %prev low[0, 1, 0] high[0, 0, 0] {
  ^bb0(%a: index, %b: index, %c: index):
    tensor.yield %zero : f32
  } : tensor<1x3x8xf32> to tensor<1x4x8xf32>
  %cat = tensor.concat dim(2) %g, %prev_p : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x16xf32>
  return %cat : tensor<1x4x16xf32>
}

// -----

#ids = affine_map<(d0, d1, d2) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// Must not fire: the gathered tensor has another reader (it would be gathered twice), and a
// strided slice.
// WHY: left: the gathered tensor has readers outside the concat
// WHY: left: a strided or rank-reducing slice
// CHECK-LABEL: func.func @other_reader
// CHECK: tensor.concat
// CHECK-LABEL: func.func @strided
// CHECK: tensor.concat
func.func @other_reader(%ids: tensor<1x4xi64>, %table: tensor<10x8xf32>) -> (tensor<1x4x16xf32>, tensor<1x4x8xf32>) {
  %e = tensor.empty() : tensor<1x4x8xf32>
  %g = linalg.generic {indexing_maps = [#ids, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<1x4xi64>) outs(%e : tensor<1x4x8xf32>) {
  ^bb0(%i: i64, %o: f32):
    %row = arith.index_cast %i : i64 to index
    %col = linalg.index 2 : index
    %v = tensor.extract %table[%row, %col] : tensor<10x8xf32>
    linalg.yield %v : f32
  } -> tensor<1x4x8xf32>
  %cat = tensor.concat dim(2) %g, %g : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x16xf32>
  return %cat, %g : tensor<1x4x16xf32>, tensor<1x4x8xf32>
}
func.func @strided(%ids: tensor<1x4xi64>, %table: tensor<10x8xf32>) -> tensor<1x2x16xf32> {
  %e = tensor.empty() : tensor<1x4x8xf32>
  %g = linalg.generic {indexing_maps = [#ids, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<1x4xi64>) outs(%e : tensor<1x4x8xf32>) {
  ^bb0(%i: i64, %o: f32):
    %row = arith.index_cast %i : i64 to index
    %col = linalg.index 2 : index
    %v = tensor.extract %table[%row, %col] : tensor<10x8xf32>
    linalg.yield %v : f32
  } -> tensor<1x4x8xf32>
  %even = tensor.extract_slice %g[0, 0, 0] [1, 2, 8] [1, 2, 1] : tensor<1x4x8xf32> to tensor<1x2x8xf32>
  %odd = tensor.extract_slice %g[0, 1, 0] [1, 2, 8] [1, 2, 1] : tensor<1x4x8xf32> to tensor<1x2x8xf32>
  %cat = tensor.concat dim(2) %even, %odd : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x16xf32>
  return %cat : tensor<1x2x16xf32>
}
