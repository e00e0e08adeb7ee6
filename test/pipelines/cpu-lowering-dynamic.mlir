// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(kiln-optimize,kiln-cpu-lowering)' | FileCheck %s

// Graphs with a symbolic batch dim (kiln.compile(dynamic=True) or
// kiln.mark_dynamic): the whole CPU pipeline lowers them to LLVM, with the
// sizes read from the memref descriptors at run time.

// Tests that an MLP block (linear, gelu, layer_norm, linear, softmax, row
// sum and a batch mean) over a `?` batch lowers to one LLVM function whose
// GEMMs go to the BLAS shim.
// CHECK-LABEL: llvm.func @forward
// CHECK: llvm.call @kiln_blas_sgemm
// CHECK: llvm.call @kiln_blas_sgemm
func.func @forward(%x: tensor<?x64xf32>, %w1: tensor<128x64xf32>, %b1: tensor<128xf32>,
                   %g: tensor<128xf32>, %be: tensor<128xf32>, %w2: tensor<10x128xf32>,
                   %b2: tensor<10xf32>) -> tensor<?x10xf32> {
  %0 = kiln.permute %w1 {dims = array<i64: 1, 0>} : tensor<128x64xf32> -> tensor<64x128xf32>
  %1 = kiln.matmul %x, %0 : tensor<?x64xf32>, tensor<64x128xf32>
  %2 = kiln.add %1, %b1 : tensor<?x128xf32>, tensor<128xf32>
  %3 = kiln.gelu %2 : tensor<?x128xf32>
  %4 = kiln.layer_norm %3 weight %g bias %be {num_dims = 1 : i64} : tensor<?x128xf32>, tensor<128xf32>, tensor<128xf32>
  %5 = kiln.permute %w2 {dims = array<i64: 1, 0>} : tensor<10x128xf32> -> tensor<128x10xf32>
  %6 = kiln.matmul %4, %5 : tensor<?x128xf32>, tensor<128x10xf32>
  %7 = kiln.add %6, %b2 : tensor<?x10xf32>, tensor<10xf32>
  %8 = kiln.softmax %7 {dim = 1 : i64} : tensor<?x10xf32>
  %9 = kiln.sum %7 {dims = array<i64: 1>, keepdim = true} : tensor<?x10xf32> -> tensor<?x1xf32>
  %10 = kiln.add %8, %9 : tensor<?x10xf32>, tensor<?x1xf32>
  %11 = kiln.mean %7 {dims = array<i64: 0>} : tensor<?x10xf32> -> tensor<10xf32>
  %12 = kiln.add %10, %11 : tensor<?x10xf32>, tensor<10xf32>
  return %12 : tensor<?x10xf32>
}

// -----

// Tests that a flatten of a `?`-batch feature map (x.view(x.shape[0], -1))
// lowers: the reshape's dynamic dim comes from the element count.
// CHECK-LABEL: llvm.func @flatten
func.func @flatten(%x: tensor<?x4x4x4xf32>) -> tensor<?x64xf32> {
  %0 = kiln.reshape %x : tensor<?x4x4x4xf32> -> tensor<?x64xf32>
  %1 = kiln.relu %0 : tensor<?x64xf32>
  return %1 : tensor<?x64xf32>
}
