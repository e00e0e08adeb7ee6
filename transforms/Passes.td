//===- Passes.td - kiln transformation passes -----------------*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Passes on kiln IR. Grouped by stage, alphabetical within a group.
//===----------------------------------------------------------------------===//

#ifndef KILN_TRANSFORMS_PASSES_TD
#define KILN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Decomposition
//===----------------------------------------------------------------------===//

def DecomposePass : Pass<"kiln-decompose", "func::FuncOp"> {
  let summary = "Rewrites composite kiln ops into the primitive set";
  let description = [{
    Precondition: verified kiln IR (any rank, static or dynamic dims).
    Postcondition: no `kiln.softmax`, `kiln.layer_norm`, `kiln.silu` (nor,
    for static shapes, `kiln.conv2d`, `kiln.max_pool2d`, `kiln.avg_pool2d`)
    remain; they are expressed with reductions (`kiln.sum`, `kiln.mean`,
    `kiln.max`) and elementwise ops so fusion and codegen see only the
    primitive set listed in docs/invariants.md. Other ops are left alone
    (the greedy driver also runs their folders).

    - `softmax(x, d)`: `e = exp(x - max(x, [d], keepdim))`, then
      `e / sum(e, [d], keepdim)`. Subtracting the max keeps `exp` finite, as
      torch does. A 0-d operand reduces over no dims.
    - `layer_norm(x)` over the last `n` dims `D`:
      `c = x - mean(x, D, keepdim)`, `var = mean(c * c, D, keepdim)` (the
      biased variance, as torch), `y = c * rsqrt(var + eps)`, then
      `y * weight` and `y + bias` when present. `eps` is a 0-d
      `kiln.constant`.
    - `silu(x)`: `x * sigmoid(x)`.
    - `cumsum(x, d)` over a static dim of 1024 or more (its lowering is
      quadratic in the dim): zero-padded to blocks of 64, reshaped to
      `[.., m, 64, ..]`, prefix sums inside each block, plus the exclusive
      prefix of the block totals (`cumsum(totals) - totals`, itself split
      again while `m >= 1024`), reshaped back and cut to the dim.
    - `conv2d(x, w)` (static shapes): the input is zero-padded with
      `kiln.concat` of splat constants; each of the `KH * KW` kernel taps is
      one strided `kiln.slice` `[N, C, OH, OW]`; the taps are concatenated
      into im2col columns `[N, G, C/G * KH * KW, OH * OW]` and multiplied by
      the weight reshaped to `[G, F/G, C/G * KH * KW]` (`kiln.matmul`).
      Ungrouped with N > 1: the input is first `kiln.permute`d to
      `[C, N, H, W]` so the columns are `[C * KH * KW, N * OH * OW]` and the
      whole batch is one GEMM with the `[F, C * KH * KW]` weight (no weight
      broadcast per image); the `[F, N, OH, OW]` product is permuted back.
      Windows that tile the input (stride == kernel, dilation 1, no
      padding: a ViT patch embedding) take no slices: the input (cut to
      `OH * KH` x `OW * KW`) is reshaped to `[N, G, C/G, OH, KH, OW, KW]` and
      permuted into the same columns (or `[C, KH, KW, N, OH, OW]` for the
      one-GEMM batch layout); a 16x16 patch conv is then 3 ops instead of 256
      slices + a concat, whose bufferization analysis took minutes.
    - `max_pool2d(x)`: `kiln.maximum` over the taps of the input padded with
      -inf; `avg_pool2d(x)`: `kiln.add` over the taps of the zero-padded
      input (in f32 for f16/bf16), divided by a constant `[OH, OW]` divisor
      computed as ATen does (`count_include_pad`, `divisor_override`,
      `ceil_mode` windows).
    - `dequantize(quantize_static(x))` with the same scale and zero point
      (a pair no int8 kernel took: the requantizations of models rewritten
      from PT2E / torch.ao): `(clamp(round(x * f32(1 / scale)) + zp, 0, 255)
      - zp) * scale` in f32, the same values (a NaN input stays NaN).

    softmax and layer_norm of floats narrower than 32 bits (f16, bf16) are
    computed in f32 between a `kiln.cast` in and a `kiln.cast` out, as torch
    computes them in f32 ("opmath") and rounds once; silu stays in its type.

    Example:
    ```mlir
    %0 = kiln.softmax %x {dim = 1 : i64} : tensor<4x8xf32>
    ```
    becomes
    ```mlir
    %m = kiln.max %x {dims = array<i64: 1>, keepdim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
    %s = kiln.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32>
    %e = kiln.exp %s : tensor<4x8xf32>
    %t = kiln.sum %e {dims = array<i64: 1>, keepdim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
    %0 = kiln.div %e, %t : tensor<4x8xf32>, tensor<4x1xf32>
    ```
  }];
  let dependentDialects = ["::mlir::kiln::KilnDialect"];
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

def LayoutPass : Pass<"kiln-layout", "func::FuncOp"> {
  let summary = "Keeps channels-last regions channels-last: sinks and cancels NHWC/NCHW permutes, runs the convolutions between them on NHWC";
  let description = [{
    Precondition: verified kiln IR (before kiln-decompose: it rewrites
    `kiln.conv2d`). Postcondition: the same values; fewer
    `kiln.permute [0, 3, 1, 2]` / `[0, 2, 3, 1]` pairs. Three rewrites of
    P = `kiln.permute %a [0, 3, 1, 2]` (NHWC → NCHW), repeated until none
    applies:

    - sink: an elementwise op (add, sub, mul, div, maximum, minimum, pow,
      relu, gelu, silu, sigmoid, tanh, neg, abs, exp, erf, sqrt, rsqrt, round,
      cast) of P whose other operands are the same permute of same-shaped
      values, 0-d values or broadcast operands with fewer elements than the
      result becomes P of the op on `%a` (a broadcast operand is reshaped
      to rank 4 and permuted to NHWC: a `[C, 1, 1]` scale becomes
      `[1, 1, 1, C]`); an operand that is a full NCHW value stops it;
    - cancel: `kiln.permute (P) [0, 2, 3, 1]` is `%a`;
    - convert: a static f32 `kiln.conv2d` that is depthwise or, ungrouped,
      has windows larger than 1x1 that tile the input (stride == kernel, no
      padding), whose result reaches a permute to NHWC through single-use
      elementwise ops (or, tiling ones, whose input is a P), becomes
      P(NHWC convolution of the input permuted to NHWC): depthwise as the
      sum of its strided `[N, OH, OW, C]` taps times `[C]` weight rows,
      the others as one `kiln.matmul` of `[N*OH*OW, C*KH*KW]` columns with
      the transposed weight.

    Functions without a `kiln.permute [0, 2, 3, 1]` (networks that never
    go channels-last themselves) are left unchanged. Values the function
    returns and values other ops read stay NCHW (the
    permute stays in front of them), so outputs keep eager's memory format.
    Scheduled by the CPU driver before kiln-optimize when the graph has a
    convolution (after kiln-cpu-convs-to-dnnl).

    Example (ConvNeXt's block tail: the permute back sinks below the layer
    scale and the residual add whose other input is NHWC too):
    ```mlir
    %p = kiln.permute %h {dims = array<i64: 0, 3, 1, 2>} : tensor<1x7x7x8xf32> -> tensor<1x8x7x7xf32>
    %q = kiln.permute %x {dims = array<i64: 0, 3, 1, 2>} : tensor<1x7x7x8xf32> -> tensor<1x8x7x7xf32>
    %m = kiln.mul %s, %p : tensor<8x1x1xf32>, tensor<1x8x7x7xf32>
    %r = kiln.add %m, %q : tensor<1x8x7x7xf32>, tensor<1x8x7x7xf32>
    ```
    becomes `kiln.permute (kiln.add (kiln.mul %s', %h), %x)` with `%s'` the
    scale reshaped to `[1, 8, 1, 1]` and permuted to `[1, 1, 1, 8]`.
  }];
  let dependentDialects = ["::mlir::kiln::KilnDialect"];
}

//===----------------------------------------------------------------------===//
// Differentiation
//===----------------------------------------------------------------------===//

def AutodiffPass : Pass<"kiln-autodiff", "::mlir::ModuleOp"> {
  let summary = "Builds a forward and a backward function for training";
  let description = [{
    For each function with arguments marked `kiln.requires_grad`, adds
    `@<name>_fwd` and `@<name>_bwd` after it (the function itself is left
    unchanged). Precondition: verified kiln IR in one block. Gradients flow
    from every result to the marked arguments through float values; ops
    marked `kiln.no_grad` (computed under `torch.no_grad()`, running
    statistics) stop them, and integer/bool values never carry one. A
    stop-gradient is an identity `kiln.cast` (same type) marked
    `kiln.no_grad` (`x.detach()`, numbers read with `.item()`): the
    backward reads its operand where it needs the value.

    - `@<name>_bwd` takes the gradients of the results that depend on a
      marked argument, then the saved values (inputs, results, then the
      forward's extra results, in that order), and returns the gradients of
      the marked arguments that some result depends on. Its attributes
      `kiln.grad_results`, `kiln.grad_inputs`, `kiln.saved_inputs`,
      `kiln.saved_results` and `kiln.num_saved` give that layout.
    - `@<name>_fwd` is the function returning, after its results, the
      intermediate values the backward reads.

    Gradient rules live in one table, split by category in
    `transforms/autodiff/` (ElementwiseGrads.cpp, ShapeGrads.cpp,
    ReductionGrads.cpp, NNGrads.cpp for conv2d/maximum/minimum,
    PoolGrads.cpp for max_pool2d/avg_pool2d); a rule may return a gradient of the broadcast
    shape and the pass sums it back to the operand's shape and casts it to
    the operand's element type. Saving policy (min-cut rematerialization,
    `transforms/autodiff/Partition.cpp`): of the forward values the rules
    read, a minimum cut over the forward ops they depend on, weighted by
    bytes, picks those the forward returns (`kiln.saved_bytes` on
    `@<name>_bwd` sums them); the ops between the cut and the read values
    are recomputed in the backward, each just before its first use (as is
    every backward op computed from saved values alone). Inputs and results cost
    nothing to save; matmul, convolutions, reductions, normalizations and
    pooling are never recomputed (unless `memory-budget` < 1 allows them),
    random ops never; pointwise chains and data movement are recomputed
    where that saves fewer bytes (a linear + GELU saves the GEMM's output
    and recomputes the GELU). Constants are re-materialized in the
    backward, and layer_norm recomputes its statistics from its input.
    Gradients of disjoint slices of one tensor (attention's q, k and v cut
    from one projection), each zero-padded to the tensor's size by its
    rule, accumulate as one concat of their pieces, not as adds of padded
    tensors. When an op on a gradient path has no rule
    (max, argmax, strided slices, dynamic-shape conv2d ...) nothing is built and a remark names
    the op and the reason; the frontend then keeps the eager backward.

    Example:
    ```mlir
    func.func @f(%x: tensor<4xf32> {kiln.requires_grad}) -> tensor<4xf32> {
      %0 = kiln.tanh %x : tensor<4xf32>
      return %0 : tensor<4xf32>
    }
    ```
    adds `@f_fwd` (returning `%0` once) and
    ```mlir
    func.func @f_bwd(%g: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
      %one = kiln.constant dense<1.0> : tensor<f32>
      %0 = kiln.mul %y, %y : tensor<4xf32>, tensor<4xf32>
      %1 = kiln.sub %one, %0 : tensor<f32>, tensor<4xf32>
      %2 = kiln.mul %g, %1 : tensor<4xf32>, tensor<4xf32>
      return %2 : tensor<4xf32>
    }
    ```
  }];
  let options = [
    Option<"memoryBudget", "memory-budget", "double", /*default=*/"1.0",
           "Activation-memory budget in [0, 1]: 1 saves what the min-cut "
           "with expensive ops never recomputed picks, 0 saves the fewest "
           "bytes (recomputing every op but random ones)">
  ];
  let dependentDialects = ["::mlir::kiln::KilnDialect",
                           "::mlir::func::FuncDialect"];
}

#endif // KILN_TRANSFORMS_PASSES_TD
