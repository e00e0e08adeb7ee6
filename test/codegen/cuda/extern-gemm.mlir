// RUN: kiln-translate --kiln-to-cuda %s | FileCheck %s

// Tests that `x @ w.T + b` becomes an extern GEMM step (B transposed, the
// zero-filled accumulator folded in) followed by one pointwise kernel that
// reads the GEMM's buffer; no kernel is printed for the GEMM.

// CHECK-LABEL: func @linear: 1 kernel(s), 1 other step(s)
// CHECK:   arg0: float[4x16], 256 bytes, input 0
// CHECK:   arg1: float[32x16], 2048 bytes, input 1
// CHECK:   [[C:buf[0-9]+]]: float[4x32], 512 bytes, temporary
// CHECK:   [[OUT:buf[0-9]+]]: float[4x32], 512 bytes, result 0
// CHECK: Launches, in order
// CHECK-NEXT: linear_gemm0: extern GEMM 4x32x16 (MxNxK, B transposed)(arg0, arg1, [[C]])
// CHECK-NEXT: linear_k0<<<1, 256>>>([[C]], arg2, [[OUT]])
// CHECK-NOT: __global__ void {{.*}}gemm
func.func @linear(%x: tensor<4x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>) -> tensor<4x32xf32> {
  %t = kiln.permute %w {dims = array<i64: 1, 0>} : tensor<32x16xf32> -> tensor<16x32xf32>
  %0 = kiln.matmul %x, %t : tensor<4x16xf32>, tensor<16x32xf32>
  %1 = kiln.add %0, %b : tensor<4x32xf32>, tensor<32xf32>
  return %1 : tensor<4x32xf32>
}

// Tests that a batched f16 matmul is a batched GEMM with an f32
// accumulator, rounded to f16 by a pointwise kernel.

// CHECK-LABEL: func @bmm_f16: 1 kernel(s), 1 other step(s)
// CHECK:   [[ACC:buf[0-9]+]]: float[2x4x16], 512 bytes, temporary
// CHECK:   [[R:buf[0-9]+]]: __half[2x4x16], 256 bytes, result 0
// CHECK: bmm_f16_gemm0: extern GEMM 2x4x16x8 (MxNxK)(arg0, arg1, [[ACC]])
// CHECK-NEXT: bmm_f16_k0<<<1, 256>>>([[ACC]], [[R]])
// CHECK: __float2half_rn
func.func @bmm_f16(%a: tensor<2x4x8xf16>, %b: tensor<2x8x16xf16>) -> tensor<2x4x16xf16> {
  %0 = kiln.matmul %a, %b : tensor<2x4x8xf16>, tensor<2x8x16xf16>
  return %0 : tensor<2x4x16xf16>
}
