// RUN: split-file --leading-lines %s %t
// RUN: not kiln-opt %t/syntax.mlir 2>&1 | FileCheck %t/syntax.mlir
// RUN: not kiln-opt %t/unknown-op.mlir 2>&1 | FileCheck %t/unknown-op.mlir
// RUN: not kiln-opt %t/verifier.mlir 2>&1 | FileCheck %t/verifier.mlir
// RUN: not kiln-opt %t/pass-failure.mlir -kiln-optimize -kiln-cpu-lowering 2>&1 \
// RUN: | FileCheck %t/pass-failure.mlir

// Driver test: kiln-opt exits non-zero and points at file:line:column for
// parse errors, unknown ops, verifier errors and pass failures (split-file
// --leading-lines keeps this file's line numbers in each part).

//--- syntax.mlir
// Tests that a kiln op with a malformed type list is a parse error at the
// extra type.
func.func @syntax(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: syntax.mlir:[[@LINE+1]]:36: error: expected operation name in quotes
  %0 = kiln.relu %x : tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<4xf32>
}

//--- unknown-op.mlir
// Tests that a misspelled kiln op is reported as unknown at its name.
func.func @unknown_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: unknown-op.mlir:[[@LINE+1]]:8: error: custom op 'kiln.rleu' is unknown
  %0 = kiln.rleu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

//--- verifier.mlir
// Tests that a verifier error is reported at the op, after parsing succeeds.
func.func @verifier(%x: tensor<4x8xf32>) -> tensor<30xf32> {
  // CHECK: verifier.mlir:[[@LINE+1]]:8: error: 'kiln.reshape' op element count changes from 32 to 30
  %0 = kiln.reshape %x : tensor<4x8xf32> -> tensor<30xf32>
  return %0 : tensor<30xf32>
}

//--- pass-failure.mlir
// Tests that an op the CPU lowering cannot handle (a reshape merging a
// static dim into a dynamic one next to another dynamic dim: the sizes are
// not known) fails the pipeline with an error at the op instead of crashing
// or emitting half-lowered IR.
func.func @pass_failure(%a: tensor<?x?x4xf32>) -> tensor<?x?xf32> {
  // CHECK: pass-failure.mlir:[[@LINE+1]]:8: error: failed to legalize operation 'kiln.reshape'
  %0 = kiln.reshape %a : tensor<?x?x4xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
// CHECK-NOT: llvm.func
// CHECK-NOT: PLEASE submit a bug report
