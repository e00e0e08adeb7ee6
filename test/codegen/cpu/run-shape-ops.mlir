// RUN: kiln-opt %s -kiln-optimize -kiln-cpu-lowering \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s
// REQUIRES: mlir-cpu-runner

// Execution test: permute, reshape and broadcast_to move the right
// elements (x holds 0..23 so every position is visible).

// Tests that permute moves elements (result dim i is operand dim dims[i]) and that
// two permutes in a row compose correctly.
func.func private @permutes(%x: tensor<2x3x4xf32>) -> (tensor<4x2x3xf32>, tensor<3x4x2xf32>) {
  %0 = kiln.permute %x {dims = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %1 = kiln.permute %0 {dims = array<i64: 2, 0, 1>} : tensor<4x2x3xf32> -> tensor<3x4x2xf32>
  return %0, %1 : tensor<4x2x3xf32>, tensor<3x4x2xf32>
}

// Tests that reshape keeps row-major order for a collapse, an expand, and a reshape
// that is neither (2x3x4 to 4x6, through a flat buffer), and that a
// permute followed by a reshape reads the permuted order.
func.func private @reshapes(%x: tensor<2x3x4xf32>) -> (tensor<6x4xf32>, tensor<2x3x2x2xf32>, tensor<4x6xf32>, tensor<4x6xf32>) {
  %0 = kiln.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = kiln.reshape %x : tensor<2x3x4xf32> -> tensor<2x3x2x2xf32>
  %2 = kiln.reshape %x : tensor<2x3x4xf32> -> tensor<4x6xf32>
  %p = kiln.permute %x {dims = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %3 = kiln.reshape %p : tensor<4x2x3xf32> -> tensor<4x6xf32>
  return %0, %1, %2, %3 : tensor<6x4xf32>, tensor<2x3x2x2xf32>, tensor<4x6xf32>, tensor<4x6xf32>
}

// Tests that broadcast_to stretches size-1 dims and adds leading dims.
func.func private @broadcasts(%y: tensor<1x3xf32>) -> tensor<2x2x3xf32> {
  %0 = kiln.broadcast_to %y : tensor<1x3xf32> -> tensor<2x2x3xf32>
  return %0 : tensor<2x2x3xf32>
}

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %x = arith.constant dense<[[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]], [[12.0, 13.0, 14.0, 15.0], [16.0, 17.0, 18.0, 19.0], [20.0, 21.0, 22.0, 23.0]]]> : tensor<2x3x4xf32>
  %y = arith.constant dense<[[1.0, 2.0, 3.0]]> : tensor<1x3xf32>
  %r0:2 = call @permutes(%x) : (tensor<2x3x4xf32>) -> (tensor<4x2x3xf32>, tensor<3x4x2xf32>)
  %m0_0 = bufferization.to_memref %r0#0 : memref<4x2x3xf32>
  %u0_0 = memref.cast %m0_0 : memref<4x2x3xf32> to memref<*xf32>
  // CHECK: rank = 3 offset = 0 sizes = [4, 2, 3] strides = [6, 3, 1] data =
  // CHECK-NEXT: {{\[\[\[}}0, 4, 8],
  // CHECK-NEXT: [12, 16, 20]],
  // CHECK-NEXT: {{\[\[}}1, 5, 9],
  // CHECK-NEXT: [13, 17, 21]],
  // CHECK-NEXT: {{\[\[}}2, 6, 10],
  // CHECK-NEXT: [14, 18, 22]],
  // CHECK-NEXT: {{\[\[}}3, 7, 11],
  // CHECK-NEXT: [15, 19, 23]]]
  call @printMemrefF32(%u0_0) : (memref<*xf32>) -> ()
  %m0_1 = bufferization.to_memref %r0#1 : memref<3x4x2xf32>
  %u0_1 = memref.cast %m0_1 : memref<3x4x2xf32> to memref<*xf32>
  // CHECK: rank = 3 offset = 0 sizes = [3, 4, 2] strides = [8, 2, 1] data =
  // CHECK-NEXT: {{\[\[\[}}0, 12],
  // CHECK-NEXT: [1, 13],
  // CHECK-NEXT: [2, 14],
  // CHECK-NEXT: [3, 15]],
  // CHECK-NEXT: {{\[\[}}4, 16],
  // CHECK-NEXT: [5, 17],
  // CHECK-NEXT: [6, 18],
  // CHECK-NEXT: [7, 19]],
  // CHECK-NEXT: {{\[\[}}8, 20],
  // CHECK-NEXT: [9, 21],
  // CHECK-NEXT: [10, 22],
  // CHECK-NEXT: [11, 23]]]
  call @printMemrefF32(%u0_1) : (memref<*xf32>) -> ()
  %r1:4 = call @reshapes(%x) : (tensor<2x3x4xf32>) -> (tensor<6x4xf32>, tensor<2x3x2x2xf32>, tensor<4x6xf32>, tensor<4x6xf32>)
  %m1_0 = bufferization.to_memref %r1#0 : memref<6x4xf32>
  %u1_0 = memref.cast %m1_0 : memref<6x4xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [6, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}0, 1, 2, 3],
  // CHECK-NEXT: [4, 5, 6, 7],
  // CHECK-NEXT: [8, 9, 10, 11],
  // CHECK-NEXT: [12, 13, 14, 15],
  // CHECK-NEXT: [16, 17, 18, 19],
  // CHECK-NEXT: [20, 21, 22, 23]]
  call @printMemrefF32(%u1_0) : (memref<*xf32>) -> ()
  %m1_1 = bufferization.to_memref %r1#1 : memref<2x3x2x2xf32>
  %u1_1 = memref.cast %m1_1 : memref<2x3x2x2xf32> to memref<*xf32>
  // CHECK: rank = 4 offset = 0 sizes = [2, 3, 2, 2] strides = [12, 4, 2, 1] data =
  // CHECK-NEXT: {{\[\[\[\[}}0, 1],
  // CHECK-NEXT: [2, 3]],
  // CHECK-NEXT: {{\[\[}}4, 5],
  // CHECK-NEXT: [6, 7]],
  // CHECK-NEXT: {{\[\[}}8, 9],
  // CHECK-NEXT: [10, 11]]],
  // CHECK-NEXT: {{\[\[\[}}12, 13],
  // CHECK-NEXT: [14, 15]],
  // CHECK-NEXT: {{\[\[}}16, 17],
  // CHECK-NEXT: [18, 19]],
  // CHECK-NEXT: {{\[\[}}20, 21],
  // CHECK-NEXT: [22, 23]]]]
  call @printMemrefF32(%u1_1) : (memref<*xf32>) -> ()
  %m1_2 = bufferization.to_memref %r1#2 : memref<4x6xf32>
  %u1_2 = memref.cast %m1_2 : memref<4x6xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [4, 6] strides = [6, 1] data =
  // CHECK-NEXT: {{\[\[}}0, 1, 2, 3, 4, 5],
  // CHECK-NEXT: [6, 7, 8, 9, 10, 11],
  // CHECK-NEXT: [12, 13, 14, 15, 16, 17],
  // CHECK-NEXT: [18, 19, 20, 21, 22, 23]]
  call @printMemrefF32(%u1_2) : (memref<*xf32>) -> ()
  %m1_3 = bufferization.to_memref %r1#3 : memref<4x6xf32>
  %u1_3 = memref.cast %m1_3 : memref<4x6xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [4, 6] strides = [6, 1] data =
  // CHECK-NEXT: {{\[\[}}0, 4, 8, 12, 16, 20],
  // CHECK-NEXT: [1, 5, 9, 13, 17, 21],
  // CHECK-NEXT: [2, 6, 10, 14, 18, 22],
  // CHECK-NEXT: [3, 7, 11, 15, 19, 23]]
  call @printMemrefF32(%u1_3) : (memref<*xf32>) -> ()
  %r2_0 = call @broadcasts(%y) : (tensor<1x3xf32>) -> tensor<2x2x3xf32>
  %m2_0 = bufferization.to_memref %r2_0 : memref<2x2x3xf32>
  %u2_0 = memref.cast %m2_0 : memref<2x2x3xf32> to memref<*xf32>
  // CHECK: rank = 3 offset = 0 sizes = [2, 2, 3] strides = [6, 3, 1] data =
  // CHECK-NEXT: {{\[\[\[}}1, 2, 3],
  // CHECK-NEXT: [1, 2, 3]],
  // CHECK-NEXT: {{\[\[}}1, 2, 3],
  // CHECK-NEXT: [1, 2, 3]]]
  call @printMemrefF32(%u2_0) : (memref<*xf32>) -> ()
  return
}
