// RUN: kiln-translate --kiln-to-cuda %s | FileCheck %s
// RUN: kiln-translate --kiln-to-cuda %s --no-vectorize | FileCheck %s --check-prefix=SCALAR

// Tests that a pointwise kernel over contiguous f32 operands handles 4
// elements per thread with one 128-bit access per operand: the bias row
// (broadcast over rows, contiguous along the innermost dim) is loaded as a
// vector at its lane-0 column, the grid counts vectors (2048 / 256 = 8
// blocks), and the kernel checks 16-byte alignment of every pointer at run
// time, keeping the scalar loop for unaligned views.

// CHECK-LABEL: func @bias_add: 1 kernel(s)
// CHECK: bias_add_k0<<<8, 256>>>(arg0, arg1, buf0)
// CHECK: bias_add_k0: pointwise over 64x128 (8192 elements), 4 per thread (128-bit accesses)
// CHECK-NEXT: extern "C" __global__ void __launch_bounds__(256) bias_add_k0(
// CHECK-NEXT: if ((((unsigned long long)in0 | (unsigned long long)in1 | (unsigned long long)out0) & 15) == 0) {
// CHECK-NEXT: // 4 elements per thread: one 128-bit access per operand
// CHECK-NEXT: for (int vi = blockIdx.x * blockDim.x + threadIdx.x; vi < 2048; vi += gridDim.x * blockDim.x) {
// CHECK-NEXT: const int i0 = vi * 4;
// CHECK-NEXT: const int d1 = i0 % 128;
// CHECK-NEXT: alignas(16) float x0[4];
// CHECK-NEXT: *reinterpret_cast<uint4 *>(x0) = *reinterpret_cast<const uint4 *>(in0 + i0);
// CHECK-NEXT: alignas(16) float x1[4];
// CHECK-NEXT: *reinterpret_cast<uint4 *>(x1) = *reinterpret_cast<const uint4 *>(in1 + d1);
// CHECK-NEXT: alignas(16) float y0[4];
// CHECK-NEXT: #pragma unroll
// CHECK-NEXT: for (int j = 0; j < 4; ++j) {
// CHECK-NEXT: const float a0 = x0[j];
// CHECK-NEXT: const float a1 = x1[j];
// CHECK-NEXT: const float v0 = (a0 + a1);
// CHECK-NEXT: const float v1 = kiln_maximum(v0, 0.0f);
// CHECK-NEXT: y0[j] = v1;
// CHECK-NEXT: }
// CHECK-NEXT: *reinterpret_cast<uint4 *>(out0 + i0) = *reinterpret_cast<const uint4 *>(y0);
// CHECK-NEXT: }
// CHECK-NEXT: } else {
// CHECK-NEXT: // unaligned pointers (views): the scalar loop
// CHECK-NEXT: for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < 8192; i += gridDim.x * blockDim.x) {
// CHECK-NEXT: const int d1 = i % 128;
// CHECK-NEXT: const float a0 = in0[i];
// CHECK-NEXT: const float a1 = in1[d1];
// CHECK: out0[i] = v1;
// SCALAR-LABEL: func @bias_add: 1 kernel(s)
// SCALAR: bias_add_k0<<<32, 256>>>(arg0, arg1, buf0)
// SCALAR-NOT: uint4
// SCALAR: out0[i] = v1;
func.func @bias_add(%x: tensor<64x128xf32>, %b: tensor<128xf32>) -> tensor<64x128xf32> {
  %0 = kiln.add %x, %b : tensor<64x128xf32>, tensor<128xf32>
  %1 = kiln.relu %0 : tensor<64x128xf32>
  return %1 : tensor<64x128xf32>
}

// Tests that a per-row operand (constant along the innermost dim) is loaded
// once per vector, outside the lane loop.

// CHECK-LABEL: func @per_row
// CHECK: 4 per thread (128-bit accesses)
// CHECK: const int d0 = i0 / 96;
// CHECK: *reinterpret_cast<uint4 *>(x0) = *reinterpret_cast<const uint4 *>(in0 + i0);
// CHECK-NEXT: const float a1 = in1[d0];
// CHECK-NEXT: alignas(16) float y0[4];
// CHECK: for (int j = 0; j < 4; ++j) {
// CHECK-NEXT: const float a0 = x0[j];
// CHECK-NEXT: const float v0 = (a0 - a1);
func.func @per_row(%x: tensor<16x96xf32>, %m: tensor<16x1xf32>) -> tensor<16x96xf32> {
  %0 = kiln.sub %x, %m : tensor<16x96xf32>, tensor<16x1xf32>
  return %0 : tensor<16x96xf32>
}

// Tests the tail: identity maps only and 1001 elements → 250 vectors, then a
// scalar loop over the last element; the grid counts 251 vector slots.

// CHECK-LABEL: func @tail
// CHECK: tail_k0<<<1, 256>>>
// CHECK: for (int vi = blockIdx.x * blockDim.x + threadIdx.x; vi < 250; vi += gridDim.x * blockDim.x) {
// CHECK: // tail: the last 1 element(s)
// CHECK-NEXT: for (int i = 1000 + blockIdx.x * blockDim.x + threadIdx.x; i < 1001; i += gridDim.x * blockDim.x) {
// CHECK-NEXT: const float a0 = in0[i];
func.func @tail(%x: tensor<1001xf32>) -> tensor<1001xf32> {
  %0 = kiln.relu %x : tensor<1001xf32>
  return %0 : tensor<1001xf32>
}

// Tests 16-bit storage: 8 halves per 128-bit access (uint4), converted to
// float per lane and rounded once per lane at the store.

// CHECK-LABEL: func @half_bias
// CHECK: half_bias_k0: pointwise over 32x256 (8192 elements), 8 per thread (128-bit accesses)
// CHECK: alignas(16) __half x0[8];
// CHECK-NEXT: *reinterpret_cast<uint4 *>(x0) = *reinterpret_cast<const uint4 *>(in0 + i0);
// CHECK: for (int j = 0; j < 8; ++j) {
// CHECK-NEXT: const float a0 = __half2float(x0[j]);
// CHECK: y0[j] = __float2half_rn(v{{[0-9]+}});
// CHECK: *reinterpret_cast<uint4 *>(out0 + i0) = *reinterpret_cast<const uint4 *>(y0);
func.func @half_bias(%x: tensor<32x256xf16>, %b: tensor<256xf16>) -> tensor<32x256xf16> {
  %0 = kiln.add %x, %b : tensor<32x256xf16>, tensor<256xf16>
  return %0 : tensor<32x256xf16>
}

// Tests mixed widths: an f16 → f32 cast moves 4 elements per thread, the
// f32 output with one 128-bit store, the f16 input with one 64-bit load.

// CHECK-LABEL: func @widen
// CHECK: 4 per thread (128-bit accesses)
// CHECK: alignas(16) __half x0[4];
// CHECK-NEXT: *reinterpret_cast<uint2 *>(x0) = *reinterpret_cast<const uint2 *>(in0 + i0);
// CHECK: *reinterpret_cast<uint4 *>(out0 + i0) = *reinterpret_cast<const uint4 *>(y0);
func.func @widen(%x: tensor<8x64xf16>) -> tensor<8x64xf32> {
  %0 = kiln.cast %x : tensor<8x64xf16> -> tensor<8x64xf32>
  return %0 : tensor<8x64xf32>
}

// Tests the fallbacks: a broadcast operand with an innermost extent that is
// not a multiple of 4 (7), and a transposed read, keep the scalar kernel.

// CHECK-LABEL: func @negative_odd_inner
// CHECK: pointwise over 13x11x7 (1001 elements), loc
// CHECK-NOT: uint4
// CHECK: out0[i] =
func.func @negative_odd_inner(%x: tensor<13x11x7xf32>, %c: tensor<13x11x1xf32>) -> tensor<13x11x7xf32> {
  %0 = kiln.sub %x, %c : tensor<13x11x7xf32>, tensor<13x11x1xf32>
  return %0 : tensor<13x11x7xf32>
}

// CHECK-LABEL: func @negative_transposed
// CHECK-NOT: uint4
// CHECK: out0[
func.func @negative_transposed(%x: tensor<32x64xf32>, %y: tensor<64x32xf32>) -> tensor<32x64xf32> {
  %t = kiln.permute %y {dims = array<i64: 1, 0>} : tensor<64x32xf32> -> tensor<32x64xf32>
  %0 = kiln.add %x, %t : tensor<32x64xf32>, tensor<32x64xf32>
  return %0 : tensor<32x64xf32>
}
