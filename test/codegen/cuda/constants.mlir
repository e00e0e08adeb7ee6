// RUN: kiln-translate --kiln-to-cuda %s | FileCheck %s

// Tests that a splat constant read where a buffer is needed (a GEMM
// operand) or returned is written by a fill kernel first (bf16 rounded at
// the store), and that the GEMM reads that buffer.

// CHECK-LABEL: func @zeros_mm: 2 kernel(s), 1 other step(s)
// CHECK:   [[Z:buf[0-9]+]]: float[3x8], 96 bytes, temporary
// CHECK:   [[C:buf[0-9]+]]: float[3x8], 96 bytes, result 0
// CHECK:   [[K:buf[0-9]+]]: __nv_bfloat16[4], 8 bytes, result 1
// CHECK: zeros_mm_k0<<<1, 256>>>([[Z]])
// CHECK-NEXT: zeros_mm_gemm0: extern GEMM 3x8x8 (MxNxK)([[Z]], arg0, [[C]])
// CHECK-NEXT: zeros_mm_k1<<<1, 256>>>([[K]])
// CHECK: zeros_mm_k0: fill 24 elements with 0.0f
// CHECK: out0[i] = 0.0f;
// CHECK: zeros_mm_k1: fill 4 elements with 1.5f
// CHECK: out0[i] = __float2bfloat16_rn(1.5f);
func.func @zeros_mm(%w: tensor<8x8xf32>) -> (tensor<3x8xf32>, tensor<4xbf16>) {
  %0 = kiln.constant dense<0.000000e+00> : tensor<3x8xf32>
  %1 = kiln.matmul %0, %w : tensor<3x8xf32>, tensor<8x8xf32>
  %2 = kiln.constant dense<1.500000e+00> : tensor<4xbf16>
  return %1, %2 : tensor<3x8xf32>, tensor<4xbf16>
}
