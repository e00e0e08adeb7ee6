//===- Passes.td - target-neutral codegen passes --------------*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Passes both backends run: kiln → linalg on tensors, elementwise fusion,
// destination-passing outputs. Alphabetical. Each pass's algorithm is
// described here once; READMEs link to the generated reference
// (docs/reference/KilnCodegenCommonPasses.md).
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_COMMON_PASSES_TD
#define KILN_CODEGEN_COMMON_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// kiln → linalg
//===----------------------------------------------------------------------===//

def ConvertKilnToLinalgPass : Pass<"kiln-convert-to-linalg", "func::FuncOp"> {
  let summary = "Lowers kiln ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Precondition: output of `kiln-decompose` (the primitive set).
    Postcondition: no kiln ops remain. Elementwise ops (with their
    broadcasting) become `linalg.generic` ops so `linalg-fuse-elementwise-ops`
    can fuse chains into one loop nest; matmul becomes `linalg.matmul` /
    `linalg.batch_matmul`, or the `_transpose_b` variants when the right
    operand is a `kiln.permute` of the last two dims (no copy is made).
    An op that cannot be lowered is reported with its location.

    With `shared-lhs-gemm` (the CPU pipeline sets it), an f32/f64 product
    whose left operand has no real batch but whose right one has (a 1x1
    convolution's weight times a batch of images) becomes a
    `linalg.generic` contraction reading the left operand once per batch
    element instead of a `linalg.batch_matmul` of a broadcast copy of it;
    `kiln-linalg-to-blas` calls the batched GEMM with batch stride 0 for it.
  }];
  let options = [
    Option<"sharedLhsGemm", "shared-lhs-gemm", "bool", /*default=*/"false",
           "Lower a batch-broadcast left matmul operand without copying it">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::tensor::TensorDialect"];
}

def DestinationOutputsPass : Pass<"kiln-destination-outputs", "ModuleOp"> {
  let summary = "Turns function results into caller-provided output buffers";
  let description = [{
    Rewrites each public `func.func` returning tensors into one that takes an
    extra identity-layout `memref` argument per result, writes each result
    into it with `bufferization.materialize_in_destination`, returns nothing,
    and carries `llvm.emit_c_interface`. The runtime allocates outputs through
    torch and passes them in. A result's `kiln.in_place_input` and
    `kiln.lazy_output` attributes move to its output argument.
  }];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::memref::MemRefDialect", "::mlir::LLVM::LLVMDialect"];
}

def FuseLinalgElementwisePass : Pass<"kiln-fuse-linalg-elementwise", "func::FuncOp"> {
  let summary = "Fuses elementwise linalg.generic producers into their consumers";
  let description = [{
    Upstream `linalg-fuse-elementwise-ops` with a cost-aware control: a
    producer with one use is always fused (as upstream); an all-parallel
    producer with several uses is also fused into each consumer (its
    computation is repeated) when its body is small, trading a few
    arithmetic ops per element for a round trip of the intermediate
    through memory. Softmax's `exp(x - max)` then feeds both the sum and
    the division without being stored (unless `transcendental-cost` makes
    exp too expensive to repeat). Only when repeating moves fewer bytes:
    with n uses, all fusable, n * in < (n + 1) * out (in: bytes per element
    of the inputs it reads element by element, out: of its results); when
    some use keeps it stored anyway (a library call, a GEMM, the return),
    in < out (a bf16 → f32 cast, a broadcast). A residual add is therefore
    stored once, not recomputed in later adds with all its inputs kept
    alive. With `keep-producer-results`, such a stored producer still joins
    an all-parallel consumer that reads it in its own loop order, as one
    loop with both results. Fusion stops once a fused body
    would exceed `max-body-ops` ops. A `linalg.transpose` with a
    `linalg.generic` user is generalized first so that it fuses like any
    producer. Also folds reshapes by expansion and constants, like upstream.

    Precondition: linalg on tensors. Postcondition: the same values,
    usually fewer `linalg.generic` ops.
  }];
  let options = [
    Option<"maxProducerOps", "max-producer-ops", "unsigned", "8",
           "Largest producer body (ops) fused into several consumers">,
    Option<"maxBodyOps", "max-body-ops", "unsigned", "64",
           "Largest fused body (ops) a multi-use producer may create">,
    Option<"transcendentalCost", "transcendental-cost", "unsigned", "1",
           "Ops a transcendental math op (exp, log, tanh, erf, ...) counts as in "
           "the two budgets above: the CPU pipeline uses 8 (its expansions are "
           "15-45 instructions, so softmax's exp(x - max) is kept in a row "
           "buffer rather than recomputed); CUDA keeps 1 (its row groups "
           "recompute in registers)">,
    Option<"keepProducerResults", "keep-producer-results", "bool", "false",
           "Also fuse an all-parallel producer that the rules above keep stored "
           "into an all-parallel consumer reading it element by element in the "
           "same order (identity maps): the fused loop computes the producer's "
           "value once, stores it for its other uses and uses it from a "
           "register, one loop with two results instead of a store and a load "
           "(an optimizer's momentum buffer and parameter updates: 5 memory "
           "streams instead of 7). The CPU pipeline sets it">,
    Option<"fuseBroadcastCasts", "fuse-broadcast-casts", "bool", "false",
           "Also fuse all-parallel producers whose body only converts (extf, "
           "truncf, int/float casts) into consumers that read them broadcast "
           "(a bf16 layer_norm weight cast to f32 is read by every row): one "
           "conversion per element instead of a kernel and a buffer. The "
           "CUDA pipeline sets it (row groups then stay one kernel in bf16)">,
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::memref::MemRefDialect", "::mlir::tensor::TensorDialect"];
}

#endif // KILN_CODEGEN_COMMON_PASSES_TD
