// RUN: kiln-translate --kiln-to-cuda %s | FileCheck %s

// kiln.quant's int8 layers on CUDA: the q/dq pattern folds into
// kiln.qlinear (kiln-fold-quant in the prepare pipeline), lowered to a
// quantize kernel, an int8 x int8 -> int32 extern GEMM (cuBLASLt
// CUBLAS_COMPUTE_32I) and an epilogue kernel (codegen/common/Quant.cpp).

// Tests a dynamic per-token layer whose weight arrives as int32 words
// (kiln.int8_view): the GEMM reads the words' buffer as its int8 B operand,
// with no unpacking kernel; one row kernel quantizes, one pointwise kernel
// applies the scales and the bias.
// CHECK-LABEL: func @dynamic: 2 kernel(s), 1 other step(s)
// CHECK:   arg1: int[16x2], 128 bytes, input 1
// CHECK:   [[Q:buf[0-9]+]]: signed char[4x8], 32 bytes, temporary
// CHECK:   [[ACC:buf[0-9]+]]: int[4x16], 256 bytes, temporary
// CHECK: Launches, in order
// CHECK-NEXT: dynamic_k0<<<4, 32>>>(arg0, {{buf[0-9]+}}, [[Q]])
// CHECK-NEXT: dynamic_gemm0: extern GEMM 4x16x8 (MxNxK, B transposed)([[Q]], arg1, [[ACC]])
// CHECK-NEXT: dynamic_k1<<<{{.*}}>>>([[ACC]], arg2, {{buf[0-9]+}}, arg3, {{buf[0-9]+}})
// CHECK: rintf
// CHECK: (signed char)
func.func @dynamic(%x: tensor<4x8xf32>, %words: tensor<16x2xi32>, %ws: tensor<16x1xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %w = kiln.int8_view %words : tensor<16x2xi32> -> tensor<16x8xi8>
  %q, %s = kiln.quantize %x : tensor<4x8xf32> -> tensor<4x8xi8>, tensor<4x1xf32>
  %xd = kiln.dequantize %q, %s : tensor<4x8xi8>, tensor<4x1xf32> -> tensor<4x8xf32>
  %wd = kiln.dequantize %w, %ws : tensor<16x8xi8>, tensor<16x1xf32> -> tensor<16x8xf32>
  %wt = kiln.permute %wd {dims = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %y = kiln.matmul %xd, %wt : tensor<4x8xf32>, tensor<8x16xf32>
  %z = kiln.add %y, %b : tensor<4x16xf32>, tensor<16xf32>
  return %z : tensor<4x16xf32>
}

// Tests a static layer: the weight's row sums read its int8 values, so the
// words are unpacked by a kernel (a shift per byte) that the GEMM reads too.
// CHECK-LABEL: func @static
// CHECK: [[W:buf[0-9]+]]: signed char[16x8], 128 bytes, temporary
// CHECK: static_k0<<<{{.*}}>>>(arg1, [[W]])
// CHECK: static_gemm0: extern GEMM 4x16x8 (MxNxK, B transposed)({{buf[0-9]+}}, [[W]], {{buf[0-9]+}})
// CHECK: >> 
func.func @static(%x: tensor<4x8xf32>, %words: tensor<16x2xi32>, %ws: tensor<16x1xf32>) -> tensor<4x16xf32> {
  %w = kiln.int8_view %words : tensor<16x2xi32> -> tensor<16x8xi8>
  %q = kiln.quantize_static %x {scale = 0.05 : f32, zero_point = 120 : i64} : tensor<4x8xf32> -> tensor<4x8xui8>
  %s = kiln.constant dense<0.05> : tensor<1x1xf32>
  %xd = kiln.dequantize %q, %s {zero_point = 120 : i64} : tensor<4x8xui8>, tensor<1x1xf32> -> tensor<4x8xf32>
  %wd = kiln.dequantize %w, %ws : tensor<16x8xi8>, tensor<16x1xf32> -> tensor<16x8xf32>
  %wt = kiln.permute %wd {dims = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %y = kiln.matmul %xd, %wt : tensor<4x8xf32>, tensor<8x16xf32>
  return %y : tensor<4x16xf32>
}

// Tests an fp8 (e4m3) layer: the quantize kernel rounds to __nv_fp8_e4m3,
// the GEMM (e4m3 x e4m3 -> f32) reads the weight's int32 words directly,
// and the epilogue scales the f32 sum (no integer conversion).
// CHECK-LABEL: func @fp8: 2 kernel(s), 1 other step(s)
// CHECK:   [[Q:buf[0-9]+]]: __nv_fp8_e4m3[4x16], 64 bytes, temporary
// CHECK:   [[ACC:buf[0-9]+]]: float[4x16], 256 bytes, temporary
// CHECK: fp8_gemm0: extern GEMM 4x16x16 (MxNxK, B transposed)([[Q]], arg1, [[ACC]])
// CHECK: __nv_fp8_e4m3(
func.func @fp8(%x: tensor<4x16xf32>, %words: tensor<16x4xi32>, %ws: tensor<16x1xf32>) -> tensor<4x16xf32> {
  %w = kiln.fp8_view %words : tensor<16x4xi32> -> tensor<16x16xf8E4M3FN>
  %y = kiln.qlinear %x, %w, %ws : (tensor<4x16xf32>, tensor<16x16xf8E4M3FN>, tensor<16x1xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
