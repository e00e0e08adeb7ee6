// RUN: kiln-opt %s -split-input-file -kiln-autodiff "-kiln-cpu-convs-to-dnnl=quantized-only=true" | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-autodiff "-kiln-cpu-convs-to-dnnl=quantized-only=true conv-grads=false" | FileCheck %s --check-prefix=OFF

// kiln-cpu-convs-to-dnnl turns the convolution gradients kiln-autodiff
// marked (ir/ConvGradMarks.h) into oneDNN backward calls on the marked
// sources, whatever its other options (quantized-only here: the forward
// convolution stays kiln.conv2d); with conv-grads=false (OFF) the
// gradients keep their decomposition.

// Stride 2, padding 1, groups 2: backward-data on (g, w) and
// backward-weights on (x, g), with the forward's strides, dilations,
// paddings and groups as i64 constants; the weight gradient's buffer
// reshaped to the matmul's [G, F/G, C/G*KH*KW].
// CHECK-LABEL: func.func @conv_grouped_strided_bwd
// CHECK-SAME: (%[[G:.*]]: tensor<1x4x3x3xf32>, %[[X:.*]]: tensor<1x2x5x5xf32>, %[[W:.*]]: tensor<4x1x3x3xf32>)
// CHECK-DAG: %[[GX:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x2x5x5xf32>
// CHECK-DAG: bufferization.to_memref %[[G]] read_only
// CHECK-DAG: bufferization.to_memref %[[W]] read_only
// CHECK: call @kiln_dnnl_conv2d_bwd_data_f32({{.*}}, %c2{{.*}}, %c2{{.*}}, %c1{{.*}}, %c1{{.*}}, %c1{{.*}}, %c1{{.*}}, %c1{{.*}}, %c1{{.*}}, %c2{{.*}})
// CHECK: bufferization.to_tensor %[[GX]] restrict writable
// CHECK-NOT: kiln.conv_grad_data
// CHECK-DAG: memref.alloc() {alignment = 64 : i64} : memref<4x1x3x3xf32>
// CHECK-DAG: bufferization.to_memref %[[X]] read_only
// CHECK: call @kiln_dnnl_conv2d_bwd_weights_f32
// CHECK: kiln.reshape {{.*}} : tensor<4x1x3x3xf32> -> tensor<2x2x9xf32>
// CHECK-NOT: kiln.matmul {{.*}}conv_grad_weights
// CHECK: return
// OFF-LABEL: func.func @conv_grouped_strided_bwd
// OFF-NOT: call @kiln_dnnl_conv2d_bwd
// OFF: kiln.conv2d {{.*}}kiln.conv_grad_data
// OFF: kiln.matmul {{.*}}kiln.conv_grad_weights
func.func @conv_grouped_strided(%x: tensor<1x2x5x5xf32> {kiln.requires_grad}, %w: tensor<4x1x3x3xf32> {kiln.requires_grad}) -> tensor<1x4x3x3xf32> {
  %0 = kiln.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64} : tensor<1x2x5x5xf32>, tensor<4x1x3x3xf32> -> tensor<1x4x3x3xf32>
  return %0 : tensor<1x4x3x3xf32>
}

// -----

// Only the weight needs a gradient (a network's first convolution): one
// backward-weights call, no backward-data.
// CHECK-LABEL: func.func @conv_weight_only_bwd
// CHECK-NOT: call @kiln_dnnl_conv2d_bwd_data_f32
// CHECK: call @kiln_dnnl_conv2d_bwd_weights_f32
// CHECK-NOT: call @kiln_dnnl_conv2d_bwd_data_f32
func.func @conv_weight_only(%x: tensor<2x3x9x9xf32>, %w: tensor<8x3x7x7xf32> {kiln.requires_grad}) -> tensor<2x8x5x5xf32> {
  %0 = kiln.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 3, 3, 3, 3>} : tensor<2x3x9x9xf32>, tensor<8x3x7x7xf32> -> tensor<2x8x5x5xf32>
  return %0 : tensor<2x8x5x5xf32>
}

// -----

// Negative: a patch conv (stride == kernel) has unmarked gradients (its
// own reshape + GEMM rules): no calls.
// CHECK-LABEL: func.func @conv_patch_bwd
// CHECK-NOT: call @kiln_dnnl_conv2d_bwd
// CHECK: kiln.matmul
// CHECK: return
func.func @conv_patch(%x: tensor<1x3x8x8xf32> {kiln.requires_grad}, %w: tensor<4x3x4x4xf32> {kiln.requires_grad}) -> tensor<1x4x2x2xf32> {
  %0 = kiln.conv2d %x, %w {stride = array<i64: 4, 4>} : tensor<1x3x8x8xf32>, tensor<4x3x4x4xf32> -> tensor<1x4x2x2xf32>
  return %0 : tensor<1x4x2x2xf32>
}

// -----

// Negative: a marked root whose sources do not resolve (no marked casts
// behind it) keeps its decomposition.
// CHECK-LABEL: func.func @unresolved
// CHECK-NOT: call @kiln_dnnl_conv2d_bwd
// CHECK: kiln.conv2d {{.*}}kiln.conv_grad_data
func.func @unresolved(%g: tensor<1x4x5x5xf32>, %w: tensor<2x4x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %0 = kiln.conv2d %g, %w {kiln.conv_grad_data = array<i64: 1, 1, 1, 1, 0, 0, 0, 0, 1, 3, 3>} : tensor<1x4x5x5xf32>, tensor<2x4x3x3xf32> -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}
