// RUN: kiln-opt %s -kiln-optimize -kiln-cpu-lowering \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s
// REQUIRES: mlir-cpu-runner

// Execution test: kiln.floor_div and kiln.fmod give eager torch's values
// (expected values printed by torch 2.11 on CPU).

// Tests float floor division with torch's fmod-based rounding (1 // 0.1 is
// 9, not floor(1 / 0.1) = 10), the sign of the divisor for negatives, a
// zero divisor (inf) and an infinite one (0); fmod keeps the dividend's sign.
func.func private @float_div(%a: tensor<6xf32>, %b: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>) {
  %0 = kiln.floor_div %a, %b : tensor<6xf32>, tensor<6xf32>
  %1 = kiln.fmod %a, %b : tensor<6xf32>, tensor<6xf32>
  return %0, %1 : tensor<6xf32>, tensor<6xf32>
}

// Tests integer floor division and fmod on all sign combinations, INT_MIN
// by -1 (wraps, no trap) and a scalar divisor broadcast.
func.func private @int_div(%a: tensor<6xi64>, %b: tensor<6xi64>, %s: tensor<i64>) -> (tensor<6xi64>, tensor<6xi64>, tensor<6xi64>) {
  %0 = kiln.floor_div %a, %b : tensor<6xi64>, tensor<6xi64>
  %1 = kiln.fmod %a, %b : tensor<6xi64>, tensor<6xi64>
  %2 = kiln.floor_div %a, %s : tensor<6xi64>, tensor<i64>
  return %0, %1, %2 : tensor<6xi64>, tensor<6xi64>, tensor<6xi64>
}

func.func private @printMemrefF32(memref<*xf32>)
func.func private @printMemrefI64(memref<*xi64>)

func.func @main() {
  %a = arith.constant dense<[1.0, -7.0, 7.0, -0.5, 5.5, 3.0]> : tensor<6xf32>
  %b = arith.constant dense<[0.1, 2.0, -2.0, 2.0, 0.0, 0x7F800000]> : tensor<6xf32>
  %f:2 = call @float_div(%a, %b) : (tensor<6xf32>, tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>)
  %m0 = bufferization.to_memref %f#0 : memref<6xf32>
  %u0 = memref.cast %m0 : memref<6xf32> to memref<*xf32>
  // CHECK: [9, -4, -4, -1, inf, 0]
  call @printMemrefF32(%u0) : (memref<*xf32>) -> ()
  %m1 = bufferization.to_memref %f#1 : memref<6xf32>
  %u1 = memref.cast %m1 : memref<6xf32> to memref<*xf32>
  // CHECK: [0.1, -1, 1, -0.5, {{-?}}nan, 3]
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %i = arith.constant dense<[7, -7, 7, -7, -9223372036854775808, 5]> : tensor<6xi64>
  %j = arith.constant dense<[2, 2, -2, -2, -1, 3]> : tensor<6xi64>
  %s = arith.constant dense<-4> : tensor<i64>
  %r:3 = call @int_div(%i, %j, %s) : (tensor<6xi64>, tensor<6xi64>, tensor<i64>) -> (tensor<6xi64>, tensor<6xi64>, tensor<6xi64>)
  %m2 = bufferization.to_memref %r#0 : memref<6xi64>
  %u2 = memref.cast %m2 : memref<6xi64> to memref<*xi64>
  // CHECK: [3, -4, -4, 3, -9223372036854775808, 1]
  call @printMemrefI64(%u2) : (memref<*xi64>) -> ()
  %m3 = bufferization.to_memref %r#1 : memref<6xi64>
  %u3 = memref.cast %m3 : memref<6xi64> to memref<*xi64>
  // CHECK: [1, -1, 1, -1, 0, 2]
  call @printMemrefI64(%u3) : (memref<*xi64>) -> ()
  %m4 = bufferization.to_memref %r#2 : memref<6xi64>
  %u4 = memref.cast %m4 : memref<6xi64> to memref<*xi64>
  // CHECK: [-2, 1, -2, 1, 2305843009213693952, -2]
  call @printMemrefI64(%u4) : (memref<*xi64>) -> ()
  return
}
