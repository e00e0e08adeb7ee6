// RUN: kiln-opt %s -split-input-file -verify-diagnostics -kiln-destination-outputs | FileCheck %s

// Tests that each tensor result becomes an identity-layout memref argument
// written with materialize_in_destination, inputs become read-only, every
// buffer argument is noalias, and the function gets the C interface.
// CHECK-LABEL: func.func @two_results
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32> {bufferization.writable = false, llvm.noalias}, %[[OUT0:.*]]: memref<4x8xf32> {llvm.noalias}, %[[OUT1:.*]]: memref<8xi64> {llvm.noalias})
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK: %[[NEG:.*]] = kiln.neg %[[X]]
// CHECK: bufferization.materialize_in_destination %[[NEG]] in restrict writable %[[OUT0]] : (tensor<4x8xf32>, memref<4x8xf32>) -> ()
// CHECK: bufferization.materialize_in_destination %{{.*}} in restrict writable %[[OUT1]] : (tensor<8xi64>, memref<8xi64>) -> ()
// CHECK: return{{$}}
func.func @two_results(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xi64>) {
  %0 = kiln.neg %x : tensor<4x8xf32>
  %1 = kiln.constant dense<1> : tensor<8xi64>
  return %0, %1 : tensor<4x8xf32>, tensor<8xi64>
}

// -----

// Tests that a tensor.empty shared by several ops is duplicated per use so
// that eliminate-empty-tensors can give each result its own destination.
// CHECK-LABEL: func.func @unshare_empty
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<4xf32>
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<4xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[E0]]
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[E1]]
func.func @unshare_empty(%a: f32, %b: f32) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4xf32>
  %0 = linalg.fill ins(%a : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %1 = linalg.fill ins(%b : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Tests that a fill shared by two reductions is duplicated, each copy with
// its own tensor.empty.
// CHECK-LABEL: func.func @unshare_fill
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<f32>
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<f32>
// CHECK: %[[F1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<f32>)
// CHECK: %[[F0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E0]] : tensor<f32>)
// CHECK: linalg.generic {{.*}} outs(%[[F1]] : tensor<f32>)
// CHECK: linalg.generic {{.*}} outs(%[[F0]] : tensor<f32>)
#map = affine_map<(d0) -> (d0)>
#map1 = affine_map<(d0) -> ()>
func.func @unshare_fill(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<f32>, tensor<f32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %0 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["reduction"]} ins(%x : tensor<8xf32>) outs(%f : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["reduction"]} ins(%y : tensor<8xf32>) outs(%f : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %0, %1 : tensor<f32>, tensor<f32>
}

// -----

// Tests that the shared first step of two concats (an insert_slice of a
// common constant into a tensor.empty, merged by CSE) is duplicated per use,
// each copy with its own tensor.empty, so each result gets its own buffer.
// CHECK-LABEL: func.func @unshare_insert_slice
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<3x5xf32>
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<3x5xf32>
// CHECK: %[[I1:.*]] = tensor.insert_slice %{{.*}} into %[[E1]][0, 0]
// CHECK: %[[I0:.*]] = tensor.insert_slice %{{.*}} into %[[E0]][0, 0]
// CHECK: tensor.insert_slice %{{.*}} into %[[I1]][0, 1]
// CHECK: tensor.insert_slice %{{.*}} into %[[I0]][0, 1]
func.func @unshare_insert_slice(%a: tensor<3x4xf32>, %b: tensor<3x4xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>) {
  %c = arith.constant dense<0.0> : tensor<3x1xf32>
  %e = tensor.empty() : tensor<3x5xf32>
  %i = tensor.insert_slice %c into %e[0, 0] [3, 1] [1, 1] : tensor<3x1xf32> into tensor<3x5xf32>
  %0 = tensor.insert_slice %a into %i[0, 1] [3, 4] [1, 1] : tensor<3x4xf32> into tensor<3x5xf32>
  %1 = tensor.insert_slice %b into %i[0, 1] [3, 4] [1, 1] : tensor<3x4xf32> into tensor<3x5xf32>
  return %0, %1 : tensor<3x5xf32>, tensor<3x5xf32>
}

// -----

// Tests that an insert_slice chain that is only read (a padded input sliced
// twice) is not duplicated.
// CHECK-LABEL: func.func @negative_read_insert_slice
// CHECK-COUNT-1: tensor.empty
// CHECK-NOT: tensor.empty
func.func @negative_read_insert_slice(%a: tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
  %c = arith.constant dense<0.0> : tensor<3x1xf32>
  %e = tensor.empty() : tensor<3x5xf32>
  %i = tensor.insert_slice %c into %e[0, 0] [3, 1] [1, 1] : tensor<3x1xf32> into tensor<3x5xf32>
  %p = tensor.insert_slice %a into %i[0, 1] [3, 4] [1, 1] : tensor<3x4xf32> into tensor<3x5xf32>
  %0 = tensor.extract_slice %p[0, 0] [3, 2] [1, 1] : tensor<3x5xf32> to tensor<3x2xf32>
  %1 = tensor.extract_slice %p[0, 3] [3, 2] [1, 1] : tensor<3x5xf32> to tensor<3x2xf32>
  return %0, %1 : tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// Tests that private functions and declarations are left alone.
// CHECK-LABEL: func.func private @negative_private
// CHECK-SAME: -> tensor<4xf32>
// CHECK-NOT: llvm.emit_c_interface
// CHECK: return %{{.*}} : tensor<4xf32>
func.func private @negative_private(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// Tests that a non-tensor result is reported.
// expected-error @+1 {{result type 'f32' is not a ranked tensor}}
func.func @scalar_result(%x: f32) -> f32 {
  return %x : f32
}

// -----

// Tests that a returned dynamic expand_shape is bypassed (its source is
// written through a collapsed view of the output) and erased once dead:
// bufferizing the dead op gave an invalid memref.expand_shape.
// CHECK-LABEL: func.func @returned_dynamic_expand
// CHECK-SAME: %[[OUT:arg[0-9]+]]: memref<?x?x12xf32> {llvm.noalias}
// CHECK: %[[VIEW:.*]] = memref.collapse_shape %[[OUT]] {{\[\[}}0, 1], [2]] : memref<?x?x12xf32> into memref<?x12xf32>
// CHECK-NOT: tensor.expand_shape
// CHECK: bufferization.materialize_in_destination %{{.*}} in restrict writable %[[VIEW]]
// CHECK: return{{$}}
func.func @returned_dynamic_expand(%x: tensor<?x12xf32>, %b: index, %s: index) -> tensor<?x?x12xf32> {
  %0 = kiln.neg %x : tensor<?x12xf32>
  %1 = tensor.expand_shape %0 [[0, 1], [2]] output_shape [%b, %s, 12] : tensor<?x12xf32> into tensor<?x?x12xf32>
  return %1 : tensor<?x?x12xf32>
}

// -----

// Tests that an expand_shape returned twice is erased once.
// CHECK-LABEL: func.func @expand_returned_twice
// CHECK-NOT: tensor.expand_shape
// CHECK: return{{$}}
func.func @expand_returned_twice(%x: tensor<8xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %0 = kiln.neg %x : tensor<8xf32>
  %1 = tensor.expand_shape %0 [[0, 1]] output_shape [2, 4] : tensor<8xf32> into tensor<2x4xf32>
  return %1, %1 : tensor<2x4xf32>, tensor<2x4xf32>
}
