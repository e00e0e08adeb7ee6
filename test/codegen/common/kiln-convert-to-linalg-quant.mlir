// RUN: kiln-opt %s -split-input-file -verify-diagnostics -pass-pipeline='builtin.module(func.func(kiln-convert-to-linalg))' | FileCheck %s

// kiln's quantization ops → linalg (codegen/common/Quant.cpp): int8 layers
// as quantize + an i8 x i8 -> i32 matmul_transpose_b + an f32 epilogue
// (what the CUDA path runs; the CPU path turns kiln.qlinear into runtime
// calls before this pass).

// Tests a dynamic per-token layer with bias: |x| row maxima, the scale
// (max / 127, 1 for 0, NaN for inf/NaN), round-half-even quantization
// clamped to ±127 (maxnumf/minnumf: NaN gives a defined integer), the int8
// GEMM into a zero i32 accumulator, and f32(acc) * (x_scale * w_scale) + b.
// CHECK-LABEL: func.func @per_token
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%arg0 : tensor<4x8xf32>)
// CHECK: math.absf
// CHECK: arith.maximumf
// CHECK: %[[SCALE:.*]] = linalg.generic {{.*}} ins(%[[MAX]] : tensor<4xf32>)
// CHECK: arith.divf %{{.*}}, %{{.*}} : f32
// CHECK: %[[Q:.*]] = linalg.generic {{.*}} ins(%arg0, %[[SCALE]] : tensor<4x8xf32>, tensor<4xf32>) outs(%{{.*}} : tensor<4x8xi8>)
// CHECK: math.roundeven
// CHECK: arith.maxnumf
// CHECK: arith.minnumf
// CHECK: arith.fptosi %{{.*}} : f32 to i8
// CHECK: %[[ACC:.*]] = linalg.matmul_transpose_b ins(%[[Q]], %arg1 : tensor<4x8xi8>, tensor<16x8xi8>) outs(%{{.*}} : tensor<4x16xi32>)
// CHECK: linalg.generic {{.*}} ins(%[[ACC]], %{{.*}}, %[[SCALE]], %arg3 : tensor<4x16xi32>, tensor<16xf32>, tensor<4xf32>, tensor<16xf32>)
// CHECK: arith.sitofp %{{.*}} : i32 to f32
// CHECK: arith.mulf
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @per_token(%x: tensor<4x8xf32>, %w: tensor<16x8xi8>, %ws: tensor<16x1xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %y = kiln.qlinear %x, %w, %ws, %b {activations = "per_token"} : (tensor<4x8xf32>, tensor<16x8xi8>, tensor<16x1xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Tests per-tensor activations: the row maxima reduced once more to a 0-d
// scale, read by every element.
// CHECK-LABEL: func.func @per_tensor
// CHECK: iterator_types = ["reduction"]{{.*}} outs(%{{.*}} : tensor<f32>)
// CHECK: linalg.matmul_transpose_b ins(%{{.*}}, %arg1 : tensor<4x8xi8>, tensor<16x8xi8>)
func.func @per_tensor(%x: tensor<4x8xf32>, %w: tensor<16x8xi8>, %ws: tensor<16x1xf32>) -> tensor<4x16xf32> {
  %y = kiln.qlinear %x, %w, %ws {activations = "per_tensor"} : (tensor<4x8xf32>, tensor<16x8xi8>, tensor<16x1xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Tests static activations on a 3-D input: x * (1 / scale) rounded, plus the
// zero point, clamped to [0, 255] and shifted by -128 to i8; the shift comes
// back as (128 - zp) * rowsum(w) (zp = 120: 8) added to the accumulator;
// the result is expanded back to [2, 3, 16].
// CHECK-LABEL: func.func @static_3d
// CHECK: %[[X2:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2]]
// CHECK: %[[Q:.*]] = linalg.generic {{.*}} ins(%[[X2]] : tensor<6x8xf32>) outs(%{{.*}} : tensor<6x8xi8>)
// CHECK: arith.constant 2.000000e+01 : f32
// CHECK: arith.mulf
// CHECK: math.roundeven
// CHECK: arith.constant 1.280000e+02 : f32
// CHECK: arith.subf
// CHECK: %[[SUMS:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%arg1 : tensor<16x8xi8>) outs(%{{.*}} : tensor<16xi32>)
// CHECK: arith.extsi %{{.*}} : i8 to i32
// CHECK: %[[ACC:.*]] = linalg.matmul_transpose_b ins(%[[Q]], %arg1
// CHECK: linalg.generic {{.*}} ins(%[[ACC]], %{{.*}}, %[[SUMS]], %arg3 :
// CHECK: arith.constant 8 : i32
// CHECK: arith.muli
// CHECK: arith.addi
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2]] output_shape [2, 3, 16]
func.func @static_3d(%x: tensor<2x3x8xf32>, %w: tensor<16x8xi8>, %ws: tensor<16x1xf32>, %b: tensor<16xf32>) -> tensor<2x3x16xf32> {
  %y = kiln.qlinear %x, %w, %ws, %b {activations = "static", input_scale = 0.05 : f32, input_zero_point = 120 : i64} : (tensor<2x3x8xf32>, tensor<16x8xi8>, tensor<16x1xf32>, tensor<16xf32>) -> tensor<2x3x16xf32>
  return %y : tensor<2x3x16xf32>
}

// -----

// Tests weight-only: the weight dequantized to f32 and an f32 GEMM (no
// integer product), the bias added after it.
// CHECK-LABEL: func.func @weight_only
// CHECK: %[[WD:.*]] = linalg.generic {{.*}} ins(%arg1, %{{.*}} : tensor<16x8xi8>, tensor<16xf32>) outs(%{{.*}} : tensor<16x8xf32>)
// CHECK: linalg.matmul_transpose_b ins(%arg0, %[[WD]] : tensor<4x8xf32>, tensor<16x8xf32>) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK-NOT: i32
// CHECK: arith.addf
func.func @weight_only(%x: tensor<4x8xf32>, %w: tensor<16x8xi8>, %ws: tensor<16x1xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %y = kiln.qlinear %x, %w, %ws, %b {activations = "none"} : (tensor<4x8xf32>, tensor<16x8xi8>, tensor<16x1xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Tests kiln.int8_view: value j is byte j % 4 of word j / 4 (a floordiv
// indexing map, an arithmetic shift by 8 (j % 4), truncation to i8).
// CHECK-DAG: #[[WORDS:.*]] = affine_map<(d0, d1) -> (d0, d1 floordiv 4)>
// CHECK-LABEL: func.func @int8_view
// CHECK: linalg.generic {indexing_maps = [#[[WORDS]], #{{.*}}]{{.*}} ins(%arg0 : tensor<16x2xi32>) outs(%{{.*}} : tensor<16x8xi8>)
// CHECK: linalg.index 1
// CHECK: arith.remsi
// CHECK: arith.shrsi
// CHECK: arith.trunci %{{.*}} : i32 to i8
func.func @int8_view(%words: tensor<16x2xi32>) -> tensor<16x8xi8> {
  %w = kiln.int8_view %words : tensor<16x2xi32> -> tensor<16x8xi8>
  return %w : tensor<16x8xi8>
}

// -----

// Tests a standalone per-tensor kiln.quantize (both results) and a
// dequantize with a zero point (subtracted in i32 before the conversion).
// CHECK-LABEL: func.func @quantize_dequantize
// CHECK: arith.fptosi %{{.*}} : f32 to i8
// CHECK: tensor.expand_shape %{{.*}} [] output_shape [1, 1] : tensor<f32> into tensor<1x1xf32>
// CHECK: arith.extsi %{{.*}} : i8 to i32
// CHECK: arith.subi
// CHECK: arith.sitofp
func.func @quantize_dequantize(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<1x1xf32>) {
  %q, %s = kiln.quantize %x {granularity = "per_tensor"} : tensor<4x8xf32> -> tensor<4x8xi8>, tensor<1x1xf32>
  %d = kiln.dequantize %q, %s {zero_point = 3 : i64} : tensor<4x8xi8>, tensor<1x1xf32> -> tensor<4x8xf32>
  return %d, %s : tensor<4x8xf32>, tensor<1x1xf32>
}

// -----

// Tests a grouped (int4) weight-only layer: kiln.int4_view unpacks nibble
// (k % 32) / 16 of byte (k / 32) * 16 + k % 16 (word (k / 32) * 4 +
// (k % 16) / 4; masked, minus 8), each value scaled by its group's scale
// (map (d0, d1 floordiv 32)), an f32 GEMM.
// CHECK-DAG: #[[NIBBLES:.*]] = affine_map<(d0, d1) -> (d0, (d1 floordiv 32) * 4 + (d1 mod 16) floordiv 4)>
// CHECK-DAG: #[[GROUP:.*]] = affine_map<(d0, d1) -> (d0, d1 floordiv 32)>
// CHECK-LABEL: func.func @grouped
// CHECK: %[[W:.*]] = linalg.generic {indexing_maps = [#[[NIBBLES]], #{{.*}}]{{.*}} ins(%arg1 : tensor<16x8xi32>) outs(%{{.*}} : tensor<16x64xi8>)
// CHECK: arith.andi
// CHECK: arith.subi
// CHECK: %[[WD:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #[[GROUP]], #{{.*}}]{{.*}} ins(%[[W]], %arg2 : tensor<16x64xi8>, tensor<16x2xf32>) outs(%{{.*}} : tensor<16x64xf32>)
// CHECK: linalg.matmul_transpose_b ins(%arg0, %[[WD]] : tensor<4x64xf32>, tensor<16x64xf32>)
func.func @grouped(%x: tensor<4x64xf32>, %words: tensor<16x8xi32>, %ws: tensor<16x2xf32>) -> tensor<4x16xf32> {
  %w = kiln.int4_view %words : tensor<16x8xi32> -> tensor<16x64xi8>
  %y = kiln.qlinear %x, %w, %ws {activations = "none", group_size = 32 : i64} : (tensor<4x64xf32>, tensor<16x64xi8>, tensor<16x2xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Negative: uint8 values (static activations) are not dequantized here.
func.func @dequantize_u8(%q: tensor<4x8xui8>, %s: tensor<1x1xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{failed to legalize operation 'kiln.dequantize'}}
  %d = kiln.dequantize %q, %s {zero_point = 128 : i64} : tensor<4x8xui8>, tensor<1x1xf32> -> tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

// -----

// Tests an fp8 (e4m3) layer: scales max / 448, the input clamped to ±448
// and rounded to f8E4M3FN by arith.truncf, an f8 x f8 -> f32 GEMM (no
// integer accumulator, no sitofp), the weight's bytes through kiln.fp8_view
// (a byte view ending in a bitcast, marked kiln.byte_view).
// CHECK-LABEL: func.func @fp8
// CHECK: %[[W:.*]] = linalg.generic {{.*}} ins(%arg1 : tensor<16x2xi32>) outs(%{{.*}} : tensor<16x8xf8E4M3FN>) attrs = {{.*}}kiln.byte_view
// CHECK: arith.bitcast %{{.*}} : i8 to f8E4M3FN
// CHECK: arith.constant 4.480000e+02 : f32
// CHECK: %[[Q:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<4x8xf8E4M3FN>)
// CHECK: arith.maxnumf
// CHECK: arith.minnumf
// CHECK: arith.truncf %{{.*}} : f32 to f8E4M3FN
// CHECK: %[[ACC:.*]] = linalg.matmul_transpose_b ins(%[[Q]], %[[W]] : tensor<4x8xf8E4M3FN>, tensor<16x8xf8E4M3FN>) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[ACC]],
// CHECK-NOT: arith.sitofp
// CHECK: return
func.func @fp8(%x: tensor<4x8xf32>, %words: tensor<16x2xi32>, %ws: tensor<16x1xf32>) -> tensor<4x16xf32> {
  %w = kiln.fp8_view %words : tensor<16x2xi32> -> tensor<16x8xf8E4M3FN>
  %y = kiln.qlinear %x, %w, %ws : (tensor<4x8xf32>, tensor<16x8xf8E4M3FN>, tensor<16x1xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
