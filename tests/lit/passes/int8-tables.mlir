// xgen-int8-tables: an elementwise function of one int8 tensor computed through floats with a
// transcendental becomes a lookup of a 256-entry table (int8 or f32, as the chain's output).
// Must not fire without a transcendental, across a second tensor, where an op of the chain is
// read elsewhere, or on a source that is not int8. A chain may end in integer arithmetic
// (a uint8 quantize's "+ 128", wrapping around as int8 does).
// RUN: xgen-opt %s --split-input-file -p 'xgen-int8-tables' | FileCheck %s
// With a toolchain (kernel=true, the cpu target) a table is read by a generated kernel
// (codegen/table_lookup.py) on the int8 source and the table.
// RUN: xgen-opt %s --split-input-file -p 'xgen-int8-tables{kernel=true}' | FileCheck %s --check-prefix=KERNEL

#id = affine_map<(d0, d1) -> (d0, d1)>
// A quantized SiLU (x * sigmoid(x) of the dequantized int8, quantized): one lookup of a
// 256-entry int8 table at x + 128.
// KERNEL: func.func private @xgen_table_0(tensor<32xi8>, tensor<256xi8>) -> tensor<32xi8> attributes {xgen.executable = {{.*}}xgen_table_0_impl(memref<32xi8>, memref<256xi8>, memref<32xi8>, index)
// KERNEL-LABEL: func.func @silu
// KERNEL: %[[T:.*]] = arith.constant dense_resource<{{.*}}> : tensor<256xi8>
// KERNEL: call @xgen_table_0_call(%arg0, %[[T]])
// KERNEL-NOT: linalg.generic
// KERNEL: return
// CHECK-LABEL: func.func @silu
// CHECK: %[[T:.*]] = arith.constant dense<{{.*}}> : tensor<256xi8>
// CHECK: linalg.generic
// CHECK: arith.extsi %{{.*}} : i8 to i32
// CHECK: tensor.extract %[[T]]
// CHECK-NOT: math.exp
// CHECK: return

func.func @silu(%x: tensor<4x8xi8>) -> tensor<4x8xi8> {
  %s = arith.constant 0.05 : f32
  %zp = arith.constant -3.0 : f32
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %os = arith.constant 0.02 : f32
  %ozp = arith.constant -128.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %eq = tensor.empty() : tensor<4x8xi8>
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xi8>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: i8, %o: f32):
    %f = arith.sitofp %a : i8 to f32
    %z = arith.subf %f, %zp : f32
    %v = arith.mulf %z, %s : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    %ex = math.exp %n : f32
    %den = arith.addf %ex, %one : f32
    %v = arith.divf %one, %den : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%d, %g : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<4x8xf32>) outs(%eq : tensor<4x8xi8>) {
  ^bb0(%a: f32, %o: i8):
    %v = arith.divf %a, %os : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %ozp : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    %r4 = arith.fptosi %r3 : f32 to i8
    linalg.yield %r4 : i8
  } -> tensor<4x8xi8>
  return %y : tensor<4x8xi8>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
// The same chain written as floats (a dequantized output another op reads): an f32 table.
// KERNEL-LABEL: func.func @to_float
// KERNEL: arith.constant dense_resource<{{.*}}> : tensor<256xf32>
// KERNEL: call @xgen_table_0_call
// KERNEL-NOT: math.exp
// CHECK-LABEL: func.func @to_float
// CHECK: arith.constant dense<{{.*}}> : tensor<256xf32>
// CHECK: tensor.extract
// CHECK-NOT: math.exp

func.func @to_float(%x: tensor<4x8xi8>) -> tensor<4x8xf32> {
  %s = arith.constant 0.05 : f32
  %zp = arith.constant -3.0 : f32
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %os = arith.constant 0.02 : f32
  %ozp = arith.constant -128.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %eq = tensor.empty() : tensor<4x8xi8>
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xi8>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: i8, %o: f32):
    %f = arith.sitofp %a : i8 to f32
    %z = arith.subf %f, %zp : f32
    %v = arith.mulf %z, %s : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    %ex = math.exp %n : f32
    %den = arith.addf %ex, %one : f32
    %v = arith.divf %one, %den : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
// Must not fire: no transcendental (a dequantized ReLU, requantized: a few arithmetic ops).
// KERNEL-LABEL: func.func @no_transcendental
// KERNEL-NOT: xgen_table
// KERNEL: arith.maximumf
// CHECK-LABEL: func.func @no_transcendental
// CHECK-NOT: tensor.extract
// CHECK: arith.maximumf

func.func @no_transcendental(%x: tensor<4x8xi8>) -> tensor<4x8xi8> {
  %s = arith.constant 0.05 : f32
  %zp = arith.constant -3.0 : f32
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %os = arith.constant 0.02 : f32
  %ozp = arith.constant -128.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %eq = tensor.empty() : tensor<4x8xi8>
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xi8>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: i8, %o: f32):
    %f = arith.sitofp %a : i8 to f32
    %z = arith.subf %f, %zp : f32
    %v = arith.mulf %z, %s : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.maximumf %a, %zero : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%r : tensor<4x8xf32>) outs(%eq : tensor<4x8xi8>) {
  ^bb0(%a: f32, %o: i8):
    %v = arith.divf %a, %os : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %ozp : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    %r4 = arith.fptosi %r3 : f32 to i8
    linalg.yield %r4 : i8
  } -> tensor<4x8xi8>
  return %y : tensor<4x8xi8>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
// A second tensor comes in (a product with another activation): not one int8 table; the
// sigmoid of the first alone is an f32 one, the product and quantize stay.
// CHECK-LABEL: func.func @two_tensors
// CHECK-NOT: tensor<256xi8>
// CHECK: arith.constant dense<{{.*}}> : tensor<256xf32>
// CHECK: arith.mulf
// CHECK: arith.fptosi

func.func @two_tensors(%x: tensor<4x8xi8>, %w: tensor<4x8xi8>) -> tensor<4x8xi8> {
  %s = arith.constant 0.05 : f32
  %zp = arith.constant -3.0 : f32
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %os = arith.constant 0.02 : f32
  %ozp = arith.constant -128.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %eq = tensor.empty() : tensor<4x8xi8>
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xi8>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: i8, %o: f32):
    %f = arith.sitofp %a : i8 to f32
    %z = arith.subf %f, %zp : f32
    %v = arith.mulf %z, %s : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %d2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<4x8xi8>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: i8, %o: f32):
    %f = arith.sitofp %a : i8 to f32
    %z = arith.subf %f, %zp : f32
    %v = arith.mulf %z, %s : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    %ex = math.exp %n : f32
    %den = arith.addf %ex, %one : f32
    %v = arith.divf %one, %den : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%d2, %g : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<4x8xf32>) outs(%eq : tensor<4x8xi8>) {
  ^bb0(%a: f32, %o: i8):
    %v = arith.divf %a, %os : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %ozp : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    %r4 = arith.fptosi %r3 : f32 to i8
    linalg.yield %r4 : i8
  } -> tensor<4x8xi8>
  return %y : tensor<4x8xi8>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
// Must not fire: an op of the chain is read elsewhere (the sigmoid is also returned).
// CHECK-LABEL: func.func @read_elsewhere
// CHECK-NOT: tensor.extract
// CHECK: math.exp

func.func @read_elsewhere(%x: tensor<4x8xi8>) -> (tensor<4x8xi8>, tensor<4x8xf32>) {
  %s = arith.constant 0.05 : f32
  %zp = arith.constant -3.0 : f32
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %os = arith.constant 0.02 : f32
  %ozp = arith.constant -128.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %eq = tensor.empty() : tensor<4x8xi8>
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xi8>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: i8, %o: f32):
    %f = arith.sitofp %a : i8 to f32
    %z = arith.subf %f, %zp : f32
    %v = arith.mulf %z, %s : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    %ex = math.exp %n : f32
    %den = arith.addf %ex, %one : f32
    %v = arith.divf %one, %den : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%d, %g : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<4x8xf32>) outs(%eq : tensor<4x8xi8>) {
  ^bb0(%a: f32, %o: i8):
    %v = arith.divf %a, %os : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %ozp : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    %r4 = arith.fptosi %r3 : f32 to i8
    linalg.yield %r4 : i8
  } -> tensor<4x8xi8>
  return %y, %g : tensor<4x8xi8>, tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
// Must not fire: the source is int32 (sums), not int8.
// CHECK-LABEL: func.func @int32_source
// CHECK-NOT: tensor.extract
// CHECK: math.exp

func.func @int32_source(%x: tensor<4x8xi32>) -> tensor<4x8xi8> {
  %s = arith.constant 0.05 : f32
  %zp = arith.constant -3.0 : f32
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %os = arith.constant 0.02 : f32
  %ozp = arith.constant -128.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %eq = tensor.empty() : tensor<4x8xi8>
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xi32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: i32, %o: f32):
    %f = arith.sitofp %a : i32 to f32
    %z = arith.subf %f, %zp : f32
    %v = arith.mulf %z, %s : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    %ex = math.exp %n : f32
    %den = arith.addf %ex, %one : f32
    %v = arith.divf %one, %den : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%g : tensor<4x8xf32>) outs(%eq : tensor<4x8xi8>) {
  ^bb0(%a: f32, %o: i8):
    %v = arith.divf %a, %os : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %ozp : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    %r4 = arith.fptosi %r3 : f32 to i8
    linalg.yield %r4 : i8
  } -> tensor<4x8xi8>
  return %y : tensor<4x8xi8>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
// The quantized SiLU dequantized again (a QDQ pair whose floats other ops read): one f32
// table without a toolchain; with one, the kernel writes the int8 and the dequantize after
// it stays, plain arithmetic for IREE to fuse into the ops reading the floats.
// CHECK-LABEL: func.func @through_int8
// CHECK: arith.constant dense<{{.*}}> : tensor<256xf32>
// CHECK: tensor.extract
// CHECK-NOT: math.exp
// KERNEL-LABEL: func.func @through_int8
// KERNEL-NOT: tensor<256xf32>
// KERNEL: %[[Q:.*]] = call @xgen_table_0_call(%arg0, %{{.*}}) : (tensor<4x8xi8>, tensor<256xi8>) -> tensor<4x8xi8>
// KERNEL: linalg.generic {{.*}} ins(%[[Q]] : tensor<4x8xi8>)
// KERNEL: arith.sitofp
// KERNEL-NOT: math.exp
// KERNEL: return

func.func @through_int8(%x: tensor<4x8xi8>) -> tensor<4x8xf32> {
  %s = arith.constant 0.05 : f32
  %zp = arith.constant -3.0 : f32
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %os = arith.constant 0.02 : f32
  %ozp = arith.constant -128.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %eq = tensor.empty() : tensor<4x8xi8>
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xi8>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: i8, %o: f32):
    %f = arith.sitofp %a : i8 to f32
    %z = arith.subf %f, %zp : f32
    %v = arith.mulf %z, %s : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    %ex = math.exp %n : f32
    %den = arith.addf %ex, %one : f32
    %v = arith.divf %one, %den : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%d, %g : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<4x8xf32>) outs(%eq : tensor<4x8xi8>) {
  ^bb0(%a: f32, %o: i8):
    %v = arith.divf %a, %os : f32
    %r0 = math.roundeven %v : f32
    %r1 = arith.addf %r0, %ozp : f32
    %r2 = arith.maximumf %r1, %lo : f32
    %r3 = arith.minimumf %r2, %hi : f32
    %r4 = arith.fptosi %r3 : f32 to i8
    linalg.yield %r4 : i8
  } -> tensor<4x8xi8>
  %dq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<4x8xi8>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: i8, %o: f32):
    %f = arith.sitofp %a : i8 to f32
    %z = arith.subf %f, %ozp : f32
    %v = arith.mulf %z, %os : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  return %dq : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
// Two quantized sigmoids of the same shape (different scales, so different tables) of two
// tensors: one kernel, called with each table (the table is an operand).
// KERNEL-NOT: @xgen_table_1
// KERNEL-LABEL: func.func @two_tables
// KERNEL: call @xgen_table_0_call(%arg0, %[[T1:.*]]) : (tensor<4x8xi8>, tensor<256xi8>)
// KERNEL: call @xgen_table_0_call(%arg1, %[[T2:.*]]) : (tensor<4x8xi8>, tensor<256xi8>)
// KERNEL-NOT: math.exp
// KERNEL: return
func.func @two_tables(%x: tensor<4x8xi8>, %y: tensor<4x8xi8>) -> (tensor<4x8xi8>, tensor<4x8xi8>) {
  %s1 = arith.constant 0.05 : f32
  %s2 = arith.constant 0.09 : f32
  %one = arith.constant 1.0 : f32
  %os = arith.constant 0.004 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %eq = tensor.empty() : tensor<4x8xi8>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xi8>) outs(%eq : tensor<4x8xi8>) {
  ^bb0(%in: i8, %o: i8):
    %f = arith.sitofp %in : i8 to f32
    %v = arith.mulf %f, %s1 : f32
    %n = arith.negf %v : f32
    %ex = math.exp %n : f32
    %den = arith.addf %ex, %one : f32
    %sg = arith.divf %one, %den : f32
    %q = arith.divf %sg, %os : f32
    %r0 = math.roundeven %q : f32
    %r1 = arith.maximumf %r0, %lo : f32
    %r2 = arith.minimumf %r1, %hi : f32
    %r3 = arith.fptosi %r2 : f32 to i8
    linalg.yield %r3 : i8
  } -> tensor<4x8xi8>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<4x8xi8>) outs(%eq : tensor<4x8xi8>) {
  ^bb0(%in: i8, %o: i8):
    %f = arith.sitofp %in : i8 to f32
    %v = arith.mulf %f, %s2 : f32
    %n = arith.negf %v : f32
    %ex = math.exp %n : f32
    %den = arith.addf %ex, %one : f32
    %sg = arith.divf %one, %den : f32
    %q = arith.divf %sg, %os : f32
    %r0 = math.roundeven %q : f32
    %r1 = arith.maximumf %r0, %lo : f32
    %r2 = arith.minimumf %r1, %hi : f32
    %r3 = arith.fptosi %r2 : f32 to i8
    linalg.yield %r3 : i8
  } -> tensor<4x8xi8>
  return %a, %b : tensor<4x8xi8>, tensor<4x8xi8>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
// A chain whose quantize writes uint8 bytes (its yield plus 128 in int8's wrap-around: the
// form xgen-byoc-offload gives a oneDNN op's uint8 source): one table of those bytes.
// exp(0 x) = 1 quantized at scale 0.5, zero point -128 is -126, its byte -126 - 128 = 2.
// CHECK-LABEL: func.func @uint8_bytes
// CHECK: arith.constant dense<2> : tensor<256xi8>
// CHECK-NOT: math.exp
// CHECK: return
func.func @uint8_bytes(%x: tensor<4x8xi8>) -> tensor<4x8xi8> {
  %zero = arith.constant 0.0 : f32
  %os = arith.constant 0.5 : f32
  %ozp = arith.constant -128.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %flip = arith.constant -128 : i8
  %eq = tensor.empty() : tensor<4x8xi8>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xi8>) outs(%eq : tensor<4x8xi8>) {
  ^bb0(%a: i8, %o: i8):
    %f = arith.sitofp %a : i8 to f32
    %z = arith.mulf %f, %zero : f32
    %e = math.exp %z : f32
    %v = arith.divf %e, %os : f32
    %r = math.roundeven %v : f32
    %s = arith.addf %r, %ozp : f32
    %c0 = arith.maximumf %s, %lo : f32
    %c1 = arith.minimumf %c0, %hi : f32
    %i = arith.fptosi %c1 : f32 to i8
    %b = arith.addi %i, %flip : i8
    linalg.yield %b : i8
  } -> tensor<4x8xi8>
  return %y : tensor<4x8xi8>
}
