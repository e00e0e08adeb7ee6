// RUN: kiln-opt %s -split-input-file "-kiln-cpu-convs-to-dnnl=min-columns-bytes=1048576" | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-cpu-convs-to-dnnl | FileCheck %s --check-prefix=ALL

// kiln-cpu-convs-to-dnnl with min-columns-bytes (the driver's setting when
// dnnl_convs is off): only convolutions whose im2col columns would take at
// least that many bytes and at least 8x their weight's become oneDNN calls;
// the others stay kiln.conv2d for kiln-decompose. Without the option every
// one of them is rewritten (ALL).

// A 3x3 convolution at 64x64 with 16 channels: 16*9*4096*4 = 2.25 MiB of
// columns for a 9 KiB weight.
// CHECK-LABEL: func.func @big_columns
// CHECK: call @kiln_dnnl_conv2d_f32
// CHECK-NOT: kiln.conv2d
// ALL-LABEL: func.func @big_columns
// ALL: call @kiln_dnnl_conv2d_f32
func.func @big_columns(%x: tensor<1x16x64x64xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<1x16x64x64xf32> {
  %y = kiln.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<1x16x64x64xf32>, tensor<16x16x3x3xf32> -> tensor<1x16x64x64xf32>
  return %y : tensor<1x16x64x64xf32>
}

// -----

// Negative: columns under the bound (10 KiB).
// CHECK-LABEL: func.func @small_columns
// CHECK-NOT: call @kiln_dnnl_conv2d_f32
// CHECK: kiln.conv2d
// ALL-LABEL: func.func @small_columns
// ALL: call @kiln_dnnl_conv2d_f32
func.func @small_columns(%x: tensor<1x8x6x6xf32>, %w: tensor<4x8x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %y = kiln.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<4x8x3x3xf32> -> tensor<1x4x6x6xf32>
  return %y : tensor<1x4x6x6xf32>
}

// -----

// Negative: 2.25 MiB of columns but only 4x the 576 KiB weight (a weight
// re-laid on every call would cost about what the columns do).
// CHECK-LABEL: func.func @big_weight
// CHECK-NOT: call @kiln_dnnl_conv2d_f32
// CHECK: kiln.conv2d
func.func @big_weight(%x: tensor<1x64x32x32xf32>, %w: tensor<256x64x3x3xf32>) -> tensor<1x256x32x32xf32> {
  %y = kiln.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<1x64x32x32xf32>, tensor<256x64x3x3xf32> -> tensor<1x256x32x32xf32>
  return %y : tensor<1x256x32x32xf32>
}

// -----

// Negative: a 1x1 convolution has no columns (one GEMM on the input).
// CHECK-LABEL: func.func @pointwise
// CHECK-NOT: call @kiln_dnnl_conv2d_f32
// CHECK: kiln.conv2d
func.func @pointwise(%x: tensor<1x64x64x64xf32>, %w: tensor<16x64x1x1xf32>) -> tensor<1x16x64x64xf32> {
  %y = kiln.conv2d %x, %w : tensor<1x64x64x64xf32>, tensor<16x64x1x1xf32> -> tensor<1x16x64x64xf32>
  return %y : tensor<1x16x64x64xf32>
}

// -----

// Negative: a depthwise convolution is a direct loop nest (no columns).
// CHECK-LABEL: func.func @depthwise
// CHECK-NOT: call @kiln_dnnl_conv2d_f32
// CHECK: kiln.conv2d
func.func @depthwise(%x: tensor<1x32x64x64xf32>, %w: tensor<32x1x3x3xf32>) -> tensor<1x32x64x64xf32> {
  %y = kiln.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, groups = 32 : i64} : tensor<1x32x64x64xf32>, tensor<32x1x3x3xf32> -> tensor<1x32x64x64xf32>
  return %y : tensor<1x32x64x64xf32>
}
