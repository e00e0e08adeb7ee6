// RUN: kiln-opt %s -split-input-file -kiln-autodiff | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-autodiff="memory-budget=0" | FileCheck %s --check-prefix=BUDGET

// What kiln-autodiff's partitioner (transforms/autodiff/Partition.cpp)
// saves for the backward and what it recomputes there: a min-cut over the
// forward weighted by bytes; inputs and results cost nothing, matmul /
// conv2d / reductions / softmax are never recomputed at the default budget,
// random ops never. `kiln.saved_bytes` sums the forward's extra results.

// Tests an MLP block (linear + bias + GELU + linear): the GEMM's output is
// saved (64x128 f32 = 32768 bytes) and the bias add and GELU are recomputed
// from it in the backward; the GEMM itself is not recomputed. With
// memory-budget=0 nothing is saved: the GEMM is recomputed from the inputs.
// CHECK-LABEL: func.func @mlp_fwd
// CHECK: %[[M:.*]] = kiln.matmul
// CHECK: return %{{.*}}, %[[M]] : tensor<64x16xf32>, tensor<64x128xf32>
// CHECK-LABEL: func.func @mlp_bwd
// CHECK-SAME: (%[[G:.*]]: tensor<64x16xf32>, %[[X:.*]]: tensor<64x32xf32>, %[[B:.*]]: tensor<128xf32>, %[[W2:.*]]: tensor<16x128xf32>, %[[SM:.*]]: tensor<64x128xf32>)
// CHECK-SAME: kiln.num_saved = 1 : i64, kiln.release_inputs = array<i64: 4>, kiln.saved_bytes = 32768 : i64
// CHECK-NOT: kiln.matmul %[[X]],
// CHECK: %[[H:.*]] = kiln.add %[[SM]], %[[B]]
// CHECK: kiln.gelu %[[H]]
// CHECK-NOT: kiln.matmul %[[X]],
// CHECK: return
// BUDGET-LABEL: func.func @mlp_bwd
// BUDGET-SAME: kiln.num_saved = 0 : i64, kiln.release_inputs = array<i64>, kiln.saved_bytes = 0 : i64
// BUDGET: kiln.matmul
func.func @mlp(%x: tensor<64x32xf32>, %w1: tensor<128x32xf32> {kiln.requires_grad}, %b1: tensor<128xf32> {kiln.requires_grad}, %w2: tensor<16x128xf32> {kiln.requires_grad}) -> tensor<64x16xf32> {
  %t1 = kiln.permute %w1 {dims = array<i64: 1, 0>} : tensor<128x32xf32> -> tensor<32x128xf32>
  %m = kiln.matmul %x, %t1 : tensor<64x32xf32>, tensor<32x128xf32>
  %h = kiln.add %m, %b1 : tensor<64x128xf32>, tensor<128xf32>
  %a = kiln.gelu %h : tensor<64x128xf32>
  %t2 = kiln.permute %w2 {dims = array<i64: 1, 0>} : tensor<16x128xf32> -> tensor<128x16xf32>
  %y = kiln.matmul %a, %t2 : tensor<64x128xf32>, tensor<128x16xf32>
  return %y : tensor<64x16xf32>
}

// -----

// Tests an attention block: q, k, v (GEMM outputs) and the softmax's
// probabilities are saved (3 x 1024 + 512 bytes); k's transpose and the
// scaled scores are not (the transpose is recomputed from k, the scale
// needs no saved value).
// CHECK-LABEL: func.func @attention_bwd
// CHECK-SAME: %[[K:[^:]*]]: tensor<2x8x16xf32>, %[[V:[^:]*]]: tensor<2x8x16xf32>, %[[P:[^:]*]]: tensor<2x8x8xf32>)
// CHECK-SAME: kiln.num_saved = 4 : i64, kiln.release_inputs = array<i64: 2, 3, 4, 5>, kiln.saved_bytes = 3584 : i64
// CHECK: kiln.permute %[[K]] {dims = array<i64: 0, 2, 1>}
// CHECK-NOT: kiln.softmax
// CHECK: return
func.func @attention(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32> {kiln.requires_grad}, %wk: tensor<16x16xf32> {kiln.requires_grad}, %wv: tensor<16x16xf32> {kiln.requires_grad}) -> tensor<2x8x16xf32> {
  %q = kiln.matmul %x, %wq : tensor<2x8x16xf32>, tensor<16x16xf32>
  %k = kiln.matmul %x, %wk : tensor<2x8x16xf32>, tensor<16x16xf32>
  %v = kiln.matmul %x, %wv : tensor<2x8x16xf32>, tensor<16x16xf32>
  %kt = kiln.permute %k {dims = array<i64: 0, 2, 1>} : tensor<2x8x16xf32> -> tensor<2x16x8xf32>
  %s = kiln.matmul %q, %kt : tensor<2x8x16xf32>, tensor<2x16x8xf32>
  %c = kiln.constant dense<2.500000e-01> : tensor<f32>
  %ss = kiln.mul %s, %c : tensor<2x8x8xf32>, tensor<f32>
  %p = kiln.softmax %ss {dim = 2 : i64} : tensor<2x8x8xf32>
  %o = kiln.matmul %p, %v : tensor<2x8x8xf32>, tensor<2x8x16xf32>
  return %o : tensor<2x8x16xf32>
}

// -----

// Tests a conv + BatchNorm (training: batch statistics) + ReLU block: the
// convolution's output (2x4x6x6 f32 = 1152 bytes) and the two per-channel
// statistics are saved; the centered and normalized activations are
// recomputed from them, the ReLU's result is a graph result (free).
// CHECK-LABEL: func.func @conv_bn_relu_bwd
// CHECK-SAME: %[[C:[^:]*]]: tensor<2x4x6x6xf32>, %[[MU:[^:]*]]: tensor<1x4x1x1xf32>, %{{[^:]*}}: tensor<1x4x1x1xf32>)
// CHECK-SAME: kiln.num_saved = 3 : i64, kiln.release_inputs = array<i64: 4, 5, 6>, kiln.saved_bytes = 1184 : i64
// CHECK-NOT: kiln.mean
// CHECK: kiln.sub %[[C]], %[[MU]]
// CHECK: return
func.func @conv_bn_relu(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32> {kiln.requires_grad}, %gamma: tensor<4xf32> {kiln.requires_grad}, %beta: tensor<4xf32> {kiln.requires_grad}) -> tensor<2x4x6x6xf32> {
  %c = kiln.conv2d %x, %w : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x6x6xf32>
  %mu = kiln.mean %c {dims = array<i64: 0, 2, 3>, keepdim = true} : tensor<2x4x6x6xf32> -> tensor<1x4x1x1xf32>
  %d = kiln.sub %c, %mu : tensor<2x4x6x6xf32>, tensor<1x4x1x1xf32>
  %d2 = kiln.mul %d, %d : tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>
  %var = kiln.mean %d2 {dims = array<i64: 0, 2, 3>, keepdim = true} : tensor<2x4x6x6xf32> -> tensor<1x4x1x1xf32>
  %eps = kiln.constant dense<1.000000e-05> : tensor<f32>
  %ve = kiln.add %var, %eps : tensor<1x4x1x1xf32>, tensor<f32>
  %r = kiln.rsqrt %ve : tensor<1x4x1x1xf32>
  %n = kiln.mul %d, %r : tensor<2x4x6x6xf32>, tensor<1x4x1x1xf32>
  %g4 = kiln.reshape %gamma : tensor<4xf32> -> tensor<1x4x1x1xf32>
  %b4 = kiln.reshape %beta : tensor<4xf32> -> tensor<1x4x1x1xf32>
  %s = kiln.mul %n, %g4 : tensor<2x4x6x6xf32>, tensor<1x4x1x1xf32>
  %t = kiln.add %s, %b4 : tensor<2x4x6x6xf32>, tensor<1x4x1x1xf32>
  %y = kiln.relu %t : tensor<2x4x6x6xf32>
  return %y : tensor<2x4x6x6xf32>
}

// -----

// Tests (negative) that an expensive value the backward does not read is
// not saved: the GEMM's output only feeds a bias add, whose gradient needs
// no forward value.
// CHECK-LABEL: func.func @forward_only_fwd
// CHECK: return %{{.*}} : tensor<4x5xf32>
// CHECK-LABEL: func.func @forward_only_bwd
// CHECK-SAME: kiln.num_saved = 0 : i64, kiln.release_inputs = array<i64>, kiln.saved_bytes = 0 : i64
func.func @forward_only(%x: tensor<4x3xf32>, %w: tensor<3x5xf32>, %b: tensor<5xf32> {kiln.requires_grad}) -> tensor<4x5xf32> {
  %m = kiln.matmul %x, %w : tensor<4x3xf32>, tensor<3x5xf32>
  %y = kiln.add %m, %b : tensor<4x5xf32>, tensor<5xf32>
  return %y : tensor<4x5xf32>
}

// -----

// Tests (negative) that a random op is never recomputed, also at
// memory-budget=0: dropout's keep mask (an i1 tensor, 32 bytes) is saved,
// not the uniform draw nor a recomputation of it.
// CHECK-LABEL: func.func @dropout_bwd
// CHECK-SAME: (%{{[^:]*}}: tensor<4x8xf32>, %{{[^:]*}}: tensor<4x8xi1>)
// CHECK-SAME: kiln.num_saved = 1 : i64, kiln.release_inputs = array<i64: 1>, kiln.saved_bytes = 32 : i64
// CHECK-NOT: kiln.random
// CHECK: return
// BUDGET-LABEL: func.func @dropout_bwd
// BUDGET-NOT: kiln.random
// BUDGET: return
func.func @dropout(%x: tensor<4x8xf32> {kiln.requires_grad}, %seed: tensor<i64>, %off: tensor<i64>) -> tensor<4x8xf32> {
  %u = kiln.random "uniform" %seed, %off : tensor<4x8xf32>
  %p = kiln.constant dense<5.000000e-01> : tensor<f32>
  %keep = kiln.ge %u, %p : tensor<4x8xf32>, tensor<f32>
  %two = kiln.constant dense<2.000000e+00> : tensor<f32>
  %xs = kiln.mul %x, %two : tensor<4x8xf32>, tensor<f32>
  %zero = kiln.constant dense<0.000000e+00> : tensor<f32>
  %y = kiln.select %keep, %xs, %zero : tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>
  return %y : tensor<4x8xf32>
}
