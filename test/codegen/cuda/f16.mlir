// RUN: kiln-translate --kiln-to-cuda %s --no-vectorize | FileCheck %s

// Tests that an f16 pointwise chain loads each operand to float once and does
// all math in float (expf/tanhf); each op's result is rounded to f16 as eager
// torch does per op (kiln-convert-to-linalg computes f16 bodies in f32 and
// rounds once per op), so the fused kernel matches eager bit for bit; the
// half header is included only when used.

// CHECK: #include <cuda_fp16.h>
// CHECK-NOT: #include <cuda_bf16.h>
// CHECK-LABEL: func @f16_chain: 1 kernel(s)
// CHECK: arg0: __half[1000], 2000 bytes, input 0
// CHECK: f16_chain_k0<<<4, 256>>>(arg0, arg1, buf0)
// CHECK: f16_chain_k0(const __half *__restrict__ in0, const __half *__restrict__ in1, __half *__restrict__ out0) {
// CHECK-NEXT: for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < 1000; i += gridDim.x * blockDim.x) {
// CHECK-NEXT: const float a0 = __half2float(in0[i]);
// CHECK-NEXT: const float a1 = __half2float(in1[i]);
// CHECK-NEXT: const float v0 = (a0 * a1);
// CHECK-NEXT: const float v1 = __half2float(__float2half_rn(v0));
// CHECK: expf(
// CHECK: __half2float(__float2half_rn(
// CHECK: tanhf(
// CHECK: out0[i] = __float2half_rn(v{{[0-9]+}});
func.func @f16_chain(%x: tensor<1000xf16>, %y: tensor<1000xf16>) -> tensor<1000xf16> {
  %0 = kiln.mul %x, %y : tensor<1000xf16>, tensor<1000xf16>
  %1 = kiln.sigmoid %0 : tensor<1000xf16>
  %2 = kiln.tanh %1 : tensor<1000xf16>
  return %2 : tensor<1000xf16>
}

// Tests that an explicit f32 → f16 cast inside a fused chain rounds
// (torch's .half()), and that the f16 softmax (computed in f32 by the
// decomposition) is one row-group kernel that reads f16, keeps the row
// statistics in float and stores f16.

// CHECK-LABEL: func @f16_cast
// CHECK: const float a0 = in0[i];
// CHECK: __half2float(__float2half_rn(
// CHECK: out0[i] = __float2half_rn(
func.func @f16_cast(%x: tensor<300xf32>) -> tensor<300xf16> {
  %0 = kiln.exp %x : tensor<300xf32>
  %1 = kiln.cast %0 : tensor<300xf32> -> tensor<300xf16>
  %2 = kiln.relu %1 : tensor<300xf16>
  return %2 : tensor<300xf16>
}

// CHECK-LABEL: func @f16_softmax: 1 kernel(s)
// CHECK: buf0: __half[4x256], 2048 bytes, result 0
// CHECK: f16_softmax_k0(const __half *__restrict__ in0, __half *__restrict__ out0)
// CHECK: __shared__ float partials0[32][2];
// CHECK: const float a0 = __half2float(in0[d0 * 256 + d2]);
// CHECK-NEXT: kiln_online_add(st, a0);
// CHECK: out0[d0 * 256 + d1] = __float2half_rn(v{{[0-9]+}});
func.func @f16_softmax(%x: tensor<4x256xf16>) -> tensor<4x256xf16> {
  %0 = kiln.softmax %x {dim = 1 : i64} : tensor<4x256xf16>
  return %0 : tensor<4x256xf16>
}
