// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-cpu-order-slice-inserts))' | FileCheck %s
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-cpu-order-slice-inserts),eliminate-empty-tensors)' | FileCheck %s --check-prefix=INPLACE

// kiln-cpu-order-slice-inserts (codegen/cpu/OrderSliceInserts.cpp): a
// concat's destination is built before its first piece's producer and each
// disjoint insert follows its piece's producer, in producer order, so that
// eliminate-empty-tensors lets the producers write into the destination.

#id = affine_map<(d0, d1) -> (d0, d1)>

// Tests a concat lowered at its position (after both producers, pieces in
// the other order): destination first, each insert right after its
// producer, in producer order; then each generic writes into its place.
// CHECK-LABEL: func.func @two_pieces
// CHECK: %[[D:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK: %[[A:.*]] = linalg.generic
// CHECK: %[[I0:.*]] = tensor.insert_slice %[[A]] into %[[D]][0, 0] [2, 4]
// CHECK: %[[B:.*]] = linalg.generic
// CHECK: %[[I1:.*]] = tensor.insert_slice %[[B]] into %[[I0]][2, 0] [2, 4]
// CHECK-NOT: tensor.insert_slice
// CHECK: return %[[I1]]
// INPLACE-LABEL: func.func @two_pieces
// INPLACE: %[[D:.*]] = tensor.empty() : tensor<4x4xf32>
// INPLACE: %[[S0:.*]] = tensor.extract_slice %[[D]][0, 0] [2, 4]
// INPLACE: %[[A:.*]] = linalg.generic {{.*}} outs(%[[S0]] :
// INPLACE: %[[I0:.*]] = tensor.insert_slice %[[A]] into %[[D]][0, 0] [2, 4]
// INPLACE: %[[S1:.*]] = tensor.extract_slice %[[I0]][2, 0] [2, 4]
// INPLACE: linalg.generic {{.*}} outs(%[[S1]] :
func.func @two_pieces(%x: tensor<2x4xf32>, %y: tensor<2x4xf32>) -> tensor<4x4xf32> {
  %ea = tensor.empty() : tensor<2x4xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<2x4xf32>) outs(%ea : tensor<2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<2x4xf32>
  %eb = tensor.empty() : tensor<2x4xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y : tensor<2x4xf32>) outs(%eb : tensor<2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<2x4xf32>
  %d = tensor.empty() : tensor<4x4xf32>
  %0 = tensor.insert_slice %b into %d[2, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<4x4xf32>
  %1 = tensor.insert_slice %a into %0[0, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Tests a piece that is a function argument: its insert goes first, right
// after the destination; the produced piece follows its producer.
// CHECK-LABEL: func.func @argument_piece
// CHECK: %[[D:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK-NEXT: %[[I0:.*]] = tensor.insert_slice %arg0 into %[[D]][2, 0]
// CHECK: %[[A:.*]] = linalg.generic
// CHECK: } -> tensor<2x4xf32>
// CHECK-NEXT: tensor.insert_slice %[[A]] into %[[I0]][0, 0]
func.func @argument_piece(%x: tensor<2x4xf32>, %y: tensor<2x4xf32>) -> tensor<4x4xf32> {
  %ea = tensor.empty() : tensor<2x4xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y : tensor<2x4xf32>) outs(%ea : tensor<2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<2x4xf32>
  %d = tensor.empty() : tensor<4x4xf32>
  %0 = tensor.insert_slice %a into %d[0, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<4x4xf32>
  %1 = tensor.insert_slice %x into %0[2, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}

// -----

// Tests overlapping inserts (the later one wins): their order is kept and
// they stay where they are.
// CHECK-LABEL: func.func @overlapping
// CHECK: %[[P:.*]] = tensor.empty() : tensor<2x4xf32>
// CHECK: %[[Q:.*]] = tensor.empty() : tensor<2x4xf32>
// CHECK: %[[D:.*]] = tensor.empty() : tensor<3x4xf32>
// CHECK: %[[I0:.*]] = tensor.insert_slice %[[Q]] into %[[D]][1, 0]
// CHECK: tensor.insert_slice %[[P]] into %[[I0]][0, 0]
func.func @overlapping() -> tensor<3x4xf32> {
  %p = tensor.empty() : tensor<2x4xf32>
  %q = tensor.empty() : tensor<2x4xf32>
  %d = tensor.empty() : tensor<3x4xf32>
  %0 = tensor.insert_slice %q into %d[1, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<3x4xf32>
  %1 = tensor.insert_slice %p into %0[0, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<3x4xf32>
  return %1 : tensor<3x4xf32>
}

// -----

// Tests strided (interleaved) inserts: disjoint although their bounding
// boxes overlap is not proven, so they stay in order; a dynamic offset
// leaves its chain alone too.
// CHECK-LABEL: func.func @interleaved_and_dynamic
// CHECK: %[[D:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK: %[[I0:.*]] = tensor.insert_slice %arg1 into %[[D]][0, 1] [4, 2] [1, 2]
// CHECK: tensor.insert_slice %arg0 into %[[I0]][0, 0] [4, 2] [1, 2]
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK: %[[J0:.*]] = tensor.insert_slice %arg1 into %[[E]][%arg2, 0]
// CHECK: tensor.insert_slice %arg0 into %[[J0]][0, 0]
func.func @interleaved_and_dynamic(%x: tensor<4x2xf32>, %y: tensor<4x2xf32>, %i: index)
    -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %d = tensor.empty() : tensor<4x4xf32>
  %0 = tensor.insert_slice %y into %d[0, 1] [4, 2] [1, 2] : tensor<4x2xf32> into tensor<4x4xf32>
  %1 = tensor.insert_slice %x into %0[0, 0] [4, 2] [1, 2] : tensor<4x2xf32> into tensor<4x4xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %2 = tensor.insert_slice %y into %e[%i, 0] [4, 2] [1, 1] : tensor<4x2xf32> into tensor<4x4xf32>
  %3 = tensor.insert_slice %x into %2[0, 0] [4, 2] [1, 1] : tensor<4x2xf32> into tensor<4x4xf32>
  return %1, %3 : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Tests a chain value read before the chain ends (a second use): the chain
// stops there (the argument's insert, after it, stays after it); only the
// inserts up to it move.
// CHECK-LABEL: func.func @read_mid_chain
// CHECK: %[[D:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK: %[[A:.*]] = linalg.generic
// CHECK: %[[I0:.*]] = tensor.insert_slice %[[A]] into %[[D]][0, 0]
// CHECK: %[[I1:.*]] = tensor.insert_slice %arg1 into %[[I0]][2, 0]
// CHECK: return %[[I1]], %[[I0]]
func.func @read_mid_chain(%x: tensor<2x4xf32>, %y: tensor<2x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %ea = tensor.empty() : tensor<2x4xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<2x4xf32>) outs(%ea : tensor<2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<2x4xf32>
  %d = tensor.empty() : tensor<4x4xf32>
  %0 = tensor.insert_slice %a into %d[0, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<4x4xf32>
  %1 = tensor.insert_slice %y into %0[2, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<4x4xf32>
  return %1, %0 : tensor<4x4xf32>, tensor<4x4xf32>
}
