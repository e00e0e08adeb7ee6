// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-convert-to-linalg))' | FileCheck %s

// The scalar bodies kiln-convert-to-linalg (codegen/common/Elementwise.cpp) puts in
// each linalg.generic, per element type, for the ops and types that
// kiln-convert-to-linalg.mlir does not cover.

// Tests the float unary math bodies: one math/arith op each, no libm call.
// CHECK-LABEL: func.func @float_unary
// CHECK: arith.negf
// CHECK: math.absf
// CHECK: math.exp
// CHECK: math.log
// CHECK: math.tanh
// CHECK: math.sqrt
// CHECK: math.rsqrt
// CHECK: math.erf
func.func @float_unary(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = kiln.neg %x : tensor<4xf32>
  %1 = kiln.abs %x : tensor<4xf32>
  %2 = kiln.exp %x : tensor<4xf32>
  %3 = kiln.log %x : tensor<4xf32>
  %4 = kiln.tanh %x : tensor<4xf32>
  %5 = kiln.sqrt %x : tensor<4xf32>
  %6 = kiln.rsqrt %x : tensor<4xf32>
  %7 = kiln.erf %x : tensor<4xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Tests the float binary bodies: IEEE divf, powf, and the NaN-propagating
// maximumf/minimumf (not maxnumf/minnumf, which would drop NaN).
// CHECK-LABEL: func.func @float_binary
// CHECK: arith.divf
// CHECK: math.powf
// CHECK: arith.maximumf
// CHECK: arith.minimumf
// CHECK-NOT: arith.maxnumf
// CHECK-NOT: arith.minnumf
func.func @float_binary(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = kiln.div %a, %b : tensor<4xf32>, tensor<4xf32>
  %1 = kiln.pow %a, %b : tensor<4xf32>, tensor<4xf32>
  %2 = kiln.maximum %a, %b : tensor<4xf32>, tensor<4xf32>
  %3 = kiln.minimum %a, %b : tensor<4xf32>, tensor<4xf32>
  return %0, %1, %2, %3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Tests the remaining float comparisons: all ordered (false on NaN).
// CHECK-LABEL: func.func @float_compare
// CHECK: arith.cmpf oeq
// CHECK: arith.cmpf ole
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf oge
func.func @float_compare(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %0 = kiln.eq %a, %b : tensor<4xf32>, tensor<4xf32>
  %1 = kiln.le %a, %b : tensor<4xf32>, tensor<4xf32>
  %2 = kiln.gt %a, %b : tensor<4xf32>, tensor<4xf32>
  %3 = kiln.ge %a, %b : tensor<4xf32>, tensor<4xf32>
  return %0, %1, %2, %3 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// -----

// Tests signed integer bodies: neg is 0 - x, abs is absi, relu is maxsi
// with 0, add/sub/mul/maximum/minimum are the plain signed ops.
// CHECK-LABEL: func.func @int_ops
// CHECK: %[[Z:.*]] = arith.constant 0 : i64
// CHECK: arith.subi %[[Z]], %{{.*}} : i64
// CHECK: math.absi
// CHECK: arith.maxsi %{{.*}}, %{{.*}} : i64
// CHECK: arith.addi
// CHECK: arith.subi
// CHECK: arith.muli
// CHECK: arith.maxsi
// CHECK: arith.minsi
func.func @int_ops(%a: tensor<4xi64>, %b: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) {
  %0 = kiln.neg %a : tensor<4xi64>
  %1 = kiln.abs %a : tensor<4xi64>
  %2 = kiln.relu %a : tensor<4xi64>
  %3 = kiln.add %a, %b : tensor<4xi64>, tensor<4xi64>
  %4 = kiln.sub %a, %b : tensor<4xi64>, tensor<4xi64>
  %5 = kiln.mul %a, %b : tensor<4xi64>, tensor<4xi64>
  %6 = kiln.maximum %a, %b : tensor<4xi64>, tensor<4xi64>
  %7 = kiln.minimum %a, %b : tensor<4xi64>, tensor<4xi64>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>
}

// -----

// Tests the i1 (torch.bool) bodies: add and maximum are or, mul and
// minimum are and, sub is xor, and comparisons are unsigned (true > false).
// CHECK-LABEL: func.func @bool_ops
// CHECK: arith.ori
// CHECK: arith.andi
// CHECK: arith.xori
// CHECK: arith.ori
// CHECK: arith.andi
// CHECK: arith.cmpi ugt
// CHECK: arith.cmpi ule
// CHECK-NOT: arith.cmpi sgt
func.func @bool_ops(%a: tensor<4xi1>, %b: tensor<4xi1>) -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %0 = kiln.add %a, %b : tensor<4xi1>, tensor<4xi1>
  %1 = kiln.mul %a, %b : tensor<4xi1>, tensor<4xi1>
  %2 = kiln.sub %a, %b : tensor<4xi1>, tensor<4xi1>
  %3 = kiln.maximum %a, %b : tensor<4xi1>, tensor<4xi1>
  %4 = kiln.minimum %a, %b : tensor<4xi1>, tensor<4xi1>
  %5 = kiln.gt %a, %b : tensor<4xi1>, tensor<4xi1>
  %6 = kiln.le %a, %b : tensor<4xi1>, tensor<4xi1>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// -----

// Tests that abs and relu of i1 yield their input unchanged (identity
// generics that canonicalization later removes).
// CHECK-LABEL: func.func @bool_identity
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[IN0:.*]]: i1, %{{.*}}: i1):
// CHECK-NEXT: linalg.yield %[[IN0]] : i1
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[IN1:.*]]: i1, %{{.*}}: i1):
// CHECK-NEXT: linalg.yield %[[IN1]] : i1
func.func @bool_identity(%b: tensor<4xi1>) -> (tensor<4xi1>, tensor<4xi1>) {
  %0 = kiln.abs %b : tensor<4xi1>
  %1 = kiln.relu %b : tensor<4xi1>
  return %0, %1 : tensor<4xi1>, tensor<4xi1>
}

// -----

// Tests the width-changing casts: truncf/extf between floats, extsi for
// signed integers, extui from i1, trunci when narrowing, cmpi ne to i1.
// CHECK-LABEL: func.func @cast_widths
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: arith.extf %{{.*}} : f16 to f64
// CHECK: arith.extsi %{{.*}} : i32 to i64
// CHECK: arith.extui %{{.*}} : i1 to i64
// CHECK: arith.trunci %{{.*}} : i64 to i32
// CHECK: arith.cmpi ne
func.func @cast_widths(%x: tensor<4xf32>, %h: tensor<4xf16>, %i: tensor<4xi32>, %b: tensor<4xi1>, %l: tensor<4xi64>) -> (tensor<4xf16>, tensor<4xf64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi32>, tensor<4xi1>) {
  %0 = kiln.cast %x : tensor<4xf32> -> tensor<4xf16>
  %1 = kiln.cast %h : tensor<4xf16> -> tensor<4xf64>
  %2 = kiln.cast %i : tensor<4xi32> -> tensor<4xi64>
  %3 = kiln.cast %b : tensor<4xi1> -> tensor<4xi64>
  %4 = kiln.cast %l : tensor<4xi64> -> tensor<4xi32>
  %5 = kiln.cast %l : tensor<4xi64> -> tensor<4xi1>
  return %0, %1, %2, %3, %4, %5 : tensor<4xf16>, tensor<4xf64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi32>, tensor<4xi1>
}

// -----

// Tests that a non-splat kiln.constant becomes an arith.constant tensor
// used as a generic input, while a splat folds into the body as a scalar.
// CHECK-LABEL: func.func @constants
// CHECK: %[[DENSE:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %[[DENSE]] : tensor<4xf32>, tensor<4xf32>)
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}} : tensor<4xf32>)
// CHECK: arith.constant 3.000000e+00 : f32
func.func @constants(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %c = kiln.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = kiln.add %x, %c : tensor<4xf32>, tensor<4xf32>
  %s = kiln.constant dense<3.0> : tensor<4xf32>
  %1 = kiln.add %x, %s : tensor<4xf32>, tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Tests that float fmod is remf and float floor_div is torch's fmod-based
// rounding: remf, true divisions without fast-math flags (no reciprocal),
// floor, the > 0.5 round-up, copysign for a zero quotient.
// CHECK-LABEL: func.func @float_division
// CHECK: arith.remf
// CHECK: arith.divf %{{[^ ]*}}, %{{[^ ]*}} : f32
// CHECK: arith.remf
// CHECK: arith.divf %{{[^ ]*}}, %{{[^ ]*}} : f32
// CHECK: math.floor
// CHECK: arith.cmpf ogt
// CHECK: math.copysign
// CHECK-NOT: fastmath
func.func @float_division(%a: tensor<4xf32>, %b: tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = kiln.fmod %a, %b : tensor<4xf32>, tensor<f32>
  %1 = kiln.floor_div %a, %b : tensor<4xf32>, tensor<f32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Tests that integer fmod and floor_div divide by a divisor made safe (1
// where it is 0 or -1, so nothing traps), and floor_div subtracts one where
// remainder and divisor differ in sign and negates for a divisor of -1.
// CHECK-LABEL: func.func @int_division
// CHECK: %[[SAFE:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : i64
// CHECK: arith.remsi %{{.*}}, %[[SAFE]] : i64
// CHECK: %[[SAFE2:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : i64
// CHECK: arith.divsi %{{.*}}, %[[SAFE2]] : i64
// CHECK: arith.remsi %{{.*}}, %[[SAFE2]] : i64
// CHECK: arith.xori
func.func @int_division(%a: tensor<4xi64>, %b: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>) {
  %0 = kiln.fmod %a, %b : tensor<4xi64>, tensor<4xi64>
  %1 = kiln.floor_div %a, %b : tensor<4xi64>, tensor<4xi64>
  return %0, %1 : tensor<4xi64>, tensor<4xi64>
}

// -----

// Tests that a division by a scalar is the exact IEEE division (no arcp:
// x * (1/c) can round the quotient to the other side of an integer), with
// or without a rounding user.
// CHECK-LABEL: func.func @rounded_quotient
// CHECK: arith.divf %{{[^ ]*}}, %{{[^ ]*}} : f32
// CHECK: math.trunc
func.func @rounded_quotient(%a: tensor<8xf32>, %c: tensor<f32>) -> tensor<8xf32> {
  %0 = kiln.div %a, %c : tensor<8xf32>, tensor<f32>
  %1 = kiln.trunc %0 : tensor<8xf32>
  return %1 : tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @unrounded_quotient
// CHECK: arith.divf %{{[^ ]*}}, %{{[^ ]*}} : f32
// CHECK-NOT: fastmath
func.func @unrounded_quotient(%a: tensor<8xf32>, %c: tensor<f32>) -> tensor<8xf32> {
  %0 = kiln.div %a, %c : tensor<8xf32>, tensor<f32>
  return %0 : tensor<8xf32>
}
