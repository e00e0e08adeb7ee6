// RUN: kiln-opt %s -kiln-optimize -kiln-cpu-lowering \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s
// REQUIRES: mlir-cpu-runner

// Execution test: kiln.softmax, decomposed by kiln-optimize into max, sub,
// exp, sum and div, matches a float64 reference to 4 significant digits.

// Tests that softmax along the last dim subtracts the row max first (a row of
// values near 1000 gives the same result as 1..4 instead of inf/NaN), and
// that -inf entries get probability 0.
func.func private @softmax_last(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = kiln.softmax %x {dim = 1 : i64} : tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// Tests that softmax along a leading and a middle dim normalizes over that dim only.
func.func private @softmax_dims(%y: tensor<2x3x2xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x2xf32>) {
  %0 = kiln.softmax %y {dim = 0 : i64} : tensor<2x3x2xf32>
  %1 = kiln.softmax %y {dim = 1 : i64} : tensor<2x3x2xf32>
  return %0, %1 : tensor<2x3x2xf32>, tensor<2x3x2xf32>
}

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %x = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [1000.0, 1001.0, 1002.0, 1003.0], [0xFF800000, 0.0, 0xFF800000, 0.0]]> : tensor<3x4xf32>
  %y = arith.constant dense<[[[0.5, -1.0], [2.0, 0.0], [1.0, 1.0]], [[-3.0, 4.0], [0.0, 0.0], [3.0, -4.0]]]> : tensor<2x3x2xf32>
  %r0_0 = call @softmax_last(%x) : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %m0_0 = bufferization.to_memref %r0_0 : memref<3x4xf32>
  %u0_0 = memref.cast %m0_0 : memref<3x4xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [3, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}{{0\.03205[0-9]*}}, {{0\.08714[0-9]*}}, {{0\.2368[0-9]*}}, {{0\.6439[0-9]*}}],
  // CHECK-NEXT: [{{0\.03205[0-9]*}}, {{0\.08714[0-9]*}}, {{0\.2368[0-9]*}}, {{0\.6439[0-9]*}}],
  // CHECK-NEXT: [0, 0.5, 0, 0.5]]
  call @printMemrefF32(%u0_0) : (memref<*xf32>) -> ()
  %r1:2 = call @softmax_dims(%y) : (tensor<2x3x2xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x2xf32>)
  %m1_0 = bufferization.to_memref %r1#0 : memref<2x3x2xf32>
  %u1_0 = memref.cast %m1_0 : memref<2x3x2xf32> to memref<*xf32>
  // CHECK: rank = 3 offset = 0 sizes = [2, 3, 2] strides = [6, 2, 1] data =
  // CHECK-NEXT: {{\[\[\[}}{{0\.9706[0-9]*}}, {{0\.006692[0-9]*}}],
  // CHECK-NEXT: [{{0\.8807[0-9]*}}, 0.5],
  // CHECK-NEXT: [{{0\.1192[0-9]*}}, {{0\.9933[0-9]*}}]],
  // CHECK-NEXT: {{\[\[}}{{0\.02931[0-9]*}}, {{0\.9933[0-9]*}}],
  // CHECK-NEXT: [{{0\.1192[0-9]*}}, 0.5],
  // CHECK-NEXT: [{{0\.8807[0-9]*}}, {{0\.006692[0-9]*}}]]]
  call @printMemrefF32(%u1_0) : (memref<*xf32>) -> ()
  %m1_1 = bufferization.to_memref %r1#1 : memref<2x3x2xf32>
  %u1_1 = memref.cast %m1_1 : memref<2x3x2xf32> to memref<*xf32>
  // CHECK: rank = 3 offset = 0 sizes = [2, 3, 2] strides = [6, 2, 1] data =
  // CHECK-NEXT: {{\[\[\[}}{{0\.1402[0-9]*}}, {{0\.09003[0-9]*}}],
  // CHECK-NEXT: [{{0\.6285[0-9]*}}, {{0\.2447[0-9]*}}],
  // CHECK-NEXT: [{{0\.2312[0-9]*}}, {{0\.6652[0-9]*}}]],
  // CHECK-NEXT: {{\[\[}}{{0\.002355[0-9]*}}, {{0\.9816[0-9]*}}],
  // CHECK-NEXT: [{{0\.04731[0-9]*}}, {{0\.01798[0-9]*}}],
  // CHECK-NEXT: [{{0\.9503[0-9]*}}, {{0\.0003293[0-9]*}}]]]
  call @printMemrefF32(%u1_1) : (memref<*xf32>) -> ()
  return
}
