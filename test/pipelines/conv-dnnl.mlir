// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(kiln-cpu-convs-to-dnnl,kiln-optimize,kiln-cpu-lowering)' | FileCheck %s

// The whole CPU lowering after kiln-cpu-convs-to-dnnl (what compileForCpu
// runs with kiln.config.dnnl_convs on).

// Tests that a 3x3 convolution followed by BatchNorm-like per-channel ops and
// a ReLU lowers to LLVM with one call of the oneDNN shim's C interface
// (which absorbs the per-channel ops and the ReLU), no im2col GEMM, and one
// malloc: the arena of kiln-cpu-plan-memory, which holds the NHWC input
// copy and the NHWC result (the shim is kiln.buffer_args_only).
// CHECK-LABEL: llvm.func @conv_bn_relu
// CHECK-COUNT-1: llvm.call @malloc
// CHECK-NOT: llvm.call @malloc
// CHECK: llvm.call @kiln_dnnl_conv2d_f32
// CHECK-NOT: kiln_blas
// CHECK: llvm.return
func.func @conv_bn_relu(%x: tensor<1x8x6x6xf32>, %w: tensor<4x8x3x3xf32>, %s: tensor<4x1x1xf32>, %t: tensor<4x1x1xf32>) -> tensor<1x4x6x6xf32> {
  %y = kiln.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<4x8x3x3xf32> -> tensor<1x4x6x6xf32>
  %m = kiln.mul %y, %s : tensor<1x4x6x6xf32>, tensor<4x1x1xf32>
  %a = kiln.add %m, %t : tensor<1x4x6x6xf32>, tensor<4x1x1xf32>
  %r = kiln.relu %a : tensor<1x4x6x6xf32>
  return %r : tensor<1x4x6x6xf32>
}
