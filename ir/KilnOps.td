//===- KilnOps.td - kiln dialect ops --------------------------*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The ops of the `kiln` dialect, grouped by category: constants and casts,
// elementwise (unary, binary, comparison, select), linear algebra, shape
// manipulation, reductions and normalizations.
//===----------------------------------------------------------------------===//

#ifndef KILN_OPS_TD
#define KILN_OPS_TD

include "ir/KilnBase.td"

//===----------------------------------------------------------------------===//
// Constants and casts
//===----------------------------------------------------------------------===//

def Kiln_ConstantOp : Kiln_Op<"constant", [ConstantLike,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "Tensor constant (torch.tensor / Python scalars)";
  let description = [{
    Materializes a dense tensor constant. The frontend uses it for Python
    scalars that take part in tensor arithmetic (as 0-d tensors of the
    promoted element type) and for tensors captured as constants. The result
    type is the type of `value`.

    Example:
    ```mlir
    %c = kiln.constant dense<2.000000e+00> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Kiln_CastOp : Kiln_Op<"cast", [SameOperandsAndResultShape]> {
  let summary = "Element type conversion (Tensor.to(dtype))";
  let description = [{
    Converts each element to the result's element type, as `Tensor.to(dtype)`
    does: float→int truncates toward zero, int→float rounds to nearest,
    x→i1 is `x != 0`, i1→x gives 0 or 1. Shapes must match (verified).
    A cast to the operand's own type folds away.

    Example:
    ```mlir
    %0 = kiln.cast %x : tensor<4xi64> -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise unary
//===----------------------------------------------------------------------===//

def Kiln_NegOp : Kiln_UnaryOp<"neg"> {
  let summary = "Elementwise negation (torch.neg)";
  let description = [{
    `-x` elementwise; integers wrap. `neg(neg(x))` folds to `x`.

    Example:
    ```mlir
    %0 = kiln.neg %x : tensor<4xf32>
    ```
  }];
  let hasFolder = 1;
}

def Kiln_AbsOp : Kiln_UnaryOp<"abs"> {
  let summary = "Elementwise absolute value (torch.abs)";
  let description = [{
    `|x|` elementwise.

    Example:
    ```mlir
    %0 = kiln.abs %x : tensor<4xf32>
    ```
  }];
}

def Kiln_ReluOp : Kiln_UnaryOp<"relu"> {
  let summary = "Rectified linear unit (torch.relu)";
  let description = [{
    `max(x, 0)` elementwise. NaN propagates, as in torch.

    Example:
    ```mlir
    %0 = kiln.relu %x : tensor<4x8xf32>
    ```
  }];
}

def Kiln_ExpOp : Kiln_UnaryFloatOp<"exp"> {
  let summary = "Elementwise e^x (torch.exp)";
  let description = [{
    Example:
    ```mlir
    %0 = kiln.exp %x : tensor<4xf32>
    ```
  }];
}

def Kiln_LogOp : Kiln_UnaryFloatOp<"log"> {
  let summary = "Elementwise natural logarithm (torch.log)";
  let description = [{
    `log(0) = -inf`, `log(x<0) = NaN`, as in torch.

    Example:
    ```mlir
    %0 = kiln.log %x : tensor<4xf32>
    ```
  }];
}

def Kiln_TanhOp : Kiln_UnaryFloatOp<"tanh"> {
  let summary = "Elementwise hyperbolic tangent (torch.tanh)";
  let description = [{
    Example:
    ```mlir
    %0 = kiln.tanh %x : tensor<4xf32>
    ```
  }];
}

def Kiln_SigmoidOp : Kiln_UnaryFloatOp<"sigmoid"> {
  let summary = "Logistic sigmoid 1/(1+e^-x) (torch.sigmoid)";
  let description = [{
    Example:
    ```mlir
    %0 = kiln.sigmoid %x : tensor<4xf32>
    ```
  }];
}

def Kiln_GeluOp : Kiln_UnaryFloatOp<"gelu"> {
  let summary = "Gaussian error linear unit (torch.nn.functional.gelu)";
  let description = [{
    `approximate = "none"` (default) computes `x * 0.5 * (1 + erf(x/sqrt(2)))`;
    `approximate = "tanh"` computes
    `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`, matching the
    torch argument of the same name. Other values are rejected by the
    verifier.

    Example:
    ```mlir
    %0 = kiln.gelu %x : tensor<4xf32>
    %1 = kiln.gelu %x {approximate = "tanh"} : tensor<4xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input,
                   DefaultValuedAttr<StrAttr, "\"none\"">:$approximate);
  let hasVerifier = 1;
}

def Kiln_SiluOp : Kiln_UnaryFloatOp<"silu"> {
  let summary = "x * sigmoid(x) (torch.nn.functional.silu)";
  let description = [{
    Example:
    ```mlir
    %0 = kiln.silu %x : tensor<4xf32>
    ```
  }];
}

def Kiln_SqrtOp : Kiln_UnaryFloatOp<"sqrt"> {
  let summary = "Elementwise square root (torch.sqrt)";
  let description = [{
    Negative inputs give NaN.

    Example:
    ```mlir
    %0 = kiln.sqrt %x : tensor<4xf32>
    ```
  }];
}

def Kiln_RsqrtOp : Kiln_UnaryFloatOp<"rsqrt"> {
  let summary = "Elementwise reciprocal square root (torch.rsqrt)";
  let description = [{
    `1/sqrt(x)`; `rsqrt(0) = inf`.

    Example:
    ```mlir
    %0 = kiln.rsqrt %x : tensor<4xf32>
    ```
  }];
}

def Kiln_ErfOp : Kiln_UnaryFloatOp<"erf"> {
  let summary = "Elementwise Gauss error function (torch.erf)";
  let description = [{
    Example:
    ```mlir
    %0 = kiln.erf %x : tensor<4xf32>
    ```
  }];
}

def Kiln_SinOp : Kiln_UnaryFloatOp<"sin"> {
  let summary = "Elementwise sine (torch.sin)";
  let description = [{
    Example:
    ```mlir
    %0 = kiln.sin %x : tensor<4xf32>
    ```
  }];
}

def Kiln_CosOp : Kiln_UnaryFloatOp<"cos"> {
  let summary = "Elementwise cosine (torch.cos)";
  let description = [{
    Example:
    ```mlir
    %0 = kiln.cos %x : tensor<4xf32>
    ```
  }];
}

def Kiln_TanOp : Kiln_UnaryFloatOp<"tan"> {
  let summary = "Elementwise tangent (torch.tan)";
  let description = [{
    Example:
    ```mlir
    %0 = kiln.tan %x : tensor<4xf32>
    ```
  }];
}

def Kiln_AtanOp : Kiln_UnaryFloatOp<"atan"> {
  let summary = "Elementwise arc tangent (torch.atan)";
  let description = [{
    Example:
    ```mlir
    %0 = kiln.atan %x : tensor<4xf32>
    ```
  }];
}

def Kiln_FloorOp : Kiln_UnaryFloatOp<"floor"> {
  let summary = "Round toward -inf (torch.floor)";
  let description = [{
    Integer tensors are passed through by the frontend (torch.floor of an integer tensor is a copy).

    Example:
    ```mlir
    %0 = kiln.floor %x : tensor<4xf32>
    ```
  }];
}

def Kiln_CeilOp : Kiln_UnaryFloatOp<"ceil"> {
  let summary = "Round toward +inf (torch.ceil)";
  let description = [{
    Integer tensors are passed through by the frontend.

    Example:
    ```mlir
    %0 = kiln.ceil %x : tensor<4xf32>
    ```
  }];
}

def Kiln_RoundOp : Kiln_UnaryFloatOp<"round"> {
  let summary = "Round half to even (torch.round)";
  let description = [{
    Ties go to the even neighbour (`round(2.5) = 2`), as torch does; `decimals` is not part of the op (the frontend scales).

    Example:
    ```mlir
    %0 = kiln.round %x : tensor<4xf32>
    ```
  }];
}

def Kiln_TruncOp : Kiln_UnaryFloatOp<"trunc"> {
  let summary = "Round toward zero (torch.trunc)";
  let description = [{
    Integer tensors are passed through by the frontend.

    Example:
    ```mlir
    %0 = kiln.trunc %x : tensor<4xf32>
    ```
  }];
}

def Kiln_Log1pOp : Kiln_UnaryFloatOp<"log1p"> {
  let summary = "log(1 + x), accurate near 0 (torch.log1p)";
  let description = [{
    Example:
    ```mlir
    %0 = kiln.log1p %x : tensor<4xf32>
    ```
  }];
}

def Kiln_Expm1Op : Kiln_UnaryFloatOp<"expm1"> {
  let summary = "e^x - 1, accurate near 0 (torch.expm1)";
  let description = [{
    Example:
    ```mlir
    %0 = kiln.expm1 %x : tensor<4xf32>
    ```
  }];
}

def Kiln_Log2Op : Kiln_UnaryFloatOp<"log2"> {
  let summary = "Base-2 logarithm (torch.log2)";
  let description = [{
    Example:
    ```mlir
    %0 = kiln.log2 %x : tensor<4xf32>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise binary (broadcasting)
//===----------------------------------------------------------------------===//

def Kiln_AddOp : Kiln_BroadcastingBinaryOp<"add", Kiln_Tensor, Kiln_Tensor, [Commutative]> {
  let summary = "Broadcasting addition (torch.add without alpha)";
  let description = [{
    `lhs + rhs` with torch broadcasting. Operands must share an element type
    (the frontend makes torch's type promotion explicit with `kiln.cast`);
    the result shape is inferred. `torch.add(a, b, alpha=k)` is captured as
    `add(a, mul(b, k))`. Adding a splat zero of the result type folds away
    only when it is `-0.0` or an integer zero (x + 0.0 is not x for x = -0.0).

    Example:
    ```mlir
    %0 = kiln.add %a, %b : tensor<4x8xf32>, tensor<8xf32>
    ```
  }];
  let hasFolder = 1;
}

def Kiln_SubOp : Kiln_BroadcastingBinaryOp<"sub"> {
  let summary = "Broadcasting subtraction (torch.sub without alpha)";
  let description = [{
    `lhs - rhs` with broadcasting; same element type rules as `kiln.add`.

    Example:
    ```mlir
    %0 = kiln.sub %a, %b : tensor<4x8xf32>, tensor<4x1xf32>
    ```
  }];
}

def Kiln_MulOp : Kiln_BroadcastingBinaryOp<"mul", Kiln_Tensor, Kiln_Tensor, [Commutative]> {
  let summary = "Broadcasting multiplication (torch.mul)";
  let description = [{
    `lhs * rhs` with broadcasting. Multiplying by a splat one folds away when
    the shapes already agree.

    Example:
    ```mlir
    %0 = kiln.mul %a, %b : tensor<4x8xf32>, tensor<f32>
    ```
  }];
  let hasFolder = 1;
}

def Kiln_DivOp : Kiln_BroadcastingBinaryOp<"div", Kiln_FloatTensor, Kiln_FloatTensor> {
  let summary = "Broadcasting true division (torch.div)";
  let description = [{
    `lhs / rhs` on floats with IEEE semantics (x/0 = ±inf, 0/0 = NaN). Integer
    true division is captured as casts to the default float type first, as
    torch promotes it.

    Example:
    ```mlir
    %0 = kiln.div %a, %b : tensor<4x8xf32>, tensor<f32>
    ```
  }];
}

def Kiln_PowOp : Kiln_BroadcastingBinaryOp<"pow", Kiln_FloatTensor, Kiln_FloatTensor> {
  let summary = "Broadcasting power (torch.pow)";
  let description = [{
    `lhs ** rhs` on floats.

    Example:
    ```mlir
    %0 = kiln.pow %a, %b : tensor<4xf32>, tensor<f32>
    ```
  }];
}

def Kiln_MaximumOp : Kiln_BroadcastingBinaryOp<"maximum", Kiln_Tensor, Kiln_Tensor, [Commutative]> {
  let summary = "Broadcasting elementwise maximum (torch.maximum)";
  let description = [{
    NaN in either operand gives NaN, as in torch.

    Example:
    ```mlir
    %0 = kiln.maximum %a, %b : tensor<4xf32>, tensor<4xf32>
    ```
  }];
}

def Kiln_MinimumOp : Kiln_BroadcastingBinaryOp<"minimum", Kiln_Tensor, Kiln_Tensor, [Commutative]> {
  let summary = "Broadcasting elementwise minimum (torch.minimum)";
  let description = [{
    NaN in either operand gives NaN, as in torch.

    Example:
    ```mlir
    %0 = kiln.minimum %a, %b : tensor<4xf32>, tensor<4xf32>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Comparisons and select
//===----------------------------------------------------------------------===//

def Kiln_EqOp : Kiln_CompareOp<"eq"> {
  let summary = "Broadcasting equality (torch.eq), i1 result";
  let description = [{
    Ordered comparison: any comparison with NaN is false (except `ne`).

    Example:
    ```mlir
    %0 = kiln.eq %a, %b : tensor<4xf32>, tensor<f32>
    ```
  }];
}

def Kiln_NeOp : Kiln_CompareOp<"ne"> {
  let summary = "Broadcasting inequality (torch.ne), i1 result";
  let description = [{
    True when either operand is NaN.

    Example:
    ```mlir
    %0 = kiln.ne %a, %b : tensor<4xi64>, tensor<4xi64>
    ```
  }];
}

def Kiln_LtOp : Kiln_CompareOp<"lt"> {
  let summary = "Broadcasting less-than (torch.lt), i1 result";
  let description = [{
    Example:
    ```mlir
    %0 = kiln.lt %a, %b : tensor<4xf32>, tensor<f32>
    ```
  }];
}

def Kiln_LeOp : Kiln_CompareOp<"le"> {
  let summary = "Broadcasting less-or-equal (torch.le), i1 result";
  let description = [{
    Example:
    ```mlir
    %0 = kiln.le %a, %b : tensor<4xf32>, tensor<f32>
    ```
  }];
}

def Kiln_GtOp : Kiln_CompareOp<"gt"> {
  let summary = "Broadcasting greater-than (torch.gt), i1 result";
  let description = [{
    Example:
    ```mlir
    %0 = kiln.gt %a, %b : tensor<4xf32>, tensor<f32>
    ```
  }];
}

def Kiln_GeOp : Kiln_CompareOp<"ge"> {
  let summary = "Broadcasting greater-or-equal (torch.ge), i1 result";
  let description = [{
    Example:
    ```mlir
    %0 = kiln.ge %a, %b : tensor<4xf32>, tensor<f32>
    ```
  }];
}

def Kiln_SelectOp : Kiln_Op<"select", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "Broadcasting elementwise choice (torch.where)";
  let description = [{
    `cond ? on_true : on_false` with all three operands broadcast together.
    `cond` is i1; `on_true` and `on_false` share an element type.

    Example:
    ```mlir
    %0 = kiln.select %c, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Kiln_BoolTensor:$condition, Kiln_Tensor:$on_true,
                   Kiln_Tensor:$on_false);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $on_true `,` $on_false attr-dict `:` type($condition) `,`
    type($on_true) `,` type($on_false)
  }];
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def Kiln_MatmulOp : Kiln_Op<"matmul", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "Batched matrix product (torch.matmul for rank >= 2)";
  let description = [{
    `lhs: [..., M, K]`, `rhs: [..., K, N]` → `[..., M, N]`, where the batch
    dims `...` broadcast like elementwise ops (either side may have none).
    Both operands have rank ≥ 2 (the frontend reshapes 1-D operands as torch
    does) and share a float element type. The verifier checks the
    contraction dims agree when both are static. `F.linear(x, w, b)` is
    captured as `add(matmul(x, permute(w, [1, 0])), b)`; codegen recognizes
    the transposed right operand and does not materialize it.

    Example:
    ```mlir
    %0 = kiln.matmul %a, %b : tensor<8x4x16xf32>, tensor<16x32xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$lhs, Kiln_FloatTensor:$rhs);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

def Kiln_PermuteOp : Kiln_Op<"permute", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "Dimension permutation (torch.permute, transpose, .T)";
  let description = [{
    Result dim `i` is operand dim `dims[i]`; `dims` must be a permutation of
    `0..rank-1` (verified). The identity permutation folds away, and two
    permutes in a row fold into one.

    Example:
    ```mlir
    %0 = kiln.permute %x {dims = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$dims);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def Kiln_ReshapeOp : Kiln_Op<"reshape"> {
  let summary = "Shape change keeping row-major element order (torch.reshape/view)";
  let description = [{
    The result type gives the new shape. Element types must match and, when
    both shapes are static, so must the element counts (verified). A reshape
    to the operand's own type folds away; a reshape of a reshape folds to one.
    Value semantics: unlike `Tensor.view`, the result never aliases.

    Example:
    ```mlir
    %0 = kiln.reshape %x : tensor<4x8xf32> -> tensor<32xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_BroadcastToOp : Kiln_Op<"broadcast_to"> {
  let summary = "Broadcast to a larger shape (torch.broadcast_to / expand)";
  let description = [{
    The result type gives the target shape. The operand's dims, aligned from
    the trailing end, must each be 1 or equal to the target dim (verified);
    the result rank must be ≥ the operand rank. Broadcasting to the operand's
    own type folds away.

    Example:
    ```mlir
    %0 = kiln.broadcast_to %x : tensor<1x8xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_SliceOp : Kiln_Op<"slice", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "Strided static slice (x[a:b:s, ...], torch.narrow)";
  let description = [{
    Keeps, along each dim `i`, the elements `start[i], start[i] + step[i], ...`
    below `end[i]`: result dim `i` has `ceil((end[i] - start[i]) / step[i])`
    elements (inferred). `start`, `end` and `step` have one entry per operand
    dim and are normalized by the frontend (Python's negative indices and
    clamping already applied): `0 <= start <= end <= size` and `step >= 1`
    (torch rejects negative steps), all verified; a dynamic operand dim only
    checks `start <= end`. `end = -1` with `start = 0` and `step = 1`
    keeps the whole dim, static or dynamic (the result dim is the operand's:
    how an index keeps a symbolic dim). Integer indexing (`x[2]`, `Tensor.select`) is a
    slice of length 1 followed by a `kiln.reshape` that drops the dim; `None`
    in an index is a reshape adding a dim. A slice that keeps every element
    (start 0, result type = operand type) folds away. Value semantics: the
    result never aliases the operand (eager returns a view).

    Example:
    ```mlir
    %0 = kiln.slice %x {start = array<i64: 0, 1>, end = array<i64: 4, 7>, step = array<i64: 1, 2>} : tensor<4x8xf32> -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$start,
                   DenseI64ArrayAttr:$end, DenseI64ArrayAttr:$step);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def Kiln_ConcatOp : Kiln_Op<"concat", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "Concatenation along one dim (torch.cat / torch.stack)";
  let description = [{
    Joins one or more operands along `dim` (normalized, `0 <= dim < rank`).
    Operands share a rank (>= 1) and an element type (the frontend promotes
    with `kiln.cast`, as torch.cat does) and agree on every other dim
    (verified when static). The result dim `dim` is the sum of the operands'
    (inferred). `torch.stack` is captured as a `kiln.reshape` adding the new
    dim to each operand, then a concat. torch.cat's legacy rule that skips
    1-D empty operands is applied by the frontend. A concat of one operand
    folds to it.

    Example:
    ```mlir
    %0 = kiln.concat %a, %b {dim = 1 : i64} : tensor<2x3xf32>, tensor<2x5xf32> -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Kiln_Tensor>:$inputs, I64Attr:$dim);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($result)";
  let hasFolder = 1;
}

def Kiln_EmbeddingOp : Kiln_Op<"embedding", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "Row lookup (torch.nn.functional.embedding, nn.Embedding)";
  let description = [{
    `result[i..., j] = weight[indices[i...], j]`: `weight` is 2-D
    `[num_embeddings, embedding_dim]`, `indices` any rank with an `i64` or
    `i32` element type; the result has shape `indices.shape + [embedding_dim]`
    and weight's element type (inferred).

    Out-of-range indices: eager raises `IndexError` for an index outside
    `[0, num_embeddings)`. kiln cannot: the indices are data, known only
    inside the compiled function, and a guard cannot look at them. Instead
    each index is clamped into `[0, num_embeddings - 1]` before the read, so
    an invalid index never reads outside `weight` but silently gives the
    first or last row. `padding_idx`, `scale_grad_by_freq` and `sparse` only
    affect the gradient and are ignored; `max_norm` (which rewrites `weight`
    in place) is not captured.

    Example:
    ```mlir
    %0 = kiln.embedding %w, %idx : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$weight, Kiln_Tensor:$indices);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $weight `,` $indices attr-dict `:` type($weight) `,` type($indices) `->` type($result)
  }];
}

def Kiln_GatherOp : Kiln_Op<"gather", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "Gather along one dim (torch.gather, index_select, flip)";
  let description = [{
    `result[i...] = input[i_0, ..., index[i...], ..., i_(r-1)]` with the
    index taken at position `dim`: torch.gather. `index` is i64 with the
    operand's rank and, in every dim but `dim`, a size no larger than the
    operand's (verified when static); the result has `index`'s shape and
    the operand's element type (inferred). `torch.index_select` is captured
    as a gather with the index reshaped and broadcast along the other dims,
    and `torch.flip` as a gather with a constant reversed index.

    Out-of-range indices: eager raises; kiln clamps each index into
    `[0, size - 1]` (as `kiln.embedding`, the indices are data that no guard
    can check), so a read never leaves the operand.

    Example:
    ```mlir
    %0 = kiln.gather %x, %idx {dim = 1 : i64} : tensor<4x8xf32>, tensor<4x3xi64> -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, RankedTensorOf<[I64]>:$index, I64Attr:$dim);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $index attr-dict `:` type($input) `,` type($index) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

def Kiln_SumOp : Kiln_ReductionOp<"sum"> {
  let summary = "Sum over dims (torch.sum(x, dim, keepdim))";
  let description = [{
    Integer sums accumulate in the operand type (the frontend casts bool/int32
    inputs to i64 first, as torch does). An empty `dims` reduces nothing.

    Example:
    ```mlir
    %0 = kiln.sum %x {dims = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
    ```
  }];
}

def Kiln_MeanOp : Kiln_ReductionOp<"mean", Kiln_FloatTensor> {
  let summary = "Mean over dims (torch.mean(x, dim, keepdim))";
  let description = [{
    Float only, as in torch.

    Example:
    ```mlir
    %0 = kiln.mean %x {dims = array<i64: 0, 1>, keepdim = true} : tensor<4x8xf32> -> tensor<1x1xf32>
    ```
  }];
}

def Kiln_MaxOp : Kiln_ReductionOp<"max"> {
  let summary = "Maximum over dims (torch.amax(x, dim, keepdim))";
  let description = [{
    Values only (indices are not produced). NaN propagates.

    Example:
    ```mlir
    %0 = kiln.max %x {dims = array<i64: 1>, keepdim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
    ```
  }];
}

def Kiln_MinOp : Kiln_ReductionOp<"min"> {
  let summary = "Minimum over dims (torch.amin(x, dim, keepdim))";
  let description = [{
    Values only. NaN propagates, as in torch.

    Example:
    ```mlir
    %0 = kiln.min %x {dims = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
    ```
  }];
}

def Kiln_ProdOp : Kiln_ReductionOp<"prod"> {
  let summary = "Product over dims (torch.prod(x, dim, keepdim))";
  let description = [{
    Integer products accumulate in the operand type (the frontend casts
    bool/int32 inputs to i64 first, as torch does); f16/bf16 accumulate in
    f32 and round once.

    Example:
    ```mlir
    %0 = kiln.prod %x {dims = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
    ```
  }];
}

/// Index of the extreme element along one dim; i64 result.
class Kiln_ArgReductionOp<string mnemonic>
    : Kiln_Op<mnemonic, [DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let arguments = (ins Kiln_Tensor:$input, I64Attr:$dim,
                   DefaultValuedAttr<BoolAttr, "false">:$keepdim);
  let results = (outs RankedTensorOf<[I64]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Kiln_ArgmaxOp : Kiln_ArgReductionOp<"argmax"> {
  let summary = "Index of the maximum along a dim (torch.argmax(x, dim, keepdim))";
  let description = [{
    The first index of the largest element along `dim` (`0 <= dim < rank`,
    verified; a 0-d operand takes `dim = 0` and gives 0). NaN counts as
    larger than every number, so the first NaN wins, as in torch. The
    result is i64 with `dim` removed (kept as 1 with `keepdim`). The operand
    must not be i1 (torch rejects bool) and the reduced dim must not be
    empty (verified when static). `torch.argmax(x)` without a dim is
    captured on the flattened tensor.

    Example:
    ```mlir
    %0 = kiln.argmax %x {dim = 1 : i64} : tensor<4x8xf32> -> tensor<4xi64>
    ```
  }];
  let hasVerifier = 1;
}

def Kiln_ArgminOp : Kiln_ArgReductionOp<"argmin"> {
  let summary = "Index of the minimum along a dim (torch.argmin(x, dim, keepdim))";
  let description = [{
    As `kiln.argmax` with the smallest element (NaN still wins).

    Example:
    ```mlir
    %0 = kiln.argmin %x {dim = 0 : i64, keepdim = true} : tensor<4x8xi64> -> tensor<1x8xi64>
    ```
  }];
  let hasVerifier = 1;
}

def Kiln_CumsumOp : Kiln_Op<"cumsum", [SameOperandsAndResultType]> {
  let summary = "Inclusive prefix sum along a dim (torch.cumsum)";
  let description = [{
    `result[..., i, ...] = sum(input[..., 0..i, ...])` along `dim`
    (`0 <= dim < max(rank, 1)`, verified). Same type as the operand: the
    frontend casts bool/int inputs to i64 and f16/bf16 to f32 first, as
    torch accumulates. The CPU lowering is a reducing `linalg.generic` over
    (i, j <= i), quadratic in the dim size.

    Example:
    ```mlir
    %0 = kiln.cumsum %x {dim = 1 : i64} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, I64Attr:$dim);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

def Kiln_SoftmaxOp : Kiln_Op<"softmax", [SameOperandsAndResultType]> {
  let summary = "Softmax along one dim (torch.softmax(x, dim))";
  let description = [{
    `exp(x - max) / sum(exp(x - max))` along `dim` (0 ≤ dim < rank,
    verified). Decomposed into reductions and elementwise ops by
    `kiln-decompose`.

    Example:
    ```mlir
    %0 = kiln.softmax %x {dim = 1 : i64} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, I64Attr:$dim);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Kiln_LayerNormOp : Kiln_Op<"layer_norm", [AttrSizedOperandSegments,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "Layer normalization over trailing dims (torch.nn.functional.layer_norm)";
  let description = [{
    Normalizes over the last `num_dims` dims (torch's `normalized_shape` is
    the operand's trailing shape): `(x - mean) / sqrt(var + eps)` with the
    biased variance, then `* weight + bias` when given. `weight` and `bias`,
    when present, have exactly the normalized shape and the input's element
    type (verified); 1 ≤ num_dims ≤ rank. Decomposed by `kiln-decompose`.
    In the custom form the types of `weight` and `bias` follow the input's
    type, in that order, for those that are present.

    Example:
    ```mlir
    %0 = kiln.layer_norm %x weight %w bias %b {num_dims = 1 : i64, eps = 1.0e-05 : f64} : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input,
                   Optional<Kiln_FloatTensor>:$weight,
                   Optional<Kiln_FloatTensor>:$bias,
                   I64Attr:$num_dims,
                   DefaultValuedAttr<F64Attr, "1.0e-5">:$eps);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`weight` $weight^)? (`bias` $bias^)? attr-dict `:` type($input)
    `` custom<LayerNormAffineTypes>(ref($weight), ref($bias), type($weight), type($bias))
  }];
  let hasVerifier = 1;
}

include "ir/KilnNNOps.td"

#endif // KILN_OPS_TD
