// RUN: kiln-opt %s -split-input-file -kiln-cpu-copies-to-loops | FileCheck %s

// kiln-cpu-copies-to-loops (codegen/cpu/CopiesToLoops.cpp): a memref.copy with
// a non-contiguous side becomes a call to a private noinline helper (one
// per source/target type pair, offsets made dynamic) holding one
// scf.parallel over the flattened rows (vector moves for a static
// unit-stride row, else a second, element dimension); contiguous copies
// stay memref.copy (one memcpy).

// Tests that two im2col-style tap copies (4x16 rows of 16 elements out of
// a padded image, at two offsets) call one helper, a loop over 64 rows,
// each one vector<16xf32> load and store at the delinearized row index.
// CHECK-LABEL: func.func @strided_tap
// CHECK-NOT: memref.copy
// CHECK: memref.cast %{{.*}} : memref<4x16x16xf32, strided<[324, 18, 1], offset: 19>> to memref<4x16x16xf32, strided<[324, 18, 1], offset: ?>>
// CHECK: call @[[HELPER:kiln_copy_0]](
// CHECK: memref.cast %{{.*}} : memref<4x16x16xf32, strided<[324, 18, 1], offset: 20>> to memref<4x16x16xf32, strided<[324, 18, 1], offset: ?>>
// CHECK: call @[[HELPER]](
// CHECK-NOT: kiln_copy_1
// CHECK: func.func private @[[HELPER]]({{.*}}) attributes {passthrough = ["noinline"]}
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK: scf.parallel (%[[R:.*]]) = (%{{.*}}) to (%[[C64]])
// CHECK: %[[W:.*]] = arith.remui %[[R]], %[[C16]]
// CHECK: %[[H:.*]] = arith.divui %[[R]], %[[C16]]
// CHECK: %[[V:.*]] = vector.load %{{.*}}[%[[H]], %[[W]], %{{.*}}] : memref<4x16x16xf32, strided<[324, 18, 1], offset: ?>>, vector<16xf32>
// CHECK: vector.store %[[V]], %{{.*}}[%[[H]], %[[W]], %{{.*}}] : memref<4x16x16xf32, strided<[256, 16, 1], offset: ?>>, vector<16xf32>
// CHECK-NOT: memref.copy
func.func @strided_tap(%padded: memref<4x18x18xf32>, %col: memref<4x16x16xf32>, %col2: memref<4x16x16xf32>) {
  %tap = memref.subview %padded[0, 1, 1] [4, 16, 16] [1, 1, 1]
      : memref<4x18x18xf32> to memref<4x16x16xf32, strided<[324, 18, 1], offset: 19>>
  memref.copy %tap, %col : memref<4x16x16xf32, strided<[324, 18, 1], offset: 19>> to memref<4x16x16xf32>
  %tap2 = memref.subview %padded[0, 1, 2] [4, 16, 16] [1, 1, 1]
      : memref<4x18x18xf32> to memref<4x16x16xf32, strided<[324, 18, 1], offset: 20>>
  memref.copy %tap2, %col2 : memref<4x16x16xf32, strided<[324, 18, 1], offset: 20>> to memref<4x16x16xf32>
  return
}

// -----

// Tests that a strided destination row (a padding border column: the row
// is the innermost non-unit dim, stride 18 on one side) is a two-dimensional
// loop of scalar loads and stores.
// CHECK-LABEL: func.func @strided_target
// CHECK: scf.parallel (%[[R:.*]], %[[E:.*]]) =
// CHECK: memref.load %{{.*}}[%[[R]], %[[E]], %{{.*}}] : memref<8x18x1xf32, strided<[18, 1, 1], offset: ?>>
// CHECK: memref.store
// CHECK-NOT: memref.copy
func.func @strided_target(%src: memref<8x18x1xf32>, %dst: memref<8x18x18xf32>) {
  %col = memref.subview %dst[0, 0, 17] [8, 18, 1] [1, 1, 1]
      : memref<8x18x18xf32> to memref<8x18x1xf32, strided<[324, 18, 1], offset: 17>>
  memref.copy %src, %col : memref<8x18x1xf32> to memref<8x18x1xf32, strided<[324, 18, 1], offset: 17>>
  return
}

// -----

// Tests that a row longer than 256 bytes (100 floats) is a loop of
// vector<16xf32> moves over the first 96 elements and one vector<4xf32>
// tail.
// CHECK-LABEL: func.func @long_rows
// CHECK: scf.parallel
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: vector.load %{{.*}}[%{{.*}}, %[[J]]] : memref<3x100xf32, strided<[128, 1], offset: ?>>, vector<16xf32>
// CHECK: vector.store
// CHECK: }
// CHECK: %[[C96:.*]] = arith.constant 96 : index
// CHECK: vector.load %{{.*}}[%{{.*}}, %[[C96]]] : memref<3x100xf32, strided<[128, 1], offset: ?>>, vector<4xf32>
// CHECK: vector.store
func.func @long_rows(%src: memref<3x128xf32>, %dst: memref<3x100xf32>) {
  %rows = memref.subview %src[0, 0] [3, 100] [1, 1] : memref<3x128xf32> to memref<3x100xf32, strided<[128, 1]>>
  memref.copy %rows, %dst : memref<3x100xf32, strided<[128, 1]>> to memref<3x100xf32>
  return
}

// -----

// Tests that dynamic sizes are read with memref.dim and the row, of unknown
// length, is the loop's element dimension.
// CHECK-LABEL: func.func @dynamic
// CHECK-DAG: %[[N:.*]] = memref.dim %{{.*}}, %{{.*}} : memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK-DAG: %[[M:.*]] = memref.dim %{{.*}}, %{{.*}} : memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%{{.*}}, %{{.*}}) to (%[[N]], %[[M]])
// CHECK: memref.load
// CHECK: memref.store
func.func @dynamic(%src: memref<?x?xf32, strided<[?, 1], offset: ?>>, %dst: memref<?x?xf32>) {
  memref.copy %src, %dst : memref<?x?xf32, strided<[?, 1], offset: ?>> to memref<?x?xf32>
  return
}

// -----

// Tests that contiguous copies (identity layouts, and a static contiguous
// slice of whole rows) stay memref.copy.
// CHECK-LABEL: func.func @negative_contiguous
// CHECK-NOT: scf.parallel
// CHECK: memref.copy
// CHECK: memref.copy
// CHECK-NOT: scf.parallel
func.func @negative_contiguous(%a: memref<4x16xf32>, %b: memref<4x16xf32>, %c: memref<2x16xf32>) {
  memref.copy %a, %b : memref<4x16xf32> to memref<4x16xf32>
  %rows = memref.subview %a[2, 0] [2, 16] [1, 1] : memref<4x16xf32> to memref<2x16xf32, strided<[16, 1], offset: 32>>
  memref.copy %rows, %c : memref<2x16xf32, strided<[16, 1], offset: 32>> to memref<2x16xf32>
  return
}

// -----

// Tests that bf16 rows are copied element by element: X86 type
// legalization cannot split odd-length bf16 vectors.
// CHECK-LABEL: func.func @negative_bf16_vectors
// CHECK-NOT: vector.load
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) =
// CHECK: memref.load %{{.*}} : memref<4x9xbf16, strided<[16, 1], offset: ?>>
func.func @negative_bf16_vectors(%src: memref<4x16xbf16>, %dst: memref<4x9xbf16>) {
  %rows = memref.subview %src[0, 0] [4, 9] [1, 1] : memref<4x16xbf16> to memref<4x9xbf16, strided<[16, 1]>>
  memref.copy %rows, %dst : memref<4x9xbf16, strided<[16, 1]>> to memref<4x9xbf16>
  return
}
