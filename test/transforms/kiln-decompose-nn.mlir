// RUN: kiln-opt %s -split-input-file -kiln-decompose | FileCheck %s

// kiln-decompose rewrites kiln.conv2d (im2col + matmul), kiln.max_pool2d and
// kiln.avg_pool2d (strided slices of the padded input) into the primitive
// set (transforms/DecomposeNN.cpp). Numerics: test/python/test_conformance.py.

// Tests that a padded, strided 3x3 convolution pads H then W with zero
// constants, takes 9 stride-2 slices (one per tap, each given a unit dim so
// it stays a view), concatenates them into [N, C, 9, OH, OW] and reshapes
// that (contiguous) to [N, G, C*9, OH*OW] columns for the weight [G, F, C*9].
// CHECK-LABEL: func.func @conv2d_im2col
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>)
// CHECK-DAG: %[[ZH:.*]] = kiln.constant dense<0.000000e+00> : tensor<1x3x1x8xf32>
// CHECK-DAG: %[[ZW:.*]] = kiln.constant dense<0.000000e+00> : tensor<1x3x10x1xf32>
// CHECK: %[[PH:.*]] = kiln.concat %[[ZH]], %[[X]], %[[ZH]] {dim = 2 : i64}
// CHECK: %[[P:.*]] = kiln.concat %[[ZW]], %[[PH]], %[[ZW]] {dim = 3 : i64} {{.*}} -> tensor<1x3x10x10xf32>
// CHECK: kiln.slice %[[P]] {end = array<i64: 1, 3, 7, 7>, start = array<i64: 0, 0, 0, 0>, step = array<i64: 1, 1, 2, 2>}
// CHECK-COUNT-8: kiln.slice %[[P]]
// CHECK: kiln.reshape %{{.*}} : tensor<1x3x4x4xf32> -> tensor<1x3x1x4x4xf32>
// CHECK: %[[COLS:.*]] = kiln.concat {{.*}} {dim = 2 : i64} {{.*}} -> tensor<1x3x9x4x4xf32>
// CHECK: %[[C4:.*]] = kiln.reshape %[[COLS]] : tensor<1x3x9x4x4xf32> -> tensor<1x1x27x16xf32>
// CHECK: %[[WM:.*]] = kiln.reshape %[[W]] : tensor<4x3x3x3xf32> -> tensor<1x4x27xf32>
// CHECK: %[[MM:.*]] = kiln.matmul %[[WM]], %[[C4]]
// CHECK: %[[R:.*]] = kiln.reshape %[[MM]] : tensor<1x1x4x16xf32> -> tensor<1x4x4x4xf32>
// CHECK: return %[[R]]
// CHECK-NOT: kiln.conv2d
func.func @conv2d_im2col(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %0 = kiln.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// Tests that a weight held as [F, KH, KW, C] (a caller's channels-last
// weight, permuted to [F, C, KH, KW] by the frontend) is read as it is:
// the taps get their unit dim before C and concatenate along it, so the
// columns' rows are (kh, kw, c), the order of the weight's own elements.
// CHECK-LABEL: func.func @conv2d_im2col_ohwi_weight
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>)
// CHECK-NOT: kiln.permute
// CHECK: kiln.reshape %{{.*}} : tensor<1x3x4x4xf32> -> tensor<1x1x3x4x4xf32>
// CHECK: %[[COLS:.*]] = kiln.concat {{.*}} {dim = 1 : i64} {{.*}} -> tensor<1x9x3x4x4xf32>
// CHECK: %[[C4:.*]] = kiln.reshape %[[COLS]] : tensor<1x9x3x4x4xf32> -> tensor<1x1x27x16xf32>
// CHECK: %[[WM:.*]] = kiln.reshape %[[W]] : tensor<4x3x3x3xf32> -> tensor<1x4x27xf32>
// CHECK: kiln.matmul %[[WM]], %[[C4]]
// CHECK-NOT: kiln.conv2d
func.func @conv2d_im2col_ohwi_weight(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %p = kiln.permute %w {dims = array<i64: 0, 3, 1, 2>} : tensor<4x3x3x3xf32> -> tensor<4x3x3x3xf32>
  %0 = kiln.conv2d %x, %p {stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// Tests the negative cases of the [F, KH, KW, C] weight: another permute
// ([F, C, KW, KH] transposed taps) and a grouped convolution keep the
// permute and the (c, kh, kw) rows.
// CHECK-LABEL: func.func @negative_conv2d_im2col_other_permutes
// CHECK: %[[T:.*]] = kiln.permute %{{.*}} {dims = array<i64: 0, 1, 3, 2>}
// CHECK: kiln.concat {{.*}} {dim = 2 : i64} {{.*}} -> tensor<1x4x9x4x4xf32>
// CHECK: kiln.reshape %[[T]] : tensor<4x4x3x3xf32> -> tensor<1x4x36xf32>
// CHECK: %[[G:.*]] = kiln.permute %{{.*}} {dims = array<i64: 0, 3, 1, 2>}
// CHECK: kiln.concat {{.*}} {dim = 2 : i64} {{.*}} -> tensor<1x4x9x4x4xf32>
// CHECK: kiln.reshape %[[G]] : tensor<4x2x3x3xf32> -> tensor<2x2x18xf32>
func.func @negative_conv2d_im2col_other_permutes(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %v: tensor<4x3x3x2xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) {
  %t = kiln.permute %w {dims = array<i64: 0, 1, 3, 2>} : tensor<4x4x3x3xf32> -> tensor<4x4x3x3xf32>
  %0 = kiln.conv2d %x, %t {stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x4x4xf32>
  %g = kiln.permute %v {dims = array<i64: 0, 3, 1, 2>} : tensor<4x3x3x2xf32> -> tensor<4x2x3x3xf32>
  %1 = kiln.conv2d %x, %g {stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64} : tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32> -> tensor<1x4x4x4xf32>
  return %0, %1 : tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>
}

// -----

// Tests that a grouped 1x1 convolution needs no padding and one tap, and
// multiplies per group: [G, F/G, C/G] x [N, G, C/G, H*W] (negative case of
// the one-GEMM batch layout below: groups keep the per-image columns).
// CHECK-LABEL: func.func @conv2d_groups_1x1
// CHECK-NOT: kiln.permute
// CHECK-NOT: kiln.concat
// CHECK: kiln.reshape %{{.*}} : tensor<2x4x5x5xf32> -> tensor<2x2x2x25xf32>
// CHECK: kiln.reshape %{{.*}} : tensor<6x2x1x1xf32> -> tensor<2x3x2xf32>
// CHECK: kiln.matmul %{{.*}}, %{{.*}} : tensor<2x3x2xf32>, tensor<2x2x2x25xf32>
// CHECK: kiln.reshape %{{.*}} : tensor<2x2x3x25xf32> -> tensor<2x6x5x5xf32>
func.func @conv2d_groups_1x1(%x: tensor<2x4x5x5xf32>, %w: tensor<6x2x1x1xf32>) -> tensor<2x6x5x5xf32> {
  %0 = kiln.conv2d %x, %w {groups = 2 : i64} : tensor<2x4x5x5xf32>, tensor<6x2x1x1xf32> -> tensor<2x6x5x5xf32>
  return %0 : tensor<2x6x5x5xf32>
}

// -----

// Tests that windows tiling the input (stride == kernel, no padding: a ViT
// patch embedding) take their columns by one reshape + permute of the
// input, not one slice per tap: [N, G, Cg, OH, kh, OW, kw] permuted to
// [N, G, Cg, kh, kw, OH, OW] is [N, G, Cg*kh*kw, OH*OW].
// CHECK-LABEL: func.func @conv2d_patchify
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x8x8xf32>, %[[W:.*]]: tensor<5x3x4x4xf32>)
// CHECK-NOT: kiln.slice
// CHECK-NOT: kiln.concat
// CHECK: %[[V:.*]] = kiln.reshape %[[X]] : tensor<1x3x8x8xf32> -> tensor<1x1x3x2x4x2x4xf32>
// CHECK: %[[P:.*]] = kiln.permute %[[V]] {dims = array<i64: 0, 1, 2, 4, 6, 3, 5>} {{.*}} -> tensor<1x1x3x4x4x2x2xf32>
// CHECK: %[[C:.*]] = kiln.reshape %[[P]] {{.*}} -> tensor<1x1x48x4xf32>
// CHECK: %[[WM:.*]] = kiln.reshape %[[W]] : tensor<5x3x4x4xf32> -> tensor<1x5x48xf32>
// CHECK: kiln.matmul %[[WM]], %[[C]]
// CHECK-NOT: kiln.conv2d
func.func @conv2d_patchify(%x: tensor<1x3x8x8xf32>, %w: tensor<5x3x4x4xf32>) -> tensor<1x5x2x2xf32> {
  %0 = kiln.conv2d %x, %w {stride = array<i64: 4, 4>} : tensor<1x3x8x8xf32>, tensor<5x3x4x4xf32> -> tensor<1x5x2x2xf32>
  return %0 : tensor<1x5x2x2xf32>
}

// -----

// Tests that a tiling convolution of a batch cuts the rows/columns no window
// reaches (10 -> 8, as torch floors) and uses the channel-major one-GEMM
// layout [C*kh*kw, N*OH*OW].
// CHECK-LABEL: func.func @conv2d_patchify_batch_floor
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x10x9xf32>, %[[W:.*]]: tensor<5x3x4x4xf32>)
// CHECK: %[[S:.*]] = kiln.slice %[[X]] {end = array<i64: 2, 3, 8, 8>, start = array<i64: 0, 0, 0, 0>, step = array<i64: 1, 1, 1, 1>}
// CHECK-NOT: kiln.slice
// CHECK: %[[V:.*]] = kiln.reshape %[[S]] : tensor<2x3x8x8xf32> -> tensor<2x3x2x4x2x4xf32>
// CHECK: kiln.permute %[[V]] {dims = array<i64: 1, 3, 5, 0, 2, 4>} {{.*}} -> tensor<3x4x4x2x2x2xf32>
// CHECK: %[[C:.*]] = kiln.reshape %{{.*}} -> tensor<48x8xf32>
// CHECK: %[[WM:.*]] = kiln.reshape %[[W]] : tensor<5x3x4x4xf32> -> tensor<5x48xf32>
// CHECK: kiln.matmul %[[WM]], %[[C]]
// CHECK: kiln.permute %{{.*}} {dims = array<i64: 1, 0, 2, 3>}
func.func @conv2d_patchify_batch_floor(%x: tensor<2x3x10x9xf32>, %w: tensor<5x3x4x4xf32>) -> tensor<2x5x2x2xf32> {
  %0 = kiln.conv2d %x, %w {stride = array<i64: 4, 4>} : tensor<2x3x10x9xf32>, tensor<5x3x4x4xf32> -> tensor<2x5x2x2xf32>
  return %0 : tensor<2x5x2x2xf32>
}

// -----

// Tests that stride == kernel with padding is not taken as tiling
// (negative case of the patchify path: the general slices).
// CHECK-LABEL: func.func @negative_conv2d_patchify_padded
// CHECK: kiln.concat
// CHECK-COUNT-4: kiln.slice
func.func @negative_conv2d_patchify_padded(%x: tensor<1x3x6x6xf32>, %w: tensor<5x3x2x2xf32>) -> tensor<1x5x4x4xf32> {
  %0 = kiln.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<1x3x6x6xf32>, tensor<5x3x2x2xf32> -> tensor<1x5x4x4xf32>
  return %0 : tensor<1x5x4x4xf32>
}

// -----

// Tests that an ungrouped convolution of a batch (N > 1) with small images
// (OH*OW < 1024: per-image GEMMs would have few columns) is one GEMM over
// all images: the input is permuted to [C, N, H, W], the 9 taps of the padded
// input concatenate into channel-major columns [C*9, N*OH*OW], the weight
// [F, C*9] multiplies them once (no per-image batch, no broadcast weight)
// and the [F, N, OH, OW] product is permuted back to NCHW.
// CHECK-LABEL: func.func @conv2d_batch_one_gemm
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>)
// CHECK: %[[XT:.*]] = kiln.permute %[[X]] {dims = array<i64: 1, 0, 2, 3>} : tensor<2x3x8x8xf32> -> tensor<3x2x8x8xf32>
// CHECK: kiln.concat %{{.*}}, %[[XT]], %{{.*}} {dim = 2 : i64}
// CHECK-COUNT-9: kiln.slice
// CHECK: %[[COLS:.*]] = kiln.concat {{.*}} {dim = 1 : i64} : {{.*}} -> tensor<3x9x2x4x4xf32>
// CHECK: %[[C2:.*]] = kiln.reshape %[[COLS]] : tensor<3x9x2x4x4xf32> -> tensor<27x32xf32>
// CHECK: %[[W2:.*]] = kiln.reshape %[[W]] : tensor<4x3x3x3xf32> -> tensor<4x27xf32>
// CHECK: %[[MM:.*]] = kiln.matmul %[[W2]], %[[C2]] : tensor<4x27xf32>, tensor<27x32xf32>
// CHECK: %[[OUT:.*]] = kiln.reshape %[[MM]] : tensor<4x32xf32> -> tensor<4x2x4x4xf32>
// CHECK: %[[R:.*]] = kiln.permute %[[OUT]] {dims = array<i64: 1, 0, 2, 3>} : tensor<4x2x4x4xf32> -> tensor<2x4x4x4xf32>
// CHECK: return %[[R]]
func.func @conv2d_batch_one_gemm(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x4x4xf32> {
  %0 = kiln.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x4x4xf32>
  return %0 : tensor<2x4x4x4xf32>
}

// -----

// Tests that an ungrouped convolution of a batch whose images have at least
// 1024 output pixels (32x32 here) runs one GEMM per image on NCHW: the taps
// concatenate into per-image columns [N, 1, C*9, OH*OW], the weight [1, F,
// C*9] is a broadcast operand and the product is NCHW (no permutes).
// CHECK-LABEL: func.func @conv2d_batch_per_image
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x32x32xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>)
// CHECK-NOT: kiln.permute
// CHECK: kiln.concat %{{.*}}, %[[X]], %{{.*}} {dim = 2 : i64}
// CHECK-COUNT-9: kiln.slice
// CHECK: %[[COLS:.*]] = kiln.concat {{.*}} {dim = 2 : i64} : {{.*}} -> tensor<2x3x9x32x32xf32>
// CHECK: %[[C4:.*]] = kiln.reshape %[[COLS]] : tensor<2x3x9x32x32xf32> -> tensor<2x1x27x1024xf32>
// CHECK: %[[W3:.*]] = kiln.reshape %[[W]] : tensor<4x3x3x3xf32> -> tensor<1x4x27xf32>
// CHECK: %[[MM:.*]] = kiln.matmul %[[W3]], %[[C4]] : tensor<1x4x27xf32>, tensor<2x1x27x1024xf32>
// CHECK: %[[R:.*]] = kiln.reshape %[[MM]] : tensor<2x1x4x1024xf32> -> tensor<2x4x32x32xf32>
// CHECK-NOT: kiln.permute
// CHECK: return %[[R]]
func.func @conv2d_batch_per_image(%x: tensor<2x3x32x32xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x32x32xf32> {
  %0 = kiln.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<2x3x32x32xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x32x32xf32>
  return %0 : tensor<2x4x32x32xf32>
}

// -----

// Tests that a batched, ungrouped 1x1 convolution is one matmul on the NCHW
// layout: the [F, C] weight times the input viewed as [N, C, H*W] gives
// [N, F, H*W] (no permute, no slice, no concat).
// CHECK-LABEL: func.func @conv2d_batch_1x1
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x5x5xf32>, %[[W:.*]]: tensor<6x4x1x1xf32>)
// CHECK-NOT: kiln.permute
// CHECK-NOT: kiln.concat
// CHECK-NOT: kiln.slice
// CHECK: %[[X3:.*]] = kiln.reshape %[[X]] : tensor<2x4x5x5xf32> -> tensor<2x4x25xf32>
// CHECK: %[[W2:.*]] = kiln.reshape %[[W]] : tensor<6x4x1x1xf32> -> tensor<6x4xf32>
// CHECK: %[[MM:.*]] = kiln.matmul %[[W2]], %[[X3]] : tensor<6x4xf32>, tensor<2x4x25xf32>
// CHECK: %[[R:.*]] = kiln.reshape %[[MM]] : tensor<2x6x25xf32> -> tensor<2x6x5x5xf32>
// CHECK: return %[[R]]
func.func @conv2d_batch_1x1(%x: tensor<2x4x5x5xf32>, %w: tensor<6x4x1x1xf32>) -> tensor<2x6x5x5xf32> {
  %0 = kiln.conv2d %x, %w : tensor<2x4x5x5xf32>, tensor<6x4x1x1xf32> -> tensor<2x6x5x5xf32>
  return %0 : tensor<2x6x5x5xf32>
}

// -----

// Tests that a strided 1x1 convolution takes its one tap (a strided slice,
// no padding) and multiplies it as above.
// CHECK-LABEL: func.func @conv2d_1x1_stride2
// CHECK-NOT: kiln.permute
// CHECK-NOT: kiln.concat
// CHECK: %[[T:.*]] = kiln.slice %{{.*}} {end = array<i64: 8, 4, 7, 7>, start = array<i64: 0, 0, 0, 0>, step = array<i64: 1, 1, 2, 2>}
// CHECK: %[[T3:.*]] = kiln.reshape %[[T]] : tensor<8x4x4x4xf32> -> tensor<8x4x16xf32>
// CHECK: kiln.matmul %{{.*}}, %[[T3]] : tensor<6x4xf32>, tensor<8x4x16xf32>
func.func @conv2d_1x1_stride2(%x: tensor<8x4x8x8xf32>, %w: tensor<6x4x1x1xf32>) -> tensor<8x6x4x4xf32> {
  %0 = kiln.conv2d %x, %w {stride = array<i64: 2, 2>} : tensor<8x4x8x8xf32>, tensor<6x4x1x1xf32> -> tensor<8x6x4x4xf32>
  return %0 : tensor<8x6x4x4xf32>
}

// -----

// Tests that a padded 1x1 convolution is not "pointwise" (the padding ring
// is read): it keeps the im2col path (negative case).
// CHECK-LABEL: func.func @negative_conv2d_1x1_padded
// CHECK: kiln.concat
// CHECK: kiln.matmul %{{.*}}, %{{.*}} : tensor<1x6x4xf32>, tensor<1x1x4x49xf32>
func.func @negative_conv2d_1x1_padded(%x: tensor<1x4x5x5xf32>, %w: tensor<6x4x1x1xf32>) -> tensor<1x6x7x7xf32> {
  %0 = kiln.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<1x4x5x5xf32>, tensor<6x4x1x1xf32> -> tensor<1x6x7x7xf32>
  return %0 : tensor<1x6x7x7xf32>
}

// -----

// Tests that a depthwise convolution (groups == C) is a weighted sum of the
// taps: 9 strided slices of the padded input, each multiplied by the
// weight's [C, 1, 1] column of that tap, and added up; no im2col concat, no
// matmul.
// CHECK-LABEL: func.func @conv2d_depthwise
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8x8xf32>, %[[W:.*]]: tensor<4x1x3x3xf32>)
// CHECK-NOT: kiln.matmul
// CHECK: %[[PH:.*]] = kiln.concat %{{.*}}, %[[X]], %{{.*}} {dim = 2 : i64}
// CHECK: %[[P:.*]] = kiln.concat %{{.*}}, %[[PH]], %{{.*}} {dim = 3 : i64} {{.*}} -> tensor<2x4x10x10xf32>
// CHECK: %[[T0:.*]] = kiln.slice %[[P]] {end = array<i64: 2, 4, 7, 7>, start = array<i64: 0, 0, 0, 0>, step = array<i64: 1, 1, 2, 2>}
// CHECK: %[[W0:.*]] = kiln.slice %[[W]] {end = array<i64: 4, 1, 1, 1>, start = array<i64: 0, 0, 0, 0>, step = array<i64: 1, 1, 1, 1>}
// CHECK: %[[W0R:.*]] = kiln.reshape %[[W0]] : tensor<4x1x1x1xf32> -> tensor<4x1x1xf32>
// CHECK: %[[M0:.*]] = kiln.mul %[[T0]], %[[W0R]] : tensor<2x4x4x4xf32>, tensor<4x1x1xf32>
// CHECK: %[[T1:.*]] = kiln.slice %[[P]] {end = array<i64: 2, 4, 7, 8>, start = array<i64: 0, 0, 0, 1>, step = array<i64: 1, 1, 2, 2>}
// CHECK: %[[M1:.*]] = kiln.mul %[[T1]]
// CHECK: %[[S1:.*]] = kiln.add %[[M0]], %[[M1]]
// CHECK-COUNT-7: kiln.add
// CHECK-NOT: kiln.concat
// CHECK-NOT: kiln.matmul
// CHECK: return
func.func @conv2d_depthwise(%x: tensor<2x4x8x8xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<2x4x4x4xf32> {
  %0 = kiln.conv2d %x, %w {groups = 4 : i64, stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<2x4x8x8xf32>, tensor<4x1x3x3xf32> -> tensor<2x4x4x4xf32>
  return %0 : tensor<2x4x4x4xf32>
}

// -----

// Tests that a depthwise convolution with a channel multiplier (F = 2C)
// multiplies each tap, given a unit dim ([N, C, 1, OH, OW]), by the [C, 2, 1, 1]
// weights of that tap, and views the [N, C, 2, OH, OW] sum as [N, 2C, OH, OW].
// CHECK-LABEL: func.func @conv2d_depthwise_multiplier
// CHECK-NOT: kiln.matmul
// CHECK: kiln.reshape %{{.*}} : tensor<8x1x3x3xf32> -> tensor<4x2x3x3xf32>
// CHECK: kiln.reshape %{{.*}} : tensor<2x4x6x6xf32> -> tensor<2x4x1x6x6xf32>
// CHECK: kiln.mul %{{.*}}, %{{.*}} : tensor<2x4x1x6x6xf32>, tensor<4x2x1x1xf32>
// CHECK: %[[S:.*]] = kiln.add {{.*}} : tensor<2x4x2x6x6xf32>, tensor<2x4x2x6x6xf32>
// CHECK: %[[R:.*]] = kiln.reshape %{{.*}} : tensor<2x4x2x6x6xf32> -> tensor<2x8x6x6xf32>
// CHECK: return %[[R]]
func.func @conv2d_depthwise_multiplier(%x: tensor<2x4x8x8xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<2x8x6x6xf32> {
  %0 = kiln.conv2d %x, %w {groups = 4 : i64} : tensor<2x4x8x8xf32>, tensor<8x1x3x3xf32> -> tensor<2x8x6x6xf32>
  return %0 : tensor<2x8x6x6xf32>
}

// -----

// Tests that a bf16 depthwise convolution accumulates in f32: input and
// weight are cast up, the sum is rounded once.
// CHECK-LABEL: func.func @conv2d_depthwise_bf16
// CHECK: kiln.cast %{{.*}} : tensor<1x2x5x5xbf16> -> tensor<1x2x5x5xf32>
// CHECK: kiln.cast %{{.*}} : tensor<2x1x3x3xbf16> -> tensor<2x1x3x3xf32>
// CHECK: kiln.mul {{.*}} : tensor<1x2x3x3xf32>, tensor<2x1x1xf32>
// CHECK: kiln.cast %{{.*}} : tensor<1x2x3x3xf32> -> tensor<1x2x3x3xbf16>
func.func @conv2d_depthwise_bf16(%x: tensor<1x2x5x5xbf16>, %w: tensor<2x1x3x3xbf16>) -> tensor<1x2x3x3xbf16> {
  %0 = kiln.conv2d %x, %w {groups = 2 : i64} : tensor<1x2x5x5xbf16>, tensor<2x1x3x3xbf16> -> tensor<1x2x3x3xbf16>
  return %0 : tensor<1x2x3x3xbf16>
}

// -----

// Tests that max pooling pads with -inf (extra bottom/right rows for the
// ceil_mode window) and combines the 4 taps with kiln.maximum.
// CHECK-LABEL: func.func @max_pool2d_ceil
// CHECK-DAG: kiln.constant dense<0xFF800000> : tensor<1x2x1x5xf32>
// CHECK-DAG: kiln.constant dense<0xFF800000> : tensor<1x2x6x1xf32>
// CHECK-COUNT-3: kiln.maximum
// CHECK-NOT: kiln.max_pool2d
func.func @max_pool2d_ceil(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  %0 = kiln.max_pool2d %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, ceil_mode = true} : tensor<1x2x5x5xf32> -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}

// -----

// Tests that max pooling of a value permuted from channels-last (a oneDNN
// convolution's NHWC result) pads and slices the NHWC value over dims 1, 2
// and permutes only the pooled result: no transpose of the big input.
// CHECK-LABEL: func.func @max_pool2d_of_nhwc
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x8x4xf32>)
// CHECK-DAG: kiln.constant dense<0xFF800000> : tensor<1x1x8x4xf32>
// CHECK-DAG: kiln.constant dense<0xFF800000> : tensor<1x10x1x4xf32>
// CHECK: kiln.slice %{{.*}} {end = array<i64: 1, 7, 7, 4>, start = array<i64: 0, 0, 0, 0>, step = array<i64: 1, 2, 2, 1>} : tensor<1x10x10x4xf32> -> tensor<1x4x4x4xf32>
// CHECK-COUNT-8: kiln.maximum {{.*}} : tensor<1x4x4x4xf32>
// CHECK: %[[R:.*]] = kiln.permute %{{.*}} {dims = array<i64: 0, 3, 1, 2>} : tensor<1x4x4x4xf32> -> tensor<1x4x4x4xf32>
// CHECK: return %[[R]]
func.func @max_pool2d_of_nhwc(%x: tensor<1x8x8x4xf32>) -> tensor<1x4x4x4xf32> {
  %p = kiln.permute %x {dims = array<i64: 0, 3, 1, 2>} : tensor<1x8x8x4xf32> -> tensor<1x4x8x8xf32>
  %0 = kiln.max_pool2d %p {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// Tests that a permute other than NHWC -> NCHW is pooled after it as usual.
// CHECK-LABEL: func.func @max_pool2d_of_other_permute
// CHECK: %[[P:.*]] = kiln.permute %{{.*}} {dims = array<i64: 0, 1, 3, 2>}
// CHECK: kiln.slice %[[P]] {{.*}} step = array<i64: 1, 1, 2, 2>
// CHECK-NOT: kiln.permute
func.func @max_pool2d_of_other_permute(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32> {
  %p = kiln.permute %x {dims = array<i64: 0, 1, 3, 2>} : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %0 = kiln.max_pool2d %p {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// Tests that average pooling of f16 sums the taps in f32 and divides by the
// per-position divisor (count_include_pad = false: border windows count
// only real cells), then rounds back to f16.
// CHECK-LABEL: func.func @avg_pool2d_f16
// CHECK: kiln.constant dense<{{\[\[}}4.000000e+00, 6.000000e+00, 4.000000e+00], [6.000000e+00, 9.000000e+00, 6.000000e+00], [4.000000e+00, 6.000000e+00, 4.000000e+00]]> : tensor<3x3xf32>
// CHECK: kiln.cast %{{.*}} : tensor<1x1x3x3xf16> -> tensor<1x1x3x3xf32>
// CHECK-COUNT-8: kiln.add
// CHECK: kiln.div
// CHECK: kiln.cast %{{.*}} : tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf16>
func.func @avg_pool2d_f16(%x: tensor<1x1x3x3xf16>) -> tensor<1x1x3x3xf16> {
  %0 = kiln.avg_pool2d %x {kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, count_include_pad = false} : tensor<1x1x3x3xf16> -> tensor<1x1x3x3xf16>
  return %0 : tensor<1x1x3x3xf16>
}

// -----

// Tests that a convolution over a dynamic batch is decomposed per image
// (the channel-major form would merge the batch into the columns): taps
// slice the whole batch (end -1), the shared weight multiplies a batched
// [?, 1, 27, 36] column tensor.
// CHECK-LABEL: func.func @conv2d_dynamic_batch
// CHECK-NOT: kiln.conv2d
// CHECK: kiln.slice %{{.*}} {end = array<i64: -1, 3, 6, 6>
// CHECK: kiln.matmul %{{.*}}, %{{.*}} : tensor<1x4x27xf32>, tensor<?x1x27x36xf32>
func.func @conv2d_dynamic_batch(%x: tensor<?x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<?x4x6x6xf32> {
  %0 = kiln.conv2d %x, %w : tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<?x4x6x6xf32>
  return %0 : tensor<?x4x6x6xf32>
}

// -----

// Tests that padding over a dynamic batch broadcasts the pad constant to
// the batch through a select on a [?, 1, 1, 1] carrier (a constant has
// static sizes).
// CHECK-LABEL: func.func @max_pool2d_dynamic_batch
// CHECK: %[[FIRST:.*]] = kiln.slice %{{.*}} {end = array<i64: -1, 1, 1, 1>
// CHECK: %[[CARRIER:.*]] = kiln.eq %[[FIRST]], %[[FIRST]]
// CHECK: kiln.select %[[CARRIER]], %{{.*}}, %{{.*}} : tensor<?x1x1x1xi1>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>
// CHECK-NOT: kiln.max_pool2d
func.func @max_pool2d_dynamic_batch(%x: tensor<?x2x4x4xf32>) -> tensor<?x2x2x2xf32> {
  %0 = kiln.max_pool2d %x {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, ceil_mode = false} : tensor<?x2x4x4xf32> -> tensor<?x2x2x2xf32>
  return %0 : tensor<?x2x2x2xf32>
}
