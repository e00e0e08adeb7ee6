// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-convert-to-linalg))' | FileCheck %s

// Lowerings of kiln.argmax/argmin, kiln.cumsum, kiln.gather, kiln.min/prod
// and of f16 elementwise bodies (codegen/common/Reduction.cpp, ShapeOps.cpp,
// Elementwise.cpp). Numerics: test/python/test_conformance.py.

// Tests that argmax is one reducing generic with a value and an index
// accumulator; the index takes over on a strictly greater element or on the
// first NaN.
// CHECK-LABEL: func.func @argmax
// CHECK: %[[V:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK: %[[I:.*]] = linalg.fill ins(%{{.*}} : i64) outs(%{{.*}} : tensor<4xi64>)
// CHECK: %[[R:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<4x8xf32>) outs(%[[V]], %[[I]] : tensor<4xf32>, tensor<4xi64>)
// CHECK: linalg.index 1
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf uno
// CHECK: return %[[R]]#1
func.func @argmax(%x: tensor<4x8xf32>) -> tensor<4xi64> {
  %0 = kiln.argmax %x {dim = 1 : i64} : tensor<4x8xf32> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// Tests that argmin with keepdim re-inserts the reduced dim and compares
// integers with slt.
// CHECK-LABEL: func.func @argmin_keepdim
// CHECK: arith.cmpi slt
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [1, 8] : tensor<8xi64> into tensor<1x8xi64>
func.func @argmin_keepdim(%x: tensor<4x8xi64>) -> tensor<1x8xi64> {
  %0 = kiln.argmin %x {dim = 0 : i64, keepdim = true} : tensor<4x8xi64> -> tensor<1x8xi64>
  return %0 : tensor<1x8xi64>
}

// -----

// Tests that cumsum adds an inner reduction loop j over the scanned dim and
// masks elements past i.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @cumsum
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK: %[[I:.*]] = linalg.index 1
// CHECK: %[[J:.*]] = linalg.index 2
// CHECK: arith.cmpi ule, %[[J]], %[[I]]
// CHECK: arith.select
// CHECK: arith.addf
func.func @cumsum(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.cumsum %x {dim = 1 : i64} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Tests that gather reads the operand with tensor.extract at the loop
// indices, the clamped index value replacing dim 1.
// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[IDX:.*]]: tensor<4x3xi64>)
// CHECK: linalg.generic {{.*}} ins(%[[IDX]] : tensor<4x3xi64>)
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: %[[D0:.*]] = linalg.index 0
// CHECK: tensor.extract %[[X]][%[[D0]], %{{.*}}] : tensor<4x8xf32>
func.func @gather(%x: tensor<4x8xf32>, %idx: tensor<4x3xi64>) -> tensor<4x3xf32> {
  %0 = kiln.gather %x, %idx {dim = 1 : i64} : tensor<4x8xf32>, tensor<4x3xi64> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Tests that min starts from +inf and prod from 1 (bool: and).
// CHECK-LABEL: func.func @min_prod
// CHECK: arith.constant 0x7F800000 : f32
// CHECK: arith.minimumf
// CHECK: arith.constant 1.000000e+00 : f32
// CHECK: arith.mulf
// CHECK: arith.andi
func.func @min_prod(%x: tensor<4x8xf32>, %b: tensor<4xi1>) -> (tensor<4xf32>, tensor<4xf32>, tensor<i1>) {
  %0 = kiln.min %x {dims = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
  %1 = kiln.prod %x {dims = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
  %2 = kiln.prod %b {dims = array<i64: 0>} : tensor<4xi1> -> tensor<i1>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<i1>
}

// -----

// Tests that an f16 body is computed in f32 and rounded once (torch's
// opmath), and that a cast is not widened.
// CHECK-LABEL: func.func @f16_opmath
// CHECK: ^bb0(%[[A:.*]]: f16, %{{.*}}: f16):
// CHECK: %[[W:.*]] = arith.extf %[[A]] : f16 to f32
// CHECK: math.sin %[[W]] : f32
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: ^bb0(%[[C:.*]]: f16, %{{.*}}: f32):
// CHECK-NEXT: arith.extf %[[C]] : f16 to f32
// CHECK-NEXT: linalg.yield
func.func @f16_opmath(%x: tensor<4xf16>) -> (tensor<4xf16>, tensor<4xf32>) {
  %0 = kiln.sin %x : tensor<4xf16>
  %1 = kiln.cast %x : tensor<4xf16> -> tensor<4xf32>
  return %0, %1 : tensor<4xf16>, tensor<4xf32>
}
