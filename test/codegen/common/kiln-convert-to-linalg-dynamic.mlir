// RUN: kiln-opt %s -split-input-file -verify-diagnostics -pass-pipeline='builtin.module(func.func(kiln-convert-to-linalg))' | FileCheck %s

// kiln-convert-to-linalg with dynamic dims: destinations are sized with
// tensor.dim of the operand that carries each dim, and static dims stay
// static.

// Tests that an elementwise op sizes its destination from the dynamic dim
// of the operand that has it, and that static size-1 dims broadcast against
// dynamic dims on both sides.
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG: #[[COL:.*]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-LABEL: func.func @outer_dynamic
// CHECK-SAME: (%[[A:.*]]: tensor<?x1xf32>, %[[B:.*]]: tensor<1x?xf32>)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[M:.*]] = tensor.dim %[[A]], %[[C0]] : tensor<?x1xf32>
// CHECK-DAG: %[[N:.*]] = tensor.dim %[[B]], %[[C1]] : tensor<1x?xf32>
// CHECK: %[[E:.*]] = tensor.empty(%[[M]], %[[N]]) : tensor<?x?xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ROW]], #[[COL]], #{{.*}}]
// CHECK-SAME: outs(%[[E]] : tensor<?x?xf32>)
func.func @outer_dynamic(%a: tensor<?x1xf32>, %b: tensor<1x?xf32>) -> tensor<?x?xf32> {
  %0 = kiln.mul %a, %b : tensor<?x1xf32>, tensor<1x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// Tests that a keepdim reduction over a dynamic input re-expands with the
// runtime size of the kept dim.
// CHECK-LABEL: func.func @sum_keepdim_dynamic
// CHECK-SAME: (%[[X:.*]]: tensor<?x?xf32>)
// CHECK: %[[E:.*]] = tensor.empty(%{{.*}}) : tensor<?xf32>
// CHECK: %[[INIT:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<?xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK-SAME: ins(%[[X]] : tensor<?x?xf32>) outs(%[[INIT]] : tensor<?xf32>)
// CHECK: %[[D:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x?xf32>
// CHECK: tensor.expand_shape %[[SUM]] {{\[\[}}0, 1]] output_shape [%[[D]], 1] : tensor<?xf32> into tensor<?x1xf32>
func.func @sum_keepdim_dynamic(%x: tensor<?x?xf32>) -> tensor<?x1xf32> {
  %0 = kiln.sum %x {dims = array<i64: 1>, keepdim = true} : tensor<?x?xf32> -> tensor<?x1xf32>
  return %0 : tensor<?x1xf32>
}

// -----

// Tests that mean over a dynamic dim divides by the runtime element count
// (tensor.dim converted to the element type), not by a constant.
// CHECK-LABEL: func.func @mean_dynamic
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>)
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: %[[D:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x4xf32>
// CHECK: %[[N:.*]] = arith.uitofp %{{.*}} : i64 to f32
// CHECK: linalg.generic
// CHECK: arith.divf %{{.*}}, %[[N]] : f32
func.func @mean_dynamic(%x: tensor<?x4xf32>) -> tensor<4xf32> {
  %0 = kiln.mean %x {dims = array<i64: 0>} : tensor<?x4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that a batched matmul with dynamic M and N sizes its zero-filled
// destination from lhs dim 1 and rhs dim 2.
// CHECK-LABEL: func.func @batch_matmul_dynamic
// CHECK-SAME: (%[[A:.*]]: tensor<2x?x8xf32>, %[[B:.*]]: tensor<2x8x?xf32>)
// CHECK-DAG: %[[M:.*]] = tensor.dim %[[A]], %{{.*}} : tensor<2x?x8xf32>
// CHECK-DAG: %[[N:.*]] = tensor.dim %[[B]], %{{.*}} : tensor<2x8x?xf32>
// CHECK: %[[E:.*]] = tensor.empty(%[[M]], %[[N]]) : tensor<2x?x?xf32>
// CHECK: %[[INIT:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<2x?x?xf32>)
// CHECK: linalg.batch_matmul ins(%[[A]], %[[B]] : tensor<2x?x8xf32>, tensor<2x8x?xf32>) outs(%[[INIT]] : tensor<2x?x?xf32>)
func.func @batch_matmul_dynamic(%a: tensor<2x?x8xf32>, %b: tensor<2x8x?xf32>) -> tensor<2x?x?xf32> {
  %0 = kiln.matmul %a, %b : tensor<2x?x8xf32>, tensor<2x8x?xf32>
  return %0 : tensor<2x?x?xf32>
}

// -----

// Tests that a permute of a dynamic dim moves it in the destination's
// dynamic sizes.
// CHECK-LABEL: func.func @permute_dynamic
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>)
// CHECK: %[[D:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x4xf32>
// CHECK: %[[E:.*]] = tensor.empty(%[[D]]) : tensor<4x?xf32>
// CHECK: linalg.transpose ins(%[[X]] : tensor<?x4xf32>) outs(%[[E]] : tensor<4x?xf32>) permutation = [1, 0]
func.func @permute_dynamic(%x: tensor<?x4xf32>) -> tensor<4x?xf32> {
  %0 = kiln.permute %x {dims = array<i64: 1, 0>} : tensor<?x4xf32> -> tensor<4x?xf32>
  return %0 : tensor<4x?xf32>
}

// -----

// Tests that a reshape from a dynamic operand to a static shape becomes
// tensor.reshape with a constant shape operand.
// CHECK-LABEL: func.func @reshape_dynamic_to_static
// CHECK-SAME: (%[[X:.*]]: tensor<?x3xf32>)
// CHECK: %[[SHAPE:.*]] = arith.constant dense<[2, 6]> : tensor<2xi64>
// CHECK: tensor.reshape %[[X]](%[[SHAPE]]) : (tensor<?x3xf32>, tensor<2xi64>) -> tensor<2x6xf32>
func.func @reshape_dynamic_to_static(%x: tensor<?x3xf32>) -> tensor<2x6xf32> {
  %0 = kiln.reshape %x : tensor<?x3xf32> -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

// Tests that a matmul with a dynamic batch dim (attention's scores over a
// symbolic batch) collapses the batch dims into one dynamic dim, sizes the
// accumulator from the collapsed operand and expands the product back.
// CHECK-LABEL: func.func @dynamic_batch
// CHECK-SAME: (%[[A:.*]]: tensor<?x4x?x8xf32>, %[[B:.*]]: tensor<?x4x8x?xf32>)
// CHECK: %[[X:.*]] = tensor.collapse_shape %[[A]] {{\[\[}}0, 1], [2], [3]] : tensor<?x4x?x8xf32> into tensor<?x?x8xf32>
// CHECK: %[[Y:.*]] = tensor.collapse_shape %[[B]] {{\[\[}}0, 1], [2], [3]] : tensor<?x4x8x?xf32> into tensor<?x8x?xf32>
// CHECK: %[[INIT:.*]] = linalg.fill {{.*}} -> tensor<?x?x?xf32>
// CHECK: %[[C:.*]] = linalg.batch_matmul ins(%[[X]], %[[Y]] : tensor<?x?x8xf32>, tensor<?x8x?xf32>) outs(%[[INIT]] : tensor<?x?x?xf32>)
// CHECK: tensor.expand_shape %[[C]] {{\[\[}}0, 1], [2], [3]] output_shape
func.func @dynamic_batch(%a: tensor<?x4x?x8xf32>, %b: tensor<?x4x8x?xf32>) -> tensor<?x4x?x?xf32> {
  %0 = kiln.matmul %a, %b : tensor<?x4x?x8xf32>, tensor<?x4x8x?xf32>
  return %0 : tensor<?x4x?x?xf32>
}

// -----

// Tests that a 3-D linear over a symbolic batch and sequence is one GEMM
// over [b * t, k] whose product goes back to [b, t, n] through a
// tensor.reshape sized by the input's dims (an expand_shape with two
// dynamic dims in one group does not bufferize in MLIR 19).
// CHECK-LABEL: func.func @linear_dynamic_batch_and_sequence
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x8xf32>, %[[W:.*]]: tensor<8x4xf32>)
// CHECK: %[[D0:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x?x8xf32>
// CHECK: %[[X2:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<?x?x8xf32> into tensor<?x8xf32>
// CHECK: %[[C:.*]] = linalg.matmul ins(%[[X2]], %[[W]] : tensor<?x8xf32>, tensor<8x4xf32>)
// CHECK: %[[SHAPE:.*]] = tensor.from_elements %{{.*}}, %{{.*}}, %{{.*}} : tensor<3xi64>
// CHECK: tensor.reshape %[[C]](%[[SHAPE]]) : (tensor<?x4xf32>, tensor<3xi64>) -> tensor<?x?x4xf32>
func.func @linear_dynamic_batch_and_sequence(%x: tensor<?x?x8xf32>, %w: tensor<8x4xf32>) -> tensor<?x?x4xf32> {
  %0 = kiln.matmul %x, %w : tensor<?x?x8xf32>, tensor<8x4xf32>
  return %0 : tensor<?x?x4xf32>
}

// -----

// Tests that a reshape keeping two dynamic dims in order while splitting a
// static one (attention's [b, t, 64] -> [b, t, 4, 16]) takes each dynamic
// size from the input's dim.
// CHECK-LABEL: func.func @reshape_keeps_dynamic_dims
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>)
// CHECK: %[[D0:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x?x64xf32>
// CHECK: %[[D1:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x?x64xf32>
// CHECK: %[[SHAPE:.*]] = tensor.from_elements %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<4xi64>
// CHECK: tensor.reshape %[[X]](%[[SHAPE]]) : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
func.func @reshape_keeps_dynamic_dims(%x: tensor<?x?x64xf32>) -> tensor<?x?x4x16xf32> {
  %0 = kiln.reshape %x : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  return %0 : tensor<?x?x4x16xf32>
}

// -----

// Tests that a reshape to a target with one dynamic dim (x.view(x.shape[0],
// -1) on a symbolic batch) computes that dim as the input's element count
// over the static target dims and reshapes with a shape operand.
// CHECK-LABEL: func.func @reshape_one_dynamic_target
// CHECK-SAME: (%[[X:.*]]: tensor<?x4x16xf32>)
// CHECK: %[[D0:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x4x16xf32>
// CHECK: %[[N:.*]] = arith.divui %{{.*}}, %{{.*}} : index
// CHECK: %[[NI:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK: %[[C64:.*]] = arith.constant 64 : i64
// CHECK: %[[SHAPE:.*]] = tensor.from_elements %[[NI]], %[[C64]] : tensor<2xi64>
// CHECK: tensor.reshape %[[X]](%[[SHAPE]]) : (tensor<?x4x16xf32>, tensor<2xi64>) -> tensor<?x64xf32>
func.func @reshape_one_dynamic_target(%x: tensor<?x4x16xf32>) -> tensor<?x64xf32> {
  %0 = kiln.reshape %x : tensor<?x4x16xf32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

// Tests that a static input reshaped to a target with one dynamic dim gets
// the same shape operand (the dynamic dim from the element count).
// CHECK-LABEL: func.func @reshape_static_to_dynamic
// CHECK: tensor.from_elements %{{.*}}, %{{.*}} : tensor<2xi64>
// CHECK: tensor.reshape
func.func @reshape_static_to_dynamic(%x: tensor<6x8xf32>) -> tensor<?x4xf32> {
  %0 = kiln.reshape %x : tensor<6x8xf32> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
