// RUN: kiln-translate --kiln-to-cuda --no-prepare %s | FileCheck %s

// Tests that the scalar ops of kiln.fmod and kiln.floor_div (after
// kiln-convert-to-linalg) map to CUDA: remf to fmodf, remsi to %, divsi to /,
// math.copysign to copysignf.

// CHECK-LABEL: func @float_ops: 1 kernel(s)
// CHECK: = fmodf(a0, a1);
// CHECK-NEXT: = copysignf(v0, a1);
func.func @float_ops(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%x : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %1 = arith.remf %a, %b : f32
    %2 = math.copysign %1, %b : f32
    linalg.yield %2 : f32
  } -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// CHECK-LABEL: func @int_ops: 1 kernel(s)
// CHECK: = (a0 / a1);
// CHECK-NEXT: = (v0 % a1);
func.func @int_ops(%x: tensor<4x8xi64>, %y: tensor<4x8xi64>) -> tensor<4x8xi64> {
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<4x8xi64>, tensor<4x8xi64>) outs(%x : tensor<4x8xi64>) {
  ^bb0(%a: i64, %b: i64, %o: i64):
    %1 = arith.divsi %a, %b : i64
    %2 = arith.remsi %1, %b : i64
    linalg.yield %2 : i64
  } -> tensor<4x8xi64>
  return %0 : tensor<4x8xi64>
}
