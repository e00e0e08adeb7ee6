// RUN: kiln-opt %s -split-input-file -kiln-decompose | FileCheck %s

// kiln-decompose rewrites kiln.softmax, kiln.layer_norm and kiln.silu into
// reductions and elementwise ops (transforms/Decompose.cpp).

// Tests that softmax over the last dim of a rank-2 tensor subtracts the
// keepdim max, exponentiates and multiplies by the keepdim sum's reciprocal
// (as torch's kernels do).
// CHECK-LABEL: func.func @softmax_rank2
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK: %[[ONE:.*]] = kiln.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[MAX:.*]] = kiln.max %[[X]] {dims = array<i64: 1>, keepdim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK: %[[SUB:.*]] = kiln.sub %[[X]], %[[MAX]] : tensor<4x8xf32>, tensor<4x1xf32>
// CHECK: %[[EXP:.*]] = kiln.exp %[[SUB]] : tensor<4x8xf32>
// CHECK: %[[SUM:.*]] = kiln.sum %[[EXP]] {dims = array<i64: 1>, keepdim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK: %[[RCP:.*]] = kiln.div %[[ONE]], %[[SUM]] : tensor<f32>, tensor<4x1xf32>
// CHECK: %[[MUL:.*]] = kiln.mul %[[EXP]], %[[RCP]] : tensor<4x8xf32>, tensor<4x1xf32>
// CHECK: return %[[MUL]]
// CHECK-NOT: kiln.softmax
func.func @softmax_rank2(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.softmax %x {dim = 1 : i64} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Tests that softmax over a middle dim of a rank-3 tensor with dynamic dims
// reduces that dim only, keeps the dynamic dims and divides by the sum (as
// torch's kernel for dims other than the last).
// CHECK-LABEL: func.func @softmax_rank3_dynamic
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x8xf64>)
// CHECK: %[[MAX:.*]] = kiln.max %[[X]] {dims = array<i64: 1>, keepdim = true} : tensor<?x?x8xf64> -> tensor<?x1x8xf64>
// CHECK: %[[SUB:.*]] = kiln.sub %[[X]], %[[MAX]]
// CHECK: %[[EXP:.*]] = kiln.exp %[[SUB]] : tensor<?x?x8xf64>
// CHECK: %[[SUM:.*]] = kiln.sum %[[EXP]] {dims = array<i64: 1>, keepdim = true} : tensor<?x?x8xf64> -> tensor<?x1x8xf64>
// CHECK: %[[DIV:.*]] = kiln.div %[[EXP]], %[[SUM]]
// CHECK: return %[[DIV]] : tensor<?x?x8xf64>
func.func @softmax_rank3_dynamic(%x: tensor<?x?x8xf64>) -> tensor<?x?x8xf64> {
  %0 = kiln.softmax %x {dim = 1 : i64} : tensor<?x?x8xf64>
  return %0 : tensor<?x?x8xf64>
}

// -----

// Tests that softmax of a 0-d tensor reduces over no dims.
// CHECK-LABEL: func.func @softmax_rank0
// CHECK: kiln.max %{{.*}} {dims = array<i64>, keepdim = true} : tensor<f32> -> tensor<f32>
// CHECK: kiln.sum %{{.*}} {dims = array<i64>, keepdim = true} : tensor<f32> -> tensor<f32>
// CHECK-NOT: kiln.softmax
func.func @softmax_rank0(%x: tensor<f32>) -> tensor<f32> {
  %0 = kiln.softmax %x {dim = 0 : i64} : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Tests that softmax of f16 computes in f32 (as torch does) and rounds once
// at the end.
// CHECK-LABEL: func.func @softmax_f16
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf16>)
// CHECK: %[[UP:.*]] = kiln.cast %[[X]] : tensor<4x8xf16> -> tensor<4x8xf32>
// CHECK: kiln.max %[[UP]] {dims = array<i64: 0>, keepdim = true} : tensor<4x8xf32> -> tensor<1x8xf32>
// CHECK: %[[DIV:.*]] = kiln.div
// CHECK: %[[DOWN:.*]] = kiln.cast %[[DIV]] : tensor<4x8xf32> -> tensor<4x8xf16>
// CHECK: return %[[DOWN]]
func.func @softmax_f16(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %0 = kiln.softmax %x {dim = 0 : i64} : tensor<4x8xf16>
  return %0 : tensor<4x8xf16>
}

// -----

// Tests that layer_norm of a rank-2 tensor with weight and bias normalizes
// with the keepdim mean and biased variance, adds eps (a 0-d constant of the
// element type) before rsqrt, then scales and shifts.
// CHECK-LABEL: func.func @layer_norm_rank2
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK-DAG: %[[EPS:.*]] = kiln.constant dense<9.99999974E-6> : tensor<f32>
// CHECK-DAG: %[[MEAN:.*]] = kiln.mean %[[X]] {dims = array<i64: 1>, keepdim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK: %[[C:.*]] = kiln.sub %[[X]], %[[MEAN]] : tensor<4x8xf32>, tensor<4x1xf32>
// CHECK: %[[SQ:.*]] = kiln.mul %[[C]], %[[C]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK: %[[VAR:.*]] = kiln.mean %[[SQ]] {dims = array<i64: 1>, keepdim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK: %[[VE:.*]] = kiln.add %[[VAR]], %[[EPS]] : tensor<4x1xf32>, tensor<f32>
// CHECK: %[[RSTD:.*]] = kiln.rsqrt %[[VE]] : tensor<4x1xf32>
// CHECK: %[[N:.*]] = kiln.mul %[[C]], %[[RSTD]] : tensor<4x8xf32>, tensor<4x1xf32>
// CHECK: %[[S:.*]] = kiln.mul %[[N]], %[[W]] : tensor<4x8xf32>, tensor<8xf32>
// CHECK: %[[R:.*]] = kiln.add %[[S]], %[[B]] : tensor<4x8xf32>, tensor<8xf32>
// CHECK: return %[[R]]
// CHECK-NOT: kiln.layer_norm
func.func @layer_norm_rank2(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.layer_norm %x weight %w bias %b {num_dims = 1 : i64, eps = 1.0e-05 : f64} : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Tests that layer_norm over the last two dims of a rank-3 tensor with
// dynamic dims and no weight or bias reduces both dims and ends at the
// normalization.
// CHECK-LABEL: func.func @layer_norm_rank3_num_dims2
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x8xf32>)
// CHECK-DAG: %[[EPS:.*]] = kiln.constant dense<1.000000e-03> : tensor<f32>
// CHECK-DAG: %[[MEAN:.*]] = kiln.mean %[[X]] {dims = array<i64: 1, 2>, keepdim = true} : tensor<?x?x8xf32> -> tensor<?x1x1xf32>
// CHECK: %[[C:.*]] = kiln.sub %[[X]], %[[MEAN]]
// CHECK: %[[SQ:.*]] = kiln.mul %[[C]], %[[C]]
// CHECK: %[[VAR:.*]] = kiln.mean %[[SQ]] {dims = array<i64: 1, 2>, keepdim = true} : tensor<?x?x8xf32> -> tensor<?x1x1xf32>
// CHECK: %[[VE:.*]] = kiln.add %[[VAR]], %[[EPS]]
// CHECK: %[[RSTD:.*]] = kiln.rsqrt %[[VE]]
// CHECK: %[[N:.*]] = kiln.mul %[[C]], %[[RSTD]] : tensor<?x?x8xf32>, tensor<?x1x1xf32>
// CHECK-NEXT: return %[[N]] : tensor<?x?x8xf32>
func.func @layer_norm_rank3_num_dims2(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %0 = kiln.layer_norm %x {num_dims = 2 : i64, eps = 1.0e-03 : f64} : tensor<?x?x8xf32>
  return %0 : tensor<?x?x8xf32>
}

// -----

// Tests that layer_norm with only a weight scales and does not shift, and
// that a static rank-3 operand is normalized as its [rows, n] reshape (one
// loop over the 6 rows in codegen), reshaped back at the end.
// CHECK-LABEL: func.func @layer_norm_weight_only
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x8xf32>, %[[W:.*]]: tensor<8xf32>)
// CHECK: %[[ROWS:.*]] = kiln.reshape %[[X]] : tensor<2x3x8xf32> -> tensor<6x8xf32>
// CHECK: kiln.mean %[[ROWS]] {dims = array<i64: 1>, keepdim = true} : tensor<6x8xf32> -> tensor<6x1xf32>
// CHECK: %[[N:.*]] = kiln.mul %{{.*}}, %{{.*}} : tensor<6x8xf32>, tensor<6x1xf32>
// CHECK: %[[S:.*]] = kiln.mul %[[N]], %[[W]] : tensor<6x8xf32>, tensor<8xf32>
// CHECK: %[[R:.*]] = kiln.reshape %[[S]] : tensor<6x8xf32> -> tensor<2x3x8xf32>
// CHECK-NEXT: return %[[R]]
func.func @layer_norm_weight_only(%x: tensor<2x3x8xf32>, %w: tensor<8xf32>) -> tensor<2x3x8xf32> {
  %0 = kiln.layer_norm %x weight %w {num_dims = 1 : i64} : tensor<2x3x8xf32>, tensor<8xf32>
  return %0 : tensor<2x3x8xf32>
}

// -----

// Tests that layer_norm with only a bias shifts and does not scale; over
// two trailing dims the rows are [2, 24] and the bias becomes [24].
// CHECK-LABEL: func.func @layer_norm_bias_only
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x8xf32>, %[[B:.*]]: tensor<3x8xf32>)
// CHECK-DAG: kiln.reshape %[[X]] : tensor<2x3x8xf32> -> tensor<2x24xf32>
// CHECK-DAG: %[[B1:.*]] = kiln.reshape %[[B]] : tensor<3x8xf32> -> tensor<24xf32>
// CHECK: %[[N:.*]] = kiln.mul %{{.*}}, %{{.*}} : tensor<2x24xf32>, tensor<2x1xf32>
// CHECK: %[[A:.*]] = kiln.add %[[N]], %[[B1]] : tensor<2x24xf32>, tensor<24xf32>
// CHECK: %[[R:.*]] = kiln.reshape %[[A]] : tensor<2x24xf32> -> tensor<2x3x8xf32>
// CHECK-NEXT: return %[[R]]
func.func @layer_norm_bias_only(%x: tensor<2x3x8xf32>, %b: tensor<3x8xf32>) -> tensor<2x3x8xf32> {
  %0 = kiln.layer_norm %x bias %b {num_dims = 2 : i64} : tensor<2x3x8xf32>, tensor<3x8xf32>
  return %0 : tensor<2x3x8xf32>
}

// -----

// Tests that layer_norm of bf16 computes in f32 (input, eps, weight and
// bias) and rounds once at the end.
// CHECK-LABEL: func.func @layer_norm_bf16
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xbf16>, %[[W:.*]]: tensor<8xbf16>, %[[B:.*]]: tensor<8xbf16>)
// CHECK-DAG: %[[EPS:.*]] = kiln.constant dense<9.99999974E-6> : tensor<f32>
// CHECK-DAG: %[[UP:.*]] = kiln.cast %[[X]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK: kiln.mean %[[UP]] {dims = array<i64: 1>, keepdim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK: kiln.add %{{.*}}, %[[EPS]] : tensor<4x1xf32>, tensor<f32>
// CHECK: %[[WUP:.*]] = kiln.cast %[[W]] : tensor<8xbf16> -> tensor<8xf32>
// CHECK: %[[S:.*]] = kiln.mul %{{.*}}, %[[WUP]] : tensor<4x8xf32>, tensor<8xf32>
// CHECK: %[[BUP:.*]] = kiln.cast %[[B]] : tensor<8xbf16> -> tensor<8xf32>
// CHECK: %[[R:.*]] = kiln.add %[[S]], %[[BUP]] : tensor<4x8xf32>, tensor<8xf32>
// CHECK: %[[DOWN:.*]] = kiln.cast %[[R]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK: return %[[DOWN]]
func.func @layer_norm_bf16(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>, %b: tensor<8xbf16>) -> tensor<4x8xbf16> {
  %0 = kiln.layer_norm %x weight %w bias %b {num_dims = 1 : i64} : tensor<4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>
  return %0 : tensor<4x8xbf16>
}

// -----

// Tests that silu becomes x * sigmoid(x) for ranks 2 and 3, static and
// dynamic, in the operand's type.
// CHECK-LABEL: func.func @silu
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[Y:.*]]: tensor<?x4x?xf16>)
// CHECK: %[[SX:.*]] = kiln.sigmoid %[[X]] : tensor<4x8xf32>
// CHECK: %[[RX:.*]] = kiln.mul %[[X]], %[[SX]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK: %[[SY:.*]] = kiln.sigmoid %[[Y]] : tensor<?x4x?xf16>
// CHECK: %[[RY:.*]] = kiln.mul %[[Y]], %[[SY]] : tensor<?x4x?xf16>, tensor<?x4x?xf16>
// CHECK: return %[[RX]], %[[RY]]
// CHECK-NOT: kiln.silu
func.func @silu(%x: tensor<4x8xf32>, %y: tensor<?x4x?xf16>) -> (tensor<4x8xf32>, tensor<?x4x?xf16>) {
  %0 = kiln.silu %x : tensor<4x8xf32>
  %1 = kiln.silu %y : tensor<?x4x?xf16>
  return %0, %1 : tensor<4x8xf32>, tensor<?x4x?xf16>
}

// -----

// Tests that ops outside the composite set stay as they are, including gelu
// and the ops the decompositions produce.
// CHECK-LABEL: func.func @negative_primitives
// CHECK: kiln.gelu
// CHECK: kiln.sigmoid
// CHECK: kiln.max
// CHECK: kiln.mean
// CHECK: kiln.rsqrt
// CHECK: kiln.matmul
// CHECK-NOT: kiln.exp
func.func @negative_primitives(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x1xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = kiln.gelu %x {approximate = "tanh"} : tensor<4x8xf32>
  %1 = kiln.sigmoid %x : tensor<4x8xf32>
  %2 = kiln.max %x {dims = array<i64: 1>, keepdim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %3 = kiln.mean %x {dims = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
  %4 = kiln.rsqrt %x : tensor<4x8xf32>
  %5 = kiln.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x1xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Tests that softmax over the last dim of a static rank-3 tensor is the
// softmax of its [rows, n] reshape, reshaped back.
// CHECK-LABEL: func.func @softmax_rank3_static_rows
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x8xf32>)
// CHECK: %[[ROWS:.*]] = kiln.reshape %[[X]] : tensor<2x3x8xf32> -> tensor<6x8xf32>
// CHECK: kiln.max %[[ROWS]] {dims = array<i64: 1>, keepdim = true} : tensor<6x8xf32> -> tensor<6x1xf32>
// CHECK: %[[D:.*]] = kiln.mul
// CHECK: %[[R:.*]] = kiln.reshape %[[D]] : tensor<6x8xf32> -> tensor<2x3x8xf32>
// CHECK-NEXT: return %[[R]]
// CHECK-NOT: kiln.softmax
func.func @softmax_rank3_static_rows(%x: tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
  %0 = kiln.softmax %x {dim = 2 : i64} : tensor<2x3x8xf32>
  return %0 : tensor<2x3x8xf32>
}
