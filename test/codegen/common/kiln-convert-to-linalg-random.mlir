// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-convert-to-linalg))' | FileCheck %s
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-convert-to-linalg,kiln-fuse-linalg-elementwise))' | FileCheck %s --check-prefix=FUSED

// kiln.random → linalg.generic computing Philox 4x32-10 from the element's
// linear index (codegen/common/Random.cpp), and its fusion with consumers.

// Tests that uniform f32 reads the 0-d seed and offset as scalars, derives
// the counter from linalg.index, runs ten rounds of two 32x32→64 products
// and keeps the top 24 bits of the first word, scaled by 2^-24.
// CHECK-LABEL: func.func @uniform
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<i64>, tensor<i64>)
// CHECK: linalg.index 0
// CHECK: linalg.index 1
// CHECK-COUNT-20: arith.mului_extended
// CHECK: arith.shrui %{{.*}}, %c8_i32
// CHECK: arith.uitofp
// CHECK: arith.mulf %{{.*}}, %cst{{.*}} : f32
// CHECK: linalg.yield
func.func @uniform(%seed: tensor<i64>, %offset: tensor<i64>) -> tensor<4x8xf32> {
  %0 = kiln.random "uniform" %seed, %offset : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Tests that normal is Box-Muller (log, sqrt, cos) computed in f32 and
// rounded once to f16.
// CHECK-LABEL: func.func @normal_f16
// CHECK: linalg.generic
// CHECK: math.log
// CHECK: math.sqrt
// CHECK: math.cos
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @normal_f16(%seed: tensor<i64>, %offset: tensor<i64>) -> tensor<16xf16> {
  %0 = kiln.random "normal" %seed, %offset : tensor<16xf16>
  return %0 : tensor<16xf16>
}

// -----

// Tests that integer joins two words, takes the unsigned remainder by
// high - low and adds low, truncated to i32.
// CHECK-LABEL: func.func @integer_i32
// CHECK: linalg.generic
// CHECK: arith.remui %{{.*}}, %c13_i64
// CHECK: arith.addi %c-3_i64
// CHECK: arith.trunci %{{.*}} : i64 to i32
func.func @integer_i32(%seed: tensor<i64>, %offset: tensor<i64>) -> tensor<5xi32> {
  %0 = kiln.random "integer" %seed, %offset {low = -3 : i64, high = 10 : i64} : tensor<5xi32>
  return %0 : tensor<5xi32>
}

// -----

// Tests that a dynamic result takes its size from `like` (tensor.dim).
// CHECK-LABEL: func.func @dynamic
// CHECK: %[[N:.*]] = tensor.dim %{{.*}}, %c0
// CHECK: tensor.empty(%[[N]]) : tensor<?x8xf32>
// CHECK: linalg.generic
func.func @dynamic(%seed: tensor<i64>, %offset: tensor<i64>, %x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = kiln.random "uniform" %seed, %offset like(%x : tensor<?x8xf32>) : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// Tests that dropout's recipe (uniform >= p, select the scale, multiply)
// fuses into one loop nest with its input (the constant offset folds into
// the body): no buffer of random values.
// FUSED-LABEL: func.func @dropout
// FUSED: linalg.generic
// FUSED-SAME: ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<i64>)
// FUSED: arith.mului_extended
// FUSED: arith.cmpf oge
// FUSED: arith.select
// FUSED: arith.mulf
// FUSED-NOT: linalg.generic
func.func @dropout(%x: tensor<4x8xf32>, %seed: tensor<i64>) -> tensor<4x8xf32> {
  %offset = kiln.constant dense<0> : tensor<i64>
  %p = kiln.constant dense<5.000000e-01> : tensor<f32>
  %scale = kiln.constant dense<2.000000e+00> : tensor<f32>
  %zero = kiln.constant dense<0.000000e+00> : tensor<f32>
  %u = kiln.random "uniform" %seed, %offset : tensor<4x8xf32>
  %keep = kiln.ge %u, %p : tensor<4x8xf32>, tensor<f32>
  %noise = kiln.select %keep, %scale, %zero : tensor<4x8xi1>, tensor<f32>, tensor<f32>
  %y = kiln.mul %x, %noise : tensor<4x8xf32>, tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
