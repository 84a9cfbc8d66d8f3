// xgen-dynamic-quantize-kernels: a dynamic quantization's full max and min reductions of one
// tensor become one generated kernel reading it once, and its quantize by the run-time scale
// and zero point another (with the uint8 -> int8 "- 128" after it, where that is its only
// reader). Must not fire on a quantize by a constant scale, a reduction over some dimensions
// only, a sum, an accumulator that is not a constant, or a tensor under 4096 elements.
// RUN: xgen-opt %s --split-input-file -p 'xgen-dynamic-quantize-kernels' | FileCheck %s
// RUN: xgen-opt %s --split-input-file -p 'xgen-dynamic-quantize-kernels{enable=false}' | FileCheck %s --check-prefix=OFF

#id = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
#s = affine_map<() -> ()>
// ONNX DynamicQuantizeLinear (uint8) as the frontend imports it, then the "- 128" that makes
// its bytes a library's int8 source.
// CHECK: func.func private @xgen_quantize_0(tensor<8192xf32>, tensor<1xf32>, tensor<1xi8>) -> tensor<8192xi8> attributes {xgen.executable = {{.*}}xgen_quantize_0_impl(memref<8192xf32>, memref<1xf32>, memref<1xi8>, memref<8192xi8>, index)
// CHECK: func.func private @xgen_minmax_0_call(%{{.*}}: tensor<8192xf32>) -> (tensor<f32>, tensor<f32>)
// CHECK: call @xgen_minmax_0(%{{.*}}) : (tensor<8192xf32>) -> tensor<2xf32>
// CHECK-NOT: linalg.reduce
// CHECK: return
// CHECK-LABEL: func.func @dynamic_uint8
// CHECK: %[[F:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1]] : tensor<64x128xf32> into tensor<8192xf32>
// CHECK: %[[MM:.*]]:2 = call @xgen_minmax_0_call(%[[F]])
// CHECK-NOT: iterator_types = ["reduction", "reduction"]
// CHECK: arith.maximumf %{{.*}}, %{{.*}}
// CHECK: arith.minimumf %{{.*}}, %{{.*}}
// CHECK: %[[Q:.*]] = call @xgen_quantize_0_call(%arg0, %{{.*}}, %{{.*}}) : (tensor<64x128xf32>, tensor<f32>, tensor<i8>) -> tensor<64x128xi8>
// CHECK-NOT: arith.addi
// CHECK: return %[[Q]]
// OFF-LABEL: func.func @dynamic_uint8
// OFF-NOT: call
// OFF: return
func.func @dynamic_uint8(%x: tensor<64x128xf32>) -> (tensor<64x128xi8>, tensor<f32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %inf = arith.constant 0x7F800000 : f32
  %zero = arith.constant 0.0 : f32
  %top = arith.constant 255.0 : f32
  %m128 = arith.constant -128 : i8
  %e = tensor.empty() : tensor<f32>
  %lo0 = linalg.fill ins(%ninf : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %hi0 = linalg.fill ins(%inf : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %max = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction", "reduction"]} ins(%x : tensor<64x128xf32>) outs(%lo0 : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.maximumf %in, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %min = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction", "reduction"]} ins(%x : tensor<64x128xf32>) outs(%hi0 : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.minimumf %in, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %scale = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []} ins(%max, %min : tensor<f32>, tensor<f32>) outs(%e : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %a0 = arith.maximumf %a, %zero : f32
    %b0 = arith.minimumf %b, %zero : f32
    %d = arith.subf %a0, %b0 : f32
    %r = arith.divf %d, %top : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %ei = tensor.empty() : tensor<i8>
  %zp = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []} ins(%min, %scale : tensor<f32>, tensor<f32>) outs(%ei : tensor<i8>) {
  ^bb0(%b: f32, %sc: f32, %o: i8):
    %b0 = arith.minimumf %b, %zero : f32
    %q = arith.divf %b0, %sc : f32
    %n = arith.subf %zero, %q : f32
    %c = arith.minimumf %n, %top : f32
    %r = math.roundeven %c : f32
    %i = arith.fptoui %r : f32 to i8
    linalg.yield %i : i8
  } -> tensor<i8>
  %eq = tensor.empty() : tensor<64x128xi8>
  %q = linalg.generic {indexing_maps = [#id, #all, #all, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %zp, %scale : tensor<64x128xf32>, tensor<i8>, tensor<f32>) outs(%eq : tensor<64x128xi8>) {
  ^bb0(%in: f32, %z: i8, %sc: f32, %o: i8):
    %zf = arith.uitofp %z : i8 to f32
    %d = arith.divf %in, %sc : f32
    %r = math.roundeven %d : f32
    %a = arith.addf %r, %zf : f32
    %c0 = arith.maximumf %a, %zero : f32
    %c1 = arith.minimumf %c0, %top : f32
    %i = arith.fptoui %c1 : f32 to i8
    linalg.yield %i : i8
  } -> tensor<64x128xi8>
  %s8 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%q : tensor<64x128xi8>) outs(%eq : tensor<64x128xi8>) {
  ^bb0(%in: i8, %o: i8):
    %r = arith.addi %in, %m128 : i8
    linalg.yield %r : i8
  } -> tensor<64x128xi8>
  return %s8, %scale : tensor<64x128xi8>, tensor<f32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
// A tensor of two chunks: the kernel writes a (max, min) pair per chunk, a linalg.reduce
// finishes each. A lone max is a kernel too; the max of a second tensor of as many elements
// calls the same kernel. The int8 quantize (symmetric, no zero point, by a run-time scale)
// read by two ops keeps its bytes as they are.
// CHECK-NOT: @xgen_minmax_1
// CHECK: func.func private @xgen_quantize_0(tensor<65536xf32>, tensor<1xf32>, tensor<1xi8>) -> tensor<65536xi8>
// CHECK-NOT: @xgen_minmax_1
// CHECK: func.func private @xgen_minmax_0_call(%{{.*}}: tensor<65536xf32>) -> (tensor<f32>, tensor<f32>)
// CHECK: call @xgen_minmax_0(%{{.*}}) : (tensor<65536xf32>) -> tensor<4xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [2, 2] : tensor<4xf32> into tensor<2x2xf32>
// CHECK: linalg.reduce ins(%{{.*}} : tensor<2xf32>)
// CHECK: arith.maximumf
// CHECK: linalg.reduce ins(%{{.*}} : tensor<2xf32>)
// CHECK: arith.minimumf
// CHECK-LABEL: func.func @two_chunks
// CHECK: %[[MM:.*]]:2 = call @xgen_minmax_0_call(%{{.*}})
// CHECK: %[[Y:.*]]:2 = call @xgen_minmax_0_call(%{{.*}})
// CHECK: %[[Q:.*]] = call @xgen_quantize_0_call(%arg0, %[[MM]]#0, %{{.*}}) : (tensor<256x256xf32>, tensor<f32>, tensor<1xi8>) -> tensor<256x256xi8>
// CHECK: return %[[Q]], %[[Q]], %[[Y]]#0
func.func @two_chunks(%x: tensor<256x256xf32>, %y: tensor<65536xf32>) -> (tensor<256x256xi8>, tensor<256x256xi8>, tensor<f32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %lo = arith.constant -127.0 : f32
  %hi = arith.constant 127.0 : f32
  %e = tensor.empty() : tensor<f32>
  %lo0 = linalg.fill ins(%ninf : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %max = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction", "reduction"]} ins(%x : tensor<256x256xf32>) outs(%lo0 : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.maximumf %acc, %in : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %ymax = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%y : tensor<65536xf32>) outs(%lo0 : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.maximumf %in, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %eq = tensor.empty() : tensor<256x256xi8>
  %q = linalg.generic {indexing_maps = [#id, #all, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %max : tensor<256x256xf32>, tensor<f32>) outs(%eq : tensor<256x256xi8>) {
  ^bb0(%in: f32, %sc: f32, %o: i8):
    %d = arith.divf %in, %sc : f32
    %r = math.roundeven %d : f32
    %c0 = arith.minimumf %r, %hi : f32
    %c1 = arith.maximumf %c0, %lo : f32
    %i = arith.fptosi %c1 : f32 to i8
    linalg.yield %i : i8
  } -> tensor<256x256xi8>
  return %q, %q, %ymax : tensor<256x256xi8>, tensor<256x256xi8>, tensor<f32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#all = affine_map<(d0, d1) -> ()>
#row = affine_map<(d0, d1) -> (d0)>
// Not fired: a static quantize (a constant scale), a row max (a softmax's), a sum, a max onto
// a run-time accumulator, a max of a small tensor.
// CHECK-LABEL: func.func @none
// CHECK-NOT: call
// CHECK: return
func.func @none(%x: tensor<64x128xf32>, %acc: tensor<f32>, %small: tensor<32x32xf32>) -> (tensor<64x128xi8>, tensor<64xf32>, tensor<f32>, tensor<f32>, tensor<f32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %cs = arith.constant dense<0.05> : tensor<f32>
  %eq = tensor.empty() : tensor<64x128xi8>
  %q = linalg.generic {indexing_maps = [#id, #all, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %cs : tensor<64x128xf32>, tensor<f32>) outs(%eq : tensor<64x128xi8>) {
  ^bb0(%in: f32, %sc: f32, %o: i8):
    %d = arith.divf %in, %sc : f32
    %r = math.roundeven %d : f32
    %c0 = arith.maximumf %r, %lo : f32
    %c1 = arith.minimumf %c0, %hi : f32
    %i = arith.fptosi %c1 : f32 to i8
    linalg.yield %i : i8
  } -> tensor<64x128xi8>
  %er = tensor.empty() : tensor<64xf32>
  %r0 = linalg.fill ins(%ninf : f32) outs(%er : tensor<64xf32>) -> tensor<64xf32>
  %rowmax = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<64x128xf32>) outs(%r0 : tensor<64xf32>) {
  ^bb0(%in: f32, %a: f32):
    %r = arith.maximumf %in, %a : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %e = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction", "reduction"]} ins(%x : tensor<64x128xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%in: f32, %a: f32):
    %r = arith.addf %in, %a : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %onto = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction", "reduction"]} ins(%x : tensor<64x128xf32>) outs(%acc : tensor<f32>) {
  ^bb0(%in: f32, %a: f32):
    %r = arith.maximumf %in, %a : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %n0 = linalg.fill ins(%ninf : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %smax = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction", "reduction"]} ins(%small : tensor<32x32xf32>) outs(%n0 : tensor<f32>) {
  ^bb0(%in: f32, %a: f32):
    %r = arith.maximumf %in, %a : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %q, %rowmax, %sum, %onto, %smax : tensor<64x128xi8>, tensor<64xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#all2 = affine_map<(d0, d1) -> ()>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#all3 = affine_map<(d0, d1, d2) -> ()>
// Quantizes of as many elements in two shapes (GPT-2's lm_head reads its input as 128x768,
// the blocks as 1x128x768): a kernel each, as each wrapper takes its shape; a third of the
// first shape shares the first's.
// CHECK-LABEL: func.func @two_shapes
// CHECK: call @xgen_quantize_[[A:[0-9]]]_call(%arg0, %arg2, %{{.*}}) : (tensor<64x128xf32>
// CHECK: call @xgen_quantize_[[B:[0-9]]]_call(%arg1, %arg2, %{{.*}}) : (tensor<1x64x128xf32>
// CHECK: call @xgen_quantize_[[A]]_call(%arg3, %arg2, %{{.*}}) : (tensor<64x128xf32>
func.func @two_shapes(%x: tensor<64x128xf32>, %y: tensor<1x64x128xf32>, %s: tensor<f32>, %w: tensor<64x128xf32>) -> (tensor<64x128xi8>, tensor<1x64x128xi8>, tensor<64x128xi8>) {
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %e2 = tensor.empty() : tensor<64x128xi8>
  %e3 = tensor.empty() : tensor<1x64x128xi8>
  %qx = linalg.generic {indexing_maps = [#id2, #all2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<64x128xf32>, tensor<f32>) outs(%e2 : tensor<64x128xi8>) {
  ^bb0(%in: f32, %sc: f32, %o: i8):
    %d = arith.divf %in, %sc : f32
    %r = math.roundeven %d : f32
    %c0 = arith.maximumf %r, %lo : f32
    %c1 = arith.minimumf %c0, %hi : f32
    %i = arith.fptosi %c1 : f32 to i8
    linalg.yield %i : i8
  } -> tensor<64x128xi8>
  %qy = linalg.generic {indexing_maps = [#id3, #all3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y, %s : tensor<1x64x128xf32>, tensor<f32>) outs(%e3 : tensor<1x64x128xi8>) {
  ^bb0(%in: f32, %sc: f32, %o: i8):
    %d = arith.divf %in, %sc : f32
    %r = math.roundeven %d : f32
    %c0 = arith.maximumf %r, %lo : f32
    %c1 = arith.minimumf %c0, %hi : f32
    %i = arith.fptosi %c1 : f32 to i8
    linalg.yield %i : i8
  } -> tensor<1x64x128xi8>
  %qw = linalg.generic {indexing_maps = [#id2, #all2, #id2], iterator_types = ["parallel", "parallel"]} ins(%w, %s : tensor<64x128xf32>, tensor<f32>) outs(%e2 : tensor<64x128xi8>) {
  ^bb0(%in: f32, %sc: f32, %o: i8):
    %d = arith.divf %in, %sc : f32
    %r = math.roundeven %d : f32
    %c0 = arith.maximumf %r, %lo : f32
    %c1 = arith.minimumf %c0, %hi : f32
    %i = arith.fptosi %c1 : f32 to i8
    linalg.yield %i : i8
  } -> tensor<64x128xi8>
  return %qx, %qy, %qw : tensor<64x128xi8>, tensor<1x64x128xi8>, tensor<64x128xi8>
}
