// RUN: kiln-opt %s -kiln-optimize -kiln-cpu-lowering \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s
// REQUIRES: mlir-cpu-runner

// Execution test: NaN and infinity semantics survive fusion, vectorized
// reductions and the polynomial approximations.

// Tests that max reductions propagate NaN wherever it sits in a row (middle, vector
// tail, first element) and that rows without NaN are unaffected, as
// torch.amax does; sum and mean propagate it too.
func.func private @reduce_nan(%r: tensor<4x37xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = kiln.max %r {dims = array<i64: 1>} : tensor<4x37xf32> -> tensor<4xf32>
  %1 = kiln.sum %r {dims = array<i64: 1>} : tensor<4x37xf32> -> tensor<4xf32>
  %2 = kiln.mean %r {dims = array<i64: 1>} : tensor<4x37xf32> -> tensor<4xf32>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// Tests that relu and the activations keep NaN, and that infinities saturate
// (sigmoid(±inf) = 1/0, tanh(±inf) = ±1, relu(inf) = inf).
func.func private @unary_nan(%v: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) {
  %0 = kiln.relu %v : tensor<6xf32>
  %1 = kiln.sigmoid %v : tensor<6xf32>
  %2 = kiln.tanh %v : tensor<6xf32>
  return %0, %1, %2 : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
}

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %r = arith.constant dense<[[44.0, 12.0, 18.0, 39.0, 7.0, 27.0, 33.0, -28.0, -45.0, -20.0, -22.0, 37.0, 41.0, -50.0, -1.0, 32.0, -37.0, 29.0, -39.0, -4.0, 31.0, -20.0, -16.0, -23.0, 21.0, -25.0, 49.0, -6.0, -3.0, 0.0, 8.0, 5.0, 0.0, 49.0, 30.0, 29.0, 20.0], [12.0, -16.0, 48.0, -4.0, -29.0, 34.0, -34.0, 35.0, 11.0, -39.0, -46.0, -6.0, -47.0, -36.0, 1.0, 47.0, -4.0, 30.0, 41.0, 32.0, 0x7FC00000, -6.0, 1.0, -24.0, -1.0, -13.0, -26.0, 49.0, -49.0, -41.0, -31.0, 46.0, 19.0, 38.0, -30.0, 22.0, -14.0], [-2.0, -50.0, 11.0, 33.0, 16.0, -35.0, 3.0, -24.0, 46.0, 38.0, -32.0, 0.0, 43.0, 34.0, 20.0, 13.0, -46.0, 24.0, -3.0, -41.0, -26.0, 4.0, 22.0, 0.0, 11.0, 37.0, 18.0, -14.0, 14.0, 9.0, -40.0, -45.0, 16.0, -12.0, 9.0, -18.0, 0x7FC00000], [0x7FC00000, -12.0, 31.0, -10.0, -13.0, 7.0, 47.0, -11.0, 8.0, -7.0, 10.0, -6.0, 13.0, 4.0, 17.0, 45.0, -35.0, 6.0, -6.0, -15.0, -27.0, -45.0, -10.0, 32.0, -41.0, -10.0, 46.0, 45.0, -29.0, -50.0, 17.0, -49.0, -20.0, -1.0, 37.0, -41.0, 16.0]]> : tensor<4x37xf32>
  %v = arith.constant dense<[0x7FC00000, -1.0, 0.0, 2.0, 0x7F800000, 0xFF800000]> : tensor<6xf32>
  %r0:3 = call @reduce_nan(%r) : (tensor<4x37xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %m0_0 = bufferization.to_memref %r0#0 : memref<4xf32>
  %u0_0 = memref.cast %m0_0 : memref<4xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [4] strides = [1] data =
  // CHECK-NEXT: [49, {{-?nan}}, {{-?nan}}, {{-?nan}}]
  call @printMemrefF32(%u0_0) : (memref<*xf32>) -> ()
  %m0_1 = bufferization.to_memref %r0#1 : memref<4xf32>
  %u0_1 = memref.cast %m0_1 : memref<4xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [4] strides = [1] data =
  // CHECK-NEXT: [222, {{-?nan}}, {{-?nan}}, {{-?nan}}]
  call @printMemrefF32(%u0_1) : (memref<*xf32>) -> ()
  %m0_2 = bufferization.to_memref %r0#2 : memref<4xf32>
  %u0_2 = memref.cast %m0_2 : memref<4xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [4] strides = [1] data =
  // CHECK-NEXT: [6, {{-?nan}}, {{-?nan}}, {{-?nan}}]
  call @printMemrefF32(%u0_2) : (memref<*xf32>) -> ()
  %r1:3 = call @unary_nan(%v) : (tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>)
  %m1_0 = bufferization.to_memref %r1#0 : memref<6xf32>
  %u1_0 = memref.cast %m1_0 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [{{-?nan}}, 0, 0, 2, inf, 0]
  call @printMemrefF32(%u1_0) : (memref<*xf32>) -> ()
  %m1_1 = bufferization.to_memref %r1#1 : memref<6xf32>
  %u1_1 = memref.cast %m1_1 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [{{-?nan}}, {{0\.2689[0-9]*}}, 0.5, {{0\.8807[0-9]*}}, 1, 0]
  call @printMemrefF32(%u1_1) : (memref<*xf32>) -> ()
  %m1_2 = bufferization.to_memref %r1#2 : memref<6xf32>
  %u1_2 = memref.cast %m1_2 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [{{-?nan}}, {{-0\.7615[0-9]*}}, 0, {{0\.9640[0-9]*}}, 1, -1]
  call @printMemrefF32(%u1_2) : (memref<*xf32>) -> ()
  return
}
