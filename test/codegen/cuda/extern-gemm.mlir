// RUN: kiln-translate --kiln-to-cuda %s | FileCheck %s
// RUN: kiln-translate --kiln-to-cuda %s --no-gemm-epilogues | FileCheck %s --check-prefix=NOEPI

// Tests that `x @ w.T + b` becomes one extern GEMM step (B transposed, the
// zero-filled accumulator folded in) carrying the bias add as its epilogue:
// the bias buffer is its fourth argument, it writes the result buffer, and
// no kernel is printed (for the GEMM or the add).

// CHECK-LABEL: func @linear: 0 kernel(s), 1 other step(s)
// CHECK:   arg0: float[4x16], 256 bytes, input 0
// CHECK:   arg1: float[32x16], 2048 bytes, input 1
// CHECK:   arg2: float[32], 128 bytes, input 2
// CHECK:   [[OUT:buf[0-9]+]]: float[4x32], 512 bytes, result 0
// CHECK: Launches, in order
// CHECK-NEXT: linear_gemm0: extern GEMM 4x32x16 (MxNxK, B transposed, epilogue bias)(arg0, arg1, [[OUT]], arg2)
// CHECK-NOT: __global__ void linear_

// Tests that without epilogues the GEMM is followed by one pointwise kernel
// that reads the GEMM's buffer.

// NOEPI-LABEL: func @linear: 1 kernel(s), 1 other step(s)
// NOEPI:   [[C:buf[0-9]+]]: float[4x32], 512 bytes, temporary
// NOEPI:   [[OUT:buf[0-9]+]]: float[4x32], 512 bytes, result 0
// NOEPI: Launches, in order
// NOEPI-NEXT: linear_gemm0: extern GEMM 4x32x16 (MxNxK, B transposed)(arg0, arg1, [[C]])
// NOEPI-NEXT: linear_k0<<<1, 256>>>([[C]], arg2, [[OUT]])
// NOEPI-NOT: __global__ void {{.*}}gemm
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

// Tests that relu(x @ w.T + b) is one GEMM step with the bias + ReLU epilogue.

// CHECK-LABEL: func @linear_relu: 0 kernel(s), 1 other step(s)
// CHECK: linear_relu_gemm0: extern GEMM 8x64x32 (MxNxK, B transposed, epilogue bias_relu)(arg0, arg1, [[OUT:buf[0-9]+]], arg2)
// NOEPI-LABEL: func @linear_relu: 1 kernel(s), 1 other step(s)
func.func @linear_relu(%x: tensor<8x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>) -> tensor<8x64xf32> {
  %t = kiln.permute %w {dims = array<i64: 1, 0>} : tensor<64x32xf32> -> tensor<32x64xf32>
  %0 = kiln.matmul %x, %t : tensor<8x32xf32>, tensor<32x64xf32>
  %1 = kiln.add %0, %b : tensor<8x64xf32>, tensor<64xf32>
  %2 = kiln.relu %1 : tensor<8x64xf32>
  return %2 : tensor<8x64xf32>
}

// The tanh GELU (kiln.gelu's tanh form, and GPT-2's NewGELUActivation
// spelled out with pow) is cuBLASLt's GELU_BIAS epilogue; the erf GELU is not.
// CHECK-LABEL: func @linear_gelu_tanh: 0 kernel(s), 1 other step(s)
// CHECK: extern GEMM 8x64x32 (MxNxK, epilogue bias_gelu_tanh)(arg0, arg1, {{buf[0-9]+}}, arg2)
func.func @linear_gelu_tanh(%x: tensor<8x32xf32>, %w: tensor<32x64xf32>, %b: tensor<64xf32>) -> tensor<8x64xf32> {
  %0 = kiln.matmul %x, %w : tensor<8x32xf32>, tensor<32x64xf32>
  %1 = kiln.add %0, %b : tensor<8x64xf32>, tensor<64xf32>
  %2 = kiln.gelu %1 {approximate = "tanh"} : tensor<8x64xf32>
  return %2 : tensor<8x64xf32>
}

// CHECK-LABEL: func @linear_new_gelu: 0 kernel(s), 1 other step(s)
// CHECK: epilogue bias_gelu_tanh
func.func @linear_new_gelu(%x: tensor<8x32xf32>, %w: tensor<32x64xf32>, %b: tensor<64xf32>) -> tensor<8x64xf32> {
  %0 = kiln.matmul %x, %w : tensor<8x32xf32>, tensor<32x64xf32>
  %1 = kiln.add %b, %0 : tensor<64xf32>, tensor<8x64xf32>
  %c3 = kiln.constant dense<3.0> : tensor<f32>
  %2 = kiln.pow %1, %c3 : tensor<8x64xf32>, tensor<f32>
  %k = kiln.constant dense<0.044715> : tensor<f32>
  %3 = kiln.mul %k, %2 : tensor<f32>, tensor<8x64xf32>
  %4 = kiln.add %1, %3 : tensor<8x64xf32>, tensor<8x64xf32>
  %s = kiln.constant dense<0.7978845608028654> : tensor<f32>
  %5 = kiln.mul %s, %4 : tensor<f32>, tensor<8x64xf32>
  %6 = kiln.tanh %5 : tensor<8x64xf32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %7 = kiln.add %one, %6 : tensor<f32>, tensor<8x64xf32>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %8 = kiln.mul %half, %1 : tensor<f32>, tensor<8x64xf32>
  %9 = kiln.mul %8, %7 : tensor<8x64xf32>, tensor<8x64xf32>
  return %9 : tensor<8x64xf32>
}

// A Linear on a [B, S, K] input (GPT-2's Conv1D: addmm on the [B*S, K]
// view, result viewed back): the consumer reads C through the reshape.
// CHECK-LABEL: func @linear3d_gelu_tanh: 0 kernel(s), 1 other step(s)
// CHECK: extern GEMM 6x64x32 (MxNxK, epilogue bias_gelu_tanh)
func.func @linear3d_gelu_tanh(%x: tensor<2x3x32xf32>, %w: tensor<32x64xf32>, %b: tensor<64xf32>) -> tensor<2x3x64xf32> {
  %0 = kiln.reshape %x : tensor<2x3x32xf32> -> tensor<6x32xf32>
  %1 = kiln.matmul %0, %w : tensor<6x32xf32>, tensor<32x64xf32>
  %2 = kiln.reshape %1 : tensor<6x64xf32> -> tensor<2x3x64xf32>
  %3 = kiln.add %2, %b : tensor<2x3x64xf32>, tensor<64xf32>
  %4 = kiln.gelu %3 {approximate = "tanh"} : tensor<2x3x64xf32>
  return %4 : tensor<2x3x64xf32>
}

// CHECK-LABEL: func @negative_gelu_erf: 1 kernel(s), 1 other step(s)
func.func @negative_gelu_erf(%x: tensor<8x32xf32>, %w: tensor<32x64xf32>, %b: tensor<64xf32>) -> tensor<8x64xf32> {
  %0 = kiln.matmul %x, %w : tensor<8x32xf32>, tensor<32x64xf32>
  %1 = kiln.add %0, %b : tensor<8x64xf32>, tensor<64xf32>
  %2 = kiln.gelu %1 : tensor<8x64xf32>
  return %2 : tensor<8x64xf32>
}

// Tests that an activation without a library epilogue (sigmoid), a GEMM
// result used twice, and 16-bit inputs (f32 accumulator, rounding kernel)
// keep the GEMM + kernel form.

// CHECK-LABEL: func @negative_sigmoid: 1 kernel(s), 1 other step(s)
// CHECK: negative_sigmoid_gemm0: extern GEMM 8x64x32 (MxNxK)(arg0, arg1, [[C:buf[0-9]+]])
// CHECK-NEXT: negative_sigmoid_k0<<<
func.func @negative_sigmoid(%x: tensor<8x32xf32>, %w: tensor<32x64xf32>, %b: tensor<64xf32>) -> tensor<8x64xf32> {
  %0 = kiln.matmul %x, %w : tensor<8x32xf32>, tensor<32x64xf32>
  %1 = kiln.add %0, %b : tensor<8x64xf32>, tensor<64xf32>
  %2 = kiln.sigmoid %1 : tensor<8x64xf32>
  return %2 : tensor<8x64xf32>
}

// CHECK-LABEL: func @negative_two_uses: 1 kernel(s), 1 other step(s)
// CHECK: negative_two_uses_gemm0: extern GEMM 8x64x32 (MxNxK)(arg0, arg1, [[C:buf[0-9]+]])
func.func @negative_two_uses(%x: tensor<8x32xf32>, %w: tensor<32x64xf32>, %b: tensor<64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  %0 = kiln.matmul %x, %w : tensor<8x32xf32>, tensor<32x64xf32>
  %1 = kiln.add %0, %b : tensor<8x64xf32>, tensor<64xf32>
  return %0, %1 : tensor<8x64xf32>, tensor<8x64xf32>
}

// A 16-bit GEMM (f32 accumulator) whose consumer rounds it, adds the bias
// and rounds again: the library writes the f16 result, rounding once.
// CHECK-LABEL: func @f16_bias: 0 kernel(s), 1 other step(s)
// CHECK: buf0: __half[8x64], 1024 bytes, result 0
// CHECK: f16_bias_gemm0: extern GEMM 8x64x32 (MxNxK, epilogue bias)(arg0, arg1, buf0, arg2)
func.func @f16_bias(%x: tensor<8x32xf16>, %w: tensor<32x64xf16>, %b: tensor<64xf16>) -> tensor<8x64xf16> {
  %0 = kiln.matmul %x, %w : tensor<8x32xf16>, tensor<32x64xf16>
  %1 = kiln.add %0, %b : tensor<8x64xf16>, tensor<64xf16>
  return %1 : tensor<8x64xf16>
}

// A 16-bit tanh GELU (kiln.gelu rounds its input, computes in f32 and
// rounds): cuBLASLt's GELU_BIAS epilogue writes the bf16 result, rounding
// once.
// CHECK-LABEL: func @bf16_gelu_tanh: 0 kernel(s), 1 other step(s)
// CHECK: buf0: __nv_bfloat16[8x64], 1024 bytes, result 0
// CHECK: bf16_gelu_tanh_gemm0: extern GEMM 8x64x32 (MxNxK, epilogue bias_gelu_tanh)(arg0, arg1, buf0, arg2)
func.func @bf16_gelu_tanh(%x: tensor<8x32xbf16>, %w: tensor<32x64xbf16>, %b: tensor<64xbf16>) -> tensor<8x64xbf16> {
  %0 = kiln.matmul %x, %w : tensor<8x32xbf16>, tensor<32x64xbf16>
  %1 = kiln.add %0, %b : tensor<8x64xbf16>, tensor<64xbf16>
  %2 = kiln.gelu %1 {approximate = "tanh"} : tensor<8x64xbf16>
  return %2 : tensor<8x64xbf16>
}

// Tests that the erf GELU is never cuBLASLt's (tanh) GELU epilogue, in
// 16 bits either: the f32 accumulator and one exact kernel.
// CHECK-LABEL: func @negative_f16_gelu_erf: 1 kernel(s), 1 other step(s)
// CHECK: negative_f16_gelu_erf_gemm0: extern GEMM 8x64x32 (MxNxK)(arg0, arg1, [[C:buf[0-9]+]])
// CHECK: erff(
func.func @negative_f16_gelu_erf(%x: tensor<8x32xf16>, %w: tensor<32x64xf16>, %b: tensor<64xf16>) -> tensor<8x64xf16> {
  %0 = kiln.matmul %x, %w : tensor<8x32xf16>, tensor<32x64xf16>
  %1 = kiln.add %0, %b : tensor<8x64xf16>, tensor<64xf16>
  %2 = kiln.gelu %1 : tensor<8x64xf16>
  return %2 : tensor<8x64xf16>
}
