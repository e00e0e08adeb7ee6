// RUN: kiln-opt %s -split-input-file -kiln-layout | FileCheck %s

// kiln-layout (transforms/Layout.cpp) sinks the NHWC → NCHW permute below
// elementwise ops, cancels it against permutes back to NHWC and runs the
// convolutions between channels-last values on NHWC (LayoutConvs.cpp).
// Numerics and whole models: test/python/test_layout.py.

// Tests ConvNeXt's block tail: the permute back to NCHW sinks below the
// [C, 1, 1] layer scale (permuted to [1, 1, 1, C]) and the residual add
// whose other operand is the same permute (of the stream the block got
// NCHW and permuted to NHWC); one permute to NCHW is left, in front of the
// returned value (outputs keep NCHW).
// CHECK-LABEL: func.func @block_tail
// CHECK-SAME: (%[[H:.*]]: tensor<1x7x7x8xf32>, %[[XIN:.*]]: tensor<1x8x7x7xf32>, %[[S:.*]]: tensor<8x1x1xf32>)
// CHECK: %[[X:.*]] = kiln.permute %[[XIN]] {dims = array<i64: 0, 2, 3, 1>}
// CHECK: %[[S4:.*]] = kiln.reshape %[[S]] : tensor<8x1x1xf32> -> tensor<1x8x1x1xf32>
// CHECK: %[[SP:.*]] = kiln.permute %[[S4]] {dims = array<i64: 0, 2, 3, 1>} : tensor<1x8x1x1xf32> -> tensor<1x1x1x8xf32>
// CHECK: %[[M:.*]] = kiln.mul %[[SP]], %[[H]] : tensor<1x1x1x8xf32>, tensor<1x7x7x8xf32>
// CHECK: %[[R:.*]] = kiln.add %[[M]], %[[X]] : tensor<1x7x7x8xf32>, tensor<1x7x7x8xf32>
// CHECK: %[[P:.*]] = kiln.permute %[[R]] {dims = array<i64: 0, 3, 1, 2>}
// CHECK-NOT: kiln.permute
// CHECK: return %[[P]]
func.func @block_tail(%h: tensor<1x7x7x8xf32>, %xin: tensor<1x8x7x7xf32>, %s: tensor<8x1x1xf32>) -> tensor<1x8x7x7xf32> {
  %x = kiln.permute %xin {dims = array<i64: 0, 2, 3, 1>} : tensor<1x8x7x7xf32> -> tensor<1x7x7x8xf32>
  %p = kiln.permute %h {dims = array<i64: 0, 3, 1, 2>} : tensor<1x7x7x8xf32> -> tensor<1x8x7x7xf32>
  %q = kiln.permute %x {dims = array<i64: 0, 3, 1, 2>} : tensor<1x7x7x8xf32> -> tensor<1x8x7x7xf32>
  %m = kiln.mul %s, %p : tensor<8x1x1xf32>, tensor<1x8x7x7xf32>
  %r = kiln.add %m, %q : tensor<1x8x7x7xf32>, tensor<1x8x7x7xf32>
  return %r : tensor<1x8x7x7xf32>
}

// -----

// Tests (negative) that an add whose other operand is a full NCHW value
// (a graph input) keeps the permute in front of it: transposing that
// operand instead would cost the same copy.
// CHECK-LABEL: func.func @full_nchw_operand
// CHECK: %[[P:.*]] = kiln.permute %{{.*}} {dims = array<i64: 0, 3, 1, 2>}
// CHECK: kiln.add %[[P]], %{{.*}} : tensor<1x8x7x7xf32>, tensor<1x8x7x7xf32>
// CHECK-NOT: kiln.permute {{.*}} {dims = array<i64: 0, 3, 1, 2>}
func.func @full_nchw_operand(%h: tensor<1x7x7x8xf32>, %x: tensor<1x8x7x7xf32>) -> (tensor<1x8x7x7xf32>, tensor<1x7x7x8xf32>) {
  %p = kiln.permute %h {dims = array<i64: 0, 3, 1, 2>} : tensor<1x7x7x8xf32> -> tensor<1x8x7x7xf32>
  %r = kiln.add %p, %x : tensor<1x8x7x7xf32>, tensor<1x8x7x7xf32>
  %t = kiln.permute %x {dims = array<i64: 0, 2, 3, 1>} : tensor<1x8x7x7xf32> -> tensor<1x7x7x8xf32>
  return %r, %t : tensor<1x8x7x7xf32>, tensor<1x7x7x8xf32>
}

// -----

// Tests (negative) that a permute whose only use is the function's result
// stays: the caller gets eager's NCHW layout.
// CHECK-LABEL: func.func @returned
// CHECK: %[[P:.*]] = kiln.permute %{{.*}} {dims = array<i64: 0, 3, 1, 2>}
// CHECK: return %[[P]]
func.func @returned(%h: tensor<1x7x7x8xf32>, %x: tensor<1x8x7x7xf32>) -> (tensor<1x8x7x7xf32>, tensor<1x7x7x8xf32>) {
  %p = kiln.permute %h {dims = array<i64: 0, 3, 1, 2>} : tensor<1x7x7x8xf32> -> tensor<1x8x7x7xf32>
  %t = kiln.permute %x {dims = array<i64: 0, 2, 3, 1>} : tensor<1x8x7x7xf32> -> tensor<1x7x7x8xf32>
  return %p, %t : tensor<1x8x7x7xf32>, tensor<1x7x7x8xf32>
}

// -----

// Tests that a depthwise 3x3 conv between a channels-last input and a
// channels-last consumer (bias add, then the permute to NHWC) runs on NHWC:
// zero padding of H and W, 9 strided [N, OH, OW, C] taps times [C] weight
// rows, the bias permuted to [1, 1, 1, C], and no permute left.
// CHECK-LABEL: func.func @depthwise_between_nhwc
// CHECK-SAME: (%[[X:.*]]: tensor<1x6x5x4xf32>
// CHECK-NOT: kiln.conv2d
// CHECK: %[[PH:.*]] = kiln.concat %{{.*}}, %[[X]], %{{.*}} {dim = 1 : i64}
// CHECK: %[[PW:.*]] = kiln.concat %{{.*}}, %[[PH]], %{{.*}} {dim = 2 : i64} {{.*}} -> tensor<1x8x7x4xf32>
// CHECK: kiln.slice %[[PW]] {end = array<i64: 1, 6, 5, 4>, start = array<i64: 0, 0, 0, 0>, step = array<i64: 1, 1, 1, 1>}
// CHECK-COUNT-8: kiln.slice %[[PW]]
// CHECK: kiln.add %{{.*}} : tensor<1x6x5x4xf32>, tensor<1x1x1x4xf32>
// CHECK-NOT: kiln.permute %{{.*}} {dims = array<i64: 0, 3, 1, 2>}
// CHECK-NOT: kiln.conv2d
func.func @depthwise_between_nhwc(%x: tensor<1x6x5x4xf32>, %w: tensor<4x1x3x3xf32>, %b: tensor<4x1x1xf32>) -> tensor<1x6x5x4xf32> {
  %p = kiln.permute %x {dims = array<i64: 0, 3, 1, 2>} : tensor<1x6x5x4xf32> -> tensor<1x4x6x5xf32>
  %c = kiln.conv2d %p, %w {groups = 4 : i64, padding = array<i64: 1, 1, 1, 1>} : tensor<1x4x6x5xf32>, tensor<4x1x3x3xf32> -> tensor<1x4x6x5xf32>
  %a = kiln.add %c, %b : tensor<1x4x6x5xf32>, tensor<4x1x1xf32>
  %q = kiln.permute %a {dims = array<i64: 0, 2, 3, 1>} : tensor<1x4x6x5xf32> -> tensor<1x6x5x4xf32>
  return %q : tensor<1x6x5x4xf32>
}

// -----

// Tests a 2x2 stride-2 conv (windows tile the input: ConvNeXt's
// downsampling) after a channels-last value: one permuting copy into
// [N*OH*OW, C*2*2] columns, a matmul with the transposed [F, C*4] weight,
// the [N, OH, OW, F] product permuted back only for the returned value.
// CHECK-LABEL: func.func @patchify_after_nhwc
// CHECK-NOT: kiln.conv2d
// CHECK: kiln.reshape %{{.*}} : tensor<1x4x4x3xf32> -> tensor<1x2x2x2x2x3xf32>
// CHECK: kiln.permute %{{.*}} {dims = array<i64: 0, 1, 3, 5, 2, 4>}
// CHECK: %[[M:.*]] = kiln.matmul %{{.*}}, %{{.*}} : tensor<4x12xf32>, tensor<12x5xf32>
// CHECK: %[[Y:.*]] = kiln.reshape %[[M]] : tensor<4x5xf32> -> tensor<1x2x2x5xf32>
// CHECK: kiln.permute %[[Y]] {dims = array<i64: 0, 3, 1, 2>}
func.func @patchify_after_nhwc(%x: tensor<1x4x4x3xf32>, %w: tensor<5x3x2x2xf32>) -> tensor<1x5x2x2xf32> {
  // (unused: the function goes channels-last, which the pass requires)
  %g = kiln.permute %x {dims = array<i64: 0, 2, 3, 1>} : tensor<1x4x4x3xf32> -> tensor<1x4x3x4xf32>
  %p = kiln.permute %x {dims = array<i64: 0, 3, 1, 2>} : tensor<1x4x4x3xf32> -> tensor<1x3x4x4xf32>
  %c = kiln.conv2d %p, %w {stride = array<i64: 2, 2>} : tensor<1x3x4x4xf32>, tensor<5x3x2x2xf32> -> tensor<1x5x2x2xf32>
  return %c : tensor<1x5x2x2xf32>
}

// -----

// Tests (negative) that a 3x3 conv that is neither depthwise nor tiling
// stays NCHW, and so does the permute in front of it (it cannot cancel).
// CHECK-LABEL: func.func @dense_conv_stays
// CHECK: %[[P:.*]] = kiln.permute %{{.*}} {dims = array<i64: 0, 3, 1, 2>}
// CHECK: kiln.conv2d %[[P]]
func.func @dense_conv_stays(%x: tensor<1x6x5x4xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x6x5xf32> {
  // (unused: the function goes channels-last, which the pass requires)
  %g = kiln.permute %x {dims = array<i64: 0, 2, 3, 1>} : tensor<1x6x5x4xf32> -> tensor<1x5x4x6xf32>
  %p = kiln.permute %x {dims = array<i64: 0, 3, 1, 2>} : tensor<1x6x5x4xf32> -> tensor<1x4x6x5xf32>
  %c = kiln.conv2d %p, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<1x4x6x5xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x6x5xf32>
  return %c : tensor<1x4x6x5xf32>
}

// -----

// Tests (negative) that a network that never permutes to NHWC itself
// (MobileNet: depthwise conv, ReLU) is left to kiln-decompose.
// CHECK-LABEL: func.func @depthwise_in_nchw
// CHECK-NOT: kiln.permute
// CHECK: kiln.conv2d
// CHECK-NOT: kiln.permute
func.func @depthwise_in_nchw(%x: tensor<1x4x6x5xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x6x5xf32> {
  %c = kiln.conv2d %x, %w {groups = 4 : i64, padding = array<i64: 1, 1, 1, 1>} : tensor<1x4x6x5xf32>, tensor<4x1x3x3xf32> -> tensor<1x4x6x5xf32>
  %r = kiln.relu %c : tensor<1x4x6x5xf32>
  return %r : tensor<1x4x6x5xf32>
}

// -----

// Tests (negative) that a 1x1 conv after a channels-last value stays NCHW
// (after resnet50's oneDNN convolutions that only moved the transposes to
// its 3x3 convolutions).
// CHECK-LABEL: func.func @pointwise_stays
// CHECK: %[[P:.*]] = kiln.permute %{{.*}} {dims = array<i64: 0, 3, 1, 2>}
// CHECK: kiln.conv2d %[[P]]
func.func @pointwise_stays(%x: tensor<1x6x5x4xf32>, %w: tensor<8x4x1x1xf32>) -> tensor<1x8x6x5xf32> {
  // (unused: the function goes channels-last, which the pass requires)
  %g = kiln.permute %x {dims = array<i64: 0, 2, 3, 1>} : tensor<1x6x5x4xf32> -> tensor<1x5x4x6xf32>
  %p = kiln.permute %x {dims = array<i64: 0, 3, 1, 2>} : tensor<1x6x5x4xf32> -> tensor<1x4x6x5xf32>
  %c = kiln.conv2d %p, %w : tensor<1x4x6x5xf32>, tensor<8x4x1x1xf32> -> tensor<1x8x6x5xf32>
  return %c : tensor<1x8x6x5xf32>
}
