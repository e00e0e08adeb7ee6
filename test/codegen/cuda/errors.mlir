// RUN: not kiln-translate --kiln-to-cuda %s 2>&1 | FileCheck %s

// Tests that IR the emitter does not handle yet is reported at the op's
// source location instead of crashing: a call of another function.

// CHECK: errors.mlir:[[@LINE+2]]:8: error: CUDA emitter: 'func.call' is not supported yet
func.func @call(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = func.call @ext(%x) : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
func.func private @ext(tensor<8xf32>) -> tensor<8xf32>
