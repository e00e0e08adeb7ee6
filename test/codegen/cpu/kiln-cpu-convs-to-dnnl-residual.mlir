// RUN: kiln-opt %s -split-input-file -kiln-cpu-convs-to-dnnl | FileCheck %s

// kiln-cpu-convs-to-dnnl on residual blocks of int8 convolutions: the
// residual add (and the ReLU after it) becomes oneDNN post-ops of the int8
// convolution that ends the block (runtime/cpu/DnnlQConv.cpp's `_ru8` /
// `_rf32` calls), and the block output stays u8 when every other user is
// the quantize_static of int8 convolutions with one scale and zero point.

// Tests a bottleneck without downsample: the block input %v (an int8
// convolution's ReLU) is quantized (0.5, 2) for %c1 and is the residual of
// %c3. %v's call writes u8 (`_yu8`, 0.5 and 2), %c1 reads it (`_xu8`) and
// writes u8 for %c3, %c3 reads its input and the residual as u8 (`_ru8`,
// the residual's scale 0.5 and zero point 2 last; its own output f32: 1 and
// 0 as the y scale and zero point). No add, ReLU or q/dq op is left.
// CHECK-LABEL: func.func @bottleneck
// CHECK: call @kiln_dnnl_qconv2d_u8s8_yu8(
// CHECK: call @kiln_dnnl_qconv2d_u8s8_xu8_yu8(
// CHECK: %[[YS:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[YZ:.*]] = arith.constant 0 : i64
// CHECK-NEXT: %[[RS:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT: %[[RZ:.*]] = arith.constant 2 : i64
// CHECK-NEXT: call @kiln_dnnl_qconv2d_u8s8_xu8_ru8({{.*}}, %[[YS]], %[[YZ]], %{{.*}}, %[[RS]], %[[RZ]]) : (memref<?x?x?x?xui8, {{.*}}>, memref<?x?x?x?xi32, {{.*}}>, memref<?x?x?x?xf32, {{.*}}>, {{.*}}, f32, i64, memref<?x?x?x?xui8, {{.*}}>, f32, i64) -> ()
// CHECK-NOT: kiln.add
// CHECK-NOT: kiln.relu
// CHECK-NOT: kiln.dequantize
// CHECK-NOT: kiln.quantize_static
func.func @bottleneck(%x: tensor<1x4x6x6xf32>, %w: tensor<4x4x1x1xi32>, %s: tensor<4x1x1x1xf32>, %b: tensor<4x1x1xf32>) -> tensor<1x4x6x6xf32> {
  %c = kiln.constant dense<0.25> : tensor<1x1x1x1xf32>
  %c5 = kiln.constant dense<0.5> : tensor<1x1x1x1xf32>
  %wd = kiln.dequantize %w, %s : tensor<4x4x1x1xi32>, tensor<4x1x1x1xf32> -> tensor<4x4x1x1xf32>
  %q = kiln.quantize_static %x {scale = 0.25 : f32, zero_point = 0 : i64} : tensor<1x4x6x6xf32> -> tensor<1x4x6x6xui8>
  %xd = kiln.dequantize %q, %c : tensor<1x4x6x6xui8>, tensor<1x1x1x1xf32> -> tensor<1x4x6x6xf32>
  %p = kiln.conv2d %xd, %wd : tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x6x6xf32>
  %v = kiln.relu %p : tensor<1x4x6x6xf32>
  %qv = kiln.quantize_static %v {scale = 0.5 : f32, zero_point = 2 : i64} : tensor<1x4x6x6xf32> -> tensor<1x4x6x6xui8>
  %vd = kiln.dequantize %qv, %c5 {zero_point = 2 : i64} : tensor<1x4x6x6xui8>, tensor<1x1x1x1xf32> -> tensor<1x4x6x6xf32>
  %c1 = kiln.conv2d %vd, %wd : tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x6x6xf32>
  %r1 = kiln.relu %c1 : tensor<1x4x6x6xf32>
  %q1 = kiln.quantize_static %r1 {scale = 0.25 : f32, zero_point = 0 : i64} : tensor<1x4x6x6xf32> -> tensor<1x4x6x6xui8>
  %d1 = kiln.dequantize %q1, %c : tensor<1x4x6x6xui8>, tensor<1x1x1x1xf32> -> tensor<1x4x6x6xf32>
  %c3 = kiln.conv2d %d1, %wd : tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x6x6xf32>
  %bn = kiln.mul %c3, %b : tensor<1x4x6x6xf32>, tensor<4x1x1xf32>
  %sum = kiln.add %bn, %v : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
  %out = kiln.relu %sum : tensor<1x4x6x6xf32>
  return %out : tensor<1x4x6x6xf32>
}

// -----

// Tests a bottleneck with a downsample: add(%c3 chain, %ds chain), %ds
// captured after %c3. %c3 absorbs the add (the left chain) with %ds's f32
// result as its residual (`_rf32`), so %ds is rewritten first and %c3
// reads its channels-last buffer directly (no copy); %c3's block output
// only feeds a quantize_static of an int8 convolution: `_yu8`.
// CHECK-LABEL: func.func @downsample
// CHECK: call @kiln_dnnl_qconv2d_u8s8_yu8(
// CHECK: %[[DS:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x6x6x4xf32>
// CHECK: call @kiln_dnnl_qconv2d_u8s8(
// CHECK: %[[DT:.*]] = bufferization.to_tensor %[[DS]] restrict writable
// CHECK-NOT: linalg.generic
// CHECK: bufferization.to_memref %[[DT]] read_only
// CHECK: call @kiln_dnnl_qconv2d_u8s8_xu8_yu8_rf32(
// CHECK-SAME: memref<?x?x?x?xf32, {{.*}}>, f32, i64) -> ()
// CHECK: call @kiln_dnnl_qconv2d_u8s8_xu8(
// CHECK-NOT: kiln.add
func.func @downsample(%x: tensor<1x4x6x6xf32>, %w: tensor<4x4x1x1xi32>, %s: tensor<4x1x1x1xf32>, %b: tensor<4x1x1xf32>) -> tensor<1x4x6x6xf32> {
  %c = kiln.constant dense<0.25> : tensor<1x1x1x1xf32>
  %wd = kiln.dequantize %w, %s : tensor<4x4x1x1xi32>, tensor<4x1x1x1xf32> -> tensor<4x4x1x1xf32>
  %q = kiln.quantize_static %x {scale = 0.25 : f32, zero_point = 0 : i64} : tensor<1x4x6x6xf32> -> tensor<1x4x6x6xui8>
  %xd = kiln.dequantize %q, %c : tensor<1x4x6x6xui8>, tensor<1x1x1x1xf32> -> tensor<1x4x6x6xf32>
  %c1 = kiln.conv2d %xd, %wd : tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x6x6xf32>
  %q1 = kiln.quantize_static %c1 {scale = 0.25 : f32, zero_point = 0 : i64} : tensor<1x4x6x6xf32> -> tensor<1x4x6x6xui8>
  %d1 = kiln.dequantize %q1, %c : tensor<1x4x6x6xui8>, tensor<1x1x1x1xf32> -> tensor<1x4x6x6xf32>
  %c3 = kiln.conv2d %d1, %wd : tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x6x6xf32>
  %bn3 = kiln.mul %c3, %b : tensor<1x4x6x6xf32>, tensor<4x1x1xf32>
  %ds = kiln.conv2d %xd, %wd : tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x6x6xf32>
  %bnd = kiln.add %ds, %b : tensor<1x4x6x6xf32>, tensor<4x1x1xf32>
  %sum = kiln.add %bn3, %bnd : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
  %out = kiln.relu %sum : tensor<1x4x6x6xf32>
  %qo = kiln.quantize_static %out {scale = 0.25 : f32, zero_point = 0 : i64} : tensor<1x4x6x6xf32> -> tensor<1x4x6x6xui8>
  %do = kiln.dequantize %qo, %c : tensor<1x4x6x6xui8>, tensor<1x1x1x1xf32> -> tensor<1x4x6x6xf32>
  %next = kiln.conv2d %do, %wd : tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x6x6xf32>
  return %next : tensor<1x4x6x6xf32>
}

// -----

// Tests the negative cases of a u8 block input: %v is also needed as f32
// elsewhere (returned), or quantized with two scales for two convolutions.
// Its producer then writes f32 (no `_yu8`) and the residual is added as
// that exact f32 value (`_rf32`); a SiLU after the residual add stays a
// kiln.silu (the u8 residual's rescaling needs a positively homogeneous
// activation, so only a ReLU is absorbed after it).
// CHECK-LABEL: func.func @residual_negative
// CHECK-NOT: _yu8
// CHECK-NOT: _ru8
// CHECK: call @kiln_dnnl_qconv2d_u8s8_rf32(
// CHECK-NOT: kiln.add
// CHECK: call @kiln_dnnl_qconv2d_u8s8_rf32(
// CHECK: kiln.silu
func.func @residual_negative(%x: tensor<1x4x6x6xf32>, %w: tensor<4x4x1x1xi32>, %s: tensor<4x1x1x1xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
  %c = kiln.constant dense<0.25> : tensor<1x1x1x1xf32>
  %c5 = kiln.constant dense<0.5> : tensor<1x1x1x1xf32>
  %wd = kiln.dequantize %w, %s : tensor<4x4x1x1xi32>, tensor<4x1x1x1xf32> -> tensor<4x4x1x1xf32>
  %q = kiln.quantize_static %x {scale = 0.25 : f32, zero_point = 0 : i64} : tensor<1x4x6x6xf32> -> tensor<1x4x6x6xui8>
  %xd = kiln.dequantize %q, %c : tensor<1x4x6x6xui8>, tensor<1x1x1x1xf32> -> tensor<1x4x6x6xf32>
  // %v: quantized once, residual of %a, and returned as f32
  %v = kiln.conv2d %xd, %wd : tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x6x6xf32>
  %qv = kiln.quantize_static %v {scale = 0.25 : f32, zero_point = 0 : i64} : tensor<1x4x6x6xf32> -> tensor<1x4x6x6xui8>
  %vd = kiln.dequantize %qv, %c : tensor<1x4x6x6xui8>, tensor<1x1x1x1xf32> -> tensor<1x4x6x6xf32>
  %a = kiln.conv2d %vd, %wd : tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x6x6xf32>
  %sa = kiln.add %a, %v : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
  // %u: quantized with two scales, residual of %b (then a SiLU)
  %u = kiln.conv2d %xd, %wd : tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x6x6xf32>
  %qu1 = kiln.quantize_static %u {scale = 0.25 : f32, zero_point = 0 : i64} : tensor<1x4x6x6xf32> -> tensor<1x4x6x6xui8>
  %qu2 = kiln.quantize_static %u {scale = 0.5 : f32, zero_point = 0 : i64} : tensor<1x4x6x6xf32> -> tensor<1x4x6x6xui8>
  %ud1 = kiln.dequantize %qu1, %c : tensor<1x4x6x6xui8>, tensor<1x1x1x1xf32> -> tensor<1x4x6x6xf32>
  %ud2 = kiln.dequantize %qu2, %c5 : tensor<1x4x6x6xui8>, tensor<1x1x1x1xf32> -> tensor<1x4x6x6xf32>
  %b1 = kiln.conv2d %ud1, %wd : tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x6x6xf32>
  %b2 = kiln.conv2d %ud2, %wd : tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x6x6xf32>
  %sb = kiln.add %b1, %u : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
  %sil = kiln.silu %sb : tensor<1x4x6x6xf32>
  %both = kiln.add %sil, %b2 : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
  return %sa, %v, %both : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
}

// -----

// Tests a stem: an int8 convolution whose only user is a max-pool whose
// result only int8 convolutions read (quantized 0.5, 0). The convolution
// writes u8 with the pool's consumers' scale (`_yu8`), the pool runs on the
// u8 values (kiln_dnnl_maxpool2d_u8: kernel, stride, padding; max-pooling
// commutes with quantizing) and the next convolution reads its result
// (`_xu8`); no float max-pool, permute or q/dq is left.
// CHECK-LABEL: func.func @stem_pool
// CHECK: call @kiln_dnnl_qconv2d_u8s8_yu8(
// CHECK: %[[P:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x3x3x4xui8>
// CHECK-DAG: %[[K:.*]] = arith.constant 3 : i64
// CHECK-DAG: %[[S:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[PAD:.*]] = arith.constant 1 : i64
// CHECK: call @kiln_dnnl_maxpool2d_u8(%{{.*}}, %{{.*}}, %[[K]], %{{.*}}, %[[S]], %{{.*}}, %[[PAD]], %{{.*}}) : (memref<?x?x?x?xui8, {{.*}}>, memref<?x?x?x?xui8, {{.*}}>, i64, i64, i64, i64, i64, i64) -> ()
// CHECK: bufferization.to_tensor %[[P]] restrict writable
// CHECK: call @kiln_dnnl_qconv2d_u8s8_xu8(
// CHECK-NOT: kiln.max_pool2d
// CHECK-NOT: kiln.quantize_static
// CHECK-NOT: kiln.dequantize
func.func @stem_pool(%x: tensor<1x8x6x6xf32>, %w: tensor<4x8x3x3xi32>, %s: tensor<4x1x1x1xf32>, %w2: tensor<5x4x1x1xi32>, %s2: tensor<5x1x1x1xf32>) -> tensor<1x5x3x3xf32> {
  %q = kiln.quantize_static %x {scale = 0.25 : f32, zero_point = 7 : i64} : tensor<1x8x6x6xf32> -> tensor<1x8x6x6xui8>
  %c = kiln.constant dense<0.25> : tensor<1x1x1x1xf32>
  %xd = kiln.dequantize %q, %c {zero_point = 7 : i64} : tensor<1x8x6x6xui8>, tensor<1x1x1x1xf32> -> tensor<1x8x6x6xf32>
  %wd = kiln.dequantize %w, %s : tensor<4x8x3x3xi32>, tensor<4x1x1x1xf32> -> tensor<4x8x3x3xf32>
  %y = kiln.conv2d %xd, %wd {padding = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<4x8x3x3xf32> -> tensor<1x4x6x6xf32>
  %r = kiln.relu %y : tensor<1x4x6x6xf32>
  %p = kiln.max_pool2d %r {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<1x4x6x6xf32> -> tensor<1x4x3x3xf32>
  %q2 = kiln.quantize_static %p {scale = 0.5 : f32, zero_point = 0 : i64} : tensor<1x4x3x3xf32> -> tensor<1x4x3x3xui8>
  %c2 = kiln.constant dense<0.5> : tensor<1x1x1x1xf32>
  %xd2 = kiln.dequantize %q2, %c2 : tensor<1x4x3x3xui8>, tensor<1x1x1x1xf32> -> tensor<1x4x3x3xf32>
  %wd2 = kiln.dequantize %w2, %s2 : tensor<5x4x1x1xi32>, tensor<5x1x1x1xf32> -> tensor<5x4x1x1xf32>
  %y2 = kiln.conv2d %xd2, %wd2 : tensor<1x4x3x3xf32>, tensor<5x4x1x1xf32> -> tensor<1x5x3x3xf32>
  return %y2 : tensor<1x5x3x3xf32>
}
