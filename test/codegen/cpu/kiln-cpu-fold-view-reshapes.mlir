// RUN: kiln-opt %s -kiln-cpu-fold-view-reshapes -cse -split-input-file | FileCheck %s

// An elementwise op writing over its dead input (one arena slot, two views
// of it): the reshape of the input's view becomes the output's view.
// CHECK-LABEL: func.func @in_place_slot
// CHECK: %[[V:.*]] = memref.view %{{.*}}[%{{.*}}][] : memref<4096xi8> to memref<1x4x2x8xf32>
// CHECK-NOT: memref.view
// CHECK-NOT: memref.expand_shape
// CHECK: memref.load %[[V]]
// CHECK: memref.store %{{.*}}, %[[V]]
func.func @in_place_slot(%arena: memref<4096xi8>, %i: index) {
  %c256 = arith.constant 256 : index
  %c0 = arith.constant 0 : index
  %in = memref.view %arena[%c256][] : memref<4096xi8> to memref<4x16xf32>
  %e = memref.expand_shape %in [[0, 1], [2, 3]] output_shape [1, 4, 2, 8]
      : memref<4x16xf32> into memref<1x4x2x8xf32>
  %out = memref.view %arena[%c256][] : memref<4096xi8> to memref<1x4x2x8xf32>
  %x = memref.load %e[%c0, %i, %c0, %i] : memref<1x4x2x8xf32>
  %y = arith.addf %x, %x : f32
  memref.store %y, %out[%c0, %i, %c0, %i] : memref<1x4x2x8xf32>
  return
}

// -----

// collapse_shape too.
// CHECK-LABEL: func.func @collapse
// CHECK: memref.view %{{.*}}[%{{.*}}][] : memref<4096xi8> to memref<64xf32>
// CHECK-NOT: memref.collapse_shape
func.func @collapse(%arena: memref<4096xi8>) -> memref<64xf32> {
  %c0 = arith.constant 0 : index
  %v = memref.view %arena[%c0][] : memref<4096xi8> to memref<4x16xf32>
  %c = memref.collapse_shape %v [[0, 1]] : memref<4x16xf32> into memref<64xf32>
  return %c : memref<64xf32>
}

// -----

// Negative: a reshape of something other than a view, and a dynamic one,
// stay as they are.
// CHECK-LABEL: func.func @not_a_view
// CHECK: memref.expand_shape %arg0
// CHECK: memref.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [%arg2, 4]
func.func @not_a_view(%a: memref<16xf32>, %arena: memref<4096xi8>, %n: index)
    -> (memref<4x4xf32>, memref<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %e = memref.expand_shape %a [[0, 1]] output_shape [4, 4] : memref<16xf32> into memref<4x4xf32>
  %c4 = arith.constant 4 : index
  %size = arith.muli %n, %c4 : index
  %v = memref.view %arena[%c0][%size] : memref<4096xi8> to memref<?xf32>
  %d = memref.expand_shape %v [[0, 1]] output_shape [%n, 4] : memref<?xf32> into memref<?x4xf32>
  return %e, %d : memref<4x4xf32>, memref<?x4xf32>
}
