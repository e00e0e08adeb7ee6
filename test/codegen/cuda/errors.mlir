// RUN: not kiln-translate --kiln-to-cuda %s 2>&1 | FileCheck %s

// Tests that IR the emitter does not handle yet is reported at the op's
// source location instead of crashing: argmax (a reduction with two
// outputs).

// CHECK: errors.mlir:[[@LINE+2]]:8: error: CUDA emitter: a reduction with several outputs is not supported
func.func @argmax(%x: tensor<8x16xf32>) -> tensor<8xi64> {
  %0 = kiln.argmax %x {dim = 1 : i64} : tensor<8x16xf32> -> tensor<8xi64>
  return %0 : tensor<8xi64>
}
