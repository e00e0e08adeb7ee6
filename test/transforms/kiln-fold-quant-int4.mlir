// RUN: kiln-opt %s -split-input-file -kiln-fold-quant | FileCheck %s

// kiln-fold-quant on grouped int4 weights (transforms/FoldQuant.cpp,
// matchGroupedWeight): the pattern kiln.quant's linear_int4 captures becomes
// a weight-only kiln.qlinear with group_size and the [N, K / group] scales;
// anything else stays float.

// Tests the captured pattern with a bias: one qlinear on the int4 view and
// the 2-D scales, no dequantize, reshape, permute, matmul or add left.
// CHECK-LABEL: func.func @grouped_bias
// CHECK-SAME: (%[[X:.*]]: tensor<4x64xf32>, %[[WORDS:.*]]: tensor<16x8xi32>, %[[S:.*]]: tensor<16x2xf32>, %[[B:.*]]: tensor<16xf32>)
// CHECK-NEXT: %[[V:.*]] = kiln.int4_view %[[WORDS]] : tensor<16x8xi32> -> tensor<16x64xi8>
// CHECK-NEXT: %[[Y:.*]] = kiln.qlinear %[[X]], %[[V]], %[[S]], %[[B]] {activations = "none", group_size = 32 : i64} : (tensor<4x64xf32>, tensor<16x64xi8>, tensor<16x2xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: return %[[Y]]
func.func @grouped_bias(%x: tensor<4x64xf32>, %words: tensor<16x8xi32>, %ws: tensor<16x2xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %w = kiln.int4_view %words : tensor<16x8xi32> -> tensor<16x64xi8>
  %wg = kiln.reshape %w : tensor<16x64xi8> -> tensor<16x2x32xi8>
  %sg = kiln.reshape %ws : tensor<16x2xf32> -> tensor<16x2x1xf32>
  %wd = kiln.dequantize %wg, %sg : tensor<16x2x32xi8>, tensor<16x2x1xf32> -> tensor<16x2x32xf32>
  %wm = kiln.reshape %wd : tensor<16x2x32xf32> -> tensor<16x64xf32>
  %wt = kiln.permute %wm {dims = array<i64: 1, 0>} : tensor<16x64xf32> -> tensor<64x16xf32>
  %y = kiln.matmul %x, %wt : tensor<4x64xf32>, tensor<64x16xf32>
  %z = kiln.add %y, %b : tensor<4x16xf32>, tensor<16xf32>
  return %z : tensor<4x16xf32>
}

// -----

// Negative: a dynamically quantized input with an int4 weight has no
// kernel (int4 is weight-only): everything stays float.
// CHECK-LABEL: func.func @grouped_quantized_input_stays
// CHECK-NOT: kiln.qlinear
// CHECK: kiln.matmul
func.func @grouped_quantized_input_stays(%x: tensor<4x64xf32>, %words: tensor<16x8xi32>, %ws: tensor<16x2xf32>) -> tensor<4x16xf32> {
  %q, %s = kiln.quantize %x : tensor<4x64xf32> -> tensor<4x64xi8>, tensor<4x1xf32>
  %xd = kiln.dequantize %q, %s : tensor<4x64xi8>, tensor<4x1xf32> -> tensor<4x64xf32>
  %w = kiln.int4_view %words : tensor<16x8xi32> -> tensor<16x64xi8>
  %wg = kiln.reshape %w : tensor<16x64xi8> -> tensor<16x2x32xi8>
  %sg = kiln.reshape %ws : tensor<16x2xf32> -> tensor<16x2x1xf32>
  %wd = kiln.dequantize %wg, %sg : tensor<16x2x32xi8>, tensor<16x2x1xf32> -> tensor<16x2x32xf32>
  %wm = kiln.reshape %wd : tensor<16x2x32xf32> -> tensor<16x64xf32>
  %wt = kiln.permute %wm {dims = array<i64: 1, 0>} : tensor<16x64xf32> -> tensor<64x16xf32>
  %y = kiln.matmul %xd, %wt : tensor<4x64xf32>, tensor<64x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Negative: groups of 16 values split a 32-value packing block: no kernel
// reads them, everything stays float.
// CHECK-LABEL: func.func @group_of_16_stays
// CHECK-NOT: kiln.qlinear
// CHECK: kiln.matmul
func.func @group_of_16_stays(%x: tensor<4x64xf32>, %words: tensor<16x8xi32>, %ws: tensor<16x4xf32>) -> tensor<4x16xf32> {
  %w = kiln.int4_view %words : tensor<16x8xi32> -> tensor<16x64xi8>
  %wg = kiln.reshape %w : tensor<16x64xi8> -> tensor<16x4x16xi8>
  %sg = kiln.reshape %ws : tensor<16x4xf32> -> tensor<16x4x1xf32>
  %wd = kiln.dequantize %wg, %sg : tensor<16x4x16xi8>, tensor<16x4x1xf32> -> tensor<16x4x16xf32>
  %wm = kiln.reshape %wd : tensor<16x4x16xf32> -> tensor<16x64xf32>
  %wt = kiln.permute %wm {dims = array<i64: 1, 0>} : tensor<16x64xf32> -> tensor<64x16xf32>
  %y = kiln.matmul %x, %wt : tensor<4x64xf32>, tensor<64x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Negative: the groups run along N (the split is [N / 2, 2, K]): not one
// scale per group of K, so it stays float.
// CHECK-LABEL: func.func @groups_along_n_stay
// CHECK-NOT: kiln.qlinear
// CHECK: kiln.matmul
func.func @groups_along_n_stay(%x: tensor<4x64xf32>, %words: tensor<16x8xi32>, %ws: tensor<8x2xf32>) -> tensor<4x16xf32> {
  %w = kiln.int4_view %words : tensor<16x8xi32> -> tensor<16x64xi8>
  %wg = kiln.reshape %w : tensor<16x64xi8> -> tensor<8x2x64xi8>
  %sg = kiln.reshape %ws : tensor<8x2xf32> -> tensor<8x2x1xf32>
  %wd = kiln.dequantize %wg, %sg : tensor<8x2x64xi8>, tensor<8x2x1xf32> -> tensor<8x2x64xf32>
  %wm = kiln.reshape %wd : tensor<8x2x64xf32> -> tensor<16x64xf32>
  %wt = kiln.permute %wm {dims = array<i64: 1, 0>} : tensor<16x64xf32> -> tensor<64x16xf32>
  %y = kiln.matmul %x, %wt : tensor<4x64xf32>, tensor<64x16xf32>
  return %y : tensor<4x16xf32>
}
