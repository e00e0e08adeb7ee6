//===- KilnQuantOps.td - int8 quantization ops ----------------*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// kiln's one representation of quantized computation (docs/quantization.md):
// explicit `kiln.quantize` / `kiln.dequantize` ops on plain integer tensors
// (i8 values, f32 scales, symmetric: zero points are 0), the frontend's
// carriers for int8 and int4 data (`kiln.int8_view`, `kiln.int4_view`), and the integer GEMM
// `kiln.qlinear` that `kiln-fold-quant` builds from q/dq around a matmul.
// A separate ODS file (KilnQuantOps.h.inc) so that these ops do not rebuild
// every user of KilnOps.h; the dialect registers both lists.
//===----------------------------------------------------------------------===//

#ifndef KILN_QUANT_OPS_TD
#define KILN_QUANT_OPS_TD

include "ir/KilnBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Kiln_F32Tensor : RankedTensorOf<[F32]>;
def Kiln_I8Tensor : RankedTensorOf<[I8]>;
def Kiln_U8Tensor : RankedTensorOf<[UI8]>;

def Kiln_QuantizeOp : Kiln_Op<"quantize", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "dynamic symmetric int8 quantization (scales computed from the data)";
  let description = [{
    Quantizes an f32 tensor to int8 with scales computed from its values:
    `scale = max(|x|) / 127` over each group (a tiny positive scale when the
    group is all zeros) and `q = clamp(round_half_even(x / scale), -127,
    127)`; the zero point is 0. `granularity` chooses the groups:
    `"per_token"` (each row: every index of the leading dims, over the last
    dim; `scale` has the input's shape with the last dim 1) or
    `"per_tensor"` (one scale; `scale` has the input's rank, all dims 1).
    `kiln.dequantize %q, %scale` gives back `q * scale`.

    Example:
    ```mlir
    %q, %s = kiln.quantize %x {granularity = "per_token"} : tensor<4x8xf32> -> tensor<4x8xi8>, tensor<4x1xf32>
    ```
  }];
  let arguments = (ins Kiln_F32Tensor:$input,
                   DefaultValuedAttr<StrAttr, "\"per_token\"">:$granularity);
  let results = (outs Kiln_I8Tensor:$result, Kiln_F32Tensor:$scale);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result) `,` type($scale)
  }];
}

def Kiln_QuantizeStaticOp : Kiln_Op<"quantize_static", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "static (calibrated) affine uint8 quantization with a fixed scale and zero point";
  let description = [{
    Quantizes an f32 tensor to uint8 with the per-tensor `scale` and
    `zero_point` a calibration chose (torch's `quint8` activations):
    `q = clamp(round_half_even(x * (1 / scale)) + zero_point, 0, 255)`,
    exactly `torch.ops.quantized_decomposed.quantize_per_tensor(x, scale,
    zero_point, 0, 255, torch.uint8)` (the reciprocal rounded to f32, the
    product in f32). `kiln.dequantize %q, %s {zero_point = zp}` with the
    same scale as a `[1, ...]` tensor gives back `(q - zp) * scale`.

    Example:
    ```mlir
    %q = kiln.quantize_static %x {scale = 0.05 : f32, zero_point = 128 : i64} : tensor<4x8xf32> -> tensor<4x8xui8>
    ```
  }];
  let arguments = (ins Kiln_F32Tensor:$input, F32Attr:$scale, I64Attr:$zero_point);
  let results = (outs Kiln_U8Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Kiln_DequantizeOp : Kiln_Op<"dequantize", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "int8 (or i32 accumulator) values times broadcast f32 scales";
  let description = [{
    `result = f32(input - zero_point) * scale`, with `scale` broadcast to
    the input's shape (numpy rules; it must not grow the input).
    `zero_point` (default 0: symmetric int8) is the uint8 zero point of
    static activations (`kiln.quantize_static`). Per-channel weights use a scale of shape `[N, 1]` (axis 0),
    per-token activations `[..., 1]`, per-tensor ones all-1 dims.

    Example:
    ```mlir
    %w = kiln.dequantize %q, %s : tensor<16x8xi8>, tensor<16x1xf32> -> tensor<16x8xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I8, UI8, I32]>:$input, Kiln_F32Tensor:$scale,
                   DefaultValuedAttr<I64Attr, "0">:$zero_point);
  let results = (outs Kiln_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $scale attr-dict `:` type($input) `,` type($scale) `->` type($result)
  }];
}

def Kiln_Int8ViewOp : Kiln_Op<"int8_view", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "int8 values stored four per i32 word (the frontend's int8 carrier)";
  let description = [{
    Reinterprets `[..., W]` i32 words as `[..., 4 W]` int8 values (byte `j`
    of word `i` is value `4 i + j`, little-endian), as torch's
    `t.view(torch.int8)` of an int32 tensor. kiln's capture has no int8
    dtype yet, so `kiln.quant.prepare` stores int8 weights as int32 views
    and the capture reads them through this op. On CPU
    `kiln-cpu-quant-to-calls` reads the words' buffer directly when the
    view feeds a `kiln.qlinear`; elsewhere `kiln-convert-to-linalg` unpacks
    the bytes (codegen/common/Quant.cpp).

    Example:
    ```mlir
    %w = kiln.int8_view %words : tensor<16x2xi32> -> tensor<16x8xi8>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I32]>:$input);
  let results = (outs Kiln_I8Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Kiln_Fp8ViewOp : Kiln_Op<"fp8_view", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "float8 (e4m3fn) values stored four per i32 word";
  let description = [{
    Reinterprets `[..., W]` i32 words as `[..., 4 W]` `f8E4M3FN` values,
    byte `j` of word `i` being value `4 i + j` (little-endian), as torch's
    `t.view(torch.float8_e4m3fn)` of an int32 tensor: how `kiln.quant.fp8()`
    layers store their weights (kiln's capture has no float8 dtype).
    Lowered by `kiln-convert-to-linalg` (codegen/common/Quant.cpp); the CUDA
    emitter lets an fp8 GEMM read the words' buffer directly.

    Example:
    ```mlir
    %w = kiln.fp8_view %words : tensor<16x2xi32> -> tensor<16x8xf8E4M3FN>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I32]>:$input);
  let results = (outs RankedTensorOf<[F8E4M3FN]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Kiln_Int4ViewOp : Kiln_Op<"int4_view", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "int4 values packed eight per i32 word (grouped weight-only weights)";
  let description = [{
    Reinterprets `[..., W]` i32 words as `[..., 8 W]` int4 values in [-8,
    7], each held in an i8. Bytes are the words' little-endian bytes; every
    32 values are 16 bytes, byte `j` holding value `j` (low nibble) and
    value `16 + j` (high nibble), each stored plus 8. `kiln.quant`'s
    `weight_only_int4` layers store their weights so (`kiln.quant._ops.pack_int4`).
    On CPU `kiln-cpu-quant-to-calls` reads the words' buffer directly when
    the view feeds a grouped `kiln.qlinear`; elsewhere
    `kiln-convert-to-linalg` unpacks the nibbles.
    The last dim must be a multiple of 4 words (32 values).

    Example:
    ```mlir
    %w = kiln.int4_view %words : tensor<16x4xi32> -> tensor<16x32xi8>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I32]>:$input);
  let results = (outs Kiln_I8Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Kiln_QLinearOp : Kiln_Op<"qlinear", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "int8-weight linear layer: integer GEMM + dequantize + bias epilogue";
  let description = [{
    `input: [..., K]` f32, `weight: [N, K]` int8 with per-output-channel f32
    `weight_scale: [N, 1]`, optional f32 `bias: [N]` → `[..., N]` f32:

    - `activations = "per_token"` / `"per_tensor"`: the input is quantized
      as `kiln.quantize` with that granularity, multiplied with the int8
      weight in 32-bit integers, and the accumulator dequantized by
      `x_scale * weight_scale` with the bias added in the same pass;
    - `activations = "static"`: the input is quantized as
      `kiln.quantize_static` with the `input_scale` and `input_zero_point`
      attributes (both required), the integer product taken with the zero
      point subtracted, and dequantized by `input_scale * weight_scale`
      with the bias;
    - an `f8E4M3FN` weight (`kiln.quant.fp8()` layers, from `kiln.fp8_view`;
      `"per_token"` / `"per_tensor"` only): the input is quantized to e4m3
      with `scale = max|x| / 448` per row or tensor (1 for an all-zero
      group, NaN for one with inf/NaN) and `clamp(x / scale, ±448)` rounded
      to nearest even, the e4m3 products summed in f32, and the sum scaled
      by `x_scale * weight_scale` with the bias added;
    - `activations = "none"` (weight-only): `input @ dequantize(weight)^T + bias`
      in f32. With `group_size` (weight-only only: int4 weights from
      `kiln.int4_view`), `weight_scale` is `[N, K / group_size]`, one scale
      per group of `group_size` consecutive values of K (a multiple of 32
      dividing K).

    Built by `kiln-fold-quant`; lowered on CPU by `kiln-cpu-quant-to-calls`,
    for CUDA by `kiln-convert-to-linalg` (an int8 GEMM into i32 between
    quantize and epilogue generics; weight-only and grouped weights as a
    dequantized f32 GEMM).

    Example:
    ```mlir
    %y = kiln.qlinear %x, %w, %s, %b {activations = "per_token"} : (tensor<4x8xf32>, tensor<16x8xi8>, tensor<16x1xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    ```
  }];
  let arguments = (ins Kiln_F32Tensor:$input, RankedTensorOf<[I8, F8E4M3FN]>:$weight,
                   Kiln_F32Tensor:$weight_scale, Optional<Kiln_F32Tensor>:$bias,
                   DefaultValuedAttr<StrAttr, "\"per_token\"">:$activations,
                   OptionalAttr<F32Attr>:$input_scale,
                   OptionalAttr<I64Attr>:$input_zero_point,
                   OptionalAttr<I64Attr>:$group_size);
  let results = (outs Kiln_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $weight_scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

#endif // KILN_QUANT_OPS_TD
