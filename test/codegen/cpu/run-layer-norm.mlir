// RUN: kiln-opt %s -kiln-optimize -kiln-cpu-lowering \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s
// REQUIRES: mlir-cpu-runner

// Execution test: kiln.layer_norm, decomposed by kiln-optimize, matches a
// float64 reference (torch.nn.functional.layer_norm semantics) to 4
// significant digits.

// Tests that layer_norm without affine parameters, with weight only and with weight
// and bias over the last dim uses the biased variance and eps = 1e-5.
func.func private @ln(%x: tensor<2x4xf32>, %w: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %0 = kiln.layer_norm %x {num_dims = 1 : i64} : tensor<2x4xf32>
  %1 = kiln.layer_norm %x weight %w {num_dims = 1 : i64} : tensor<2x4xf32>, tensor<4xf32>
  %2 = kiln.layer_norm %x weight %w bias %b {num_dims = 1 : i64} : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>
  return %0, %1, %2 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// Tests that layer_norm over the last two dims normalizes each 2x3 slab, and that eps
// comes from the attribute (eps = 1 turns [0, 2] into [-1, 1] / sqrt 2 and
// a constant row into zeros).
func.func private @ln_dims_eps(%z: tensor<2x2x3xf32>, %e: tensor<2x2xf32>) -> (tensor<2x2x3xf32>, tensor<2x2xf32>) {
  %0 = kiln.layer_norm %z {num_dims = 2 : i64} : tensor<2x2x3xf32>
  %1 = kiln.layer_norm %e {num_dims = 1 : i64, eps = 1.0 : f64} : tensor<2x2xf32>
  return %0, %1 : tensor<2x2x3xf32>, tensor<2x2xf32>
}

// Tests that an f16 layer_norm is computed in f32 and rounded to f16 once (cast
// back to f32 here for printing).
func.func private @ln_f16(%x: tensor<2x4xf32>, %w: tensor<4xf32>) -> tensor<2x4xf32> {
  %xh = kiln.cast %x : tensor<2x4xf32> -> tensor<2x4xf16>
  %wh = kiln.cast %w : tensor<4xf32> -> tensor<4xf16>
  %0 = kiln.layer_norm %xh weight %wh {num_dims = 1 : i64} : tensor<2x4xf16>, tensor<4xf16>
  %1 = kiln.cast %0 : tensor<2x4xf16> -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %x = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [-2.0, 0.0, 1.0, 6.0]]> : tensor<2x4xf32>
  %w = arith.constant dense<[1.0, -1.0, 2.0, 0.5]> : tensor<4xf32>
  %b = arith.constant dense<[0.0, 1.0, -1.0, 10.0]> : tensor<4xf32>
  %z = arith.constant dense<[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]]> : tensor<2x2x3xf32>
  %e = arith.constant dense<[[0.0, 2.0], [5.0, 5.0]]> : tensor<2x2xf32>
  %r0:3 = call @ln(%x, %w, %b) : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  %m0_0 = bufferization.to_memref %r0#0 : memref<2x4xf32>
  %u0_0 = memref.cast %m0_0 : memref<2x4xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [2, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}{{-1\.341[0-9]*}}, {{-0\.4472[0-9]*}}, {{0\.4472[0-9]*}}, {{1\.341[0-9]*}}],
  // CHECK-NEXT: [{{-1\.102[0-9]*}}, {{-0\.4240[0-9]*}}, {{-0\.08481[0-9]*}}, {{1\.611[0-9]*}}]]
  call @printMemrefF32(%u0_0) : (memref<*xf32>) -> ()
  %m0_1 = bufferization.to_memref %r0#1 : memref<2x4xf32>
  %u0_1 = memref.cast %m0_1 : memref<2x4xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [2, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}{{-1\.341[0-9]*}}, {{0\.4472[0-9]*}}, {{0\.8944[0-9]*}}, {{0\.6708[0-9]*}}],
  // CHECK-NEXT: [{{-1\.102[0-9]*}}, {{0\.4240[0-9]*}}, {{-0\.1696[0-9]*}}, {{0\.8057[0-9]*}}]]
  call @printMemrefF32(%u0_1) : (memref<*xf32>) -> ()
  %m0_2 = bufferization.to_memref %r0#2 : memref<2x4xf32>
  %u0_2 = memref.cast %m0_2 : memref<2x4xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [2, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}{{-1\.341[0-9]*}}, {{1\.447[0-9]*}}, {{-0\.1055[0-9]*}}, {{10\.67[0-9]*}}],
  // CHECK-NEXT: [{{-1\.102[0-9]*}}, {{1\.424[0-9]*}}, {{-1\.169[0-9]*}}, {{10\.80[0-9]*}}]]
  call @printMemrefF32(%u0_2) : (memref<*xf32>) -> ()
  %r1:2 = call @ln_dims_eps(%z, %e) : (tensor<2x2x3xf32>, tensor<2x2xf32>) -> (tensor<2x2x3xf32>, tensor<2x2xf32>)
  %m1_0 = bufferization.to_memref %r1#0 : memref<2x2x3xf32>
  %u1_0 = memref.cast %m1_0 : memref<2x2x3xf32> to memref<*xf32>
  // CHECK: rank = 3 offset = 0 sizes = [2, 2, 3] strides = [6, 3, 1] data =
  // CHECK-NEXT: {{\[\[\[}}{{-1\.463[0-9]*}}, {{-0\.8783[0-9]*}}, {{-0\.2927[0-9]*}}],
  // CHECK-NEXT: [{{0\.2927[0-9]*}}, {{0\.8783[0-9]*}}, {{1\.463[0-9]*}}]],
  // CHECK-NEXT: {{\[\[}}{{-0\.7070[0-9]*}}, {{-0\.7070[0-9]*}}, {{1\.414[0-9]*}}],
  // CHECK-NEXT: [{{1\.414[0-9]*}}, {{-0\.7070[0-9]*}}, {{-0\.7070[0-9]*}}]]]
  call @printMemrefF32(%u1_0) : (memref<*xf32>) -> ()
  %m1_1 = bufferization.to_memref %r1#1 : memref<2x2xf32>
  %u1_1 = memref.cast %m1_1 : memref<2x2xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [2, 2] strides = [2, 1] data =
  // CHECK-NEXT: {{\[\[}}{{-0\.7071[0-9]*}}, {{0\.7071[0-9]*}}],
  // CHECK-NEXT: [0, 0]]
  call @printMemrefF32(%u1_1) : (memref<*xf32>) -> ()
  %r2_0 = call @ln_f16(%x, %w) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %m2_0 = bufferization.to_memref %r2_0 : memref<2x4xf32>
  %u2_0 = memref.cast %m2_0 : memref<2x4xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [2, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}{{-1\.341[0-9]*}}, {{0\.4472[0-9]*}}, {{0\.8945[0-9]*}}, {{0\.6708[0-9]*}}],
  // CHECK-NEXT: [{{-1\.102[0-9]*}}, {{0\.4240[0-9]*}}, {{-0\.1696[0-9]*}}, {{0\.8056[0-9]*}}]]
  call @printMemrefF32(%u2_0) : (memref<*xf32>) -> ()
  return
}
