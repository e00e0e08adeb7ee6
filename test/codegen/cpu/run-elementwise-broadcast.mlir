// RUN: kiln-opt %s -kiln-optimize -kiln-cpu-lowering \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s
// REQUIRES: mlir-cpu-runner

// Execution test: broadcasting binary ops compute the right numbers after
// elementwise fusion (size-1 dims, missing leading dims, 0-d operands, and
// both operands broadcasting at once).

// Tests that a fused chain add → mul → sub → div with four operand shapes
// (2x3, 3, 2x1, 0-d) gives ((x + y) * z - s) / y.
func.func private @chain(%x: tensor<2x3xf32>, %y: tensor<3xf32>, %z: tensor<2x1xf32>, %s: tensor<f32>) -> tensor<2x3xf32> {
  %0 = kiln.add %x, %y : tensor<2x3xf32>, tensor<3xf32>
  %1 = kiln.mul %0, %z : tensor<2x3xf32>, tensor<2x1xf32>
  %2 = kiln.sub %1, %s : tensor<2x3xf32>, tensor<f32>
  %3 = kiln.div %2, %y : tensor<2x3xf32>, tensor<3xf32>
  return %3 : tensor<2x3xf32>
}

// Tests that both operands may broadcast: 2x1 + 1x3 is an outer sum.
func.func private @outer(%a: tensor<2x1xf32>, %b: tensor<1x3xf32>) -> tensor<2x3xf32> {
  %0 = kiln.add %a, %b : tensor<2x1xf32>, tensor<1x3xf32>
  return %0 : tensor<2x3xf32>
}

// Tests that a rank-2 operand broadcasts into a rank-3 result (2x1x3 * 2x1
// gives 2x2x3).
func.func private @rank_extend(%c: tensor<2x1x3xf32>, %d: tensor<2x1xf32>) -> tensor<2x2x3xf32> {
  %0 = kiln.mul %c, %d : tensor<2x1x3xf32>, tensor<2x1xf32>
  return %0 : tensor<2x2x3xf32>
}

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %x = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %y = arith.constant dense<[1.0, 2.0, 4.0]> : tensor<3xf32>
  %z = arith.constant dense<[[1.0], [-2.0]]> : tensor<2x1xf32>
  %s = arith.constant dense<0.5> : tensor<f32>
  %r0 = call @chain(%x, %y, %z, %s) : (tensor<2x3xf32>, tensor<3xf32>, tensor<2x1xf32>, tensor<f32>) -> tensor<2x3xf32>
  %m0 = bufferization.to_memref %r0 : memref<2x3xf32>
  %u0 = memref.cast %m0 : memref<2x3xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [2, 3] strides = [3, 1] data =
  // CHECK-NEXT: {{\[\[}}1.5, 1.75, 1.625],
  // CHECK-NEXT: [-10.5, -7.25, -5.125]]
  call @printMemrefF32(%u0) : (memref<*xf32>) -> ()

  %a = arith.constant dense<[[1.0], [2.0]]> : tensor<2x1xf32>
  %b = arith.constant dense<[[10.0, 20.0, 30.0]]> : tensor<1x3xf32>
  %r1 = call @outer(%a, %b) : (tensor<2x1xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  %m1 = bufferization.to_memref %r1 : memref<2x3xf32>
  %u1 = memref.cast %m1 : memref<2x3xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [2, 3] strides = [3, 1] data =
  // CHECK-NEXT: {{\[\[}}11, 21, 31],
  // CHECK-NEXT: [12, 22, 32]]
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()

  %c = arith.constant dense<[[[1.0, 2.0, 3.0]], [[4.0, 5.0, 6.0]]]> : tensor<2x1x3xf32>
  %d = arith.constant dense<[[1.0], [10.0]]> : tensor<2x1xf32>
  %r2 = call @rank_extend(%c, %d) : (tensor<2x1x3xf32>, tensor<2x1xf32>) -> tensor<2x2x3xf32>
  %m2 = bufferization.to_memref %r2 : memref<2x2x3xf32>
  %u2 = memref.cast %m2 : memref<2x2x3xf32> to memref<*xf32>
  // CHECK: rank = 3 offset = 0 sizes = [2, 2, 3] strides = [6, 3, 1] data =
  // CHECK-NEXT: {{\[\[\[}}1, 2, 3],
  // CHECK-NEXT: [10, 20, 30]],
  // CHECK-NEXT: {{\[\[}}4, 5, 6],
  // CHECK-NEXT: [40, 50, 60]]]
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()
  return
}
