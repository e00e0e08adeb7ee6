// RUN: not kiln-translate --kiln-to-cuda %s 2>&1 | FileCheck %s

// Tests that dynamic shapes are reported at the function (arguments must be
// static for now), not a crash.

// CHECK: errors-dynamic.mlir:[[@LINE+1]]:1: error: CUDA emitter: argument #0 must be a static tensor
func.func @dyn(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = kiln.exp %x : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}
