// RUN: kiln-opt %s -kiln-optimize -kiln-cpu-lowering \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s
// REQUIRES: mlir-cpu-runner

// Execution test: f32 math ops (polynomial approximations and libm-free
// lowerings) against float64 references to 4 significant digits, including
// the special values torch documents.

// Tests that exp, log, sqrt and rsqrt agree with the reference on positive inputs
// (exp and log through polynomial approximations, rsqrt as 1/sqrt), and
// that exp overflows to inf and underflows to 0.
func.func private @exp(%x: tensor<6xf32>) -> tensor<6xf32> {
  %0 = kiln.exp %x : tensor<6xf32>
  return %0 : tensor<6xf32>
}

func.func private @log(%x: tensor<6xf32>) -> tensor<6xf32> {
  %0 = kiln.log %x : tensor<6xf32>
  return %0 : tensor<6xf32>
}

func.func private @sqrt(%x: tensor<6xf32>) -> tensor<6xf32> {
  %0 = kiln.sqrt %x : tensor<6xf32>
  return %0 : tensor<6xf32>
}

func.func private @rsqrt(%x: tensor<6xf32>) -> tensor<6xf32> {
  %0 = kiln.rsqrt %x : tensor<6xf32>
  return %0 : tensor<6xf32>
}

// Tests that erf, abs and neg are right on both sides of zero.
func.func private @erf(%x: tensor<6xf32>) -> tensor<6xf32> {
  %0 = kiln.erf %x : tensor<6xf32>
  return %0 : tensor<6xf32>
}

func.func private @abs(%x: tensor<6xf32>) -> tensor<6xf32> {
  %0 = kiln.abs %x : tensor<6xf32>
  return %0 : tensor<6xf32>
}

func.func private @neg(%x: tensor<6xf32>) -> tensor<6xf32> {
  %0 = kiln.neg %x : tensor<6xf32>
  return %0 : tensor<6xf32>
}

// Tests that the special values torch documents hold: log(0) = -inf, log(-1) = NaN,
// sqrt(-1) = NaN, rsqrt(0) = inf, rsqrt(-0.0) = -inf, log(inf) = inf.
func.func private @special(%x: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) {
  %0 = kiln.log %x : tensor<6xf32>
  %1 = kiln.sqrt %x : tensor<6xf32>
  %2 = kiln.rsqrt %x : tensor<6xf32>
  return %0, %1, %2 : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
}

// Tests that pow by a constant 2 or 0.5 (strength-reduced to x*x and sqrt) and by a
// tensor exponent agree with x ** e.
func.func private @pow(%x: tensor<6xf32>, %e: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) {
  %two = kiln.constant dense<2.0> : tensor<f32>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %0 = kiln.pow %x, %two : tensor<6xf32>, tensor<f32>
  %1 = kiln.pow %x, %half : tensor<6xf32>, tensor<f32>
  %2 = kiln.pow %x, %e : tensor<6xf32>, tensor<6xf32>
  return %0, %1, %2 : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
}

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %pos = arith.constant dense<[0.25, 0.5, 1.0, 2.0, 4.0, 9.0]> : tensor<6xf32>
  %sgn = arith.constant dense<[-2.0, -0.5, 0.0, 0.5, 1.0, 2.0]> : tensor<6xf32>
  %spec = arith.constant dense<[0.0, -1.0, -0.0, 0x7F800000, 1.0e-30, 100.0]> : tensor<6xf32>
  %big = arith.constant dense<[-200.0, -1.0, 0.0, 1.0, 10.0, 200.0]> : tensor<6xf32>
  %ex = arith.constant dense<[3.0, -1.0, 0.5, 1.5, 0.0, -0.5]> : tensor<6xf32>
  %r0_0 = call @exp(%pos) : (tensor<6xf32>) -> tensor<6xf32>
  %m0_0 = bufferization.to_memref %r0_0 : memref<6xf32>
  %u0_0 = memref.cast %m0_0 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [{{1\.284[0-9]*}}, {{1\.648[0-9]*}}, {{2\.718[0-9]*}}, {{7\.389[0-9]*}}, {{54\.59[0-9]*}}, {{8103(\.[0-9]*)?}}]
  call @printMemrefF32(%u0_0) : (memref<*xf32>) -> ()
  %r1_0 = call @exp(%big) : (tensor<6xf32>) -> tensor<6xf32>
  %m1_0 = bufferization.to_memref %r1_0 : memref<6xf32>
  %u1_0 = memref.cast %m1_0 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [0, {{0\.3678[0-9]*}}, 1, {{2\.718[0-9]*}}, {{22026(\.[0-9]*)?}}, inf]
  call @printMemrefF32(%u1_0) : (memref<*xf32>) -> ()
  %r2_0 = call @log(%pos) : (tensor<6xf32>) -> tensor<6xf32>
  %m2_0 = bufferization.to_memref %r2_0 : memref<6xf32>
  %u2_0 = memref.cast %m2_0 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [{{-1\.386[0-9]*}}, {{-0\.6931[0-9]*}}, 0, {{0\.6931[0-9]*}}, {{1\.386[0-9]*}}, {{2\.197[0-9]*}}]
  call @printMemrefF32(%u2_0) : (memref<*xf32>) -> ()
  %r3_0 = call @sqrt(%pos) : (tensor<6xf32>) -> tensor<6xf32>
  %m3_0 = bufferization.to_memref %r3_0 : memref<6xf32>
  %u3_0 = memref.cast %m3_0 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [0.5, {{0\.7071[0-9]*}}, 1, {{1\.414[0-9]*}}, 2, 3]
  call @printMemrefF32(%u3_0) : (memref<*xf32>) -> ()
  %r4_0 = call @rsqrt(%pos) : (tensor<6xf32>) -> tensor<6xf32>
  %m4_0 = bufferization.to_memref %r4_0 : memref<6xf32>
  %u4_0 = memref.cast %m4_0 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [2, {{1\.414[0-9]*}}, 1, {{0\.7071[0-9]*}}, 0.5, {{0\.3333[0-9]*}}]
  call @printMemrefF32(%u4_0) : (memref<*xf32>) -> ()
  %r5_0 = call @erf(%sgn) : (tensor<6xf32>) -> tensor<6xf32>
  %m5_0 = bufferization.to_memref %r5_0 : memref<6xf32>
  %u5_0 = memref.cast %m5_0 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [{{-0\.9953[0-9]*}}, {{-0\.5205[0-9]*}}, 0, {{0\.5205[0-9]*}}, {{0\.8427[0-9]*}}, {{0\.9953[0-9]*}}]
  call @printMemrefF32(%u5_0) : (memref<*xf32>) -> ()
  %r6_0 = call @abs(%sgn) : (tensor<6xf32>) -> tensor<6xf32>
  %m6_0 = bufferization.to_memref %r6_0 : memref<6xf32>
  %u6_0 = memref.cast %m6_0 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [2, 0.5, 0, 0.5, 1, 2]
  call @printMemrefF32(%u6_0) : (memref<*xf32>) -> ()
  %r7_0 = call @neg(%sgn) : (tensor<6xf32>) -> tensor<6xf32>
  %m7_0 = bufferization.to_memref %r7_0 : memref<6xf32>
  %u7_0 = memref.cast %m7_0 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [2, 0.5, -0, -0.5, -1, -2]
  call @printMemrefF32(%u7_0) : (memref<*xf32>) -> ()
  %r8:3 = call @special(%spec) : (tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>)
  %m8_0 = bufferization.to_memref %r8#0 : memref<6xf32>
  %u8_0 = memref.cast %m8_0 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [-inf, {{-?nan}}, -inf, inf, {{-69\.07[0-9]*}}, {{4\.605[0-9]*}}]
  call @printMemrefF32(%u8_0) : (memref<*xf32>) -> ()
  %m8_1 = bufferization.to_memref %r8#1 : memref<6xf32>
  %u8_1 = memref.cast %m8_1 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [0, {{-?nan}}, -0, inf, 1e-15, 10]
  call @printMemrefF32(%u8_1) : (memref<*xf32>) -> ()
  %m8_2 = bufferization.to_memref %r8#2 : memref<6xf32>
  %u8_2 = memref.cast %m8_2 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [inf, {{-?nan}}, -inf, 0, 1e+15, 0.1]
  call @printMemrefF32(%u8_2) : (memref<*xf32>) -> ()
  %r9:3 = call @pow(%pos, %ex) : (tensor<6xf32>, tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>)
  %m9_0 = bufferization.to_memref %r9#0 : memref<6xf32>
  %u9_0 = memref.cast %m9_0 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [0.0625, 0.25, 1, 4, 16, 81]
  call @printMemrefF32(%u9_0) : (memref<*xf32>) -> ()
  %m9_1 = bufferization.to_memref %r9#1 : memref<6xf32>
  %u9_1 = memref.cast %m9_1 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [0.5, {{0\.7071[0-9]*}}, 1, {{1\.414[0-9]*}}, 2, 3]
  call @printMemrefF32(%u9_1) : (memref<*xf32>) -> ()
  %m9_2 = bufferization.to_memref %r9#2 : memref<6xf32>
  %u9_2 = memref.cast %m9_2 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [0.015625, 2, 1, {{2\.828[0-9]*}}, 1, {{0\.3333[0-9]*}}]
  call @printMemrefF32(%u9_2) : (memref<*xf32>) -> ()
  return
}
