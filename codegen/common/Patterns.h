//===- Patterns.h - kiln → linalg rewrite patterns ----------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The pattern sets of `kiln-convert-to-linalg`, split by op category
// (Elementwise.cpp, Matmul.cpp, Quant.cpp, Random.cpp, Reduction.cpp, ShapeOps.cpp), and the
// broadcasting `linalg.generic` builder they share.
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_PATTERNS_H
#define KILN_CODEGEN_PATTERNS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::kiln {

/// Builds the scalar body of an elementwise op from the block arguments of
/// its `linalg.generic` (one per input, in order) and returns the yielded
/// value.
using ScalarBodyBuilder = llvm::function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// Builds an all-parallel `linalg.generic` producing `resultType` from
/// `inputs`, each broadcast to the result shape with numpy rules (aligned
/// from the trailing dim; a static size-1 dim against a non-1 result dim
/// reads index 0). Splat constants are folded into the body as scalars.
/// Dynamic result dims are taken from an input with a matching dim.
Value buildBroadcastingGeneric(OpBuilder &b, Location loc, RankedTensorType resultType,
                               ValueRange inputs, ScalarBodyBuilder body);

/// Returns `tensor.empty` of `type`, taking dynamic sizes from `sizes`.
Value buildEmpty(OpBuilder &b, Location loc, RankedTensorType type, ArrayRef<OpFoldResult> sizes);

/// Returns a scalar constant of `type` (float or integer) equal to `value`.
Value buildScalarConstant(OpBuilder &b, Location loc, Type type, double value);

/// Collapses all dims but the last `keep` into one leading dim
/// ([a, b, ..., x, y] → [a*b*..., x, y] for keep = 2; `v` itself when
/// there is at most one leading dim).
Value collapseLeading(OpBuilder &b, Location loc, Value v, int64_t keep);

/// Expands `v` ([X, M, N] or [X, N]) back to `type` ([batch..., M, N]),
/// where X is the product of the leading dims of `type` (`sizes`: the
/// result's sizes).
Value expandTo(OpBuilder &b, Location loc, Value v, RankedTensorType type,
               ArrayRef<OpFoldResult> sizes);

/// A zero-filled accumulator of `type` (dynamic sizes from `sizes`).
Value zeroInit(OpBuilder &b, Location loc, RankedTensorType type, ArrayRef<OpFoldResult> sizes);

/// Constant, cast, unary, binary, comparison and select lowerings.
void populateElementwiseToLinalgPatterns(RewritePatternSet &patterns);
/// kiln.matmul → linalg.(batch_)matmul(_transpose_b); with `sharedLhs`, a
/// left operand broadcast over the right one's batch is not copied (a
/// linalg.generic contraction, see isSharedLhsBatchMatmul).
void populateMatmulToLinalgPatterns(RewritePatternSet &patterns, bool sharedLhs = false);

/// Whether `op` is the contraction the shared-lhs lowering makes:
/// C[b, m, n] += A[m, k] * B[b, k, n] (maps, iterators and a mulf/addf body).
bool isSharedLhsBatchMatmul(Operation *op);
/// Whether `op` is a GEMM kiln-cpu-linalg-to-blas runs as a BLAS call:
/// linalg.(batch_)matmul(_transpose_a/_b) or the shared-lhs contraction.
bool isBlasGemm(Operation *op);
/// kiln.sum / mean / max → reducing linalg.generic.
void populateReductionToLinalgPatterns(RewritePatternSet &patterns);
/// kiln.quantize / dequantize / int8_view / qlinear → linalg (integer
/// GEMMs as linalg.matmul_transpose_b of i8 operands into i32).
void populateQuantToLinalgPatterns(RewritePatternSet &patterns);
/// Marks the generic a `kiln.int8_view` / `kiln.fp8_view` lowers to (the
/// bytes of i32 words): a backend whose GEMM reads the words' memory as
/// bytes itself may skip it (the CUDA emitter does for GEMM weights).
inline constexpr llvm::StringLiteral kByteViewAttr = "kiln.byte_view";
/// kiln.random → linalg.generic computing Philox 4x32-10 per element.
void populateRandomToLinalgPatterns(RewritePatternSet &patterns);
/// kiln.permute / reshape / broadcast_to / slice / concat / embedding →
/// linalg / tensor.
void populateShapeOpsToLinalgPatterns(RewritePatternSet &patterns);

} // namespace mlir::kiln

#endif // KILN_CODEGEN_PATTERNS_H
