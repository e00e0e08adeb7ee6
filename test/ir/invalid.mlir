// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// One case per user-facing diagnostic of the kiln dialect: the verifiers and
// shape inference in ir/KilnOps.cpp, the ODS type constraints and the custom
// assembly of kiln.layer_norm. Ops whose custom form infers the result type
// are written in generic form so the error comes from the verifier. A failed
// inference also reports "failed to infer returned types".

//===----------------------------------------------------------------------===//
// Broadcasting elementwise ops
//===----------------------------------------------------------------------===//

// Tests that a binary op rejects operands of different element types.
func.func @binary_element_type_mismatch(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+2 {{operands have different element types ('f32' vs 'f16'); insert kiln.cast to promote}}
  // expected-error @+1 {{'kiln.add' op failed to infer returned types}}
  %0 = "kiln.add"(%a, %b) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

// Tests that kiln.fmod rejects bool operands (torch.fmod of bools raises).
func.func @fmod_bool(%a: tensor<4xi1>, %b: tensor<4xi1>) {
  // expected-error @+1 {{'kiln.fmod' op operand #0 must be ranked tensor of floating-point or 8-bit signless integer or 16-bit signless integer or 32-bit signless integer or 64-bit signless integer values}}
  %0 = "kiln.fmod"(%a, %b) : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return
}

// -----

// Tests that kiln.floor_div rejects bool operands.
func.func @floor_div_bool(%a: tensor<4xi1>, %b: tensor<4xi1>) {
  // expected-error @+1 {{'kiln.floor_div' op operand #0 must be ranked tensor of floating-point or 8-bit signless integer}}
  %0 = "kiln.floor_div"(%a, %b) : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return
}

// -----

// Tests that the custom form reports the element type mismatch while parsing.
func.func @binary_element_type_mismatch_custom(%a: tensor<4xi64>, %b: tensor<4xi32>) {
  // expected-error @+1 {{operands have different element types ('i64' vs 'i32')}}
  %0 = kiln.mul %a, %b : tensor<4xi64>, tensor<4xi32>
  return
}

// -----

// Tests that a binary op rejects shapes that do not broadcast.
func.func @binary_not_broadcastable(%a: tensor<4x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{shapes 'tensor<4x3xf32>' and 'tensor<4xf32>' are not broadcast-compatible}}
  // expected-error @+1 {{'kiln.sub' op failed to infer returned types}}
  %0 = "kiln.sub"(%a, %b) : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return
}

// -----

// Tests that a comparison rejects operands of different element types.
func.func @compare_element_type_mismatch(%a: tensor<4xf32>, %b: tensor<4xi64>) {
  // expected-error @+2 {{operands have different element types ('f32' vs 'i64')}}
  // expected-error @+1 {{'kiln.lt' op failed to infer returned types}}
  %0 = "kiln.lt"(%a, %b) : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xi1>
  return
}

// -----

// Tests that a declared result type must be the inferred one (here the
// comparison's result must be i1, not the operand type).
func.func @compare_result_not_i1(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.eq' op result #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = "kiln.eq"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that a declared result shape must be the broadcast shape.
func.func @binary_wrong_result_shape(%a: tensor<4x1xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{'kiln.maximum' op inferred type(s) 'tensor<4x8xf32>' are incompatible with return type(s) of operation 'tensor<4x1xf32>'}}
  // expected-error @+1 {{'kiln.maximum' op failed to infer returned types}}
  %0 = "kiln.maximum"(%a, %b) : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x1xf32>
  return
}

//===----------------------------------------------------------------------===//
// Select
//===----------------------------------------------------------------------===//

// -----

// Tests that select rejects on_true/on_false of different element types.
func.func @select_element_type_mismatch(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf64>) {
  // expected-error @+2 {{on_true and on_false have different element types ('f32' vs 'f64')}}
  // expected-error @+1 {{'kiln.select' op failed to infer returned types}}
  %0 = "kiln.select"(%c, %a, %b) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf64>) -> tensor<4xf32>
  return
}

// -----

// Tests that select rejects a condition that does not broadcast with the
// values.
func.func @select_not_broadcastable(%c: tensor<3xi1>, %a: tensor<4xf32>, %b: tensor<f32>) {
  // expected-error @+2 {{shapes of condition 'tensor<3xi1>', on_true 'tensor<4xf32>' and on_false 'tensor<f32>' are not broadcast-compatible}}
  // expected-error @+1 {{'kiln.select' op failed to infer returned types}}
  %0 = "kiln.select"(%c, %a, %b) : (tensor<3xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

// Tests that select rejects values that do not broadcast with each other.
func.func @select_values_not_broadcastable(%c: tensor<i1>, %a: tensor<4xf32>, %b: tensor<5xf32>) {
  // expected-error @+2 {{shapes of condition 'tensor<i1>', on_true 'tensor<4xf32>' and on_false 'tensor<5xf32>' are not broadcast-compatible}}
  // expected-error @+1 {{'kiln.select' op failed to infer returned types}}
  %0 = "kiln.select"(%c, %a, %b) : (tensor<i1>, tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that the select condition must be a tensor of i1.
func.func @select_condition_not_i1(%c: tensor<4xi8>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.select' op operand #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = "kiln.select"(%c, %a, %a) : (tensor<4xi8>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

// -----

// Tests that matmul rejects an operand of rank < 2.
func.func @matmul_rank_1(%a: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{operands must have rank >= 2, got 'tensor<4x8xf32>' and 'tensor<8xf32>'}}
  // expected-error @+1 {{'kiln.matmul' op failed to infer returned types}}
  %0 = "kiln.matmul"(%a, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that matmul rejects static contraction dims that differ.
func.func @matmul_k_mismatch(%a: tensor<4x8xf32>, %b: tensor<16x32xf32>) {
  // expected-error @+2 {{contraction dims differ: lhs has K = 8, rhs has K = 16}}
  // expected-error @+1 {{'kiln.matmul' op failed to infer returned types}}
  %0 = "kiln.matmul"(%a, %b) : (tensor<4x8xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  return
}

// -----

// Tests that matmul rejects batch dims that do not broadcast.
func.func @matmul_batch_mismatch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x16xf32>) {
  // expected-error @+2 {{batch dims of 'tensor<2x4x8xf32>' and 'tensor<3x8x16xf32>' are not broadcast-compatible}}
  // expected-error @+1 {{'kiln.matmul' op failed to infer returned types}}
  %0 = "kiln.matmul"(%a, %b) : (tensor<2x4x8xf32>, tensor<3x8x16xf32>) -> tensor<2x4x16xf32>
  return
}

// -----

// Tests that matmul rejects operands of different element types.
func.func @matmul_element_type_mismatch(%a: tensor<4x8xf32>, %b: tensor<8x16xf16>) {
  // expected-error @+2 {{operands have different element types ('f32' vs 'f16')}}
  // expected-error @+1 {{'kiln.matmul' op failed to infer returned types}}
  %0 = "kiln.matmul"(%a, %b) : (tensor<4x8xf32>, tensor<8x16xf16>) -> tensor<4x16xf32>
  return
}

// -----

// Tests that matmul is float only.
func.func @matmul_integer(%a: tensor<4x8xi32>, %b: tensor<8x16xi32>) {
  // expected-error @+1 {{'kiln.matmul' op operand #0 must be ranked tensor of floating-point values}}
  %0 = "kiln.matmul"(%a, %b) : (tensor<4x8xi32>, tensor<8x16xi32>) -> tensor<4x16xi32>
  return
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

// -----

// Tests that permute rejects dims of the wrong length.
func.func @permute_wrong_length(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{dims has 3 entries but the operand has rank 2}}
  // expected-error @+1 {{'kiln.permute' op failed to infer returned types}}
  %0 = "kiln.permute"(%x) <{dims = array<i64: 1, 0, 2>}> : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return
}

// -----

// Tests that permute rejects a dim out of range.
func.func @permute_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{permutation dim 2 is out of range for rank 2}}
  // expected-error @+1 {{'kiln.permute' op failed to infer returned types}}
  %0 = "kiln.permute"(%x) <{dims = array<i64: 2, 0>}> : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return
}

// -----

// Tests that permute rejects a negative dim (the frontend normalizes them).
func.func @permute_negative(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{permutation dim -1 is out of range for rank 2}}
  // expected-error @+1 {{'kiln.permute' op failed to infer returned types}}
  %0 = "kiln.permute"(%x) <{dims = array<i64: -1, 0>}> : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return
}

// -----

// Tests that permute rejects a repeated dim.
func.func @permute_repeated(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{permutation dim 1 is repeated}}
  // expected-error @+1 {{'kiln.permute' op failed to infer returned types}}
  %0 = "kiln.permute"(%x) <{dims = array<i64: 1, 1>}> : (tensor<4x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

// Tests that reshape cannot change the element type.
func.func @reshape_element_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'kiln.reshape' op cannot change the element type ('f32' to 'f16'); use kiln.cast}}
  %0 = kiln.reshape %x : tensor<4x8xf32> -> tensor<32xf16>
  return
}

// -----

// Tests that reshape between static shapes keeps the element count.
func.func @reshape_count(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'kiln.reshape' op element count changes from 32 to 30}}
  %0 = kiln.reshape %x : tensor<4x8xf32> -> tensor<5x6xf32>
  return
}

// -----

// Tests that broadcast_to cannot change the element type.
func.func @broadcast_to_element_type(%x: tensor<1x8xf32>) {
  // expected-error @+1 {{'kiln.broadcast_to' op cannot change the element type ('f32' to 'f64')}}
  %0 = kiln.broadcast_to %x : tensor<1x8xf32> -> tensor<4x8xf64>
  return
}

// -----

// Tests that broadcast_to rejects a dim that is neither 1 nor the target dim.
func.func @broadcast_to_incompatible_dim(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'kiln.broadcast_to' op operand type 'tensor<2x8xf32>' cannot be broadcast to 'tensor<4x8xf32>'}}
  %0 = kiln.broadcast_to %x : tensor<2x8xf32> -> tensor<4x8xf32>
  return
}

// -----

// Tests that broadcast_to rejects a target of lower rank.
func.func @broadcast_to_lower_rank(%x: tensor<1x8xf32>) {
  // expected-error @+1 {{'kiln.broadcast_to' op operand type 'tensor<1x8xf32>' cannot be broadcast to 'tensor<8xf32>'}}
  %0 = kiln.broadcast_to %x : tensor<1x8xf32> -> tensor<8xf32>
  return
}

// -----

// Tests that slice rejects start/end/step of the wrong length.
func.func @slice_wrong_length(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{start, end and step must have one entry per dim (rank 2), got 1, 2 and 2}}
  // expected-error @+1 {{'kiln.slice' op failed to infer returned types}}
  %0 = "kiln.slice"(%x) <{start = array<i64: 0>, end = array<i64: 4, 8>, step = array<i64: 1, 1>}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Tests that slice rejects a step < 1 (torch has no negative steps).
func.func @slice_step(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{step 0 of dim 1 must be >= 1}}
  // expected-error @+1 {{'kiln.slice' op failed to infer returned types}}
  %0 = "kiln.slice"(%x) <{start = array<i64: 0, 0>, end = array<i64: 4, 8>, step = array<i64: 1, 0>}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Tests that slice rejects a start from the end before the dim's first
// element (negative bounds count from the end: -5 of 4 is -1).
func.func @slice_negative_start(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{dim 0: need 0 <= start <= end, got start -5 and end 4}}
  // expected-error @+1 {{'kiln.slice' op failed to infer returned types}}
  %0 = "kiln.slice"(%x) <{start = array<i64: -5, 0>, end = array<i64: 4, 8>, step = array<i64: 1, 1>}> : (tensor<4x8xf32>) -> tensor<5x8xf32>
  return
}

// -----

// Tests that slice rejects start > end.
func.func @slice_start_after_end(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{dim 1: need 0 <= start <= end, got start 5 and end 3}}
  // expected-error @+1 {{'kiln.slice' op failed to infer returned types}}
  %0 = "kiln.slice"(%x) <{start = array<i64: 0, 5>, end = array<i64: 4, 3>, step = array<i64: 1, 1>}> : (tensor<4x8xf32>) -> tensor<4x0xf32>
  return
}

// -----

// Tests that slice rejects an end past a static dim.
func.func @slice_end_past_dim(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{dim 1: end 9 exceeds the dim size 8}}
  // expected-error @+1 {{'kiln.slice' op failed to infer returned types}}
  %0 = "kiln.slice"(%x) <{start = array<i64: 0, 0>, end = array<i64: 4, 9>, step = array<i64: 1, 1>}> : (tensor<4x8xf32>) -> tensor<4x9xf32>
  return
}

// -----

// Tests that concat needs at least one operand.
func.func @concat_no_operands() {
  // expected-error @+2 {{needs at least one operand}}
  // expected-error @+1 {{'kiln.concat' op failed to infer returned types}}
  %0 = "kiln.concat"() <{dim = 0 : i64}> : () -> tensor<4xf32>
  return
}

// -----

// Tests that concat rejects 0-d operands.
func.func @concat_0d(%a: tensor<f32>) {
  // expected-error @+2 {{operands must have rank >= 1, got 'tensor<f32>'}}
  // expected-error @+1 {{'kiln.concat' op failed to infer returned types}}
  %0 = "kiln.concat"(%a, %a) <{dim = 0 : i64}> : (tensor<f32>, tensor<f32>) -> tensor<2xf32>
  return
}

// -----

// Tests that concat rejects a dim out of range.
func.func @concat_dim_out_of_range(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{dim 2 is out of range for rank 2}}
  // expected-error @+1 {{'kiln.concat' op failed to infer returned types}}
  %0 = "kiln.concat"(%a, %a) <{dim = 2 : i64}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

// Tests that concat rejects operands of different element types.
func.func @concat_element_type(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) {
  // expected-error @+2 {{operands have different element types ('f32' vs 'f16'); insert kiln.cast to promote}}
  // expected-error @+1 {{'kiln.concat' op failed to infer returned types}}
  %0 = "kiln.concat"(%a, %b) <{dim = 0 : i64}> : (tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<4x3xf32>
  return
}

// -----

// Tests that concat rejects operands of different ranks.
func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{operands have different ranks ('tensor<2x3xf32>' vs 'tensor<3xf32>')}}
  // expected-error @+1 {{'kiln.concat' op failed to infer returned types}}
  %0 = "kiln.concat"(%a, %b) <{dim = 0 : i64}> : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return
}

// -----

// Tests that concat rejects operands that differ in another dim than `dim`.
func.func @concat_other_dim(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+2 {{operand 'tensor<2x4xf32>' differs from 'tensor<2x3xf32>' in dim 1 (only dim 0 may differ)}}
  // expected-error @+1 {{'kiln.concat' op failed to infer returned types}}
  %0 = "kiln.concat"(%a, %b) <{dim = 0 : i64}> : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return
}

// -----

// Tests that embedding needs a 2-D weight.
func.func @embedding_weight_rank(%w: tensor<10xf32>, %i: tensor<3xi64>) {
  // expected-error @+2 {{weight must be 2-D, got 'tensor<10xf32>'}}
  // expected-error @+1 {{'kiln.embedding' op failed to infer returned types}}
  %0 = "kiln.embedding"(%w, %i) : (tensor<10xf32>, tensor<3xi64>) -> tensor<3xf32>
  return
}

// -----

// Tests that embedding needs i64 or i32 indices.
func.func @embedding_index_type(%w: tensor<10x4xf32>, %i: tensor<3xf32>) {
  // expected-error @+2 {{indices must be i64 or i32, got 'tensor<3xf32>'}}
  // expected-error @+1 {{'kiln.embedding' op failed to infer returned types}}
  %0 = "kiln.embedding"(%w, %i) : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  return
}

// -----

// Tests that a declared slice result type must be the inferred one.
func.func @slice_result_type(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'kiln.slice' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<4x4xf32>'}}
  // expected-error @+1 {{'kiln.slice' op failed to infer returned types}}
  %0 = kiln.slice %x {start = array<i64: 0, 1>, end = array<i64: 4, 7>, step = array<i64: 1, 2>} : tensor<4x8xf32> -> tensor<4x4xf32>
  return
}

// -----

// Tests that cast keeps the shape.
func.func @cast_shape(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.cast' op requires the same shape for all operands and results}}
  %0 = kiln.cast %x : tensor<4xf32> -> tensor<5xi32>
  return
}

// -----

// Tests that the constant's result type is the type of its value.
func.func @constant_type_mismatch() {
  // expected-error @+1 {{'kiln.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "kiln.constant"() <{value = dense<1.0> : tensor<4xf32>}> : () -> tensor<4xf64>
  return
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// -----

// Tests that a reduction rejects a dim out of range.
func.func @reduction_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{reduction dim 2 is out of range for rank 2}}
  // expected-error @+1 {{'kiln.sum' op failed to infer returned types}}
  %0 = kiln.sum %x {dims = array<i64: 2>} : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

// Tests that a reduction rejects a negative dim (the frontend normalizes them).
func.func @reduction_negative(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{reduction dim -1 is out of range for rank 2}}
  // expected-error @+1 {{'kiln.max' op failed to infer returned types}}
  %0 = kiln.max %x {dims = array<i64: -1>} : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

// Tests that a reduction rejects a repeated dim.
func.func @reduction_repeated(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{reduction dim 1 is repeated}}
  // expected-error @+1 {{'kiln.mean' op failed to infer returned types}}
  %0 = kiln.mean %x {dims = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

// Tests that the declared result type must match keepdim.
func.func @reduction_wrong_result(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'kiln.sum' op inferred type(s) 'tensor<4x1xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error @+1 {{'kiln.sum' op failed to infer returned types}}
  %0 = kiln.sum %x {dims = array<i64: 1>, keepdim = true} : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

// Tests that mean is float only.
func.func @mean_integer(%x: tensor<4x8xi64>) {
  // expected-error @+1 {{'kiln.mean' op operand #0 must be ranked tensor of floating-point values}}
  %0 = kiln.mean %x {dims = array<i64: 1>} : tensor<4x8xi64> -> tensor<4xi64>
  return
}

//===----------------------------------------------------------------------===//
// Float-only unary ops
//===----------------------------------------------------------------------===//

// -----

// Tests that exp is float only.
func.func @exp_integer(%x: tensor<4xi32>) {
  // expected-error @+1 {{'kiln.exp' op operand #0 must be ranked tensor of floating-point values}}
  %0 = kiln.exp %x : tensor<4xi32>
  return
}

// -----

// Tests that div is float only (integer true division is cast first).
func.func @div_integer(%a: tensor<4xi64>, %b: tensor<4xi64>) {
  // expected-error @+1 {{'kiln.div' op operand #0 must be ranked tensor of floating-point values}}
  %0 = "kiln.div"(%a, %b) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return
}

// -----

// Tests that kiln ops take ranked tensors only.
func.func @unranked(%x: tensor<*xf32>) {
  // expected-error @+1 {{'kiln.neg' op operand #0 must be ranked tensor of any type values}}
  %0 = "kiln.neg"(%x) : (tensor<*xf32>) -> tensor<*xf32>
  return
}

//===----------------------------------------------------------------------===//
// Activations and normalizations
//===----------------------------------------------------------------------===//

// -----

// Tests that gelu rejects an unknown approximation.
func.func @gelu_approximate(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.gelu' op approximate must be "none" or "tanh", got "erf"}}
  %0 = kiln.gelu %x {approximate = "erf"} : tensor<4xf32>
  return
}

// -----

// Tests that softmax rejects a dim out of range.
func.func @softmax_dim_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'kiln.softmax' op dim 2 is out of range for rank 2}}
  %0 = kiln.softmax %x {dim = 2 : i64} : tensor<4x8xf32>
  return
}

// -----

// Tests that softmax rejects a negative dim (the frontend normalizes them).
func.func @softmax_dim_negative(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'kiln.softmax' op dim -1 is out of range for rank 2}}
  %0 = kiln.softmax %x {dim = -1 : i64} : tensor<4x8xf32>
  return
}

// -----

// Tests that layer_norm rejects num_dims of 0.
func.func @layer_norm_num_dims_zero(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'kiln.layer_norm' op num_dims must be in [1, 2], got 0}}
  %0 = kiln.layer_norm %x {num_dims = 0 : i64} : tensor<4x8xf32>
  return
}

// -----

// Tests that layer_norm rejects num_dims above the rank.
func.func @layer_norm_num_dims_above_rank(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'kiln.layer_norm' op num_dims must be in [1, 2], got 3}}
  %0 = kiln.layer_norm %x {num_dims = 3 : i64} : tensor<4x8xf32>
  return
}

// -----

// Tests that layer_norm rejects a negative eps.
func.func @layer_norm_eps(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'kiln.layer_norm' op eps must be non-negative}}
  %0 = kiln.layer_norm %x {num_dims = 1 : i64, eps = -1.0e-05 : f64} : tensor<4x8xf32>
  return
}

// -----

// Tests that layer_norm rejects a NaN eps.
func.func @layer_norm_eps_nan(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'kiln.layer_norm' op eps must be non-negative}}
  %0 = kiln.layer_norm %x {num_dims = 1 : i64, eps = 0x7FF8000000000000 : f64} : tensor<4x8xf32>
  return
}

// -----

// Tests that the weight must have the normalized shape.
func.func @layer_norm_weight_shape(%x: tensor<4x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'kiln.layer_norm' op weight type 'tensor<4x8xf32>' must have the normalized shape (the last 1 dims of 'tensor<4x8xf32>')}}
  %0 = kiln.layer_norm %x weight %w {num_dims = 1 : i64} : tensor<4x8xf32>, tensor<4x8xf32>
  return
}

// -----

// Tests that the bias must have the normalized shape.
func.func @layer_norm_bias_shape(%x: tensor<2x4x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'kiln.layer_norm' op bias type 'tensor<8xf32>' must have the normalized shape (the last 2 dims of 'tensor<2x4x8xf32>')}}
  %0 = kiln.layer_norm %x bias %b {num_dims = 2 : i64} : tensor<2x4x8xf32>, tensor<8xf32>
  return
}

// -----

// Tests that the weight must have the input's element type.
func.func @layer_norm_weight_type(%x: tensor<4x8xf32>, %w: tensor<8xf16>) {
  // expected-error @+1 {{'kiln.layer_norm' op weight element type 'f16' differs from the input's 'f32'}}
  %0 = kiln.layer_norm %x weight %w {num_dims = 1 : i64} : tensor<4x8xf32>, tensor<8xf16>
  return
}

// -----

// Tests that the bias must have the input's element type.
func.func @layer_norm_bias_type(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xbf16>) {
  // expected-error @+1 {{'kiln.layer_norm' op bias element type 'bf16' differs from the input's 'f32'}}
  %0 = kiln.layer_norm %x weight %w bias %b {num_dims = 1 : i64} : tensor<4x8xf32>, tensor<8xf32>, tensor<8xbf16>
  return
}

// -----

// Tests that the result of layer_norm has the input's type.
func.func @layer_norm_result_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'kiln.layer_norm' op failed to verify that all of {input, result} have same type}}
  %0 = "kiln.layer_norm"(%x) <{num_dims = 1 : i64, eps = 1.0e-05 : f64, operandSegmentSizes = array<i32: 1, 0, 0>}> : (tensor<4x8xf32>) -> tensor<4x8xf16>
  return
}

// -----

// Tests that the custom form of layer_norm needs a type for each affine
// operand.
func.func @layer_norm_missing_type(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{expected ','}}
  %0 = kiln.layer_norm %x weight %w {num_dims = 1 : i64} : tensor<4x8xf32>
  return
}

// -----

// Tests that argmax rejects a dim out of range.
func.func @argmax_dim_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'kiln.argmax' op dim 2 is out of range for rank 2}}
  %0 = "kiln.argmax"(%x) <{dim = 2 : i64}> : (tensor<4x8xf32>) -> tensor<4xi64>
  return
}

// -----

// Tests that argmax rejects a bool operand (torch does).
func.func @argmax_bool(%x: tensor<4xi1>) {
  // expected-error @+1 {{'kiln.argmax' op operand must not be i1 (torch rejects bool)}}
  %0 = kiln.argmax %x {dim = 0 : i64} : tensor<4xi1> -> tensor<i64>
  return
}

// -----

// Tests that argmin rejects reducing an empty dim.
func.func @argmin_empty(%x: tensor<4x0xf32>) {
  // expected-error @+1 {{'kiln.argmin' op cannot reduce the empty dim 1}}
  %0 = kiln.argmin %x {dim = 1 : i64} : tensor<4x0xf32> -> tensor<4xi64>
  return
}

// -----

// Tests that cumsum rejects a dim out of range.
func.func @cumsum_dim_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'kiln.cumsum' op dim 3 is out of range for rank 2}}
  %0 = kiln.cumsum %x {dim = 3 : i64} : tensor<4x8xf32>
  return
}

// -----

// Tests that gather needs an index of the operand's rank.
func.func @gather_rank(%x: tensor<4x8xf32>, %i: tensor<3xi64>) {
  // expected-error @+2 {{index 'tensor<3xi64>' must have the rank of the operand 'tensor<4x8xf32>'}}
  // expected-error @+1 {{'kiln.gather' op failed to infer returned types}}
  %0 = "kiln.gather"(%x, %i) <{dim = 0 : i64}> : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<3xf32>
  return
}

// -----

// Tests that gather rejects an index larger than the operand in a non-gathered dim.
func.func @gather_index_size(%x: tensor<4x8xf32>, %i: tensor<2x9xi64>) {
  // expected-error @+2 {{index dim 1 has size 9, larger than the operand's 8}}
  // expected-error @+1 {{'kiln.gather' op failed to infer returned types}}
  %0 = "kiln.gather"(%x, %i) <{dim = 0 : i64}> : (tensor<4x8xf32>, tensor<2x9xi64>) -> tensor<2x9xf32>
  return
}

// -----

// Tests that gather rejects a dim out of range.
func.func @gather_dim_range(%x: tensor<4x8xf32>, %i: tensor<2x3xi64>) {
  // expected-error @+2 {{dim 2 is out of range for rank 2}}
  // expected-error @+1 {{'kiln.gather' op failed to infer returned types}}
  %0 = "kiln.gather"(%x, %i) <{dim = 2 : i64}> : (tensor<4x8xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that conv2d needs 4-D operands.
func.func @conv2d_rank(%x: tensor<4x8x8xf32>, %w: tensor<6x4x3x3xf32>) {
  // expected-error @+2 {{input and weight must be 4-D, got 'tensor<4x8x8xf32>' and 'tensor<6x4x3x3xf32>'}}
  // expected-error @+1 {{'kiln.conv2d' op failed to infer returned types}}
  %0 = "kiln.conv2d"(%x, %w) : (tensor<4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<6x6x6xf32>
  return
}

// -----

// Tests that conv2d checks the channels against weight x groups.
func.func @conv2d_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) {
  // expected-error @+2 {{input has 4 channels but weight 'tensor<6x2x3x3xf32>' expects 2 x 1 groups}}
  // expected-error @+1 {{'kiln.conv2d' op failed to infer returned types}}
  %0 = "kiln.conv2d"(%x, %w) : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

// Tests that conv2d needs groups dividing the output channels.
func.func @conv2d_groups(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) {
  // expected-error @+2 {{groups 4 does not divide the 6 output channels}}
  // expected-error @+1 {{'kiln.conv2d' op failed to infer returned types}}
  %0 = "kiln.conv2d"(%x, %w) <{groups = 4 : i64}> : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

// Tests that conv2d needs groups >= 1.
func.func @conv2d_groups_zero(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) {
  // expected-error @+2 {{groups must be >= 1, got 0}}
  // expected-error @+1 {{'kiln.conv2d' op failed to infer returned types}}
  %0 = "kiln.conv2d"(%x, %w) <{groups = 0 : i64}> : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

// Tests that conv2d needs two strides >= 1.
func.func @conv2d_stride(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) {
  // expected-error @+2 {{stride entries must be >= 1, got 0}}
  // expected-error @+1 {{'kiln.conv2d' op failed to infer returned types}}
  %0 = "kiln.conv2d"(%x, %w) <{groups = 2 : i64, stride = array<i64: 0, 1>}> : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

// Tests that conv2d needs four padding entries.
func.func @conv2d_padding(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) {
  // expected-error @+2 {{padding must have 4 entries, got 2}}
  // expected-error @+1 {{'kiln.conv2d' op failed to infer returned types}}
  %0 = "kiln.conv2d"(%x, %w) <{groups = 2 : i64, padding = array<i64: 1, 1>}> : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

// Tests that conv2d rejects a window larger than the padded input.
func.func @conv2d_empty(%x: tensor<1x4x2x8xf32>, %w: tensor<6x2x3x3xf32>) {
  // expected-error @+2 {{the output would be empty: input 'tensor<1x4x2x8xf32>' is smaller than the window in dim 2}}
  // expected-error @+1 {{'kiln.conv2d' op failed to infer returned types}}
  %0 = "kiln.conv2d"(%x, %w) <{groups = 2 : i64}> : (tensor<1x4x2x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x1x6xf32>
  return
}

// -----

// Tests that conv2d needs a static kernel.
func.func @conv2d_dynamic_kernel(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x?x3xf32>) {
  // expected-error @+2 {{the kernel size must be static, got 'tensor<6x2x?x3xf32>'}}
  // expected-error @+1 {{'kiln.conv2d' op failed to infer returned types}}
  %0 = "kiln.conv2d"(%x, %w) <{groups = 2 : i64}> : (tensor<1x4x8x8xf32>, tensor<6x2x?x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

// Tests that conv2d operands share an element type.
func.func @conv2d_element_type(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf16>) {
  // expected-error @+2 {{input and weight have different element types ('f32' vs 'f16')}}
  // expected-error @+1 {{'kiln.conv2d' op failed to infer returned types}}
  %0 = "kiln.conv2d"(%x, %w) : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf16>) -> tensor<1x6x6x6xf32>
  return
}

// -----

// Tests that max_pool2d needs a 4-D input.
func.func @max_pool2d_rank(%x: tensor<4x8x8xf32>) {
  // expected-error @+2 {{input must be 4-D [N, C, H, W], got 'tensor<4x8x8xf32>'}}
  // expected-error @+1 {{'kiln.max_pool2d' op failed to infer returned types}}
  %0 = "kiln.max_pool2d"(%x) <{kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>}> : (tensor<4x8x8xf32>) -> tensor<4x4x4xf32>
  return
}

// -----

// Tests that max_pool2d limits padding to half the kernel (as torch).
func.func @max_pool2d_padding(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+2 {{padding 2 must be at most half the kernel size 2}}
  // expected-error @+1 {{'kiln.max_pool2d' op failed to infer returned types}}
  %0 = "kiln.max_pool2d"(%x) <{kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 2, 0>}> : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  return
}

// -----

// Tests that max_pool2d needs two kernel entries.
func.func @max_pool2d_kernel(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+2 {{kernel must have 2 entries, got 1}}
  // expected-error @+1 {{'kiln.max_pool2d' op failed to infer returned types}}
  %0 = "kiln.max_pool2d"(%x) <{kernel = array<i64: 2>, stride = array<i64: 2, 2>}> : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  return
}

// -----

// Tests that max_pool2d needs dilation >= 1.
func.func @max_pool2d_dilation(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+2 {{dilation entries must be >= 1, got 0}}
  // expected-error @+1 {{'kiln.max_pool2d' op failed to infer returned types}}
  %0 = "kiln.max_pool2d"(%x) <{kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, dilation = array<i64: 0, 1>}> : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  return
}

// -----

// Tests that avg_pool2d rejects a negative divisor_override.
func.func @avg_pool2d_divisor(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+2 {{divisor_override must be >= 0, got -1}}
  // expected-error @+1 {{'kiln.avg_pool2d' op failed to infer returned types}}
  %0 = "kiln.avg_pool2d"(%x) <{kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, divisor_override = -1 : i64}> : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  return
}

// -----

// Tests that avg_pool2d rejects a kernel larger than the input.
func.func @avg_pool2d_empty(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+2 {{the output would be empty: input 'tensor<1x4x8x8xf32>' is smaller than the window in dim 3}}
  // expected-error @+1 {{'kiln.avg_pool2d' op failed to infer returned types}}
  %0 = "kiln.avg_pool2d"(%x) <{kernel = array<i64: 2, 9>, stride = array<i64: 2, 2>}> : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x1xf32>
  return
}
