//===- QuantPasses.td - kiln quantization passes --------------*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Target-neutral passes on the quantization ops of ir/KilnQuantOps.td. A
// separate file (QuantPasses.h.inc) so that they rebuild only their own users.
//===----------------------------------------------------------------------===//

#ifndef KILN_TRANSFORMS_QUANTPASSES_TD
#define KILN_TRANSFORMS_QUANTPASSES_TD

include "mlir/Pass/PassBase.td"

def FoldQuantPass : Pass<"kiln-fold-quant", "func::FuncOp"> {
  let summary = "Folds q/dq around a matmul into an integer GEMM (kiln.qlinear)";
  let description = [{
    Precondition: kiln IR with `kiln.quantize` / `kiln.dequantize` as
    `kiln.quant.prepare`'d layers capture them (docs/quantization.md).
    Each `kiln.matmul` whose right operand is
    `kiln.permute {dims = [1, 0]} (kiln.dequantize %w, %ws)` of a 2-D int8
    weight `%w: [N, K]` with per-output-channel scales `%ws: [N, 1]`
    becomes one `kiln.qlinear`:

    - left operand `kiln.dequantize(kiln.quantize %x {granularity = g})`
      (both results of one quantize): `activations = g`, the input `%x`
      (integer GEMM, dequantize epilogue);
    - left operand `kiln.dequantize(kiln.quantize_static %x)` with the
      quantize's zero point and its scale as a constant splat (static
      int8): `activations = "static"` with `input_scale` and
      `input_zero_point` copied from the quantize;
    - any other f32 left operand: `activations = "none"` (weight-only);
    - a `kiln.add` of a `[N]` f32 bias that is the matmul's only user is
      folded in as the bias (the epilogue adds it).

    Grouped int4 weights (`kiln.quant.weight_only_int4` layers): a right
    operand `kiln.permute {dims = [1, 0]} (kiln.reshape<[N, K]>
    (kiln.dequantize (kiln.reshape<[N, K / g, g]> (kiln.int4_view %words),
    kiln.reshape<[N, K / g, 1]> %ws)))` with `%ws: [N, K / g]` and `g` a
    multiple of 32 becomes a weight-only `kiln.qlinear` on the int4 view
    with `group_size = g` and the scales `%ws`; with a quantized input it
    stays float (int4 is weight-only).

    Left alone (they stay float, and the CPU backend rejects a q/dq it
    cannot run): a dequantized weight whose scales are not `[N, 1]` (a
    per-input-channel scale, or a permute other than the transpose), a
    dequantize feeding anything but such a matmul, an input dequantize that
    does not invert its quantize (another scale or zero point), matmuls of other element
    types, an add whose other operand is not a `[N]` vector (kept after the
    qlinear). Dead q/dq ops are erased.

    Before:
    ```mlir
    %q, %s = kiln.quantize %x {granularity = "per_token"} : tensor<4x8xf32> -> tensor<4x8xi8>, tensor<4x1xf32>
    %xd = kiln.dequantize %q, %s : tensor<4x8xi8>, tensor<4x1xf32> -> tensor<4x8xf32>
    %wd = kiln.dequantize %w, %ws : tensor<16x8xi8>, tensor<16x1xf32> -> tensor<16x8xf32>
    %wt = kiln.permute %wd {dims = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
    %y = kiln.matmul %xd, %wt : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
    %z = kiln.add %y, %b : tensor<4x16xf32>, tensor<16xf32> -> tensor<4x16xf32>
    ```
    After:
    ```mlir
    %z = kiln.qlinear %x, %w, %ws, %b {activations = "per_token"} : (tensor<4x8xf32>, tensor<16x8xi8>, tensor<16x1xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    ```
  }];
}

#endif // KILN_TRANSFORMS_QUANTPASSES_TD
