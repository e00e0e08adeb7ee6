// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-fuse-linalg-elementwise{keep-producer-results=true}))' | FileCheck %s
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-fuse-linalg-elementwise))' | FileCheck %s --check-prefix=OFF

#id = affine_map<(d0) -> (d0)>

// Tests that SGD with momentum's buffer update (returned: written back)
// and the parameter update reading it become one loop with both results:
// buf, g and p read once, buf' and p' written once (5 streams, not 7).
// CHECK-LABEL: func.func @momentum_step
// CHECK: %[[F:.*]]:2 = linalg.generic
// CHECK-SAME: ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: arith.mulf
// CHECK: arith.subf
// CHECK: linalg.yield %{{.*}}, %{{.*}} : f32, f32
// CHECK-NOT: linalg.generic
// CHECK: return %[[F]]#0, %[[F]]#1
// Without the option the buffer is stored by one loop and loaded by the next.
// OFF-LABEL: func.func @momentum_step
// OFF: linalg.generic
// OFF: linalg.generic
// OFF-NOT: linalg.generic
// OFF: return
func.func @momentum_step(%buf: tensor<1024xf32>, %g: tensor<1024xf32>, %p: tensor<1024xf32>)
    -> (tensor<1024xf32>, tensor<1024xf32>) {
  %m = arith.constant 0.9 : f32
  %lr = arith.constant 0.01 : f32
  %e = tensor.empty() : tensor<1024xf32>
  %nb = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%buf, %g : tensor<1024xf32>, tensor<1024xf32>) outs(%e : tensor<1024xf32>) {
  ^bb0(%b: f32, %x: f32, %o: f32):
    %0 = arith.mulf %b, %m : f32
    %1 = arith.addf %0, %x : f32
    linalg.yield %1 : f32
  } -> tensor<1024xf32>
  %np = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%p, %nb : tensor<1024xf32>, tensor<1024xf32>) outs(%e : tensor<1024xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %0 = arith.mulf %b, %lr : f32
    %1 = arith.subf %a, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<1024xf32>
  return %nb, %np : tensor<1024xf32>, tensor<1024xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// Tests that a consumer reading the kept producer twice (once directly,
// once through a second fused result) still ends as one loop: the second
// read is the fused loop's single use of the producer, fused next.
// CHECK-LABEL: func.func @read_twice
// CHECK: %[[F:.*]]:2 = linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: return %[[F]]#0, %[[F]]#1
func.func @read_twice(%x: tensor<64xf32>, %y: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %e = tensor.empty() : tensor<64xf32>
  %a = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x, %y : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %0 = arith.addf %u, %v : f32
    linalg.yield %0 : f32
  } -> tensor<64xf32>
  %b = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %a : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %0 = arith.mulf %u, %v : f32
    linalg.yield %0 : f32
  } -> tensor<64xf32>
  return %a, %b : tensor<64xf32>, tensor<64xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
#row = affine_map<(d0, d1) -> (d0)>

// Tests the negative cases: a consumer reading the producer transposed
// (the fused loop would store it out of order), a reduction consumer, and
// a producer with a user before the consumer (the fused loop, placed at
// the consumer, would not dominate it). Each keeps its own loop.
// CHECK-LABEL: func.func @negative_transposed_reduction_earlier_user
// CHECK-COUNT-6: linalg.generic
// CHECK-NOT: linalg.generic
func.func @negative_transposed_reduction_earlier_user(%x: tensor<32x32xf32>, %y: tensor<32x32xf32>)
    -> (tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32xf32>,
        tensor<32x32xf32>, tensor<1024xf32>, tensor<32x32xf32>) {
  %e = tensor.empty() : tensor<32x32xf32>
  %a = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<32x32xf32>, tensor<32x32xf32>) outs(%e : tensor<32x32xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %0 = arith.addf %u, %v : f32
    linalg.yield %0 : f32
  } -> tensor<32x32xf32>
  %t = linalg.generic {indexing_maps = [#t, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %y : tensor<32x32xf32>, tensor<32x32xf32>) outs(%e : tensor<32x32xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %0 = arith.mulf %u, %v : f32
    linalg.yield %0 : f32
  } -> tensor<32x32xf32>
  %z = arith.constant 0.0 : f32
  %r0 = tensor.empty() : tensor<32xf32>
  %r1 = linalg.fill ins(%z : f32) outs(%r0 : tensor<32xf32>) -> tensor<32xf32>
  %b = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<32x32xf32>, tensor<32x32xf32>) outs(%e : tensor<32x32xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %0 = arith.subf %u, %v : f32
    linalg.yield %0 : f32
  } -> tensor<32x32xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%b : tensor<32x32xf32>) outs(%r1 : tensor<32xf32>) {
  ^bb0(%u: f32, %o: f32):
    %0 = arith.addf %u, %o : f32
    linalg.yield %0 : f32
  } -> tensor<32xf32>
  %c = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y, %x : tensor<32x32xf32>, tensor<32x32xf32>) outs(%e : tensor<32x32xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %0 = arith.divf %u, %v : f32
    linalg.yield %0 : f32
  } -> tensor<32x32xf32>
  %flat = tensor.collapse_shape %c [[0, 1]] : tensor<32x32xf32> into tensor<1024xf32>
  %d = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %x : tensor<32x32xf32>, tensor<32x32xf32>) outs(%e : tensor<32x32xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %0 = arith.maximumf %u, %v : f32
    linalg.yield %0 : f32
  } -> tensor<32x32xf32>
  return %a, %t, %b, %s, %c, %flat, %d : tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>,
      tensor<32xf32>, tensor<32x32xf32>, tensor<1024xf32>, tensor<32x32xf32>
}
