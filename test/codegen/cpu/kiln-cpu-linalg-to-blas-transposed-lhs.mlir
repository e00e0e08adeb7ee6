// RUN: kiln-opt %s -split-input-file -kiln-cpu-linalg-to-blas | FileCheck %s

// Tests that a matmul_transpose_a (kiln-cpu-fold-transposed-operands' form
// of kiln-autodiff's weight gradient g^T x) passes its stored left operand,
// an arena slice, as a memref.transpose view (the shim calls the BLAS with
// transA), and that the zero fill of C before it (other fills in between,
// of other buffers) becomes beta = 0.
// CHECK-LABEL: func.func @weight_gradient
// CHECK-SAME: (%[[X:.*]]: memref<64x32xf32>, %[[W:.*]]: memref<16x32xf32>, %[[OTHER:.*]]: memref<16xf32>)
// CHECK: %[[ARENA:.*]] = memref.alloc
// CHECK: %[[G:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<8192xi8> to memref<64x16xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[OTHER]] : memref<16xf32>)
// CHECK-NOT: linalg.fill
// CHECK: %[[T:.*]] = memref.transpose %[[G]] (d0, d1) -> (d1, d0) : memref<64x16xf32> to memref<16x64xf32, strided<[1, 16]>>
// CHECK: %[[CT:.*]] = memref.cast %[[T]] : memref<16x64xf32, strided<[1, 16]>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: %[[BETA:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: call @kiln_blas_sgemm(%[[CT]], %{{.*}}, %{{.*}}, %{{.*}}, %[[BETA]])
// CHECK-NOT: linalg.matmul_transpose_a
func.func @weight_gradient(%x: memref<64x32xf32>, %w: memref<16x32xf32>, %other: memref<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %arena = memref.alloc() : memref<8192xi8>
  %g = memref.view %arena[%c0][] : memref<8192xi8> to memref<64x16xf32>
  linalg.fill ins(%zero : f32) outs(%g : memref<64x16xf32>)
  linalg.fill ins(%zero : f32) outs(%w : memref<16x32xf32>)
  linalg.fill ins(%zero : f32) outs(%other : memref<16xf32>)
  linalg.matmul_transpose_a ins(%g, %x : memref<64x16xf32>, memref<64x32xf32>) outs(%w : memref<16x32xf32>)
  memref.dealloc %arena : memref<8192xi8>
  return
}

// -----

// Tests the batched form: a [B, K, M] view swapped to [B, M, K].
// CHECK-LABEL: func.func @batched_transposed_lhs
// CHECK: %[[T:.*]] = memref.transpose %{{.*}} (d0, d1, d2) -> (d0, d2, d1) : memref<3x64x16xf32> to memref<3x16x64xf32, strided<[1024, 1, 16]>>
// CHECK: %[[CT:.*]] = memref.cast %[[T]]
// CHECK: call @kiln_blas_sgemm_batched(%[[CT]],
func.func @batched_transposed_lhs(%p: memref<3x64x16xf32>, %d: memref<3x64x32xf32>,
                                  %out: memref<3x16x32xf32>) {
  linalg.batch_matmul_transpose_a ins(%p, %d : memref<3x64x16xf32>, memref<3x64x32xf32>)
                                  outs(%out : memref<3x16x32xf32>)
  return
}

// -----

// Tests the negative case: a stored left operand whose rows are strided
// (no unit stride anywhere after the swap) stays for the loop lowering.
// CHECK-LABEL: func.func @negative_strided_lhs
// CHECK-NOT: call
// CHECK: linalg.matmul_transpose_a
func.func @negative_strided_lhs(%g: memref<64x16xf32, strided<[32, 2]>>, %x: memref<64x32xf32>,
                                %w: memref<16x32xf32>) {
  linalg.matmul_transpose_a ins(%g, %x : memref<64x16xf32, strided<[32, 2]>>, memref<64x32xf32>)
                            outs(%w : memref<16x32xf32>)
  return
}

// -----

// Tests that zero fills hoisted above several GEMMs (a backward's weight
// gradients) become beta = 0 past the GEMM calls made before them that
// write and read other buffers; a fill of a buffer an earlier GEMM reads
// (%c3, read as A into %c2) stays, and its GEMM accumulates.
// CHECK-LABEL: func.func @hoisted_fills
// CHECK-SAME: (%[[A:.*]]: memref<4x8xf32>, %[[B:.*]]: memref<8x16xf32>, %[[C1:.*]]: memref<4x16xf32>, %[[C2:.*]]: memref<4x16xf32>, %[[C3:.*]]: memref<4x8xf32>, %[[E:.*]]: memref<8x8xf32>)
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[C3]] : memref<4x8xf32>)
// CHECK-NOT: linalg.fill
// CHECK: %[[Z1:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: call @kiln_blas_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[Z1]])
// CHECK: %[[Z2:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: call @kiln_blas_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[Z2]])
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: call @kiln_blas_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]])
func.func @hoisted_fills(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c1: memref<4x16xf32>,
                         %c2: memref<4x16xf32>, %c3: memref<4x8xf32>,
                         %e: memref<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c1 : memref<4x16xf32>)
  linalg.fill ins(%zero : f32) outs(%c2 : memref<4x16xf32>)
  linalg.fill ins(%zero : f32) outs(%c3 : memref<4x8xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c1 : memref<4x16xf32>)
  linalg.matmul ins(%c3, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c2 : memref<4x16xf32>)
  linalg.matmul ins(%a, %e : memref<4x8xf32>, memref<8x8xf32>) outs(%c3 : memref<4x8xf32>)
  return
}
