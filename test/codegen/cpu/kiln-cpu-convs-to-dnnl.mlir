// RUN: kiln-opt %s -split-input-file -kiln-cpu-convs-to-dnnl | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-cpu-convs-to-dnnl | FileCheck %s --check-prefix=MAP

// Tests that a padded f32 3x3 convolution becomes one oneDNN call on an
// NHWC copy of the input (a permuting linalg.generic) and an NHWC result buffer, seen by the call as
// NCHW-shaped strided views, with its window as i64 constants (strides 1 1,
// dilations 1 1, paddings 1 1 1 1, groups 1, no activation), a scale of
// ones and a shift of zeros (no epilogue), and that the result
// is permuted back to NCHW (test/pipelines/conv-dnnl.mlir lowers it to LLVM).
// MAP: #[[IN:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>
// MAP: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK: func.func private @kiln_dnnl_conv2d_f32(memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>, memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>, memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64) attributes {kiln.buffer_args_only, llvm.emit_c_interface}
// CHECK-LABEL: func.func @conv3x3
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x6x6xf32>, %[[W:.*]]: tensor<4x8x3x3xf32>)
// CHECK-DAG: %[[SCALE:.*]] = kiln.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK-DAG: %[[SHIFT:.*]] = kiln.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK: %[[XT:.*]] = linalg.generic {indexing_maps = [#[[IN:.*]], #[[OUT:.*]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[X]] : tensor<1x8x6x6xf32>) outs(%{{.*}} : tensor<1x6x6x8xf32>)
// CHECK: %[[XM:.*]] = bufferization.to_memref %[[XT]] read_only
// CHECK: %[[WM:.*]] = bufferization.to_memref %[[W]] read_only
// CHECK: %[[YM:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x6x6x4xf32>
// CHECK: %[[XV:.*]] = memref.reinterpret_cast
// CHECK: %[[WV:.*]] = memref.cast %[[WM]]
// CHECK: %[[YV:.*]] = memref.reinterpret_cast
// CHECK: %[[SM:.*]] = bufferization.to_memref %[[SCALE]] read_only
// CHECK: %[[SV:.*]] = memref.cast %[[SM]]
// CHECK: %[[TM:.*]] = bufferization.to_memref %[[SHIFT]] read_only
// CHECK: %[[TV:.*]] = memref.cast %[[TM]]
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK: call @kiln_dnnl_conv2d_f32(%[[XV]], %[[WV]], %[[YV]], %[[SV]], %[[TV]], %[[ONE]], %[[ONE]], %[[ONE]], %[[ONE]], %[[ONE]], %[[ONE]], %[[ONE]], %[[ONE]], %[[ONE]], %[[ZERO]])
// CHECK: %[[YT:.*]] = bufferization.to_tensor %[[YM]] restrict writable
// CHECK: %[[Y:.*]] = kiln.permute %[[YT]] {dims = array<i64: 0, 3, 1, 2>} : tensor<1x6x6x4xf32> -> tensor<1x4x6x6xf32>
// CHECK: return %[[Y]]
// CHECK-NOT: kiln.conv2d
func.func @conv3x3(%x: tensor<1x8x6x6xf32>, %w: tensor<4x8x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %y = kiln.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<4x8x3x3xf32> -> tensor<1x4x6x6xf32>
  return %y : tensor<1x4x6x6xf32>
}

// -----

// Tests that a channels-last input and weight (the frontend passes a
// caller's channels-last tensors in memory order, each permuted to NCHW)
// reach the call as strided views of the arguments themselves: no
// permuting copy of either (oneDNN reorders the weight from its strides).
// CHECK-LABEL: func.func @conv3x3_channels_last_arguments
// CHECK-SAME: (%[[X:.*]]: tensor<1x6x6x8xf32>, %[[W:.*]]: tensor<4x3x3x8xf32>)
// CHECK-NOT: linalg.generic
// CHECK: %[[XM:.*]] = bufferization.to_memref %[[X]] read_only
// CHECK: %[[WM:.*]] = bufferization.to_memref %[[W]] read_only
// CHECK: %[[XB:.*]], %{{.*}}, %[[XS:.*]]:4, %[[XT:.*]]:4 = memref.extract_strided_metadata %[[XM]]
// CHECK: %[[XV:.*]] = memref.reinterpret_cast %[[XB]] {{.*}} sizes: [%[[XS]]#0, %[[XS]]#3, %[[XS]]#1, %[[XS]]#2], strides: [%[[XT]]#0, %[[XT]]#3, %[[XT]]#1, %[[XT]]#2]
// CHECK: %[[WB:.*]], %{{.*}}, %[[WS:.*]]:4, %[[WT:.*]]:4 = memref.extract_strided_metadata %[[WM]]
// CHECK: %[[WV:.*]] = memref.reinterpret_cast %[[WB]] {{.*}} sizes: [%[[WS]]#0, %[[WS]]#3, %[[WS]]#1, %[[WS]]#2], strides: [%[[WT]]#0, %[[WT]]#3, %[[WT]]#1, %[[WT]]#2]
// CHECK: call @kiln_dnnl_conv2d_f32(%[[XV]], %[[WV]],
// CHECK-NOT: linalg.generic
func.func @conv3x3_channels_last_arguments(%x: tensor<1x6x6x8xf32>, %w: tensor<4x3x3x8xf32>) -> tensor<1x4x6x6xf32> {
  %xp = kiln.permute %x {dims = array<i64: 0, 3, 1, 2>} : tensor<1x6x6x8xf32> -> tensor<1x8x6x6xf32>
  %wp = kiln.permute %w {dims = array<i64: 0, 3, 1, 2>} : tensor<4x3x3x8xf32> -> tensor<4x8x3x3xf32>
  %y = kiln.conv2d %xp, %wp {padding = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<4x8x3x3xf32> -> tensor<1x4x6x6xf32>
  return %y : tensor<1x4x6x6xf32>
}

// -----

// Tests that a ReLU that is the convolution's only user becomes the call's
// activation 1 (the last argument) and disappears; stride 2, dilation 2,
// asymmetric padding and 2 groups are passed through.
// CHECK-LABEL: func.func @grouped_strided_relu
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : i64
// CHECK: call @kiln_dnnl_conv2d_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[C2]], %[[C2]], %[[C2]], %[[C2]], %[[C0]], %[[C1]], %[[C1]], %[[C1]], %[[C2]], %[[C1]])
// CHECK-NOT: kiln.relu
// CHECK: kiln.permute
// CHECK-NOT: kiln.relu
// CHECK: return
func.func @grouped_strided_relu(%x: tensor<1x4x9x9xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<1x6x3x4xf32> {
  %y = kiln.conv2d %x, %w {stride = array<i64: 2, 2>, dilation = array<i64: 2, 2>, padding = array<i64: 0, 1, 1, 1>, groups = 2 : i64} : tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32> -> tensor<1x6x3x4xf32>
  %r = kiln.relu %y : tensor<1x6x3x4xf32>
  return %r : tensor<1x6x3x4xf32>
}

// -----

// Tests that a ReLU is not fused when the convolution has another user: it
// stays a kiln op (run on the NHWC result, the permute sunk below it).
// CHECK-LABEL: func.func @negative_relu_with_other_user
// CHECK: %[[C0:.*]] = arith.constant 0 : i64
// CHECK: call @kiln_dnnl_conv2d_f32({{.*}}, %[[C0]])
// CHECK: %[[YT:.*]] = bufferization.to_tensor
// CHECK: %[[Y:.*]] = kiln.permute %[[YT]]
// CHECK: %[[R:.*]] = kiln.relu %[[YT]]
// CHECK: %[[RP:.*]] = kiln.permute %[[R]]
// CHECK: return %[[Y]], %[[RP]]
func.func @negative_relu_with_other_user(%x: tensor<1x8x6x6xf32>, %w: tensor<4x8x3x3xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
  %y = kiln.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<4x8x3x3xf32> -> tensor<1x4x6x6xf32>
  %r = kiln.relu %y : tensor<1x4x6x6xf32>
  return %y, %r : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
}

// -----

// Tests that an eval-mode BatchNorm as the frontend captures it
// ((y - mean) * rsqrt(var + eps) * weight + bias, per-channel [1, F, 1, 1]
// operands) and a SiLU after it are absorbed by the call: the scale is the
// product of the multipliers, the shift (0 - mean) * rsqrt(..) * weight +
// bias, both [F] tensors computed by kiln ops, and the activation is 2.
// CHECK-LABEL: func.func @batchnorm_silu
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x6x6xf32>, %[[W:.*]]: tensor<4x8x3x3xf32>, %[[MEAN:.*]]: tensor<4xf32>, %[[VAR:.*]]: tensor<4xf32>, %[[G:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK: %[[M:.*]] = kiln.reshape %{{.*}} : tensor<1x4x1x1xf32> -> tensor<4xf32>
// CHECK: %[[SH0:.*]] = kiln.sub %{{.*}}, %[[M]] : tensor<4xf32>, tensor<4xf32>
// CHECK: %[[R:.*]] = kiln.reshape %{{.*}} : tensor<1x4x1x1xf32> -> tensor<4xf32>
// CHECK: %[[SH1:.*]] = kiln.mul %[[SH0]], %[[R]]
// CHECK: %[[GR:.*]] = kiln.reshape %{{.*}} : tensor<1x4x1x1xf32> -> tensor<4xf32>
// CHECK: %[[SC:.*]] = kiln.mul %[[R]], %[[GR]]
// CHECK: %[[SH2:.*]] = kiln.mul %[[SH1]], %[[GR]]
// CHECK: %[[BR:.*]] = kiln.reshape %{{.*}} : tensor<1x4x1x1xf32> -> tensor<4xf32>
// CHECK: %[[SH3:.*]] = kiln.add %[[SH2]], %[[BR]]
// CHECK: bufferization.to_memref %[[SC]] read_only
// CHECK: bufferization.to_memref %[[SH3]] read_only
// CHECK: %[[C2:.*]] = arith.constant 2 : i64
// CHECK: call @kiln_dnnl_conv2d_f32({{.*}}, %[[C2]])
// CHECK-NOT: kiln.silu
// CHECK-NOT: kiln.conv2d
// CHECK: %[[Y:.*]] = kiln.permute
// CHECK-NEXT: return %[[Y]]
func.func @batchnorm_silu(%x: tensor<1x8x6x6xf32>, %w: tensor<4x8x3x3xf32>, %mean: tensor<4xf32>, %var: tensor<4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<1x4x6x6xf32> {
  %y = kiln.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<4x8x3x3xf32> -> tensor<1x4x6x6xf32>
  %m = kiln.reshape %mean : tensor<4xf32> -> tensor<1x4x1x1xf32>
  %c = kiln.sub %y, %m : tensor<1x4x6x6xf32>, tensor<1x4x1x1xf32>
  %v = kiln.reshape %var : tensor<4xf32> -> tensor<1x4x1x1xf32>
  %eps = kiln.constant dense<1.0e-05> : tensor<f32>
  %ve = kiln.add %v, %eps : tensor<1x4x1x1xf32>, tensor<f32>
  %r = kiln.rsqrt %ve : tensor<1x4x1x1xf32>
  %n = kiln.mul %c, %r : tensor<1x4x6x6xf32>, tensor<1x4x1x1xf32>
  %gr = kiln.reshape %g : tensor<4xf32> -> tensor<1x4x1x1xf32>
  %s = kiln.mul %n, %gr : tensor<1x4x6x6xf32>, tensor<1x4x1x1xf32>
  %br = kiln.reshape %b : tensor<4xf32> -> tensor<1x4x1x1xf32>
  %a = kiln.add %s, %br : tensor<1x4x6x6xf32>, tensor<1x4x1x1xf32>
  %o = kiln.silu %a : tensor<1x4x6x6xf32>
  return %o : tensor<1x4x6x6xf32>
}

// -----

// Tests that a training-mode BatchNorm (normalized by statistics of the
// convolution's own output) is not folded: the call keeps a scale of ones
// and a shift of zeros, and the normalization stays as kiln ops on its
// result.
// CHECK-LABEL: func.func @negative_training_batchnorm
// CHECK-DAG: kiln.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK-DAG: kiln.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK: %[[C0:.*]] = arith.constant 0 : i64
// CHECK: call @kiln_dnnl_conv2d_f32({{.*}}, %[[C0]])
// CHECK: %[[Y:.*]] = kiln.permute
// CHECK: %[[MEAN:.*]] = kiln.mean %[[Y]]
// CHECK: kiln.sub %[[Y]], %[[MEAN]]
func.func @negative_training_batchnorm(%x: tensor<1x8x6x6xf32>, %w: tensor<4x8x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %y = kiln.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<4x8x3x3xf32> -> tensor<1x4x6x6xf32>
  %mean = kiln.mean %y {dims = array<i64: 0, 2, 3>, keepdim = true} : tensor<1x4x6x6xf32> -> tensor<1x4x1x1xf32>
  %c = kiln.sub %y, %mean : tensor<1x4x6x6xf32>, tensor<1x4x1x1xf32>
  return %c : tensor<1x4x6x6xf32>
}

// -----

// Tests that the NHWC result of one call feeds the next call as it is (the
// permute back to NCHW and the permuting copy cancel), and that a conv bias
// (an add of a [F, 1, 1] reshape of a [F] tensor) is absorbed.
// CHECK-LABEL: func.func @chained_convs_cancel_permutes
// CHECK: call @kiln_dnnl_conv2d_f32
// CHECK: %[[Y1:.*]] = bufferization.to_tensor
// CHECK-NOT: linalg.generic
// CHECK: bufferization.to_memref %[[Y1]] read_only
// CHECK: call @kiln_dnnl_conv2d_f32
// CHECK-NOT: kiln.add
// CHECK: return
func.func @chained_convs_cancel_permutes(%x: tensor<1x8x6x6xf32>, %w1: tensor<8x8x3x3xf32>, %w2: tensor<4x8x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x6x6xf32> {
  %y1 = kiln.conv2d %x, %w1 {padding = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32> -> tensor<1x8x6x6xf32>
  %y2 = kiln.conv2d %y1, %w2 {padding = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<4x8x3x3xf32> -> tensor<1x4x6x6xf32>
  %br = kiln.reshape %b : tensor<4xf32> -> tensor<4x1x1xf32>
  %a = kiln.add %y2, %br : tensor<1x4x6x6xf32>, tensor<4x1x1xf32>
  return %a : tensor<1x4x6x6xf32>
}

// -----

// Tests that a depthwise convolution (groups == C) is a oneDNN call too,
// with its groups as the ninth i64 operand.
// CHECK-LABEL: func.func @depthwise
// CHECK: %[[C8:.*]] = arith.constant 8 : i64
// CHECK: call @kiln_dnnl_conv2d_f32({{.*}}, %[[C8]], %{{.*}})
// CHECK-NOT: kiln.conv2d
func.func @depthwise(%x: tensor<1x8x6x6xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<1x8x4x4xf32> {
  %y = kiln.conv2d %x, %w {groups = 8 : i64} : tensor<1x8x6x6xf32>, tensor<8x1x3x3xf32> -> tensor<1x8x4x4xf32>
  return %y : tensor<1x8x4x4xf32>
}

// -----

// Tests that the permutes back to NCHW of two calls sink below the
// elementwise ops that combine them (a residual add and a ReLU, with a
// scalar operand allowed): the ops run on the NHWC values, one permute
// follows them, and a 1x1 convolution reading the result takes the NHWC
// value without a copy.
// CHECK-LABEL: func.func @residual_stays_nhwc
// CHECK: %[[A:.*]] = bufferization.to_tensor
// CHECK: call @kiln_dnnl_conv2d_f32
// CHECK: %[[B:.*]] = bufferization.to_tensor
// CHECK: %[[S:.*]] = kiln.add %[[A]], %[[B]] : tensor<1x6x6x8xf32>, tensor<1x6x6x8xf32>
// CHECK: %[[M:.*]] = kiln.maximum %[[S]], %{{.*}} : tensor<1x6x6x8xf32>, tensor<f32>
// CHECK-NOT: linalg.generic
// CHECK: bufferization.to_memref %[[M]] read_only
// CHECK: call @kiln_dnnl_conv2d_f32
// CHECK: return
func.func @residual_stays_nhwc(%x: tensor<1x8x6x6xf32>, %w1: tensor<8x8x3x3xf32>, %w2: tensor<8x8x3x3xf32>, %w3: tensor<4x8x1x1xf32>) -> tensor<1x4x6x6xf32> {
  %a = kiln.conv2d %x, %w1 {padding = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32> -> tensor<1x8x6x6xf32>
  %b = kiln.conv2d %x, %w2 {padding = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32> -> tensor<1x8x6x6xf32>
  %s = kiln.add %a, %b : tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %m = kiln.maximum %s, %zero : tensor<1x8x6x6xf32>, tensor<f32>
  %y = kiln.conv2d %m, %w3 : tensor<1x8x6x6xf32>, tensor<4x8x1x1xf32> -> tensor<1x4x6x6xf32>
  return %y : tensor<1x4x6x6xf32>
}

// -----

// Tests that non-f32 and dynamic convolutions are left alone (and no
// callee is declared).
// CHECK-NOT: kiln_dnnl_conv2d_f32
// CHECK-LABEL: func.func @negative_f64
// CHECK: kiln.conv2d
// CHECK-LABEL: func.func @negative_dynamic
// CHECK: kiln.conv2d
// CHECK-NOT: kiln_dnnl_conv2d_f32
func.func @negative_f64(%x: tensor<1x8x6x6xf64>, %w: tensor<4x8x3x3xf64>) -> tensor<1x4x4x4xf64> {
  %y = kiln.conv2d %x, %w : tensor<1x8x6x6xf64>, tensor<4x8x3x3xf64> -> tensor<1x4x4x4xf64>
  return %y : tensor<1x4x4x4xf64>
}
func.func @negative_dynamic(%x: tensor<?x8x6x6xf32>, %w: tensor<4x8x3x3xf32>) -> tensor<?x4x4x4xf32> {
  %y = kiln.conv2d %x, %w : tensor<?x8x6x6xf32>, tensor<4x8x3x3xf32> -> tensor<?x4x4x4xf32>
  return %y : tensor<?x4x4x4xf32>
}
