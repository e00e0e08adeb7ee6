// RUN: kiln-opt %s -kiln-optimize -kiln-cpu-lowering \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s
// REQUIRES: mlir-cpu-runner

// Execution test: i64 elementwise ops and reductions (integer bodies:
// addi/muli/maxsi/minsi, integer reduction identities).

// Tests that i64 add, sub and mul broadcast and are exact, and that neg, abs, relu,
// maximum and minimum work on signed integers.
func.func private @arith(%a: tensor<2x4xi64>, %b: tensor<4xi64>) -> (tensor<2x4xi64>, tensor<2x4xi64>, tensor<2x4xi64>, tensor<2x4xi64>, tensor<2x4xi64>) {
  %0 = kiln.add %a, %b : tensor<2x4xi64>, tensor<4xi64>
  %1 = kiln.sub %a, %b : tensor<2x4xi64>, tensor<4xi64>
  %2 = kiln.mul %a, %b : tensor<2x4xi64>, tensor<4xi64>
  %n = kiln.neg %a : tensor<2x4xi64>
  %3 = kiln.abs %n : tensor<2x4xi64>
  %r = kiln.relu %a : tensor<2x4xi64>
  %mx = kiln.maximum %a, %b : tensor<2x4xi64>, tensor<4xi64>
  %mn = kiln.minimum %a, %b : tensor<2x4xi64>, tensor<4xi64>
  %4 = kiln.sub %mx, %mn : tensor<2x4xi64>, tensor<2x4xi64>
  %5 = kiln.add %4, %r : tensor<2x4xi64>, tensor<2x4xi64>
  return %0, %1, %2, %3, %5 : tensor<2x4xi64>, tensor<2x4xi64>, tensor<2x4xi64>, tensor<2x4xi64>, tensor<2x4xi64>
}

// Tests that integer reductions: sum starts from 0 and max from the smallest i64 (rows
// of negative numbers keep their own maximum).
func.func private @reduce(%a: tensor<2x4xi64>, %n: tensor<2x3xi64>) -> (tensor<2xi64>, tensor<1x4xi64>, tensor<2xi64>, tensor<i64>) {
  %0 = kiln.sum %a {dims = array<i64: 1>} : tensor<2x4xi64> -> tensor<2xi64>
  %1 = kiln.sum %a {dims = array<i64: 0>, keepdim = true} : tensor<2x4xi64> -> tensor<1x4xi64>
  %2 = kiln.max %n {dims = array<i64: 1>} : tensor<2x3xi64> -> tensor<2xi64>
  %3 = kiln.max %n {dims = array<i64: 0, 1>} : tensor<2x3xi64> -> tensor<i64>
  return %0, %1, %2, %3 : tensor<2xi64>, tensor<1x4xi64>, tensor<2xi64>, tensor<i64>
}

func.func private @printMemrefI64(memref<*xi64>)

func.func @main() {
  %a = arith.constant dense<[[5, -3, 0, 7], [-8, 2, -1, 4]]> : tensor<2x4xi64>
  %b = arith.constant dense<[2, -2, 3, -1]> : tensor<4xi64>
  %n = arith.constant dense<[[-9, -4, -7], [-100, -50, -75]]> : tensor<2x3xi64>
  %r0:5 = call @arith(%a, %b) : (tensor<2x4xi64>, tensor<4xi64>) -> (tensor<2x4xi64>, tensor<2x4xi64>, tensor<2x4xi64>, tensor<2x4xi64>, tensor<2x4xi64>)
  %m0_0 = bufferization.to_memref %r0#0 : memref<2x4xi64>
  %u0_0 = memref.cast %m0_0 : memref<2x4xi64> to memref<*xi64>
  // CHECK: rank = 2 offset = 0 sizes = [2, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}7, -5, 3, 6],
  // CHECK-NEXT: [-6, 0, 2, 3]]
  call @printMemrefI64(%u0_0) : (memref<*xi64>) -> ()
  %m0_1 = bufferization.to_memref %r0#1 : memref<2x4xi64>
  %u0_1 = memref.cast %m0_1 : memref<2x4xi64> to memref<*xi64>
  // CHECK: rank = 2 offset = 0 sizes = [2, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}3, -1, -3, 8],
  // CHECK-NEXT: [-10, 4, -4, 5]]
  call @printMemrefI64(%u0_1) : (memref<*xi64>) -> ()
  %m0_2 = bufferization.to_memref %r0#2 : memref<2x4xi64>
  %u0_2 = memref.cast %m0_2 : memref<2x4xi64> to memref<*xi64>
  // CHECK: rank = 2 offset = 0 sizes = [2, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}10, 6, 0, -7],
  // CHECK-NEXT: [-16, -4, -3, -4]]
  call @printMemrefI64(%u0_2) : (memref<*xi64>) -> ()
  %m0_3 = bufferization.to_memref %r0#3 : memref<2x4xi64>
  %u0_3 = memref.cast %m0_3 : memref<2x4xi64> to memref<*xi64>
  // CHECK: rank = 2 offset = 0 sizes = [2, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}5, 3, 0, 7],
  // CHECK-NEXT: [8, 2, 1, 4]]
  call @printMemrefI64(%u0_3) : (memref<*xi64>) -> ()
  %m0_4 = bufferization.to_memref %r0#4 : memref<2x4xi64>
  %u0_4 = memref.cast %m0_4 : memref<2x4xi64> to memref<*xi64>
  // CHECK: rank = 2 offset = 0 sizes = [2, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}8, 1, 3, 15],
  // CHECK-NEXT: [10, 6, 4, 9]]
  call @printMemrefI64(%u0_4) : (memref<*xi64>) -> ()
  %r1:4 = call @reduce(%a, %n) : (tensor<2x4xi64>, tensor<2x3xi64>) -> (tensor<2xi64>, tensor<1x4xi64>, tensor<2xi64>, tensor<i64>)
  %m1_0 = bufferization.to_memref %r1#0 : memref<2xi64>
  %u1_0 = memref.cast %m1_0 : memref<2xi64> to memref<*xi64>
  // CHECK: rank = 1 offset = 0 sizes = [2] strides = [1] data =
  // CHECK-NEXT: [9, -3]
  call @printMemrefI64(%u1_0) : (memref<*xi64>) -> ()
  %m1_1 = bufferization.to_memref %r1#1 : memref<1x4xi64>
  %u1_1 = memref.cast %m1_1 : memref<1x4xi64> to memref<*xi64>
  // CHECK: rank = 2 offset = 0 sizes = [1, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}-3, -1, -1, 11]]
  call @printMemrefI64(%u1_1) : (memref<*xi64>) -> ()
  %m1_2 = bufferization.to_memref %r1#2 : memref<2xi64>
  %u1_2 = memref.cast %m1_2 : memref<2xi64> to memref<*xi64>
  // CHECK: rank = 1 offset = 0 sizes = [2] strides = [1] data =
  // CHECK-NEXT: [-4, -50]
  call @printMemrefI64(%u1_2) : (memref<*xi64>) -> ()
  %m1_3 = bufferization.to_memref %r1#3 : memref<i64>
  %u1_3 = memref.cast %m1_3 : memref<i64> to memref<*xi64>
  // CHECK: rank = 0 offset = 0 sizes = [] strides = [] data =
  // CHECK-NEXT: [-4]
  call @printMemrefI64(%u1_3) : (memref<*xi64>) -> ()
  return
}
