// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt %s --mlir-print-op-generic | kiln-opt | FileCheck %s
// RUN: %python %S/../check_doc_examples.py %S/../../ir/KilnQuantOps.td %s

// Round trip and result-type inference of the quantization ops
// (ir/KilnQuantOps.td); every doc example appears here.

// Tests per-token and per-tensor scale shapes.
// CHECK-LABEL: func.func @quantize
// CHECK: kiln.quantize %{{.*}} : tensor<4x8xf32> -> tensor<4x8xi8>, tensor<4x1xf32>
// CHECK: kiln.quantize %{{.*}} {granularity = "per_tensor"} : tensor<2x4x8xf32> -> tensor<2x4x8xi8>, tensor<1x1x1xf32>
func.func @quantize(%x: tensor<4x8xf32>, %y: tensor<2x4x8xf32>) -> (tensor<4x8xi8>, tensor<1x1x1xf32>) {
  %q, %s = kiln.quantize %x {granularity = "per_token"} : tensor<4x8xf32> -> tensor<4x8xi8>, tensor<4x1xf32>
  %q2, %s2 = kiln.quantize %y {granularity = "per_tensor"} : tensor<2x4x8xf32> -> tensor<2x4x8xi8>, tensor<1x1x1xf32>
  return %q, %s2 : tensor<4x8xi8>, tensor<1x1x1xf32>
}

// Tests dequantize of int8 values and of i32 accumulators.
// CHECK-LABEL: func.func @dequantize
// CHECK: kiln.dequantize %{{.*}}, %{{.*}} : tensor<16x8xi8>, tensor<16x1xf32> -> tensor<16x8xf32>
// CHECK: kiln.dequantize %{{.*}}, %{{.*}} : tensor<4x16xi32>, tensor<4x1xf32> -> tensor<4x16xf32>
func.func @dequantize(%q: tensor<16x8xi8>, %s: tensor<16x1xf32>, %acc: tensor<4x16xi32>, %t: tensor<4x1xf32>) -> (tensor<16x8xf32>, tensor<4x16xf32>) {
  %w = kiln.dequantize %q, %s : tensor<16x8xi8>, tensor<16x1xf32> -> tensor<16x8xf32>
  %a = kiln.dequantize %acc, %t : tensor<4x16xi32>, tensor<4x1xf32> -> tensor<4x16xf32>
  return %w, %a : tensor<16x8xf32>, tensor<4x16xf32>
}

// Tests static uint8 quantization and its dequantize with the zero point.
// CHECK-LABEL: func.func @quantize_static
// CHECK: %[[Q:.*]] = kiln.quantize_static %{{.*}} {scale = 5.000000e-02 : f32, zero_point = 128 : i64} : tensor<4x8xf32> -> tensor<4x8xui8>
// CHECK: kiln.dequantize %[[Q]], %{{.*}} {zero_point = 128 : i64} : tensor<4x8xui8>, tensor<1x1xf32> -> tensor<4x8xf32>
func.func @quantize_static(%x: tensor<4x8xf32>, %s: tensor<1x1xf32>) -> tensor<4x8xf32> {
  %q = kiln.quantize_static %x {scale = 0.05 : f32, zero_point = 128 : i64} : tensor<4x8xf32> -> tensor<4x8xui8>
  %d = kiln.dequantize %q, %s {zero_point = 128 : i64} : tensor<4x8xui8>, tensor<1x1xf32> -> tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

// Tests the i32 carrier of float8 e4m3 data (last dim x 4) and an fp8
// qlinear on it.
// CHECK-LABEL: func.func @fp8_view
// CHECK: %[[W:.*]] = kiln.fp8_view %{{.*}} : tensor<16x2xi32> -> tensor<16x8xf8E4M3FN>
// CHECK: kiln.qlinear %{{.*}}, %[[W]], %{{.*}} {activations = "per_tensor"} : (tensor<4x8xf32>, tensor<16x8xf8E4M3FN>, tensor<16x1xf32>) -> tensor<4x16xf32>
func.func @fp8_view(%x: tensor<4x8xf32>, %words: tensor<16x2xi32>, %s: tensor<16x1xf32>) -> tensor<4x16xf32> {
  %w = kiln.fp8_view %words : tensor<16x2xi32> -> tensor<16x8xf8E4M3FN>
  %y = kiln.qlinear %x, %w, %s {activations = "per_tensor"} : (tensor<4x8xf32>, tensor<16x8xf8E4M3FN>, tensor<16x1xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// Tests the i32 carrier of int8 data (last dim x 4).
// CHECK-LABEL: func.func @int8_view
// CHECK: kiln.int8_view %{{.*}} : tensor<16x2xi32> -> tensor<16x8xi8>
func.func @int8_view(%words: tensor<16x2xi32>) -> tensor<16x8xi8> {
  %w = kiln.int8_view %words : tensor<16x2xi32> -> tensor<16x8xi8>
  return %w : tensor<16x8xi8>
}

// Tests the int4 view (eight values per word) and a grouped weight-only
// qlinear reading it.
// CHECK-LABEL: func.func @int4_view
// CHECK: %[[V:.*]] = kiln.int4_view %{{.*}} : tensor<16x4xi32> -> tensor<16x32xi8>
// CHECK: kiln.qlinear %{{.*}}, %[[V]], %{{.*}} {activations = "none", group_size = 32 : i64} : (tensor<1x32xf32>, tensor<16x32xi8>, tensor<16x1xf32>) -> tensor<1x16xf32>
func.func @int4_view(%words: tensor<16x4xi32>, %x: tensor<1x32xf32>, %s: tensor<16x1xf32>) -> tensor<1x16xf32> {
  %w = kiln.int4_view %words : tensor<16x4xi32> -> tensor<16x32xi8>
  %y = kiln.qlinear %x, %w, %s {activations = "none", group_size = 32 : i64} : (tensor<1x32xf32>, tensor<16x32xi8>, tensor<16x1xf32>) -> tensor<1x16xf32>
  return %y : tensor<1x16xf32>
}

// Tests qlinear with and without a bias, 2-D and 3-D inputs.
// CHECK-LABEL: func.func @qlinear
// CHECK: kiln.qlinear %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<16x8xi8>, tensor<16x1xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK: kiln.qlinear %{{.*}}, %{{.*}}, %{{.*}} {activations = "none"} : (tensor<2x4x8xf32>, tensor<16x8xi8>, tensor<16x1xf32>) -> tensor<2x4x16xf32>
func.func @qlinear(%x: tensor<4x8xf32>, %x3: tensor<2x4x8xf32>, %w: tensor<16x8xi8>, %s: tensor<16x1xf32>, %b: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<2x4x16xf32>) {
  %y = kiln.qlinear %x, %w, %s, %b {activations = "per_token"} : (tensor<4x8xf32>, tensor<16x8xi8>, tensor<16x1xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %z = kiln.qlinear %x3, %w, %s {activations = "none"} : (tensor<2x4x8xf32>, tensor<16x8xi8>, tensor<16x1xf32>) -> tensor<2x4x16xf32>
  return %y, %z : tensor<4x16xf32>, tensor<2x4x16xf32>
}

// Tests a static qlinear carrying the input's scale and zero point.
// CHECK-LABEL: func.func @qlinear_static
// CHECK: kiln.qlinear %{{.*}}, %{{.*}}, %{{.*}} {activations = "static", input_scale = 2.500000e-01 : f32, input_zero_point = 3 : i64}
func.func @qlinear_static(%x: tensor<4x8xf32>, %w: tensor<16x8xi8>, %s: tensor<16x1xf32>) -> tensor<4x16xf32> {
  %y = kiln.qlinear %x, %w, %s {activations = "static", input_scale = 0.25 : f32, input_zero_point = 3 : i64} : (tensor<4x8xf32>, tensor<16x8xi8>, tensor<16x1xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
