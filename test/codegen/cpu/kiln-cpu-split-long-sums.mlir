// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-cpu-split-long-sums))' | FileCheck %s

// kiln-cpu-split-long-sums (codegen/cpu/SplitLongSums.cpp): f32 sums and
// means over more than 32768 elements become sums over at most that many.

// Tests that a full sum of 100000 elements is cut into 97 chunks of 1024
// (a slice and a reshape), summed per chunk, then over the chunk sums, and
// the 672-element remainder slice is summed and added.
// CHECK-LABEL: func.func @one_long_dim
// CHECK-SAME: (%[[X:.*]]: tensor<100000xf32>)
// CHECK: %[[BODY:.*]] = kiln.slice %[[X]] {end = array<i64: 99328>, start = array<i64: 0>, step = array<i64: 1>}
// CHECK: %[[CH:.*]] = kiln.reshape %[[BODY]] : tensor<99328xf32> -> tensor<97x1024xf32>
// CHECK: %[[PART:.*]] = kiln.sum %[[CH]] {dims = array<i64: 1>, keepdim = true} : tensor<97x1024xf32> -> tensor<97x1xf32>
// CHECK: %[[ALL:.*]] = kiln.sum %[[PART]] {dims = array<i64: 0, 1>, keepdim = true} : tensor<97x1xf32> -> tensor<1x1xf32>
// CHECK: %[[MAIN:.*]] = kiln.reshape %[[ALL]] : tensor<1x1xf32> -> tensor<1xf32>
// CHECK: %[[TAIL:.*]] = kiln.slice %[[X]] {end = array<i64: 100000>, start = array<i64: 99328>, step = array<i64: 1>}
// CHECK: %[[TSUM:.*]] = kiln.sum %[[TAIL]] {dims = array<i64: 0>, keepdim = true}
// CHECK: %[[S:.*]] = kiln.add %[[MAIN]], %[[TSUM]]
// CHECK: %[[R:.*]] = kiln.reshape %[[S]] : tensor<1xf32> -> tensor<f32>
// CHECK: return %[[R]]
func.func @one_long_dim(%x: tensor<100000xf32>) -> tensor<f32> {
  %0 = kiln.sum %x {dims = array<i64: 0>} : tensor<100000xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Tests that a batch-norm-style mean over (N, H, W) sums each image's H x W
// first (keepdim), then over N, and divides by N * H * W; the keepdim result
// keeps its type.
// CHECK-LABEL: func.func @several_dims_mean
// CHECK-SAME: (%[[X:.*]]: tensor<32x4x112x112xf32>)
// CHECK-DAG: %[[C:.*]] = kiln.constant dense<4.014080e+05> : tensor<f32>
// CHECK-DAG: %[[HW:.*]] = kiln.sum %[[X]] {dims = array<i64: 2, 3>, keepdim = true} : tensor<32x4x112x112xf32> -> tensor<32x4x1x1xf32>
// CHECK: %[[N:.*]] = kiln.sum %[[HW]] {dims = array<i64: 0, 2, 3>, keepdim = true} : tensor<32x4x1x1xf32> -> tensor<1x4x1x1xf32>
// CHECK: %[[M:.*]] = kiln.div %[[N]], %[[C]]
// CHECK: return %[[M]] : tensor<1x4x1x1xf32>
func.func @several_dims_mean(%x: tensor<32x4x112x112xf32>) -> tensor<1x4x1x1xf32> {
  %0 = kiln.mean %x {dims = array<i64: 0, 2, 3>, keepdim = true} : tensor<32x4x112x112xf32> -> tensor<1x4x1x1xf32>
  return %0 : tensor<1x4x1x1xf32>
}

// -----

// Tests what stays: a sum of exactly 32768 elements, an integer sum, a bf16
// sum (accumulated in f32 by the lowering) and a dynamic one.
// CHECK-LABEL: func.func @short_or_exact
// CHECK-COUNT-4: kiln.sum %arg
// CHECK-NOT: kiln.slice
// CHECK-NOT: kiln.reshape
func.func @short_or_exact(%a: tensor<32768xf32>, %b: tensor<100000xi64>, %c: tensor<100000xbf16>, %d: tensor<?xf32>) -> (tensor<f32>, tensor<i64>, tensor<bf16>, tensor<f32>) {
  %0 = kiln.sum %a {dims = array<i64: 0>} : tensor<32768xf32> -> tensor<f32>
  %1 = kiln.sum %b {dims = array<i64: 0>} : tensor<100000xi64> -> tensor<i64>
  %2 = kiln.sum %c {dims = array<i64: 0>} : tensor<100000xbf16> -> tensor<bf16>
  %3 = kiln.sum %d {dims = array<i64: 0>} : tensor<?xf32> -> tensor<f32>
  return %0, %1, %2, %3 : tensor<f32>, tensor<i64>, tensor<bf16>, tensor<f32>
}
