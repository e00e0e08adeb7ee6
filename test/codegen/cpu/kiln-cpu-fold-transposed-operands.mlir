// RUN: kiln-opt %s -split-input-file -kiln-cpu-fold-transposed-operands | FileCheck %s

// Tests that a transposed copy used only as a matmul's left operand is
// read in place (matmul_transpose_a), and the copy is gone.
// CHECK-LABEL: func.func @weight_gradient
// CHECK-SAME: (%[[G:.*]]: tensor<64x16xf32>, %[[X:.*]]: tensor<64x32xf32>
// CHECK-NOT: linalg.transpose
// CHECK: linalg.matmul_transpose_a ins(%[[G]], %[[X]] : tensor<64x16xf32>, tensor<64x32xf32>)
func.func @weight_gradient(%g: tensor<64x16xf32>, %x: tensor<64x32xf32>,
                           %c: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %e = tensor.empty() : tensor<16x64xf32>
  %gt = linalg.transpose ins(%g : tensor<64x16xf32>) outs(%e : tensor<16x64xf32>) permutation = [1, 0]
  %w = linalg.matmul ins(%gt, %x : tensor<16x64xf32>, tensor<64x32xf32>)
                     outs(%c : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %w : tensor<16x32xf32>
}

// -----

// Tests a right operand: the copy as the generic kiln-fuse-linalg-elementwise
// makes of a transpose, folded into matmul_transpose_b.
// CHECK-LABEL: func.func @right_operand_generic
// CHECK-SAME: (%[[A:.*]]: tensor<8x64xf32>, %[[Y:.*]]: tensor<32x64xf32>
// CHECK-NOT: linalg.generic
// CHECK: linalg.matmul_transpose_b ins(%[[A]], %[[Y]] : tensor<8x64xf32>, tensor<32x64xf32>)
#in = affine_map<(d0, d1) -> (d1, d0)>
#out = affine_map<(d0, d1) -> (d0, d1)>
func.func @right_operand_generic(%a: tensor<8x64xf32>, %y: tensor<32x64xf32>,
                                 %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %e = tensor.empty() : tensor<64x32xf32>
  %yt = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel"]}
      ins(%y : tensor<32x64xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r = linalg.matmul ins(%a, %yt : tensor<8x64xf32>, tensor<64x32xf32>)
                     outs(%c : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

// Tests that a transposed right operand of a matmul_transpose_b (x W^T
// with W itself a transposed copy) makes a plain matmul, and the batched
// forms: A^T and (B^T)^T over [B, K, M] operands.
// CHECK-LABEL: func.func @double_transpose_and_batched
// CHECK-SAME: (%[[A:.*]]: tensor<8x64xf32>, %[[W:.*]]: tensor<64x32xf32>, %[[C:.*]]: tensor<8x32xf32>, %[[P:.*]]: tensor<3x64x16xf32>, %[[D:.*]]: tensor<3x64x32xf32>, %[[BC:.*]]: tensor<3x16x32xf32>, %[[Q:.*]]: tensor<3x16x64xf32>, %[[K:.*]]: tensor<3x64x32xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: linalg.matmul ins(%[[A]], %[[W]] : tensor<8x64xf32>, tensor<64x32xf32>)
// CHECK: linalg.batch_matmul_transpose_a ins(%[[P]], %[[D]] : tensor<3x64x16xf32>, tensor<3x64x32xf32>)
// CHECK: linalg.batch_matmul ins(%[[Q]], %[[K]] : tensor<3x16x64xf32>, tensor<3x64x32xf32>)
func.func @double_transpose_and_batched(%a: tensor<8x64xf32>, %w: tensor<64x32xf32>,
    %c: tensor<8x32xf32>, %p: tensor<3x64x16xf32>, %d: tensor<3x64x32xf32>,
    %bc: tensor<3x16x32xf32>, %q: tensor<3x16x64xf32>, %k: tensor<3x64x32xf32>)
    -> (tensor<8x32xf32>, tensor<3x16x32xf32>, tensor<3x16x32xf32>) {
  %e = tensor.empty() : tensor<32x64xf32>
  %wt = linalg.transpose ins(%w : tensor<64x32xf32>) outs(%e : tensor<32x64xf32>) permutation = [1, 0]
  %r = linalg.matmul_transpose_b ins(%a, %wt : tensor<8x64xf32>, tensor<32x64xf32>)
                                 outs(%c : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e3 = tensor.empty() : tensor<3x16x64xf32>
  %pt = linalg.transpose ins(%p : tensor<3x64x16xf32>) outs(%e3 : tensor<3x16x64xf32>) permutation = [0, 2, 1]
  %b1 = linalg.batch_matmul ins(%pt, %d : tensor<3x16x64xf32>, tensor<3x64x32xf32>)
                            outs(%bc : tensor<3x16x32xf32>) -> tensor<3x16x32xf32>
  %ek = tensor.empty() : tensor<3x32x64xf32>
  %kt = linalg.transpose ins(%k : tensor<3x64x32xf32>) outs(%ek : tensor<3x32x64xf32>) permutation = [0, 2, 1]
  %b2 = linalg.batch_matmul_transpose_b ins(%q, %kt : tensor<3x16x64xf32>, tensor<3x32x64xf32>)
                                        outs(%bc : tensor<3x16x32xf32>) -> tensor<3x16x32xf32>
  return %r, %b1, %b2 : tensor<8x32xf32>, tensor<3x16x32xf32>, tensor<3x16x32xf32>
}

// -----

// Tests the negative cases, each keeping its copy: a copy with a second
// user, a permutation other than the last two dims swapped, an integer
// matmul (no BLAS: its loops read contiguous operands), and a copy that
// also casts.
// CHECK-LABEL: func.func @negatives
// CHECK: %[[T1:.*]] = linalg.transpose
// CHECK: linalg.matmul ins(%[[T1]],
// CHECK: %[[T2:.*]] = linalg.transpose
// CHECK: linalg.batch_matmul ins(%[[T2]],
// CHECK: %[[T3:.*]] = linalg.transpose
// CHECK: linalg.matmul ins(%[[T3]],
// CHECK: %[[T4:.*]] = linalg.generic
// CHECK: linalg.matmul ins(%[[T4]],
// CHECK-NOT: transpose_a
#in = affine_map<(d0, d1) -> (d1, d0)>
#out = affine_map<(d0, d1) -> (d0, d1)>
func.func @negatives(%g: tensor<64x16xf32>, %x: tensor<64x32xf32>, %c: tensor<16x32xf32>,
                     %p: tensor<16x3x64xf32>, %d: tensor<3x64x32xf32>, %bc: tensor<3x16x32xf32>,
                     %gi: tensor<64x16xi32>, %xi: tensor<64x32xi32>, %ci: tensor<16x32xi32>,
                     %gh: tensor<64x16xf16>)
    -> (tensor<16x32xf32>, tensor<16x64xf32>, tensor<3x16x32xf32>, tensor<16x32xi32>,
        tensor<16x32xf32>) {
  %e = tensor.empty() : tensor<16x64xf32>
  %gt = linalg.transpose ins(%g : tensor<64x16xf32>) outs(%e : tensor<16x64xf32>) permutation = [1, 0]
  %w = linalg.matmul ins(%gt, %x : tensor<16x64xf32>, tensor<64x32xf32>)
                     outs(%c : tensor<16x32xf32>) -> tensor<16x32xf32>
  %e3 = tensor.empty() : tensor<3x16x64xf32>
  %pt = linalg.transpose ins(%p : tensor<16x3x64xf32>) outs(%e3 : tensor<3x16x64xf32>) permutation = [1, 0, 2]
  %b = linalg.batch_matmul ins(%pt, %d : tensor<3x16x64xf32>, tensor<3x64x32xf32>)
                           outs(%bc : tensor<3x16x32xf32>) -> tensor<3x16x32xf32>
  %ei = tensor.empty() : tensor<16x64xi32>
  %gti = linalg.transpose ins(%gi : tensor<64x16xi32>) outs(%ei : tensor<16x64xi32>) permutation = [1, 0]
  %wi = linalg.matmul ins(%gti, %xi : tensor<16x64xi32>, tensor<64x32xi32>)
                      outs(%ci : tensor<16x32xi32>) -> tensor<16x32xi32>
  %ght = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel"]}
      ins(%gh : tensor<64x16xf16>) outs(%e : tensor<16x64xf32>) {
  ^bb0(%v: f16, %o: f32):
    %f = arith.extf %v : f16 to f32
    linalg.yield %f : f32
  } -> tensor<16x64xf32>
  %wh = linalg.matmul ins(%ght, %x : tensor<16x64xf32>, tensor<64x32xf32>)
                      outs(%c : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %w, %gt, %b, %wi, %wh : tensor<16x32xf32>, tensor<16x64xf32>, tensor<3x16x32xf32>,
                                 tensor<16x32xi32>, tensor<16x32xf32>
}
