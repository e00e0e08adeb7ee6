// RUN: not kiln-translate --kiln-to-cuda %s 2>&1 | FileCheck %s

// Tests that IR the emitter does not handle yet is reported at the op's
// source location instead of crashing: a slice (tensor.extract_slice).

// CHECK: errors.mlir:[[@LINE+2]]:8: error: CUDA emitter: 'tensor.extract_slice' is not supported yet
func.func @slice(%x: tensor<8x16xf32>) -> tensor<8x4xf32> {
  %0 = kiln.slice %x {end = array<i64: 8, 6>, start = array<i64: 0, 2>, step = array<i64: 1, 1>} : tensor<8x16xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
