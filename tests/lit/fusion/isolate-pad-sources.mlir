// RUN: xgen-opt %s --split-input-file -p 'xgen-isolate-pad-sources{print=true}' 2>&1 >/dev/null | FileCheck %s --check-prefix=SAY
// RUN: xgen-opt %s --split-input-file -p 'xgen-isolate-pad-sources' | FileCheck %s

// A zero pad of a computed value (the ReLU6 after a 1x1 conv) reads it through a barrier, so
// IREE gives the pad its own copy dispatch instead of storing the producer's result into the
// padded buffer's interior.
// SAY: xgen-isolate-pad-sources: computed:
// SAY-NOT: xgen-isolate-pad-sources: argument
// CHECK-LABEL: func.func @computed
// CHECK: %[[R:.*]] = linalg.generic
// CHECK: %[[B:.*]] = util.optimization_barrier %[[R]] : tensor<4x8x8xf32>
// CHECK: tensor.pad %[[B]] low[0, 1, 1] high[0, 1, 1]
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @computed(%x: tensor<4x8x8xf32>) -> tensor<4x10x10xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<4x8x8xf32>) outs(%e : tensor<4x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x8x8xf32>
  %p = tensor.pad %r low[0, 1, 1] high[0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<4x8x8xf32> to tensor<4x10x10xf32>
  return %p : tensor<4x10x10xf32>
}

// -----
// Must not fire: a pad of a function argument or of a constant is a copy dispatch already.
// CHECK-LABEL: func.func @argument
// CHECK-NOT: util.optimization_barrier
// CHECK: tensor.pad %arg0
// CHECK: tensor.pad %{{.*}} low[1, 1]
// CHECK-NOT: util.optimization_barrier
func.func @argument(%x: tensor<4x8x8xf32>) -> (tensor<4x10x10xf32>, tensor<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant dense<1.0> : tensor<2x2xf32>
  %p = tensor.pad %x low[0, 1, 1] high[0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<4x8x8xf32> to tensor<4x10x10xf32>
  %q = tensor.pad %c low[1, 1] high[1, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<2x2xf32> to tensor<4x4xf32>
  return %p, %q : tensor<4x10x10xf32>, tensor<4x4xf32>
}
