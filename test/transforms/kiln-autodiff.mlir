// RUN: kiln-opt %s -split-input-file -kiln-autodiff -verify-diagnostics | FileCheck %s

// kiln-autodiff adds @<f>_fwd (the results, then the values the backward
// reads) and @<f>_bwd (result gradients, saved values → input gradients)
// after each function with kiln.requires_grad arguments
// (transforms/Autodiff.cpp, rules in transforms/autodiff/).

// Tests that tanh's gradient reads its result (a saved result, no extra
// forward output): g * (1 - y * y).
// CHECK-LABEL: func.func @tanh_fwd
// CHECK: return %{{.*}} : tensor<4xf32>
// CHECK-LABEL: func.func @tanh_bwd
// CHECK-SAME: (%[[G:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK-SAME: kiln.grad_inputs = array<i64: 0>
// CHECK-SAME: kiln.num_saved = 0
// CHECK-SAME: kiln.saved_results = array<i64: 0>
// CHECK-DAG: %[[YY:.*]] = kiln.mul %[[Y]], %[[Y]]
// CHECK-DAG: %[[ONE:.*]] = kiln.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[D:.*]] = kiln.sub %[[ONE]], %[[YY]]
// CHECK: %[[R:.*]] = kiln.mul %[[G]], %[[D]]
// CHECK: return %[[R]]
func.func @tanh(%x: tensor<4xf32> {kiln.requires_grad}) -> tensor<4xf32> {
  %0 = kiln.tanh %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that a broadcast operand's gradient is summed over the broadcast
// dim and reshaped to the operand's shape; add needs no saved value.
// CHECK-LABEL: func.func @add_broadcast_bwd
// CHECK-SAME: (%[[G:.*]]: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>)
// CHECK: %[[S:.*]] = kiln.sum %[[G]] {dims = array<i64: 0>, keepdim = true} : tensor<4x8xf32> -> tensor<1x8xf32>
// CHECK: %[[B:.*]] = kiln.reshape %[[S]] : tensor<1x8xf32> -> tensor<8xf32>
// CHECK: return %[[G]], %[[B]]
func.func @add_broadcast(%x: tensor<4x8xf32> {kiln.requires_grad}, %b: tensor<8xf32> {kiln.requires_grad}) -> tensor<4x8xf32> {
  %0 = kiln.add %x, %b : tensor<4x8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Tests that F.linear's weight gradient on a 3-d input is one GEMM over the
// flattened rows (the input is saved; it needs no gradient itself), written
// as (g^T @ x)^T so that the transpose's inverse cancels it (a later
// canonicalize folds the two permutes: dW = g^T @ x).
// CHECK-LABEL: func.func @linear_bwd
// CHECK-SAME: (%[[G:.*]]: tensor<2x3x5xf32>, %[[X:.*]]: tensor<2x3x4xf32>) -> tensor<5x4xf32>
// CHECK-SAME: kiln.grad_inputs = array<i64: 1>
// CHECK-SAME: kiln.saved_inputs = array<i64: 0>
// CHECK: %[[G2:.*]] = kiln.reshape %[[G]] : tensor<2x3x5xf32> -> tensor<6x5xf32>
// CHECK: %[[GT:.*]] = kiln.permute %[[G2]] {dims = array<i64: 1, 0>} : tensor<6x5xf32> -> tensor<5x6xf32>
// CHECK: %[[X2:.*]] = kiln.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK: %[[M:.*]] = kiln.matmul %[[GT]], %[[X2]] : tensor<5x6xf32>, tensor<6x4xf32>
// CHECK: %[[T:.*]] = kiln.permute %[[M]] {dims = array<i64: 1, 0>} : tensor<5x4xf32> -> tensor<4x5xf32>
// CHECK: %[[W:.*]] = kiln.permute %[[T]] {dims = array<i64: 1, 0>} : tensor<4x5xf32> -> tensor<5x4xf32>
// CHECK: return %[[W]]
func.func @linear(%x: tensor<2x3x4xf32>, %w: tensor<5x4xf32> {kiln.requires_grad}) -> tensor<2x3x5xf32> {
  %t = kiln.permute %w {dims = array<i64: 1, 0>} : tensor<5x4xf32> -> tensor<4x5xf32>
  %0 = kiln.matmul %x, %t : tensor<2x3x4xf32>, tensor<4x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// Tests that data movement the backward reads (the transposed weight of a
// linear whose input needs a gradient) is recomputed from the saved weight,
// not returned by the forward.
// CHECK-LABEL: func.func @linear_input_fwd
// CHECK: return %{{.*}} : tensor<3x5xf32>
// CHECK-LABEL: func.func @linear_input_bwd
// CHECK-SAME: (%[[G:.*]]: tensor<3x5xf32>, %[[W:.*]]: tensor<5x4xf32>) -> tensor<3x4xf32>
// CHECK-SAME: kiln.num_saved = 0
// CHECK: %[[WT:.*]] = kiln.permute %[[W]] {dims = array<i64: 1, 0>} : tensor<5x4xf32> -> tensor<4x5xf32>
// CHECK: %[[WTT:.*]] = kiln.permute %[[WT]] {dims = array<i64: 1, 0>} : tensor<4x5xf32> -> tensor<5x4xf32>
// CHECK: %[[GX:.*]] = kiln.matmul %[[G]], %[[WTT]] : tensor<3x5xf32>, tensor<5x4xf32>
// CHECK: return %[[GX]]
func.func @linear_input(%x: tensor<3x4xf32> {kiln.requires_grad}, %w: tensor<5x4xf32>) -> tensor<3x5xf32> {
  %t = kiln.permute %w {dims = array<i64: 1, 0>} : tensor<5x4xf32> -> tensor<4x5xf32>
  %0 = kiln.matmul %x, %t : tensor<3x4xf32>, tensor<4x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// Tests that a pointwise intermediate the backward reads (exp's result) is
// recomputed from the inputs rather than saved (min-cut: the inputs cost
// nothing to keep), and that x's two uses accumulate.
// CHECK-LABEL: func.func @mul_saves_operands_fwd
// CHECK: %[[R:.*]] = kiln.add
// CHECK: return %[[R]] : tensor<4xf32>
// CHECK-LABEL: func.func @mul_saves_operands_bwd
// CHECK-SAME: (%[[G:.*]]: tensor<4xf32>, %[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>)
// CHECK-SAME: kiln.num_saved = 0
// CHECK-SAME: kiln.saved_inputs = array<i64: 0, 1>
// CHECK: %[[M:.*]] = kiln.mul %[[X]], %[[Y]]
// CHECK: %[[E:.*]] = kiln.exp %[[M]]
// CHECK: %[[GE:.*]] = kiln.mul %[[G]], %[[E]]
// CHECK: %[[GX:.*]] = kiln.mul %[[GE]], %[[Y]]
// CHECK: %[[GY:.*]] = kiln.mul %[[GE]], %[[X]]
// CHECK: %[[SUM:.*]] = kiln.add %[[G]], %[[GX]]
// CHECK: return %[[SUM]], %[[GY]]
func.func @mul_saves_operands(%x: tensor<4xf32> {kiln.requires_grad}, %y: tensor<4xf32> {kiln.requires_grad}) -> tensor<4xf32> {
  %0 = kiln.mul %x, %y : tensor<4xf32>, tensor<4xf32>
  %1 = kiln.exp %0 : tensor<4xf32>
  %2 = kiln.add %1, %x : tensor<4xf32>, tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// Tests softmax's rule (y * (g - sum(g * y))) and relu's (the gradient
// where the relu result is > 0): softmax's result is saved (a result costs
// nothing), relu's recomputed from the input just before its first use
// (not at the backward's start: the backward reaches the first layer last).
// CHECK-LABEL: func.func @relu_softmax_bwd
// CHECK-SAME: (%[[G:.*]]: tensor<2x3xf32>, %[[X:.*]]: tensor<2x3xf32>, %[[Y:.*]]: tensor<2x3xf32>)
// CHECK: %[[GY:.*]] = kiln.mul %[[G]], %[[Y]]
// CHECK: %[[DOT:.*]] = kiln.sum %[[GY]] {dims = array<i64: 1>, keepdim = true}
// CHECK: %[[D:.*]] = kiln.sub %[[G]], %[[DOT]]
// CHECK: %[[GS:.*]] = kiln.mul %[[Y]], %[[D]]
// CHECK: %[[R:.*]] = kiln.relu %[[X]]
// CHECK: %[[POS:.*]] = kiln.gt %[[R]], %{{.*}} : tensor<2x3xf32>, tensor<f32>
// CHECK: %[[GR:.*]] = kiln.select %[[POS]], %[[GS]], %{{.*}}
// CHECK: return %[[GR]]
func.func @relu_softmax(%x: tensor<2x3xf32> {kiln.requires_grad}) -> tensor<2x3xf32> {
  %0 = kiln.relu %x : tensor<2x3xf32>
  %1 = kiln.softmax %0 {dim = 1 : i64} : tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// Tests layer_norm's rule: statistics recomputed from the saved input
// (nothing extra saved), weight and bias gradients summed over the rows.
// CHECK-LABEL: func.func @layer_norm_bwd
// CHECK-SAME: (%[[G:.*]]: tensor<2x8xf32>, %[[X:.*]]: tensor<2x8xf32>, %[[W:.*]]: tensor<8xf32>) -> (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-SAME: kiln.num_saved = 0
// CHECK: kiln.mean %[[X]] {dims = array<i64: 1>, keepdim = true}
// CHECK: %[[RSTD:.*]] = kiln.rsqrt
// CHECK: %[[XHAT:.*]] = kiln.mul %{{.*}}, %[[RSTD]]
// CHECK: %[[GW:.*]] = kiln.mul %[[G]], %[[XHAT]]
// CHECK: %[[GH:.*]] = kiln.mul %[[G]], %[[W]]
// CHECK: %[[GX:.*]] = kiln.mul %[[RSTD]], %{{.*}} : tensor<2x1xf32>, tensor<2x8xf32>
// CHECK: kiln.sum %[[GW]] {dims = array<i64: 0>, keepdim = true}
// CHECK: kiln.sum %[[G]] {dims = array<i64: 0>, keepdim = true}
// CHECK: return %[[GX]]
func.func @layer_norm(%x: tensor<2x8xf32> {kiln.requires_grad}, %w: tensor<8xf32> {kiln.requires_grad}, %b: tensor<8xf32> {kiln.requires_grad}) -> tensor<2x8xf32> {
  %0 = kiln.layer_norm %x weight %w bias %b {num_dims = 1 : i64, eps = 1.0e-05 : f64} : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Tests embedding's rule (a one-hot matmul) and that integer indices get no
// gradient even when marked.
// CHECK-LABEL: func.func @embedding_bwd
// CHECK-SAME: (%[[G:.*]]: tensor<3x2xf32>, %[[I:.*]]: tensor<3xi64>) -> tensor<5x2xf32>
// CHECK-SAME: kiln.grad_inputs = array<i64: 0>
// CHECK-DAG: %[[IOTA:.*]] = kiln.constant dense<{{\[\[}}0, 1, 2, 3, 4]]> : tensor<1x5xi64>
// CHECK-DAG: %[[COL:.*]] = kiln.reshape %[[I]] : tensor<3xi64> -> tensor<3x1xi64>
// CHECK: %[[HIT:.*]] = kiln.eq %[[COL]], %[[IOTA]]
// CHECK: %[[ONEHOT:.*]] = kiln.cast %[[HIT]] : tensor<3x5xi1> -> tensor<3x5xf32>
// CHECK: %[[T:.*]] = kiln.permute %[[ONEHOT]]
// CHECK: %[[GW:.*]] = kiln.matmul %[[T]], %[[G]] : tensor<5x3xf32>, tensor<3x2xf32>
// CHECK: return %[[GW]]
func.func @embedding(%w: tensor<5x2xf32> {kiln.requires_grad}, %i: tensor<3xi64> {kiln.requires_grad}) -> tensor<3x2xf32> {
  %0 = kiln.embedding %w, %i : tensor<5x2xf32>, tensor<3xi64> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// Tests that padding_idx's row gets no gradient: its iota entry is the
// lowest integer, which no index matches.
// CHECK-LABEL: func.func @embedding_padding_bwd
// CHECK: kiln.constant dense<{{\[\[}}0, -9223372036854775808, 2]]> : tensor<1x3xi64>
func.func @embedding_padding(%w: tensor<3x2xf32> {kiln.requires_grad}, %i: tensor<4xi64>) -> tensor<4x2xf32> {
  %0 = kiln.embedding %w, %i {kiln.padding_idx = 1 : i64} : tensor<3x2xf32>, tensor<4xi64> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// Tests that scale_grad_by_freq (and sparse) are refused with a reason.
// CHECK-LABEL: func.func @embedding_freq
// CHECK-NOT: func.func @embedding_freq_bwd
func.func @embedding_freq(%w: tensor<3x2xf32> {kiln.requires_grad}, %i: tensor<4xi64>) -> tensor<4x2xf32> {
  // expected-remark @+1 {{not differentiable: the gradient of 'kiln.embedding' with scale_grad_by_freq is not implemented}}
  %0 = kiln.embedding %w, %i {kiln.scale_grad_by_freq} : tensor<3x2xf32>, tensor<4xi64> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// Tests select's rule (the gradient where the condition holds) and a
// cast's gradient cast back to the operand's type.
// CHECK-LABEL: func.func @select_cast_bwd
// CHECK-SAME: (%[[G:.*]]: tensor<4xf32>, %[[C:.*]]: tensor<4xi1>) -> tensor<4xf16>
// CHECK: %[[S:.*]] = kiln.select %[[C]], %[[G]], %{{.*}} : tensor<4xi1>, tensor<4xf32>, tensor<f32>
// CHECK: %[[H:.*]] = kiln.cast %[[S]] : tensor<4xf32> -> tensor<4xf16>
// CHECK: return %[[H]]
func.func @select_cast(%x: tensor<4xf16> {kiln.requires_grad}, %c: tensor<4xi1>) -> tensor<4xf32> {
  %0 = kiln.cast %x : tensor<4xf16> -> tensor<4xf32>
  %z = kiln.constant dense<0.0> : tensor<f32>
  %1 = kiln.select %c, %0, %z : tensor<4xi1>, tensor<4xf32>, tensor<f32>
  return %1 : tensor<4xf32>
}

// -----

// Tests a unit-step slice's rule (zeros concatenated around the gradient,
// dim by dim) and concat's (one slice per operand).
// CHECK-LABEL: func.func @slice_concat_bwd
// CHECK-SAME: (%[[G:.*]]: tensor<2x5xf32>) -> (tensor<4x6xf32>, tensor<4x2xf32>)
// CHECK: %[[R:.*]] = kiln.concat %{{.*}}, %[[G]], %{{.*}} {dim = 0 : i64} : tensor<1x5xf32>, tensor<2x5xf32>, tensor<1x5xf32> -> tensor<4x5xf32>
// CHECK: %[[F:.*]] = kiln.concat %{{.*}}, %[[R]], %{{.*}} {dim = 1 : i64} : tensor<4x2xf32>, tensor<4x5xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
// CHECK: %[[A:.*]] = kiln.slice %[[F]] {end = array<i64: 4, 6>, start = array<i64: 0, 0>
// CHECK: %[[B:.*]] = kiln.slice %[[F]] {end = array<i64: 4, 8>, start = array<i64: 0, 6>
// CHECK: return %[[A]], %[[B]]
func.func @slice_concat(%x: tensor<4x6xf32> {kiln.requires_grad}, %y: tensor<4x2xf32> {kiln.requires_grad}) -> tensor<2x5xf32> {
  %0 = kiln.concat %x, %y {dim = 1 : i64} : tensor<4x6xf32>, tensor<4x2xf32> -> tensor<4x8xf32>
  %1 = kiln.slice %0 {start = array<i64: 1, 2>, end = array<i64: 3, 7>, step = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<2x5xf32>
  return %1 : tensor<2x5xf32>
}

// -----

// Tests that an op marked kiln.no_grad (torch.no_grad() in the frame) is a
// constant for the backward: x's gradient is g * exp(x) through the mul
// only (exp recomputed from the saved input).
// CHECK-LABEL: func.func @no_grad_stops_bwd
// CHECK-SAME: (%[[G:.*]]: tensor<4xf32>, %[[X:.*]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[E:.*]] = kiln.exp %[[X]] {kiln.no_grad}
// CHECK-NEXT: %[[R:.*]] = kiln.mul %[[G]], %[[E]]
// CHECK-NEXT: return %[[R]]
func.func @no_grad_stops(%x: tensor<4xf32> {kiln.requires_grad}) -> tensor<4xf32> {
  %0 = kiln.exp %x {kiln.no_grad} : tensor<4xf32>
  %1 = kiln.mul %0, %x : tensor<4xf32>, tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// Tests that a stop-gradient (x.detach(), .item(): an identity kiln.cast
// marked kiln.no_grad) is a constant for the backward and is not saved:
// the backward reads x itself, and x's gradient is g * x (one product, not
// two).
// CHECK-LABEL: func.func @stop_gradient_bwd
// CHECK-SAME: (%[[G:.*]]: tensor<4xf32>, %[[X:.*]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK-SAME: kiln.num_saved = 0 : i64, kiln.release_inputs = array<i64>, kiln.saved_bytes = 0 : i64, kiln.saved_inputs = array<i64: 0>
// CHECK-NEXT: %[[R:.*]] = kiln.mul %[[G]], %[[X]]
// CHECK-NEXT: return %[[R]]
func.func @stop_gradient(%x: tensor<4xf32> {kiln.requires_grad}) -> tensor<4xf32> {
  %0 = kiln.cast %x {kiln.no_grad} : tensor<4xf32> -> tensor<4xf32>
  %1 = kiln.mul %x, %0 : tensor<4xf32>, tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// Tests (negative) that the same identity cast without kiln.no_grad is
// differentiated through: both factors give x a gradient (two products
// summed).
// CHECK-LABEL: func.func @identity_cast_differentiated_bwd
// CHECK: kiln.mul
// CHECK: kiln.mul
// CHECK: kiln.add
// CHECK: return
func.func @identity_cast_differentiated(%x: tensor<4xf32> {kiln.requires_grad}) -> tensor<4xf32> {
  %0 = kiln.cast %x : tensor<4xf32> -> tensor<4xf32>
  %1 = kiln.mul %x, %0 : tensor<4xf32>, tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// Tests that an op without a rule on a gradient path builds nothing and
// names the op and the reason.
// CHECK-LABEL: func.func @negative_max
// CHECK-NOT: @negative_max_bwd
func.func @negative_max(%x: tensor<4x8xf32> {kiln.requires_grad}) -> tensor<4x1xf32> {
  // expected-remark @+1 {{not differentiable: no gradient rule for 'kiln.max'}}
  %0 = kiln.max %x {dims = array<i64: 1>, keepdim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

// Tests that a strided slice (no rule for steps > 1) builds nothing.
// CHECK-LABEL: func.func @negative_strided_slice
// CHECK-NOT: @negative_strided_slice_bwd
func.func @negative_strided_slice(%x: tensor<8xf32> {kiln.requires_grad}) -> tensor<4xf32> {
  // expected-remark @+1 {{not differentiable: the gradient of a strided or dynamic-shape 'kiln.slice' is not implemented}}
  %0 = kiln.slice %x {start = array<i64: 0>, end = array<i64: 8>, step = array<i64: 2>} : tensor<8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that an integer input marked kiln.requires_grad gets no gradient:
// with no float input to differentiate, nothing is built.
// CHECK-LABEL: func.func @negative_integer_input
// CHECK-NOT: @negative_integer_input_bwd
// expected-remark @+1 {{not differentiable: no differentiable (float, marked) input reaches a differentiable result}}
func.func @negative_integer_input(%x: tensor<4xf32>, %i: tensor<4xi64> {kiln.requires_grad}) -> tensor<4xf32> {
  %0 = kiln.cast %i : tensor<4xi64> -> tensor<4xf32>
  %1 = kiln.mul %0, %x : tensor<4xf32>, tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// Tests that a function without kiln.requires_grad arguments is left alone.
// CHECK-LABEL: func.func @negative_nothing_marked
// CHECK-NOT: @negative_nothing_marked_bwd
func.func @negative_nothing_marked(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.exp %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests conv2d's rule (stride 2, padding 1, groups 2): the input's gradient
// is a stride-1 kiln.conv2d of the result gradient spread to the stride
// (3 rows -> 7 with zeros) with the weight per group transposed and
// flipped; the weight's gradient one grouped GEMM of the result gradient
// [G, F/G, N*OH*OW] with the padded input's im2col columns. Both are
// marked for kiln-cpu-convs-to-dnnl (ir/ConvGradMarks.h): the sources g, w
// and x behind marked identity casts, the roots with the forward's
// strides, dilations, paddings, groups and kernel size.
// CHECK-LABEL: func.func @conv_grouped_strided_bwd
// CHECK: kiln.cast %arg0 {kiln.conv_grad_source = "g"}
// CHECK: kiln.concat {{.*}} -> tensor<1x4x7x7xf32>
// CHECK: kiln.cast %arg2 {kiln.conv_grad_source = "w"}
// CHECK: kiln.concat {{.*}} {dim = 2 : i64} {{.*}} -> tensor<2x2x3x3xf32>
// CHECK: kiln.conv2d {{.*}} {groups = 2 : i64, kiln.conv_grad_data = array<i64: 2, 2, 1, 1, 1, 1, 1, 1, 2, 3, 3>} : tensor<1x4x7x7xf32>, tensor<2x2x3x3xf32> -> tensor<1x2x5x5xf32>
// CHECK: kiln.cast %arg0 {kiln.conv_grad_source = "g"}
// CHECK: kiln.cast %arg1 {kiln.conv_grad_source = "x"}
// CHECK: kiln.slice {{.*}} step = array<i64: 1, 1, 2, 2>
// CHECK: kiln.matmul {{.*}} {kiln.conv_grad_weights = array<i64: 2, 2, 1, 1, 1, 1, 1, 1, 2, 3, 3>} : tensor<2x2x9xf32>, tensor<2x9x9xf32>
// CHECK: return {{.*}} : tensor<1x2x5x5xf32>, tensor<4x1x3x3xf32>
func.func @conv_grouped_strided(%x: tensor<1x2x5x5xf32> {kiln.requires_grad}, %w: tensor<4x1x3x3xf32> {kiln.requires_grad}) -> tensor<1x4x3x3xf32> {
  %0 = kiln.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64} : tensor<1x2x5x5xf32>, tensor<4x1x3x3xf32> -> tensor<1x4x3x3xf32>
  return %0 : tensor<1x4x3x3xf32>
}

// -----

// Tests conv2d's rule for a patch conv (stride == kernel 4x4, groups 2, a
// padded top row and bottom rows no window reads): no per-tap slices; the
// input's gradient is one grouped GEMM of the result gradient with the
// weight, permuted back into place, the padding row cut off and the unread
// rows zero-filled; the weight's columns are the input padded, cut to the
// 8x8 read cells and permuted whole.
// CHECK-LABEL: func.func @conv_patch_bwd
// CHECK-NOT: kiln.conv2d
// CHECK-NOT: kiln.conv_grad
// CHECK: kiln.matmul {{.*}} : tensor<2x8x3xf32>, tensor<2x3x32xf32>
// CHECK: kiln.permute {{.*}} {dims = array<i64: 1, 0, 4, 2, 5, 3, 6>}
// CHECK: kiln.slice {{.*}} start = array<i64: 0, 0, 1, 0>
// CHECK: kiln.concat {{.*}} {dim = 2 : i64} : tensor<2x4x7x8xf32>, tensor<2x4x2x8xf32> -> tensor<2x4x9x8xf32>
// CHECK: kiln.permute {{.*}} {dims = array<i64: 1, 0, 3, 5, 2, 4, 6>}
// CHECK-NOT: kiln.slice
// CHECK: kiln.matmul {{.*}} : tensor<2x3x8xf32>, tensor<2x8x32xf32>
// CHECK: return {{.*}} : tensor<2x4x9x8xf32>, tensor<6x2x4x4xf32>
func.func @conv_patch(%x: tensor<2x4x9x8xf32> {kiln.requires_grad}, %w: tensor<6x2x4x4xf32> {kiln.requires_grad}) -> tensor<2x6x2x2xf32> {
  %0 = kiln.conv2d %x, %w {stride = array<i64: 4, 4>, padding = array<i64: 1, 0, 0, 0>, groups = 2 : i64} : tensor<2x4x9x8xf32>, tensor<6x2x4x4xf32> -> tensor<2x6x2x2xf32>
  return %0 : tensor<2x6x2x2xf32>
}

// -----

// Tests (negative) that a conv whose stride equals its kernel only with
// dilation (windows overlap gaps) keeps the per-tap im2col slices.
// CHECK-LABEL: func.func @negative_conv_patch_dilated_bwd
// CHECK-COUNT-4: kiln.slice {{.*}} step = array<i64: 1, 1, 2, 2>
func.func @negative_conv_patch_dilated(%x: tensor<1x1x6x6xf32>, %w: tensor<1x1x2x2xf32> {kiln.requires_grad}) -> tensor<1x1x2x2xf32> {
  %0 = kiln.conv2d %x, %w {stride = array<i64: 2, 2>, dilation = array<i64: 2, 2>} : tensor<1x1x6x6xf32>, tensor<1x1x2x2xf32> -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

// Tests max_pool2d's rule: each tap compared with the saved result, the
// winning tap's index found once per window by selects from the last tap
// to the first (the first tap's outermost), so a tie gives one gradient as
// eager's first-maximum index; each tap's gradient is where it won.
// CHECK-LABEL: func.func @max_pool_bwd
// CHECK-SAME: kiln.saved_inputs = array<i64: 0>, kiln.saved_results = array<i64: 0>
// CHECK: %[[T0:.*]] = kiln.eq %{{.*}}, %arg2 : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>
// CHECK-COUNT-3: kiln.eq %{{.*}}, %arg2 : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>
// CHECK-COUNT-3: kiln.select
// CHECK: %[[W:.*]] = kiln.select %[[T0]], %{{.*}}, %{{.*}} : tensor<1x1x2x2xi1>, tensor<f32>, tensor<1x1x2x2xf32>
// CHECK-COUNT-4: kiln.eq %[[W]], %{{.*}} : tensor<1x1x2x2xf32>, tensor<f32>
func.func @max_pool(%x: tensor<1x1x4x4xf32> {kiln.requires_grad}) -> tensor<1x1x2x2xf32> {
  %0 = kiln.max_pool2d %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : tensor<1x1x4x4xf32> -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

// Tests max_pool2d's rule with an overlapping strided window (3x3, stride
// 2, padding 1, resnet's stem pool): the taps of each of the 2x2 phases of
// the stride are summed at the output's resolution (5x5 cells of the 10x10
// padded input's sub-lattice; each tap's part a shifted 5x5 slice of the
// winners and the gradient padded once to 6x6), the four phases interleaved by two
// concats over new unit dims and one reshape, then cut to the input: no
// per-tap tensor of the input's size.
// CHECK-LABEL: func.func @max_pool_strided_bwd
// CHECK-COUNT-9: kiln.eq {{.*}} : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
// CHECK-NOT: tensor<1x2x10x10xf32>
// CHECK-COUNT-2: kiln.concat {{.*}} {dim = 5 : i64} : tensor<1x2x5x1x5x1xf32>, tensor<1x2x5x1x5x1xf32> -> tensor<1x2x5x1x5x2xf32>
// CHECK: kiln.concat {{.*}} {dim = 3 : i64} : tensor<1x2x5x1x5x2xf32>, tensor<1x2x5x1x5x2xf32> -> tensor<1x2x5x2x5x2xf32>
// CHECK: kiln.reshape {{.*}} -> tensor<1x2x10x10xf32>
// CHECK: kiln.slice {{.*}} -> tensor<1x2x8x8xf32>
// CHECK-NEXT: return
func.func @max_pool_strided(%x: tensor<1x2x8x8xf32> {kiln.requires_grad}) -> tensor<1x2x4x4xf32> {
  %0 = kiln.max_pool2d %x {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<1x2x8x8xf32> -> tensor<1x2x4x4xf32>
  return %0 : tensor<1x2x4x4xf32>
}

// -----

// Tests avg_pool2d's rule: the gradient scaled by the constant inverse
// divisors, then placed at each of the 4 taps and summed (stride 1: one
// phase, the taps shifted at full size); nothing saved.
// CHECK-LABEL: func.func @avg_pool_bwd
// CHECK-SAME: kiln.saved_inputs = array<i64>, kiln.saved_results = array<i64>
// CHECK: kiln.constant dense<2.500000e-01> : tensor<2x2xf32>
// CHECK-COUNT-3: kiln.add
// CHECK-NOT: kiln.add
// CHECK: return {{.*}} : tensor<1x1x3x3xf32>
func.func @avg_pool(%x: tensor<1x1x3x3xf32> {kiln.requires_grad}) -> tensor<1x1x2x2xf32> {
  %0 = kiln.avg_pool2d %x {kernel = array<i64: 2, 2>, stride = array<i64: 1, 1>} : tensor<1x1x3x3xf32> -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

// Tests maximum against a bound that needs no gradient (relu6, clamp):
// strictly greater takes the gradient, a tie none (no kiln.eq).
// CHECK-LABEL: func.func @clamp_low_bwd
// CHECK-NOT: kiln.eq
// CHECK: kiln.gt
// CHECK: kiln.select
// CHECK-NEXT: return
func.func @clamp_low(%x: tensor<4xf32> {kiln.requires_grad}) -> tensor<4xf32> {
  %c = kiln.constant dense<0.0> : tensor<f32>
  %0 = kiln.maximum %x, %c : tensor<4xf32>, tensor<f32>
  return %0 : tensor<4xf32>
}

// -----

// Tests minimum of two differentiable operands: a tie splits the gradient
// in halves (torch.minimum).
// CHECK-LABEL: func.func @minimum_both_bwd
// CHECK-DAG: kiln.eq
// CHECK-DAG: kiln.constant dense<5.000000e-01>
// CHECK: kiln.lt
// CHECK: kiln.lt
// CHECK: return {{.*}}, {{.*}} : tensor<4xf32>, tensor<4xf32>
func.func @minimum_both(%x: tensor<4xf32> {kiln.requires_grad}, %y: tensor<4xf32> {kiln.requires_grad}) -> tensor<4xf32> {
  %0 = kiln.minimum %x, %y : tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests (negative) that a conv2d of symbolic batch size builds nothing and
// says why.
// CHECK-LABEL: func.func @negative_dynamic_conv
// CHECK-NOT: @negative_dynamic_conv_bwd
func.func @negative_dynamic_conv(%x: tensor<?x2x5x5xf32> {kiln.requires_grad}, %w: tensor<3x2x3x3xf32>) -> tensor<?x3x3x3xf32> {
  // expected-remark @+1 {{not differentiable: the gradient of a dynamic-shape 'kiln.conv2d' is not implemented}}
  %0 = kiln.conv2d %x, %w : tensor<?x2x5x5xf32>, tensor<3x2x3x3xf32> -> tensor<?x3x3x3xf32>
  return %0 : tensor<?x3x3x3xf32>
}
