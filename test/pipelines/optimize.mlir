// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(kiln-optimize)' | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-optimize | FileCheck %s

// The target-independent pipeline `kiln-optimize` (transforms/Pipelines.cpp):
// canonicalize, CSE, kiln-decompose, canonicalize, CSE on each function.

// Tests that composite ops are decomposed and that CSE then merges what the
// expansions share with each other and with the existing IR: the sigmoid of
// silu(x) is the existing sigmoid(x), and two softmaxes of x are one. The
// whole body is checked line by line.
// CHECK-LABEL: func.func @decompose_then_cse
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[ONE:.*]] = kiln.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[SIG:.*]] = kiln.sigmoid %[[X]] : tensor<4x8xf32>
// CHECK-NEXT: %[[SILU:.*]] = kiln.mul %[[X]], %[[SIG]]
// CHECK-NEXT: %[[MAX:.*]] = kiln.max %[[X]] {dims = array<i64: 1>, keepdim = true}
// CHECK-NEXT: %[[SUB:.*]] = kiln.sub %[[X]], %[[MAX]]
// CHECK-NEXT: %[[EXP:.*]] = kiln.exp %[[SUB]]
// CHECK-NEXT: %[[SUM:.*]] = kiln.sum %[[EXP]] {dims = array<i64: 1>, keepdim = true}
// CHECK-NEXT: %[[RCP:.*]] = kiln.div %[[ONE]], %[[SUM]]
// CHECK-NEXT: %[[SM:.*]] = kiln.mul %[[EXP]], %[[RCP]]
// CHECK-NEXT: return %[[SIG]], %[[SILU]], %[[SM]], %[[SM]]
func.func @decompose_then_cse(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = kiln.sigmoid %x : tensor<4x8xf32>
  %1 = kiln.silu %x : tensor<4x8xf32>
  %2 = kiln.softmax %x {dim = 1 : i64} : tensor<4x8xf32>
  %3 = kiln.softmax %x {dim = 1 : i64} : tensor<4x8xf32>
  return %0, %1, %2, %3 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Tests that two layer_norms of one f16 input share the upcast, the
// statistics and the eps constant, and differ only in the affine part (the
// whole body is checked line by line).
// CHECK-LABEL: func.func @layer_norms_share_statistics
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf16>, %[[W:.*]]: tensor<8xf16>)
// CHECK-NEXT: %[[EPS:.*]] = kiln.constant
// CHECK-NEXT: %[[UP:.*]] = kiln.cast %[[X]] : tensor<2x8xf16> -> tensor<2x8xf32>
// CHECK-NEXT: %[[MEAN:.*]] = kiln.mean %[[UP]]
// CHECK-NEXT: %[[C:.*]] = kiln.sub %[[UP]], %[[MEAN]]
// CHECK-NEXT: %[[SQ:.*]] = kiln.mul %[[C]], %[[C]]
// CHECK-NEXT: %[[VAR:.*]] = kiln.mean %[[SQ]]
// CHECK-NEXT: %[[VE:.*]] = kiln.add %[[VAR]], %[[EPS]]
// CHECK-NEXT: %[[RSTD:.*]] = kiln.rsqrt %[[VE]]
// CHECK-NEXT: %[[N:.*]] = kiln.mul %[[C]], %[[RSTD]] : tensor<2x8xf32>, tensor<2x1xf32>
// CHECK-NEXT: %[[A:.*]] = kiln.cast %[[N]] : tensor<2x8xf32> -> tensor<2x8xf16>
// CHECK-NEXT: %[[WUP:.*]] = kiln.cast %[[W]]
// CHECK-NEXT: %[[S:.*]] = kiln.mul %[[N]], %[[WUP]] : tensor<2x8xf32>, tensor<8xf32>
// CHECK-NEXT: %[[B:.*]] = kiln.cast %[[S]] : tensor<2x8xf32> -> tensor<2x8xf16>
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @layer_norms_share_statistics(%x: tensor<2x8xf16>, %w: tensor<8xf16>) -> (tensor<2x8xf16>, tensor<2x8xf16>) {
  %0 = kiln.layer_norm %x {num_dims = 1 : i64} : tensor<2x8xf16>
  %1 = kiln.layer_norm %x weight %w {num_dims = 1 : i64} : tensor<2x8xf16>, tensor<8xf16>
  return %0, %1 : tensor<2x8xf16>, tensor<2x8xf16>
}

// -----

// Tests that the pipeline also folds: double negation and identity permutes
// disappear and nothing else is introduced.
// CHECK-LABEL: func.func @folds
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: return %[[X]]
func.func @folds(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.neg %x : tensor<4x8xf32>
  %1 = kiln.neg %0 : tensor<4x8xf32>
  %2 = kiln.permute %1 {dims = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  %3 = kiln.permute %2 {dims = array<i64: 1, 0>} : tensor<8x4xf32> -> tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}
