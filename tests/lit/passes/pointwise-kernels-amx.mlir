// A bf16 compile on a target with bf16 matrix tiles (bf16-tiles=1: AMX-BF16): the 1x1 conv's
// products run in AMX tiles, 16 rows at a time (49 rows: a partial last tile), its 32 input
// channels as 16 pairs (one tile of the reduction, rounded 32 channels at a time into a 1 KB
// A tile), the weights packed as the tiles' B
// operand; the vdpbf16ps register blocks stay for a process Linux refuses the tiles' state.
// (The kernels are compiled for a Sapphire Rapids CPU, so the test runs on any host.) Must
// not fire: a 256-bit target (the f32 kernel), an fp32 compile, a target without the tiles
// (vdpbf16ps products).
// RUN: rm -rf %t.amx %t.narrow %t.f32 %t.dot
// RUN: env XGEN_CACHE_DIR=%t.amx xgen-opt %s -p "xgen-pointwise-kernels{precision=bf16 bf16-tiles=1 cflags=-march=sapphirerapids}" | FileCheck %s
// RUN: cat %t.amx/kernels/*.c | FileCheck %s --check-prefix=AMX
// RUN: env XGEN_CACHE_DIR=%t.narrow xgen-opt %s -p "xgen-pointwise-kernels{precision=bf16 bf16-tiles=1 vector-bits=256 cflags=-march=sapphirerapids}" | FileCheck %s
// RUN: cat %t.narrow/kernels/*.c | FileCheck %s --check-prefix=NOAMX
// RUN: env XGEN_CACHE_DIR=%t.f32 xgen-opt %s -p "xgen-pointwise-kernels{bf16-tiles=1 cflags=-march=sapphirerapids}" | FileCheck %s
// RUN: cat %t.f32/kernels/*.c | FileCheck %s --check-prefix=NOAMX
// RUN: env XGEN_CACHE_DIR=%t.dot xgen-opt %s -p "xgen-pointwise-kernels{precision=bf16 cflags=-march=sapphirerapids}" | FileCheck %s
// RUN: cat %t.dot/kernels/*.c | FileCheck %s --check-prefix=DOT
// CHECK-LABEL: func.func @relu(
// CHECK: call @xgen_pointwise_1_call(%arg0,
// CHECK-NOT: linalg.conv
// AMX: 49 rows x 32 -> 16, bf16 products, {{.*}}, in AMX tiles
// AMX-DAG: #define K2 16
// AMX-DAG: #define K2A 16
// AMX-DAG: static int amx_ready(void)
// AMX-DAG: _tile_loadd(4, (const uint32_t*)xa, 64);
// AMX-DAG: to_bf16(x + (m0 + p) * K + c0, xa[p], n);
// AMX-DAG: _tile_dpbf16ps(0, 4, 5);
// AMX-DAG: _tile_stored(0, (float*)cb + 0, WIDTH * 4);
// AMX-DAG: amx_rows(x, wp, bias, r, y, col, m_begin, m_end, nv, cols);
// AMX-DAG: _mm512_dpbf16_ps(
// NOAMX-NOT: _tile_
// NOAMX-NOT: dpbf16
// DOT: bf16 products
// DOT-NOT: _tile_

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#sc = affine_map<(d0, d1, d2, d3) -> ()>
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

