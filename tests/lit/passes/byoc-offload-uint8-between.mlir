// REQUIRES: onednn-s8
// keep_uint8_between (the call phase's last step, int8-bytes=uint8): a requantizing library
// op (s8q) whose int8 output another integer library op reads as its source writes it as
// uint8 (s8qu: its zero point plus 128), and that reader reads it so (u8q, its source's
// zero point plus 128): the same numbers. A reader that is not a library op (here the
// function's return) reads the int8 values back through a "- 128". An int8 source IREE's
// code computes is read plus 128, an elementwise op right after what computes it. Must not
// fire: an output no library op reads, an output whose reshape something else reads too,
// or int8-bytes=int8.
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn}' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-byoc-offload{backend=onednn int8-bytes=int8}' | FileCheck %s --check-prefix=OFF

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// Two requantizing matmuls in a row: the first writes uint8 (zero point 5 -> 133), the second
// reads it (5 -> 133) and writes int8 (its output goes to no library op).
// CHECK-DAG: @xgen_dnnl_matmul_s8qu_none_nb_4_4_4_m3z133_p1(
// CHECK-DAG: @xgen_dnnl_matmul_u8q_none_nb_4_4_4_133zm128_p1(
// CHECK-LABEL: func.func @chain
// CHECK: %[[A:.*]] = call @xgen_onednn_matmul_{{[0-9]+}}_call(%arg0,
// CHECK: %[[B:.*]] = call @xgen_onednn_matmul_{{[0-9]+}}_call(%[[A]],
// CHECK-NEXT: return %[[B]]
// OFF-DAG: @xgen_dnnl_matmul_s8q_none_nb_4_4_4_m3z5_p1(
// OFF-DAG: @xgen_dnnl_matmul_s8q_none_nb_4_4_4_5zm128_p1(
// OFF-LABEL: func.func @chain
// OFF-NOT: s8qu
func.func @chain(%x: tensor<4x4xi8>) -> tensor<4x4xi8> {
  %c0 = arith.constant 0 : i32
  %os = arith.constant 0.25 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %scale = arith.constant dense<[0.5, 0.25, 0.125, 1.0]> : tensor<4xf32>
  %zp1 = arith.constant -3 : i32
  %ozp1 = arith.constant 5.0 : f32
  %w1 = arith.constant dense<[[1, 2, 3, 4], [-1, -2, -3, -4], [2, 0, 0, 1], [0, 2, 1, 0]]> : tensor<4x4xi8>
  %e1 = tensor.empty() : tensor<4x4xi32>
  %i1 = linalg.fill ins(%c0 : i32) outs(%e1 : tensor<4x4xi32>) -> tensor<4x4xi32>
  %acc1 = linalg.quantized_matmul ins(%x, %w1, %zp1, %c0 : tensor<4x4xi8>, tensor<4x4xi8>, i32, i32) outs(%i1 : tensor<4x4xi32>) -> tensor<4x4xi32>
  %ef1 = tensor.empty() : tensor<4x4xf32>
  %f1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%acc1 : tensor<4x4xi32>) outs(%ef1 : tensor<4x4xf32>) {
  ^bb0(%a: i32, %o: f32):
    %v = arith.sitofp %a : i32 to f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %s1 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%f1, %scale : tensor<4x4xf32>, tensor<4xf32>) outs(%ef1 : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %eq1 = tensor.empty() : tensor<4x4xi8>
  %q1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s1 : tensor<4x4xf32>) outs(%eq1 : tensor<4x4xi8>) {
  ^bb0(%a: f32, %o: i8):
    %v = arith.divf %a, %os : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %ozp1 : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    %r4 = arith.fptosi %r3 : f32 to i8
    linalg.yield %r4 : i8
  } -> tensor<4x4xi8>
  %zp2 = arith.constant 5 : i32
  %ozp2 = arith.constant -128.0 : f32
  %w2 = arith.constant dense<[[1, 2, 3, 4], [-1, -2, -3, -4], [2, 0, 0, 1], [0, 2, 1, 0]]> : tensor<4x4xi8>
  %e2 = tensor.empty() : tensor<4x4xi32>
  %i2 = linalg.fill ins(%c0 : i32) outs(%e2 : tensor<4x4xi32>) -> tensor<4x4xi32>
  %acc2 = linalg.quantized_matmul ins(%q1, %w2, %zp2, %c0 : tensor<4x4xi8>, tensor<4x4xi8>, i32, i32) outs(%i2 : tensor<4x4xi32>) -> tensor<4x4xi32>
  %ef2 = tensor.empty() : tensor<4x4xf32>
  %f2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%acc2 : tensor<4x4xi32>) outs(%ef2 : tensor<4x4xf32>) {
  ^bb0(%a: i32, %o: f32):
    %v = arith.sitofp %a : i32 to f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %s2 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%f2, %scale : tensor<4x4xf32>, tensor<4xf32>) outs(%ef2 : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %eq2 = tensor.empty() : tensor<4x4xi8>
  %q2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s2 : tensor<4x4xf32>) outs(%eq2 : tensor<4x4xi8>) {
  ^bb0(%a: f32, %o: i8):
    %v = arith.divf %a, %os : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %ozp2 : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    %r4 = arith.fptosi %r3 : f32 to i8
    linalg.yield %r4 : i8
  } -> tensor<4x4xi8>
  return %q2 : tensor<4x4xi8>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// The first output also returned: the return reads it back through a "- 128".
// CHECK-DAG: @xgen_dnnl_matmul_s8qu_none_nb_4_4_4_m3z133_p1(
// CHECK-DAG: @xgen_dnnl_matmul_u8q_none_nb_4_4_4_133zm128_p1(
// CHECK-LABEL: func.func @read_elsewhere
// CHECK: %[[A:.*]] = call @xgen_onednn_matmul_{{[0-9]+}}_call(%arg0,
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<4x4xi8>
// CHECK-NEXT: %[[F:.*]] = linalg.generic {{.*}} ins(%[[A]] : tensor<4x4xi8>) outs(%[[E]] : tensor<4x4xi8>)
// CHECK: arith.addi %{{.*}}, %{{.*}} : i8
// CHECK: %[[B:.*]] = call @xgen_onednn_matmul_{{[0-9]+}}_call(%[[A]],
// CHECK: return %[[B]], %[[F]]
func.func @read_elsewhere(%x: tensor<4x4xi8>) -> (tensor<4x4xi8>, tensor<4x4xi8>) {
  %c0 = arith.constant 0 : i32
  %os = arith.constant 0.25 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %scale = arith.constant dense<[0.5, 0.25, 0.125, 1.0]> : tensor<4xf32>
  %zp1 = arith.constant -3 : i32
  %ozp1 = arith.constant 5.0 : f32
  %w1 = arith.constant dense<[[1, 2, 3, 4], [-1, -2, -3, -4], [2, 0, 0, 1], [0, 2, 1, 0]]> : tensor<4x4xi8>
  %e1 = tensor.empty() : tensor<4x4xi32>
  %i1 = linalg.fill ins(%c0 : i32) outs(%e1 : tensor<4x4xi32>) -> tensor<4x4xi32>
  %acc1 = linalg.quantized_matmul ins(%x, %w1, %zp1, %c0 : tensor<4x4xi8>, tensor<4x4xi8>, i32, i32) outs(%i1 : tensor<4x4xi32>) -> tensor<4x4xi32>
  %ef1 = tensor.empty() : tensor<4x4xf32>
  %f1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%acc1 : tensor<4x4xi32>) outs(%ef1 : tensor<4x4xf32>) {
  ^bb0(%a: i32, %o: f32):
    %v = arith.sitofp %a : i32 to f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %s1 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%f1, %scale : tensor<4x4xf32>, tensor<4xf32>) outs(%ef1 : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %eq1 = tensor.empty() : tensor<4x4xi8>
  %q1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s1 : tensor<4x4xf32>) outs(%eq1 : tensor<4x4xi8>) {
  ^bb0(%a: f32, %o: i8):
    %v = arith.divf %a, %os : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %ozp1 : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    %r4 = arith.fptosi %r3 : f32 to i8
    linalg.yield %r4 : i8
  } -> tensor<4x4xi8>
  %zp2 = arith.constant 5 : i32
  %ozp2 = arith.constant -128.0 : f32
  %w2 = arith.constant dense<[[1, 2, 3, 4], [-1, -2, -3, -4], [2, 0, 0, 1], [0, 2, 1, 0]]> : tensor<4x4xi8>
  %e2 = tensor.empty() : tensor<4x4xi32>
  %i2 = linalg.fill ins(%c0 : i32) outs(%e2 : tensor<4x4xi32>) -> tensor<4x4xi32>
  %acc2 = linalg.quantized_matmul ins(%q1, %w2, %zp2, %c0 : tensor<4x4xi8>, tensor<4x4xi8>, i32, i32) outs(%i2 : tensor<4x4xi32>) -> tensor<4x4xi32>
  %ef2 = tensor.empty() : tensor<4x4xf32>
  %f2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%acc2 : tensor<4x4xi32>) outs(%ef2 : tensor<4x4xf32>) {
  ^bb0(%a: i32, %o: f32):
    %v = arith.sitofp %a : i32 to f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %s2 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%f2, %scale : tensor<4x4xf32>, tensor<4xf32>) outs(%ef2 : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %eq2 = tensor.empty() : tensor<4x4xi8>
  %q2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s2 : tensor<4x4xf32>) outs(%eq2 : tensor<4x4xi8>) {
  ^bb0(%a: f32, %o: i8):
    %v = arith.divf %a, %os : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %ozp2 : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    %r4 = arith.fptosi %r3 : f32 to i8
    linalg.yield %r4 : i8
  } -> tensor<4x4xi8>
  return %q2, %q1 : tensor<4x4xi8>, tensor<4x4xi8>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// No library op reads the output: int8 stays.
// CHECK: @xgen_dnnl_matmul_s8q_none_nb_4_4_4_m3z5_p1(
// CHECK-LABEL: func.func @no_library_reader
// CHECK-NOT: s8qu
func.func @no_library_reader(%x: tensor<4x4xi8>) -> tensor<4x4xi8> {
  %c0 = arith.constant 0 : i32
  %os = arith.constant 0.25 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %scale = arith.constant dense<[0.5, 0.25, 0.125, 1.0]> : tensor<4xf32>
  %zp1 = arith.constant -3 : i32
  %ozp1 = arith.constant 5.0 : f32
  %w1 = arith.constant dense<[[1, 2, 3, 4], [-1, -2, -3, -4], [2, 0, 0, 1], [0, 2, 1, 0]]> : tensor<4x4xi8>
  %e1 = tensor.empty() : tensor<4x4xi32>
  %i1 = linalg.fill ins(%c0 : i32) outs(%e1 : tensor<4x4xi32>) -> tensor<4x4xi32>
  %acc1 = linalg.quantized_matmul ins(%x, %w1, %zp1, %c0 : tensor<4x4xi8>, tensor<4x4xi8>, i32, i32) outs(%i1 : tensor<4x4xi32>) -> tensor<4x4xi32>
  %ef1 = tensor.empty() : tensor<4x4xf32>
  %f1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%acc1 : tensor<4x4xi32>) outs(%ef1 : tensor<4x4xf32>) {
  ^bb0(%a: i32, %o: f32):
    %v = arith.sitofp %a : i32 to f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %s1 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%f1, %scale : tensor<4x4xf32>, tensor<4xf32>) outs(%ef1 : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %eq1 = tensor.empty() : tensor<4x4xi8>
  %q1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s1 : tensor<4x4xf32>) outs(%eq1 : tensor<4x4xi8>) {
  ^bb0(%a: f32, %o: i8):
    %v = arith.divf %a, %os : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %ozp1 : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    %r4 = arith.fptosi %r3 : f32 to i8
    linalg.yield %r4 : i8
  } -> tensor<4x4xi8>
  return %q1 : tensor<4x4xi8>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// A reshape of the output read by the library op (through a second reshape) and returned:
// both kinds of reader behind one view, so int8 stays.
// CHECK-DAG: @xgen_dnnl_matmul_s8q_none_nb_4_4_4_m3z5_p1(
// CHECK-DAG: @xgen_dnnl_matmul_s8q_none_nb_4_4_4_5zm128_p1(
// CHECK-LABEL: func.func @mixed_behind_a_view
// CHECK-NOT: u8
func.func @mixed_behind_a_view(%x: tensor<4x4xi8>) -> (tensor<4x4xi8>, tensor<2x2x4xi8>) {
  %c0 = arith.constant 0 : i32
  %os = arith.constant 0.25 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %scale = arith.constant dense<[0.5, 0.25, 0.125, 1.0]> : tensor<4xf32>
  %zp1 = arith.constant -3 : i32
  %ozp1 = arith.constant 5.0 : f32
  %w1 = arith.constant dense<[[1, 2, 3, 4], [-1, -2, -3, -4], [2, 0, 0, 1], [0, 2, 1, 0]]> : tensor<4x4xi8>
  %e1 = tensor.empty() : tensor<4x4xi32>
  %i1 = linalg.fill ins(%c0 : i32) outs(%e1 : tensor<4x4xi32>) -> tensor<4x4xi32>
  %acc1 = linalg.quantized_matmul ins(%x, %w1, %zp1, %c0 : tensor<4x4xi8>, tensor<4x4xi8>, i32, i32) outs(%i1 : tensor<4x4xi32>) -> tensor<4x4xi32>
  %ef1 = tensor.empty() : tensor<4x4xf32>
  %f1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%acc1 : tensor<4x4xi32>) outs(%ef1 : tensor<4x4xf32>) {
  ^bb0(%a: i32, %o: f32):
    %v = arith.sitofp %a : i32 to f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %s1 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%f1, %scale : tensor<4x4xf32>, tensor<4xf32>) outs(%ef1 : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %eq1 = tensor.empty() : tensor<4x4xi8>
  %q1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s1 : tensor<4x4xf32>) outs(%eq1 : tensor<4x4xi8>) {
  ^bb0(%a: f32, %o: i8):
    %v = arith.divf %a, %os : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %ozp1 : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    %r4 = arith.fptosi %r3 : f32 to i8
    linalg.yield %r4 : i8
  } -> tensor<4x4xi8>
  %view = tensor.expand_shape %q1 [[0, 1], [2]] output_shape [2, 2, 4] : tensor<4x4xi8> into tensor<2x2x4xi8>
  %c = tensor.collapse_shape %view [[0, 1], [2]] : tensor<2x2x4xi8> into tensor<4x4xi8>
  %zp2 = arith.constant 5 : i32
  %ozp2 = arith.constant -128.0 : f32
  %w2 = arith.constant dense<[[1, 2, 3, 4], [-1, -2, -3, -4], [2, 0, 0, 1], [0, 2, 1, 0]]> : tensor<4x4xi8>
  %e2 = tensor.empty() : tensor<4x4xi32>
  %i2 = linalg.fill ins(%c0 : i32) outs(%e2 : tensor<4x4xi32>) -> tensor<4x4xi32>
  %acc2 = linalg.quantized_matmul ins(%c, %w2, %zp2, %c0 : tensor<4x4xi8>, tensor<4x4xi8>, i32, i32) outs(%i2 : tensor<4x4xi32>) -> tensor<4x4xi32>
  %ef2 = tensor.empty() : tensor<4x4xf32>
  %f2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%acc2 : tensor<4x4xi32>) outs(%ef2 : tensor<4x4xf32>) {
  ^bb0(%a: i32, %o: f32):
    %v = arith.sitofp %a : i32 to f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %s2 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%f2, %scale : tensor<4x4xf32>, tensor<4xf32>) outs(%ef2 : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %eq2 = tensor.empty() : tensor<4x4xi8>
  %q2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s2 : tensor<4x4xf32>) outs(%eq2 : tensor<4x4xi8>) {
  ^bb0(%a: f32, %o: i8):
    %v = arith.divf %a, %os : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %ozp2 : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    %r4 = arith.fptosi %r3 : f32 to i8
    linalg.yield %r4 : i8
  } -> tensor<4x4xi8>
  return %q2, %view : tensor<4x4xi8>, tensor<2x2x4xi8>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// An int8 source IREE's code computes (a quantize of f32, here through a reshape there and
// back): the quantize computes its uint8 bytes instead (plus 128 before its yield), which
// the reader takes through the reshapes made again; the quantize's other reader (the
// return) reads the int8 values back through a "- 128".
// CHECK-DAG: @xgen_dnnl_matmul_u8q_none_nb_4_4_4_125zm128_p1(
// CHECK-LABEL: func.func @computed_source
// CHECK: %[[Q:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<4x4xf32>)
// CHECK: %[[I:.*]] = arith.fptosi
// CHECK: %[[B:.*]] = arith.addi %[[I]], %{{.*}} : i8
// CHECK-NEXT: linalg.yield %[[B]] : i8
// CHECK: %[[F:.*]] = linalg.generic {{.*}} ins(%[[Q]] : tensor<4x4xi8>)
// CHECK: arith.addi
// CHECK: %[[V:.*]] = tensor.expand_shape %[[Q]]
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[V]]
// CHECK: %[[Y:.*]] = call @xgen_onednn_matmul_{{[0-9]+}}_call(%[[C]],
// CHECK: return %[[Y]], %[[F]]
// OFF-DAG: @xgen_dnnl_matmul_s8q_none_nb_4_4_4_m3zm128_p1(
func.func @computed_source(%x: tensor<4x4xf32>) -> (tensor<4x4xi8>, tensor<4x4xi8>) {
  %c0 = arith.constant 0 : i32
  %os = arith.constant 0.25 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %scale = arith.constant dense<[0.5, 0.25, 0.125, 1.0]> : tensor<4xf32>
  %ozp0 = arith.constant -3.0 : f32
  %eq0 = tensor.empty() : tensor<4x4xi8>
  %q0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x4xf32>) outs(%eq0 : tensor<4x4xi8>) {
  ^bb0(%a: f32, %o: i8):
    %v = arith.divf %a, %os : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %ozp0 : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    %r4 = arith.fptosi %r3 : f32 to i8
    linalg.yield %r4 : i8
  } -> tensor<4x4xi8>
  %view = tensor.expand_shape %q0 [[0, 1], [2]] output_shape [2, 2, 4] : tensor<4x4xi8> into tensor<2x2x4xi8>
  %c = tensor.collapse_shape %view [[0, 1], [2]] : tensor<2x2x4xi8> into tensor<4x4xi8>
  %zp1 = arith.constant -3 : i32
  %ozp1 = arith.constant -128.0 : f32
  %w1 = arith.constant dense<[[1, 2, 3, 4], [-1, -2, -3, -4], [2, 0, 0, 1], [0, 2, 1, 0]]> : tensor<4x4xi8>
  %e1 = tensor.empty() : tensor<4x4xi32>
  %i1 = linalg.fill ins(%c0 : i32) outs(%e1 : tensor<4x4xi32>) -> tensor<4x4xi32>
  %acc1 = linalg.quantized_matmul ins(%c, %w1, %zp1, %c0 : tensor<4x4xi8>, tensor<4x4xi8>, i32, i32) outs(%i1 : tensor<4x4xi32>) -> tensor<4x4xi32>
  %ef1 = tensor.empty() : tensor<4x4xf32>
  %f1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%acc1 : tensor<4x4xi32>) outs(%ef1 : tensor<4x4xf32>) {
  ^bb0(%a: i32, %o: f32):
    %v = arith.sitofp %a : i32 to f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %s1 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%f1, %scale : tensor<4x4xf32>, tensor<4xf32>) outs(%ef1 : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %eq1 = tensor.empty() : tensor<4x4xi8>
  %q1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s1 : tensor<4x4xf32>) outs(%eq1 : tensor<4x4xi8>) {
  ^bb0(%a: f32, %o: i8):
    %v = arith.divf %a, %os : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %ozp1 : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    %r4 = arith.fptosi %r3 : f32 to i8
    linalg.yield %r4 : i8
  } -> tensor<4x4xi8>
  return %q1, %q0 : tensor<4x4xi8>, tensor<4x4xi8>
}
