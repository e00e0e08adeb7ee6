// RUN: kiln-opt %s -split-input-file -kiln-cpu-linalg-to-blas | FileCheck %s

// Tests that an f32 matmul after a zero fill becomes one sgemm call with
// beta = 0 (the fill is erased) and operands cast to dynamic strided memrefs.
// CHECK: func.func private @kiln_blas_sgemm(memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, i32, f32) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @matmul_zero_fill
// CHECK-SAME: (%[[A:.*]]: memref<4x8xf32>, %[[B:.*]]: memref<8x16xf32>, %[[C:.*]]: memref<4x16xf32>)
// CHECK-NOT: linalg.fill
// CHECK-DAG: %[[CA:.*]] = memref.cast %[[A]] : memref<4x8xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK-DAG: %[[CB:.*]] = memref.cast %[[B]]
// CHECK-DAG: %[[CC:.*]] = memref.cast %[[C]]
// CHECK-DAG: %[[NOTRANS:.*]] = arith.constant 0 : i32
// CHECK: %[[BETA:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: call @kiln_blas_sgemm(%[[CA]], %[[CB]], %[[CC]], %[[NOTRANS]], %[[BETA]])
// CHECK-NOT: linalg.matmul
func.func @matmul_zero_fill(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x16xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  return
}

// -----

// Tests that a transposed-B f64 batch matmul without a fill accumulates
// (beta = 1) through the batched dgemm with transB = 1.
// CHECK-LABEL: func.func @batch_transpose_b_accumulate
// CHECK-DAG: %[[TRANS:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[BETA:.*]] = arith.constant 1.000000e+00 : f64
// CHECK: call @kiln_blas_dgemm_batched(%{{.*}}, %{{.*}}, %{{.*}}, %[[TRANS]], %[[BETA]]) : (memref<?x?x?xf64, strided<[?, ?, ?], offset: ?>>
func.func @batch_transpose_b_accumulate(%a: memref<2x4x8xf64>, %b: memref<2x16x8xf64>, %c: memref<2x4x16xf64>) {
  linalg.batch_matmul_transpose_b ins(%a, %b : memref<2x4x8xf64>, memref<2x16x8xf64>) outs(%c : memref<2x4x16xf64>)
  return
}

// -----

// Tests that a fill separated from the matmul by a write to memory is kept
// (beta = 1).
// CHECK-LABEL: func.func @negative_fill_not_adjacent
// CHECK: linalg.fill
// CHECK: memref.store
// CHECK: %[[BETA:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: call @kiln_blas_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[BETA]])
func.func @negative_fill_not_adjacent(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>, %v: f32) {
  %zero = arith.constant 0.0 : f32
  %i = arith.constant 0 : index
  linalg.fill ins(%zero : f32) outs(%c : memref<4x16xf32>)
  memref.store %v, %c[%i, %i] : memref<4x16xf32>
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  return
}

// -----

// Tests that integer matmuls stay linalg (no BLAS for i32).
// CHECK-LABEL: func.func @negative_i32_matmul
// CHECK-NOT: call
// CHECK: linalg.matmul
func.func @negative_i32_matmul(%a: memref<4x8xi32>, %b: memref<8x16xi32>, %c: memref<4x16xi32>) {
  linalg.matmul ins(%a, %b : memref<4x8xi32>, memref<8x16xi32>) outs(%c : memref<4x16xi32>)
  return
}

// -----

// Tests that an operand with a non-unit innermost stride stays linalg.
// CHECK-LABEL: func.func @negative_strided_inner
// CHECK-NOT: call
// CHECK: linalg.matmul
func.func @negative_strided_inner(%a: memref<4x8xf32, strided<[1, 4]>>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32, strided<[1, 4]>>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  return
}

// -----

// Tests that matmuls on tensors (before bufferization) are left alone.
// CHECK-LABEL: func.func @negative_tensor_matmul
// CHECK: linalg.matmul
func.func @negative_tensor_matmul(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// Tests that a bf16 x bf16 matmul into an f32 accumulator (a bf16
// kiln.matmul, CPU autocast's linear) becomes the bf16 GEMM shim, with
// bf16 operand memrefs and an f32 result and beta.
// CHECK: func.func private @kiln_blas_bf16gemm(memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, i32, f32) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @bf16_matmul_transpose_b
// CHECK-DAG: %[[TRANS:.*]] = arith.constant 1 : i32
// CHECK: %[[BETA:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: call @kiln_blas_bf16gemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[TRANS]], %[[BETA]])
// CHECK-NOT: linalg.matmul
func.func @bf16_matmul_transpose_b(%a: memref<4x8xbf16>, %b: memref<16x8xbf16>, %c: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x16xf32>)
  linalg.matmul_transpose_b ins(%a, %b : memref<4x8xbf16>, memref<16x8xbf16>) outs(%c : memref<4x16xf32>)
  return
}

// -----

// Tests that a batched bf16 matmul uses the batched bf16 shim.
// CHECK-LABEL: func.func @bf16_batch_matmul
// CHECK: call @kiln_blas_bf16gemm_batched(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<?x?x?xbf16, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xbf16, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, i32, f32) -> ()
func.func @bf16_batch_matmul(%a: memref<2x4x8xbf16>, %b: memref<2x8x16xbf16>, %c: memref<2x4x16xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<2x4x8xbf16>, memref<2x8x16xbf16>) outs(%c : memref<2x4x16xf32>)
  return
}

// -----

// Tests that a bf16 matmul accumulating in bf16 (no f32 accumulator) and an
// f16 one stay linalg (no shim for them).
// CHECK-LABEL: func.func @negative_bf16_into_bf16
// CHECK-NOT: call
// CHECK: linalg.matmul
// CHECK: linalg.matmul
func.func @negative_bf16_into_bf16(%a: memref<4x8xbf16>, %b: memref<8x16xbf16>, %c: memref<4x16xbf16>, %d: memref<4x8xf16>, %e: memref<8x16xf16>, %f: memref<4x16xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xbf16>, memref<8x16xbf16>) outs(%c : memref<4x16xbf16>)
  linalg.matmul ins(%d, %e : memref<4x8xf16>, memref<8x16xf16>) outs(%f : memref<4x16xf32>)
  return
}
