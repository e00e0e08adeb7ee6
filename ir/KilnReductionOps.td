//===- KilnReductionOps.td - reductions and normalizations -*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Ops of the `kiln` dialect: reductions and normalizations. Included by
// ir/KilnOps.td, the dialect's one ODS root (one set of generated classes,
// one op reference).
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNREDUCTIONOPS_TD
#define KILN_IR_KILNREDUCTIONOPS_TD

include "ir/KilnBase.td"

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
    (i, j <= i), quadratic in the dim size; kiln-decompose splits a static
    dim of 1024 or more into blocks of 64 first.

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

#endif // KILN_IR_KILNREDUCTIONOPS_TD
