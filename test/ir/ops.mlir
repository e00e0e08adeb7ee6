// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt %s --mlir-print-op-generic | kiln-opt | FileCheck %s
// RUN: %python %S/../check_doc_examples.py %S/../../ir/KilnOps.td %s
// RUN: %python %S/../check_doc_examples.py %S/../../ir/KilnShapeOps.td %s
// RUN: %python %S/../check_doc_examples.py %S/../../ir/KilnReductionOps.td %s
// RUN: %python %S/../check_doc_examples.py %S/../../ir/KilnNNOps.td %s

// Round trip of every kiln op, in custom and generic form. The first part
// holds each `Example:` block of ir/KilnOps.td verbatim (one function per op)
// so the generated docs stay parseable; the third RUN line checks that none
// is missing. The rest checks optional operands and result-type inference
// with static and dynamic dims; inferred types are checked on the `return`,
// which prints them.

//===----------------------------------------------------------------------===//
// Examples from KilnOps.td
//===----------------------------------------------------------------------===//

// Tests that the kiln.constant example round-trips.
// CHECK-LABEL: func.func @constant
// CHECK: kiln.constant dense<2.000000e+00> : tensor<f32>
func.func @constant() -> tensor<f32> {
  %c = kiln.constant dense<2.000000e+00> : tensor<f32>
  return %c : tensor<f32>
}

// Tests that the kiln.cast example round-trips.
// CHECK-LABEL: func.func @cast
// CHECK: kiln.cast %{{.*}} : tensor<4xi64> -> tensor<4xf32>
func.func @cast(%x: tensor<4xi64>) -> tensor<4xf32> {
  %0 = kiln.cast %x : tensor<4xi64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.neg example round-trips.
// CHECK-LABEL: func.func @neg
// CHECK: kiln.neg %{{.*}} : tensor<4xf32>
func.func @neg(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.neg %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.abs example round-trips.
// CHECK-LABEL: func.func @abs
// CHECK: kiln.abs %{{.*}} : tensor<4xf32>
func.func @abs(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.abs %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.relu example round-trips.
// CHECK-LABEL: func.func @relu
// CHECK: kiln.relu %{{.*}} : tensor<4x8xf32>
func.func @relu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.relu %x : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// Tests that the kiln.exp example round-trips.
// CHECK-LABEL: func.func @exp
// CHECK: kiln.exp %{{.*}} : tensor<4xf32>
func.func @exp(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.exp %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.log example round-trips.
// CHECK-LABEL: func.func @log
// CHECK: kiln.log %{{.*}} : tensor<4xf32>
func.func @log(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.log %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.tanh example round-trips.
// CHECK-LABEL: func.func @tanh
// CHECK: kiln.tanh %{{.*}} : tensor<4xf32>
func.func @tanh(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.tanh %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.sigmoid example round-trips.
// CHECK-LABEL: func.func @sigmoid
// CHECK: kiln.sigmoid %{{.*}} : tensor<4xf32>
func.func @sigmoid(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.sigmoid %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that both kiln.gelu examples round-trip and that the default
// `approximate = "none"` is elided.
// CHECK-LABEL: func.func @gelu
// CHECK: kiln.gelu %{{.*}} : tensor<4xf32>
// CHECK: kiln.gelu %{{.*}} {approximate = "tanh"} : tensor<4xf32>
func.func @gelu(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = kiln.gelu %x : tensor<4xf32>
  %1 = kiln.gelu %x {approximate = "tanh"} : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// Tests that the kiln.silu example round-trips.
// CHECK-LABEL: func.func @silu
// CHECK: kiln.silu %{{.*}} : tensor<4xf32>
func.func @silu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.silu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.sqrt example round-trips.
// CHECK-LABEL: func.func @sqrt
// CHECK: kiln.sqrt %{{.*}} : tensor<4xf32>
func.func @sqrt(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.sqrt %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.rsqrt example round-trips.
// CHECK-LABEL: func.func @rsqrt
// CHECK: kiln.rsqrt %{{.*}} : tensor<4xf32>
func.func @rsqrt(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.rsqrt %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.erf example round-trips.
// CHECK-LABEL: func.func @erf
// CHECK: kiln.erf %{{.*}} : tensor<4xf32>
func.func @erf(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.erf %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.add example round-trips and infers the broadcast shape.
// CHECK-LABEL: func.func @add
// CHECK: %[[R:.*]] = kiln.add %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8xf32>
// CHECK: return %[[R]] : tensor<4x8xf32>
func.func @add(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.add %a, %b : tensor<4x8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}

// Tests that the kiln.sub example round-trips and infers the broadcast shape.
// CHECK-LABEL: func.func @sub
// CHECK: %[[R:.*]] = kiln.sub %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4x1xf32>
// CHECK: return %[[R]] : tensor<4x8xf32>
func.func @sub(%a: tensor<4x8xf32>, %b: tensor<4x1xf32>) -> tensor<4x8xf32> {
  %0 = kiln.sub %a, %b : tensor<4x8xf32>, tensor<4x1xf32>
  return %0 : tensor<4x8xf32>
}

// Tests that the kiln.mul example round-trips (0-d operand broadcasts).
// CHECK-LABEL: func.func @mul
// CHECK: %[[R:.*]] = kiln.mul %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<f32>
// CHECK: return %[[R]] : tensor<4x8xf32>
func.func @mul(%a: tensor<4x8xf32>, %b: tensor<f32>) -> tensor<4x8xf32> {
  %0 = kiln.mul %a, %b : tensor<4x8xf32>, tensor<f32>
  return %0 : tensor<4x8xf32>
}

// Tests that the kiln.div example round-trips.
// CHECK-LABEL: func.func @div
// CHECK: %[[R:.*]] = kiln.div %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<f32>
// CHECK: return %[[R]] : tensor<4x8xf32>
func.func @div(%a: tensor<4x8xf32>, %b: tensor<f32>) -> tensor<4x8xf32> {
  %0 = kiln.div %a, %b : tensor<4x8xf32>, tensor<f32>
  return %0 : tensor<4x8xf32>
}

// Tests that the kiln.pow example round-trips.
// CHECK-LABEL: func.func @pow
// CHECK: %[[R:.*]] = kiln.pow %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<f32>
// CHECK: return %[[R]] : tensor<4xf32>
func.func @pow(%a: tensor<4xf32>, %b: tensor<f32>) -> tensor<4xf32> {
  %0 = kiln.pow %a, %b : tensor<4xf32>, tensor<f32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.maximum example round-trips.
// CHECK-LABEL: func.func @maximum
// CHECK: kiln.maximum %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>
func.func @maximum(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.maximum %a, %b : tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.fmod example round-trips.
// CHECK-LABEL: func.func @fmod
// CHECK: kiln.fmod %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<f32>
func.func @fmod(%a: tensor<4x8xf32>, %b: tensor<f32>) -> tensor<4x8xf32> {
  %0 = kiln.fmod %a, %b : tensor<4x8xf32>, tensor<f32>
  return %0 : tensor<4x8xf32>
}

// Tests that the kiln.floor_div example round-trips.
// CHECK-LABEL: func.func @floor_div
// CHECK: kiln.floor_div %{{.*}}, %{{.*}} : tensor<4x8xi64>, tensor<i64>
func.func @floor_div(%a: tensor<4x8xi64>, %b: tensor<i64>) -> tensor<4x8xi64> {
  %0 = kiln.floor_div %a, %b : tensor<4x8xi64>, tensor<i64>
  return %0 : tensor<4x8xi64>
}

// Tests that the kiln.minimum example round-trips.
// CHECK-LABEL: func.func @minimum
// CHECK: kiln.minimum %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>
func.func @minimum(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.minimum %a, %b : tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.eq example round-trips and infers an i1 result.
// CHECK-LABEL: func.func @eq
// CHECK: %[[R:.*]] = kiln.eq %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<f32>
// CHECK: return %[[R]] : tensor<4xi1>
func.func @eq(%a: tensor<4xf32>, %b: tensor<f32>) -> tensor<4xi1> {
  %0 = kiln.eq %a, %b : tensor<4xf32>, tensor<f32>
  return %0 : tensor<4xi1>
}

// Tests that the kiln.ne example round-trips on integers.
// CHECK-LABEL: func.func @ne
// CHECK: %[[R:.*]] = kiln.ne %{{.*}}, %{{.*}} : tensor<4xi64>, tensor<4xi64>
// CHECK: return %[[R]] : tensor<4xi1>
func.func @ne(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi1> {
  %0 = kiln.ne %a, %b : tensor<4xi64>, tensor<4xi64>
  return %0 : tensor<4xi1>
}

// Tests that the kiln.lt example round-trips.
// CHECK-LABEL: func.func @lt
// CHECK: kiln.lt %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<f32>
func.func @lt(%a: tensor<4xf32>, %b: tensor<f32>) -> tensor<4xi1> {
  %0 = kiln.lt %a, %b : tensor<4xf32>, tensor<f32>
  return %0 : tensor<4xi1>
}

// Tests that the kiln.le example round-trips.
// CHECK-LABEL: func.func @le
// CHECK: kiln.le %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<f32>
func.func @le(%a: tensor<4xf32>, %b: tensor<f32>) -> tensor<4xi1> {
  %0 = kiln.le %a, %b : tensor<4xf32>, tensor<f32>
  return %0 : tensor<4xi1>
}

// Tests that the kiln.gt example round-trips.
// CHECK-LABEL: func.func @gt
// CHECK: kiln.gt %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<f32>
func.func @gt(%a: tensor<4xf32>, %b: tensor<f32>) -> tensor<4xi1> {
  %0 = kiln.gt %a, %b : tensor<4xf32>, tensor<f32>
  return %0 : tensor<4xi1>
}

// Tests that the kiln.ge example round-trips.
// CHECK-LABEL: func.func @ge
// CHECK: kiln.ge %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<f32>
func.func @ge(%a: tensor<4xf32>, %b: tensor<f32>) -> tensor<4xi1> {
  %0 = kiln.ge %a, %b : tensor<4xf32>, tensor<f32>
  return %0 : tensor<4xi1>
}

// Tests that the kiln.select example round-trips.
// CHECK-LABEL: func.func @select
// CHECK: %[[R:.*]] = kiln.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<4xi1>, tensor<4xf32>, tensor<f32>
// CHECK: return %[[R]] : tensor<4xf32>
func.func @select(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<f32>) -> tensor<4xf32> {
  %0 = kiln.select %c, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<f32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.matmul example round-trips (rhs without batch dims).
// CHECK-LABEL: func.func @matmul
// CHECK: %[[R:.*]] = kiln.matmul %{{.*}}, %{{.*}} : tensor<8x4x16xf32>, tensor<16x32xf32>
// CHECK: return %[[R]] : tensor<8x4x32xf32>
func.func @matmul(%a: tensor<8x4x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x4x32xf32> {
  %0 = kiln.matmul %a, %b : tensor<8x4x16xf32>, tensor<16x32xf32>
  return %0 : tensor<8x4x32xf32>
}

// Tests that the kiln.permute example round-trips.
// CHECK-LABEL: func.func @permute
// CHECK: kiln.permute %{{.*}} {dims = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
func.func @permute(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %0 = kiln.permute %x {dims = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// Tests that the kiln.reshape example round-trips.
// CHECK-LABEL: func.func @reshape
// CHECK: kiln.reshape %{{.*}} : tensor<4x8xf32> -> tensor<32xf32>
func.func @reshape(%x: tensor<4x8xf32>) -> tensor<32xf32> {
  %0 = kiln.reshape %x : tensor<4x8xf32> -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// Tests that the kiln.broadcast_to example round-trips.
// CHECK-LABEL: func.func @broadcast_to
// CHECK: kiln.broadcast_to %{{.*}} : tensor<1x8xf32> -> tensor<4x8xf32>
func.func @broadcast_to(%x: tensor<1x8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.broadcast_to %x : tensor<1x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// Tests that the kiln.slice example round-trips.
// CHECK-LABEL: func.func @slice
// CHECK: kiln.slice %{{.*}} {end = array<i64: 4, 7>, start = array<i64: 0, 1>, step = array<i64: 1, 2>} : tensor<4x8xf32> -> tensor<4x3xf32>
func.func @slice(%x: tensor<4x8xf32>) -> tensor<4x3xf32> {
  %0 = kiln.slice %x {start = array<i64: 0, 1>, end = array<i64: 4, 7>, step = array<i64: 1, 2>} : tensor<4x8xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// Tests that `end = -1` (with start 0, step 1) keeps a whole dim, dynamic
// or static.
// CHECK-LABEL: func.func @slice_whole_dims
// CHECK: kiln.slice %{{.*}} {end = array<i64: -1, 1>, start = array<i64: 0, 0>, step = array<i64: 1, 1>} : tensor<?x8xf32> -> tensor<?x1xf32>
// CHECK: kiln.slice %{{.*}} {end = array<i64: -1, -1>, start = array<i64: 0, 0>, step = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<4x8xf32>
func.func @slice_whole_dims(%x: tensor<?x8xf32>, %y: tensor<4x8xf32>) -> (tensor<?x1xf32>, tensor<4x8xf32>) {
  %0 = kiln.slice %x {start = array<i64: 0, 0>, end = array<i64: -1, 1>, step = array<i64: 1, 1>} : tensor<?x8xf32> -> tensor<?x1xf32>
  %1 = kiln.slice %y {start = array<i64: 0, 0>, end = array<i64: -1, -1>, step = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0, %1 : tensor<?x1xf32>, tensor<4x8xf32>
}

// Tests that the kiln.concat example round-trips.
// CHECK-LABEL: func.func @concat
// CHECK: kiln.concat %{{.*}}, %{{.*}} {dim = 1 : i64} : tensor<2x3xf32>, tensor<2x5xf32> -> tensor<2x8xf32>
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x8xf32> {
  %0 = kiln.concat %a, %b {dim = 1 : i64} : tensor<2x3xf32>, tensor<2x5xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// Tests that the kiln.embedding example round-trips.
// CHECK-LABEL: func.func @embedding
// CHECK: kiln.embedding %{{.*}}, %{{.*}} : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
func.func @embedding(%w: tensor<10x4xf32>, %idx: tensor<2x3xi64>) -> tensor<2x3x4xf32> {
  %0 = kiln.embedding %w, %idx : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// Tests that the kiln.sum example round-trips and that the default
// `keepdim = false` is elided.
// CHECK-LABEL: func.func @sum
// CHECK: kiln.sum %{{.*}} {dims = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
func.func @sum(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = kiln.sum %x {dims = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.mean example round-trips.
// CHECK-LABEL: func.func @mean
// CHECK: kiln.mean %{{.*}} {dims = array<i64: 0, 1>, keepdim = true} : tensor<4x8xf32> -> tensor<1x1xf32>
func.func @mean(%x: tensor<4x8xf32>) -> tensor<1x1xf32> {
  %0 = kiln.mean %x {dims = array<i64: 0, 1>, keepdim = true} : tensor<4x8xf32> -> tensor<1x1xf32>
  return %0 : tensor<1x1xf32>
}

// Tests that the kiln.max example round-trips.
// CHECK-LABEL: func.func @max
// CHECK: kiln.max %{{.*}} {dims = array<i64: 1>, keepdim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
func.func @max(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {
  %0 = kiln.max %x {dims = array<i64: 1>, keepdim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// Tests that the kiln.softmax example round-trips.
// CHECK-LABEL: func.func @softmax
// CHECK: kiln.softmax %{{.*}} {dim = 1 : i64} : tensor<4x8xf32>
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.softmax %x {dim = 1 : i64} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// Tests that the kiln.layer_norm example round-trips and that the default
// eps (1.0e-05) is elided.
// CHECK-LABEL: func.func @layer_norm
// CHECK: kiln.layer_norm %{{.*}} weight %{{.*}} bias %{{.*}} {num_dims = 1 : i64} : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
func.func @layer_norm(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.layer_norm %x weight %w bias %b {num_dims = 1 : i64, eps = 1.0e-05 : f64} : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}

//===----------------------------------------------------------------------===//
// Optional operands, attributes and other element types
//===----------------------------------------------------------------------===//

// Tests that kiln.layer_norm round-trips with no affine operands, with only a
// weight and with only a bias (whose type must not be taken for a weight's),
// and that a non-default eps is kept.
// CHECK-LABEL: func.func @layer_norm_optional_operands
// CHECK: kiln.layer_norm %[[X:.*]] {eps = 1.000000e-03 : f64, num_dims = 2 : i64} : tensor<2x4x8xf32>
// CHECK: kiln.layer_norm %[[X]] weight %{{.*}} {num_dims = 1 : i64} : tensor<2x4x8xf32>, tensor<8xf32>
// CHECK: kiln.layer_norm %[[X]] bias %{{.*}} {num_dims = 1 : i64} : tensor<2x4x8xf32>, tensor<8xf32>
func.func @layer_norm_optional_operands(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %0 = kiln.layer_norm %x {num_dims = 2 : i64, eps = 1.0e-03 : f64} : tensor<2x4x8xf32>
  %1 = kiln.layer_norm %x weight %w {num_dims = 1 : i64} : tensor<2x4x8xf32>, tensor<8xf32>
  %2 = kiln.layer_norm %x bias %w {num_dims = 1 : i64} : tensor<2x4x8xf32>, tensor<8xf32>
  return %0, %1, %2 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// Tests that constants of several element types and non-splat values
// round-trip.
// CHECK-LABEL: func.func @constants
// CHECK: kiln.constant dense<[1, 2, 3]> : tensor<3xi64>
// CHECK: kiln.constant dense<true> : tensor<i1>
// CHECK: kiln.constant dense<-0.000000e+00> : tensor<2x2xbf16>
func.func @constants() -> (tensor<3xi64>, tensor<i1>, tensor<2x2xbf16>) {
  %0 = kiln.constant dense<[1, 2, 3]> : tensor<3xi64>
  %1 = kiln.constant dense<true> : tensor<i1>
  %2 = kiln.constant dense<-0.0> : tensor<2x2xbf16>
  return %0, %1, %2 : tensor<3xi64>, tensor<i1>, tensor<2x2xbf16>
}

// Tests that elementwise ops accept integer, bool and dynamically shaped
// tensors.
// CHECK-LABEL: func.func @elementwise_types
// CHECK: kiln.neg %{{.*}} : tensor<?x4xi32>
// CHECK: kiln.relu %{{.*}} : tensor<?x4xi32>
// CHECK: kiln.cast %{{.*}} : tensor<?x4xi32> -> tensor<?x4xi1>
// CHECK: kiln.exp %{{.*}} : tensor<?x?xf16>
func.func @elementwise_types(%i: tensor<?x4xi32>, %h: tensor<?x?xf16>) -> (tensor<?x4xi32>, tensor<?x4xi1>, tensor<?x?xf16>) {
  %0 = kiln.neg %i : tensor<?x4xi32>
  %1 = kiln.relu %0 : tensor<?x4xi32>
  %2 = kiln.cast %1 : tensor<?x4xi32> -> tensor<?x4xi1>
  %3 = kiln.exp %h : tensor<?x?xf16>
  return %1, %2, %3 : tensor<?x4xi32>, tensor<?x4xi1>, tensor<?x?xf16>
}

//===----------------------------------------------------------------------===//
// Shape inference: broadcasting
//===----------------------------------------------------------------------===//

// Tests broadcast inference with static shapes: ranks are aligned from the
// trailing dim and size-1 dims stretch, on both sides.
// CHECK-LABEL: func.func @broadcast_static
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x3x4xf32>, tensor<5x4xf32>, tensor<f32>
func.func @broadcast_static(%a: tensor<2x1x4xf32>, %b: tensor<3x1xf32>, %c: tensor<5x1xf32>, %d: tensor<1x4xf32>, %e: tensor<f32>) -> (tensor<2x3x4xf32>, tensor<5x4xf32>, tensor<f32>) {
  %0 = kiln.add %a, %b : tensor<2x1x4xf32>, tensor<3x1xf32>
  %1 = kiln.mul %c, %d : tensor<5x1xf32>, tensor<1x4xf32>
  %2 = kiln.sub %e, %e : tensor<f32>, tensor<f32>
  return %0, %1, %2 : tensor<2x3x4xf32>, tensor<5x4xf32>, tensor<f32>
}

// Tests broadcast inference with dynamic dims: `?` against 1 stays `?`,
// `?` against a static N gives N, `?` against `?` stays `?`, and a missing
// leading dim takes the other operand's dim.
// CHECK-LABEL: func.func @broadcast_dynamic
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x4xf32>, tensor<3x4xf32>, tensor<?x?xf32>, tensor<?x8xf32>
func.func @broadcast_dynamic(%a: tensor<?x4xf32>, %b: tensor<1x4xf32>, %c: tensor<3x?xf32>, %d: tensor<?x?xf32>, %e: tensor<?x1xf32>, %f: tensor<8xf32>) -> (tensor<?x4xf32>, tensor<3x4xf32>, tensor<?x?xf32>, tensor<?x8xf32>) {
  %0 = kiln.add %a, %b : tensor<?x4xf32>, tensor<1x4xf32>
  %1 = kiln.add %a, %c : tensor<?x4xf32>, tensor<3x?xf32>
  %2 = kiln.maximum %d, %d : tensor<?x?xf32>, tensor<?x?xf32>
  %3 = kiln.div %e, %f : tensor<?x1xf32>, tensor<8xf32>
  return %0, %1, %2, %3 : tensor<?x4xf32>, tensor<3x4xf32>, tensor<?x?xf32>, tensor<?x8xf32>
}

// Tests that comparisons infer i1 with the broadcast shape and that select
// broadcasts all three operands, the condition included.
// CHECK-LABEL: func.func @compare_select_broadcast
// CHECK: return %{{.*}}, %{{.*}} : tensor<?x4xi1>, tensor<2x?x4xi64>
func.func @compare_select_broadcast(%a: tensor<?x4xi64>, %b: tensor<i64>, %c: tensor<2x1x1xi1>, %d: tensor<4xi64>) -> (tensor<?x4xi1>, tensor<2x?x4xi64>) {
  %0 = kiln.lt %a, %b : tensor<?x4xi64>, tensor<i64>
  %1 = kiln.select %c, %a, %d : tensor<2x1x1xi1>, tensor<?x4xi64>, tensor<4xi64>
  return %0, %1 : tensor<?x4xi1>, tensor<2x?x4xi64>
}

//===----------------------------------------------------------------------===//
// Shape inference: matmul
//===----------------------------------------------------------------------===//

// Tests matmul inference on plain matrices, with batch dims on the right only,
// and with batch dims that broadcast against each other.
// CHECK-LABEL: func.func @matmul_static
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x32xf32>, tensor<8x4x32xf32>, tensor<2x3x4x32xf64>
func.func @matmul_static(%a: tensor<4x16xf32>, %b: tensor<16x32xf32>, %c: tensor<8x16x32xf32>, %d: tensor<2x1x4x16xf64>, %e: tensor<3x16x32xf64>) -> (tensor<4x32xf32>, tensor<8x4x32xf32>, tensor<2x3x4x32xf64>) {
  %0 = kiln.matmul %a, %b : tensor<4x16xf32>, tensor<16x32xf32>
  %1 = kiln.matmul %a, %c : tensor<4x16xf32>, tensor<8x16x32xf32>
  %2 = kiln.matmul %d, %e : tensor<2x1x4x16xf64>, tensor<3x16x32xf64>
  return %0, %1, %2 : tensor<4x32xf32>, tensor<8x4x32xf32>, tensor<2x3x4x32xf64>
}

// Tests matmul inference with dynamic dims: a dynamic K matches any K, M and N
// come from the operands, and batch dims broadcast with `?` rules.
// CHECK-LABEL: func.func @matmul_dynamic
// CHECK: return %{{.*}}, %{{.*}} : tensor<?x?xf32>, tensor<5x?x7xf32>
func.func @matmul_dynamic(%a: tensor<?x?xf32>, %b: tensor<16x?xf32>, %c: tensor<?x?x16xf32>, %d: tensor<5x?x7xf32>) -> (tensor<?x?xf32>, tensor<5x?x7xf32>) {
  %0 = kiln.matmul %a, %b : tensor<?x?xf32>, tensor<16x?xf32>
  %1 = kiln.matmul %c, %d : tensor<?x?x16xf32>, tensor<5x?x7xf32>
  return %0, %1 : tensor<?x?xf32>, tensor<5x?x7xf32>
}

//===----------------------------------------------------------------------===//
// Shape inference: shape ops and reductions
//===----------------------------------------------------------------------===//

// Tests permute inference on a rank-3 tensor with a dynamic dim.
// CHECK-LABEL: func.func @permute_dynamic
// CHECK: kiln.permute %{{.*}} {dims = array<i64: 2, 0, 1>} : tensor<?x4x8xf32> -> tensor<8x?x4xf32>
func.func @permute_dynamic(%x: tensor<?x4x8xf32>) -> tensor<8x?x4xf32> {
  %0 = kiln.permute %x {dims = array<i64: 2, 0, 1>} : tensor<?x4x8xf32> -> tensor<8x?x4xf32>
  return %0 : tensor<8x?x4xf32>
}

// Tests that reshape and broadcast_to accept dynamic dims.
// CHECK-LABEL: func.func @shape_ops_dynamic
// CHECK: kiln.reshape %{{.*}} : tensor<?x8xf32> -> tensor<?xf32>
// CHECK: kiln.broadcast_to %{{.*}} : tensor<?x1xf32> -> tensor<2x?x8xf32>
func.func @shape_ops_dynamic(%x: tensor<?x8xf32>, %y: tensor<?x1xf32>) -> (tensor<?xf32>, tensor<2x?x8xf32>) {
  %0 = kiln.reshape %x : tensor<?x8xf32> -> tensor<?xf32>
  %1 = kiln.broadcast_to %y : tensor<?x1xf32> -> tensor<2x?x8xf32>
  return %0, %1 : tensor<?xf32>, tensor<2x?x8xf32>
}

// Tests slice, concat and embedding inference: empty and dynamic dims, a
// single-operand concat, i32 indices and 0-d indices.
// CHECK-LABEL: func.func @indexing_inference
// CHECK: kiln.slice %{{.*}} {end = array<i64: 2, 3>, start = array<i64: 2, 0>, step = array<i64: 1, 5>} : tensor<?x8xf32> -> tensor<0x1xf32>
// CHECK: kiln.concat %{{.*}}, %{{.*}} {dim = 0 : i64} : tensor<?x8xf32>, tensor<3x8xf32> -> tensor<?x8xf32>
// CHECK: kiln.concat %{{.*}} {dim = 0 : i64} : tensor<3x8xf32> -> tensor<3x8xf32>
// CHECK: kiln.embedding %{{.*}}, %{{.*}} : tensor<10x4xf16>, tensor<5xi32> -> tensor<5x4xf16>
// CHECK: kiln.embedding %{{.*}}, %{{.*}} : tensor<10x4xf16>, tensor<i64> -> tensor<4xf16>
func.func @indexing_inference(%x: tensor<?x8xf32>, %y: tensor<3x8xf32>, %w: tensor<10x4xf16>, %i: tensor<5xi32>, %j: tensor<i64>)
    -> (tensor<0x1xf32>, tensor<?x8xf32>, tensor<3x8xf32>, tensor<5x4xf16>, tensor<4xf16>) {
  %0 = kiln.slice %x {start = array<i64: 2, 0>, end = array<i64: 2, 3>, step = array<i64: 1, 5>} : tensor<?x8xf32> -> tensor<0x1xf32>
  %1 = kiln.concat %x, %y {dim = 0 : i64} : tensor<?x8xf32>, tensor<3x8xf32> -> tensor<?x8xf32>
  %2 = kiln.concat %y {dim = 0 : i64} : tensor<3x8xf32> -> tensor<3x8xf32>
  %3 = kiln.embedding %w, %i : tensor<10x4xf16>, tensor<5xi32> -> tensor<5x4xf16>
  %4 = kiln.embedding %w, %j : tensor<10x4xf16>, tensor<i64> -> tensor<4xf16>
  return %0, %1, %2, %3, %4 : tensor<0x1xf32>, tensor<?x8xf32>, tensor<3x8xf32>, tensor<5x4xf16>, tensor<4xf16>
}

// Tests reduction inference with and without keepdim, over several dims,
// over no dims, over dynamic dims, and on integers.
// CHECK-LABEL: func.func @reductions
// CHECK: kiln.sum %{{.*}} {dims = array<i64: 0, 2>} : tensor<?x4x?xf32> -> tensor<4xf32>
// CHECK: kiln.sum %{{.*}} {dims = array<i64: 2, 0>, keepdim = true} : tensor<?x4x?xf32> -> tensor<1x4x1xf32>
// CHECK: kiln.mean %{{.*}} {dims = array<i64: 1>} : tensor<?x4x?xf32> -> tensor<?x?xf32>
// CHECK: kiln.max %{{.*}} {dims = array<i64>} : tensor<?x4x?xf32> -> tensor<?x4x?xf32>
// CHECK: kiln.max %{{.*}} {dims = array<i64: 0>, keepdim = true} : tensor<3xi64> -> tensor<1xi64>
func.func @reductions(%x: tensor<?x4x?xf32>, %i: tensor<3xi64>) -> (tensor<4xf32>, tensor<1x4x1xf32>, tensor<?x?xf32>, tensor<?x4x?xf32>, tensor<1xi64>) {
  %0 = kiln.sum %x {dims = array<i64: 0, 2>} : tensor<?x4x?xf32> -> tensor<4xf32>
  %1 = kiln.sum %x {dims = array<i64: 2, 0>, keepdim = true} : tensor<?x4x?xf32> -> tensor<1x4x1xf32>
  %2 = kiln.mean %x {dims = array<i64: 1>, keepdim = false} : tensor<?x4x?xf32> -> tensor<?x?xf32>
  %3 = kiln.max %x {dims = array<i64>} : tensor<?x4x?xf32> -> tensor<?x4x?xf32>
  %4 = kiln.max %i {dims = array<i64: 0>, keepdim = true} : tensor<3xi64> -> tensor<1xi64>
  return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<1x4x1xf32>, tensor<?x?xf32>, tensor<?x4x?xf32>, tensor<1xi64>
}

// Tests that softmax and layer_norm accept dynamic dims and softmax a 0-d
// tensor (dim 0, as torch allows).
// CHECK-LABEL: func.func @normalizations_dynamic
// CHECK: kiln.softmax %{{.*}} {dim = 0 : i64} : tensor<?x?xf32>
// CHECK: kiln.softmax %{{.*}} {dim = 0 : i64} : tensor<f32>
// CHECK: kiln.layer_norm %{{.*}} {num_dims = 2 : i64} : tensor<?x?xf32>
func.func @normalizations_dynamic(%x: tensor<?x?xf32>, %s: tensor<f32>) -> (tensor<?x?xf32>, tensor<f32>, tensor<?x?xf32>) {
  %0 = kiln.softmax %x {dim = 0 : i64} : tensor<?x?xf32>
  %1 = kiln.softmax %s {dim = 0 : i64} : tensor<f32>
  %2 = kiln.layer_norm %x {num_dims = 2 : i64} : tensor<?x?xf32>
  return %0, %1, %2 : tensor<?x?xf32>, tensor<f32>, tensor<?x?xf32>
}

//===----------------------------------------------------------------------===//
// Examples of the math, reduction, indexing and NN ops (KilnOps.td, KilnNNOps.td)
//===----------------------------------------------------------------------===//

// Tests that the kiln.sin example round-trips.
// CHECK-LABEL: func.func @sin
// CHECK: kiln.sin %{{.*}} : tensor<4xf32>
func.func @sin(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.sin %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.cos example round-trips.
// CHECK-LABEL: func.func @cos
// CHECK: kiln.cos %{{.*}} : tensor<4xf32>
func.func @cos(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.cos %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.tan example round-trips.
// CHECK-LABEL: func.func @tan
// CHECK: kiln.tan %{{.*}} : tensor<4xf32>
func.func @tan(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.tan %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.atan example round-trips.
// CHECK-LABEL: func.func @atan
// CHECK: kiln.atan %{{.*}} : tensor<4xf32>
func.func @atan(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.atan %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.floor example round-trips.
// CHECK-LABEL: func.func @floor
// CHECK: kiln.floor %{{.*}} : tensor<4xf32>
func.func @floor(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.floor %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.ceil example round-trips.
// CHECK-LABEL: func.func @ceil
// CHECK: kiln.ceil %{{.*}} : tensor<4xf32>
func.func @ceil(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.ceil %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.round example round-trips.
// CHECK-LABEL: func.func @round
// CHECK: kiln.round %{{.*}} : tensor<4xf32>
func.func @round(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.round %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.trunc example round-trips.
// CHECK-LABEL: func.func @trunc
// CHECK: kiln.trunc %{{.*}} : tensor<4xf32>
func.func @trunc(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.trunc %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.log1p example round-trips.
// CHECK-LABEL: func.func @log1p
// CHECK: kiln.log1p %{{.*}} : tensor<4xf32>
func.func @log1p(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.log1p %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.expm1 example round-trips.
// CHECK-LABEL: func.func @expm1
// CHECK: kiln.expm1 %{{.*}} : tensor<4xf32>
func.func @expm1(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.expm1 %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.log2 example round-trips.
// CHECK-LABEL: func.func @log2
// CHECK: kiln.log2 %{{.*}} : tensor<4xf32>
func.func @log2(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.log2 %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.min example round-trips.
// CHECK-LABEL: func.func @min
// CHECK: kiln.min %{{.*}} {dims = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
func.func @min(%x: tensor<4x8xf32>) -> tensor<8xf32> {
  %0 = kiln.min %x {dims = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// Tests that the kiln.prod example round-trips.
// CHECK-LABEL: func.func @prod
// CHECK: kiln.prod %{{.*}} {dims = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
func.func @prod(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = kiln.prod %x {dims = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Tests that the kiln.argmax example round-trips.
// CHECK-LABEL: func.func @argmax
// CHECK: kiln.argmax %{{.*}} {dim = 1 : i64} : tensor<4x8xf32> -> tensor<4xi64>
func.func @argmax(%x: tensor<4x8xf32>) -> tensor<4xi64> {
  %0 = kiln.argmax %x {dim = 1 : i64} : tensor<4x8xf32> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// Tests that the kiln.argmin example round-trips.
// CHECK-LABEL: func.func @argmin
// CHECK: kiln.argmin %{{.*}} {dim = 0 : i64, keepdim = true} : tensor<4x8xi64> -> tensor<1x8xi64>
func.func @argmin(%x: tensor<4x8xi64>) -> tensor<1x8xi64> {
  %0 = kiln.argmin %x {dim = 0 : i64, keepdim = true} : tensor<4x8xi64> -> tensor<1x8xi64>
  return %0 : tensor<1x8xi64>
}

// Tests that the kiln.cumsum example round-trips.
// CHECK-LABEL: func.func @cumsum
// CHECK: kiln.cumsum %{{.*}} {dim = 1 : i64} : tensor<4x8xf32>
func.func @cumsum(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.cumsum %x {dim = 1 : i64} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// Tests that the kiln.gather example round-trips.
// CHECK-LABEL: func.func @gather
// CHECK: kiln.gather %{{.*}}, %{{.*}} {dim = 1 : i64} : tensor<4x8xf32>, tensor<4x3xi64> -> tensor<4x3xf32>
func.func @gather(%x: tensor<4x8xf32>, %idx: tensor<4x3xi64>) -> tensor<4x3xf32> {
  %0 = kiln.gather %x, %idx {dim = 1 : i64} : tensor<4x8xf32>, tensor<4x3xi64> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// Tests that the kiln.conv2d example round-trips.
// CHECK-LABEL: func.func @conv2d
// CHECK: kiln.conv2d %{{.*}}, %{{.*}} {padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 2, 2>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x4x4xf32>
func.func @conv2d(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %0 = kiln.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// Tests that the kiln.max_pool2d example round-trips.
// CHECK-LABEL: func.func @max_pool2d
// CHECK: kiln.max_pool2d %{{.*}} {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
func.func @max_pool2d(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32> {
  %0 = kiln.max_pool2d %x {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// Tests that the kiln.avg_pool2d example round-trips.
// CHECK-LABEL: func.func @avg_pool2d
// CHECK: kiln.avg_pool2d %{{.*}} {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
func.func @avg_pool2d(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32> {
  %0 = kiln.avg_pool2d %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// Tests result-type inference of the new ops: ceil_mode and dilation in
// pooling, 'same'-style asymmetric padding and groups in conv2d, a 0-d
// argmax, dynamic dims.
// CHECK-LABEL: func.func @nn_inference
// CHECK: return {{.*}} : tensor<2x4x5x5xf32>, tensor<2x6x8x9xf32>, tensor<1x4x2x2xf32>, tensor<i64>, tensor<?x3xf32>
func.func @nn_inference(%x: tensor<2x4x9x9xf32>, %w: tensor<6x2x3x4xf32>, %s: tensor<f32>, %d: tensor<?x8xf32>, %i: tensor<?x3xi64>) -> (tensor<2x4x5x5xf32>, tensor<2x6x8x9xf32>, tensor<1x4x2x2xf32>, tensor<i64>, tensor<?x3xf32>) {
  %0 = kiln.max_pool2d %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, ceil_mode = true} : tensor<2x4x9x9xf32> -> tensor<2x4x5x5xf32>
  %1 = kiln.conv2d %x, %w {padding = array<i64: 0, 1, 1, 2>, groups = 2 : i64, dilation = array<i64: 1, 1>} : tensor<2x4x9x9xf32>, tensor<6x2x3x4xf32> -> tensor<2x6x8x9xf32>
  %e = kiln.slice %x {start = array<i64: 0, 0, 0, 0>, end = array<i64: 1, 4, 9, 9>, step = array<i64: 1, 1, 1, 1>} : tensor<2x4x9x9xf32> -> tensor<1x4x9x9xf32>
  %2 = kiln.max_pool2d %e {kernel = array<i64: 3, 3>, stride = array<i64: 3, 3>, dilation = array<i64: 2, 2>} : tensor<1x4x9x9xf32> -> tensor<1x4x2x2xf32>
  %3 = kiln.argmax %s {dim = 0 : i64} : tensor<f32> -> tensor<i64>
  %4 = kiln.gather %d, %i {dim = 0 : i64} : tensor<?x8xf32>, tensor<?x3xi64> -> tensor<?x3xf32>
  return %0, %1, %2, %3, %4 : tensor<2x4x5x5xf32>, tensor<2x6x8x9xf32>, tensor<1x4x2x2xf32>, tensor<i64>, tensor<?x3xf32>
}
