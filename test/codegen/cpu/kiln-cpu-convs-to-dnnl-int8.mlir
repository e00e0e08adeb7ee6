// RUN: kiln-opt %s -split-input-file -kiln-cpu-convs-to-dnnl | FileCheck %s
// RUN: kiln-opt %s -split-input-file "-kiln-cpu-convs-to-dnnl=quantized-only=true" | FileCheck %s --check-prefix=QONLY

// kiln-cpu-convs-to-dnnl on statically quantized convolutions (kiln.quant's
// capture): the q/dq around a kiln.conv2d become one call of oneDNN's u8 x s8
// convolution (runtime/cpu/DnnlQConv.cpp).

// Tests the int8 call: the float input itself (NHWC copy), the i32 weight
// values, the weight scales [F, 1, 1, 1] multiplied into the epilogue's
// scale (the bias stays the shift, the ReLU a post-op), and the input's scale
// and zero point as the last two operands; no q/dq op left.
// CHECK: func.func private @kiln_dnnl_qconv2d_u8s8(memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>, memref<?x?x?x?xi32, strided<[?, ?, ?, ?], offset: ?>>, memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, i64)
// CHECK-LABEL: func.func @qconv_bias_relu
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x6x6xf32>, %[[W:.*]]: tensor<4x8x3x3xi32>, %[[S:.*]]: tensor<4x1x1x1xf32>, %[[B:.*]]: tensor<4x1x1xf32>)
// CHECK: %[[SR:.*]] = kiln.reshape %[[S]] : tensor<4x1x1x1xf32> -> tensor<4xf32>
// CHECK: %[[SC:.*]] = kiln.mul %{{.*}}, %[[SR]] : tensor<4xf32>, tensor<4xf32>
// CHECK: linalg.generic {{.*}} ins(%[[X]] : tensor<1x8x6x6xf32>)
// CHECK: %[[WM:.*]] = bufferization.to_memref %[[W]] read_only
// CHECK-DAG: %[[XS:.*]] = arith.constant 2.500000e-01 : f32
// CHECK-DAG: %[[XZ:.*]] = arith.constant 7 : i64
// CHECK-DAG: %[[RELU:.*]] = arith.constant 1 : i64
// CHECK: call @kiln_dnnl_qconv2d_u8s8(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[RELU]], %[[XS]], %[[XZ]])
// CHECK-NOT: kiln.quantize_static
// CHECK-NOT: kiln.dequantize
// CHECK-NOT: kiln.conv2d
func.func @qconv_bias_relu(%x: tensor<1x8x6x6xf32>, %w: tensor<4x8x3x3xi32>, %s: tensor<4x1x1x1xf32>, %b: tensor<4x1x1xf32>) -> tensor<1x4x6x6xf32> {
  %q = kiln.quantize_static %x {scale = 0.25 : f32, zero_point = 7 : i64} : tensor<1x8x6x6xf32> -> tensor<1x8x6x6xui8>
  %c = kiln.constant dense<0.25> : tensor<1x1x1x1xf32>
  %xd = kiln.dequantize %q, %c {zero_point = 7 : i64} : tensor<1x8x6x6xui8>, tensor<1x1x1x1xf32> -> tensor<1x8x6x6xf32>
  %wd = kiln.dequantize %w, %s : tensor<4x8x3x3xi32>, tensor<4x1x1x1xf32> -> tensor<4x8x3x3xf32>
  %y = kiln.conv2d %xd, %wd {padding = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<4x8x3x3xf32> -> tensor<1x4x6x6xf32>
  %z = kiln.add %y, %b : tensor<1x4x6x6xf32>, tensor<4x1x1xf32>
  %r = kiln.relu %z : tensor<1x4x6x6xf32>
  return %r : tensor<1x4x6x6xf32>
}

// -----

// Tests that quantized-only leaves float convolutions alone, and that a
// dequantize that does not invert its quantize_static (another zero point)
// is not an int8 convolution: without quantized-only it is an f32 call on
// the dequantized value, with it nothing changes (the q/dq then fail the
// compile in kiln-cpu-quant-to-calls, naming the op).
// CHECK-LABEL: func.func @mismatch_and_float
// CHECK-NOT: call @kiln_dnnl_qconv2d_u8s8
// CHECK: call @kiln_dnnl_conv2d_f32
// CHECK: call @kiln_dnnl_conv2d_f32
// QONLY-LABEL: func.func @mismatch_and_float
// QONLY-NOT: call
// QONLY: kiln.conv2d
// QONLY: kiln.conv2d
func.func @mismatch_and_float(%x: tensor<1x8x6x6xf32>, %w: tensor<4x8x3x3xi32>, %s: tensor<4x1x1x1xf32>, %wf: tensor<4x8x3x3xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) {
  %q = kiln.quantize_static %x {scale = 0.25 : f32, zero_point = 7 : i64} : tensor<1x8x6x6xf32> -> tensor<1x8x6x6xui8>
  %c = kiln.constant dense<0.25> : tensor<1x1x1x1xf32>
  %xd = kiln.dequantize %q, %c {zero_point = 8 : i64} : tensor<1x8x6x6xui8>, tensor<1x1x1x1xf32> -> tensor<1x8x6x6xf32>
  %wd = kiln.dequantize %w, %s : tensor<4x8x3x3xi32>, tensor<4x1x1x1xf32> -> tensor<4x8x3x3xf32>
  %y = kiln.conv2d %xd, %wd : tensor<1x8x6x6xf32>, tensor<4x8x3x3xf32> -> tensor<1x4x4x4xf32>
  %f = kiln.conv2d %x, %wf : tensor<1x8x6x6xf32>, tensor<4x8x3x3xf32> -> tensor<1x4x4x4xf32>
  return %y, %f : tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>
}

// -----

// Tests u8 activations between int8 convolutions: the first one's only user
// (after its ReLU) is the quantize_static of the second's input, so it
// requantizes into a u8 NHWC buffer (`_yu8`, the consumer's scale 0.5 and
// zero point 3 last) and the second reads that buffer as it is (`_xu8`, no
// NHWC copy, the same scale and zero point as its input's); no q/dq left.
// CHECK-LABEL: func.func @u8_chain
// CHECK: %[[Y:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x6x6x4xui8>
// CHECK-DAG: %[[YS:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG: %[[YZ:.*]] = arith.constant 3 : i64
// CHECK: call @kiln_dnnl_qconv2d_u8s8_yu8({{.*}}, %[[YS]], %[[YZ]]) : (memref<?x?x?x?xf32, {{.*}}>, memref<?x?x?x?xi32, {{.*}}>, memref<?x?x?x?xui8, {{.*}}>,
// CHECK: %[[T:.*]] = bufferization.to_tensor %[[Y]] restrict writable : memref<1x6x6x4xui8>
// CHECK-NOT: linalg.generic
// CHECK: %[[TM:.*]] = bufferization.to_memref %[[T]] read_only
// CHECK: memref.extract_strided_metadata %[[TM]]
// CHECK-DAG: %[[XS:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG: %[[XZ:.*]] = arith.constant 3 : i64
// CHECK: call @kiln_dnnl_qconv2d_u8s8_xu8({{.*}}, %[[XS]], %[[XZ]]) : (memref<?x?x?x?xui8, {{.*}}>, memref<?x?x?x?xi32, {{.*}}>, memref<?x?x?x?xf32, {{.*}}>,
// CHECK-NOT: kiln.quantize_static
// CHECK-NOT: kiln.dequantize
// CHECK-NOT: kiln.conv2d
func.func @u8_chain(%x: tensor<1x8x6x6xf32>, %w: tensor<4x8x3x3xi32>, %s: tensor<4x1x1x1xf32>, %w2: tensor<5x4x1x1xi32>, %s2: tensor<5x1x1x1xf32>) -> tensor<1x5x6x6xf32> {
  %q = kiln.quantize_static %x {scale = 0.25 : f32, zero_point = 7 : i64} : tensor<1x8x6x6xf32> -> tensor<1x8x6x6xui8>
  %c = kiln.constant dense<0.25> : tensor<1x1x1x1xf32>
  %xd = kiln.dequantize %q, %c {zero_point = 7 : i64} : tensor<1x8x6x6xui8>, tensor<1x1x1x1xf32> -> tensor<1x8x6x6xf32>
  %wd = kiln.dequantize %w, %s : tensor<4x8x3x3xi32>, tensor<4x1x1x1xf32> -> tensor<4x8x3x3xf32>
  %y = kiln.conv2d %xd, %wd {padding = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<4x8x3x3xf32> -> tensor<1x4x6x6xf32>
  %r = kiln.relu %y : tensor<1x4x6x6xf32>
  %q2 = kiln.quantize_static %r {scale = 0.5 : f32, zero_point = 3 : i64} : tensor<1x4x6x6xf32> -> tensor<1x4x6x6xui8>
  %c2 = kiln.constant dense<0.5> : tensor<1x1x1x1xf32>
  %xd2 = kiln.dequantize %q2, %c2 {zero_point = 3 : i64} : tensor<1x4x6x6xui8>, tensor<1x1x1x1xf32> -> tensor<1x4x6x6xf32>
  %wd2 = kiln.dequantize %w2, %s2 : tensor<5x4x1x1xi32>, tensor<5x1x1x1xf32> -> tensor<5x4x1x1xf32>
  %y2 = kiln.conv2d %xd2, %wd2 : tensor<1x4x6x6xf32>, tensor<5x4x1x1xf32> -> tensor<1x5x6x6xf32>
  return %y2 : tensor<1x5x6x6xf32>
}

// -----

// Tests the u8 output's negative cases: the result also used by a float op
// (an add no int8 convolution absorbs), quantized with two different scales, or dequantized for
// something other than an int8 convolution: the producer writes f32
// (`kiln_dnnl_qconv2d_u8s8`, never `_yu8`) and each consumer quantizes its
// own input (no `_xu8`).
// CHECK-LABEL: func.func @u8_chain_negative
// CHECK-NOT: _yu8
// CHECK-NOT: _xu8
// CHECK: call @kiln_dnnl_qconv2d_u8s8(
// CHECK: call @kiln_dnnl_qconv2d_u8s8(
// CHECK: call @kiln_dnnl_qconv2d_u8s8(
// CHECK: call @kiln_dnnl_qconv2d_u8s8(
// CHECK: call @kiln_dnnl_qconv2d_u8s8(
// CHECK: call @kiln_dnnl_qconv2d_u8s8(
// CHECK: call @kiln_dnnl_qconv2d_u8s8(
// CHECK: kiln.relu
func.func @u8_chain_negative(%x: tensor<1x4x6x6xf32>, %w: tensor<4x4x1x1xi32>, %s: tensor<4x1x1x1xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
  %c = kiln.constant dense<0.25> : tensor<1x1x1x1xf32>
  %c2 = kiln.constant dense<0.5> : tensor<1x1x1x1xf32>
  %wd = kiln.dequantize %w, %s : tensor<4x4x1x1xi32>, tensor<4x1x1x1xf32> -> tensor<4x4x1x1xf32>
  %q = kiln.quantize_static %x {scale = 0.25 : f32, zero_point = 0 : i64} : tensor<1x4x6x6xf32> -> tensor<1x4x6x6xui8>
  %xd = kiln.dequantize %q, %c : tensor<1x4x6x6xui8>, tensor<1x1x1x1xf32> -> tensor<1x4x6x6xf32>
  // %a feeds an int8 convolution and a float add of an argument
  %a = kiln.conv2d %xd, %wd : tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x6x6xf32>
  %qa = kiln.quantize_static %a {scale = 0.25 : f32, zero_point = 0 : i64} : tensor<1x4x6x6xf32> -> tensor<1x4x6x6xui8>
  %ad = kiln.dequantize %qa, %c : tensor<1x4x6x6xui8>, tensor<1x1x1x1xf32> -> tensor<1x4x6x6xf32>
  %a2 = kiln.conv2d %ad, %wd : tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x6x6xf32>
  %sum = kiln.add %a, %x : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
  // two scales: %b is quantized for two convolutions differently
  %b = kiln.conv2d %xd, %wd : tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x6x6xf32>
  %qb1 = kiln.quantize_static %b {scale = 0.25 : f32, zero_point = 0 : i64} : tensor<1x4x6x6xf32> -> tensor<1x4x6x6xui8>
  %qb2 = kiln.quantize_static %b {scale = 0.5 : f32, zero_point = 0 : i64} : tensor<1x4x6x6xf32> -> tensor<1x4x6x6xui8>
  %bd1 = kiln.dequantize %qb1, %c : tensor<1x4x6x6xui8>, tensor<1x1x1x1xf32> -> tensor<1x4x6x6xf32>
  %bd2 = kiln.dequantize %qb2, %c2 : tensor<1x4x6x6xui8>, tensor<1x1x1x1xf32> -> tensor<1x4x6x6xf32>
  %b1 = kiln.conv2d %bd1, %wd : tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x6x6xf32>
  %b2 = kiln.conv2d %bd2, %wd : tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x6x6xf32>
  // the dequantized value also feeds a float op (fake quantization)
  %d = kiln.conv2d %xd, %wd : tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x6x6xf32>
  %qd = kiln.quantize_static %d {scale = 0.25 : f32, zero_point = 0 : i64} : tensor<1x4x6x6xf32> -> tensor<1x4x6x6xui8>
  %dd = kiln.dequantize %qd, %c : tensor<1x4x6x6xui8>, tensor<1x1x1x1xf32> -> tensor<1x4x6x6xf32>
  %d2 = kiln.conv2d %dd, %wd : tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x6x6xf32>
  %fq = kiln.relu %dd : tensor<1x4x6x6xf32>
  %sum2 = kiln.add %sum, %a2 : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
  return %sum2, %b1, %b2, %d2, %fq : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
}

// -----

// Tests an int8 convolution whose result only a max-pool reads (a stem): the
// call writes an NCHW f32 buffer (the shim reorders oneDNN's NHWC result
// into it) and the pool reads it without a permute; a float use next to the
// pool keeps the channels-last buffer and its permute.
// CHECK-LABEL: func.func @qconv_pooled
// CHECK: %[[Y:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x4x6x6xf32>
// CHECK: %[[YV:.*]] = memref.cast %[[Y]] : memref<1x4x6x6xf32> to memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>
// CHECK: call @kiln_dnnl_qconv2d_u8s8(%{{.*}}, %{{.*}}, %[[YV]],
// CHECK: %[[T:.*]] = bufferization.to_tensor %[[Y]] restrict writable : memref<1x4x6x6xf32>
// CHECK-NOT: kiln.permute
// CHECK: kiln.max_pool2d %[[T]]
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<1x6x6x4xf32>
// CHECK: call @kiln_dnnl_qconv2d_u8s8(
// CHECK: kiln.permute
// CHECK: kiln.max_pool2d
func.func @qconv_pooled(%x: tensor<1x8x6x6xf32>, %w: tensor<4x8x3x3xi32>, %s: tensor<4x1x1x1xf32>) -> (tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>, tensor<1x4x6x6xf32>) {
  %q = kiln.quantize_static %x {scale = 0.25 : f32, zero_point = 7 : i64} : tensor<1x8x6x6xf32> -> tensor<1x8x6x6xui8>
  %c = kiln.constant dense<0.25> : tensor<1x1x1x1xf32>
  %xd = kiln.dequantize %q, %c {zero_point = 7 : i64} : tensor<1x8x6x6xui8>, tensor<1x1x1x1xf32> -> tensor<1x8x6x6xf32>
  %wd = kiln.dequantize %w, %s : tensor<4x8x3x3xi32>, tensor<4x1x1x1xf32> -> tensor<4x8x3x3xf32>
  %y = kiln.conv2d %xd, %wd {padding = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<4x8x3x3xf32> -> tensor<1x4x6x6xf32>
  %r = kiln.relu %y : tensor<1x4x6x6xf32>
  %p = kiln.max_pool2d %r {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : tensor<1x4x6x6xf32> -> tensor<1x4x3x3xf32>
  %y2 = kiln.conv2d %xd, %wd {padding = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<4x8x3x3xf32> -> tensor<1x4x6x6xf32>
  %p2 = kiln.max_pool2d %y2 {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : tensor<1x4x6x6xf32> -> tensor<1x4x3x3xf32>
  %n = kiln.neg %y2 : tensor<1x4x6x6xf32>
  return %p, %p2, %n : tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>, tensor<1x4x6x6xf32>
}
