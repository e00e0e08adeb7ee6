// RUN: not kiln-translate --kiln-to-cuda %s 2>&1 | FileCheck %s

// Tests that IR the emitter does not handle yet is reported at the op's
// source location instead of crashing: a matmul (cuBLAS is the next slice).

// CHECK: errors.mlir:[[@LINE+2]]:8: error: CUDA emitter: 'linalg.matmul' is not supported yet
func.func @mm(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %0 = kiln.matmul %a, %b : tensor<4x8xf32>, tensor<8x16xf32>
  return %0 : tensor<4x16xf32>
}

// Tests that a reduction over a non-innermost dim is reported (a column
// reduction needs a different kernel shape).

// CHECK: errors.mlir:[[@LINE+2]]:8: error: CUDA emitter: only all-parallel generics and row reductions over the innermost dim are supported
func.func @col_sum(%x: tensor<8x16xf32>) -> tensor<16xf32> {
  %0 = kiln.sum %x {dims = array<i64: 0>} : tensor<8x16xf32> -> tensor<16xf32>
  return %0 : tensor<16xf32>
}
