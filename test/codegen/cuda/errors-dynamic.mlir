// RUN: not kiln-translate --kiln-to-cuda %s 2>&1 | FileCheck %s
// RUN: kiln-translate --kiln-to-cuda --collect-unsupported %s 2>&1 >/dev/null | FileCheck %s --check-prefix=COLLECT

// Tests that an op the dynamic path cannot emit (a GEMM with a symbolic M)
// is refused with its name at its location, not emitted with a wrong size;
// collecting, the rest of the function still emits and the GEMM is listed.

// CHECK: errors-dynamic.mlir:[[@LINE+3]]:8: error: CUDA emitter: 'linalg.matmul' with dynamic shapes is not supported yet
// COLLECT: unsupported: @mm: linalg.matmul at {{.*}}errors-dynamic.mlir":[[@LINE+2]]:8): CUDA emitter: 'linalg.matmul' with dynamic shapes
func.func @mm(%x: tensor<?x16xf32>, %w: tensor<16x32xf32>) -> tensor<?x32xf32> {
  %0 = kiln.matmul %x, %w : tensor<?x16xf32>, tensor<16x32xf32>
  %1 = kiln.relu %0 : tensor<?x32xf32>
  return %1 : tensor<?x32xf32>
}
