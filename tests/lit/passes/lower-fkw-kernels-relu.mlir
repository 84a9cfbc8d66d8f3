// RUN: rm -rf %t.cache
// RUN: env XGEN_CACHE_DIR=%t.cache xgen-opt %s --split-input-file -p xgen-lower-fkw-kernels | FileCheck %s
// RUN: cat %t.cache/kernels/*.c | FileCheck %s --check-prefix=SRC

// ReLU epilogue fusion: a ReLU that is the FKW convolution's only use is applied by the
// generated kernel before its stores; the elementwise op disappears. Exactly one of the
// kernels below (the first case) is generated with the epilogue.
// SRC: relu epilogue
// SRC-NOT: relu epilogue

// torch-mlir's relu (x ugt 0 ? x : 0): fused.
// CHECK-LABEL: func.func @relu_fused
// CHECK: %[[R:.*]] = call @xgen_fkw_kernel_{{[0-9]+}}_call(%arg0
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
func.func @relu_fused(%arg0: tensor<1x2x6x6xf32>) -> (tensor<1x4x6x6xf32>) {
    %cst = arith.constant dense<[1.000000e-01, 2.000000e-01, 3.000000e-01, 4.000000e-01]> : tensor<4xf32>
    %cst_0 = arith.constant dense<[1.460000e+00, 1.320000e+00, 0.899999976, 1.900000e+00, 5.600000e-01, 1.720000e+00, 5.200000e-01, 5.000000e-01, 1.720000e+00, 1.790000e+00, 1.870000e+00, 5.500000e-01, 1.410000e+00, 1.590000e+00, 1.590000e+00, 7.600000e-01, 1.790000e+00, 5.400000e-01, 1.310000e+00, 0.689999997, 0.949999988, 1.510000e+00, 1.130000e+00, 1.470000e+00]> : tensor<24xf32>
    %cst_1 = arith.constant dense<[0, 2, 1, 3]> : tensor<4xi32>
    %cst_2 = arith.constant dense<[0, 2, 4]> : tensor<3xi32>
    %cst_3 = arith.constant dense<[0, 2, 3]> : tensor<3xi32>
    %cst_4 = arith.constant dense<[0, 1, 0]> : tensor<3xi32>
    %cst_5 = arith.constant dense<[0, 1, 1]> : tensor<3xi32>
    %0 = "xgen_sparse.fkw_conv2d"(%arg0, %cst_0, %cst, %cst_1, %cst_2, %cst_3, %cst_4, %cst_5) {kernel_size = [3, 3], padding = [1, 1, 1, 1], patterns = [[1, 3, 4, 5], [0, 1, 4, 7]], strides = [1, 1]} : (tensor<1x2x6x6xf32>, tensor<24xf32>, tensor<4xf32>, tensor<4xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>) -> tensor<1x4x6x6xf32>
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1x4x6x6xf32>
    %1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%0 : tensor<1x4x6x6xf32>) outs(%e : tensor<1x4x6x6xf32>) {
    ^bb0(%in: f32, %out: f32):
      %c = arith.cmpf ugt, %in, %z : f32
      %s = arith.select %c, %in, %z : f32
      linalg.yield %s : f32
    } -> tensor<1x4x6x6xf32>
    return %1 : tensor<1x4x6x6xf32>
}

// -----
// Must not fire: maxnumf(x, 0) turns NaN into 0, which the kernel's epilogue does not.
// CHECK-LABEL: func.func @maxnum_not_fused
// CHECK: call @xgen_fkw_kernel_{{[0-9]+}}_call
// CHECK: linalg.generic
// CHECK: arith.maxnumf
func.func @maxnum_not_fused(%arg0: tensor<1x2x6x6xf32>) -> (tensor<1x4x6x6xf32>) {
    %cst = arith.constant dense<[1.000000e-01, 2.000000e-01, 3.000000e-01, 4.000000e-01]> : tensor<4xf32>
    %cst_0 = arith.constant dense<[1.460000e+00, 1.320000e+00, 0.899999976, 1.900000e+00, 5.600000e-01, 1.720000e+00, 5.200000e-01, 5.000000e-01, 1.720000e+00, 1.790000e+00, 1.870000e+00, 5.500000e-01, 1.410000e+00, 1.590000e+00, 1.590000e+00, 7.600000e-01, 1.790000e+00, 5.400000e-01, 1.310000e+00, 0.689999997, 0.949999988, 1.510000e+00, 1.130000e+00, 1.470000e+00]> : tensor<24xf32>
    %cst_1 = arith.constant dense<[0, 2, 1, 3]> : tensor<4xi32>
    %cst_2 = arith.constant dense<[0, 2, 4]> : tensor<3xi32>
    %cst_3 = arith.constant dense<[0, 2, 3]> : tensor<3xi32>
    %cst_4 = arith.constant dense<[0, 1, 0]> : tensor<3xi32>
    %cst_5 = arith.constant dense<[0, 1, 1]> : tensor<3xi32>
    %0 = "xgen_sparse.fkw_conv2d"(%arg0, %cst_0, %cst, %cst_1, %cst_2, %cst_3, %cst_4, %cst_5) {kernel_size = [3, 3], padding = [1, 1, 1, 1], patterns = [[1, 3, 4, 5], [0, 1, 4, 7]], strides = [1, 1]} : (tensor<1x2x6x6xf32>, tensor<24xf32>, tensor<4xf32>, tensor<4xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>) -> tensor<1x4x6x6xf32>
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1x4x6x6xf32>
    %1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%0 : tensor<1x4x6x6xf32>) outs(%e : tensor<1x4x6x6xf32>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.maxnumf %in, %z : f32
      linalg.yield %m : f32
    } -> tensor<1x4x6x6xf32>
    return %1 : tensor<1x4x6x6xf32>
}

// -----
// Must not fire: the convolution's result is also returned, so it must be stored before ReLU.
// CHECK-LABEL: func.func @conv_result_used_twice
// CHECK: %[[C:.*]] = call @xgen_fkw_kernel_{{[0-9]+}}_call
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[C]]
// CHECK: arith.cmpf ugt
// CHECK: return %[[C]], %[[R]]
func.func @conv_result_used_twice(%arg0: tensor<1x2x6x6xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
    %cst = arith.constant dense<[1.000000e-01, 2.000000e-01, 3.000000e-01, 4.000000e-01]> : tensor<4xf32>
    %cst_0 = arith.constant dense<[1.460000e+00, 1.320000e+00, 0.899999976, 1.900000e+00, 5.600000e-01, 1.720000e+00, 5.200000e-01, 5.000000e-01, 1.720000e+00, 1.790000e+00, 1.870000e+00, 5.500000e-01, 1.410000e+00, 1.590000e+00, 1.590000e+00, 7.600000e-01, 1.790000e+00, 5.400000e-01, 1.310000e+00, 0.689999997, 0.949999988, 1.510000e+00, 1.130000e+00, 1.470000e+00]> : tensor<24xf32>
    %cst_1 = arith.constant dense<[0, 2, 1, 3]> : tensor<4xi32>
    %cst_2 = arith.constant dense<[0, 2, 4]> : tensor<3xi32>
    %cst_3 = arith.constant dense<[0, 2, 3]> : tensor<3xi32>
    %cst_4 = arith.constant dense<[0, 1, 0]> : tensor<3xi32>
    %cst_5 = arith.constant dense<[0, 1, 1]> : tensor<3xi32>
    %0 = "xgen_sparse.fkw_conv2d"(%arg0, %cst_0, %cst, %cst_1, %cst_2, %cst_3, %cst_4, %cst_5) {kernel_size = [3, 3], padding = [1, 1, 1, 1], patterns = [[1, 3, 4, 5], [0, 1, 4, 7]], strides = [1, 1]} : (tensor<1x2x6x6xf32>, tensor<24xf32>, tensor<4xf32>, tensor<4xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>) -> tensor<1x4x6x6xf32>
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1x4x6x6xf32>
    %1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%0 : tensor<1x4x6x6xf32>) outs(%e : tensor<1x4x6x6xf32>) {
    ^bb0(%in: f32, %out: f32):
      %c = arith.cmpf ugt, %in, %z : f32
      %s = arith.select %c, %in, %z : f32
      linalg.yield %s : f32
    } -> tensor<1x4x6x6xf32>
    return %0, %1 : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
}
