// RUN: kiln-translate --kiln-to-cuda --no-prepare %s | FileCheck %s

// Emission from IR that is already fused linalg (--no-prepare).

// Tests that a splat constant tensor input becomes its scalar value, a
// permuted (transposed) read is addressed through its map, and
// linalg.index yields the loop index.

// CHECK-LABEL: func @splat_transpose_index: 1 kernel(s)
// CHECK: splat_transpose_index_k0<<<1, 256>>>(arg0, buf0)
// CHECK: const int d0 = i / 8;
// CHECK-NEXT: const int d1 = i % 8;
// CHECK-NEXT: const float a0 = in0[d1 * 4 + d0];
// CHECK-NEXT: const float v0 = (a0 * 3.0f);
// CHECK-NEXT: const long long v1 = (long long)d1;
// CHECK-NEXT: const long long v2 = (long long)v1;
// CHECK-NEXT: const float v3 = (float)v2;
// CHECK-NEXT: const float v4 = (v0 + v3);
// CHECK-NEXT: out0[i] = v4;
#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
func.func @splat_transpose_index(%x: tensor<8x4xf32>) -> tensor<4x8xf32> {
  %c = arith.constant dense<3.0> : tensor<4x8xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [#tr, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %c : tensor<8x4xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %1 = arith.mulf %a, %b : f32
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i64
    %f = arith.sitofp %ii : i64 to f32
    %2 = arith.addf %1, %f : f32
    linalg.yield %2 : f32
  } -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// Tests that an i64 sum reduces in its own type from 0 (the fill equals the
// identity, so it is not combined again).

// CHECK-LABEL: func @int_sum
// CHECK: __shared__ long long partials[32];
// CHECK: long long acc = 0LL;
// CHECK: acc = kiln_add{}(acc, a0);
// CHECK: acc = kiln_block_reduce<long long>(acc, partials, kiln_add{}, 0LL);
// CHECK: out0[d0] = acc;
#rd = affine_map<(d0, d1) -> (d0)>
func.func @int_sum(%x: tensor<3x100xi64>) -> tensor<3xi64> {
  %z = arith.constant 0 : i64
  %e = tensor.empty() : tensor<3xi64>
  %f = linalg.fill ins(%z : i64) outs(%e : tensor<3xi64>) -> tensor<3xi64>
  %0 = linalg.generic {indexing_maps = [#id, #rd], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<3x100xi64>) outs(%f : tensor<3xi64>) {
  ^bb0(%a: i64, %o: i64):
    %1 = arith.addi %a, %o : i64
    linalg.yield %1 : i64
  } -> tensor<3xi64>
  return %0 : tensor<3xi64>
}
