// RUN: kiln-opt %s -split-input-file -canonicalize | FileCheck %s
// RUN: kiln-opt %s -split-input-file -cse | FileCheck %s --check-prefix=CSE

// What -canonicalize and -cse do to kiln ops beyond the folders of
// folding.mlir: every kiln op is Pure (dead ones are erased, identical ones
// are merged), commutative ops put constants on the right, and kiln.constant
// is ConstantLike (uniqued and hoisted).

// Tests that the commutative ops (add, mul, maximum, minimum) move a
// constant operand to the right, swapping the operand types with it.
// CHECK-LABEL: func.func @commutative_constant_right
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK: %[[C:.*]] = kiln.constant dense<2.000000e+00> : tensor<8xf32>
// CHECK: kiln.add %[[X]], %[[C]] : tensor<4x8xf32>, tensor<8xf32>
// CHECK: kiln.mul %[[X]], %[[C]] : tensor<4x8xf32>, tensor<8xf32>
// CHECK: kiln.maximum %[[X]], %[[C]] : tensor<4x8xf32>, tensor<8xf32>
// CHECK: kiln.minimum %[[X]], %[[C]] : tensor<4x8xf32>, tensor<8xf32>
func.func @commutative_constant_right(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %c = kiln.constant dense<2.0> : tensor<8xf32>
  %0 = kiln.add %c, %x : tensor<8xf32>, tensor<4x8xf32>
  %1 = kiln.mul %c, %x : tensor<8xf32>, tensor<4x8xf32>
  %2 = kiln.maximum %c, %x : tensor<8xf32>, tensor<4x8xf32>
  %3 = kiln.minimum %c, %x : tensor<8xf32>, tensor<4x8xf32>
  return %0, %1, %2, %3 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Tests that non-commutative ops keep a constant on the left.
// CHECK-LABEL: func.func @negative_not_commutative
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK: %[[C:.*]] = kiln.constant
// CHECK: kiln.sub %[[C]], %[[X]]
// CHECK: kiln.div %[[C]], %[[X]]
// CHECK: kiln.pow %[[C]], %[[X]]
// CHECK: kiln.lt %[[C]], %[[X]]
func.func @negative_not_commutative(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi1>) {
  %c = kiln.constant dense<2.0> : tensor<f32>
  %0 = kiln.sub %c, %x : tensor<f32>, tensor<4xf32>
  %1 = kiln.div %c, %x : tensor<f32>, tensor<4xf32>
  %2 = kiln.pow %c, %x : tensor<f32>, tensor<4xf32>
  %3 = kiln.lt %c, %x : tensor<f32>, tensor<4xf32>
  return %0, %1, %2, %3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi1>
}

// -----

// Tests that moving the constant to the right lets the x + (-0.0) identity
// fold when the -0.0 was written first.
// CHECK-LABEL: func.func @commute_then_fold
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @commute_then_fold(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = kiln.constant dense<-0.0> : tensor<4xf32>
  %0 = kiln.add %z, %x : tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that unused kiln ops are erased (they are Pure), including
// matmuls, reductions and composite ops.
// CHECK-LABEL: func.func @dead_ops
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @dead_ops(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = kiln.exp %x : tensor<4x4xf32>
  %1 = kiln.matmul %x, %0 : tensor<4x4xf32>, tensor<4x4xf32>
  %2 = kiln.sum %1 {dims = array<i64: 1>} : tensor<4x4xf32> -> tensor<4xf32>
  %3 = kiln.softmax %x {dim = 0 : i64} : tensor<4x4xf32>
  %4 = kiln.layer_norm %x {num_dims = 1 : i64} : tensor<4x4xf32>
  return %x : tensor<4x4xf32>
}

// -----

// Tests that a kiln.constant inside a nested region is hoisted to the
// function entry and merged with an identical one there.
// CHECK-LABEL: func.func @hoist_constant
// CHECK-NEXT: %[[C:.*]] = kiln.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK-NOT: kiln.constant
// CHECK: scf.if
// CHECK: kiln.sub %{{.*}}, %[[C]]
// CHECK: kiln.add %{{.*}}, %[[C]]
func.func @hoist_constant(%x: tensor<4xf32>, %p: i1) -> tensor<4xf32> {
  %r = scf.if %p -> tensor<4xf32> {
    %c1 = kiln.constant dense<1.0> : tensor<4xf32>
    %s = kiln.sub %x, %c1 : tensor<4xf32>, tensor<4xf32>
    scf.yield %s : tensor<4xf32>
  } else {
    scf.yield %x : tensor<4xf32>
  }
  %c = kiln.constant dense<1.0> : tensor<4xf32>
  %0 = kiln.add %r, %c : tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that CSE merges identical kiln ops (same operands, attributes and
// types) across kinds: elementwise, matmul, reductions, shape ops.
// CSE-LABEL: func.func @cse_identical
// CSE-SAME: (%[[X:.*]]: tensor<4x4xf32>)
// CSE-NEXT: %[[E:.*]] = kiln.exp %[[X]]
// CSE-NEXT: %[[M:.*]] = kiln.matmul %[[E]], %[[X]]
// CSE-NEXT: %[[S:.*]] = kiln.sum %[[M]]
// CSE-NEXT: %[[P:.*]] = kiln.permute %[[S]]
// CSE-NEXT: return %[[E]], %[[E]], %[[M]], %[[M]], %[[P]], %[[P]]
func.func @cse_identical(%x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>) {
  %e0 = kiln.exp %x : tensor<4x4xf32>
  %e1 = kiln.exp %x : tensor<4x4xf32>
  %m0 = kiln.matmul %e0, %x : tensor<4x4xf32>, tensor<4x4xf32>
  %m1 = kiln.matmul %e1, %x : tensor<4x4xf32>, tensor<4x4xf32>
  %s0 = kiln.sum %m0 {dims = array<i64: 1>, keepdim = true} : tensor<4x4xf32> -> tensor<4x1xf32>
  %s1 = kiln.sum %m1 {dims = array<i64: 1>, keepdim = true} : tensor<4x4xf32> -> tensor<4x1xf32>
  %p0 = kiln.permute %s0 {dims = array<i64: 1, 0>} : tensor<4x1xf32> -> tensor<1x4xf32>
  %p1 = kiln.permute %s1 {dims = array<i64: 1, 0>} : tensor<4x1xf32> -> tensor<1x4xf32>
  return %e0, %e1, %m0, %m1, %p0, %p1 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>
}

// -----

// Tests that CSE keeps ops that differ only in an attribute (gelu's
// approximation, the reduced dims, keepdim, eps) or in operand order of a
// non-commutative op.
// CSE-LABEL: func.func @negative_cse_attributes_differ
// CSE-COUNT-2: kiln.gelu
// CSE-COUNT-3: kiln.sum
// CSE-COUNT-2: kiln.layer_norm
// CSE-COUNT-2: kiln.sub
func.func @negative_cse_attributes_differ(%x: tensor<4x4xf32>, %y: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x1xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %g0 = kiln.gelu %x : tensor<4x4xf32>
  %g1 = kiln.gelu %x {approximate = "tanh"} : tensor<4x4xf32>
  %s0 = kiln.sum %x {dims = array<i64: 0>} : tensor<4x4xf32> -> tensor<4xf32>
  %s1 = kiln.sum %x {dims = array<i64: 1>} : tensor<4x4xf32> -> tensor<4xf32>
  %s2 = kiln.sum %x {dims = array<i64: 1>, keepdim = true} : tensor<4x4xf32> -> tensor<4x1xf32>
  %l0 = kiln.layer_norm %x {num_dims = 1 : i64} : tensor<4x4xf32>
  %l1 = kiln.layer_norm %x {num_dims = 1 : i64, eps = 1.0e-6 : f64} : tensor<4x4xf32>
  %d0 = kiln.sub %x, %y : tensor<4x4xf32>, tensor<4x4xf32>
  %d1 = kiln.sub %y, %x : tensor<4x4xf32>, tensor<4x4xf32>
  return %g0, %g1, %s0, %s1, %s2, %l0, %l1, %d0, %d1 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x1xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}
