// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-cpu-write-over-dead-views))' | FileCheck %s

// kiln-cpu-write-over-dead-views (codegen/cpu/WriteOverDeadViews.cpp): an
// elementwise generic writing a fresh tensor.empty takes as its init an
// input of its type that is a view of a computed value nothing else reads.

#id = affine_map<(d0, d1) -> (d0, d1)>

// Tests the interior of a padded tensor (the stem's ReLU gradient over the
// max-pool gradient): the generic writes over the slice.
// CHECK-LABEL: func.func @padded_interior
// CHECK: %[[P:.*]] = linalg.generic
// CHECK: %[[V:.*]] = tensor.extract_slice %[[P]][1, 1] [4, 4] [1, 1]
// CHECK: linalg.generic {{.*}} ins(%arg1, %[[V]] : {{.*}}) outs(%[[V]] : tensor<4x4xf32>)
func.func @padded_interior(%x: tensor<6x6xf32>, %m: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %e0 = tensor.empty() : tensor<6x6xf32>
  %p = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<6x6xf32>) outs(%e0 : tensor<6x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<6x6xf32>
  %v = tensor.extract_slice %p[1, 1] [4, 4] [1, 1] : tensor<6x6xf32> to tensor<4x4xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m, %v : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.mulf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Tests the negative cases: the padded value read again later (its slice
// would be overwritten), a slice of a function argument (not writable), a
// plain input (no view: the memory planner's case), an input of another
// type, and an init the body reads.
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-5: outs(%{{[0-9]+}} : tensor<4x4xf32>)
// CHECK-NOT: outs(%extracted
func.func @left_alone(%x: tensor<6x6xf32>, %m: tensor<4x4xf32>, %h: tensor<4x4xf16>)
    -> (tensor<4x4xf32>, tensor<6x6xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %e0 = tensor.empty() : tensor<6x6xf32>
  %p = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<6x6xf32>) outs(%e0 : tensor<6x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<6x6xf32>
  %v = tensor.extract_slice %p[1, 1] [4, 4] [1, 1] : tensor<6x6xf32> to tensor<4x4xf32>
  %e1 = tensor.empty() : tensor<4x4xf32>
  %r1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%v : tensor<4x4xf32>) outs(%e1 : tensor<4x4xf32>) {
  ^bb0(%b: f32, %out: f32):
    %s = arith.mulf %b, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %w = tensor.extract_slice %x[1, 1] [4, 4] [1, 1] : tensor<6x6xf32> to tensor<4x4xf32>
  %e2 = tensor.empty() : tensor<4x4xf32>
  %r2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<4x4xf32>) outs(%e2 : tensor<4x4xf32>) {
  ^bb0(%b: f32, %out: f32):
    %s = arith.mulf %b, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %e3 = tensor.empty() : tensor<4x4xf32>
  %r3 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r2 : tensor<4x4xf32>) outs(%e3 : tensor<4x4xf32>) {
  ^bb0(%b: f32, %out: f32):
    %s = arith.mulf %b, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %e4 = tensor.empty() : tensor<4x4xf32>
  %hv = tensor.extract_slice %h[0, 0] [4, 4] [1, 1] : tensor<4x4xf16> to tensor<4x4xf16>
  %r4 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%hv : tensor<4x4xf16>) outs(%e4 : tensor<4x4xf32>) {
  ^bb0(%b: f16, %out: f32):
    %s = arith.extf %b : f16 to f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<6x6xf32>) outs(%e0 : tensor<6x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<6x6xf32>
  %qv = tensor.extract_slice %q[0, 0] [4, 4] [1, 1] : tensor<6x6xf32> to tensor<4x4xf32>
  %e5 = tensor.empty() : tensor<4x4xf32>
  %r5 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%qv : tensor<4x4xf32>) outs(%e5 : tensor<4x4xf32>) {
  ^bb0(%b: f32, %out: f32):
    %s = arith.addf %b, %out : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  return %r1, %p, %r2, %r3, %r4, %r5 : tensor<4x4xf32>, tensor<6x6xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Tests a view made outside a loop and read inside it: each iteration
// reads it again, so the generic in the body keeps its own init.
// CHECK-LABEL: func.func @read_in_loop
// CHECK: scf.for
// CHECK: linalg.generic {{.*}} outs(%{{[0-9]+}} : tensor<4x4xf32>)
func.func @read_in_loop(%x: tensor<6x6xf32>, %n: index) -> tensor<4x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %e0 = tensor.empty() : tensor<6x6xf32>
  %p = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<6x6xf32>) outs(%e0 : tensor<6x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.negf %in : f32
    linalg.yield %m : f32
  } -> tensor<6x6xf32>
  %v = tensor.extract_slice %p[1, 1] [4, 4] [1, 1] : tensor<6x6xf32> to tensor<4x4xf32>
  %init = tensor.empty() : tensor<4x4xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (tensor<4x4xf32>) {
    %e = tensor.empty() : tensor<4x4xf32>
    %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%v : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
    ^bb0(%b: f32, %out: f32):
      %t = arith.mulf %b, %b : f32
      linalg.yield %t : f32
    } -> tensor<4x4xf32>
    scf.yield %s : tensor<4x4xf32>
  }
  return %r : tensor<4x4xf32>
}
