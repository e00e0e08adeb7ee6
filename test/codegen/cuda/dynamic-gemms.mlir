// RUN: kiln-translate --kiln-to-cuda %s | FileCheck %s

// Dynamic (`?`) dims beyond pointwise and row kernels: GEMM steps,
// transposes, serial reductions, slices and concats over symbolic sizes
// (codegen/cuda/README.md, "Dynamic dims"). NVRTC compiles the same
// functions in test_cuda_dynamic.py.

// Tests that a GEMM over a `?` dim is an extern step whose sizes are symbol
// polynomials (evaluated per call), and that a static N keeps the bias+ReLU
// epilogue.
// CHECK-LABEL: func @linear_relu: 0 kernel(s), 1 other step(s)
// CHECK: buf0: float[s0x32], s0 * 128 bytes, result 0
// CHECK: linear_relu_gemm0: extern GEMM s0x32x16 (MxNxK, B transposed, epilogue bias_relu)(arg0, arg1, buf0, arg2)
func.func @linear_relu(%x: tensor<?x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>) -> tensor<?x32xf32> {
  %t = kiln.permute %w {dims = array<i64: 1, 0>} : tensor<32x16xf32> -> tensor<16x32xf32>
  %0 = kiln.matmul %x, %t : tensor<?x16xf32>, tensor<16x32xf32>
  %1 = kiln.add %0, %b : tensor<?x32xf32>, tensor<32xf32>
  %2 = kiln.relu %1 : tensor<?x32xf32>
  return %2 : tensor<?x32xf32>
}

// Tests a batched GEMM with symbolic batch, M and N (attention scores): the
// batch dims of both operands must agree per call.
// CHECK-LABEL: func @scores
// CHECK: // Requires s0 == s2
// CHECK-NOT: Requires
// CHECK: scores_gemm0: extern GEMM s0xs1xs3x8 (MxNxK, B transposed)(arg0, arg1, buf0)
func.func @scores(%q: tensor<?x?x8xf32>, %k: tensor<?x?x8xf32>) -> tensor<?x?x?xf32> {
  %kt = kiln.permute %k {dims = array<i64: 0, 2, 1>} : tensor<?x?x8xf32> -> tensor<?x8x?xf32>
  %s = kiln.matmul %q, %kt : tensor<?x?x8xf32>, tensor<?x8x?xf32>
  return %s : tensor<?x?x?xf32>
}

// Tests a transpose over symbolic dims: strides are symbol products.
// CHECK-LABEL: func @heads: 1 kernel(s)
// CHECK: heads_k0<<<grid(s0 * s1 * 32), 256>>>(arg0, buf0, symbols)
// CHECK: i < s0 * s1 * 32;
// CHECK: out0[i] = in0[d0 * (s1 * 32) + d1 * 8 + d2 * 32 + d3];
func.func @heads(%x: tensor<?x?x4x8xf32>) -> tensor<?x4x?x8xf32> {
  %0 = kiln.permute %x {dims = array<i64: 0, 2, 1, 3>} : tensor<?x?x4x8xf32> -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// Tests a reduction over a non-innermost symbolic dim: serial loops with
// symbolic bounds, one thread per output.
// CHECK-LABEL: func @col_sum: 1 kernel(s)
// CHECK: col_sum_k0<<<grid(s1), 256>>>(arg0, buf0, symbols)
// CHECK: for (long long d0 = 0; d0 < s0; ++d0) {
// CHECK-NEXT: in0[d0 * s1 + d1]
func.func @col_sum(%x: tensor<?x?xf32>) -> tensor<?xf32> {
  %0 = kiln.sum %x {dims = array<i64: 0>} : tensor<?x?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// Tests a slice of a symbolic tensor: its end is checked per call (a
// bound), the copy reads through symbolic strides.
// CHECK-LABEL: func @first_token: 1 kernel(s)
// CHECK: // Requires 1 <= s1
// CHECK: out0[d0 * 8 + d2] = in0[d0 * (s1 * 8) + d2];
func.func @first_token(%x: tensor<?x?x8xf32>) -> tensor<?x8xf32> {
  %0 = kiln.slice %x {end = array<i64: -1, 1, -1>, start = array<i64: 0, 0, 0>, step = array<i64: 1, 1, 1>} : tensor<?x?x8xf32> -> tensor<?x1x8xf32>
  %1 = kiln.reshape %0 : tensor<?x1x8xf32> -> tensor<?x8xf32>
  return %1 : tensor<?x8xf32>
}

// Tests that a concat of two `?`-row tensors requires equal rows (never a
// partial write leaving rows unset).
// CHECK-LABEL: func @concat: 2 kernel(s)
// CHECK: // Requires s1 == s0
// CHECK: out0[d0 * 16 + d1 + 8] = in0[d0 * 8 + d1];
func.func @concat(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>) -> tensor<?x16xf32> {
  %0 = kiln.concat %x, %y {dim = 1 : i64} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// Tests a concat along a symbolic dim: the result's size is a sum (s0 + 1),
// the second piece is written at a symbolic-free offset, nothing to check.
// CHECK-LABEL: func @prepend: 2 kernel(s)
// CHECK-NOT: Requires
// CHECK: buf0: float[(s0 + 1)x8], s0 * 32 + 32 bytes, result 0
// CHECK: prepend_k0<<<1, 256>>>(arg1, buf0)
// CHECK: out0[d0 * 8 + d1 + 8] = in0[d0 * 8 + d1];
func.func @prepend(%x: tensor<?x8xf32>, %y: tensor<1x8xf32>) -> tensor<?x8xf32> {
  %0 = kiln.concat %y, %x {dim = 0 : i64} : tensor<1x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}
