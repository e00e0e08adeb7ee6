// RUN: kiln-translate --kiln-to-cuda --no-prepare %s | FileCheck %s

// Tests that a two-output row reduction that is not kiln's argmax (here
// `oge`: the last maximum wins) is not given the block-parallel merge,
// whose tie rule is argmax's: it keeps the serial form, one thread per
// row folding the body in order, which is exact for any body.

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func @last_max: 1 kernel(s)
// CHECK: last_max_k0: reduction with 2 outputs over 4x8
// CHECK-NOT: s_v
// CHECK: for (int d1 = 0; d1 < 8; ++d1) {
// CHECK: (a0 >= acc0)
func.func @last_max(%x: tensor<4x8xf32>) -> tensor<4xi64> {
  %c0 = arith.constant 0 : i64
  %ninf = arith.constant 0xFF800000 : f32
  %ev = tensor.empty() : tensor<4xf32>
  %ei = tensor.empty() : tensor<4xi64>
  %v0 = linalg.fill ins(%ninf : f32) outs(%ev : tensor<4xf32>) -> tensor<4xf32>
  %i0 = linalg.fill ins(%c0 : i64) outs(%ei : tensor<4xi64>) -> tensor<4xi64>
  %r:2 = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%v0, %i0 : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%a: f32, %v: f32, %i: i64):
    %j = linalg.index 1 : index
    %jj = arith.index_cast %j : index to i64
    %ge = arith.cmpf oge, %a, %v : f32
    %nv = arith.select %ge, %a, %v : f32
    %ni = arith.select %ge, %jj, %i : i64
    linalg.yield %nv, %ni : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  return %r#1 : tensor<4xi64>
}
