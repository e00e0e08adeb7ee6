// RUN: kiln-opt %s -split-input-file -kiln-cpu-approximate-math | FileCheck %s

// kiln-cpu-approximate-math (codegen/cpu/ApproximateMath.cpp): f32 math ops
// become polynomial arithmetic that LLVM can vectorize, constant powers are
// strength-reduced, and what has no approximation is left for
// convert-math-to-llvm / -libm.

// Tests that f32 exp, log, tanh and erf are fully expanded into fma-based
// polynomials (no math op of those kinds is left).
// CHECK-LABEL: func.func @f32_polynomials
// CHECK-NOT: math.exp
// CHECK-NOT: math.log
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK: math.fma
// CHECK-NOT: math.exp
// CHECK-NOT: math.log
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK: return
func.func @f32_polynomials(%x: f32) -> (f32, f32, f32, f32) {
  %0 = math.exp %x : f32
  %1 = math.log %x : f32
  %2 = math.tanh %x : f32
  %3 = math.erf %x : f32
  return %0, %1, %2, %3 : f32, f32, f32, f32
}

// -----

// Tests that the expansion also applies to vectors (so vectorized loops keep
// their width) and to f16, computed in f32 and truncated back.
// CHECK-LABEL: func.func @vector_and_f16
// CHECK-SAME: (%[[V:.*]]: vector<8xf32>, %[[H:.*]]: f16)
// CHECK-NOT: math.exp
// CHECK: math.fma %{{.*}} : vector<8xf32>
// CHECK: arith.extf %[[H]] : f16 to f32
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK-NOT: math.exp
// CHECK: return
func.func @vector_and_f16(%v: vector<8xf32>, %h: f16) -> (vector<8xf32>, f16) {
  %0 = math.exp %v : vector<8xf32>
  %1 = math.exp %h : f16
  return %0, %1 : vector<8xf32>, f16
}

// -----

// Tests that rsqrt is expanded to 1 / sqrt (convert-math-to-llvm only
// lowers vector rsqrt).
// CHECK-LABEL: func.func @rsqrt
// CHECK-SAME: (%[[X:.*]]: f32)
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[S:.*]] = math.sqrt %[[X]] : f32
// CHECK: arith.divf %[[ONE]], %[[S]] : f32
// CHECK-NOT: math.rsqrt
func.func @rsqrt(%x: f32) -> f32 {
  %0 = math.rsqrt %x : f32
  return %0 : f32
}

// -----

// Tests that powf by a constant 2 becomes x * x and by 0.5 becomes sqrt,
// while a non-constant exponent stays powf.
// CHECK-LABEL: func.func @pow_strength_reduction
// CHECK-SAME: (%[[X:.*]]: f32, %[[Y:.*]]: f32)
// CHECK: %[[SQ:.*]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK: %[[RT:.*]] = math.sqrt %[[X]] : f32
// CHECK: %[[P:.*]] = math.powf %[[X]], %[[Y]] : f32
// CHECK: return %[[SQ]], %[[RT]], %[[P]]
func.func @pow_strength_reduction(%x: f32, %y: f32) -> (f32, f32, f32) {
  %two = arith.constant 2.0 : f32
  %half = arith.constant 0.5 : f32
  %0 = math.powf %x, %two : f32
  %1 = math.powf %x, %half : f32
  %2 = math.powf %x, %y : f32
  return %0, %1, %2 : f32, f32, f32
}

// -----

// Tests that f64 math has no polynomial here and is left alone (it becomes
// an LLVM intrinsic or a libm call later).
// CHECK-LABEL: func.func @negative_f64
// CHECK-SAME: (%[[X:.*]]: f64)
// CHECK-NEXT: %[[E:.*]] = math.exp %[[X]] : f64
// CHECK-NEXT: %[[R:.*]] = math.erf %[[X]] : f64
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[X]] : f64
// CHECK-NEXT: return %[[E]], %[[R]], %[[T]]
func.func @negative_f64(%x: f64) -> (f64, f64, f64) {
  %0 = math.exp %x : f64
  %1 = math.erf %x : f64
  %2 = math.tanh %x : f64
  return %0, %1, %2 : f64, f64, f64
}

// -----

// Tests that f32 erf takes kiln's single-interval rational form: |x| clamped
// to 4 by an ordered compare (NaN passes through), P(x²) and Q(x²) by fma,
// one division, the result clamped to 1 and given x's sign.
// CHECK-LABEL: func.func @erf_rational
// CHECK-SAME: (%[[X:.*]]: vector<16xf32>)
// CHECK: %[[A:.*]] = math.absf %[[X]]
// CHECK: arith.cmpf ogt, %[[A]]
// CHECK-COUNT-6: math.fma
// CHECK: arith.mulf
// CHECK-COUNT-4: math.fma
// CHECK: arith.divf
// CHECK-NOT: arith.divf
// CHECK: arith.cmpf ogt
// CHECK: %[[R:.*]] = math.copysign %{{.*}}, %[[X]] : vector<16xf32>
// CHECK-NOT: math.erf
// CHECK: return %[[R]]
func.func @erf_rational(%x: vector<16xf32>) -> vector<16xf32> {
  %0 = math.erf %x : vector<16xf32>
  return %0 : vector<16xf32>
}

// -----

// Tests the fences around upstream approximations: exp computes on 0 where
// x is NaN and selects x back (its fptosi is poison for NaN) and below -87
// (where its 2^k scaling gives 0, not eager's subnormals) computes
// exp(x / 2) and squares it, log/log2 scale
// subnormal inputs by 2^23 and subtract 23*log(2) (log2: 23), and sin/cos are
// not approximated (one-constant range reduction; they become libm calls).
// CHECK-LABEL: func.func @fenced
// CHECK-SAME: (%[[X:.*]]: f32)
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[TINY:.*]] = arith.constant 1.17549435E-38 : f32
// CHECK-DAG: %[[SCALE:.*]] = arith.constant 0x4B000000 : f32
// CHECK-DAG: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG: %[[LOW:.*]] = arith.constant -8.700000e+01 : f32
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[X]], %[[X]] : f32
// CHECK: %[[UNDER:.*]] = arith.cmpf olt, %[[X]], %[[LOW]] : f32
// CHECK: %[[HALVED:.*]] = arith.mulf %[[X]], %[[HALF]] : f32
// CHECK: %[[ARG:.*]] = arith.select %[[UNDER]], %[[HALVED]], %[[X]] : f32
// CHECK: %[[SAFE:.*]] = arith.select %[[NAN]], %[[ZERO]], %[[ARG]] : f32
// CHECK: math.fma
// CHECK: arith.fptosi
// CHECK: %[[E:.*]] = arith.mulf
// CHECK: %[[SQ:.*]] = arith.mulf %[[E]], %[[E]] : f32
// CHECK: %[[R:.*]] = arith.select %[[UNDER]], %[[SQ]], %[[E]] : f32
// CHECK: %[[EXP:.*]] = arith.select %[[NAN]], %[[X]], %[[R]] : f32
// CHECK: %[[SMALL:.*]] = arith.cmpf olt, %[[X]], %[[TINY]] : f32
// CHECK: arith.mulf %[[X]], %[[SCALE]] : f32
// CHECK: %[[SIN:.*]] = math.sin %[[X]] : f32
// CHECK: %[[COS:.*]] = math.cos %[[X]] : f32
// CHECK: return %[[EXP]], %{{.*}}, %[[SIN]], %[[COS]]
func.func @fenced(%x: f32) -> (f32, f32, f32, f32) {
  %0 = math.exp %x : f32
  %1 = math.log %x : f32
  %2 = math.sin %x : f32
  %3 = math.cos %x : f32
  return %0, %1, %2, %3 : f32, f32, f32, f32
}

// -----

// Tests that bf16 max/min (in bf16, or in f32 between extf's of bf16, as
// kiln lowers them) become compares and selects: LLVM 19's x86 lowering of
// the bf16 intrinsics loses NaNs. f32 and f16 max/min stay.
// CHECK-LABEL: func.func @bf16_min_max
// CHECK-SAME: (%[[A:.*]]: bf16, %[[B:.*]]: bf16, %[[V:.*]]: vector<8xbf16>, %[[W:.*]]: vector<8xbf16>, %[[X:.*]]: f32, %[[Y:.*]]: f32, %[[H:.*]]: f16, %[[G:.*]]: f16)
// CHECK: %[[AW:.*]] = arith.extf %[[A]] : bf16 to f32
// CHECK: %[[BW:.*]] = arith.extf %[[B]] : bf16 to f32
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[AW]], %[[BW]] : f32
// CHECK: %[[GT:.*]] = arith.cmpf ogt, %[[AW]], %[[BW]] : f32
// CHECK: %[[EQ:.*]] = arith.cmpf oeq, %[[AW]], %[[BW]] : f32
// CHECK: arith.andi %{{.*}}, %{{.*}} : i16
// CHECK: %[[PICK:.*]] = arith.select %[[GT]], %[[A]], %{{.*}} : bf16
// CHECK: %[[MAX:.*]] = arith.select %[[NAN]], %{{.*}}, %[[PICK]] : bf16
// CHECK: arith.cmpf olt, %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK: arith.ori %{{.*}}, %{{.*}} : vector<8xi16>
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<8xi1>, vector<8xbf16>
// CHECK: %[[AW2:.*]] = arith.extf %[[A]] : bf16 to f32
// CHECK: %[[BW2:.*]] = arith.extf %[[B]] : bf16 to f32
// CHECK: arith.cmpf ogt, %[[AW2]], %[[BW2]] : f32
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK: %[[KEPT:.*]] = arith.maximumf %[[X]], %[[Y]] : f32
// CHECK: %[[HALF:.*]] = arith.minimumf %[[H]], %[[G]] : f16
// CHECK: return %[[MAX]], %{{.*}}, %{{.*}}, %[[KEPT]], %[[HALF]]
func.func @bf16_min_max(%a: bf16, %b: bf16, %v: vector<8xbf16>, %w: vector<8xbf16>, %x: f32,
                        %y: f32, %h: f16, %g: f16)
    -> (bf16, vector<8xbf16>, f32, f32, f16) {
  %0 = arith.maximumf %a, %b : bf16
  %1 = arith.minimumf %v, %w : vector<8xbf16>
  %aw = arith.extf %a : bf16 to f32
  %bw = arith.extf %b : bf16 to f32
  %2 = arith.maximumf %aw, %bw : f32
  %3 = arith.maximumf %x, %y : f32
  %4 = arith.minimumf %h, %g : f16
  return %0, %1, %2, %3, %4 : bf16, vector<8xbf16>, f32, f32, f16
}
