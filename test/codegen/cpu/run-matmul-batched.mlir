// RUN: kiln-opt %s -kiln-optimize -kiln-cpu-lowering \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils,%kiln_runner_shims \
// RUN: | FileCheck %s
// REQUIRES: mlir-cpu-runner

// Execution test: batched matmuls (through the batched BLAS shims loaded
// from kiln_runner_shims) with broadcast batch dims and transposed rhs;
// integer-valued inputs make every result exact.

// Tests that a batched matmul (sgemm_batched) multiplies each batch separately.
func.func private @bmm(%a: tensor<2x3x4xf32>, %b: tensor<2x4x2xf32>) -> tensor<2x3x2xf32> {
  %0 = kiln.matmul %a, %b : tensor<2x3x4xf32>, tensor<2x4x2xf32>
  return %0 : tensor<2x3x2xf32>
}

// Tests that batch dims broadcast like elementwise dims: 2x1 batches of lhs against 3
// batches of rhs give 2x3 products.
func.func private @bmm_broadcast(%c: tensor<2x1x2x3xf32>, %d: tensor<3x3x2xf32>) -> tensor<2x3x2x2xf32> {
  %0 = kiln.matmul %c, %d : tensor<2x1x2x3xf32>, tensor<3x3x2xf32>
  return %0 : tensor<2x3x2x2xf32>
}

// Tests that a batched rhs permuted on its last two dims (q @ k^T) is computed with
// transB rather than a materialized transpose.
func.func private @bmm_transpose_b(%a: tensor<2x3x4xf32>, %e: tensor<2x5x4xf32>) -> tensor<2x3x5xf32> {
  %et = kiln.permute %e {dims = array<i64: 0, 2, 1>} : tensor<2x5x4xf32> -> tensor<2x4x5xf32>
  %0 = kiln.matmul %a, %et : tensor<2x3x4xf32>, tensor<2x4x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// Tests that a rank-2 lhs broadcasts against a batched rhs.
func.func private @lhs_rank2(%l: tensor<3x4xf32>, %b: tensor<2x4x2xf32>) -> tensor<2x3x2xf32> {
  %0 = kiln.matmul %l, %b : tensor<3x4xf32>, tensor<2x4x2xf32>
  return %0 : tensor<2x3x2xf32>
}

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %a = arith.constant dense<[[[-3.0, -3.0, 2.0, 0.0], [1.0, 1.0, 1.0, -3.0], [0.0, -2.0, -1.0, 3.0]], [[0.0, -3.0, 0.0, -3.0], [2.0, 3.0, 3.0, 1.0], [3.0, -1.0, -2.0, 0.0]]]> : tensor<2x3x4xf32>
  %b = arith.constant dense<[[[1.0, -2.0], [3.0, 3.0], [-3.0, -2.0], [-2.0, -2.0]], [[1.0, -1.0], [0.0, -2.0], [3.0, 1.0], [1.0, -3.0]]]> : tensor<2x4x2xf32>
  %c = arith.constant dense<[[[[3.0, 3.0, 2.0], [2.0, -3.0, 2.0]]], [[[3.0, -2.0, -2.0], [-3.0, 2.0, 3.0]]]]> : tensor<2x1x2x3xf32>
  %d = arith.constant dense<[[[-2.0, 2.0], [1.0, -1.0], [-3.0, 1.0]], [[-1.0, 3.0], [-1.0, 1.0], [-2.0, 0.0]], [[-3.0, 2.0], [-3.0, 2.0], [2.0, 0.0]]]> : tensor<3x3x2xf32>
  %e = arith.constant dense<[[[3.0, 1.0, 1.0, 2.0], [-2.0, -1.0, -2.0, -3.0], [0.0, 1.0, 3.0, -2.0], [3.0, 2.0, 0.0, -1.0], [1.0, 0.0, -2.0, 3.0]], [[-2.0, 2.0, -3.0, 2.0], [-3.0, 0.0, 0.0, 3.0], [3.0, -3.0, 3.0, 3.0], [-1.0, -1.0, 0.0, -2.0], [-2.0, 0.0, 1.0, 3.0]]]> : tensor<2x5x4xf32>
  %l = arith.constant dense<[[0.0, 0.0, 2.0, 0.0], [2.0, -3.0, 0.0, -1.0], [-3.0, 1.0, 0.0, -3.0]]> : tensor<3x4xf32>
  %r0_0 = call @bmm(%a, %b) : (tensor<2x3x4xf32>, tensor<2x4x2xf32>) -> tensor<2x3x2xf32>
  %m0_0 = bufferization.to_memref %r0_0 : memref<2x3x2xf32>
  %u0_0 = memref.cast %m0_0 : memref<2x3x2xf32> to memref<*xf32>
  // CHECK: rank = 3 offset = 0 sizes = [2, 3, 2] strides = [6, 2, 1] data =
  // CHECK-NEXT: {{\[\[\[}}-18, -7],
  // CHECK-NEXT: [7, 5],
  // CHECK-NEXT: [-9, -10]],
  // CHECK-NEXT: {{\[\[}}-3, 15],
  // CHECK-NEXT: [12, -8],
  // CHECK-NEXT: [-3, -3]]]
  call @printMemrefF32(%u0_0) : (memref<*xf32>) -> ()
  %r1_0 = call @bmm_broadcast(%c, %d) : (tensor<2x1x2x3xf32>, tensor<3x3x2xf32>) -> tensor<2x3x2x2xf32>
  %m1_0 = bufferization.to_memref %r1_0 : memref<2x3x2x2xf32>
  %u1_0 = memref.cast %m1_0 : memref<2x3x2x2xf32> to memref<*xf32>
  // CHECK: rank = 4 offset = 0 sizes = [2, 3, 2, 2] strides = [12, 4, 2, 1] data =
  // CHECK-NEXT: {{\[\[\[\[}}-9, 5],
  // CHECK-NEXT: [-13, 9]],
  // CHECK-NEXT: {{\[\[}}-10, 12],
  // CHECK-NEXT: [-3, 3]],
  // CHECK-NEXT: {{\[\[}}-14, 12],
  // CHECK-NEXT: [7, -2]]],
  // CHECK-NEXT: {{\[\[\[}}-2, 6],
  // CHECK-NEXT: [-1, -5]],
  // CHECK-NEXT: {{\[\[}}3, 7],
  // CHECK-NEXT: [-5, -7]],
  // CHECK-NEXT: {{\[\[}}-7, 2],
  // CHECK-NEXT: [9, -2]]]]
  call @printMemrefF32(%u1_0) : (memref<*xf32>) -> ()
  %r2_0 = call @bmm_transpose_b(%a, %e) : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x3x5xf32>
  %m2_0 = bufferization.to_memref %r2_0 : memref<2x3x5xf32>
  %u2_0 = memref.cast %m2_0 : memref<2x3x5xf32> to memref<*xf32>
  // CHECK: rank = 3 offset = 0 sizes = [2, 3, 5] strides = [15, 5, 1] data =
  // CHECK-NEXT: {{\[\[\[}}-10, 5, 3, -15, -7],
  // CHECK-NEXT: [-1, 4, 10, 8, -10],
  // CHECK-NEXT: [3, -5, -11, -7, 11]],
  // CHECK-NEXT: {{\[\[}}-12, -9, 0, 9, -9],
  // CHECK-NEXT: [-5, -3, 9, -7, 2],
  // CHECK-NEXT: [-2, -9, 6, -2, -8]]]
  call @printMemrefF32(%u2_0) : (memref<*xf32>) -> ()
  %r3_0 = call @lhs_rank2(%l, %b) : (tensor<3x4xf32>, tensor<2x4x2xf32>) -> tensor<2x3x2xf32>
  %m3_0 = bufferization.to_memref %r3_0 : memref<2x3x2xf32>
  %u3_0 = memref.cast %m3_0 : memref<2x3x2xf32> to memref<*xf32>
  // CHECK: rank = 3 offset = 0 sizes = [2, 3, 2] strides = [6, 2, 1] data =
  // CHECK-NEXT: {{\[\[\[}}-6, -4],
  // CHECK-NEXT: [-5, -11],
  // CHECK-NEXT: [6, 15]],
  // CHECK-NEXT: {{\[\[}}6, 2],
  // CHECK-NEXT: [1, 7],
  // CHECK-NEXT: [-6, 10]]]
  call @printMemrefF32(%u3_0) : (memref<*xf32>) -> ()
  return
}
