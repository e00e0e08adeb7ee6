// RUN: kiln-opt %s -kiln-optimize -kiln-cpu-lowering \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s
// REQUIRES: mlir-cpu-runner

// Execution test: sum, mean and max reductions over one, several and all
// dims, with and without keepdim (the kept size-1 dims re-inserted by
// expand_shape).

// Tests that sum over one dim, over two non-adjacent dims with keepdim, and over all
// dims to a 0-d tensor.
func.func private @sums(%x: tensor<3x2x4xf32>) -> (tensor<3x4xf32>, tensor<1x2x1xf32>, tensor<f32>) {
  %0 = kiln.sum %x {dims = array<i64: 1>} : tensor<3x2x4xf32> -> tensor<3x4xf32>
  %1 = kiln.sum %x {dims = array<i64: 0, 2>, keepdim = true} : tensor<3x2x4xf32> -> tensor<1x2x1xf32>
  %2 = kiln.sum %x {dims = array<i64: 0, 1, 2>} : tensor<3x2x4xf32> -> tensor<f32>
  return %0, %1, %2 : tensor<3x4xf32>, tensor<1x2x1xf32>, tensor<f32>
}

// Tests that mean divides by the number of reduced elements (4 for dim 2, 12 for
// dims [0, 2]) and keeps dims when asked.
func.func private @means(%x: tensor<3x2x4xf32>) -> (tensor<3x2x1xf32>, tensor<2xf32>) {
  %0 = kiln.mean %x {dims = array<i64: 2>, keepdim = true} : tensor<3x2x4xf32> -> tensor<3x2x1xf32>
  %1 = kiln.mean %x {dims = array<i64: 0, 2>} : tensor<3x2x4xf32> -> tensor<2xf32>
  return %0, %1 : tensor<3x2x1xf32>, tensor<2xf32>
}

// Tests that max starts from -inf (all-negative rows give their own maximum) over
// inner and outer dims, and an empty dims list returns the input.
func.func private @maxes(%x: tensor<3x2x4xf32>, %n: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<1x2x4xf32>, tensor<2x1xf32>, tensor<2x3xf32>) {
  %0 = kiln.max %x {dims = array<i64: 2>} : tensor<3x2x4xf32> -> tensor<3x2xf32>
  %1 = kiln.max %x {dims = array<i64: 0>, keepdim = true} : tensor<3x2x4xf32> -> tensor<1x2x4xf32>
  %2 = kiln.max %n {dims = array<i64: 1>, keepdim = true} : tensor<2x3xf32> -> tensor<2x1xf32>
  %3 = kiln.sum %n {dims = array<i64>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0, %1, %2, %3 : tensor<3x2xf32>, tensor<1x2x4xf32>, tensor<2x1xf32>, tensor<2x3xf32>
}

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %x = arith.constant dense<[[[1.0, -2.0, 3.0, 0.5], [4.0, 5.0, -6.0, 2.0]], [[-7.0, 8.0, 9.0, 1.0], [0.0, -1.0, 2.0, -3.0]], [[2.0, 2.0, -2.0, 4.0], [1.0, 3.0, 5.0, 7.0]]]> : tensor<3x2x4xf32>
  %n = arith.constant dense<[[-5.0, -2.0, -9.0], [-1.0e30, -3.0e30, -2.0e30]]> : tensor<2x3xf32>
  %r0:3 = call @sums(%x) : (tensor<3x2x4xf32>) -> (tensor<3x4xf32>, tensor<1x2x1xf32>, tensor<f32>)
  %m0_0 = bufferization.to_memref %r0#0 : memref<3x4xf32>
  %u0_0 = memref.cast %m0_0 : memref<3x4xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [3, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}5, 3, -3, 2.5],
  // CHECK-NEXT: [-7, 7, 11, -2],
  // CHECK-NEXT: [3, 5, 3, 11]]
  call @printMemrefF32(%u0_0) : (memref<*xf32>) -> ()
  %m0_1 = bufferization.to_memref %r0#1 : memref<1x2x1xf32>
  %u0_1 = memref.cast %m0_1 : memref<1x2x1xf32> to memref<*xf32>
  // CHECK: rank = 3 offset = 0 sizes = [1, 2, 1] strides = [2, 1, 1] data =
  // CHECK-NEXT: {{\[\[\[}}19.5],
  // CHECK-NEXT: [19]]]
  call @printMemrefF32(%u0_1) : (memref<*xf32>) -> ()
  %m0_2 = bufferization.to_memref %r0#2 : memref<f32>
  %u0_2 = memref.cast %m0_2 : memref<f32> to memref<*xf32>
  // CHECK: rank = 0 offset = 0 sizes = [] strides = [] data =
  // CHECK-NEXT: [38.5]
  call @printMemrefF32(%u0_2) : (memref<*xf32>) -> ()
  %r1:2 = call @means(%x) : (tensor<3x2x4xf32>) -> (tensor<3x2x1xf32>, tensor<2xf32>)
  %m1_0 = bufferization.to_memref %r1#0 : memref<3x2x1xf32>
  %u1_0 = memref.cast %m1_0 : memref<3x2x1xf32> to memref<*xf32>
  // CHECK: rank = 3 offset = 0 sizes = [3, 2, 1] strides = [2, 1, 1] data =
  // CHECK-NEXT: {{\[\[\[}}0.625],
  // CHECK-NEXT: [1.25]],
  // CHECK-NEXT: {{\[\[}}2.75],
  // CHECK-NEXT: [-0.5]],
  // CHECK-NEXT: {{\[\[}}1.5],
  // CHECK-NEXT: [4]]]
  call @printMemrefF32(%u1_0) : (memref<*xf32>) -> ()
  %m1_1 = bufferization.to_memref %r1#1 : memref<2xf32>
  %u1_1 = memref.cast %m1_1 : memref<2xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [2] strides = [1] data =
  // CHECK-NEXT: [1.625, {{1\.583[0-9]*}}]
  call @printMemrefF32(%u1_1) : (memref<*xf32>) -> ()
  %r2:4 = call @maxes(%x, %n) : (tensor<3x2x4xf32>, tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<1x2x4xf32>, tensor<2x1xf32>, tensor<2x3xf32>)
  %m2_0 = bufferization.to_memref %r2#0 : memref<3x2xf32>
  %u2_0 = memref.cast %m2_0 : memref<3x2xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [3, 2] strides = [2, 1] data =
  // CHECK-NEXT: {{\[\[}}3, 5],
  // CHECK-NEXT: [9, 2],
  // CHECK-NEXT: [4, 7]]
  call @printMemrefF32(%u2_0) : (memref<*xf32>) -> ()
  %m2_1 = bufferization.to_memref %r2#1 : memref<1x2x4xf32>
  %u2_1 = memref.cast %m2_1 : memref<1x2x4xf32> to memref<*xf32>
  // CHECK: rank = 3 offset = 0 sizes = [1, 2, 4] strides = [8, 4, 1] data =
  // CHECK-NEXT: {{\[\[\[}}2, 8, 9, 4],
  // CHECK-NEXT: [4, 5, 5, 7]]]
  call @printMemrefF32(%u2_1) : (memref<*xf32>) -> ()
  %m2_2 = bufferization.to_memref %r2#2 : memref<2x1xf32>
  %u2_2 = memref.cast %m2_2 : memref<2x1xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [2, 1] strides = [1, 1] data =
  // CHECK-NEXT: {{\[\[}}-2],
  // CHECK-NEXT: [-1e+30]]
  call @printMemrefF32(%u2_2) : (memref<*xf32>) -> ()
  %m2_3 = bufferization.to_memref %r2#3 : memref<2x3xf32>
  %u2_3 = memref.cast %m2_3 : memref<2x3xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [2, 3] strides = [3, 1] data =
  // CHECK-NEXT: {{\[\[}}-5, -2, -9],
  // CHECK-NEXT: [-1e+30, -3e+30, -2e+30]]
  call @printMemrefF32(%u2_3) : (memref<*xf32>) -> ()
  return
}
