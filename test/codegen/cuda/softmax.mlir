// RUN: kiln-translate --kiln-to-cuda %s --no-row-fusion | FileCheck %s
// RUN: kiln-translate --kiln-to-cuda %s | FileCheck %s --check-prefix=FUSED

// Tests that softmax over the last dim (decomposed by kiln-optimize, fused by
// kiln-fuse-linalg-elementwise) becomes, without row fusion, two row
// reductions and one pointwise kernel: the max reduction starts from -inf and combines with the
// NaN-propagating max, the sum reduction recomputes exp(x - max) in its
// loop, each reduction runs one block per row (1000 columns → 256 threads)
// with the warp-shuffle + shared-memory block reduction, and thread 0 stores.

// CHECK-LABEL: func @softmax: 3 kernel(s)
// CHECK: buf0: float[32x1], 128 bytes, temporary
// CHECK: buf1: float[32], 128 bytes, temporary
// CHECK: buf2: float[32x1000], 128000 bytes, result 0
// CHECK: softmax_k0<<<32, 256>>>(arg0, buf0)
// CHECK-NEXT: softmax_k1<<<32, 256>>>(arg0, buf0, buf1)
// CHECK-NEXT: softmax_k2<<<125, 256>>>(arg0, buf0, buf1, buf2)

// CHECK: softmax_k0: row reduction (kiln_maximum_op) over 32x1x1000: 32 rows of 1000
// CHECK: __global__ void __launch_bounds__(256) softmax_k0(const float *__restrict__ in0, float *__restrict__ out0) {
// CHECK-NEXT: __shared__ float partials[32];
// CHECK-NEXT: for (int row = blockIdx.x; row < 32; row += gridDim.x) {
// CHECK-NEXT: const int d0 = row;
// CHECK-NEXT: float acc = __int_as_float((int)0xff800000u);
// CHECK-NEXT: for (int d2 = threadIdx.x; d2 < 1000; d2 += blockDim.x) {
// CHECK-NEXT: const float a0 = in0[d0 * 1000 + d2];
// CHECK-NEXT: acc = kiln_maximum_op{}(acc, a0);
// CHECK-NEXT: }
// CHECK-NEXT: acc = kiln_block_reduce<float>(acc, partials, kiln_maximum_op{}, __int_as_float((int)0xff800000u));
// CHECK-NEXT: if (threadIdx.x == 0)
// CHECK-NEXT: out0[d0] = acc;

// CHECK: softmax_k1: row reduction (kiln_add) over 32x1000
// CHECK: float acc = 0.0f;
// CHECK-NEXT: for (int d1 = threadIdx.x; d1 < 1000; d1 += blockDim.x) {
// CHECK-NEXT: const float a0 = in0[d0 * 1000 + d1];
// CHECK-NEXT: const float a1 = in1[d0];
// CHECK-NEXT: const float v0 = (a0 - a1);
// CHECK-NEXT: const float v1 = expf(v0);
// CHECK-NEXT: acc = kiln_add{}(acc, v1);
// CHECK: acc = kiln_block_reduce<float>(acc, partials, kiln_add{}, 0.0f);

// CHECK: softmax_k2: pointwise over 32x1000
// CHECK: const int d0 = i / 1000;
// CHECK: expf(
// CHECK: (v1 / a2)
// Tests that with row fusion (the default) the three generics become one
// kernel, one block per row: the max and the sum are block reductions whose
// results are broadcast through shared memory (s_r0, s_r1) into registers,
// and the normalized row is written once; no temporaries remain.

// FUSED-LABEL: func @softmax: 1 kernel(s)
// FUSED-NEXT: Buffers
// FUSED-NEXT: arg0: float[32x1000], 128000 bytes, input 0
// FUSED-NEXT: buf0: float[32x1000], 128000 bytes, result 0
// FUSED: softmax_k0<<<32, 256>>>(arg0, buf0)
// FUSED: softmax_k0: row group of 3 fused generics (kiln_maximum_op, kiln_add, full-row): 32 rows of 1000, one block per row
// FUSED: __shared__ float partials0[32];
// FUSED-NEXT: __shared__ float s_r0;
// FUSED-NEXT: __shared__ float partials1[32];
// FUSED-NEXT: __shared__ float s_r1;
// FUSED-NEXT: for (int row = blockIdx.x; row < 32; row += gridDim.x) {
// FUSED-NEXT: const int p0 = row;
// FUSED: acc = kiln_block_reduce<float>(acc, partials0, kiln_maximum_op{}, __int_as_float((int)0xff800000u));
// FUSED-NEXT: if (threadIdx.x == 0) {
// FUSED-NEXT: s_r0 = acc;
// FUSED-NEXT: }
// FUSED-NEXT: __syncthreads();
// FUSED-NEXT: r0 = s_r0;
// FUSED: const float v0 = (a0 - r0);
// FUSED-NEXT: const float v1 = expf(v0);
// FUSED-NEXT: acc = kiln_add{}(acc, v1);
// FUSED: r1 = s_r1;
// FUSED: for (int col = threadIdx.x; col < 1000; col += blockDim.x) {
// FUSED: const float v2 = (v1 / r1);
// FUSED-NEXT: out0[d0 * 1000 + d1] = v2;
func.func @softmax(%x: tensor<32x1000xf32>) -> tensor<32x1000xf32> {
  %0 = kiln.softmax %x {dim = 1 : i64} : tensor<32x1000xf32>
  return %0 : tensor<32x1000xf32>
}

// Tests the block-size rule on short and long rows (ceil(n / 4) rounded up
// to a power of two, clamped to [32, 1024]) and that a 3-d input flattens
// its parallel dims into rows (2 * 3 rows).

// CHECK-LABEL: func @short_rows
// CHECK: short_rows_k0<<<6, 32>>>
// CHECK: for (int row = blockIdx.x; row < 6; row += gridDim.x) {
// CHECK-NEXT: const int d0 = row / 3;
// CHECK-NEXT: const int d1 = row % 3;
// CHECK: for (int d3 = threadIdx.x; d3 < 5; d3 += blockDim.x) {
func.func @short_rows(%x: tensor<2x3x5xf32>) -> tensor<2x3x1xf32> {
  %0 = kiln.sum %x {dims = array<i64: 2>, keepdim = true} : tensor<2x3x5xf32> -> tensor<2x3x1xf32>
  return %0 : tensor<2x3x1xf32>
}

// CHECK-LABEL: func @long_rows
// CHECK: long_rows_k0<<<4, 1024>>>
func.func @long_rows(%x: tensor<4x50000xf32>) -> tensor<4xf32> {
  %0 = kiln.max %x {dims = array<i64: 1>} : tensor<4x50000xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that a per-row value that is also a function result is stored by
// thread 0 from inside the row group (here the row max next to x - max).

// FUSED-LABEL: func @max_and_centered: 1 kernel(s)
// FUSED: buf0: float[8x1], 32 bytes, result 0
// FUSED: buf1: float[8x64], 2048 bytes, result 1
// FUSED: max_and_centered_k0<<<8, 32>>>(arg0, buf0, buf1)
// FUSED: if (threadIdx.x == 0) {
// FUSED-NEXT: s_r0 = acc;
// FUSED-NEXT: const int d0 = p0;
// FUSED-NEXT: out0[d0] = s_r0;
// FUSED-NEXT: }
// FUSED: out1[d0 * 64 + d1] = v0;
func.func @max_and_centered(%x: tensor<8x64xf32>) -> (tensor<8x1xf32>, tensor<8x64xf32>) {
  %m = kiln.max %x {dims = array<i64: 1>, keepdim = true} : tensor<8x64xf32> -> tensor<8x1xf32>
  %c = kiln.sub %x, %m : tensor<8x64xf32>, tensor<8x1xf32>
  return %m, %c : tensor<8x1xf32>, tensor<8x64xf32>
}
