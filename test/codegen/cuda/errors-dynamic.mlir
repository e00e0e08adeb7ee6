// RUN: not kiln-translate --kiln-to-cuda %s 2>&1 | FileCheck %s
// RUN: kiln-translate --kiln-to-cuda --collect-unsupported %s 2>&1 >/dev/null | FileCheck %s --check-prefix=COLLECT

// Tests that what the dynamic path cannot emit is refused with its name at
// its location, not emitted with a wrong size: a two-output reduction
// (argmax's value and index) over a symbolic dim, and a reshape whose `-1`
// dim is not an exact quotient of symbol polynomials (s0 / 3). Collecting,
// the rest of each function still emits and the op is listed.

// CHECK: errors-dynamic.mlir:[[@LINE+3]]:8: error: CUDA emitter: dynamic shapes are supported for pointwise kernels and single-output reductions only
// COLLECT: unsupported: @argmax: linalg.generic at {{.*}}errors-dynamic.mlir":[[@LINE+2]]:8): CUDA emitter: dynamic shapes are supported for pointwise kernels and single-output reductions only
func.func @argmax(%x: tensor<?x16xf32>) -> tensor<?xi64> {
  %0 = kiln.argmax %x {dim = 1 : i64} : tensor<?x16xf32> -> tensor<?xi64>
  return %0 : tensor<?xi64>
}

// CHECK: errors-dynamic.mlir:[[@LINE+5]]:8: error: CUDA emitter: a dynamic size is not a polynomial in the arguments' dims (symbols)
// CHECK-NEXT: kiln.reshape
// COLLECT: unsupported: @rows_of_three: linalg.generic at {{.*}}errors-dynamic.mlir":[[@LINE+4]]:8): CUDA emitter: a dynamic size is not a polynomial
// COLLECT: unsupported: @rows_of_three: func.func {{.*}} result #0 is not produced by a kernel
func.func @rows_of_three(%x: tensor<?xf32>) -> tensor<?x3xf32> {
  %0 = kiln.reshape %x : tensor<?xf32> -> tensor<?x3xf32>
  %1 = kiln.exp %0 : tensor<?x3xf32>
  return %1 : tensor<?x3xf32>
}
