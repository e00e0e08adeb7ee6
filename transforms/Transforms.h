//===- Transforms.h - reusable rewrite patterns on kiln IR --------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Pattern sets that the passes in transforms/ apply and that other pipelines
// (for instance a codegen pass that wants a composite op gone before it runs)
// can add to their own RewritePatternSet.
//===----------------------------------------------------------------------===//
#ifndef KILN_TRANSFORMS_TRANSFORMS_H
#define KILN_TRANSFORMS_TRANSFORMS_H

#include "mlir/Support/LogicalResult.h"

namespace mlir {
class RewritePatternSet;
class RewriterBase;
} // namespace mlir

namespace mlir::kiln {

/// Adds the patterns of `kiln-decompose` to `patterns`: `kiln.softmax`,
/// `kiln.layer_norm` and `kiln.silu` are rewritten into reductions and
/// elementwise kiln ops (see transforms/Passes.td for the exact expansion).
/// The patterns hold for any rank and for dynamic dims.
void populateDecompositionPatterns(RewritePatternSet &patterns);

/// The part of `populateDecompositionPatterns` for `kiln.conv2d` (im2col +
/// `kiln.matmul`), `kiln.max_pool2d` and `kiln.avg_pool2d` (strided slices
/// of the padded input combined elementwise); static shapes only
/// (transforms/DecomposeNN.cpp).
void populateNNDecompositionPatterns(RewritePatternSet &patterns);

/// The part of `populateDecompositionPatterns` for `kiln.cumsum` over a
/// static dim of 1024 or more: blocks of 64 (transforms/DecomposeCumsum.cpp).
void populateCumsumDecompositionPatterns(RewritePatternSet &patterns);

/// The part of `populateDecompositionPatterns` for `kiln.dequantize` of a
/// `kiln.quantize_static` with the same scale and zero point that no int8
/// kernel consumed: the same values by f32 ops (transforms/DecomposeQuant.cpp).
void populateQuantDecompositionPatterns(RewritePatternSet &patterns);

class DequantizeOp;

/// That rewrite of one `op` (erasing its quantize_static once unused);
/// failure, and nothing changed, for another dequantize.
LogicalResult expandStaticQdq(DequantizeOp op, RewriterBase &rewriter);

} // namespace mlir::kiln

#endif // KILN_TRANSFORMS_TRANSFORMS_H
