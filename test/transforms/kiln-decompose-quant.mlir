// RUN: kiln-opt %s -split-input-file -kiln-decompose | FileCheck %s

// kiln-decompose rewrites a kiln.dequantize of a kiln.quantize_static with
// the same scale and zero point (a requantization no int8 kernel took) into
// the same values by f32 ops (transforms/DecomposeQuant.cpp).

// Tests the expansion: x * f32(1 / 0.5), round half even, + zero point,
// clamped to [0, 255], - zero point, * scale; the uint8 value is gone.
// CHECK-LABEL: func.func @requantize
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>)
// CHECK-DAG: %[[INV:.*]] = kiln.constant dense<2.000000e+00> : tensor<f32>
// CHECK-DAG: %[[ZP:.*]] = kiln.constant dense<1.000000e+01> : tensor<f32>
// CHECK-DAG: %[[LO:.*]] = kiln.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[HI:.*]] = kiln.constant dense<2.550000e+02> : tensor<f32>
// CHECK-DAG: %[[S:.*]] = kiln.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[M:.*]] = kiln.mul %[[X]], %[[INV]]
// CHECK: %[[R:.*]] = kiln.round %[[M]]
// CHECK: %[[A:.*]] = kiln.add %[[R]], %[[ZP]]
// CHECK: %[[MX:.*]] = kiln.maximum %[[A]], %[[LO]]
// CHECK: %[[MN:.*]] = kiln.minimum %[[MX]], %[[HI]]
// CHECK: %[[C:.*]] = kiln.sub %[[MN]], %[[ZP]]
// CHECK: %[[Y:.*]] = kiln.mul %[[C]], %[[S]]
// CHECK: return %[[Y]]
// CHECK-NOT: kiln.quantize_static
func.func @requantize(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %q = kiln.quantize_static %x {scale = 0.5 : f32, zero_point = 10 : i64} : tensor<2x8xf32> -> tensor<2x8xui8>
  %s = kiln.constant dense<0.5> : tensor<1x1xf32>
  %d = kiln.dequantize %q, %s {zero_point = 10 : i64} : tensor<2x8xui8>, tensor<1x1xf32> -> tensor<2x8xf32>
  return %d : tensor<2x8xf32>
}

// -----

// Negative: a dequantize with another scale (or zero point) than its
// quantize is not that pair's inverse and stays as it is.
// CHECK-LABEL: func.func @other_scale
// CHECK: kiln.quantize_static
// CHECK: kiln.dequantize
// CHECK-NOT: kiln.round
func.func @other_scale(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %q = kiln.quantize_static %x {scale = 0.5 : f32, zero_point = 10 : i64} : tensor<2x8xf32> -> tensor<2x8xui8>
  %s = kiln.constant dense<0.25> : tensor<1x1xf32>
  %d = kiln.dequantize %q, %s {zero_point = 10 : i64} : tensor<2x8xui8>, tensor<1x1xf32> -> tensor<2x8xf32>
  return %d : tensor<2x8xf32>
}

// -----

// Negative: the zero point differs.
// CHECK-LABEL: func.func @other_zero_point
// CHECK: kiln.quantize_static
// CHECK: kiln.dequantize
func.func @other_zero_point(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %q = kiln.quantize_static %x {scale = 0.5 : f32, zero_point = 10 : i64} : tensor<2x8xf32> -> tensor<2x8xui8>
  %s = kiln.constant dense<0.5> : tensor<1x1xf32>
  %d = kiln.dequantize %q, %s {zero_point = 3 : i64} : tensor<2x8xui8>, tensor<1x1xf32> -> tensor<2x8xf32>
  return %d : tensor<2x8xf32>
}
