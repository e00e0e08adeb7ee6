// RUN: kiln-opt %s -kiln-optimize -kiln-cpu-lowering \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils,%kiln_runner_shims \
// RUN: | FileCheck %s
// REQUIRES: mlir-cpu-runner

// Execution test: dynamic dims (tensor.dim-sized destinations, sgemm with a
// runtime M) compute the same numbers as the static shapes would.

// Tests that a kernel with a dynamic batch dim (F.linear + relu, a keepdim sum and
// a softmax) runs on a 3-row input passed as tensor<?x4xf32>.
func.func private @dynamic(%x: tensor<?x4xf32>, %w: tensor<2x4xf32>, %b: tensor<2xf32>) -> (tensor<?x2xf32>, tensor<?x1xf32>, tensor<?x4xf32>) {
  %wt = kiln.permute %w {dims = array<i64: 1, 0>} : tensor<2x4xf32> -> tensor<4x2xf32>
  %m = kiln.matmul %x, %wt : tensor<?x4xf32>, tensor<4x2xf32>
  %a = kiln.add %m, %b : tensor<?x2xf32>, tensor<2xf32>
  %0 = kiln.relu %a : tensor<?x2xf32>
  %1 = kiln.sum %x {dims = array<i64: 1>, keepdim = true} : tensor<?x4xf32> -> tensor<?x1xf32>
  %2 = kiln.softmax %x {dim = 1 : i64} : tensor<?x4xf32>
  return %0, %1, %2 : tensor<?x2xf32>, tensor<?x1xf32>, tensor<?x4xf32>
}

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %xs = arith.constant dense<[[-1.0, 2.0, -1.0, 1.0], [0.0, 1.0, -1.0, -3.0], [-1.0, 1.0, 1.0, 3.0]]> : tensor<3x4xf32>
  %x = tensor.cast %xs : tensor<3x4xf32> to tensor<?x4xf32>
  %w = arith.constant dense<[[2.0, -1.0, 1.0, -2.0], [3.0, -3.0, -2.0, 1.0]]> : tensor<2x4xf32>
  %b = arith.constant dense<[7.5, 4.5]> : tensor<2xf32>
  %r0:3 = call @dynamic(%x, %w, %b) : (tensor<?x4xf32>, tensor<2x4xf32>, tensor<2xf32>) -> (tensor<?x2xf32>, tensor<?x1xf32>, tensor<?x4xf32>)
  %m0_0 = bufferization.to_memref %r0#0 : memref<?x2xf32>
  %u0_0 = memref.cast %m0_0 : memref<?x2xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [3, 2] strides = [2, 1] data =
  // CHECK-NEXT: {{\[\[}}0.5, 0],
  // CHECK-NEXT: [11.5, 0.5],
  // CHECK-NEXT: [0, 0]]
  call @printMemrefF32(%u0_0) : (memref<*xf32>) -> ()
  %m0_1 = bufferization.to_memref %r0#1 : memref<?x1xf32>
  %u0_1 = memref.cast %m0_1 : memref<?x1xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [3, 1] strides = [1, 1] data =
  // CHECK-NEXT: {{\[\[}}1],
  // CHECK-NEXT: [-3],
  // CHECK-NEXT: [4]]
  call @printMemrefF32(%u0_1) : (memref<*xf32>) -> ()
  %m0_2 = bufferization.to_memref %r0#2 : memref<?x4xf32>
  %u0_2 = memref.cast %m0_2 : memref<?x4xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [3, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}{{0\.03392[0-9]*}}, {{0\.6814[0-9]*}}, {{0\.03392[0-9]*}}, {{0\.2506[0-9]*}}],
  // CHECK-NEXT: [{{0\.2417[0-9]*}}, {{0\.6572[0-9]*}}, {{0\.08894[0-9]*}}, {{0\.01203[0-9]*}}],
  // CHECK-NEXT: [{{0\.01420[0-9]*}}, {{0\.1049[0-9]*}}, {{0\.1049[0-9]*}}, {{0\.7758[0-9]*}}]]
  call @printMemrefF32(%u0_2) : (memref<*xf32>) -> ()
  return
}
