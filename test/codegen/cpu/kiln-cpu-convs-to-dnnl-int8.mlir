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
