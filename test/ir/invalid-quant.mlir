// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// One case per diagnostic of the quantization ops (ir/KilnQuantOps.cpp),
// written in generic form so the error comes from the verifier.

func.func @bad_granularity(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{granularity must be "per_token" or "per_tensor", got "per_channel"}}
  // expected-error @+1 {{failed to infer returned types}}
  %q:2 = "kiln.quantize"(%x) {granularity = "per_channel"} : (tensor<4x8xf32>) -> (tensor<4x8xi8>, tensor<4x1xf32>)
  return
}

// -----

func.func @per_token_0d(%x: tensor<f32>) {
  // expected-error @+2 {{per_token quantization needs rank >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %q:2 = "kiln.quantize"(%x) {granularity = "per_token"} : (tensor<f32>) -> (tensor<i8>, tensor<f32>)
  return
}

// -----

func.func @quantize_f64(%x: tensor<4x8xf64>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float values}}
  %q:2 = "kiln.quantize"(%x) : (tensor<4x8xf64>) -> (tensor<4x8xi8>, tensor<4x1xf32>)
  return
}

// -----

func.func @dequantize_scale_grows(%q: tensor<4x8xi8>, %s: tensor<4x8x2xf32>) {
  // expected-error @+2 {{does not broadcast to}}
  // expected-error @+1 {{failed to infer returned types}}
  %d = "kiln.dequantize"(%q, %s) : (tensor<4x8xi8>, tensor<4x8x2xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @int8_view_0d(%w: tensor<i32>) {
  // expected-error @+2 {{int8_view needs rank >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %v = "kiln.int8_view"(%w) : (tensor<i32>) -> tensor<i8>
  return
}

// -----

func.func @qlinear_bad_mode(%x: tensor<4x8xf32>, %w: tensor<16x8xi8>, %s: tensor<16x1xf32>) {
  // expected-error @+2 {{activations must be "per_token", "per_tensor", "static" or "none", got "calibrated"}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = "kiln.qlinear"(%x, %w, %s) {activations = "calibrated"} : (tensor<4x8xf32>, tensor<16x8xi8>, tensor<16x1xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @qlinear_static_no_scale(%x: tensor<4x8xf32>, %w: tensor<16x8xi8>, %s: tensor<16x1xf32>) {
  // expected-error @+2 {{static activations need a scale and a zero point}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = "kiln.qlinear"(%x, %w, %s) {activations = "static"} : (tensor<4x8xf32>, tensor<16x8xi8>, tensor<16x1xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @quantize_static_bad_zero(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{static zero point must be in [0, 255], got 300}}
  // expected-error @+1 {{failed to infer returned types}}
  %q = "kiln.quantize_static"(%x) {scale = 0.5 : f32, zero_point = 300 : i64} : (tensor<4x8xf32>) -> tensor<4x8xui8>
  return
}

// -----

func.func @quantize_static_bad_scale(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{static scale must be positive and finite, got 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %q = "kiln.quantize_static"(%x) {scale = 0.0 : f32, zero_point = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xui8>
  return
}

// -----

func.func @qlinear_k_mismatch(%x: tensor<4x6xf32>, %w: tensor<16x8xi8>, %s: tensor<16x1xf32>) {
  // expected-error @+2 {{input has K = 6, weight has K = 8}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = "kiln.qlinear"(%x, %w, %s) : (tensor<4x6xf32>, tensor<16x8xi8>, tensor<16x1xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @qlinear_scale_axis(%x: tensor<4x8xf32>, %w: tensor<16x8xi8>, %s: tensor<1x8xf32>) {
  // expected-error @+2 {{weight_scale must be [N, 1] = [16, 1], got 'tensor<1x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = "kiln.qlinear"(%x, %w, %s) : (tensor<4x8xf32>, tensor<16x8xi8>, tensor<1x8xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @qlinear_bias(%x: tensor<4x8xf32>, %w: tensor<16x8xi8>, %s: tensor<16x1xf32>, %b: tensor<4x16xf32>) {
  // expected-error @+2 {{bias must be [N] = [16], got 'tensor<4x16xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = "kiln.qlinear"(%x, %w, %s, %b) : (tensor<4x8xf32>, tensor<16x8xi8>, tensor<16x1xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @qlinear_group_needs_weight_only(%x: tensor<4x64xf32>, %w: tensor<16x64xi8>, %s: tensor<16x2xf32>) {
  // expected-error @+2 {{group_size needs activations = "none" (weight-only)}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = "kiln.qlinear"(%x, %w, %s) {activations = "per_token", group_size = 32 : i64} : (tensor<4x64xf32>, tensor<16x64xi8>, tensor<16x2xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @qlinear_group_size(%x: tensor<4x64xf32>, %w: tensor<16x64xi8>, %s: tensor<16x4xf32>) {
  // expected-error @+2 {{group_size must be a multiple of 32 dividing K = 64, got 16}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = "kiln.qlinear"(%x, %w, %s) {activations = "none", group_size = 16 : i64} : (tensor<4x64xf32>, tensor<16x64xi8>, tensor<16x4xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @qlinear_group_scale(%x: tensor<4x64xf32>, %w: tensor<16x64xi8>, %s: tensor<16x1xf32>) {
  // expected-error @+2 {{weight_scale must be [N, K / group_size] = [16, 2], got 'tensor<16x1xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = "kiln.qlinear"(%x, %w, %s) {activations = "none", group_size = 32 : i64} : (tensor<4x64xf32>, tensor<16x64xi8>, tensor<16x1xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @int4_view_words(%words: tensor<16x6xi32>) {
  // expected-error @+2 {{int4_view needs a multiple of 4 words (32 values), got 6}}
  // expected-error @+1 {{failed to infer returned types}}
  %w = "kiln.int4_view"(%words) : (tensor<16x6xi32>) -> tensor<16x48xi8>
  return
}

// -----

func.func @qlinear_fp8_weight_only(%x: tensor<4x8xf32>, %w: tensor<16x8xf8E4M3FN>, %s: tensor<16x1xf32>) {
  // expected-error @+2 {{an f8E4M3FN weight needs "per_token" or "per_tensor" activations and no group_size}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = "kiln.qlinear"(%x, %w, %s) {activations = "none"} : (tensor<4x8xf32>, tensor<16x8xf8E4M3FN>, tensor<16x1xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @fp8_view_scalar(%words: tensor<i32>) {
  // expected-error @+2 {{fp8_view needs rank >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %w = "kiln.fp8_view"(%words) : (tensor<i32>) -> tensor<f8E4M3FN>
  return
}
