// RUN: kiln-opt %s -split-input-file -kiln-cpu-quant-to-calls -verify-diagnostics | FileCheck %s

// kiln-cpu-quant-to-calls runs each kiln.qlinear as a call of kiln's int8
// GEMM (codegen/cpu/QuantToCalls.cpp, runtime/cpu/Int8Gemm.cpp).

// Tests a 3-D per-token qlinear with bias on int8_view'ed words: the input
// collapsed to [M, K], the weight's address taken from the i32 words (byte
// offset = element offset x 4, row stride in bytes), a [2, 4, 16] result
// buffer written through its [M, N] view, mode 0, and no expand_shape.
// CHECK: func.func private @kiln_int8_linear(memref<?x?xf32, strided<[?, ?], offset: ?>>, i64, i64, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, i64, f32, i64) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @per_token_3d
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>, %[[WORDS:.*]]: tensor<16x2xi32>, %[[S:.*]]: tensor<16x1xf32>, %[[B:.*]]: tensor<16xf32>)
// CHECK: %[[X2:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
// CHECK: %[[WM:.*]] = bufferization.to_memref %[[WORDS]] read_only : memref<16x2xi32, strided<[?, ?], offset: ?>>
// CHECK: %[[WC:.*]] = memref.cast %[[WM]]
// CHECK: %{{.*}}, %[[OFF:.*]], %{{.*}}:2, %[[ST:.*]]:2 = memref.extract_strided_metadata %[[WC]]
// CHECK: %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %[[WC]]
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[OFFB:.*]] = arith.muli %[[OFF]], %[[C4]] : index
// CHECK: %[[PTR:.*]] = arith.addi %[[BASE]], %[[OFFB]] : index
// CHECK: %[[ROW:.*]] = arith.muli %[[ST]]#0, %[[C4]] : index
// CHECK: %[[P64:.*]] = arith.index_cast %[[PTR]] : index to i64
// CHECK: %[[R64:.*]] = arith.index_cast %[[ROW]] : index to i64
// CHECK: %[[Y:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x4x16xf32>
// CHECK: %[[Y2:.*]] = memref.collapse_shape %[[Y]] {{\[\[}}0, 1], [2]] : memref<2x4x16xf32> into memref<8x16xf32>
// CHECK: %[[MODE:.*]] = arith.constant 0 : i64
// CHECK: %[[YC:.*]] = memref.cast %[[Y2]] : memref<8x16xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: call @kiln_int8_linear(%{{.*}}, %[[P64]], %[[R64]], %{{.*}}, %{{.*}}, %[[YC]], %[[MODE]], %{{.*}}, %{{.*}})
// CHECK: %[[OUT:.*]] = bufferization.to_tensor %[[Y]] restrict writable : memref<2x4x16xf32>
// CHECK-NOT: tensor.expand_shape
// CHECK: return %[[OUT]]
// CHECK-NOT: kiln.int8_view
func.func @per_token_3d(%x: tensor<2x4x8xf32>, %words: tensor<16x2xi32>, %ws: tensor<16x1xf32>, %b: tensor<16xf32>) -> tensor<2x4x16xf32> {
  %w = kiln.int8_view %words : tensor<16x2xi32> -> tensor<16x8xi8>
  %y = kiln.qlinear %x, %w, %ws, %b {activations = "per_token"} : (tensor<2x4x8xf32>, tensor<16x8xi8>, tensor<16x1xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  return %y : tensor<2x4x16xf32>
}

// -----

// Tests weight-only without a bias on an i8 weight: a zero bias constant,
// element size 1, mode 2, no reshapes for a 2-D input.
// CHECK-LABEL: func.func @weight_only_no_bias
// CHECK: %[[ZERO:.*]] = kiln.constant dense<0.000000e+00> : tensor<16xf32>
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[MODE:.*]] = arith.constant 2 : i64
// CHECK: call @kiln_int8_linear
// CHECK-NOT: tensor.expand_shape
func.func @weight_only_no_bias(%x: tensor<4x8xf32>, %w: tensor<16x8xi8>, %ws: tensor<16x1xf32>) -> tensor<4x16xf32> {
  %y = kiln.qlinear %x, %w, %ws {activations = "none"} : (tensor<4x8xf32>, tensor<16x8xi8>, tensor<16x1xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Tests a static qlinear: mode 3 with its input scale and zero point as
// the call's last two arguments.
// CHECK-LABEL: func.func @static_scale_zero
// CHECK-DAG: %[[MODE:.*]] = arith.constant 3 : i64
// CHECK-DAG: %[[SC:.*]] = arith.constant 2.500000e-01 : f32
// CHECK-DAG: %[[ZP:.*]] = arith.constant 7 : i64
// CHECK: call @kiln_int8_linear(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[MODE]], %[[SC]], %[[ZP]])
func.func @static_scale_zero(%x: tensor<4x8xf32>, %w: tensor<16x8xi8>, %ws: tensor<16x1xf32>) -> tensor<4x16xf32> {
  %y = kiln.qlinear %x, %w, %ws {activations = "static", input_scale = 0.25 : f32, input_zero_point = 7 : i64} : (tensor<4x8xf32>, tensor<16x8xi8>, tensor<16x1xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Negative: a static quantize that did not fold fails the same way.
func.func @unfolded_quantize_static(%x: tensor<4x8xf32>) -> tensor<4x8xui8> {
  // expected-error @+1 {{kiln.quantize_static has no CPU lowering outside an integer GEMM (kiln.qlinear)}}
  %q = kiln.quantize_static %x {scale = 0.5 : f32, zero_point = 0 : i64} : tensor<4x8xf32> -> tensor<4x8xui8>
  return %q : tensor<4x8xui8>
}

// -----

// Tests a requantization no int8 kernel took (dequantize of a quantize_static
// with its scale and zero point): f32 ops of the same values, no uint8 left.
// CHECK-LABEL: func.func @standalone_requantize
// CHECK: kiln.round
// CHECK: kiln.minimum
// CHECK-NOT: kiln.quantize_static
// CHECK-NOT: kiln.dequantize
func.func @standalone_requantize(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %q = kiln.quantize_static %x {scale = 0.5 : f32, zero_point = 3 : i64} : tensor<4x8xf32> -> tensor<4x8xui8>
  %s = kiln.constant dense<0.5> : tensor<1x1xf32>
  %d = kiln.dequantize %q, %s {zero_point = 3 : i64} : tensor<4x8xui8>, tensor<1x1xf32> -> tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

// -----

// Negative: a dequantize by another scale is no requantization; the pass
// fails naming the quantize.
func.func @pair_with_another_scale(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{kiln.quantize_static has no CPU lowering outside an integer GEMM (kiln.qlinear)}}
  %q = kiln.quantize_static %x {scale = 0.5 : f32, zero_point = 3 : i64} : tensor<4x8xf32> -> tensor<4x8xui8>
  %s = kiln.constant dense<0.25> : tensor<1x1xf32>
  %d = kiln.dequantize %q, %s {zero_point = 3 : i64} : tensor<4x8xui8>, tensor<1x1xf32> -> tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

// -----

// Negative: a dequantize that did not fold has no CPU lowering; the pass
// fails naming it.
func.func @unfolded_dequantize(%q: tensor<4x8xi8>, %s: tensor<4x1xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{kiln.dequantize has no CPU lowering outside an integer GEMM (kiln.qlinear)}}
  %d = kiln.dequantize %q, %s : tensor<4x8xi8>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

// -----

// Tests a 3-D input with two dynamic leading sizes: the result buffer is
// allocated with both (an expand_shape of an [M, N] buffer with two dynamic
// sizes in one group does not bufferize in MLIR 19).
// CHECK-LABEL: func.func @dynamic_batch_and_sequence
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<?x?x8xf32>
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[D0:.*]] = tensor.dim %[[X]], %[[C0]]
// CHECK-DAG: %[[D1:.*]] = tensor.dim %[[X]], %[[C1]]
// CHECK: %[[Y:.*]] = memref.alloc(%[[D0]], %[[D1]]) {alignment = 64 : i64} : memref<?x?x16xf32>
// CHECK: memref.collapse_shape %[[Y]] {{\[\[}}0, 1], [2]] : memref<?x?x16xf32> into memref<?x16xf32>
// CHECK: %[[OUT:.*]] = bufferization.to_tensor %[[Y]] restrict writable : memref<?x?x16xf32>
// CHECK-NOT: tensor.expand_shape
// CHECK: return %[[OUT]]
func.func @dynamic_batch_and_sequence(%x: tensor<?x?x8xf32>, %words: tensor<16x2xi32>, %ws: tensor<16x1xf32>) -> tensor<?x?x16xf32> {
  %w = kiln.int8_view %words : tensor<16x2xi32> -> tensor<16x8xi8>
  %y = kiln.qlinear %x, %w, %ws {activations = "none"} : (tensor<?x?x8xf32>, tensor<16x8xi8>, tensor<16x1xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

// Tests a grouped (int4 weight-only) qlinear: a call of kiln_int4_linear
// with the words' address and row bytes, the [N, K / group] scales and the
// group size as its last argument; the int4 view is gone.
// CHECK: func.func private @kiln_int4_linear(memref<?x?xf32, strided<[?, ?], offset: ?>>, i64, i64, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, i64) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @int4_grouped
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[G:.*]] = arith.constant 32 : i64
// CHECK: call @kiln_int4_linear(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[G]])
// CHECK-NOT: kiln.int4_view
func.func @int4_grouped(%x: tensor<1x64xf32>, %words: tensor<16x8xi32>, %ws: tensor<16x2xf32>) -> tensor<1x16xf32> {
  %w = kiln.int4_view %words : tensor<16x8xi32> -> tensor<16x64xi8>
  %y = kiln.qlinear %x, %w, %ws {activations = "none", group_size = 32 : i64} : (tensor<1x64xf32>, tensor<16x64xi8>, tensor<16x2xf32>) -> tensor<1x16xf32>
  return %y : tensor<1x16xf32>
}
