// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(kiln-cpu-convs-to-dnnl,kiln-optimize,kiln-cpu-lowering)' | FileCheck %s

// The whole CPU lowering after kiln-cpu-convs-to-dnnl (what compileForCpu
// runs with kiln.config.dnnl_convs on).

// Tests that a 3x3 convolution followed by BatchNorm-like pointwise ops and
// a ReLU lowers to LLVM with one call of the oneDNN shim's C interface, no
// im2col GEMM, and the NHWC input copy and result buffer as the only
// intermediates (the pointwise ops fuse into the copy back to NCHW).
// CHECK-LABEL: llvm.func @conv_bn_relu
// CHECK-COUNT-2: llvm.call @malloc
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
