//===- KilnShapeOps.td - shape manipulation ----------------*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Ops of the `kiln` dialect: shape manipulation. Included by ir/KilnOps.td,
// the dialect's one ODS root (one set of generated classes, one op reference).
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNSHAPEOPS_TD
#define KILN_IR_KILNSHAPEOPS_TD

include "ir/KilnBase.td"

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
    dim; a bound < 0 counts from the end of the dim (a start `size + start`,
    an end `size + 1 + end`, so `end = -1` is the end and `-2` drops the last
    element: how a slice of a symbolic dim, `x[:, 1:-1]`, keeps its bounds).
    The frontend applies Python's clamping. With the bounds resolved,
    `0 <= start <= end <= size` and `step >= 1` (torch rejects negative
    steps) are verified; along a dynamic operand dim a start from the front
    with an end from the end gives a dynamic result dim, bounds both from
    the front or both from the end a static one (a start from the end with
    an end from the front is rejected). `end = -1` with `start = 0` and
    `step = 1` keeps the whole dim, static or dynamic (the result dim is the
    operand's: how an index keeps a symbolic dim). Integer indexing (`x[2]`, `Tensor.select`) is a
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
    affect the gradient: the capture records them as discardable attributes
    (`kiln.padding_idx` (i64, the row without gradient), `kiln.scale_grad_by_freq`,
    `kiln.sparse`) for kiln-autodiff's rule, which refuses the last two;
    `max_norm` (which rewrites `weight` in place) is not captured.

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

#endif // KILN_IR_KILNSHAPEOPS_TD
