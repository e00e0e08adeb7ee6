// RUN: kiln-translate --kiln-to-cuda %s | FileCheck %s

// Tests that a row group (emitted at its first member's place) does not
// take in a generic that reads a GEMM result computed after that place:
// softmax, then a GEMM, then `softmax + product` over the same rows (GPT-2's
// attention: the probabilities' cast after the second batched GEMM). The
// add is a kernel of its own after the GEMM (was: the whole module failed,
// "input #0 is not backed by a buffer").

// CHECK-LABEL: func @softmax_then_gemm: 2 kernel(s), 1 other step(s)
// CHECK: softmax_then_gemm_k0<<<
// CHECK-NEXT: softmax_then_gemm_gemm0: extern GEMM 8x64x16
// CHECK-NEXT: softmax_then_gemm_k1<<<
func.func @softmax_then_gemm(%x: tensor<8x64xf32>, %a: tensor<8x16xf32>, %b: tensor<16x64xf32>) -> tensor<8x64xf32> {
  %0 = kiln.softmax %x {dim = 1 : i64} : tensor<8x64xf32>
  %1 = kiln.matmul %a, %b : tensor<8x16xf32>, tensor<16x64xf32>
  %2 = kiln.add %0, %1 : tensor<8x64xf32>, tensor<8x64xf32>
  return %2 : tensor<8x64xf32>
}
