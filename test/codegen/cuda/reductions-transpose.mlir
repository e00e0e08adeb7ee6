// RUN: kiln-translate --kiln-to-cuda %s | FileCheck %s

// Tests that a column sum (reduction over a non-innermost dim) is one
// thread per output with a serial loop over the rows, reading columns
// (adjacent threads, adjacent addresses).

// CHECK-LABEL: func @col_sum: 1 kernel(s)
// CHECK: col_sum_k0: reduction (kiln_add) over dims {0} of 8x16: 16 outputs, one thread each
// CHECK: const int d1 = i;
// CHECK: float acc = 0.0f;
// CHECK: for (int d0 = 0; d0 < 8; ++d0) {
// CHECK: const float a0 = in0[d0 * 16 + d1];
// CHECK: out0[d1] = acc;
func.func @col_sum(%x: tensor<8x16xf32>) -> tensor<16xf32> {
  %0 = kiln.sum %x {dims = array<i64: 0>} : tensor<8x16xf32> -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// Tests that a reduction over several dims nests one loop per reduced dim
// and keeps bf16 storage with a float accumulator (NaN-propagating max).

// CHECK-LABEL: func @all_max: 1 kernel(s)
// CHECK: reduction (kiln_maximum_op) over dims {0, 1} of 4x8: 1 outputs
// CHECK: for (int d0 = 0; d0 < 4; ++d0) {
// CHECK-NEXT: for (int d1 = 0; d1 < 8; ++d1) {
// CHECK-NEXT: const float a0 = __bfloat162float(in0[d0 * 8 + d1]);
// CHECK: out0[0] = __float2bfloat16_rn(acc);
func.func @all_max(%x: tensor<4x8xbf16>) -> tensor<bf16> {
  %0 = kiln.max %x {dims = array<i64: 0, 1>} : tensor<4x8xbf16> -> tensor<bf16>
  return %0 : tensor<bf16>
}

// Tests that a standalone permute is a transpose kernel reading the input
// through the permutation (output dim k is input dim perm[k]).

// CHECK-LABEL: func @transpose3d: 1 kernel(s)
// CHECK: transpose3d_k0: transpose [2, 0, 1] to 16x4x8 (512 elements)
// CHECK: const int d0 = i / 32;
// CHECK: const int d1 = (i / 8) % 4;
// CHECK: const int d2 = i % 8;
// CHECK: out0[i] = in0[d0 + d1 * 128 + d2 * 16];
func.func @transpose3d(%x: tensor<4x8x16xf16>) -> tensor<16x4x8xf16> {
  %0 = kiln.permute %x {dims = array<i64: 2, 0, 1>} : tensor<4x8x16xf16> -> tensor<16x4x8xf16>
  return %0 : tensor<16x4x8xf16>
}
