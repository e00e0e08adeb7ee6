// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-cpu-elide-output-copies))' | FileCheck %s

// kiln-cpu-elide-output-copies (codegen/cpu/ElideOutputCopies.cpp): a
// buffer last touched by a whole copy into an output argument that nothing
// else uses is replaced by that argument (the value is computed where the
// caller reads it).

func.func private @produce(memref<4x8xf32>)
func.func private @read(memref<4x8xf32>)

// Tests a run-time call's result (oneDNN's weight gradient) copied into the
// output at the end: the call writes the output, no alloc, no copy; the
// reads between the call and the copy read the output.
// CHECK-LABEL: func.func @call_result
// CHECK-SAME: (%[[OUT:.*]]: memref<4x8xf32>)
// CHECK-NOT: memref.alloc
// CHECK: call @produce(%[[OUT]])
// CHECK: call @read(%[[OUT]])
// CHECK-NOT: memref.copy
// CHECK: return
func.func @call_result(%out: memref<4x8xf32>) {
  %a = memref.alloc() {alignment = 64 : i64} : memref<4x8xf32>
  call @produce(%a) : (memref<4x8xf32>) -> ()
  call @read(%a) : (memref<4x8xf32>) -> ()
  memref.copy %a, %out : memref<4x8xf32> to memref<4x8xf32>
  return
}

// -----

func.func private @produce(memref<4x8xf32>)
func.func private @read(memref<4x8xf32>)

// Tests (negative) that the buffer stays when it is read after the copy, or
// when the output is touched elsewhere, or shares an input's memory.
// CHECK-LABEL: func.func @negative_read_after
// CHECK: %[[A:.*]] = memref.alloc
// CHECK: memref.copy %[[A]]
// CHECK: call @read(%[[A]])
func.func @negative_read_after(%out: memref<4x8xf32>) {
  %a = memref.alloc() : memref<4x8xf32>
  call @produce(%a) : (memref<4x8xf32>) -> ()
  memref.copy %a, %out : memref<4x8xf32> to memref<4x8xf32>
  call @read(%a) : (memref<4x8xf32>) -> ()
  return
}

// CHECK-LABEL: func.func @negative_output_used_twice
// CHECK: memref.alloc
// CHECK: memref.copy
func.func @negative_output_used_twice(%out: memref<4x8xf32>) {
  call @produce(%out) : (memref<4x8xf32>) -> ()
  %a = memref.alloc() : memref<4x8xf32>
  call @produce(%a) : (memref<4x8xf32>) -> ()
  memref.copy %a, %out : memref<4x8xf32> to memref<4x8xf32>
  return
}

// CHECK-LABEL: func.func @negative_in_place_output
// CHECK: memref.alloc
// CHECK: memref.copy
func.func @negative_in_place_output(%in: memref<4x8xf32>,
                                    %out: memref<4x8xf32> {kiln.in_place_input = 0 : i64}) {
  %a = memref.alloc() : memref<4x8xf32>
  call @produce(%a) : (memref<4x8xf32>) -> ()
  memref.copy %a, %out : memref<4x8xf32> to memref<4x8xf32>
  return
}

// Tests (negative) a copy into part of the output (a subview is not an
// argument): the buffer stays.
// CHECK-LABEL: func.func @negative_partial
// CHECK: memref.alloc
// CHECK: memref.copy
func.func @negative_partial(%out: memref<8x8xf32>) {
  %a = memref.alloc() : memref<4x8xf32>
  call @produce(%a) : (memref<4x8xf32>) -> ()
  %s = memref.subview %out[0, 0] [4, 8] [1, 1] : memref<8x8xf32> to memref<4x8xf32, strided<[8, 1]>>
  memref.copy %a, %s : memref<4x8xf32> to memref<4x8xf32, strided<[8, 1]>>
  return
}

// -----

func.func private @produce(memref<4x8xf32>)

// Tests one buffer copied into two outputs: the last copy's output replaces
// the buffer, the first copy then reads it.
// CHECK-LABEL: func.func @two_outputs
// CHECK-SAME: (%[[O1:.*]]: memref<4x8xf32>, %[[O2:.*]]: memref<4x8xf32>)
// CHECK-NOT: memref.alloc
// CHECK: call @produce(%[[O2]])
// CHECK: memref.copy %[[O2]], %[[O1]]
// CHECK-NEXT: return
func.func @two_outputs(%o1: memref<4x8xf32>, %o2: memref<4x8xf32>) {
  %a = memref.alloc() : memref<4x8xf32>
  call @produce(%a) : (memref<4x8xf32>) -> ()
  memref.copy %a, %o1 : memref<4x8xf32> to memref<4x8xf32>
  memref.copy %a, %o2 : memref<4x8xf32> to memref<4x8xf32>
  return
}
