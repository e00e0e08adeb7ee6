// RUN: kiln-translate --kiln-to-cuda --collect-unsupported %s 2>%t.err >/dev/null
// RUN: FileCheck %s < %t.err

// Quantized GEMMs whose shapes cuBLASLt's int8 / fp8 kernels do not take
// are listed as unsupported with the reason (the graph then falls back),
// never emitted wrongly (codegen/cuda/CudaExtern.cpp; int8-gemm.mlir has
// the supported forms).

// Tests an int8 layer with N = 6, not a multiple of 4 (cuBLASLt's int8 GEMM).
// CHECK-LABEL: unsupported: @odd_n: linalg.matmul_transpose_b {{.*}}cuBLASLt's int8 GEMM needs both multiples of 4
func.func @odd_n(%x: tensor<4x8xf32>, %w: tensor<6x8xi8>, %ws: tensor<6x1xf32>) -> tensor<4x6xf32> {
  %q, %s = kiln.quantize %x : tensor<4x8xf32> -> tensor<4x8xi8>, tensor<4x1xf32>
  %xd = kiln.dequantize %q, %s : tensor<4x8xi8>, tensor<4x1xf32> -> tensor<4x8xf32>
  %wd = kiln.dequantize %w, %ws : tensor<6x8xi8>, tensor<6x1xf32> -> tensor<6x8xf32>
  %wt = kiln.permute %wd {dims = array<i64: 1, 0>} : tensor<6x8xf32> -> tensor<8x6xf32>
  %y = kiln.matmul %xd, %wt : tensor<4x8xf32>, tensor<8x6xf32>
  return %y : tensor<4x6xf32>
}

// Tests an fp8 layer with N = 8, not a multiple of 16 (cuBLASLt's fp8 GEMM).
// CHECK-LABEL: unsupported: @fp8_odd_n: linalg.matmul_transpose_b {{.*}}cuBLASLt's fp8 GEMM needs both multiples of 16
func.func @fp8_odd_n(%x: tensor<4x16xf32>, %words: tensor<8x4xi32>, %ws: tensor<8x1xf32>) -> tensor<4x8xf32> {
  %w = kiln.fp8_view %words : tensor<8x4xi32> -> tensor<8x16xf8E4M3FN>
  %y = kiln.qlinear %x, %w, %ws : (tensor<4x16xf32>, tensor<8x16xf8E4M3FN>, tensor<8x1xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
