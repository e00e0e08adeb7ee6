// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-cpu-in-place-outputs))' | FileCheck %s

// kiln-cpu-in-place-outputs (codegen/cpu/InPlaceOutputs.cpp): an output
// argument marked kiln.in_place_input = i gets input i's memory at run time;
// input i's reads move to the output argument when each comes before the
// first op touching the output or is that op reading each element with the
// map it writes it with, else they read a copy made at entry.

#id = affine_map<(d0) -> (d0)>

// Tests an SGD-like update: the buffer's loop reads p, then the parameter's
// loop reads p and writes the output at the same index: p's reads use the
// output argument, no copy.
// CHECK-LABEL: func.func @sgd
// CHECK-SAME: (%[[P:.*]]: memref<8xf32>, %[[G:.*]]: memref<8xf32>, %[[B:.*]]: memref<8xf32>, %[[NB:.*]]: memref<8xf32>, %[[NP:.*]]: memref<8xf32>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: kiln.in_place_input
// CHECK: linalg.generic {{.*}} ins(%[[G]], %[[NP]] : {{.*}}) outs(%[[NB]] :
// CHECK: linalg.generic {{.*}} ins(%[[NP]], %[[NB]] : {{.*}}) outs(%[[NP]] :
func.func @sgd(%p: memref<8xf32>, %g: memref<8xf32>, %b: memref<8xf32>,
               %nb: memref<8xf32> {kiln.in_place_input = 2 : i64},
               %np: memref<8xf32> {kiln.in_place_input = 0 : i64}) {
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%g, %p : memref<8xf32>, memref<8xf32>) outs(%nb : memref<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%p, %nb : memref<8xf32>, memref<8xf32>) outs(%np : memref<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.subf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#id = affine_map<(d0) -> (d0)>

// Tests a read of the input after the output is written: the readers use a
// copy of the input made at entry (from the shared memory), freed at the end.
// CHECK-LABEL: func.func @read_after_write
// CHECK-SAME: (%[[P:.*]]: memref<8xf32>, %[[X:.*]]: memref<8xf32>, %[[NP:.*]]: memref<8xf32>)
// CHECK: %[[C:.*]] = memref.alloc() : memref<8xf32>
// CHECK: memref.copy %[[NP]], %[[C]]
// CHECK: linalg.generic {{.*}} ins(%[[C]] : {{.*}}) outs(%[[NP]] :
// CHECK: linalg.generic {{.*}} ins(%[[C]] : {{.*}}) outs(%[[X]] :
// CHECK: memref.dealloc %[[C]]
func.func @read_after_write(%p: memref<8xf32>, %x: memref<8xf32>,
                            %np: memref<8xf32> {kiln.in_place_input = 0 : i64}) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%p : memref<8xf32>) outs(%np : memref<8xf32>) {
  ^bb0(%y: f32, %o: f32):
    %s = arith.addf %y, %y : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%p : memref<8xf32>) outs(%x : memref<8xf32>) {
  ^bb0(%y: f32, %o: f32):
    linalg.yield %y : f32
  }
  return
}

// -----

#m = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>

// Tests the writing op reading the input through another map (a transpose):
// element (i, j) would be read after (j, i) was written: a copy.
// CHECK-LABEL: func.func @transposed_read
// CHECK: %[[C:.*]] = memref.alloc() : memref<4x4xf32>
// CHECK: memref.copy
// CHECK: linalg.generic {{.*}} ins(%[[C]] :
func.func @transposed_read(%p: memref<4x4xf32>,
                           %np: memref<4x4xf32> {kiln.in_place_input = 0 : i64}) {
  linalg.generic {indexing_maps = [#t, #m], iterator_types = ["parallel", "parallel"]}
      ins(%p : memref<4x4xf32>) outs(%np : memref<4x4xf32>) {
  ^bb0(%y: f32, %o: f32):
    linalg.yield %y : f32
  }
  return
}

// -----

// Tests a reduction writing the output while reading the input (not
// parallel): a copy.
// CHECK-LABEL: func.func @reduction
// CHECK: memref.alloc() : memref<4xf32>
func.func @reduction(%p: memref<4xf32>,
                     %np: memref<4xf32> {kiln.in_place_input = 0 : i64}) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%p : memref<4xf32>) outs(%np : memref<4xf32>) {
  ^bb0(%y: f32, %o: f32):
    %s = arith.addf %y, %o : f32
    linalg.yield %s : f32
  }
  return
}
