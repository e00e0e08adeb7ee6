// RUN: kiln-opt %s -split-input-file -kiln-fold-quant | FileCheck %s

// kiln-fold-quant turns q/dq around a kiln.matmul into kiln.qlinear
// (transforms/FoldQuant.cpp); everything else stays float.

// Tests the dynamic per-token pattern with its bias add: one qlinear on the
// original input, no q/dq, matmul, permute or add left.
// CHECK-LABEL: func.func @dynamic_per_token_bias
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<16x8xi8>, %[[S:.*]]: tensor<16x1xf32>, %[[B:.*]]: tensor<16xf32>)
// CHECK-NEXT: %[[Y:.*]] = kiln.qlinear %[[X]], %[[W]], %[[S]], %[[B]] 
// CHECK-NEXT: return %[[Y]]
func.func @dynamic_per_token_bias(%x: tensor<4x8xf32>, %w: tensor<16x8xi8>, %ws: tensor<16x1xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %q, %s = kiln.quantize %x : tensor<4x8xf32> -> tensor<4x8xi8>, tensor<4x1xf32>
  %xd = kiln.dequantize %q, %s : tensor<4x8xi8>, tensor<4x1xf32> -> tensor<4x8xf32>
  %wd = kiln.dequantize %w, %ws : tensor<16x8xi8>, tensor<16x1xf32> -> tensor<16x8xf32>
  %wt = kiln.permute %wd {dims = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %y = kiln.matmul %xd, %wt : tensor<4x8xf32>, tensor<8x16xf32>
  %z = kiln.add %y, %b : tensor<4x16xf32>, tensor<16xf32>
  return %z : tensor<4x16xf32>
}

// -----

// Tests a 3-D per-tensor input without bias, the weight read through
// kiln.int8_view (the capture's carrier), the bias on the left of the add.
// CHECK-LABEL: func.func @per_tensor_3d
// CHECK: %[[V:.*]] = kiln.int8_view
// CHECK-NEXT: %[[Y:.*]] = kiln.qlinear %{{.*}}, %[[V]], %{{.*}}, %{{.*}} {activations = "per_tensor"} : (tensor<2x4x8xf32>, tensor<16x8xi8>, tensor<16x1xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT: return %[[Y]]
func.func @per_tensor_3d(%x: tensor<2x4x8xf32>, %words: tensor<16x2xi32>, %ws: tensor<16x1xf32>, %b: tensor<16xf32>) -> tensor<2x4x16xf32> {
  %w = kiln.int8_view %words : tensor<16x2xi32> -> tensor<16x8xi8>
  %q, %s = kiln.quantize %x {granularity = "per_tensor"} : tensor<2x4x8xf32> -> tensor<2x4x8xi8>, tensor<1x1x1xf32>
  %xd = kiln.dequantize %q, %s : tensor<2x4x8xi8>, tensor<1x1x1xf32> -> tensor<2x4x8xf32>
  %wd = kiln.dequantize %w, %ws : tensor<16x8xi8>, tensor<16x1xf32> -> tensor<16x8xf32>
  %wt = kiln.permute %wd {dims = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %y = kiln.matmul %xd, %wt : tensor<2x4x8xf32>, tensor<8x16xf32>
  %z = kiln.add %b, %y : tensor<16xf32>, tensor<2x4x16xf32>
  return %z : tensor<2x4x16xf32>
}

// -----

// Tests weight-only: a float input on the left gives activations = "none".
// CHECK-LABEL: func.func @weight_only
// CHECK-NEXT: %[[Y:.*]] = kiln.qlinear %{{.*}}, %{{.*}}, %{{.*}} {activations = "none"}
// CHECK-NEXT: return %[[Y]]
func.func @weight_only(%x: tensor<4x8xf32>, %w: tensor<16x8xi8>, %ws: tensor<16x1xf32>) -> tensor<4x16xf32> {
  %wd = kiln.dequantize %w, %ws : tensor<16x8xi8>, tensor<16x1xf32> -> tensor<16x8xf32>
  %wt = kiln.permute %wd {dims = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %y = kiln.matmul %x, %wt : tensor<4x8xf32>, tensor<8x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Negative: per-input-channel weight scales ([1, K]) are not a per-output
// channel epilogue: everything stays float.
// CHECK-LABEL: func.func @scale_on_k_stays
// CHECK-NOT: kiln.qlinear
// CHECK: kiln.dequantize
// CHECK: kiln.permute
// CHECK: kiln.matmul
func.func @scale_on_k_stays(%x: tensor<4x8xf32>, %w: tensor<16x8xi8>, %ws: tensor<1x8xf32>) -> tensor<4x16xf32> {
  %wd = kiln.dequantize %w, %ws : tensor<16x8xi8>, tensor<1x8xf32> -> tensor<16x8xf32>
  %wt = kiln.permute %wd {dims = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %y = kiln.matmul %x, %wt : tensor<4x8xf32>, tensor<8x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Negative: a weight dequantized without the transpose ([K, N] stored,
// scales per row = per input channel) stays float.
// CHECK-LABEL: func.func @no_transpose_stays
// CHECK-NOT: kiln.qlinear
// CHECK: kiln.matmul
func.func @no_transpose_stays(%x: tensor<4x8xf32>, %w: tensor<8x16xi8>, %ws: tensor<8x1xf32>) -> tensor<4x16xf32> {
  %wd = kiln.dequantize %w, %ws : tensor<8x16xi8>, tensor<8x1xf32> -> tensor<8x16xf32>
  %y = kiln.matmul %x, %wd : tensor<4x8xf32>, tensor<8x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Negative: a dequantize feeding an elementwise op stays; so does the
// quantize of an activation that feeds no quantized matmul.
// CHECK-LABEL: func.func @dq_into_add_stays
// CHECK: kiln.quantize
// CHECK: kiln.dequantize
// CHECK: kiln.add
// CHECK-NOT: kiln.qlinear
func.func @dq_into_add_stays(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %q, %s = kiln.quantize %x : tensor<4x8xf32> -> tensor<4x8xi8>, tensor<4x1xf32>
  %xd = kiln.dequantize %q, %s : tensor<4x8xi8>, tensor<4x1xf32> -> tensor<4x8xf32>
  %z = kiln.add %xd, %x : tensor<4x8xf32>, tensor<4x8xf32>
  return %z : tensor<4x8xf32>
}

// -----

// Negative (mixed precision): a full [M, N] addend is not a bias, so the add
// stays after the qlinear; a second user of the matmul keeps the add too.
// CHECK-LABEL: func.func @residual_not_bias
// CHECK: %[[Y:.*]] = kiln.qlinear %{{.*}}, %{{.*}}, %{{.*}}  : (tensor<4x8xf32>, tensor<16x8xi8>, tensor<16x1xf32>) -> tensor<4x16xf32>
// CHECK: kiln.add %[[Y]], %{{.*}} : tensor<4x16xf32>, tensor<4x16xf32>
func.func @residual_not_bias(%x: tensor<4x8xf32>, %w: tensor<16x8xi8>, %ws: tensor<16x1xf32>, %r: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %q, %s = kiln.quantize %x : tensor<4x8xf32> -> tensor<4x8xi8>, tensor<4x1xf32>
  %xd = kiln.dequantize %q, %s : tensor<4x8xi8>, tensor<4x1xf32> -> tensor<4x8xf32>
  %wd = kiln.dequantize %w, %ws : tensor<16x8xi8>, tensor<16x1xf32> -> tensor<16x8xf32>
  %wt = kiln.permute %wd {dims = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %y = kiln.matmul %xd, %wt : tensor<4x8xf32>, tensor<8x16xf32>
  %z = kiln.add %y, %r : tensor<4x16xf32>, tensor<4x16xf32>
  return %z : tensor<4x16xf32>
}

// -----

// Negative: an f64 matmul (no int8 path) stays float.
// CHECK-LABEL: func.func @f64_stays
// CHECK-NOT: kiln.qlinear
func.func @f64_stays(%x: tensor<4x8xf64>, %w: tensor<8x16xf64>) -> tensor<4x16xf64> {
  %y = kiln.matmul %x, %w : tensor<4x8xf64>, tensor<8x16xf64>
  return %y : tensor<4x16xf64>
}

// -----

// Tests a static (calibrated) input: quantize_static and the dequantize with
// the same scale (a constant splat) and zero point fold into one qlinear
// carrying them; the constant scale is erased with the q/dq.
// CHECK-LABEL: func.func @static_bias
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<16x8xi8>, %[[S:.*]]: tensor<16x1xf32>, %[[B:.*]]: tensor<16xf32>)
// CHECK-NEXT: %[[Y:.*]] = kiln.qlinear %[[X]], %[[W]], %[[S]], %[[B]] {activations = "static", input_scale = 2.500000e-01 : f32, input_zero_point = 7 : i64}
// CHECK-NEXT: return %[[Y]]
func.func @static_bias(%x: tensor<4x8xf32>, %w: tensor<16x8xi8>, %ws: tensor<16x1xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %q = kiln.quantize_static %x {scale = 0.25 : f32, zero_point = 7 : i64} : tensor<4x8xf32> -> tensor<4x8xui8>
  %s = kiln.constant dense<0.25> : tensor<1x1xf32>
  %xd = kiln.dequantize %q, %s {zero_point = 7 : i64} : tensor<4x8xui8>, tensor<1x1xf32> -> tensor<4x8xf32>
  %wd = kiln.dequantize %w, %ws : tensor<16x8xi8>, tensor<16x1xf32> -> tensor<16x8xf32>
  %wt = kiln.permute %wd {dims = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %y = kiln.matmul %xd, %wt : tensor<4x8xf32>, tensor<8x16xf32>
  %z = kiln.add %y, %b : tensor<4x16xf32>, tensor<16xf32>
  return %z : tensor<4x16xf32>
}

// -----

// Negative: a dequantize that does not invert its quantize_static (another
// zero point, or another scale) is not an integer GEMM: all stays float.
// CHECK-LABEL: func.func @static_mismatch_stays
// CHECK-NOT: kiln.qlinear
// CHECK: kiln.quantize_static
// CHECK: kiln.matmul
// CHECK: kiln.matmul
func.func @static_mismatch_stays(%x: tensor<4x8xf32>, %w: tensor<16x8xi8>, %ws: tensor<16x1xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %q = kiln.quantize_static %x {scale = 0.25 : f32, zero_point = 7 : i64} : tensor<4x8xf32> -> tensor<4x8xui8>
  %s = kiln.constant dense<0.25> : tensor<1x1xf32>
  %t = kiln.constant dense<0.5> : tensor<1x1xf32>
  %xd = kiln.dequantize %q, %s {zero_point = 8 : i64} : tensor<4x8xui8>, tensor<1x1xf32> -> tensor<4x8xf32>
  %xe = kiln.dequantize %q, %t {zero_point = 7 : i64} : tensor<4x8xui8>, tensor<1x1xf32> -> tensor<4x8xf32>
  %wd = kiln.dequantize %w, %ws : tensor<16x8xi8>, tensor<16x1xf32> -> tensor<16x8xf32>
  %wt = kiln.permute %wd {dims = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %y = kiln.matmul %xd, %wt : tensor<4x8xf32>, tensor<8x16xf32>
  %z = kiln.matmul %xe, %wt : tensor<4x8xf32>, tensor<8x16xf32>
  return %y, %z : tensor<4x16xf32>, tensor<4x16xf32>
}
