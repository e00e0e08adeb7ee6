// RUN: kiln-opt %s -split-input-file -verify-diagnostics -pass-pipeline='builtin.module(func.func(kiln-convert-to-linalg))' | FileCheck %s

// Tests that a binary op broadcasts with constant-0 exprs for size-1 dims
// and missing leading dims.
// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[BCAST:.*]] = affine_map<(d0, d1, d2) -> (d1, 0)>
// CHECK-LABEL: func.func @add_broadcast
// CHECK-SAME: (%[[A:.*]]: tensor<4x3x8xf32>, %[[B:.*]]: tensor<3x1xf32>)
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<4x3x8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID3]], #[[BCAST]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[A]], %[[B]] : tensor<4x3x8xf32>, tensor<3x1xf32>) outs(%[[EMPTY]] : tensor<4x3x8xf32>)
// CHECK: arith.addf
// CHECK-NOT: kiln.
func.func @add_broadcast(%a: tensor<4x3x8xf32>, %b: tensor<3x1xf32>) -> tensor<4x3x8xf32> {
  %0 = kiln.add %a, %b : tensor<4x3x8xf32>, tensor<3x1xf32>
  return %0 : tensor<4x3x8xf32>
}

// -----

// Tests that a splat constant operand becomes a scalar in the body and
// relu is a NaN-propagating maximumf.
// CHECK-LABEL: func.func @splat_scalar_relu
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}} : tensor<8xf32>)
// CHECK: %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK: arith.mulf %{{.*}}, %[[TWO]]
// CHECK: linalg.generic
// CHECK: arith.maximumf
func.func @splat_scalar_relu(%x: tensor<8xf32>) -> tensor<8xf32> {
  %c = kiln.constant dense<2.0> : tensor<f32>
  %0 = kiln.mul %x, %c : tensor<8xf32>, tensor<f32>
  %1 = kiln.relu %0 : tensor<8xf32>
  return %1 : tensor<8xf32>
}

// -----

// Tests the scalar bodies of sigmoid, gelu (erf and tanh forms) and silu.
// CHECK-LABEL: func.func @activations
// CHECK: arith.negf
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: math.erf
// CHECK: math.tanh
// CHECK: math.exp
// CHECK: arith.mulf
func.func @activations(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %0 = kiln.sigmoid %x : tensor<8xf32>
  %1 = kiln.gelu %x : tensor<8xf32>
  %2 = kiln.gelu %x {approximate = "tanh"} : tensor<8xf32>
  %3 = kiln.silu %x : tensor<8xf32>
  return %0, %1, %2, %3 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Tests comparisons (ordered, except ne) and select with broadcasting.
// CHECK-LABEL: func.func @compare_select
// CHECK: arith.cmpf olt
// CHECK: -> tensor<4x8xi1>
// CHECK: arith.cmpf une
// CHECK: arith.cmpi slt
// CHECK: linalg.generic
// CHECK: arith.select
func.func @compare_select(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %i: tensor<4xi64>) -> (tensor<4x8xf32>, tensor<4x8xi1>, tensor<4xi1>) {
  %c = kiln.lt %a, %b : tensor<4x8xf32>, tensor<8xf32>
  %n = kiln.ne %a, %b : tensor<4x8xf32>, tensor<8xf32>
  %z = kiln.constant dense<0> : tensor<i64>
  %ic = kiln.lt %i, %z : tensor<4xi64>, tensor<i64>
  %s = kiln.select %c, %a, %b : tensor<4x8xi1>, tensor<4x8xf32>, tensor<8xf32>
  return %s, %n, %ic : tensor<4x8xf32>, tensor<4x8xi1>, tensor<4xi1>
}

// -----

// Tests casts: float→int truncates, int→float, x→i1 is x != 0, i1→float.
// CHECK-LABEL: func.func @casts
// CHECK: arith.fptosi %{{.*}} : f32 to i64
// CHECK: arith.sitofp %{{.*}} : i64 to f32
// CHECK: arith.cmpf une
// CHECK: arith.uitofp %{{.*}} : i1 to f32
func.func @casts(%x: tensor<4xf32>, %i: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xf32>, tensor<4xf32>) {
  %0 = kiln.cast %x : tensor<4xf32> -> tensor<4xi64>
  %1 = kiln.cast %i : tensor<4xi64> -> tensor<4xf32>
  %b = kiln.cast %x : tensor<4xf32> -> tensor<4xi1>
  %2 = kiln.cast %b : tensor<4xi1> -> tensor<4xf32>
  return %0, %1, %2 : tensor<4xi64>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Tests that a 2-D matmul becomes a zero-filled linalg.matmul.
// CHECK-LABEL: func.func @matmul_2d
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8x16xf32>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32)
// CHECK: linalg.matmul ins(%[[A]], %[[B]] : tensor<4x8xf32>, tensor<8x16xf32>) outs(%[[INIT]] : tensor<4x16xf32>)
func.func @matmul_2d(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %0 = kiln.matmul %a, %b : tensor<4x8xf32>, tensor<8x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// Tests that F.linear (matmul with a permuted weight) uses
// linalg.matmul_transpose_b on the weight itself, and that a rank-3 input
// is collapsed into one 2-D GEMM.
// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>, %[[W:.*]]: tensor<16x8xf32>
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
// CHECK: %[[MM:.*]] = linalg.matmul_transpose_b ins(%[[FLAT]], %[[W]] : tensor<8x8xf32>, tensor<16x8xf32>)
// CHECK: tensor.expand_shape %[[MM]] {{\[\[}}0, 1], [2]] output_shape [2, 4, 16] : tensor<8x16xf32> into tensor<2x4x16xf32>
func.func @linear(%x: tensor<2x4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<2x4x16xf32> {
  %wt = kiln.permute %w {dims = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %m = kiln.matmul %x, %wt : tensor<2x4x8xf32>, tensor<8x16xf32>
  %r = kiln.add %m, %b : tensor<2x4x16xf32>, tensor<16xf32>
  return %r : tensor<2x4x16xf32>
}

// -----

// Tests that a permute that is not a swap of the last two dims is
// materialized and the plain matmul is used.
// CHECK-LABEL: func.func @negative_not_transpose_b
// CHECK: linalg.transpose
// CHECK-NOT: matmul_transpose_b
// CHECK: linalg.batch_matmul ins
func.func @negative_not_transpose_b(%a: tensor<3x4x8xf32>, %b: tensor<8x3x16xf32>) -> tensor<3x4x16xf32> {
  %bt = kiln.permute %b {dims = array<i64: 1, 0, 2>} : tensor<8x3x16xf32> -> tensor<3x8x16xf32>
  %0 = kiln.matmul %a, %bt : tensor<3x4x8xf32>, tensor<3x8x16xf32>
  return %0 : tensor<3x4x16xf32>
}

// -----

// Tests that broadcast batch dims are materialized and collapsed into one
// batch dim of a batch_matmul_transpose_b.
// CHECK-LABEL: func.func @batched_broadcast
// CHECK: linalg.generic
// CHECK-SAME: outs(%{{.*}} : tensor<2x5x3x4xf32>)
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2], [3]] : tensor<2x5x3x4xf32> into tensor<10x3x4xf32>
// CHECK: linalg.batch_matmul_transpose_b ins(%{{.*}}, %{{.*}} : tensor<10x3x4xf32>, tensor<10x6x4xf32>)
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2], [3]] output_shape [2, 5, 3, 6]
func.func @batched_broadcast(%a: tensor<2x1x3x4xf32>, %b: tensor<5x6x4xf32>) -> tensor<2x5x3x6xf32> {
  %bt = kiln.permute %b {dims = array<i64: 0, 2, 1>} : tensor<5x6x4xf32> -> tensor<5x4x6xf32>
  %0 = kiln.matmul %a, %bt : tensor<2x1x3x4xf32>, tensor<5x4x6xf32>
  return %0 : tensor<2x5x3x6xf32>
}

// -----

// Tests sum with keepdim: a reducing generic into the kept dims, then
// expand_shape re-inserting the size-1 dims.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: func.func @sum_keepdim
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["reduction", "parallel", "reduction"]}
// CHECK-SAME: outs(%[[INIT]] : tensor<4xf32>)
// CHECK: arith.addf
// CHECK: tensor.expand_shape %[[SUM]] {{\[\[}}0, 1, 2]] output_shape [1, 4, 1] : tensor<4xf32> into tensor<1x4x1xf32>
func.func @sum_keepdim(%x: tensor<3x4x5xf32>) -> tensor<1x4x1xf32> {
  %0 = kiln.sum %x {dims = array<i64: 0, 2>, keepdim = true} : tensor<3x4x5xf32> -> tensor<1x4x1xf32>
  return %0 : tensor<1x4x1xf32>
}

// -----

// Tests max (init -inf, NaN-propagating maximumf) and mean (sum, then
// divide by the count).
// CHECK-LABEL: func.func @max_mean
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: arith.maximumf
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK: arith.divf
func.func @max_mean(%x: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<8xf32>) {
  %0 = kiln.max %x {dims = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
  %1 = kiln.mean %x {dims = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
  return %0, %1 : tensor<4xf32>, tensor<8xf32>
}

// -----

// Tests shape ops: permute → linalg.transpose, reshape → collapse/expand
// (through 1-D when neither), broadcast_to → broadcasting generic.
// CHECK-LABEL: func.func @shape_ops
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>, %[[Y:.*]]: tensor<6x4xf32>)
// CHECK: linalg.transpose ins(%{{.*}} : tensor<2x3x4xf32>) outs(%{{.*}} : tensor<4x2x3xf32>) permutation = [2, 0, 1]
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[Y]] {{\[\[}}0, 1]] : tensor<6x4xf32> into tensor<24xf32>
// CHECK: tensor.expand_shape %[[FLAT]] {{\[\[}}0, 1]] output_shape [4, 6] : tensor<24xf32> into tensor<4x6xf32>
// CHECK: linalg.generic
// CHECK-SAME: outs(%{{.*}} : tensor<5x2x3x4xf32>)
func.func @shape_ops(%x: tensor<2x3x4xf32>, %y: tensor<6x4xf32>) -> (tensor<4x2x3xf32>, tensor<6x4xf32>, tensor<4x6xf32>, tensor<5x2x3x4xf32>) {
  %0 = kiln.permute %x {dims = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %1 = kiln.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %2 = kiln.reshape %y : tensor<6x4xf32> -> tensor<4x6xf32>
  %3 = kiln.broadcast_to %x : tensor<2x3x4xf32> -> tensor<5x2x3x4xf32>
  return %0, %1, %2, %3 : tensor<4x2x3xf32>, tensor<6x4xf32>, tensor<4x6xf32>, tensor<5x2x3x4xf32>
}

// -----

// Tests that an op kiln-decompose should have removed is reported.
func.func @undecomposed_softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'kiln.softmax' reached codegen; run kiln-decompose first}}
  %0 = kiln.softmax %x {dim = 1 : i64} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Tests that divisions are exact IEEE divisions, by a divisor constant
// along the innermost dim (a keepdim sum) as by a full-shape one.
// CHECK-LABEL: func.func @div_reciprocal
// CHECK: arith.divf %{{[^ ]*}}, %{{[^ ]*}} : f32
// CHECK: arith.divf %{{[^ ]*}}, %{{[^ ]*}} : f32
func.func @div_reciprocal(%x: tensor<4x8xf32>, %s: tensor<4x1xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = kiln.div %x, %s : tensor<4x8xf32>, tensor<4x1xf32>
  %1 = kiln.div %x, %x : tensor<4x8xf32>, tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}
