// RUN: kiln-opt %s -kiln-optimize -kiln-cpu-lowering \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils,%kiln_runner_shims \
// RUN: | FileCheck %s
// REQUIRES: mlir-cpu-runner

// Execution test: f32/f64 matmuls lowered to the BLAS shims (loaded from
// kiln_runner_shims) compute the right products; small integer-valued
// inputs make every result exact.

// Tests that a 2-D f32 matmul (BLAS sgemm through kiln_runner_shims) computes A @ B.
func.func private @mm(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  %0 = kiln.matmul %a, %b : tensor<3x4xf32>, tensor<4x5xf32>
  return %0 : tensor<3x5xf32>
}

// Tests that F.linear on a rank-3 input (x @ w^T + b, the permute folded into
// sgemm's transB and the batch collapsed into M) is right.
func.func private @linear(%x: tensor<2x3x4xf32>, %w: tensor<5x4xf32>, %b: tensor<5xf32>) -> tensor<2x3x5xf32> {
  %wt = kiln.permute %w {dims = array<i64: 1, 0>} : tensor<5x4xf32> -> tensor<4x5xf32>
  %m = kiln.matmul %x, %wt : tensor<2x3x4xf32>, tensor<4x5xf32>
  %0 = kiln.add %m, %b : tensor<2x3x5xf32>, tensor<5xf32>
  return %0 : tensor<2x3x5xf32>
}

// Tests that an f64 matmul goes through dgemm and keeps f64 precision (1 + 2^-40
// survives; it would not in f32).
func.func private @mm_f64(%a: tensor<3x4xf64>, %b: tensor<4x2xf64>) -> tensor<3x2xf64> {
  %0 = kiln.matmul %a, %b : tensor<3x4xf64>, tensor<4x2xf64>
  return %0 : tensor<3x2xf64>
}

func.func private @precision_f64(%a: tensor<1x2xf64>, %b: tensor<2x1xf64>) -> tensor<1x1xf64> {
  %0 = kiln.matmul %a, %b : tensor<1x2xf64>, tensor<2x1xf64>
  %one = kiln.constant dense<1.0> : tensor<f64>
  %1 = kiln.sub %0, %one : tensor<1x1xf64>, tensor<f64>
  %s = kiln.constant dense<1099511627776.0> : tensor<f64>
  %2 = kiln.mul %1, %s : tensor<1x1xf64>, tensor<f64>
  return %2 : tensor<1x1xf64>
}

func.func private @printMemrefF32(memref<*xf32>)
func.func private @printMemrefF64(memref<*xf64>)

func.func @main() {
  %a = arith.constant dense<[[0.0, 0.0, 2.0, 3.0], [-3.0, -2.0, 2.0, 3.0], [-2.0, -1.0, 3.0, -1.0]]> : tensor<3x4xf32>
  %b = arith.constant dense<[[2.0, -2.0, -3.0, -1.0, -1.0], [2.0, 0.0, -3.0, -1.0, 1.0], [2.0, 2.0, 3.0, -2.0, 3.0], [-3.0, 0.0, -2.0, -2.0, 1.0]]> : tensor<4x5xf32>
  %x = arith.constant dense<[[[2.0, -3.0, -2.0, -2.0], [-2.0, 2.0, 3.0, 1.0], [-3.0, -3.0, -1.0, 0.0]], [[1.0, 0.0, -2.0, -2.0], [1.0, 2.0, -3.0, -3.0], [0.0, -1.0, 3.0, 0.0]]]> : tensor<2x3x4xf32>
  %w = arith.constant dense<[[2.0, 3.0, 3.0, 0.0], [3.0, 3.0, 3.0, -3.0], [0.0, 1.0, -2.0, -1.0], [1.0, 2.0, 1.0, -2.0], [1.0, 3.0, -2.0, 0.0]]> : tensor<5x4xf32>
  %bias = arith.constant dense<[1.0, 2.0, -3.0, 2.0, 0.0]> : tensor<5xf32>
  %ad = arith.constant dense<[[0.0, 0.0, 0.0, -1.0], [3.0, -1.0, 1.0, -1.0], [0.0, 3.0, -2.0, 1.0]]> : tensor<3x4xf64>
  %bd = arith.constant dense<[[3.0, 1.0], [1.0, 3.0], [1.0, 2.0], [2.0, -2.0]]> : tensor<4x2xf64>
  %p = arith.constant dense<[[1.0, 9.094947017729282e-13]]> : tensor<1x2xf64>
  %q = arith.constant dense<[[1.0], [1.0]]> : tensor<2x1xf64>
  %r0_0 = call @mm(%a, %b) : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %m0_0 = bufferization.to_memref %r0_0 : memref<3x5xf32>
  %u0_0 = memref.cast %m0_0 : memref<3x5xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [3, 5] strides = [5, 1] data =
  // CHECK-NEXT: {{\[\[}}-5, 4, 0, -10, 9],
  // CHECK-NEXT: [-15, 10, 15, -5, 10],
  // CHECK-NEXT: [3, 10, 20, -1, 9]]
  call @printMemrefF32(%u0_0) : (memref<*xf32>) -> ()
  %r1_0 = call @linear(%x, %w, %bias) : (tensor<2x3x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
  %m1_0 = bufferization.to_memref %r1_0 : memref<2x3x5xf32>
  %u1_0 = memref.cast %m1_0 : memref<2x3x5xf32> to memref<*xf32>
  // CHECK: rank = 3 offset = 0 sizes = [2, 3, 5] strides = [15, 5, 1] data =
  // CHECK-NEXT: {{\[\[\[}}-10, -1, 0, 0, -3],
  // CHECK-NEXT: [12, 8, -8, 5, -2],
  // CHECK-NEXT: [-17, -19, -4, -8, -10]],
  // CHECK-NEXT: {{\[\[}}-3, 5, 3, 5, 5],
  // CHECK-NEXT: [0, 11, 8, 10, 13],
  // CHECK-NEXT: [7, 8, -10, 3, -9]]]
  call @printMemrefF32(%u1_0) : (memref<*xf32>) -> ()
  %r2_0 = call @mm_f64(%ad, %bd) : (tensor<3x4xf64>, tensor<4x2xf64>) -> tensor<3x2xf64>
  %m2_0 = bufferization.to_memref %r2_0 : memref<3x2xf64>
  %u2_0 = memref.cast %m2_0 : memref<3x2xf64> to memref<*xf64>
  // CHECK: rank = 2 offset = 0 sizes = [3, 2] strides = [2, 1] data =
  // CHECK-NEXT: {{\[\[}}-2, 2],
  // CHECK-NEXT: [7, 4],
  // CHECK-NEXT: [3, 3]]
  call @printMemrefF64(%u2_0) : (memref<*xf64>) -> ()
  %r3_0 = call @precision_f64(%p, %q) : (tensor<1x2xf64>, tensor<2x1xf64>) -> tensor<1x1xf64>
  %m3_0 = bufferization.to_memref %r3_0 : memref<1x1xf64>
  %u3_0 = memref.cast %m3_0 : memref<1x1xf64> to memref<*xf64>
  // CHECK: rank = 2 offset = 0 sizes = [1, 1] strides = [1, 1] data =
  // CHECK-NEXT: {{\[\[}}1]]
  call @printMemrefF64(%u3_0) : (memref<*xf64>) -> ()
  return
}
