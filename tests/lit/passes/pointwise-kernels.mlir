// RUN: rm -rf %t.cache
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p xgen-pointwise-kernels | FileCheck %s
// RUN: cat %t.cache/kernels/*.c | FileCheck %s --check-prefix=SRC
// RUN: xgen-opt %s --split-input-file -p "xgen-pointwise-kernels{min-padding=16 matvec=false}" | FileCheck %s --check-prefix=OFF
// RUN: xgen-opt %s --split-input-file -p "xgen-pointwise-kernels{convs=every}" | FileCheck %s --check-prefix=EVERY
// RUN: not xgen-opt %s --split-input-file -p "xgen-pointwise-kernels{convs=some}" 2>&1 | FileCheck %s --check-prefix=BAD

// A 1x1 conv over a 7x7 image (49 rows: IREE's 16-row tiles would pad them to 64) becomes a
// call of a generated kernel, with the activations and the residual add after it; so does a
// matmul of one row against a constant (a classifier head), with its bias add. With
// min-padding above any padding and matvec off, nothing is replaced (OFF).
// OFF-NOT: xgen_pointwise

// The ReLU6 translated op by op into the kernel's activation:
// SRC-DAG: const vi16 t0 = (v > SPLAT(0x0.0p+0f)); const v16 t1 = SEL(t0, v, SPLAT(0x0.0p+0f)); v = t1;

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>
// CHECK-LABEL: func.func private @xgen_pointwise_1(tensor<1568xf32>, tensor<528xf32>) -> tensor<784xf32>
// CHECK-SAME: xgen.executable = {{.*}}%gx = arith.constant 1 : index{{.*}}hal.import.static
// CHECK-LABEL: func.func @relu(
// CHECK: %[[W:.*]] = arith.constant dense_resource<xgen_pointwise_weights_{{[0-9]+}}> : tensor<528xf32>
// CHECK: %[[Y:.*]] = call @xgen_pointwise_1_call(%arg0, %[[W]])
// CHECK-NOT: linalg
// CHECK: return %[[Y]] : tensor<1x7x7x16xf32>
func.func @relu(%x: tensor<1x7x7x32xf32>) -> tensor<1x7x7x16xf32> {
  %w = arith.constant dense<0.25> : tensor<1x1x32x16xf32>
  %b = arith.constant 0.1 : f32
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %e0 = tensor.empty() : tensor<1x7x7x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x7x7x16xf32>) -> tensor<1x7x7x16xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x7x7x32xf32>, tensor<1x1x32x16xf32>) outs(%eb : tensor<1x7x7x16xf32>) -> tensor<1x7x7x16xf32>
  %ae = tensor.empty() : tensor<1x7x7x16xf32>
  %a = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c, %zero_t : tensor<1x7x7x16xf32>, tensor<f32>) outs(%ae : tensor<1x7x7x16xf32>) {
  ^bb0(%in: f32, %z: f32, %out: f32):
    %m = arith.cmpf ogt, %in, %z : f32
    %r = arith.select %m, %in, %z : f32
    linalg.yield %r : f32
  } -> tensor<1x7x7x16xf32>
  return %a : tensor<1x7x7x16xf32>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>
// The residual add as torch-mlir writes it, of NCHW views: the kernel adds the NHWC
// tensor the view is a transpose of, and its result is transposed back to the add's layout.
// CHECK-LABEL: func.func private @xgen_pointwise_1(tensor<784xf32>, tensor<272xf32>, tensor<784xf32>) -> tensor<784xf32>
// CHECK-LABEL: func.func @residual_nchw(
// CHECK: %[[Y:.*]] = call @xgen_pointwise_1_call(%arg0, %{{.*}}, %arg1)
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[Y]] {{.*}} permutation = [0, 3, 1, 2]
// CHECK-NOT: arith.addf
// CHECK: return %[[T]]
func.func @residual_nchw(%x: tensor<1x7x7x16xf32>, %r: tensor<1x7x7x16xf32>) -> tensor<1x16x7x7xf32> {
  %w = arith.constant dense<0.25> : tensor<1x1x16x16xf32>
  %b = arith.constant 0.1 : f32
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %e0 = tensor.empty() : tensor<1x7x7x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x7x7x16xf32>) -> tensor<1x7x7x16xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x7x7x16xf32>, tensor<1x1x16x16xf32>) outs(%eb : tensor<1x7x7x16xf32>) -> tensor<1x7x7x16xf32>
  %rne = tensor.empty() : tensor<1x16x7x7xf32>
  %rn = linalg.transpose ins(%r : tensor<1x7x7x16xf32>) outs(%rne : tensor<1x16x7x7xf32>) permutation = [0, 3, 1, 2]
  %te = tensor.empty() : tensor<1x16x7x7xf32>
  %t = linalg.transpose ins(%c : tensor<1x7x7x16xf32>) outs(%te : tensor<1x16x7x7xf32>) permutation = [0, 3, 1, 2]
  %se = tensor.empty() : tensor<1x16x7x7xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%rn, %t : tensor<1x16x7x7xf32>, tensor<1x16x7x7xf32>) outs(%se : tensor<1x16x7x7xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %sum = arith.addf %p, %q : f32
    linalg.yield %sum : f32
  } -> tensor<1x16x7x7xf32>
  return %s : tensor<1x16x7x7xf32>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>
// Must not take the add in: the other addend exists only as NCHW.
// CHECK-LABEL: func.func @residual_only_nchw(
// CHECK: call @xgen_pointwise_1_call(%arg0,
// CHECK: arith.addf
func.func @residual_only_nchw(%x: tensor<1x7x7x16xf32>, %rn: tensor<1x16x7x7xf32>) -> tensor<1x16x7x7xf32> {
  %w = arith.constant dense<0.25> : tensor<1x1x16x16xf32>
  %b = arith.constant 0.1 : f32
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %e0 = tensor.empty() : tensor<1x7x7x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x7x7x16xf32>) -> tensor<1x7x7x16xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x7x7x16xf32>, tensor<1x1x16x16xf32>) outs(%eb : tensor<1x7x7x16xf32>) -> tensor<1x7x7x16xf32>
  %te = tensor.empty() : tensor<1x16x7x7xf32>
  %t = linalg.transpose ins(%c : tensor<1x7x7x16xf32>) outs(%te : tensor<1x16x7x7xf32>) permutation = [0, 3, 1, 2]
  %se = tensor.empty() : tensor<1x16x7x7xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%rn, %t : tensor<1x16x7x7xf32>, tensor<1x16x7x7xf32>) outs(%se : tensor<1x16x7x7xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %sum = arith.addf %p, %q : f32
    linalg.yield %sum : f32
  } -> tensor<1x16x7x7xf32>
  return %s : tensor<1x16x7x7xf32>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>
// Must not fire: an elementwise op the kernel does not translate (math.exp) follows the
// conv; IREE fuses it into the conv's dispatch, where the kernel would leave it its own.
// CHECK-LABEL: func.func @exp_after(
// CHECK-NOT: call
// CHECK: linalg.conv_2d_nhwc_hwcf
// CHECK: math.exp
func.func @exp_after(%x: tensor<1x7x7x16xf32>) -> tensor<1x7x7x16xf32> {
  %w = arith.constant dense<0.25> : tensor<1x1x16x16xf32>
  %b = arith.constant 0.1 : f32
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %e0 = tensor.empty() : tensor<1x7x7x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x7x7x16xf32>) -> tensor<1x7x7x16xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x7x7x16xf32>, tensor<1x1x16x16xf32>) outs(%eb : tensor<1x7x7x16xf32>) -> tensor<1x7x7x16xf32>
  %ae = tensor.empty() : tensor<1x7x7x16xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c : tensor<1x7x7x16xf32>) outs(%ae : tensor<1x7x7x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  } -> tensor<1x7x7x16xf32>
  return %a : tensor<1x7x7x16xf32>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>
// Must not fire: an 8x8 image is 64 rows, 4 whole tiles for IREE. Under convs=every (the
// f32 convs over whole row tiles too, as a tune may decide) it fires, its one panel's rows in
// 4 workgroups along y of one register block each (EVERY).
// BAD: convs must be one of tuned, every, padded, got 'some'
// EVERY-LABEL: func.func private @xgen_pointwise_1(tensor<1024xf32>, tensor<272xf32>) -> tensor<1024xf32>
// EVERY-SAME: %gx = arith.constant 1 : index{{.*}}%gy = arith.constant 4 : index
// EVERY-LABEL: func.func @rows_fill_tiles(
// EVERY: call @xgen_pointwise_1_call
// CHECK-LABEL: func.func @rows_fill_tiles(
// CHECK-NOT: call
// CHECK: linalg.conv_2d_nhwc_hwcf
func.func @rows_fill_tiles(%x: tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32> {
  %w = arith.constant dense<0.25> : tensor<1x1x16x16xf32>
  %b = arith.constant 0.1 : f32
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %e0 = tensor.empty() : tensor<1x8x8x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x8x8x16xf32>, tensor<1x1x16x16xf32>) outs(%eb : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  return %c : tensor<1x8x8x16xf32>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>
// 24 output channels: the last panel is one vector, of which the kernel stores 8 columns.
// SRC-DAG: 49 rows x 16 -> 24, panels of 16 channels
// SRC-DAG: #define LAST_COLS 8
// CHECK-LABEL: func.func private @xgen_pointwise_1(tensor<784xf32>, tensor<544xf32>) -> tensor<1176xf32>
// CHECK-LABEL: func.func @channels_not_16(
// CHECK: call @xgen_pointwise_1_call
// CHECK-NOT: linalg.conv_2d_nhwc_hwcf
func.func @channels_not_16(%x: tensor<1x7x7x16xf32>) -> tensor<1x7x7x24xf32> {
  %w = arith.constant dense<0.25> : tensor<1x1x16x24xf32>
  %b = arith.constant 0.1 : f32
  %e0 = tensor.empty() : tensor<1x7x7x24xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x7x7x24xf32>) -> tensor<1x7x7x24xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x7x7x16xf32>, tensor<1x1x16x24xf32>) outs(%eb : tensor<1x7x7x24xf32>) -> tensor<1x7x7x24xf32>
  return %c : tensor<1x7x7x24xf32>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// Must not fire: 24 output channels and a residual add (the kernel adds whole vectors of r).
// CHECK-LABEL: func.func @channels_not_16_residual(
// CHECK-NOT: call
// CHECK: linalg.conv_2d_nhwc_hwcf
// CHECK: arith.addf
func.func @channels_not_16_residual(%x: tensor<1x7x7x16xf32>, %r: tensor<1x7x7x24xf32>) -> tensor<1x7x7x24xf32> {
  %w = arith.constant dense<0.25> : tensor<1x1x16x24xf32>
  %b = arith.constant 0.1 : f32
  %e0 = tensor.empty() : tensor<1x7x7x24xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<1x7x7x24xf32>) -> tensor<1x7x7x24xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x7x7x16xf32>, tensor<1x1x16x24xf32>) outs(%eb : tensor<1x7x7x24xf32>) -> tensor<1x7x7x24xf32>
  %a = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c, %r : tensor<1x7x7x24xf32>, tensor<1x7x7x24xf32>) outs(%e0 : tensor<1x7x7x24xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %s = arith.addf %in, %in2 : f32
    linalg.yield %s : f32
  } -> tensor<1x7x7x24xf32>
  return %a : tensor<1x7x7x24xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
// A classifier head: one row times the transpose of a constant, then the bias add, as
// torch-mlir writes a linear layer. The kernel sums from zero and adds the bias after
// (the IR's order); 40 columns are 3 panels of 16, the last storing 8.
// SRC-DAG: 1 rows x 64 -> 40, panels of 16 channels, 1 rows per register block
// SRC-DAG: acc[p][j] = SPLAT(0.0f)
// SRC-DAG: act(acc[p][j] + *(const v16u*)(bias + VL * j))
// CHECK-LABEL: func.func private @xgen_pointwise_1(tensor<64xf32>, tensor<3120xf32>) -> tensor<40xf32>
// CHECK-LABEL: func.func @classifier(
// CHECK: %[[Y:.*]] = call @xgen_pointwise_1_call(%arg0, %{{.*}})
// CHECK-NOT: linalg
// CHECK: return %[[Y]] : tensor<1x40xf32>
func.func @classifier(%x: tensor<1x64xf32>) -> tensor<1x40xf32> {
  %w = arith.constant dense<0.25> : tensor<40x64xf32>
  %bias = arith.constant dense<0.5> : tensor<40xf32>
  %zero = arith.constant 0.0 : f32
  %te = tensor.empty() : tensor<64x40xf32>
  %wt = linalg.transpose ins(%w : tensor<40x64xf32>) outs(%te : tensor<64x40xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<1x40xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x40xf32>) -> tensor<1x40xf32>
  %mm = linalg.matmul ins(%x, %wt : tensor<1x64xf32>, tensor<64x40xf32>) outs(%z : tensor<1x40xf32>) -> tensor<1x40xf32>
  %y = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]} ins(%mm, %bias : tensor<1x40xf32>, tensor<40xf32>) outs(%e : tensor<1x40xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<1x40xf32>
  return %y : tensor<1x40xf32>
}

// -----

// Must not fire: 4 rows are not a matrix-vector product (IREE's narrow data tiles take them).
// CHECK-LABEL: func.func @matmul_four_rows(
// CHECK-NOT: call
// CHECK: linalg.matmul
func.func @matmul_four_rows(%x: tensor<4x64xf32>) -> tensor<4x48xf32> {
  %w = arith.constant dense<0.25> : tensor<64x48xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x48xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x48xf32>) -> tensor<4x48xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x64xf32>, tensor<64x48xf32>) outs(%z : tensor<4x48xf32>) -> tensor<4x48xf32>
  return %mm : tensor<4x48xf32>
}

// -----

// Must not fire: the right-hand side is not a constant (attention's scores, say).
// CHECK-LABEL: func.func @matmul_rhs_not_constant(
// CHECK-NOT: call
// CHECK: linalg.matmul
func.func @matmul_rhs_not_constant(%x: tensor<1x64xf32>, %w: tensor<64x48xf32>) -> tensor<1x48xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x48xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x48xf32>) -> tensor<1x48xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<1x64xf32>, tensor<64x48xf32>) outs(%z : tensor<1x48xf32>) -> tensor<1x48xf32>
  return %mm : tensor<1x48xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
// Must not fire: tanh after the bias add (a BERT pooler) does not translate to the kernel's
// C; IREE fuses it into the matmul's dispatch.
// CHECK-LABEL: func.func @matmul_tanh(
// CHECK-NOT: call
// CHECK: linalg.matmul
// CHECK: math.tanh
func.func @matmul_tanh(%x: tensor<1x64xf32>) -> tensor<1x48xf32> {
  %w = arith.constant dense<0.25> : tensor<64x48xf32>
  %bias = arith.constant dense<0.5> : tensor<48xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x48xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x48xf32>) -> tensor<1x48xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<1x64xf32>, tensor<64x48xf32>) outs(%z : tensor<1x48xf32>) -> tensor<1x48xf32>
  %y = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]} ins(%mm, %bias : tensor<1x48xf32>, tensor<48xf32>) outs(%e : tensor<1x48xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<1x48xf32>
  %t = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<1x48xf32>) outs(%e : tensor<1x48xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.tanh %a : f32
    linalg.yield %r : f32
  } -> tensor<1x48xf32>
  return %t : tensor<1x48xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
// An int8 classifier xgen-integer-in-float computed in f32 (it converts one-row matmuls
// only for this kernel): its result is rounded back to i32, which the kernel does not
// translate but which is no reason to leave the product to IREE (whose f32 one-row matmul
// lost the dispatch steps, and whose integer one is slow): the kernel takes the product.
// CHECK-LABEL: func.func @matmul_rounded_to_integers(
// CHECK: %[[Y:.*]] = call @xgen_pointwise_{{[0-9]+}}_call(%arg0, %{{.*}})
// CHECK-NOT: linalg.matmul
// CHECK: math.roundeven
// CHECK: arith.fptosi %{{.*}} : f32 to i32
func.func @matmul_rounded_to_integers(%x: tensor<1x64xf32>) -> tensor<1x48xi32> {
  %w = arith.constant dense<2.0> : tensor<64x48xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x48xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x48xf32>) -> tensor<1x48xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<1x64xf32>, tensor<64x48xf32>) outs(%z : tensor<1x48xf32>) -> tensor<1x48xf32>
  %ei = tensor.empty() : tensor<1x48xi32>
  %q = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%mm : tensor<1x48xf32>) outs(%ei : tensor<1x48xi32>) {
  ^bb0(%a: f32, %o: i32):
    %r = math.roundeven %a : f32
    %i = arith.fptosi %r : f32 to i32
    linalg.yield %i : i32
  } -> tensor<1x48xi32>
  return %q : tensor<1x48xi32>
}

// -----

#id3 = affine_map<(d0, d1) -> (d0, d1)>
// The same classifier after xgen-elide-int-roundtrips: its requantize is f32 (round, scale,
// a per-column constant the matrix-vector kernel does not read); still no reason to leave
// the product to IREE: the kernel takes it and the requantize is one dispatch of 48 values.
// CHECK-LABEL: func.func @matmul_requantized_in_f32(
// CHECK: %[[Y:.*]] = call @xgen_pointwise_{{[0-9]+}}_call(%arg0, %{{.*}})
// CHECK-NOT: linalg.matmul
// CHECK: math.roundeven
func.func @matmul_requantized_in_f32(%x: tensor<1x64xf32>, %s: tensor<48xf32>) -> tensor<1x48xf32> {
  %w = arith.constant dense<2.0> : tensor<64x48xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x48xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x48xf32>) -> tensor<1x48xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<1x64xf32>, tensor<64x48xf32>) outs(%z : tensor<1x48xf32>) -> tensor<1x48xf32>
  %q = linalg.generic {indexing_maps = [#id3, affine_map<(d0, d1) -> (d1)>, #id3], iterator_types = ["parallel", "parallel"]} ins(%mm, %s : tensor<1x48xf32>, tensor<48xf32>) outs(%e : tensor<1x48xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = math.roundeven %a : f32
    %m = arith.mulf %r, %b : f32
    linalg.yield %m : f32
  } -> tensor<1x48xf32>
  return %q : tensor<1x48xf32>
}

// -----

// Batch 2: the images are more rows of one product (2x7x7 = 98 rows, 112 in IREE's tiles);
// the same kernel call, for 98 rows.
// CHECK-LABEL: func.func private @xgen_pointwise_1(tensor<1568xf32>, tensor<272xf32>) -> tensor<1568xf32>
// SRC-DAG: 98 rows x 16 -> 16, panels of 16 channels
// CHECK-LABEL: func.func @batch2(
// CHECK: call @xgen_pointwise_1_call(%arg0, %{{.*}}) : (tensor<2x7x7x16xf32>, tensor<272xf32>) -> tensor<2x7x7x16xf32>
// CHECK-NOT: linalg.conv_2d_nhwc_hwcf
func.func @batch2(%x: tensor<2x7x7x16xf32>) -> tensor<2x7x7x16xf32> {
  %w = arith.constant dense<0.25> : tensor<1x1x16x16xf32>
  %b = arith.constant 0.1 : f32
  %e0 = tensor.empty() : tensor<2x7x7x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<2x7x7x16xf32>) -> tensor<2x7x7x16xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<2x7x7x16xf32>, tensor<1x1x16x16xf32>) outs(%eb : tensor<2x7x7x16xf32>) -> tensor<2x7x7x16xf32>
  return %c : tensor<2x7x7x16xf32>
}

// -----

// Must not fire: batch 4 of 7x7 is 196 rows, which IREE's tiles pad by only 6% (under
// convs=every it fires).
// EVERY-LABEL: func.func @batch4_rows_fill_tiles(
// EVERY: call @xgen_pointwise_1_call
// CHECK-LABEL: func.func @batch4_rows_fill_tiles(
// CHECK-NOT: call
// CHECK: linalg.conv_2d_nhwc_hwcf
func.func @batch4_rows_fill_tiles(%x: tensor<4x7x7x16xf32>) -> tensor<4x7x7x16xf32> {
  %w = arith.constant dense<0.25> : tensor<1x1x16x16xf32>
  %b = arith.constant 0.1 : f32
  %e0 = tensor.empty() : tensor<4x7x7x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<4x7x7x16xf32>) -> tensor<4x7x7x16xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<4x7x7x16xf32>, tensor<1x1x16x16xf32>) outs(%eb : tensor<4x7x7x16xf32>) -> tensor<4x7x7x16xf32>
  return %c : tensor<4x7x7x16xf32>
}

// -----

// Must not fire: a dynamic batch (the kernels are generated for a static number of rows),
// not even under convs=every.
// EVERY-LABEL: func.func @dynamic_batch(
// EVERY-NOT: call
// EVERY: linalg.conv_2d_nhwc_hwcf
// CHECK-LABEL: func.func @dynamic_batch(
// CHECK-NOT: call
// CHECK: linalg.conv_2d_nhwc_hwcf
func.func @dynamic_batch(%x: tensor<?x7x7x16xf32>) -> tensor<?x7x7x16xf32> {
  %w = arith.constant dense<0.25> : tensor<1x1x16x16xf32>
  %b = arith.constant 0.1 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x7x7x16xf32>
  %e0 = tensor.empty(%n) : tensor<?x7x7x16xf32>
  %eb = linalg.fill ins(%b : f32) outs(%e0 : tensor<?x7x7x16xf32>) -> tensor<?x7x7x16xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<?x7x7x16xf32>, tensor<1x1x16x16xf32>) outs(%eb : tensor<?x7x7x16xf32>) -> tensor<?x7x7x16xf32>
  return %c : tensor<?x7x7x16xf32>
}
