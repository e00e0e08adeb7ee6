// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-convert-to-linalg))' | FileCheck %s

// Tests that slice becomes one tensor.extract_slice with the start as
// offsets, the inferred sizes and the steps as strides.
// CHECK-LABEL: func.func @slice
// CHECK: tensor.extract_slice %{{.*}}[1, 1] [2, 3] [1, 2] : tensor<4x8xf32> to tensor<2x3xf32>
// CHECK-NOT: kiln.
func.func @slice(%x: tensor<4x8xf32>) -> tensor<2x3xf32> {
  %0 = kiln.slice %x {start = array<i64: 1, 1>, end = array<i64: 3, 7>, step = array<i64: 1, 2>} : tensor<4x8xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Tests that `end = -1` keeps a whole dynamic dim: its size comes from
// tensor.dim of the operand.
// CHECK-LABEL: func.func @slice_whole_dynamic_dim
// CHECK-SAME: (%[[X:.*]]: tensor<2x?x8xf32>)
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[N:.*]] = tensor.dim %[[X]], %[[C1]] : tensor<2x?x8xf32>
// CHECK: tensor.extract_slice %[[X]][1, 0, 0] [1, %[[N]], 8] [1, 1, 1] : tensor<2x?x8xf32> to tensor<1x?x8xf32>
func.func @slice_whole_dynamic_dim(%x: tensor<2x?x8xf32>) -> tensor<1x?x8xf32> {
  %0 = kiln.slice %x {start = array<i64: 1, 0, 0>, end = array<i64: 2, -1, 8>, step = array<i64: 1, 1, 1>} : tensor<2x?x8xf32> -> tensor<1x?x8xf32>
  return %0 : tensor<1x?x8xf32>
}

// -----

// Tests that bounds counted from the end of a dynamic dim ([1:-1] is start
// 1, end -2; [-3:] start -3, end -1) become offsets and sizes computed from
// tensor.dim; from the end of a static dim they are constants.
// CHECK-LABEL: func.func @slice_from_the_end
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>)
// CHECK: %[[N:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x8xf32>
// CHECK: %[[END:.*]] = arith.addi %[[N]], %{{.*}} : index
// CHECK: %[[LEN:.*]] = arith.subi %[[END]], %{{.*}} : index
// CHECK: tensor.extract_slice %[[X]][1, 6] [%[[LEN]], 2] [1, 1] : tensor<?x8xf32> to tensor<?x2xf32>
// CHECK: %[[M:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x8xf32>
// CHECK: %[[OFF:.*]] = arith.addi %[[M]], %{{.*}} : index
// CHECK: tensor.extract_slice %[[X]][%[[OFF]], 0] [3, 8] [1, 1] : tensor<?x8xf32> to tensor<3x8xf32>
func.func @slice_from_the_end(%x: tensor<?x8xf32>) -> (tensor<?x2xf32>, tensor<3x8xf32>) {
  %0 = kiln.slice %x {start = array<i64: 1, -2>, end = array<i64: -2, -1>, step = array<i64: 1, 1>} : tensor<?x8xf32> -> tensor<?x2xf32>
  %1 = kiln.slice %x {start = array<i64: -3, 0>, end = array<i64: -1, -1>, step = array<i64: 1, 1>} : tensor<?x8xf32> -> tensor<3x8xf32>
  return %0, %1 : tensor<?x2xf32>, tensor<3x8xf32>
}

// -----

// Tests that concat fills a tensor.empty with one insert_slice per operand
// at increasing offsets along dim.
// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x5xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x8xf32>
// CHECK: %[[I0:.*]] = tensor.insert_slice %[[A]] into %[[E]][0, 0] [2, 3] [1, 1]
// CHECK: tensor.insert_slice %[[B]] into %[[I0]][0, 3] [2, 5] [1, 1]
// CHECK-NOT: kiln.
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x8xf32> {
  %0 = kiln.concat %a, %b {dim = 1 : i64} : tensor<2x3xf32>, tensor<2x5xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Tests that a dynamic concat dim sizes the result from tensor.dim.
// CHECK-LABEL: func.func @concat_dynamic
// CHECK: tensor.dim
// CHECK: arith.addi
// CHECK: tensor.empty(%{{.*}}) : tensor<?x3xf32>
// CHECK: tensor.insert_slice
// CHECK: tensor.insert_slice
// CHECK-NOT: kiln.
func.func @concat_dynamic(%a: tensor<?x3xf32>, %b: tensor<2x3xf32>) -> tensor<?x3xf32> {
  %0 = kiln.concat %a, %b {dim = 0 : i64} : tensor<?x3xf32>, tensor<2x3xf32> -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

// Tests that embedding is a parallel generic over the result reading the
// index (map without the last dim), clamping it to [0, rows - 1] and
// extracting weight[index, j].
// CHECK-DAG: #[[IDX:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[W:.*]]: tensor<10x4xf32>, %[[I:.*]]: tensor<2x3xi32>)
// CHECK: linalg.generic {indexing_maps = [#[[IDX]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[I]] : tensor<2x3xi32>)
// CHECK: arith.index_cast %{{.*}} : i32 to index
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: linalg.index 2
// CHECK: tensor.extract %[[W]]
// CHECK-NOT: kiln.
func.func @embedding(%w: tensor<10x4xf32>, %idx: tensor<2x3xi32>) -> tensor<2x3x4xf32> {
  %0 = kiln.embedding %w, %idx : tensor<10x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}
