// RUN: kiln-opt %s -split-input-file -kiln-decompose | FileCheck %s

// kiln-decompose splits a kiln.cumsum over a static dim of 1024 or more
// into blocks of 64 (transforms/DecomposeCumsum.cpp).

// Tests a dim of 1100 (not a multiple of 64): zero-padded to 18 blocks,
// prefix sums inside each block, the exclusive prefix of the block totals
// added, and the padding sliced off again.
// CHECK-LABEL: func.func @padded
// CHECK-SAME: (%[[X:.*]]: tensor<2x1100xf32>)
// CHECK: %[[ZERO:.*]] = kiln.constant dense<0.000000e+00> : tensor<2x52xf32>
// CHECK: %[[CAT:.*]] = kiln.concat %[[X]], %[[ZERO]] {dim = 1 : i64}
// CHECK: %[[B:.*]] = kiln.reshape %[[CAT]] : tensor<2x1152xf32> -> tensor<2x18x64xf32>
// CHECK: %[[IN:.*]] = kiln.cumsum %[[B]] {dim = 2 : i64} : tensor<2x18x64xf32>
// CHECK: %[[TOT:.*]] = kiln.slice %[[IN]] {end = array<i64: 2, 18, 64>, start = array<i64: 0, 0, 63>, step = array<i64: 1, 1, 1>}
// CHECK: %[[PRE:.*]] = kiln.cumsum %[[TOT]] {dim = 1 : i64} : tensor<2x18x1xf32>
// CHECK: %[[EXCL:.*]] = kiln.sub %[[PRE]], %[[TOT]]
// CHECK: %[[SUM:.*]] = kiln.add %[[IN]], %[[EXCL]]
// CHECK: %[[FLAT:.*]] = kiln.reshape %[[SUM]] : tensor<2x18x64xf32> -> tensor<2x1152xf32>
// CHECK: %[[R:.*]] = kiln.slice %[[FLAT]] {end = array<i64: 2, 1100>, start = array<i64: 0, 0>, step = array<i64: 1, 1>}
// CHECK: return %[[R]]
func.func @padded(%x: tensor<2x1100xf32>) -> tensor<2x1100xf32> {
  %0 = kiln.cumsum %x {dim = 1 : i64} : tensor<2x1100xf32>
  return %0 : tensor<2x1100xf32>
}

// -----

// Tests a leading dim of 65536 (i64): no padding, and the 1024 block totals
// decomposed once more (a cumsum over 16 x 64).
// CHECK-LABEL: func.func @nested
// CHECK-NOT: kiln.concat
// CHECK: kiln.reshape %{{.*}} : tensor<65536x2xi64> -> tensor<1024x64x2xi64>
// CHECK: kiln.cumsum %{{.*}} {dim = 1 : i64} : tensor<1024x64x2xi64>
// CHECK: kiln.reshape %{{.*}} : tensor<1024x1x2xi64> -> tensor<16x64x1x2xi64>
// CHECK-NOT: kiln.cumsum %{{.*}} {dim = 0 : i64} : tensor<1024x1x2xi64>
// CHECK: return
func.func @nested(%x: tensor<65536x2xi64>) -> tensor<65536x2xi64> {
  %0 = kiln.cumsum %x {dim = 0 : i64} : tensor<65536x2xi64>
  return %0 : tensor<65536x2xi64>
}

// -----

// Tests that short and dynamic dims keep the one kiln.cumsum.
// CHECK-LABEL: func.func @short_and_dynamic
// CHECK: kiln.cumsum %{{.*}} {dim = 0 : i64} : tensor<1023xf32>
// CHECK: kiln.cumsum %{{.*}} {dim = 0 : i64} : tensor<?xf32>
func.func @short_and_dynamic(%x: tensor<1023xf32>, %y: tensor<?xf32>) -> (tensor<1023xf32>, tensor<?xf32>) {
  %0 = kiln.cumsum %x {dim = 0 : i64} : tensor<1023xf32>
  %1 = kiln.cumsum %y {dim = 0 : i64} : tensor<?xf32>
  return %0, %1 : tensor<1023xf32>, tensor<?xf32>
}
