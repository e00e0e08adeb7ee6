// RUN: kiln-translate --kiln-to-cuda --no-prepare %s | FileCheck %s

// Tests that math.roundeven (torch.round: half to even), math.tan and
// math.atan map to rintf, tanf and atanf.

// CHECK-LABEL: func @round_tan_atan: 1 kernel(s)
// CHECK: const float v0 = rintf(a0);
// CHECK-NEXT: const float v1 = tanf(v0);
// CHECK-NEXT: const float v2 = atanf(v1);
func.func @round_tan_atan(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%x : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %1 = math.roundeven %a : f32
    %2 = math.tan %1 : f32
    %3 = math.atan %2 : f32
    linalg.yield %3 : f32
  } -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
