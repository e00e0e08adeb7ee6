// RUN: kiln-opt %s -split-input-file -canonicalize | FileCheck %s

// The folders of ir/KilnFolds.cpp. Each folder has a positive case and
// `@negative_` cases where folding would change the value or the type.

// Tests that identical constants are uniqued and an unused one is erased.
// CHECK-LABEL: func.func @constant
// CHECK: %[[C:.*]] = kiln.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NOT: kiln.constant
// CHECK: return %[[C]], %[[C]]
func.func @constant() -> (tensor<f32>, tensor<f32>) {
  %0 = kiln.constant dense<2.000000e+00> : tensor<f32>
  %1 = kiln.constant dense<2.000000e+00> : tensor<f32>
  %2 = kiln.constant dense<3.000000e+00> : tensor<f32>
  return %0, %1 : tensor<f32>, tensor<f32>
}

// -----

// Tests that a cast to the operand's own type folds away.
// CHECK-LABEL: func.func @cast_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>)
// CHECK-NOT: kiln.cast
// CHECK: return %[[X]]
func.func @cast_same_type(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = kiln.cast %x : tensor<?x4xf32> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// Tests that a cast that changes the element type, and a round trip through
// another type (f32 -> i32 truncates), do not fold.
// CHECK-LABEL: func.func @negative_cast
// CHECK: %[[A:.*]] = kiln.cast %{{.*}} : tensor<4xf32> -> tensor<4xi32>
// CHECK: %[[B:.*]] = kiln.cast %[[A]] : tensor<4xi32> -> tensor<4xf32>
// CHECK: return %[[B]]
func.func @negative_cast(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.cast %x : tensor<4xf32> -> tensor<4xi32>
  %1 = kiln.cast %0 : tensor<4xi32> -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// Tests that neg(neg(x)) folds to x.
// CHECK-LABEL: func.func @neg_neg
// CHECK-SAME: (%[[X:.*]]: tensor<4xi64>)
// CHECK-NOT: kiln.neg
// CHECK: return %[[X]]
func.func @neg_neg(%x: tensor<4xi64>) -> tensor<4xi64> {
  %0 = kiln.neg %x : tensor<4xi64>
  %1 = kiln.neg %0 : tensor<4xi64>
  return %1 : tensor<4xi64>
}

// -----

// Tests that a single neg stays.
// CHECK-LABEL: func.func @negative_neg
// CHECK: kiln.neg
func.func @negative_neg(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.neg %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that x + (-0.0) folds to x (exact for every float, -0.0 and NaN
// included), also in f16 and with the constant on the left.
// CHECK-LABEL: func.func @add_negative_zero
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[H:.*]]: tensor<?x4xf16>)
// CHECK-NOT: kiln.add
// CHECK: return %[[X]], %[[X]], %[[H]]
func.func @add_negative_zero(%x: tensor<4xf32>, %h: tensor<?x4xf16>) -> (tensor<4xf32>, tensor<4xf32>, tensor<?x4xf16>) {
  %z = kiln.constant dense<-0.0> : tensor<f32>
  %0 = kiln.add %x, %z : tensor<4xf32>, tensor<f32>
  %1 = kiln.add %z, %x : tensor<f32>, tensor<4xf32>
  %zh = kiln.constant dense<-0.0> : tensor<1x4xf16>
  %2 = kiln.add %h, %zh : tensor<?x4xf16>, tensor<1x4xf16>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<?x4xf16>
}

// -----

// Tests that x + 0 folds to x for integers.
// CHECK-LABEL: func.func @add_integer_zero
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xi32>)
// CHECK-NOT: kiln.add
// CHECK: return %[[X]]
func.func @add_integer_zero(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %z = kiln.constant dense<0> : tensor<3xi32>
  %0 = kiln.add %x, %z : tensor<2x3xi32>, tensor<3xi32>
  return %0 : tensor<2x3xi32>
}

// -----

// Tests that x + (+0.0) does not fold: for x = -0.0 the sum is +0.0.
// CHECK-LABEL: func.func @negative_add_positive_zero
// CHECK: %[[R:.*]] = kiln.add
// CHECK: return %[[R]]
func.func @negative_add_positive_zero(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = kiln.constant dense<0.0> : tensor<f32>
  %0 = kiln.add %x, %z : tensor<4xf32>, tensor<f32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that adding a -0.0 that broadcasts x to a larger shape does not fold.
// CHECK-LABEL: func.func @negative_add_zero_broadcasts
// CHECK: %[[R:.*]] = kiln.add
// CHECK: return %[[R]] : tensor<2x4xf32>
func.func @negative_add_zero_broadcasts(%x: tensor<4xf32>) -> tensor<2x4xf32> {
  %z = kiln.constant dense<-0.0> : tensor<2x4xf32>
  %0 = kiln.add %x, %z : tensor<4xf32>, tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// Tests that adding a non-zero or non-splat constant does not fold.
// CHECK-LABEL: func.func @negative_add_non_zero
// CHECK-COUNT-2: kiln.add
func.func @negative_add_non_zero(%x: tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>) {
  %one = kiln.constant dense<1> : tensor<i32>
  %0 = kiln.add %x, %one : tensor<2xi32>, tensor<i32>
  %mixed = kiln.constant dense<[0, 1]> : tensor<2xi32>
  %1 = kiln.add %x, %mixed : tensor<2xi32>, tensor<2xi32>
  return %0, %1 : tensor<2xi32>, tensor<2xi32>
}

// -----

// Tests that x * 1 folds to x for floats and integers, with the constant on
// either side.
// CHECK-LABEL: func.func @mul_one
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xbf16>, %[[I:.*]]: tensor<?xi64>)
// CHECK-NOT: kiln.mul
// CHECK: return %[[X]], %[[X]], %[[I]]
func.func @mul_one(%x: tensor<4x8xbf16>, %i: tensor<?xi64>) -> (tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<?xi64>) {
  %one = kiln.constant dense<1.0> : tensor<8xbf16>
  %0 = kiln.mul %x, %one : tensor<4x8xbf16>, tensor<8xbf16>
  %1 = kiln.mul %one, %x : tensor<8xbf16>, tensor<4x8xbf16>
  %ione = kiln.constant dense<1> : tensor<i64>
  %2 = kiln.mul %i, %ione : tensor<?xi64>, tensor<i64>
  return %0, %1, %2 : tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<?xi64>
}

// -----

// Tests that a multiplication by 1 that broadcasts x does not fold.
// CHECK-LABEL: func.func @negative_mul_one_broadcasts
// CHECK: %[[R:.*]] = kiln.mul
// CHECK: return %[[R]] : tensor<3x4xf32>
func.func @negative_mul_one_broadcasts(%x: tensor<4xf32>) -> tensor<3x4xf32> {
  %one = kiln.constant dense<1.0> : tensor<3x1xf32>
  %0 = kiln.mul %x, %one : tensor<4xf32>, tensor<3x1xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// Tests that a multiplication by -1 or by 0 does not fold.
// CHECK-LABEL: func.func @negative_mul_not_one
// CHECK-COUNT-2: kiln.mul
func.func @negative_mul_not_one(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %m = kiln.constant dense<-1.0> : tensor<f32>
  %0 = kiln.mul %x, %m : tensor<4xf32>, tensor<f32>
  %z = kiln.constant dense<0.0> : tensor<f32>
  %1 = kiln.mul %x, %z : tensor<4xf32>, tensor<f32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Tests that the identity permutation folds away.
// CHECK-LABEL: func.func @permute_identity
// CHECK-SAME: (%[[X:.*]]: tensor<?x4x8xf32>)
// CHECK-NOT: kiln.permute
// CHECK: return %[[X]]
func.func @permute_identity(%x: tensor<?x4x8xf32>) -> tensor<?x4x8xf32> {
  %0 = kiln.permute %x {dims = array<i64: 0, 1, 2>} : tensor<?x4x8xf32> -> tensor<?x4x8xf32>
  return %0 : tensor<?x4x8xf32>
}

// -----

// Tests that two permutes compose into one: result dim i is x dim
// inner[outer[i]].
// CHECK-LABEL: func.func @permute_permute
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK: %[[R:.*]] = kiln.permute %[[X]] {dims = array<i64: 2, 1, 0>} : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
// CHECK-NOT: kiln.permute
// CHECK: return %[[R]]
func.func @permute_permute(%x: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
  %0 = kiln.permute %x {dims = array<i64: 1, 2, 0>} : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %1 = kiln.permute %0 {dims = array<i64: 1, 0, 2>} : tensor<3x4x2xf32> -> tensor<4x3x2xf32>
  return %1 : tensor<4x3x2xf32>
}

// -----

// Tests that a permute followed by its inverse folds away entirely.
// CHECK-LABEL: func.func @permute_inverse
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NOT: kiln.permute
// CHECK: return %[[X]]
func.func @permute_inverse(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = kiln.permute %x {dims = array<i64: 1, 2, 0>} : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %1 = kiln.permute %0 {dims = array<i64: 2, 0, 1>} : tensor<3x4x2xf32> -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// Tests that a non-identity permute of a non-permute stays, and that when a
// permute pair folds the inner permute is kept for its other users.
// CHECK-LABEL: func.func @negative_permute
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK: %[[T:.*]] = kiln.permute %[[X]] {dims = array<i64: 1, 0>}
// CHECK: %[[E:.*]] = kiln.exp %[[T]]
// CHECK: return %[[T]], %[[X]], %[[E]]
func.func @negative_permute(%x: tensor<4x8xf32>) -> (tensor<8x4xf32>, tensor<4x8xf32>, tensor<8x4xf32>) {
  %0 = kiln.permute %x {dims = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  %1 = kiln.permute %0 {dims = array<i64: 1, 0>} : tensor<8x4xf32> -> tensor<4x8xf32>
  %2 = kiln.exp %0 : tensor<8x4xf32>
  return %0, %1, %2 : tensor<8x4xf32>, tensor<4x8xf32>, tensor<8x4xf32>
}

// -----

// Tests that a reshape to the operand's own type folds away.
// CHECK-LABEL: func.func @reshape_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>)
// CHECK-NOT: kiln.reshape
// CHECK: return %[[X]]
func.func @reshape_same_type(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = kiln.reshape %x : tensor<?x8xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// Tests that a reshape of a reshape merges into one reshape of the source.
// CHECK-LABEL: func.func @reshape_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK: %[[R:.*]] = kiln.reshape %[[X]] : tensor<4x8xf32> -> tensor<2x16xf32>
// CHECK-NOT: kiln.reshape
// CHECK: return %[[R]]
func.func @reshape_reshape(%x: tensor<4x8xf32>) -> tensor<2x16xf32> {
  %0 = kiln.reshape %x : tensor<4x8xf32> -> tensor<32xf32>
  %1 = kiln.reshape %0 : tensor<32xf32> -> tensor<2x16xf32>
  return %1 : tensor<2x16xf32>
}

// -----

// Tests that reshaping back to the source type folds away both reshapes.
// CHECK-LABEL: func.func @reshape_round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NOT: kiln.reshape
// CHECK: return %[[X]]
func.func @reshape_round_trip(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.reshape %x : tensor<4x8xf32> -> tensor<2x2x8xf32>
  %1 = kiln.reshape %0 : tensor<2x2x8xf32> -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// Tests that a single reshape that changes the shape stays.
// CHECK-LABEL: func.func @negative_reshape
// CHECK: kiln.reshape %{{.*}} : tensor<4x8xf32> -> tensor<32xf32>
func.func @negative_reshape(%x: tensor<4x8xf32>) -> tensor<32xf32> {
  %0 = kiln.reshape %x : tensor<4x8xf32> -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

// Tests that a broadcast_to the operand's own type folds away.
// CHECK-LABEL: func.func @broadcast_to_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NOT: kiln.broadcast_to
// CHECK: return %[[X]]
func.func @broadcast_to_same_type(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.broadcast_to %x : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Tests that a broadcast_to that adds or stretches dims stays.
// CHECK-LABEL: func.func @negative_broadcast_to
// CHECK: kiln.broadcast_to %{{.*}} : tensor<1x8xf32> -> tensor<4x8xf32>
// CHECK: kiln.broadcast_to %{{.*}} : tensor<8xf32> -> tensor<1x8xf32>
func.func @negative_broadcast_to(%x: tensor<1x8xf32>, %y: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<1x8xf32>) {
  %0 = kiln.broadcast_to %x : tensor<1x8xf32> -> tensor<4x8xf32>
  %1 = kiln.broadcast_to %y : tensor<8xf32> -> tensor<1x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<1x8xf32>
}

// -----

// Tests that a slice keeping every element folds away (a step on a size-1
// dim keeps it whole).
// CHECK-LABEL: func.func @slice_everything
// CHECK-SAME: (%[[X:.*]]: tensor<4x1xf32>)
// CHECK-NOT: kiln.slice
// CHECK: return %[[X]]
func.func @slice_everything(%x: tensor<4x1xf32>) -> tensor<4x1xf32> {
  %0 = kiln.slice %x {start = array<i64: 0, 0>, end = array<i64: 4, 1>, step = array<i64: 1, 3>} : tensor<4x1xf32> -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

// Tests that slices that drop elements, or keep the size of a dynamic dim
// without covering it, stay.
// CHECK-LABEL: func.func @negative_slice
// CHECK: kiln.slice %{{.*}} : tensor<4x8xf32> -> tensor<3x8xf32>
// CHECK: kiln.slice %{{.*}} : tensor<4x8xf32> -> tensor<4x4xf32>
// CHECK: kiln.slice %{{.*}} : tensor<?x8xf32> -> tensor<2x8xf32>
func.func @negative_slice(%x: tensor<4x8xf32>, %y: tensor<?x8xf32>) -> (tensor<3x8xf32>, tensor<4x4xf32>, tensor<2x8xf32>) {
  %0 = kiln.slice %x {start = array<i64: 1, 0>, end = array<i64: 4, 8>, step = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<3x8xf32>
  %1 = kiln.slice %x {start = array<i64: 0, 0>, end = array<i64: 4, 8>, step = array<i64: 1, 2>} : tensor<4x8xf32> -> tensor<4x4xf32>
  %2 = kiln.slice %y {start = array<i64: 0, 0>, end = array<i64: 2, 8>, step = array<i64: 1, 1>} : tensor<?x8xf32> -> tensor<2x8xf32>
  return %0, %1, %2 : tensor<3x8xf32>, tensor<4x4xf32>, tensor<2x8xf32>
}

// -----

// Tests that a concat of one operand folds to it and one of two stays.
// CHECK-LABEL: func.func @concat_single
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK: %[[C:.*]] = kiln.concat %[[X]], %[[X]] {dim = 0 : i64}
// CHECK: return %[[X]], %[[C]]
func.func @concat_single(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<4x3xf32>) {
  %0 = kiln.concat %x {dim = 1 : i64} : tensor<2x3xf32> -> tensor<2x3xf32>
  %1 = kiln.concat %x, %x {dim = 0 : i64} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<4x3xf32>
}
