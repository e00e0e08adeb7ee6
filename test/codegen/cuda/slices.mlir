// RUN: kiln-translate --kiln-to-cuda %s | FileCheck %s

// Tests slices, concats and gathers: a strided slice is a copy kernel
// reading at offset + row/column strides; a concat is one insert kernel
// per input writing into one buffer in place (the chain owns it); an
// embedding reads its table through an extra kernel parameter at the
// clamped index.

// CHECK-LABEL: func @strided_slice: 2 kernel(s)
// CHECK: strided_slice_k0: slice over 4x3
// CHECK: out0[d0 * 3 + d1] = in0[d0 * 32 + d1 * 5 + 18];
func.func @strided_slice(%x: tensor<8x16xf32>) -> tensor<4x3xf32> {
  %0 = kiln.slice %x {end = array<i64: 8, 16>, start = array<i64: 1, 2>, step = array<i64: 2, 5>} : tensor<8x16xf32> -> tensor<4x3xf32>
  %1 = kiln.relu %0 : tensor<4x3xf32>
  return %1 : tensor<4x3xf32>
}

// CHECK-LABEL: func @concat3: 3 kernel(s)
// CHECK: [[OUT:buf[0-9]+]]: float[2x9], 72 bytes, result 0
// CHECK: concat3_k0<<<1, 256>>>(arg0, [[OUT]])
// CHECK-NEXT: concat3_k1<<<1, 256>>>(arg1, [[OUT]])
// CHECK-NEXT: concat3_k2<<<1, 256>>>(arg2, [[OUT]])
// CHECK: out0[d0 * 9 + d1] = in0[d0 * 3 + d1];
// CHECK: out0[d0 * 9 + d1 + 3] = in0[d0 * 5 + d1];
// CHECK: out0[d0 * 9 + 8] = in0[d0];
func.func @concat3(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>, %c: tensor<2x1xf32>) -> tensor<2x9xf32> {
  %0 = kiln.concat %a, %b, %c {dim = 1 : i64} : tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x1xf32> -> tensor<2x9xf32>
  return %0 : tensor<2x9xf32>
}

// A concat whose first part is also returned: the chain copies it.
// CHECK-LABEL: func @concat_twice
// CHECK-COUNT-2: insert over 3x4
func.func @concat_twice(%a: tensor<3x4xf32>) -> (tensor<6x4xf32>, tensor<3x4xf32>) {
  %0 = kiln.concat %a, %a {dim = 0 : i64} : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<6x4xf32>
  return %0, %a : tensor<6x4xf32>, tensor<3x4xf32>
}

// CHECK-LABEL: func @embedding: 1 kernel(s)
// CHECK: embedding_k0<<<1, 256>>>(arg1, buf0, arg0)
// CHECK: const float *__restrict__ g0
// CHECK: kiln_minnum(v1, 9LL)
// CHECK: g0[(v2) * 4 + (v3)]
func.func @embedding(%w: tensor<10x4xf32>, %i: tensor<3xi64>) -> tensor<3x4xf32> {
  %0 = kiln.embedding %w, %i : tensor<10x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// A 3x3 convolution (pad 1): zero padding as inserted constants, each tap
// (a slice only the im2col concat reads) copied straight into the columns
// by one kernel, one GEMM.
// CHECK-LABEL: func @conv3x3: 14 kernel(s), 1 other step(s)
// CHECK: conv3x3_gemm0: extern GEMM 4x35x27 (MxNxK)(arg1, [[COLS:buf[0-9]+]], {{buf[0-9]+}})
// CHECK: insert constant over
// CHECK: slice into a concat over 1x3x1x7x5
// CHECK: out0[d1 * 315 + d3 * 5 + d4 + 140] = in0[d1 * 63 + d3 * 7 + d4 + 8];
func.func @conv3x3(%x: tensor<1x3x7x5xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x7x5xf32> {
  %0 = kiln.conv2d %x, %w {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : tensor<1x3x7x5xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x7x5xf32>
  return %0 : tensor<1x4x7x5xf32>
}

// A non-splat constant (upsampling's index tables): a __device__ array in
// the source, copied into its buffer by one kernel.
// CHECK-LABEL: func @constant_table: 2 kernel(s)
// CHECK: __device__ const float constant_table_c{{[0-9]+}}[4] = {1.0f, 2.0f, 3.0f, -0.5f};
// CHECK: out0[i] = constant_table_c{{[0-9]+}}[i];
func.func @constant_table(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %c = kiln.constant dense<[1.0, 2.0, 3.0, -0.5]> : tensor<4xf32>
  %0 = kiln.mul %x, %c : tensor<2x4xf32>, tensor<4xf32>
  return %0 : tensor<2x4xf32>
}
