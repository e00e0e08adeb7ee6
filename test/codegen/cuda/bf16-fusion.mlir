// RUN: kiln-translate --kiln-to-cuda %s | FileCheck %s
// SPDX-License-Identifier: Apache-2.0
// bf16 graphs fuse like f32 ones (issue 21): the f32 casts of a bf16
// layer_norm's weight and bias (read by every row) and of its 3-d input
// (behind the row collapse) fuse into the row group, which stays one
// kernel; a bf16 linear + ReLU is one GEMM writing bf16 with cuBLASLt's
// bias + ReLU epilogue.

// CHECK-LABEL: func @layer_norm_3d: 1 kernel(s) --
// CHECK-NOT: float[
// CHECK: layer_norm_3d_k0<<<128, 32>>>(arg0, arg1, arg2, buf0)
func.func @layer_norm_3d(%x: tensor<8x16x96xbf16>, %g: tensor<96xbf16>, %b: tensor<96xbf16>) -> tensor<8x16x96xbf16> {
  %0 = kiln.layer_norm %x weight %g bias %b {num_dims = 1 : i64} : tensor<8x16x96xbf16>, tensor<96xbf16>, tensor<96xbf16>
  return %0 : tensor<8x16x96xbf16>
}

// CHECK-LABEL: func @linear_relu: 0 kernel(s), 1 other step(s)
// CHECK: buf0: __nv_bfloat16[32x512], 32768 bytes, result 0
// CHECK: linear_relu_gemm0: extern GEMM 32x512x128 (MxNxK, B transposed, epilogue bias_relu)(arg0, arg1, buf0, arg2)
func.func @linear_relu(%x: tensor<32x128xbf16>, %w: tensor<512x128xbf16>, %b: tensor<512xbf16>) -> tensor<32x512xbf16> {
  %0 = kiln.permute %w {dims = array<i64: 1, 0>} : tensor<512x128xbf16> -> tensor<128x512xbf16>
  %1 = kiln.matmul %x, %0 : tensor<32x128xbf16>, tensor<128x512xbf16>
  %2 = kiln.add %1, %b : tensor<32x512xbf16>, tensor<512xbf16>
  %3 = kiln.relu %2 : tensor<32x512xbf16>
  return %3 : tensor<32x512xbf16>
}
