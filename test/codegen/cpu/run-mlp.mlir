// RUN: kiln-opt %s -kiln-optimize -kiln-cpu-lowering \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils,%kiln_runner_shims \
// RUN: | FileCheck %s
// REQUIRES: mlir-cpu-runner

// Execution test: a whole block through kiln-optimize and kiln-cpu-lowering
// (BLAS calls, fusion across decomposed ops, deallocation of intermediates).

// Tests that a small transformer-style MLP block (F.linear, layer_norm with affine,
// gelu, a second matmul with an un-permuted weight, softmax) on a 2x3x4
// input matches a float64 numpy reference to 4 significant digits.
func.func private @mlp(%x: tensor<2x3x4xf32>, %w1: tensor<6x4xf32>, %b1: tensor<6xf32>, %g: tensor<6xf32>, %be: tensor<6xf32>, %w2: tensor<6x3xf32>) -> tensor<2x3x3xf32> {
  %w1t = kiln.permute %w1 {dims = array<i64: 1, 0>} : tensor<6x4xf32> -> tensor<4x6xf32>
  %m = kiln.matmul %x, %w1t : tensor<2x3x4xf32>, tensor<4x6xf32>
  %h = kiln.add %m, %b1 : tensor<2x3x6xf32>, tensor<6xf32>
  %n = kiln.layer_norm %h weight %g bias %be {num_dims = 1 : i64} : tensor<2x3x6xf32>, tensor<6xf32>, tensor<6xf32>
  %a = kiln.gelu %n : tensor<2x3x6xf32>
  %o = kiln.matmul %a, %w2 : tensor<2x3x6xf32>, tensor<6x3xf32>
  %s = kiln.softmax %o {dim = 2 : i64} : tensor<2x3x3xf32>
  return %s : tensor<2x3x3xf32>
}

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %x = arith.constant dense<[[[-0.8, -1.32, -0.25, 0.42], [1.14, 0.11, -0.55, -0.78], [0.75, 1.63, 0.27, -1.23]], [[-0.96, 1.6, 0.2, -1.73], [-0.08, -1.16, -0.63, -0.49], [-0.71, 0.55, -0.06, -0.59]]]> : tensor<2x3x4xf32>
  %w1 = arith.constant dense<[[0.2, 0.41, -0.82, -0.13], [-0.49, -0.09, -0.64, 0.01], [-0.02, -0.15, -0.52, -0.2], [-0.55, -0.68, 0.11, -0.55], [0.59, 0.36, -1.0, 0.14], [-0.55, 0.02, 0.02, -0.99]]> : tensor<6x4xf32>
  %b1 = arith.constant dense<[-0.23, -0.26, 0.96, -1.18, 0.74, -1.1]> : tensor<6xf32>
  %g = arith.constant dense<[0.97, 0.92, 1.14, 1.06, 1.24, 1.06]> : tensor<6xf32>
  %be = arith.constant dense<[0.08, 0.08, -0.06, -0.01, 0.14, -0.04]> : tensor<6xf32>
  %w2 = arith.constant dense<[[0.09, -0.01, 0.3], [-0.18, -0.08, 0.12], [0.05, -0.43, 0.45], [-0.65, -0.6, -0.64], [0.48, -0.18, -0.49], [-0.57, 0.21, -0.53]]> : tensor<6x3xf32>
  %r0_0 = call @mlp(%x, %w1, %b1, %g, %be, %w2) : (tensor<2x3x4xf32>, tensor<6x4xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6x3xf32>) -> tensor<2x3x3xf32>
  %m0_0 = bufferization.to_memref %r0_0 : memref<2x3x3xf32>
  %u0_0 = memref.cast %m0_0 : memref<2x3x3xf32> to memref<*xf32>
  // CHECK: rank = 3 offset = 0 sizes = [2, 3, 3] strides = [9, 3, 1] data =
  // CHECK-NEXT: {{\[\[\[}}{{0\.3195[0-9]*}}, {{0\.1153[0-9]*}}, {{0\.5650[0-9]*}}],
  // CHECK-NEXT: [{{0\.7112[0-9]*}}, {{0\.1148[0-9]*}}, {{0\.1738[0-9]*}}],
  // CHECK-NEXT: [{{0\.6673[0-9]*}}, {{0\.1444[0-9]*}}, {{0\.1881[0-9]*}}]],
  // CHECK-NEXT: {{\[\[}}{{0\.2526[0-9]*}}, {{0\.3962[0-9]*}}, {{0\.3511[0-9]*}}],
  // CHECK-NEXT: [{{0\.4871[0-9]*}}, {{0\.09870[0-9]*}}, {{0\.4141[0-9]*}}],
  // CHECK-NEXT: [{{0\.4734[0-9]*}}, {{0\.1077[0-9]*}}, {{0\.4187[0-9]*}}]]]
  call @printMemrefF32(%u0_0) : (memref<*xf32>) -> ()
  return
}
