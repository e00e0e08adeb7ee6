// RUN: kiln-opt %s -kiln-optimize -kiln-cpu-lowering \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s
// REQUIRES: mlir-cpu-runner

// Execution test: slice, concat and embedding read the right elements
// (x holds 0..11 so every position is visible).

// Tests a strided slice followed by a concat with the input's first row.
func.func private @slice_concat(%x: tensor<3x4xf32>) -> (tensor<2x2xf32>, tensor<4x4xf32>) {
  %0 = kiln.slice %x {start = array<i64: 1, 0>, end = array<i64: 3, 3>, step = array<i64: 1, 2>} : tensor<3x4xf32> -> tensor<2x2xf32>
  %r = kiln.slice %x {start = array<i64: 0, 0>, end = array<i64: 1, 4>, step = array<i64: 1, 1>} : tensor<3x4xf32> -> tensor<1x4xf32>
  %1 = kiln.concat %x, %r {dim = 0 : i64} : tensor<3x4xf32>, tensor<1x4xf32> -> tensor<4x4xf32>
  return %0, %1 : tensor<2x2xf32>, tensor<4x4xf32>
}

// Tests that embedding gathers rows and clamps out-of-range indices
// (-1 reads row 0, 7 reads the last row).
func.func private @embed(%w: tensor<3x4xf32>, %i: tensor<4xi64>) -> tensor<4x4xf32> {
  %0 = kiln.embedding %w, %i : tensor<3x4xf32>, tensor<4xi64> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %x = arith.constant dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]]> : tensor<3x4xf32>
  %i = arith.constant dense<[2, 1, -1, 7]> : tensor<4xi64>
  %r:2 = call @slice_concat(%x) : (tensor<3x4xf32>) -> (tensor<2x2xf32>, tensor<4x4xf32>)
  %m0 = bufferization.to_memref %r#0 : memref<2x2xf32>
  %u0 = memref.cast %m0 : memref<2x2xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [2, 2] strides = [2, 1] data =
  // CHECK-NEXT: {{\[\[}}4, 6],
  // CHECK-NEXT: [8, 10]]
  call @printMemrefF32(%u0) : (memref<*xf32>) -> ()
  %m1 = bufferization.to_memref %r#1 : memref<4x4xf32>
  %u1 = memref.cast %m1 : memref<4x4xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [4, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}0, 1, 2, 3],
  // CHECK-NEXT: [4, 5, 6, 7],
  // CHECK-NEXT: [8, 9, 10, 11],
  // CHECK-NEXT: [0, 1, 2, 3]]
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %e = call @embed(%x, %i) : (tensor<3x4xf32>, tensor<4xi64>) -> tensor<4x4xf32>
  %m2 = bufferization.to_memref %e : memref<4x4xf32>
  %u2 = memref.cast %m2 : memref<4x4xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [4, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}8, 9, 10, 11],
  // CHECK-NEXT: [4, 5, 6, 7],
  // CHECK-NEXT: [0, 1, 2, 3],
  // CHECK-NEXT: [8, 9, 10, 11]]
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()
  return
}
