// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-cpu-lazy-outputs))' | FileCheck %s
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-cpu-lazy-outputs),kiln-cpu-lower-output-allocs)' | FileCheck %s --check-prefix=LOWER

// kiln-cpu-lazy-outputs (codegen/cpu/LazyOutputs.cpp): an output argument
// marked kiln.lazy_output (passed without memory) is replaced by an alloc
// marked kiln.output_index placed right before the first op touching it;
// kiln-cpu-lower-output-allocs (codegen/cpu/LowerOutputAllocs.cpp) makes
// that alloc a call asking the frontend for the tensor.

// CHECK-LABEL: func.func @after_intermediates
// CHECK-SAME: %[[OUT:[a-z0-9]+]]: memref<64xf32> {kiln.lazy_output = 0 : i64
// CHECK: %[[T:.*]] = memref.alloc() : memref<64xf32>
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[T]] :
// CHECK-NEXT: %[[A:.*]] = memref.alloc() {alignment = 64 : i64, kiln.output_index = 0 : i64} : memref<64xf32>
// CHECK-NEXT: memref.copy %[[T]], %[[A]]
// CHECK-NEXT: memref.dealloc %[[T]]
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[A]] :
// CHECK-NOT: %[[OUT]]
// LOWER-LABEL: func.func @after_intermediates
// LOWER: %[[I:.*]] = llvm.mlir.constant(0 : i64) : i64
// LOWER: %[[P:.*]] = llvm.call @kilnOutputData(%[[I]], %{{.*}}) : (i64, i64) -> !llvm.ptr
// LOWER: llvm.insertvalue %[[P]], %{{.*}}[0]
// LOWER: llvm.insertvalue %[[P]], %{{.*}}[1]
// LOWER-NOT: kiln.output_index
// LOWER: llvm.func @kilnOutputData(i64, i64) -> !llvm.ptr
func.func @after_intermediates(%x: f32, %out: memref<64xf32> {kiln.lazy_output = 0 : i64}) {
  %t = memref.alloc() : memref<64xf32>
  linalg.fill ins(%x : f32) outs(%t : memref<64xf32>)
  memref.copy %t, %out : memref<64xf32> to memref<64xf32>
  memref.dealloc %t : memref<64xf32>
  linalg.fill ins(%x : f32) outs(%out : memref<64xf32>)
  return
}

// -----

// A view made at the top (a returned reshape's) moves below the alloc;
// reading the argument's sizes is no touch; an unmarked output is left.
// CHECK-LABEL: func.func @view_and_dynamic
// CHECK-SAME: %{{[a-z0-9]+}}: index, %{{[a-z0-9]+}}: f32, %[[OUT:[a-z0-9]+]]: memref<?x4xf32> {kiln.lazy_output = 1 : i64
// CHECK-SAME: %[[SMALL:[a-z0-9]+]]: memref<4xf32>
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT: memref.dim %[[OUT]], %[[C0]]
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[SMALL]] :
// CHECK-NEXT: %[[C0B:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[D:.*]] = memref.dim %[[OUT]], %[[C0B]]
// CHECK-NEXT: %[[A:.*]] = memref.alloc(%[[D]]) {alignment = 64 : i64, kiln.output_index = 1 : i64} : memref<?x4xf32>
// CHECK-NEXT: %[[V:.*]] = memref.collapse_shape %[[A]]
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[V]] :
func.func @view_and_dynamic(%n: index, %x: f32, %out: memref<?x4xf32> {kiln.lazy_output = 1 : i64}, %small: memref<4xf32>) {
  %flat = memref.collapse_shape %out [[0, 1]] : memref<?x4xf32> into memref<?xf32>
  %c0 = arith.constant 0 : index
  %d = memref.dim %out, %c0 : memref<?x4xf32>
  linalg.fill ins(%x : f32) outs(%small : memref<4xf32>)
  linalg.fill ins(%x : f32) outs(%flat : memref<?xf32>)
  return
}

// -----

// A use inside a loop: allocated before the loop (once per call).
// CHECK-LABEL: func.func @in_loop
// CHECK: %[[A:.*]] = memref.alloc() {alignment = 64 : i64, kiln.output_index = 0 : i64}
// CHECK-NEXT: scf.for
// CHECK: memref.store %{{.*}}, %[[A]]
func.func @in_loop(%x: f32, %out: memref<8xf32> {kiln.lazy_output = 0 : i64}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %x, %out[%i] : memref<8xf32>
  }
  return
}

// -----

// An output nothing writes (empty) is still allocated, before the return.
// CHECK-LABEL: func.func @never_written
// CHECK-NEXT: memref.alloc() {alignment = 64 : i64, kiln.output_index = 0 : i64} : memref<0xf32>
// CHECK-NEXT: return
func.func @never_written(%out: memref<0xf32> {kiln.lazy_output = 0 : i64}) {
  return
}
