//===- KilnNNOps.td - convolution and pooling ops -------------*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The neural-network ops of the `kiln` dialect that work on NCHW images:
// 2-D convolution and max/average pooling. All three are composite:
// `kiln-decompose` rewrites them into the primitive set (strided
// `kiln.slice`s of the padded input, then `kiln.matmul` for convolution and
// `kiln.maximum` / `kiln.add` chains for pooling), so codegen never sees
// them. 1-D and 3-D-input (unbatched) forms are captured as these ops on
// reshaped operands.
//===----------------------------------------------------------------------===//

#ifndef KILN_NN_OPS_TD
#define KILN_NN_OPS_TD

include "ir/KilnBase.td"

def Kiln_Conv2dOp : Kiln_Op<"conv2d", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "2-D convolution, NCHW (torch.nn.functional.conv2d without bias)";
  let description = [{
    `input: [N, C, H, W]`, `weight: [F, C / groups, KH, KW]` →
    `[N, F, OH, OW]` with `OH = (H + pad_top + pad_bottom - dilation[0] *
    (KH - 1) - 1) / stride[0] + 1` (floor) and likewise for W, as torch's
    cross-correlation. Attributes: `stride` and `dilation` (2 entries, each
    >= 1, default 1), `padding` (4 entries: top, bottom, left, right, each
    >= 0, default 0; zeros are read there) and `groups` (>= 1, dividing both
    C and F, default 1). torch's symmetric padding gives equal pairs;
    `padding='same'` can be asymmetric (the extra row goes at the bottom).
    Operands share a float element type; the verifier checks ranks, the
    channel and group arithmetic and that the output is not empty when the
    dims are static. The bias is a separate broadcasting `kiln.add`;
    `conv1d` is captured on `[N, C, 1, L]`.

    `kiln-decompose` rewrites it by shape (transforms/DecomposeNN.cpp): a
    depthwise convolution (`groups == C`) as a weighted sum of the padded
    input's `KH * KW` strided slices (elementwise, one fused loop nest); a
    1x1 unpadded ungrouped one as one `kiln.matmul` of the `[F, C]` weight
    with the input viewed as `[N, C, OH * OW]`; otherwise as im2col + GEMM:
    the slices are concatenated into `[N, G, C/G * KH * KW, OH * OW]`
    columns and multiplied by the weight reshaped to `[G, F/G, C/G * KH *
    KW]` (a BLAS call on CPU); an ungrouped batch (N > 1) of small images
    (OH * OW < 1024) is permuted to `[C, N, H, W]` first and becomes one
    GEMM over all images (columns `[C * KH * KW, N * OH * OW]`). On a
    1x32x28x28, 32x3x3 convolution im2col + GEMM ran 1.5-3x faster than
    lowering to `linalg.conv_2d_nchw_fchw` loops (MLIR runner, one thread).

    Example:
    ```mlir
    %0 = kiln.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x4x4xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$weight,
                   DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$stride,
                   DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
                   DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation,
                   DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` type($input) `,` type($weight) `->` type($result)
  }];
}

def Kiln_MaxPool2dOp : Kiln_Op<"max_pool2d", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "2-D max pooling, NCHW (torch.nn.functional.max_pool2d)";
  let description = [{
    The maximum of each `kernel` window (dilated by `dilation`, moved by
    `stride`) of the input padded by `padding` (2 entries, H and W, both
    sides; padded cells never win) → `[N, C, OH, OW]` with torch's output
    size: `(H + 2 pad - dilation (k - 1) - 1) / stride + 1`, rounded up with
    `ceil_mode` (a last window that would start in the right padding is
    dropped). NaN propagates. Verified: rank 4, a float element type,
    `kernel`, `stride`, `dilation` >= 1, `0 <= padding <= kernel / 2` (as
    torch), and a non-empty output when static. The result type is
    inferred. Indices (`return_indices`) are not produced.

    Example:
    ```mlir
    %0 = kiln.max_pool2d %x {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, DenseI64ArrayAttr:$kernel,
                   DenseI64ArrayAttr:$stride,
                   DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$padding,
                   DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation,
                   DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Kiln_AvgPool2dOp : Kiln_Op<"avg_pool2d", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "2-D average pooling, NCHW (torch.nn.functional.avg_pool2d)";
  let description = [{
    The mean of each `kernel` window moved by `stride` over the input
    zero-padded by `padding` (H and W, both sides). Output size as
    `kiln.max_pool2d` (no dilation). The divisor follows torch: with
    `count_include_pad` (default) the window clipped to the padded input,
    otherwise the number of real input cells in it; a nonzero
    `divisor_override` replaces both. Verified: rank 4, a float element
    type, `kernel`, `stride` >= 1, `0 <= padding <= kernel / 2`,
    `divisor_override >= 0` and a non-empty output when static.

    Example:
    ```mlir
    %0 = kiln.avg_pool2d %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, DenseI64ArrayAttr:$kernel,
                   DenseI64ArrayAttr:$stride,
                   DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$padding,
                   DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                   DefaultValuedAttr<BoolAttr, "true">:$count_include_pad,
                   DefaultValuedAttr<I64Attr, "0">:$divisor_override);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

#endif // KILN_NN_OPS_TD
