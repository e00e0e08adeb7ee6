// RUN: kiln-opt %s -split-input-file -kiln-autodiff -canonicalize | FileCheck %s

// kiln-autodiff's accumulation of gradients (transforms/Autodiff.cpp
// joinDisjointConcats): two zero-padded gradients of disjoint slices of one
// tensor become one concat of their pieces instead of an add of full-size
// tensors. -canonicalize drops the padded forms the join left unused.

// Tests that the gradients of disjoint slices of one tensor (attention's q,
// k and v cut from one projection) are joined side by side: one concat of
// the three pieces, no zero padding to the full size and no adds.
// CHECK-LABEL: func.func @disjoint_slices_bwd
// CHECK-NOT: kiln.add
// CHECK-NOT: kiln.broadcast_to
// CHECK: kiln.concat {{.*}} {dim = 0 : i64} : tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x4xf32> -> tensor<3x4xf32>
// CHECK-NOT: kiln.add
// CHECK: return
func.func @disjoint_slices(%x: tensor<3x4xf32> {kiln.requires_grad}) -> tensor<1x4xf32> {
  %q = kiln.slice %x {start = array<i64: 0, 0>, end = array<i64: 1, 4>, step = array<i64: 1, 1>} : tensor<3x4xf32> -> tensor<1x4xf32>
  %k = kiln.slice %x {start = array<i64: 1, 0>, end = array<i64: 2, 4>, step = array<i64: 1, 1>} : tensor<3x4xf32> -> tensor<1x4xf32>
  %v = kiln.slice %x {start = array<i64: 2, 0>, end = array<i64: 3, 4>, step = array<i64: 1, 1>} : tensor<3x4xf32> -> tensor<1x4xf32>
  %0 = kiln.mul %q, %k : tensor<1x4xf32>, tensor<1x4xf32>
  %1 = kiln.mul %0, %v : tensor<1x4xf32>, tensor<1x4xf32>
  return %1 : tensor<1x4xf32>
}

// -----

// Tests (negative) that overlapping slices' gradients are still added
// (row 1 gets both).
// CHECK-LABEL: func.func @negative_overlapping_slices_bwd
// CHECK: %[[A:.*]] = kiln.concat {{.*}} -> tensor<3x4xf32>
// CHECK: %[[B:.*]] = kiln.concat {{.*}} -> tensor<3x4xf32>
// CHECK: kiln.add %[[A]], %[[B]]
func.func @negative_overlapping_slices(%x: tensor<3x4xf32> {kiln.requires_grad}) -> tensor<2x4xf32> {
  %a = kiln.slice %x {start = array<i64: 0, 0>, end = array<i64: 2, 4>, step = array<i64: 1, 1>} : tensor<3x4xf32> -> tensor<2x4xf32>
  %b = kiln.slice %x {start = array<i64: 1, 0>, end = array<i64: 3, 4>, step = array<i64: 1, 1>} : tensor<3x4xf32> -> tensor<2x4xf32>
  %0 = kiln.mul %a, %b : tensor<2x4xf32>, tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
