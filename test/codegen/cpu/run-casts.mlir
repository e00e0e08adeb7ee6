// RUN: kiln-opt %s -kiln-optimize -kiln-cpu-lowering \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s
// REQUIRES: mlir-cpu-runner

// Execution test: kiln.cast between f32, f16, f64, i64, i32 and i1 follows
// Tensor.to(dtype).

// Tests that f32 → i64 truncates toward zero, and i64 → f32 rounds to nearest
// (16777217 is not representable: it comes back from f32 as 16777216).
func.func private @float_int(%x: tensor<6xf32>, %i: tensor<6xi64>) -> (tensor<6xi64>, tensor<6xf32>, tensor<6xi64>) {
  %0 = kiln.cast %x : tensor<6xf32> -> tensor<6xi64>
  %1 = kiln.cast %i : tensor<6xi64> -> tensor<6xf32>
  %2 = kiln.cast %1 : tensor<6xf32> -> tensor<6xi64>
  return %0, %1, %2 : tensor<6xi64>, tensor<6xf32>, tensor<6xi64>
}

// Tests that a cast to i1 is x != 0 (-0.0 is false, NaN is true, as bool(nan) in
// torch) for floats and integers, and that i1 → f32 / i64 gives 0 or 1.
func.func private @to_bool(%x: tensor<6xf32>, %i: tensor<6xi64>) -> (tensor<6xf32>, tensor<6xi64>) {
  %b = kiln.cast %x : tensor<6xf32> -> tensor<6xi1>
  %0 = kiln.cast %b : tensor<6xi1> -> tensor<6xf32>
  %c = kiln.cast %i : tensor<6xi64> -> tensor<6xi1>
  %1 = kiln.cast %c : tensor<6xi1> -> tensor<6xi64>
  return %0, %1 : tensor<6xf32>, tensor<6xi64>
}

// Tests that narrowing and widening float casts round like torch (f32 → f16 → f32
// keeps 11 bits, f32 → f64 is exact) and i64 → i32 wraps.
func.func private @widths(%x: tensor<6xf32>, %i: tensor<6xi64>) -> (tensor<6xf32>, tensor<6xf64>, tensor<6xi32>) {
  %h = kiln.cast %x : tensor<6xf32> -> tensor<6xf16>
  %0 = kiln.cast %h : tensor<6xf16> -> tensor<6xf32>
  %1 = kiln.cast %x : tensor<6xf32> -> tensor<6xf64>
  %2 = kiln.cast %i : tensor<6xi64> -> tensor<6xi32>
  return %0, %1, %2 : tensor<6xf32>, tensor<6xf64>, tensor<6xi32>
}

func.func private @printMemrefF32(memref<*xf32>)
func.func private @printMemrefF64(memref<*xf64>)
func.func private @printMemrefI32(memref<*xi32>)
func.func private @printMemrefI64(memref<*xi64>)

func.func @main() {
  %x = arith.constant dense<[-2.75, -0.5, -0.0, 0.1, 3.99, 1.0e10]> : tensor<6xf32>
  %xb = arith.constant dense<[0.0, -0.0, 0.5, 0x7FC00000, -3.0, 1.0e-30]> : tensor<6xf32>
  %i = arith.constant dense<[-3, 0, 16777217, 7, 4294967297, -1]> : tensor<6xi64>
  %r0:3 = call @float_int(%x, %i) : (tensor<6xf32>, tensor<6xi64>) -> (tensor<6xi64>, tensor<6xf32>, tensor<6xi64>)
  %m0_0 = bufferization.to_memref %r0#0 : memref<6xi64>
  %u0_0 = memref.cast %m0_0 : memref<6xi64> to memref<*xi64>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [-2, 0, 0, 0, 3, 10000000000]
  call @printMemrefI64(%u0_0) : (memref<*xi64>) -> ()
  %m0_1 = bufferization.to_memref %r0#1 : memref<6xf32>
  %u0_1 = memref.cast %m0_1 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [-3, 0, 1.67772e+07, 7, 4.29497e+09, -1]
  call @printMemrefF32(%u0_1) : (memref<*xf32>) -> ()
  %m0_2 = bufferization.to_memref %r0#2 : memref<6xi64>
  %u0_2 = memref.cast %m0_2 : memref<6xi64> to memref<*xi64>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [-3, 0, 16777216, 7, 4294967296, -1]
  call @printMemrefI64(%u0_2) : (memref<*xi64>) -> ()
  %r1:2 = call @to_bool(%xb, %i) : (tensor<6xf32>, tensor<6xi64>) -> (tensor<6xf32>, tensor<6xi64>)
  %m1_0 = bufferization.to_memref %r1#0 : memref<6xf32>
  %u1_0 = memref.cast %m1_0 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [0, 0, 1, 1, 1, 1]
  call @printMemrefF32(%u1_0) : (memref<*xf32>) -> ()
  %m1_1 = bufferization.to_memref %r1#1 : memref<6xi64>
  %u1_1 = memref.cast %m1_1 : memref<6xi64> to memref<*xi64>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [1, 0, 1, 1, 1, 1]
  call @printMemrefI64(%u1_1) : (memref<*xi64>) -> ()
  %r2:3 = call @widths(%x, %i) : (tensor<6xf32>, tensor<6xi64>) -> (tensor<6xf32>, tensor<6xf64>, tensor<6xi32>)
  %m2_0 = bufferization.to_memref %r2#0 : memref<6xf32>
  %u2_0 = memref.cast %m2_0 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [-2.75, -0.5, -0, {{0\.09997[0-9]*}}, {{3\.990[0-9]*}}, inf]
  call @printMemrefF32(%u2_0) : (memref<*xf32>) -> ()
  %m2_1 = bufferization.to_memref %r2#1 : memref<6xf64>
  %u2_1 = memref.cast %m2_1 : memref<6xf64> to memref<*xf64>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [-2.75, -0.5, -0, {{0\.1[0-9]*}}, {{3\.99[0-9]*}}, 1e+10]
  call @printMemrefF64(%u2_1) : (memref<*xf64>) -> ()
  %m2_2 = bufferization.to_memref %r2#2 : memref<6xi32>
  %u2_2 = memref.cast %m2_2 : memref<6xi32> to memref<*xi32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [-3, 0, 16777217, 7, 1, -1]
  call @printMemrefI32(%u2_2) : (memref<*xi32>) -> ()
  return
}
