// RUN: kiln-translate --kiln-to-cuda %s --no-vectorize --no-row-fusion | FileCheck %s
// RUN: kiln-translate --kiln-to-cuda %s --no-vectorize | FileCheck %s --check-prefix=FUSED
// RUN: kiln-translate --kiln-to-cuda %s --no-vectorize --no-one-pass-rows | FileCheck %s --check-prefix=TWOPASS

// Tests that softmax over the last dim (decomposed by kiln-optimize, fused by
// kiln-fuse-linalg-elementwise) becomes, without row fusion, two row
// reductions, the sum's reciprocal and one pointwise kernel: the max reduction starts from -inf and combines with the
// NaN-propagating max, the sum reduction recomputes exp(x - max) in its
// loop, each reduction runs one block per row (1000 columns → 256 threads)
// with the warp-shuffle + shared-memory block reduction, and thread 0 stores.

// CHECK-LABEL: func @softmax: 4 kernel(s)
// CHECK: buf0: float[32x1], 128 bytes, temporary
// CHECK: buf1: float[32], 128 bytes, temporary
// CHECK: buf2: float[32x1], 128 bytes, temporary
// CHECK: buf3: float[32x1000], 128000 bytes, result 0
// CHECK: softmax_k0<<<32, 256>>>(arg0, buf0)
// CHECK-NEXT: softmax_k1<<<32, 256>>>(arg0, buf0, buf1)
// CHECK-NEXT: softmax_k2<<<1, 256>>>(buf1, buf2)
// CHECK-NEXT: softmax_k3<<<125, 256>>>(arg0, buf0, buf2, buf3)

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

// CHECK: softmax_k2: pointwise over 32x1
// CHECK: (1.0f / a0)
// CHECK: softmax_k3: pointwise over 32x1000
// CHECK: const int d0 = i / 1000;
// CHECK: expf(
// CHECK: (v1 * a2)
// Tests that with row fusion (the default) the three generics become one
// kernel, one block per row, and that the max and the sum of exp come from
// one read of the row (online softmax): each thread keeps a running
// (max, rescaled sum) pair, kiln_block_merge combines the pairs with the
// (m, s) merge rule, both are broadcast through shared memory (s_r0, s_r1)
// into registers, each thread takes the sum's reciprocal (r2), and the
// normalized row is written once; no temporaries
// remain and no separate loop computes the sum.

// FUSED-LABEL: func @softmax: 1 kernel(s)
// FUSED-NEXT: Buffers
// FUSED-NEXT: arg0: float[32x1000], 128000 bytes, input 0
// FUSED-NEXT: buf0: float[32x1000], 128000 bytes, result 0
// FUSED: softmax_k0<<<32, 256>>>(arg0, buf0)
// FUSED: softmax_k0: row group of 4 fused generics (one-pass max, one-pass sum-exp, per-row, full-row): 32 rows of 1000, one block per row
// FUSED: __shared__ float partials0[32][2];
// FUSED-NEXT: __shared__ float s_r0;
// FUSED-NEXT: __shared__ float s_r1;
// FUSED-NEXT: for (int row = blockIdx.x; row < 32; row += gridDim.x) {
// FUSED-NEXT: const int p0 = row;
// FUSED-NEXT: // r0, r1: online softmax statistics
// FUSED-NEXT: float r0, r1;
// FUSED-NEXT: {
// FUSED-NEXT: float st[2] = {__int_as_float((int)0xff800000u), 0.0f};
// FUSED-NEXT: for (int col = threadIdx.x; col < 1000; col += blockDim.x) {
// FUSED-NEXT: const int d0 = p0;
// FUSED-NEXT: const int d2 = col;
// FUSED-NEXT: const float a0 = in0[d0 * 1000 + d2];
// FUSED-NEXT: kiln_online_add(st, a0);
// FUSED-NEXT: }
// FUSED-NEXT: kiln_block_merge<2, float>(st, partials0, kiln_online_merge{});
// FUSED-NEXT: if (threadIdx.x == 0) {
// FUSED-NEXT: s_r0 = st[0];
// FUSED-NEXT: s_r1 = st[1];
// FUSED-NEXT: }
// FUSED-NEXT: __syncthreads();
// FUSED-NEXT: r0 = s_r0;
// FUSED-NEXT: r1 = s_r1;
// FUSED-NEXT: }
// FUSED-NEXT: // r1: computed with r0
// FUSED-NEXT: // r2: per-row pointwise (every thread)
// FUSED-NEXT: float r2;
// FUSED-NEXT: {
// FUSED-NEXT: const float v0 = (1.0f / r1);
// FUSED-NEXT: r2 = v0;
// FUSED-NEXT: }
// FUSED-NEXT: // full-row pointwise
// FUSED-NEXT: for (int col = threadIdx.x; col < 1000; col += blockDim.x) {
// FUSED-NOT: kiln_block_reduce
// FUSED: const float v0 = (a0 - r0);
// FUSED-NEXT: const float v1 = expf(v0);
// FUSED-NEXT: const float v2 = (v1 * r2);
// FUSED-NEXT: out0[d0 * 1000 + d1] = v2;
// Tests that with --no-one-pass-rows the row group keeps one loop per
// reduction: the max and the sum are block reductions whose results are
// broadcast through shared memory (s_r0, s_r1) into registers (the input is
// read three times), and the normalized row is written once.

// TWOPASS-LABEL: func @softmax: 1 kernel(s)
// TWOPASS-NEXT: Buffers
// TWOPASS-NEXT: arg0: float[32x1000], 128000 bytes, input 0
// TWOPASS-NEXT: buf0: float[32x1000], 128000 bytes, result 0
// TWOPASS: softmax_k0<<<32, 256>>>(arg0, buf0)
// TWOPASS: softmax_k0: row group of 4 fused generics (kiln_maximum_op, kiln_add, per-row, full-row): 32 rows of 1000, one block per row
// TWOPASS: __shared__ float partials0[32];
// TWOPASS-NEXT: __shared__ float s_r0;
// TWOPASS-NEXT: __shared__ float partials1[32];
// TWOPASS-NEXT: __shared__ float s_r1;
// TWOPASS-NEXT: for (int row = blockIdx.x; row < 32; row += gridDim.x) {
// TWOPASS-NEXT: const int p0 = row;
// TWOPASS: acc = kiln_block_reduce<float>(acc, partials0, kiln_maximum_op{}, __int_as_float((int)0xff800000u));
// TWOPASS-NEXT: if (threadIdx.x == 0) {
// TWOPASS-NEXT: s_r0 = acc;
// TWOPASS-NEXT: }
// TWOPASS-NEXT: __syncthreads();
// TWOPASS-NEXT: r0 = s_r0;
// TWOPASS: const float v0 = (a0 - r0);
// TWOPASS-NEXT: const float v1 = expf(v0);
// TWOPASS-NEXT: acc = kiln_add{}(acc, v1);
// TWOPASS: r1 = s_r1;
// TWOPASS: const float v0 = (1.0f / r1);
// TWOPASS: for (int col = threadIdx.x; col < 1000; col += blockDim.x) {
// TWOPASS: const float v2 = (v1 * r2);
// TWOPASS-NEXT: out0[d0 * 1000 + d1] = v2;
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



// Tests that a sum of exp shifted by a per-row value h computed from the max
// (as log_softmax's `isinf(max) ? 0 : max`; here relu(max)) also uses the
// online statistics, rescaling the sum to the shift once per row.

// FUSED-LABEL: func @shifted_log_sum_exp: 1 kernel(s)
// FUSED: row group of 5 fused generics (one-pass max, per-row, one-pass sum-exp, per-row, full-row)
// FUSED: // r0, r2: online softmax statistics
// FUSED: kiln_online_add(st, a0);
// FUSED: // r2: computed with r0
// FUSED-NEXT: r2 = r2 * kiln_exp(r0 - r1); // sum of exp(x - r1)
// FUSED: logf(
// TWOPASS-LABEL: func @shifted_log_sum_exp: 1 kernel(s)
// TWOPASS: row group of 5 fused generics (kiln_maximum_op, per-row, kiln_add, per-row, full-row)
// TWOPASS-NOT: kiln_online_add(st
func.func @shifted_log_sum_exp(%x: tensor<8x96xf32>) -> tensor<8x96xf32> {
  %m = kiln.max %x {dims = array<i64: 1>, keepdim = true} : tensor<8x96xf32> -> tensor<8x1xf32>
  %h = kiln.relu %m : tensor<8x1xf32>
  %d = kiln.sub %x, %h : tensor<8x96xf32>, tensor<8x1xf32>
  %e = kiln.exp %d : tensor<8x96xf32>
  %s = kiln.sum %e {dims = array<i64: 1>, keepdim = true} : tensor<8x96xf32> -> tensor<8x1xf32>
  %l = kiln.log %s : tensor<8x1xf32>
  %r = kiln.sub %d, %l : tensor<8x96xf32>, tensor<8x1xf32>
  return %r : tensor<8x96xf32>
}

// Tests that a max followed by a sum of exp over another tensor (y - max(x))
// is not mistaken for softmax: the row group keeps one loop per reduction.

// FUSED-LABEL: func @negative_exp_of_other_tensor: 1 kernel(s)
// FUSED: row group of 3 fused generics (kiln_maximum_op, kiln_add, full-row)
// FUSED-NOT: kiln_online_add(st
// FUSED: acc = kiln_block_reduce<float>(acc, partials0, kiln_maximum_op{}
// FUSED: acc = kiln_block_reduce<float>(acc, partials1, kiln_add{}
func.func @negative_exp_of_other_tensor(%x: tensor<8x96xf32>, %y: tensor<8x96xf32>) -> tensor<8x96xf32> {
  %m = kiln.max %x {dims = array<i64: 1>, keepdim = true} : tensor<8x96xf32> -> tensor<8x1xf32>
  %d = kiln.sub %y, %m : tensor<8x96xf32>, tensor<8x1xf32>
  %e = kiln.exp %d : tensor<8x96xf32>
  %s = kiln.sum %e {dims = array<i64: 1>, keepdim = true} : tensor<8x96xf32> -> tensor<8x1xf32>
  %r = kiln.div %e, %s : tensor<8x96xf32>, tensor<8x1xf32>
  return %r : tensor<8x96xf32>
}
