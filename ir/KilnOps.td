//===- KilnOps.td - kiln dialect ops --------------------------*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The ops of the `kiln` dialect, grouped by category: constants and casts,
// elementwise (unary, binary, comparison, select) and linear algebra here;
// shape manipulation (KilnShapeOps.td), reductions and normalizations
// (KilnReductionOps.td), neural-network layers (KilnNNOps.td) and random
// numbers (KilnRandomOps.td) in the files included at the end.
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

/// Element types that division with rounding accepts: floats and signed
/// integers other than i1.
def Kiln_DivisibleTensor : RankedTensorOf<[AnyFloat, I8, I16, I32, I64]>;

def Kiln_FmodOp : Kiln_BroadcastingBinaryOp<"fmod", Kiln_DivisibleTensor,
                                            Kiln_DivisibleTensor> {
  let summary = "Broadcasting truncated remainder (torch.fmod)";
  let description = [{
    `lhs - trunc(lhs / rhs) * rhs` computed exactly, with the sign of `lhs`
    (C's `fmod` and integer `%`), as torch.fmod. Floats follow IEEE `fmod`:
    a zero divisor or an infinite dividend gives NaN, an infinite divisor
    gives `lhs`. Python's `%` (torch.remainder, the sign of the divisor) is
    captured as `fmod` plus `rhs` where the signs differ.

    Integers: eager raises on a zero divisor; here a zero divisor gives 0 (the
    frontend emits integer `fmod` only with a nonzero constant divisor) and
    `INT_MIN fmod -1` is 0, so the op never traps.

    Example:
    ```mlir
    %0 = kiln.fmod %a, %b : tensor<4x8xf32>, tensor<f32>
    ```
  }];
}

def Kiln_FloorDivOp : Kiln_BroadcastingBinaryOp<"floor_div", Kiln_DivisibleTensor,
                                                Kiln_DivisibleTensor> {
  let summary = "Broadcasting floor division (torch.floor_divide, Python //)";
  let description = [{
    `floor(lhs / rhs)` with eager torch's rounding. Floats use torch's
    fmod-based algorithm, not `floor(lhs / rhs)`: `div = (lhs - fmod(lhs,
    rhs)) / rhs`, minus one where the remainder and the divisor differ in
    sign, then rounded to the nearest integer (so `1.0 // 0.1` is 9, as in
    Python and torch, where `floor(1.0 / 0.1)` is 10); a zero quotient keeps
    the sign of `lhs / rhs` and a zero divisor gives `lhs / rhs` (±inf or
    NaN). No fast-math flags: the true division is never turned into a
    multiplication by a reciprocal.

    Integers round toward negative infinity (`-7 // 2 == -4`). Eager raises
    on a zero divisor; here it gives `lhs` (the frontend emits integer
    `floor_div` only with a nonzero constant divisor) and `INT_MIN // -1`
    wraps to `INT_MIN`, so the op never traps.

    Example:
    ```mlir
    %0 = kiln.floor_div %a, %b : tensor<4x8xi64>, tensor<i64>
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

include "ir/KilnShapeOps.td"
include "ir/KilnReductionOps.td"
include "ir/KilnNNOps.td"
include "ir/KilnRandomOps.td"

#endif // KILN_OPS_TD
