// RUN: not kiln-translate --kiln-to-cuda --no-prepare %s 2>&1 | FileCheck %s

// Tests that a reduction with two outputs whose accumulator does not start
// from a linalg.fill (here: a function argument) is an error at the op,
// not a kernel that reads the wrong start value.

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK: errors-multi-output.mlir:[[@LINE+5]]:10: error: CUDA emitter: a reduction's inits must be linalg.fills of supported element types
func.func @two_outputs(%x: tensor<4x8xf32>, %v0: tensor<4xf32>) -> tensor<4xi64> {
  %c0 = arith.constant 0 : i64
  %e = tensor.empty() : tensor<4xi64>
  %i0 = linalg.fill ins(%c0 : i64) outs(%e : tensor<4xi64>) -> tensor<4xi64>
  %r:2 = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%v0, %i0 : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%a: f32, %v: f32, %i: i64):
    %j = linalg.index 1 : index
    %jj = arith.index_cast %j : index to i64
    %gt = arith.cmpf ogt, %a, %v : f32
    %nv = arith.select %gt, %a, %v : f32
    %ni = arith.select %gt, %jj, %i : i64
    linalg.yield %nv, %ni : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  return %r#1 : tensor<4xi64>
}
