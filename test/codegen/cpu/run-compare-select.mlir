// RUN: kiln-opt %s -kiln-optimize -kiln-cpu-lowering \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s
// REQUIRES: mlir-cpu-runner

// Execution test: comparisons, select, maximum and minimum with
// broadcasting and NaN operands.

// Tests that the six comparisons broadcast (2x4 against 4) and are ordered: any
// comparison with NaN is false except ne, which is true (results cast to
// f32 for printing).
func.func private @compare(%a: tensor<2x4xf32>, %b: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %c0 = kiln.eq %a, %b : tensor<2x4xf32>, tensor<4xf32>
  %f0 = kiln.cast %c0 : tensor<2x4xi1> -> tensor<2x4xf32>
  %c1 = kiln.ne %a, %b : tensor<2x4xf32>, tensor<4xf32>
  %f1 = kiln.cast %c1 : tensor<2x4xi1> -> tensor<2x4xf32>
  %c2 = kiln.lt %a, %b : tensor<2x4xf32>, tensor<4xf32>
  %f2 = kiln.cast %c2 : tensor<2x4xi1> -> tensor<2x4xf32>
  %c3 = kiln.le %a, %b : tensor<2x4xf32>, tensor<4xf32>
  %f3 = kiln.cast %c3 : tensor<2x4xi1> -> tensor<2x4xf32>
  %c4 = kiln.gt %a, %b : tensor<2x4xf32>, tensor<4xf32>
  %f4 = kiln.cast %c4 : tensor<2x4xi1> -> tensor<2x4xf32>
  %c5 = kiln.ge %a, %b : tensor<2x4xf32>, tensor<4xf32>
  %f5 = kiln.cast %c5 : tensor<2x4xi1> -> tensor<2x4xf32>
  return %f0, %f1, %f2, %f3, %f4, %f5 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// Tests that select broadcasts all three operands (a 2x1 condition, a 2x4 and a 0-d
// branch), as torch.where(x > 0, x, -1) row by row does, and that maximum and
// minimum broadcast and propagate NaN.
func.func private @select(%c: tensor<2x1xi1>, %a: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %m1 = kiln.constant dense<-1.0> : tensor<f32>
  %0 = kiln.select %c, %a, %m1 : tensor<2x1xi1>, tensor<2x4xf32>, tensor<f32>
  return %0 : tensor<2x4xf32>
}

func.func private @max_min(%a: tensor<2x4xf32>, %b: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %0 = kiln.maximum %a, %b : tensor<2x4xf32>, tensor<4xf32>
  %1 = kiln.minimum %a, %b : tensor<2x4xf32>, tensor<4xf32>
  return %0, %1 : tensor<2x4xf32>, tensor<2x4xf32>
}

// Tests that integer comparisons are signed (-1 < 1 for i64) and that select picks
// integer values.
func.func private @compare_int(%i: tensor<4xi64>, %j: tensor<4xi64>) -> tensor<4xi64> {
  %c = kiln.lt %i, %j : tensor<4xi64>, tensor<4xi64>
  %0 = kiln.select %c, %i, %j : tensor<4xi1>, tensor<4xi64>, tensor<4xi64>
  return %0 : tensor<4xi64>
}

func.func private @printMemrefF32(memref<*xf32>)
func.func private @printMemrefI64(memref<*xi64>)

func.func @main() {
  %a = arith.constant dense<[[1.0, 2.0, 3.0, 0x7FC00000], [-1.0, 2.0, 5.0, 0.0]]> : tensor<2x4xf32>
  %b = arith.constant dense<[2.0, 2.0, 2.0, 0x7FC00000]> : tensor<4xf32>
  %c = arith.constant dense<[[true], [false]]> : tensor<2x1xi1>
  %i = arith.constant dense<[-1, 5, -7, 3]> : tensor<4xi64>
  %j = arith.constant dense<[1, 4, -8, 3]> : tensor<4xi64>
  %r0:6 = call @compare(%a, %b) : (tensor<2x4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  %m0_0 = bufferization.to_memref %r0#0 : memref<2x4xf32>
  %u0_0 = memref.cast %m0_0 : memref<2x4xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [2, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}0, 1, 0, 0],
  // CHECK-NEXT: [0, 1, 0, 0]]
  call @printMemrefF32(%u0_0) : (memref<*xf32>) -> ()
  %m0_1 = bufferization.to_memref %r0#1 : memref<2x4xf32>
  %u0_1 = memref.cast %m0_1 : memref<2x4xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [2, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}1, 0, 1, 1],
  // CHECK-NEXT: [1, 0, 1, 1]]
  call @printMemrefF32(%u0_1) : (memref<*xf32>) -> ()
  %m0_2 = bufferization.to_memref %r0#2 : memref<2x4xf32>
  %u0_2 = memref.cast %m0_2 : memref<2x4xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [2, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}1, 0, 0, 0],
  // CHECK-NEXT: [1, 0, 0, 0]]
  call @printMemrefF32(%u0_2) : (memref<*xf32>) -> ()
  %m0_3 = bufferization.to_memref %r0#3 : memref<2x4xf32>
  %u0_3 = memref.cast %m0_3 : memref<2x4xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [2, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}1, 1, 0, 0],
  // CHECK-NEXT: [1, 1, 0, 0]]
  call @printMemrefF32(%u0_3) : (memref<*xf32>) -> ()
  %m0_4 = bufferization.to_memref %r0#4 : memref<2x4xf32>
  %u0_4 = memref.cast %m0_4 : memref<2x4xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [2, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}0, 0, 1, 0],
  // CHECK-NEXT: [0, 0, 1, 0]]
  call @printMemrefF32(%u0_4) : (memref<*xf32>) -> ()
  %m0_5 = bufferization.to_memref %r0#5 : memref<2x4xf32>
  %u0_5 = memref.cast %m0_5 : memref<2x4xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [2, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}0, 1, 1, 0],
  // CHECK-NEXT: [0, 1, 1, 0]]
  call @printMemrefF32(%u0_5) : (memref<*xf32>) -> ()
  %r1_0 = call @select(%c, %a) : (tensor<2x1xi1>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %m1_0 = bufferization.to_memref %r1_0 : memref<2x4xf32>
  %u1_0 = memref.cast %m1_0 : memref<2x4xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [2, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}1, 2, 3, {{-?nan}}],
  // CHECK-NEXT: [-1, -1, -1, -1]]
  call @printMemrefF32(%u1_0) : (memref<*xf32>) -> ()
  %r2:2 = call @max_min(%a, %b) : (tensor<2x4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  %m2_0 = bufferization.to_memref %r2#0 : memref<2x4xf32>
  %u2_0 = memref.cast %m2_0 : memref<2x4xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [2, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}2, 2, 3, {{-?nan}}],
  // CHECK-NEXT: [2, 2, 5, {{-?nan}}]]
  call @printMemrefF32(%u2_0) : (memref<*xf32>) -> ()
  %m2_1 = bufferization.to_memref %r2#1 : memref<2x4xf32>
  %u2_1 = memref.cast %m2_1 : memref<2x4xf32> to memref<*xf32>
  // CHECK: rank = 2 offset = 0 sizes = [2, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}1, 2, 2, {{-?nan}}],
  // CHECK-NEXT: [-1, 2, 2, {{-?nan}}]]
  call @printMemrefF32(%u2_1) : (memref<*xf32>) -> ()
  %r3_0 = call @compare_int(%i, %j) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %m3_0 = bufferization.to_memref %r3_0 : memref<4xi64>
  %u3_0 = memref.cast %m3_0 : memref<4xi64> to memref<*xi64>
  // CHECK: rank = 1 offset = 0 sizes = [4] strides = [1] data =
  // CHECK-NEXT: [-1, 4, -8, 3]
  call @printMemrefI64(%u3_0) : (memref<*xi64>) -> ()
  return
}
