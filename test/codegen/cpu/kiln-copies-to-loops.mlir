// RUN: kiln-opt %s -split-input-file -kiln-copies-to-loops | FileCheck %s

// kiln-copies-to-loops (codegen/cpu/CopiesToLoops.cpp): a memref.copy with
// a non-contiguous side becomes a linalg.copy (a vectorizable loop nest);
// contiguous copies stay memref.copy (one memcpy).

// Tests that an im2col-style tap copy (rows of 16 elements out of a padded
// image) becomes a linalg.copy.
// CHECK-LABEL: func.func @strided_tap
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%{{.*}} : memref<4x16x16xf32, strided<[324, 18, 1], offset: 19>>) outs(%{{.*}} : memref<4x16x16xf32>)
// CHECK-NOT: memref.copy
func.func @strided_tap(%padded: memref<4x18x18xf32>, %col: memref<4x16x16xf32>) {
  %tap = memref.subview %padded[0, 1, 1] [4, 16, 16] [1, 1, 1]
      : memref<4x18x18xf32> to memref<4x16x16xf32, strided<[324, 18, 1], offset: 19>>
  memref.copy %tap, %col : memref<4x16x16xf32, strided<[324, 18, 1], offset: 19>> to memref<4x16x16xf32>
  return
}

// -----

// Tests that a strided destination (a padding border column) is expanded too.
// CHECK-LABEL: func.func @strided_target
// CHECK: linalg.copy
// CHECK-NOT: memref.copy
func.func @strided_target(%src: memref<8x18x1xf32>, %dst: memref<8x18x18xf32>) {
  %col = memref.subview %dst[0, 0, 17] [8, 18, 1] [1, 1, 1]
      : memref<8x18x18xf32> to memref<8x18x1xf32, strided<[324, 18, 1], offset: 17>>
  memref.copy %src, %col : memref<8x18x1xf32> to memref<8x18x1xf32, strided<[324, 18, 1], offset: 17>>
  return
}

// -----

// Tests that contiguous copies (identity layouts, and a static contiguous
// slice of whole rows) stay memref.copy.
// CHECK-LABEL: func.func @negative_contiguous
// CHECK-NOT: linalg.copy
// CHECK: memref.copy
// CHECK: memref.copy
// CHECK-NOT: linalg.copy
func.func @negative_contiguous(%a: memref<4x16xf32>, %b: memref<4x16xf32>, %c: memref<2x16xf32>) {
  memref.copy %a, %b : memref<4x16xf32> to memref<4x16xf32>
  %rows = memref.subview %a[2, 0] [2, 16] [1, 1] : memref<4x16xf32> to memref<2x16xf32, strided<[16, 1], offset: 32>>
  memref.copy %rows, %c : memref<2x16xf32, strided<[16, 1], offset: 32>> to memref<2x16xf32>
  return
}
