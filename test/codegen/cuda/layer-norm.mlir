// RUN: kiln-translate --kiln-to-cuda %s --no-vectorize --no-row-fusion | FileCheck %s
// RUN: kiln-translate --kiln-to-cuda %s --no-vectorize | FileCheck %s --check-prefix=FUSED
// RUN: kiln-translate --kiln-to-cuda %s --no-vectorize --no-one-pass-rows | FileCheck %s --check-prefix=TWOPASS

// Tests that layer_norm with weight and bias (decomposed: mean, centered
// square mean, rsqrt) becomes, without row fusion, two row-sum kernels, two tiny per-row
// pointwise kernels (mean division, var + eps → rsqrt) and one final
// pointwise kernel that reads the per-row statistics through (d0) and the
// affine parameters through (d1).

// CHECK-LABEL: func @layer_norm: 5 kernel(s)
// CHECK: layer_norm_k0<<<16, 256>>>(arg0, buf0)
// CHECK-NEXT: layer_norm_k1<<<1, 256>>>(buf0, buf1)
// CHECK-NEXT: layer_norm_k2<<<16, 256>>>(arg0, buf1, buf2)
// CHECK-NEXT: layer_norm_k3<<<1, 256>>>(buf2, buf3)
// CHECK-NEXT: layer_norm_k4<<<48, 256>>>(arg0, buf1, buf3, arg1, arg2, buf4)

// CHECK: layer_norm_k0: row reduction (kiln_add) over 16x1x768
// CHECK: acc = kiln_add{}(acc, a0);
// CHECK: layer_norm_k1: pointwise over 16x1
// CHECK: (a0 / 768.0f)
// CHECK: layer_norm_k2: row reduction (kiln_add) over 16x768
// CHECK: const float v0 = (a0 - a1);
// CHECK-NEXT: const float v1 = (v0 * v0);
// CHECK-NEXT: acc = kiln_add{}(acc, v1);
// CHECK: layer_norm_k3: pointwise over 16x1
// CHECK: (v0 + 9.99999975e-06f)
// CHECK-NEXT: rsqrtf(v1)
// CHECK: layer_norm_k4: pointwise over 16x768
// CHECK: const int d0 = i / 768;
// CHECK-NEXT: const int d1 = i % 768;
// CHECK-NEXT: const float a0 = in0[i];
// CHECK-NEXT: const float a1 = in1[d0];
// CHECK-NEXT: const float a2 = in2[d0];
// CHECK-NEXT: const float a3 = in3[d1];
// CHECK-NEXT: const float a4 = in4[d1];
// Tests that with row fusion the five generics are one kernel and that the
// two sums (sum of x, sum of (x - mean)^2) come from one read of the row:
// Welford (count, mean, M2) per thread, merged across the block with
// Chan's rule by kiln_block_merge; r0 (the sum) = mean * 768, r2 = M2, the
// per-row mean and rstd are computed by every thread in registers, and one
// full-row pass reads x, weight and bias.

// FUSED-LABEL: func @layer_norm: 1 kernel(s)
// FUSED: buf0: float[16x768], 49152 bytes, result 0
// FUSED: layer_norm_k0<<<16, 256>>>(arg0, arg1, arg2, buf0)
// FUSED: row group of 5 fused generics (one-pass sum, per-row, one-pass M2, per-row, full-row): 16 rows of 768
// FUSED: __shared__ float partials0[32][3];
// FUSED-NEXT: __shared__ float s_r0;
// FUSED-NEXT: __shared__ float s_r2;
// FUSED: // r0, r2: Welford statistics
// FUSED: float st[3] = {0.0f, 0.0f, 0.0f};
// FUSED-NEXT: for (int col = threadIdx.x; col < 768; col += blockDim.x) {
// FUSED: const float a0 = in0[d0 * 768 + d2];
// FUSED-NEXT: kiln_welford_add(st, a0);
// FUSED-NEXT: }
// FUSED-NEXT: kiln_block_merge<3, float>(st, partials0, kiln_welford_merge{});
// FUSED-NEXT: if (threadIdx.x == 0) {
// FUSED-NEXT: s_r0 = st[1] * 768.0f;
// FUSED-NEXT: s_r2 = st[2];
// FUSED: // r1: per-row pointwise (every thread)
// FUSED: const float v0 = (r0 / 768.0f);
// FUSED-NEXT: r1 = v0;
// FUSED: // r2: computed with r0
// FUSED-NOT: kiln_block_reduce
// FUSED: rsqrtf(v1);
// FUSED-NEXT: r3 = v2;
// FUSED: // full-row pointwise
// FUSED: const float v0 = (a0 - r1);
// FUSED-NEXT: const float v1 = (v0 * r3);
// FUSED-NEXT: const float v2 = (v1 * a3);
// FUSED-NEXT: const float v3 = (v2 + a4);
// FUSED-NEXT: out0[d0 * 768 + d1] = v3;
// Tests that with --no-one-pass-rows the five generics are one kernel with
// two block sums (the row read once per sum), the per-row mean and rstd computed by every thread in registers,
// and one full-row pass reading x, weight and bias.

// TWOPASS-LABEL: func @layer_norm: 1 kernel(s)
// TWOPASS: buf0: float[16x768], 49152 bytes, result 0
// TWOPASS: layer_norm_k0<<<16, 256>>>(arg0, arg1, arg2, buf0)
// TWOPASS: row group of 5 fused generics (kiln_add, per-row, kiln_add, per-row, full-row): 16 rows of 768
// TWOPASS: r0 = s_r0;
// TWOPASS: // r1: per-row pointwise (every thread)
// TWOPASS: const float v0 = (r0 / 768.0f);
// TWOPASS-NEXT: r1 = v0;
// TWOPASS: const float v0 = (a0 - r1);
// TWOPASS-NEXT: const float v1 = (v0 * v0);
// TWOPASS-NEXT: acc = kiln_add{}(acc, v1);
// TWOPASS: r2 = s_r2;
// TWOPASS: rsqrtf(v1);
// TWOPASS-NEXT: r3 = v2;
// TWOPASS: // full-row pointwise
// TWOPASS: const float v0 = (a0 - r1);
// TWOPASS-NEXT: const float v1 = (v0 * r3);
// TWOPASS-NEXT: const float v2 = (v1 * a3);
// TWOPASS-NEXT: const float v3 = (v2 + a4);
// TWOPASS-NEXT: out0[d0 * 768 + d1] = v3;
func.func @layer_norm(%x: tensor<16x768xf32>, %w: tensor<768xf32>, %b: tensor<768xf32>) -> tensor<16x768xf32> {
  %0 = kiln.layer_norm %x weight %w bias %b {num_dims = 1 : i64} : tensor<16x768xf32>, tensor<768xf32>, tensor<768xf32>
  return %0 : tensor<16x768xf32>
}

// Tests that a bf16 layer_norm (computed in f32 by the decomposition, as
// torch does) loads bf16 once, keeps f32 temporaries and rounds once at the
// final store.

// CHECK-LABEL: func @layer_norm_bf16
// CHECK: arg0: __nv_bfloat16[8x512], 8192 bytes, input 0
// CHECK: float[8x1]
// CHECK: __nv_bfloat16[8x512], 8192 bytes, result 0
// CHECK: layer_norm_bf16_k0(const __nv_bfloat16 *__restrict__ in0, float *__restrict__ out0)
// CHECK: const float a0 = __bfloat162float(in0[d0 * 512 + d2]);
// CHECK: out0[i] = __float2bfloat16_rn(v{{[0-9]+}});
// FUSED-LABEL: func @layer_norm_bf16: 1 kernel(s)
// FUSED: layer_norm_bf16_k0<<<8, 128>>>(arg0, buf0)
// FUSED: out0[d0 * 512 + d1] = __float2bfloat16_rn(v{{[0-9]+}});
func.func @layer_norm_bf16(%x: tensor<8x512xbf16>) -> tensor<8x512xbf16> {
  %0 = kiln.layer_norm %x {num_dims = 1 : i64} : tensor<8x512xbf16>
  return %0 : tensor<8x512xbf16>
}

// Tests that a sum of squares around a per-row value that is not the mean
// (here relu(sum)) keeps the two-loop form.

// FUSED-LABEL: func @negative_not_mean: 1 kernel(s)
// FUSED-NOT: kiln_welford_add(st
// FUSED: acc = kiln_block_reduce<float>(acc, partials0, kiln_add{}
// FUSED: acc = kiln_block_reduce<float>(acc, partials2, kiln_add{}
func.func @negative_not_mean(%x: tensor<8x96xf32>) -> tensor<8x1xf32> {
  %s = kiln.sum %x {dims = array<i64: 1>, keepdim = true} : tensor<8x96xf32> -> tensor<8x1xf32>
  %h = kiln.relu %s : tensor<8x1xf32>
  %d = kiln.sub %x, %h : tensor<8x96xf32>, tensor<8x1xf32>
  %q = kiln.mul %d, %d : tensor<8x96xf32>, tensor<8x96xf32>
  %v = kiln.sum %q {dims = array<i64: 1>, keepdim = true} : tensor<8x96xf32> -> tensor<8x1xf32>
  return %v : tensor<8x1xf32>
}
