// RUN: kiln-opt %s -kiln-optimize -kiln-cpu-lowering \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s
// REQUIRES: mlir-cpu-runner

// Execution test: activations after kiln-decompose and the polynomial math
// of kiln-cpu-approximate-math agree with float64 references to 4 significant
// digits on x = [-3, -1, -0.5, 0, 0.5, 1, 3].

// Tests that relu clamps negatives to 0.
func.func private @relu(%x: tensor<7xf32>) -> tensor<7xf32> {
  %0 = kiln.relu %x : tensor<7xf32>
  return %0 : tensor<7xf32>
}

// Tests that sigmoid is 1/(1+e^-x).
func.func private @sigmoid(%x: tensor<7xf32>) -> tensor<7xf32> {
  %0 = kiln.sigmoid %x : tensor<7xf32>
  return %0 : tensor<7xf32>
}

// Tests that tanh (polynomial approximation) is accurate and odd.
func.func private @tanh(%x: tensor<7xf32>) -> tensor<7xf32> {
  %0 = kiln.tanh %x : tensor<7xf32>
  return %0 : tensor<7xf32>
}

// Tests that the default gelu is the erf form x/2 (1 + erf(x/sqrt 2)).
func.func private @gelu(%x: tensor<7xf32>) -> tensor<7xf32> {
  %0 = kiln.gelu %x : tensor<7xf32>
  return %0 : tensor<7xf32>
}

// Tests that gelu with approximate = "tanh" uses the tanh form.
func.func private @gelu_tanh(%x: tensor<7xf32>) -> tensor<7xf32> {
  %0 = kiln.gelu %x {approximate = "tanh"} : tensor<7xf32>
  return %0 : tensor<7xf32>
}

// Tests that silu is x * sigmoid(x).
func.func private @silu(%x: tensor<7xf32>) -> tensor<7xf32> {
  %0 = kiln.silu %x : tensor<7xf32>
  return %0 : tensor<7xf32>
}

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %x = arith.constant dense<[-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0]> : tensor<7xf32>
  %r_relu = call @relu(%x) : (tensor<7xf32>) -> tensor<7xf32>
  %m_relu = bufferization.to_memref %r_relu : memref<7xf32>
  %u_relu = memref.cast %m_relu : memref<7xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [7] strides = [1] data =
  // CHECK-NEXT: [0, 0, 0, 0, 0.5, 1, 3]
  call @printMemrefF32(%u_relu) : (memref<*xf32>) -> ()
  %r_sigmoid = call @sigmoid(%x) : (tensor<7xf32>) -> tensor<7xf32>
  %m_sigmoid = bufferization.to_memref %r_sigmoid : memref<7xf32>
  %u_sigmoid = memref.cast %m_sigmoid : memref<7xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [7] strides = [1] data =
  // CHECK-NEXT: [{{0\.04742[0-9]*}}, {{0\.2689[0-9]*}}, {{0\.3775[0-9]*}}, 0.5, {{0\.6224[0-9]*}}, {{0\.7310[0-9]*}}, {{0\.9525[0-9]*}}]
  call @printMemrefF32(%u_sigmoid) : (memref<*xf32>) -> ()
  %r_tanh = call @tanh(%x) : (tensor<7xf32>) -> tensor<7xf32>
  %m_tanh = bufferization.to_memref %r_tanh : memref<7xf32>
  %u_tanh = memref.cast %m_tanh : memref<7xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [7] strides = [1] data =
  // CHECK-NEXT: [{{-0\.9950[0-9]*}}, {{-0\.7615[0-9]*}}, {{-0\.4621[0-9]*}}, 0, {{0\.4621[0-9]*}}, {{0\.7615[0-9]*}}, {{0\.9950[0-9]*}}]
  call @printMemrefF32(%u_tanh) : (memref<*xf32>) -> ()
  %r_gelu = call @gelu(%x) : (tensor<7xf32>) -> tensor<7xf32>
  %m_gelu = bufferization.to_memref %r_gelu : memref<7xf32>
  %u_gelu = memref.cast %m_gelu : memref<7xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [7] strides = [1] data =
  // CHECK-NEXT: [{{-0\.004049[0-9]*}}, {{-0\.1586[0-9]*}}, {{-0\.1542[0-9]*}}, 0, {{0\.3457[0-9]*}}, {{0\.8413[0-9]*}}, {{2\.995[0-9]*}}]
  call @printMemrefF32(%u_gelu) : (memref<*xf32>) -> ()
  %r_gelu_tanh = call @gelu_tanh(%x) : (tensor<7xf32>) -> tensor<7xf32>
  %m_gelu_tanh = bufferization.to_memref %r_gelu_tanh : memref<7xf32>
  %u_gelu_tanh = memref.cast %m_gelu_tanh : memref<7xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [7] strides = [1] data =
  // CHECK-NEXT: [{{-0\.003637[0-9]*}}, {{-0\.1588[0-9]*}}, {{-0\.1542[0-9]*}}, 0, {{0\.3457[0-9]*}}, {{0\.8411[0-9]*}}, {{2\.996[0-9]*}}]
  call @printMemrefF32(%u_gelu_tanh) : (memref<*xf32>) -> ()
  %r_silu = call @silu(%x) : (tensor<7xf32>) -> tensor<7xf32>
  %m_silu = bufferization.to_memref %r_silu : memref<7xf32>
  %u_silu = memref.cast %m_silu : memref<7xf32> to memref<*xf32>
  // CHECK: rank = 1 offset = 0 sizes = [7] strides = [1] data =
  // CHECK-NEXT: [{{-0\.1422[0-9]*}}, {{-0\.2689[0-9]*}}, {{-0\.1887[0-9]*}}, 0, {{0\.3112[0-9]*}}, {{0\.7310[0-9]*}}, {{2\.857[0-9]*}}]
  call @printMemrefF32(%u_silu) : (memref<*xf32>) -> ()
  return
}
