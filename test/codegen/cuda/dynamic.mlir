// RUN: kiln-translate --kiln-to-cuda %s | FileCheck %s

// Tests that dynamic (`?`) dims become kernel arguments: each dynamic dim of
// an argument is a symbol s<k>, kernels over symbolic sizes take every
// symbol as a trailing `long long` parameter and use it in the loop bound,
// the index decoding and the strides (64-bit indices, scalar loads: no
// vector form without a static innermost extent), and the launch plan
// gives a work count (pointwise) or rows and a row length (row reductions)
// instead of a static grid; buffer sizes are symbol products.

// CHECK-LABEL: func @bias_exp: 1 kernel(s)
// CHECK: // Symbols (kernel arguments, read from the inputs per call): s0 = arg0.shape[0]
// CHECK: arg0: float[s0x8], s0 * 32 bytes, input 0
// CHECK: buf0: float[s0x8], s0 * 32 bytes, result 0
// CHECK: bias_exp_k0<<<grid(s0 * 8), 256>>>(arg0, arg1, buf0, symbols)
// CHECK: void __launch_bounds__(256) bias_exp_k0(const float *__restrict__ in0, const float *__restrict__ in1, float *__restrict__ out0, long long s0) {
// CHECK-NEXT: for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < s0 * 8; i += (long long)gridDim.x * blockDim.x) {
// CHECK-NEXT: const long long d1 = i % 8;
// CHECK-NEXT: const float a0 = in0[i];
// CHECK-NEXT: const float a1 = in1[d1];
// CHECK-NOT: uint4
func.func @bias_exp(%x: tensor<?x8xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32> {
  %0 = kiln.add %x, %b : tensor<?x8xf32>, tensor<8xf32>
  %1 = kiln.exp %0 : tensor<?x8xf32>
  return %1 : tensor<?x8xf32>
}

// Tests that two `?` arguments indexed by the same loop dims get their own
// symbols, the second read through its own strides, and that the plan
// records that their sizes must agree (checked per call by the executors).

// CHECK-LABEL: func @add2: 1 kernel(s)
// CHECK: s0 = arg0.shape[0], s1 = arg0.shape[1], s2 = arg1.shape[0], s3 = arg1.shape[1]
// CHECK-NEXT: // Requires s0 == s2
// CHECK-NEXT: // Requires s1 == s3
// CHECK: long long s0, long long s1, long long s2, long long s3) {
// CHECK: const long long d0 = i / s1;
// CHECK-NEXT: const long long d1 = i % s1;
// CHECK-NEXT: const float a0 = in0[i];
// CHECK-NEXT: const float a1 = in1[d0 * s3 + d1];
func.func @add2(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = kiln.add %x, %y : tensor<?x?xf32>, tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// Tests a row reduction over symbolic rows and row length: one block per
// row, the block size chosen per call (launch bounds 1024), rows and the
// row length from the symbols.

// CHECK-LABEL: func @row_sum: 1 kernel(s)
// CHECK: row_sum_k0<<<rows(s0), rule(row length s1)>>>(arg0, buf0, symbols)
// CHECK: void __launch_bounds__(1024) row_sum_k0(const float *__restrict__ in0, float *__restrict__ out0, long long s0, long long s1) {
// CHECK: for (long long row = blockIdx.x; row < s0; row += gridDim.x) {
// CHECK: for (long long d1 = threadIdx.x; d1 < s1; d1 += blockDim.x) {
// CHECK-NEXT: const float a0 = in0[d0 * s1 + d1];
func.func @row_sum(%x: tensor<?x?xf32>) -> tensor<?xf32> {
  %0 = kiln.sum %x {dims = array<i64: 1>} : tensor<?x?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// Tests bf16 layer_norm over [?, ?, 96]: the rows are the product s0 * s1
// (products of symbols), the row length static, and
// without row groups (static rows only) its generics stay separate kernels.

// CHECK-LABEL: func @layer_norm: 5 kernel(s)
// CHECK: buf4: __nv_bfloat16[s0xs1x96], s0 * s1 * 192 bytes, result 0
// CHECK: layer_norm_k0<<<rows(s0 * s1), rule(row length 96)>>>
// CHECK: layer_norm_k4<<<grid(s0 * s1 * 96), 256>>>
func.func @layer_norm(%x: tensor<?x?x96xbf16>, %g: tensor<96xbf16>, %b: tensor<96xbf16>) -> tensor<?x?x96xbf16> {
  %0 = kiln.layer_norm %x weight %g bias %b {num_dims = 1 : i64} : tensor<?x?x96xbf16>, tensor<96xbf16>, tensor<96xbf16>
  return %0 : tensor<?x?x96xbf16>
}
