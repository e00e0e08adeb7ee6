// RUN: kiln-opt %s -kiln-optimize -kiln-cpu-lowering \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s
// REQUIRES: mlir-cpu-runner

// Execution test: f16 and bf16 elementwise ops (values cast from and back
// to f32 inside the kernels for printing) against torch's results in the
// same dtype.

// Tests that f16 elementwise ops round like torch.float16: every body is
// computed in f32 and rounded once (torch's opmath), so add, mul, div, sqrt,
// exp, sigmoid and tanh all print torch's results.
func.func private @f16(%xf: tensor<6xf32>, %yf: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) {
  %x = kiln.cast %xf : tensor<6xf32> -> tensor<6xf16>
  %y = kiln.cast %yf : tensor<6xf32> -> tensor<6xf16>
  %a = kiln.abs %x : tensor<6xf16>
  %r0 = kiln.add %x, %y : tensor<6xf16>, tensor<6xf16>
  %o0 = kiln.cast %r0 : tensor<6xf16> -> tensor<6xf32>
  %r1 = kiln.mul %x, %y : tensor<6xf16>, tensor<6xf16>
  %o1 = kiln.cast %r1 : tensor<6xf16> -> tensor<6xf32>
  %r2 = kiln.div %x, %y : tensor<6xf16>, tensor<6xf16>
  %o2 = kiln.cast %r2 : tensor<6xf16> -> tensor<6xf32>
  %r3 = kiln.sqrt %a : tensor<6xf16>
  %o3 = kiln.cast %r3 : tensor<6xf16> -> tensor<6xf32>
  %r4 = kiln.exp %x : tensor<6xf16>
  %o4 = kiln.cast %r4 : tensor<6xf16> -> tensor<6xf32>
  %r5 = kiln.sigmoid %x : tensor<6xf16>
  %o5 = kiln.cast %r5 : tensor<6xf16> -> tensor<6xf32>
  %r6 = kiln.tanh %x : tensor<6xf16>
  %o6 = kiln.cast %r6 : tensor<6xf16> -> tensor<6xf32>
  return %o0, %o1, %o2, %o3, %o4, %o5, %o6 : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
}

// Tests that bf16 elementwise ops round like torch.bfloat16 (add, mul, div, sqrt
// exactly; exp, sigmoid, tanh within 1e-2).
func.func private @bf16(%xf: tensor<6xf32>, %yf: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) {
  %x = kiln.cast %xf : tensor<6xf32> -> tensor<6xbf16>
  %y = kiln.cast %yf : tensor<6xf32> -> tensor<6xbf16>
  %a = kiln.abs %x : tensor<6xbf16>
  %r0 = kiln.add %x, %y : tensor<6xbf16>, tensor<6xbf16>
  %o0 = kiln.cast %r0 : tensor<6xbf16> -> tensor<6xf32>
  %r1 = kiln.mul %x, %y : tensor<6xbf16>, tensor<6xbf16>
  %o1 = kiln.cast %r1 : tensor<6xbf16> -> tensor<6xf32>
  %r2 = kiln.div %x, %y : tensor<6xbf16>, tensor<6xbf16>
  %o2 = kiln.cast %r2 : tensor<6xbf16> -> tensor<6xf32>
  %r3 = kiln.sqrt %a : tensor<6xbf16>
  %o3 = kiln.cast %r3 : tensor<6xbf16> -> tensor<6xf32>
  %r4 = kiln.exp %x : tensor<6xbf16>
  %o4 = kiln.cast %r4 : tensor<6xbf16> -> tensor<6xf32>
  %r5 = kiln.sigmoid %x : tensor<6xbf16>
  %o5 = kiln.cast %r5 : tensor<6xbf16> -> tensor<6xf32>
  %r6 = kiln.tanh %x : tensor<6xbf16>
  %o6 = kiln.cast %r6 : tensor<6xbf16> -> tensor<6xf32>
  return %o0, %o1, %o2, %o3, %o4, %o5, %o6 : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
}

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %x = arith.constant dense<[-2.0, -0.5, 0.1, 1.0, 3.0, 10.0]> : tensor<6xf32>
  %y = arith.constant dense<[0.5, 0.25, -3.0, 2.0, 0.1, 1000.0]> : tensor<6xf32>
  %r0:7 = call @f16(%x, %y) : (tensor<6xf32>, tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>)
  %m0_0 = bufferization.to_memref %r0#0 : memref<6xf32>
  %u0_0 = memref.cast %m0_0 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [-1.5, -0.25, {{-2\.900[0-9]*}}, 3, {{3\.099[0-9]*}}, 1010]
  call @printMemrefF32(%u0_0) : (memref<*xf32>) -> ()
  %m0_1 = bufferization.to_memref %r0#1 : memref<6xf32>
  %u0_1 = memref.cast %m0_1 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [-1, -0.125, {{-0\.2998[0-9]*}}, 2, {{0\.2998[0-9]*}}, 10000]
  call @printMemrefF32(%u0_1) : (memref<*xf32>) -> ()
  %m0_2 = bufferization.to_memref %r0#2 : memref<6xf32>
  %u0_2 = memref.cast %m0_2 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [-4, -2, {{-0\.03332[0-9]*}}, 0.5, 30, {{0\.01000[0-9]*}}]
  call @printMemrefF32(%u0_2) : (memref<*xf32>) -> ()
  %m0_3 = bufferization.to_memref %r0#3 : memref<6xf32>
  %u0_3 = memref.cast %m0_3 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [{{1\.414[0-9]*}}, {{0\.7070[0-9]*}}, {{0\.3161[0-9]*}}, 1, {{1\.732[0-9]*}}, {{3\.162[0-9]*}}]
  call @printMemrefF32(%u0_3) : (memref<*xf32>) -> ()
  %m0_4 = bufferization.to_memref %r0#4 : memref<6xf32>
  %u0_4 = memref.cast %m0_4 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [{{0\.1353[0-9]*}}, {{0\.6064[0-9]*}}, {{1\.105[0-9]*}}, 2.71875, {{20\.07[0-9]*}}, 22032]
  call @printMemrefF32(%u0_4) : (memref<*xf32>) -> ()
  %m0_5 = bufferization.to_memref %r0#5 : memref<6xf32>
  %u0_5 = memref.cast %m0_5 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [{{0\.1192[0-9]*}}, {{0\.3774[0-9]*}}, {{0\.5249[0-9]*}}, {{0\.7309[0-9]*}}, {{0\.9526[0-9]*}}, 1]
  call @printMemrefF32(%u0_5) : (memref<*xf32>) -> ()
  %m0_6 = bufferization.to_memref %r0#6 : memref<6xf32>
  %u0_6 = memref.cast %m0_6 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [{{-0\.9638[0-9]*}}, {{-0\.4621[0-9]*}}, {{0\.09967[0-9]*}}, {{0\.7617[0-9]*}}, {{0\.9951[0-9]*}}, 1]
  call @printMemrefF32(%u0_6) : (memref<*xf32>) -> ()
  %r1:7 = call @bf16(%x, %y) : (tensor<6xf32>, tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>)
  %m1_0 = bufferization.to_memref %r1#0 : memref<6xf32>
  %u1_0 = memref.cast %m1_0 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [-1.5, -0.25, -2.90625, 3, 3.09375, 1008]
  call @printMemrefF32(%u1_0) : (memref<*xf32>) -> ()
  %m1_1 = bufferization.to_memref %r1#1 : memref<6xf32>
  %u1_1 = memref.cast %m1_1 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [-1, -0.125, {{-0\.3007[0-9]*}}, 2, {{0\.3007[0-9]*}}, 9984]
  call @printMemrefF32(%u1_1) : (memref<*xf32>) -> ()
  %m1_2 = bufferization.to_memref %r1#2 : memref<6xf32>
  %u1_2 = memref.cast %m1_2 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [-4, -2, {{-0\.03344[0-9]*}}, 0.5, 30, {{0\.01000[0-9]*}}]
  call @printMemrefF32(%u1_2) : (memref<*xf32>) -> ()
  %m1_3 = bufferization.to_memref %r1#3 : memref<6xf32>
  %u1_3 = memref.cast %m1_3 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [{{1\.414[0-9]*}}, {{0\.7070[0-9]*}}, {{0\.3164[0-9]*}}, 1, {{1\.734[0-9]*}}, 3.15625]
  call @printMemrefF32(%u1_3) : (memref<*xf32>) -> ()
  %m1_4 = bufferization.to_memref %r1#4 : memref<6xf32>
  %u1_4 = memref.cast %m1_4 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [{{0\.1357[0-9]*}}, {{0\.6054[0-9]*}}, {{1\.101[0-9]*}}, 2.71875, 20.125, 22016]
  call @printMemrefF32(%u1_4) : (memref<*xf32>) -> ()
  %m1_5 = bufferization.to_memref %r1#5 : memref<6xf32>
  %u1_5 = memref.cast %m1_5 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [{{0\.1191[0-9]*}}, {{0\.3769[0-9]*}}, {{0\.5234[0-9]*}}, {{0\.7304[0-9]*}}, {{0\.9531[0-9]*}}, 1]
  call @printMemrefF32(%u1_5) : (memref<*xf32>) -> ()
  %m1_6 = bufferization.to_memref %r1#6 : memref<6xf32>
  %u1_6 = memref.cast %m1_6 : memref<6xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [6] strides = [1] data =
  // CHECK-NEXT: [{{-0\.9648[0-9]*}}, {{-0\.4628[0-9]*}}, {{0\.09960[0-9]*}}, {{0\.7617[0-9]*}}, {{0\.9960[0-9]*}}, 1]
  call @printMemrefF32(%u1_6) : (memref<*xf32>) -> ()
  return
}
