// RUN: kiln-opt %s -kiln-optimize -kiln-cpu-lowering \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils,%kiln_runner_shims \
// RUN: | FileCheck %s
// REQUIRES: mlir-cpu-runner

// Execution test: matmuls with a dynamic batch dim (BLAS batched sgemm with
// a run-time batch count): a shared left operand read at batch stride 0
// ([2, 3] x [?, 3, 2], the view sized from the result at run time) and a
// batch matmul of two [?, 2, 2] operands, on 2-element batches.

func.func private @shared(%w: tensor<2x3xf32>, %x: tensor<?x3x2xf32>) -> tensor<?x2x2xf32> {
  %0 = kiln.matmul %w, %x : tensor<2x3xf32>, tensor<?x3x2xf32>
  return %0 : tensor<?x2x2xf32>
}

func.func private @batched(%a: tensor<?x2x2xf32>, %b: tensor<?x2x2xf32>) -> tensor<?x2x2xf32> {
  %0 = kiln.matmul %a, %b : tensor<?x2x2xf32>, tensor<?x2x2xf32>
  return %0 : tensor<?x2x2xf32>
}

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %w = arith.constant dense<[[1.0, 2.0, -1.0], [0.0, -1.0, 3.0]]> : tensor<2x3xf32>
  %xs = arith.constant dense<[[[-5.0, -4.0], [-3.0, -2.0], [-1.0, 0.0]], [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]]> : tensor<2x3x2xf32>
  %x = tensor.cast %xs : tensor<2x3x2xf32> to tensor<?x3x2xf32>
  %r0 = call @shared(%w, %x) : (tensor<2x3xf32>, tensor<?x3x2xf32>) -> tensor<?x2x2xf32>
  %m0 = bufferization.to_memref %r0 : memref<?x2x2xf32>
  %u0 = memref.cast %m0 : memref<?x2x2xf32> to memref<*xf32>
  // CHECK: rank = 3 offset = 0 sizes = [2, 2, 2] strides = [4, 2, 1] data =
  // CHECK-NEXT: {{\[\[\[}}-10, -8],
  // CHECK-NEXT: [0, 2]],
  // CHECK-NEXT: {{\[\[}}2, 4],
  // CHECK-NEXT: [12, 14]]]
  call @printMemrefF32(%u0) : (memref<*xf32>) -> ()
  %as = arith.constant dense<[[[-3.0, -2.0], [-1.0, 0.0]], [[1.0, 2.0], [3.0, 4.0]]]> : tensor<2x2x2xf32>
  %bs = arith.constant dense<[[[1.0, -1.0], [2.0, 0.5]], [[1.0, -1.0], [2.0, 0.5]]]> : tensor<2x2x2xf32>
  %a = tensor.cast %as : tensor<2x2x2xf32> to tensor<?x2x2xf32>
  %b = tensor.cast %bs : tensor<2x2x2xf32> to tensor<?x2x2xf32>
  %r1 = call @batched(%a, %b) : (tensor<?x2x2xf32>, tensor<?x2x2xf32>) -> tensor<?x2x2xf32>
  %m1 = bufferization.to_memref %r1 : memref<?x2x2xf32>
  %u1 = memref.cast %m1 : memref<?x2x2xf32> to memref<*xf32>
  // CHECK: rank = 3 offset = 0 sizes = [2, 2, 2] strides = [4, 2, 1] data =
  // CHECK-NEXT: {{\[\[\[}}-7, 2],
  // CHECK-NEXT: [-1, 1]],
  // CHECK-NEXT: {{\[\[}}5, 0],
  // CHECK-NEXT: [11, -1]]]
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  return
}
