// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-cpu-free-early))' | FileCheck %s

// kiln-cpu-free-early (codegen/cpu/FreeEarly.cpp): each buffer is
// allocated just before its first user and freed just after its last use
// (through views), not at the function's end.

// CHECK-LABEL: func.func @chain
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[OUT:.*]] :
// CHECK-NEXT: %[[A:.*]] = memref.alloc(
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[A]] :
// CHECK-NEXT: %[[B:.*]] = memref.alloc(
// CHECK-NEXT: memref.copy %[[A]], %[[B]]
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: %[[V:.*]] = memref.subview %[[B]]
// CHECK-NEXT: memref.copy %[[V]], %[[OUT]]
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK-NEXT: return
func.func @chain(%n: index, %out: memref<?xf32>) {
  %x = arith.constant 1.0 : f32
  %a = memref.alloc(%n) : memref<?xf32>
  %b = memref.alloc(%n) : memref<?xf32>
  linalg.fill ins(%x : f32) outs(%out : memref<?xf32>)
  linalg.fill ins(%x : f32) outs(%a : memref<?xf32>)
  memref.copy %a, %b : memref<?xf32> to memref<?xf32>
  %v = memref.subview %b[0] [%n] [1] : memref<?xf32> to memref<?xf32, strided<[1]>>
  memref.copy %v, %out : memref<?xf32, strided<[1]>> to memref<?xf32>
  memref.dealloc %a : memref<?xf32>
  memref.dealloc %b : memref<?xf32>
  return
}

// -----

// A use inside a loop counts as the loop: freed after it.
// CHECK-LABEL: func.func @nested_use
// CHECK: scf.for
// CHECK: memref.copy %[[A:.*]], %{{.*}}
// CHECK: }
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: linalg.fill
func.func @nested_use(%n: index, %out: memref<?xf32>) {
  %x = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc(%n) : memref<?xf32>
  linalg.fill ins(%x : f32) outs(%a : memref<?xf32>)
  scf.for %i = %c0 to %c1 step %c1 {
    memref.copy %a, %out : memref<?xf32> to memref<?xf32>
  }
  linalg.fill ins(%x : f32) outs(%out : memref<?xf32>)
  memref.dealloc %a : memref<?xf32>
  return
}

// -----

// Negative: a buffer passed to a call (which may keep it) stays where it is.
// CHECK-LABEL: func.func @escapes
// CHECK: %[[A:.*]] = memref.alloc
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: call @keep(%[[A]])
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: memref.dealloc %[[A]]
func.func private @keep(memref<?xf32>)
func.func @escapes(%n: index, %out: memref<?xf32>) {
  %x = arith.constant 1.0 : f32
  %a = memref.alloc(%n) : memref<?xf32>
  linalg.fill ins(%x : f32) outs(%a : memref<?xf32>)
  call @keep(%a) : (memref<?xf32>) -> ()
  linalg.fill ins(%x : f32) outs(%out : memref<?xf32>)
  memref.dealloc %a : memref<?xf32>
  return
}

// -----

// A call of a function declared kiln.buffer_args_only is a plain access.
// CHECK-LABEL: func.func @buffer_args_only
// CHECK: call @shim(%[[A:[a-z_0-9]+]])
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: linalg.fill
func.func private @shim(memref<?xf32>) attributes {kiln.buffer_args_only}
func.func @buffer_args_only(%n: index, %out: memref<?xf32>) {
  %x = arith.constant 1.0 : f32
  %a = memref.alloc(%n) : memref<?xf32>
  call @shim(%a) : (memref<?xf32>) -> ()
  linalg.fill ins(%x : f32) outs(%out : memref<?xf32>)
  memref.dealloc %a : memref<?xf32>
  return
}
