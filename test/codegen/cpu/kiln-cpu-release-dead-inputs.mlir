// RUN: kiln-opt %s -split-input-file -kiln-cpu-release-dead-inputs | FileCheck %s

// kiln-cpu-release-dead-inputs (codegen/cpu/ReleaseDeadInputs.cpp): a call
// kilnReleaseInput(i) right after the last op touching each argument listed
// in kiln.release_inputs (a backward's saved activations), through views.

// CHECK: func.func private @kilnReleaseInput(i64)
// CHECK-LABEL: func.func @backward
// CHECK: linalg.mul ins(%{{.*}}, %[[V:.*]] : memref<8xf32>, memref<8xf32>)
// CHECK-NEXT: %[[C1:.*]] = arith.constant 1 : i64
// CHECK-NEXT: call @kilnReleaseInput(%[[C1]]) : (i64) -> ()
// CHECK-NEXT: linalg.copy
// CHECK-NOT: kilnReleaseInput
// CHECK: return
func.func @backward(%g: memref<8xf32>, %saved: memref<2x4xf32>, %kept: memref<8xf32>, %out: memref<8xf32>)
    attributes {kiln.release_inputs = array<i64: 1>} {
  %v = memref.collapse_shape %saved [[0, 1]] : memref<2x4xf32> into memref<8xf32>
  linalg.mul ins(%g, %v : memref<8xf32>, memref<8xf32>) outs(%out : memref<8xf32>)
  linalg.copy ins(%kept : memref<8xf32>) outs(%out : memref<8xf32>)
  return
}

// -----

// An unused one is released at the top; one passed to a call that may keep
// the pointer gets no call; a function without the attribute is left alone.
// CHECK-LABEL: func.func @unused_and_escaping
// CHECK-NEXT: %[[C1:.*]] = arith.constant 1 : i64
// CHECK-NEXT: call @kilnReleaseInput(%[[C1]])
// CHECK-NEXT: call @keep(
// CHECK-NEXT: return
// CHECK-LABEL: func.func @unmarked
// CHECK-NOT: kilnReleaseInput
func.func private @keep(memref<8xf32>)
func.func @unused_and_escaping(%a: memref<8xf32>, %unused: memref<8xf32>)
    attributes {kiln.release_inputs = array<i64: 0, 1>} {
  call @keep(%a) : (memref<8xf32>) -> ()
  return
}
func.func @unmarked(%a: memref<8xf32>, %out: memref<8xf32>) {
  linalg.copy ins(%a : memref<8xf32>) outs(%out : memref<8xf32>)
  return
}
