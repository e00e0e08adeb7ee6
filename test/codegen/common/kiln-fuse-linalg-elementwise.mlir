// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-fuse-linalg-elementwise))' | FileCheck %s
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-fuse-linalg-elementwise{transcendental-cost=8}))' | FileCheck %s --check-prefix=EXP8

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Tests that a small producer with two uses (softmax's exp(x - max)) is
// recomputed inside both consumers, the reduction and the division, and
// disappears.
// CHECK-LABEL: func.func @multi_use_small_producer
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel"]
// CHECK: math.exp
// CHECK: arith.divf
// CHECK-NOT: linalg.generic
// With transcendental-cost=8 (the CPU pipeline) exp counts as 8 ops, over
// max-producer-ops: exp(x - max) is computed once and read by both.
// EXP8-LABEL: func.func @multi_use_small_producer
// EXP8: %[[E:.*]] = linalg.generic
// EXP8-SAME: iterator_types = ["parallel", "parallel"]
// EXP8: math.exp
// EXP8: linalg.generic
// EXP8-SAME: iterator_types = ["parallel", "reduction"]
// EXP8-SAME: ins(%[[E]] :
// EXP8-NOT: math.exp
// EXP8: linalg.generic
// EXP8-SAME: ins(%[[E]], %{{.*}} :
// EXP8-NOT: math.exp
// EXP8: return
func.func @multi_use_small_producer(%x: tensor<4x8xf32>, %m: tensor<4xf32>, %acc: tensor<4xf32>) -> tensor<4x8xf32> {
  %e0 = tensor.empty() : tensor<4x8xf32>
  %e = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : tensor<4x8xf32>, tensor<4xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%e : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e1 = tensor.empty() : tensor<4x8xf32>
  %q = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e, %s : tensor<4x8xf32>, tensor<4xf32>) outs(%e1 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %q : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// Tests that a producer with a large body and two uses stays materialized.
// CHECK-LABEL: func.func @negative_multi_use_large_producer
// CHECK-COUNT-3: linalg.generic
func.func @negative_multi_use_large_producer(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %e0 = tensor.empty() : tensor<8xf32>
  %p = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e0 : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = math.exp %a : f32
    %1 = math.log %0 : f32
    %2 = math.tanh %1 : f32
    %3 = math.erf %2 : f32
    %4 = math.exp %3 : f32
    %5 = math.log %4 : f32
    %6 = math.tanh %5 : f32
    %7 = math.erf %6 : f32
    %8 = math.exp %7 : f32
    linalg.yield %8 : f32
  } -> tensor<8xf32>
  %e1 = tensor.empty() : tensor<8xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%p : tensor<8xf32>) outs(%e1 : tensor<8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.negf %v : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %e2 = tensor.empty() : tensor<8xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%p : tensor<8xf32>) outs(%e2 : tensor<8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.absf %v : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %a, %b : tensor<8xf32>, tensor<8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// Tests that a reduction producer is never duplicated into its consumers.
// CHECK-LABEL: func.func @negative_reduction_producer
// CHECK-COUNT-3: linalg.generic
#scalar = affine_map<(d0) -> ()>
func.func @negative_reduction_producer(%x: tensor<8xf32>, %acc: tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %s = linalg.generic {indexing_maps = [#id, #scalar], iterator_types = ["reduction"]}
      ins(%x : tensor<8xf32>) outs(%acc : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<8xf32>
  %a = linalg.generic {indexing_maps = [#id, #scalar, #id], iterator_types = ["parallel"]}
      ins(%x, %s : tensor<8xf32>, tensor<f32>) outs(%e1 : tensor<8xf32>) {
  ^bb0(%v: f32, %t: f32, %o: f32):
    %r = arith.divf %v, %t : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %e2 = tensor.empty() : tensor<8xf32>
  %b = linalg.generic {indexing_maps = [#id, #scalar, #id], iterator_types = ["parallel"]}
      ins(%x, %s : tensor<8xf32>, tensor<f32>) outs(%e2 : tensor<8xf32>) {
  ^bb0(%v: f32, %t: f32, %o: f32):
    %r = arith.subf %v, %t : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %a, %b : tensor<8xf32>, tensor<8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Tests that a transpose feeding an elementwise op is fused as a permuted
// read instead of being copied.
// CHECK-DAG: #[[T:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @transpose_fuses
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[Y:.*]]: tensor<8x4xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {indexing_maps = [#[[T]], #[[ID]], #[[ID]]]
// CHECK-SAME: ins(%[[X]], %[[Y]] : tensor<4x8xf32>, tensor<8x4xf32>)
// CHECK-NOT: linalg.generic
func.func @transpose_fuses(%x: tensor<4x8xf32>, %y: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %e0 = tensor.empty() : tensor<8x4xf32>
  %t = linalg.transpose ins(%x : tensor<4x8xf32>) outs(%e0 : tensor<8x4xf32>) permutation = [1, 0]
  %e1 = tensor.empty() : tensor<8x4xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %y : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e1 : tensor<8x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Tests that an elementwise result read only by a transpose is computed in
// the transposed order (one generic writing [8, 4], its inputs read through
// the permuted map), not stored and copied: a result eager returns
// channels-last. Negative: a producer with another user keeps its own
// result and the transpose stays a copy of it; a transpose read by another
// op than the return (here a matmul, which folds it) stays named.
// CHECK-DAG: #[[T:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @transpose_of_elementwise_fuses
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[Y:.*]]: tensor<4x8xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[T]], #[[T]], #[[ID]]]
// CHECK-SAME: ins(%[[X]], %[[Y]] : tensor<4x8xf32>, tensor<4x8xf32>) outs(%{{.*}} : tensor<8x4xf32>)
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
// CHECK-LABEL: func.func @negative_transpose_of_elementwise_with_other_user
// CHECK: %[[P:.*]] = linalg.generic
// CHECK: linalg.transpose ins(%[[P]]
// CHECK-LABEL: func.func @negative_transpose_of_elementwise_into_matmul
// CHECK: %[[Q:.*]] = linalg.generic
// CHECK: %[[QT:.*]] = linalg.transpose ins(%[[Q]]
// CHECK: linalg.matmul ins(%[[QT]],
func.func @transpose_of_elementwise_fuses(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %e0 = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %e1 = tensor.empty() : tensor<8x4xf32>
  %t = linalg.transpose ins(%0 : tensor<4x8xf32>) outs(%e1 : tensor<8x4xf32>) permutation = [1, 0]
  return %t : tensor<8x4xf32>
}

func.func @negative_transpose_of_elementwise_with_other_user(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<8x4xf32>, tensor<4x8xf32>) {
  %e0 = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %e1 = tensor.empty() : tensor<8x4xf32>
  %t = linalg.transpose ins(%0 : tensor<4x8xf32>) outs(%e1 : tensor<8x4xf32>) permutation = [1, 0]
  return %t, %0 : tensor<8x4xf32>, tensor<4x8xf32>
}

func.func @negative_transpose_of_elementwise_into_matmul(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %w: tensor<4x4xf32>) -> tensor<8x4xf32> {
  %e0 = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %e1 = tensor.empty() : tensor<8x4xf32>
  %t = linalg.transpose ins(%0 : tensor<4x8xf32>) outs(%e1 : tensor<8x4xf32>) permutation = [1, 0]
  %z = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<8x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e2 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %m = linalg.matmul ins(%t, %w : tensor<8x4xf32>, tensor<4x4xf32>) outs(%f : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %m : tensor<8x4xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// Tests that a small producer that stays materialized for another user
// (here the return; in a ResNet the next convolution) is not recomputed in
// its elementwise consumer: the consumer reads the stored value, and the
// producer's inputs die at the producer (a residual stage's block outputs
// were recomputed in every later residual add, all of them kept alive).
// CHECK-LABEL: func.func @negative_multi_use_materialized_anyway
// CHECK: %[[P:.*]] = linalg.generic
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[P]], %{{.*}} : tensor<8xf32>, tensor<8xf32>)
// CHECK-NOT: arith.addf
// CHECK: arith.mulf
// CHECK: return %[[P]],
func.func @negative_multi_use_materialized_anyway(%x: tensor<8xf32>, %y: tensor<8xf32>, %z: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %e0 = tensor.empty() : tensor<8xf32>
  %p = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x, %y : tensor<8xf32>, tensor<8xf32>) outs(%e0 : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %e1 = tensor.empty() : tensor<8xf32>
  %q = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%p, %z : tensor<8xf32>, tensor<8xf32>) outs(%e1 : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %p, %q : tensor<8xf32>, tensor<8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>

// Tests that a producer reading only broadcast values (cheaper to recompute
// than to load) is still fused into its consumer when it stays
// materialized for another user.
// CHECK-LABEL: func.func @multi_use_broadcast_producer_recomputed
// CHECK: %[[P:.*]] = linalg.generic
// CHECK: linalg.generic
// CHECK-NOT: ins(%[[P]]
// CHECK: arith.mulf
// CHECK: return %[[P]],
func.func @multi_use_broadcast_producer_recomputed(%s: tensor<f32>, %z: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %e0 = tensor.empty() : tensor<8xf32>
  %p = linalg.generic {indexing_maps = [#scalar, #id], iterator_types = ["parallel"]}
      ins(%s : tensor<f32>) outs(%e0 : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.negf %a : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %e1 = tensor.empty() : tensor<8xf32>
  %q = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%p, %z : tensor<8xf32>, tensor<8xf32>) outs(%e1 : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %p, %q : tensor<8xf32>, tensor<8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// Tests that a producer with two full-size inputs (a residual add) is not
// recomputed even when all its uses are elementwise: each copy would read
// 8 bytes per element where the stored sum costs 4 to write and 4 per use,
// and both inputs would stay alive until the last consumer.
// CHECK-LABEL: func.func @negative_multi_use_two_full_inputs
// CHECK: %[[P:.*]] = linalg.generic
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[P]], %{{.*}} : tensor<8xf32>, tensor<8xf32>)
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[P]], %{{.*}} : tensor<8xf32>, tensor<8xf32>)
func.func @negative_multi_use_two_full_inputs(%x: tensor<8xf32>, %y: tensor<8xf32>, %z: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %e0 = tensor.empty() : tensor<8xf32>
  %p = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x, %y : tensor<8xf32>, tensor<8xf32>) outs(%e0 : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %e1 = tensor.empty() : tensor<8xf32>
  %q = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%p, %z : tensor<8xf32>, tensor<8xf32>) outs(%e1 : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %e2 = tensor.empty() : tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%p, %z : tensor<8xf32>, tensor<8xf32>) outs(%e2 : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %q, %s : tensor<8xf32>, tensor<8xf32>
}
