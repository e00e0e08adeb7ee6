// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt %s --mlir-print-op-generic | kiln-opt | FileCheck %s
// RUN: %python %S/../check_doc_examples.py %S/../../ir/KilnRandomOps.td %s

// Round trip of kiln.random (ir/KilnRandomOps.td), in custom and generic
// form: the `Example:` block verbatim (the third RUN line checks that none is
// missing), then the element types and the optional `like` operand.

// Tests that the kiln.random examples round-trip.
// CHECK-LABEL: func.func @random
// CHECK: kiln.random "uniform" %{{.*}}, %{{.*}} : tensor<4x8xf32>
// CHECK: kiln.random "normal" %{{.*}}, %{{.*}} : tensor<16xf64>
// CHECK: kiln.random "integer" %{{.*}}, %{{.*}} {high = 10 : i64, low = -3 : i64} : tensor<5xi64>
// CHECK: kiln.random "uniform" %{{.*}}, %{{.*}} like(%{{.*}} : tensor<?x8xf32>) : tensor<?x8xf32>
func.func @random(%seed: tensor<i64>, %offset: tensor<i64>, %x: tensor<?x8xf32>) -> (tensor<4x8xf32>, tensor<16xf64>, tensor<5xi64>, tensor<?x8xf32>) {
  %u = kiln.random "uniform" %seed, %offset : tensor<4x8xf32>
  %n = kiln.random "normal" %seed, %offset : tensor<16xf64>
  %i = kiln.random "integer" %seed, %offset {high = 10 : i64, low = -3 : i64} : tensor<5xi64>
  %d = kiln.random "uniform" %seed, %offset like(%x : tensor<?x8xf32>) : tensor<?x8xf32>
  return %u, %n, %i, %d : tensor<4x8xf32>, tensor<16xf64>, tensor<5xi64>, tensor<?x8xf32>
}

// Tests 16-bit floats, a 0-d result, i32 integers and a `like` operand of
// another element type.
// CHECK-LABEL: func.func @random_types
// CHECK: kiln.random "uniform" %{{.*}}, %{{.*}} : tensor<3xbf16>
// CHECK: kiln.random "normal" %{{.*}}, %{{.*}} : tensor<f16>
// CHECK: kiln.random "integer" %{{.*}}, %{{.*}} {high = 2 : i64, low = 0 : i64} : tensor<2x2xi32>
// CHECK: kiln.random "normal" %{{.*}}, %{{.*}} like(%{{.*}} : tensor<?x?xi64>) : tensor<?x?xf32>
func.func @random_types(%seed: tensor<i64>, %offset: tensor<i64>, %y: tensor<?x?xi64>) -> (tensor<3xbf16>, tensor<f16>, tensor<2x2xi32>, tensor<?x?xf32>) {
  %0 = kiln.random "uniform" %seed, %offset : tensor<3xbf16>
  %1 = kiln.random "normal" %seed, %offset : tensor<f16>
  %2 = kiln.random "integer" %seed, %offset {low = 0 : i64, high = 2 : i64} : tensor<2x2xi32>
  %3 = kiln.random "normal" %seed, %offset like(%y : tensor<?x?xi64>) : tensor<?x?xf32>
  return %0, %1, %2, %3 : tensor<3xbf16>, tensor<f16>, tensor<2x2xi32>, tensor<?x?xf32>
}
