// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-cpu-parallelize-loops))' | FileCheck %s

// Tests that a big top-level nest keeps its leading dims parallel and turns
// the last (vectorized) dim into an scf.for inside.
// CHECK-LABEL: func.func @big_elementwise
// CHECK:       scf.parallel (%[[I:.*]], %[[J:.*]]) = (%c0, %c0) to (%c8, %c512) step (%c1, %c1) {
// CHECK-NEXT:    scf.for %[[K:.*]] = %c0 to %c1024 step %c1 {
// CHECK-NEXT:      memref.load %arg0[%[[I]], %[[J]], %[[K]]]
// CHECK:         scf.reduce
// CHECK-NOT:   scf.parallel
func.func @big_elementwise(%a: memref<8x512x1024xf32>, %b: memref<8x512x1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c512 = arith.constant 512 : index
  %c1024 = arith.constant 1024 : index
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c8, %c512, %c1024) step (%c1, %c1, %c1) {
    %x = memref.load %a[%i, %j, %k] : memref<8x512x1024xf32>
    %y = math.exp %x : f32
    memref.store %y, %b[%i, %j, %k] : memref<8x512x1024xf32>
    scf.reduce
  }
  return
}

// -----

// Tests that too little work stays serial (a fork/join would cost more).
// CHECK-LABEL: func.func @negative_small
// CHECK-NOT:   scf.parallel
// CHECK:       scf.for
// CHECK:         scf.for
func.func @negative_small(%a: memref<16x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %z = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c16, %c64) step (%c1, %c1) {
    memref.store %z, %a[%i, %j] : memref<16x64xf32>
    scf.reduce
  }
  return
}

// -----

// Tests that a flat loop (no leading dims to share) is cut into parallel
// blocks of 1024 iterations, each an scf.for clipped to the bound.
// CHECK-LABEL: func.func @flat_blocks
// CHECK:       %[[NB:.*]] = arith.constant 98 : index
// CHECK:       scf.parallel (%[[B:.*]]) = (%{{.*}}) to (%[[NB]])
// CHECK:         %[[START:.*]] = arith.muli %[[B]]
// CHECK:         %[[FROM:.*]] = arith.addi %c0, %[[START]]
// CHECK:         %[[TO:.*]] = arith.minsi %{{.*}}, %c100003
// CHECK:         scf.for %{{.*}} = %[[FROM]] to %[[TO]] step %c1
func.func @flat_blocks(%a: memref<100003xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 100003 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %a[%i] : memref<100003xf32>
    %y = math.sin %x : f32
    memref.store %y, %a[%i] : memref<100003xf32>
    scf.reduce
  }
  return
}

// -----

// Tests that a nest inside another loop (kiln-cpu-fuse-rows' row loop) is
// serialized: its one-row buffers are shared by the row loop.
// CHECK-LABEL: func.func @negative_nested
// CHECK-NOT:   scf.parallel
func.func @negative_nested(%a: memref<4096x4096xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 4096 : index
  %z = arith.constant 0.0 : f32
  scf.for %r = %c0 to %n step %c1 {
    scf.parallel (%j) = (%c0) to (%n) step (%c1) {
      memref.store %z, %a[%r, %j] : memref<4096x4096xf32>
      scf.reduce
    }
  }
  return
}

// -----

// Tests that dynamic bounds stay serial (the work cannot be estimated).
// CHECK-LABEL: func.func @negative_dynamic
// CHECK-NOT:   scf.parallel
func.func @negative_dynamic(%a: memref<?x4096xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c0 : memref<?x4096xf32>
  %m = arith.constant 4096 : index
  %z = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %m) step (%c1, %c1) {
    memref.store %z, %a[%i, %j] : memref<?x4096xf32>
    scf.reduce
  }
  return
}

// -----

// Tests that a row reduction (an inner scf.for over the reduced dim) keeps
// its parallel row dim whole: the inner loop is the vectorized one.
// CHECK-LABEL: func.func @row_sums
// CHECK:       scf.parallel (%[[I:.*]]) = (%c0) to (%c512) step (%c1) {
// CHECK-NEXT:    scf.for
func.func @row_sums(%a: memref<512x1024xf32>, %s: memref<512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  %c1024 = arith.constant 1024 : index
  scf.parallel (%i) = (%c0) to (%c512) step (%c1) {
    scf.for %k = %c0 to %c1024 step %c1 {
      %x = memref.load %a[%i, %k] : memref<512x1024xf32>
      %acc = memref.load %s[%i] : memref<512xf32>
      %y = arith.addf %acc, %x : f32
      memref.store %y, %s[%i] : memref<512xf32>
    }
    scf.reduce
  }
  return
}

// -----

// Tests that a kiln-cpu-fuse-rows row loop becomes a parallel loop over blocks
// of rows (1024 rows: 64 blocks of 16), each block an alloca scope with its
// own copy of the row buffer; and that a declaration (a BLAS shim) is
// skipped.
// CHECK-LABEL: func.func private @shim
// CHECK-LABEL: func.func @rows
// CHECK-NOT:   memref.alloca()
// CHECK:       scf.parallel (%[[B:.*]]) = (%c0{{.*}}) to (%c64) step
// CHECK-NEXT:    memref.alloca_scope {
// CHECK-NEXT:      %[[BUF:.*]] = memref.alloca() : memref<1x512xf32>
// CHECK-NEXT:      scf.for %[[I:.*]] = %c0{{.*}} to %c16 step
// CHECK-NEXT:        %[[FIRST:.*]] = arith.muli %[[B]], %c16
// CHECK-NEXT:        %[[ROW:.*]] = arith.addi %[[FIRST]], %[[I]]
// CHECK:             memref.subview %arg0[%[[ROW]], 0]
// CHECK:             memref.store %{{.*}}, %[[BUF]]
func.func private @shim(memref<4xf32>)
func.func @rows(%a: memref<1024x512xf32>, %b: memref<1024x512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  %c1024 = arith.constant 1024 : index
  %buf = memref.alloca() : memref<1x512xf32>
  scf.for %r = %c0 to %c1024 step %c1 {
    %in = memref.subview %a[%r, 0] [1, 512] [1, 1] : memref<1024x512xf32> to memref<1x512xf32, strided<[512, 1], offset: ?>>
    %out = memref.subview %b[%r, 0] [1, 512] [1, 1] : memref<1024x512xf32> to memref<1x512xf32, strided<[512, 1], offset: ?>>
    scf.for %k = %c0 to %c512 step %c1 {
      %x = memref.load %in[%c0, %k] : memref<1x512xf32, strided<[512, 1], offset: ?>>
      %y = math.exp %x : f32
      memref.store %y, %buf[%c0, %k] : memref<1x512xf32>
    }
    scf.for %k = %c0 to %c512 step %c1 {
      %y = memref.load %buf[%c0, %k] : memref<1x512xf32>
      memref.store %y, %out[%c0, %k] : memref<1x512xf32, strided<[512, 1], offset: ?>>
    }
  } {kiln.independent_rows}
  return
}

// -----

// Tests that a row loop without the kiln-cpu-fuse-rows mark stays serial.
// CHECK-LABEL: func.func @negative_unmarked_rows
// CHECK-NOT:   scf.parallel
func.func @negative_unmarked_rows(%b: memref<1024x512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  %c1024 = arith.constant 1024 : index
  %z = arith.constant 0.0 : f32
  scf.for %r = %c0 to %c1024 step %c1 {
    scf.for %k = %c0 to %c512 step %c1 {
      memref.store %z, %b[%r, %k] : memref<1024x512xf32>
    }
  }
  return
}
