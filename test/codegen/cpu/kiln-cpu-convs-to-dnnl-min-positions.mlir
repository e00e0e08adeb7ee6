// RUN: kiln-opt %s -split-input-file "-kiln-cpu-convs-to-dnnl=min-output-positions=196" | FileCheck %s
// RUN: kiln-opt %s -split-input-file "-kiln-cpu-convs-to-dnnl=min-columns-bytes=1048576 min-output-positions=196" | FileCheck %s --check-prefix=BOTH

// kiln-cpu-convs-to-dnnl with min-output-positions (the driver sets it with
// min-columns-bytes when dnnl_convs is off): convolutions with at least
// that many output positions (batch x height x width) become oneDNN calls,
// whatever their kernel; smaller ones stay kiln.conv2d. With both options a
// convolution qualifying under either is rewritten (BOTH).

// A 1x1 convolution at 14x14 (196 positions): rewritten.
// CHECK-LABEL: func.func @pointwise_at_bound
// CHECK: call @kiln_dnnl_conv2d_f32
// CHECK-NOT: kiln.conv2d
// BOTH-LABEL: func.func @pointwise_at_bound
// BOTH: call @kiln_dnnl_conv2d_f32
func.func @pointwise_at_bound(%x: tensor<1x112x14x14xf32>, %w: tensor<672x112x1x1xf32>) -> tensor<1x672x14x14xf32> {
  %y = kiln.conv2d %x, %w : tensor<1x112x14x14xf32>, tensor<672x112x1x1xf32> -> tensor<1x672x14x14xf32>
  return %y : tensor<1x672x14x14xf32>
}

// -----

// A depthwise 5x5 convolution at 28x28: rewritten.
// CHECK-LABEL: func.func @depthwise
// CHECK: call @kiln_dnnl_conv2d_f32
// CHECK-NOT: kiln.conv2d
func.func @depthwise(%x: tensor<1x240x28x28xf32>, %w: tensor<240x1x5x5xf32>) -> tensor<1x240x28x28xf32> {
  %y = kiln.conv2d %x, %w {padding = array<i64: 2, 2, 2, 2>, groups = 240 : i64} : tensor<1x240x28x28xf32>, tensor<240x1x5x5xf32> -> tensor<1x240x28x28xf32>
  return %y : tensor<1x240x28x28xf32>
}

// -----

// Negative: a 1x1 convolution at 7x7 (49 positions: its 1.6 MiB weight
// would be re-laid for 49 multiply-adds per element) stays for kiln-decompose.
// CHECK-LABEL: func.func @pointwise_last_stage
// CHECK-NOT: call @kiln_dnnl_conv2d_f32
// CHECK: kiln.conv2d
// BOTH-LABEL: func.func @pointwise_last_stage
// BOTH-NOT: call @kiln_dnnl_conv2d_f32
// BOTH: kiln.conv2d
func.func @pointwise_last_stage(%x: tensor<1x320x7x7xf32>, %w: tensor<1280x320x1x1xf32>) -> tensor<1x1280x7x7xf32> {
  %y = kiln.conv2d %x, %w : tensor<1x320x7x7xf32>, tensor<1280x320x1x1xf32> -> tensor<1x1280x7x7xf32>
  return %y : tensor<1x1280x7x7xf32>
}

// -----

// Positions count the batch: 4 x 7x7 = 196.
// CHECK-LABEL: func.func @batched_last_stage
// CHECK: call @kiln_dnnl_conv2d_f32
func.func @batched_last_stage(%x: tensor<4x64x7x7xf32>, %w: tensor<64x64x3x3xf32>) -> tensor<4x64x7x7xf32> {
  %y = kiln.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<4x64x7x7xf32>, tensor<64x64x3x3xf32> -> tensor<4x64x7x7xf32>
  return %y : tensor<4x64x7x7xf32>
}

// -----

// Few positions but big im2col columns next to the weight: rewritten under
// min-columns-bytes only (BOTH), not by the positions alone.
// CHECK-LABEL: func.func @big_columns_few_positions
// CHECK-NOT: call @kiln_dnnl_conv2d_f32
// CHECK: kiln.conv2d
// BOTH-LABEL: func.func @big_columns_few_positions
// BOTH: call @kiln_dnnl_conv2d_f32
func.func @big_columns_few_positions(%x: tensor<1x2048x12x12xf32>, %w: tensor<8x2048x3x3xf32>) -> tensor<1x8x12x12xf32> {
  %y = kiln.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<1x2048x12x12xf32>, tensor<8x2048x3x3xf32> -> tensor<1x8x12x12xf32>
  return %y : tensor<1x8x12x12xf32>
}
