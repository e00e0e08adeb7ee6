// RUN: kiln-translate --kiln-to-cuda %s --no-vectorize | FileCheck %s

// Tests that a pointwise chain with a broadcast row bias and a 0-d constant
// becomes one grid-stride kernel: the bias is read through its indexing map
// (column index only), gelu's erf and relu's NaN-propagating max become
// CUDA expressions, and the launch plan lists the buffers and grid.

// CHECK-LABEL: func @chain: 1 kernel(s)
// CHECK: arg0: float[64x128], 32768 bytes, input 0
// CHECK: arg1: float[128], 512 bytes, input 1
// CHECK: buf0: float[64x128], 32768 bytes, result 0
// CHECK: chain_k0<<<32, 256>>>(arg0, arg1, buf0)
// CHECK: extern "C" __global__ void __launch_bounds__(256) chain_k0(const float *__restrict__ in0, const float *__restrict__ in1, float *__restrict__ out0) {
// CHECK-NEXT: for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < 8192; i += gridDim.x * blockDim.x) {
// CHECK-NEXT: const int d1 = i % 128;
// CHECK-NEXT: const float a0 = in0[i];
// CHECK-NEXT: const float a1 = in1[d1];
// CHECK-NEXT: const float v0 = (a0 + a1);
// CHECK-NEXT: const float v1 = (v0 * 2.0f);
// CHECK: erff(
// CHECK: kiln_maximum({{v[0-9]+}}, 0.0f);
// CHECK-NEXT: out0[i] = v{{[0-9]+}};
// CHECK-NOT: __global__
func.func @chain(%x: tensor<64x128xf32>, %b: tensor<128xf32>) -> tensor<64x128xf32> {
  %c = kiln.constant dense<2.0> : tensor<f32>
  %0 = kiln.add %x, %b : tensor<64x128xf32>, tensor<128xf32>
  %1 = kiln.mul %0, %c : tensor<64x128xf32>, tensor<f32>
  %2 = kiln.gelu %1 : tensor<64x128xf32>
  %3 = kiln.relu %2 : tensor<64x128xf32>
  return %3 : tensor<64x128xf32>
}

// Tests that a column vector broadcast against a 3-d tensor decodes the
// leading dims from the linear index, that exp/tanh/sigmoid map to float
// math, and that a size not divisible by the block (tail) is bounded by the
// loop condition.

// CHECK-LABEL: func @bcast3d: 1 kernel(s)
// CHECK: bcast3d_k0<<<4, 256>>>(arg0, arg1, buf0)
// CHECK: for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < 1001; i += gridDim.x * blockDim.x) {
// CHECK-NEXT: const int d0 = i / 77;
// CHECK-NEXT: const int d1 = (i / 7) % 11;
// CHECK-NEXT: const float a0 = in0[i];
// CHECK-NEXT: const float a1 = in1[d0 * 11 + d1];
// CHECK: expf(
// CHECK: tanhf(
func.func @bcast3d(%x: tensor<13x11x7xf32>, %c: tensor<13x11x1xf32>) -> tensor<13x11x7xf32> {
  %0 = kiln.sub %x, %c : tensor<13x11x7xf32>, tensor<13x11x1xf32>
  %1 = kiln.sigmoid %0 : tensor<13x11x7xf32>
  %2 = kiln.tanh %1 : tensor<13x11x7xf32>
  return %2 : tensor<13x11x7xf32>
}

// Tests that comparisons and select become C comparisons and a ternary.

// CHECK-LABEL: func @where: 1 kernel(s)
// CHECK: (a0 > a1)
// CHECK: ? {{.*}} : {{.*}})
func.func @where(%x: tensor<256xf32>, %y: tensor<256xf32>) -> tensor<256xf32> {
  %0 = kiln.gt %x, %y : tensor<256xf32>, tensor<256xf32>
  %1 = kiln.select %0, %x, %y : tensor<256xi1>, tensor<256xf32>, tensor<256xf32>
  return %1 : tensor<256xf32>
}

// Tests that a space whose grid-stride loop could overflow a 32-bit index
// (within one stride of 2^31) uses 64-bit indices.

// CHECK-LABEL: func @near_int_max
// CHECK: for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < 2147000000; i += (long long)gridDim.x * blockDim.x) {
func.func @near_int_max(%x: tensor<2147000000xf16>) -> tensor<2147000000xf16> {
  %0 = kiln.exp %x : tensor<2147000000xf16>
  return %0 : tensor<2147000000xf16>
}
