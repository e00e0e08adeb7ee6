//===- GradRules.h - gradient rules of kiln ops for kiln-autodiff -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The one mechanism for gradients (transforms/Autodiff.cpp): a table from op
// name to a reverse-mode rule, filled by one file per category
// (ElementwiseGrads.cpp, ShapeGrads.cpp, ReductionGrads.cpp, NNGrads.cpp,
// PoolGrads.cpp). A rule sees
// the op, the gradient of its result and a GradBuilder that emits backward
// IR; it returns one gradient per operand (null: none). The driver reduces
// each gradient to its operand's shape (broadcasting) and element type, so
// rules may return broadcast-shaped gradients. An op missing from the table
// has no gradient: `nonDifferentiableReason` says why, and a graph that
// needs one keeps the eager backward.
//===----------------------------------------------------------------------===//
#ifndef KILN_TRANSFORMS_AUTODIFF_GRADRULES_H
#define KILN_TRANSFORMS_AUTODIFF_GRADRULES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <string>

namespace mlir::kiln {

/// Emits backward IR at the builder's insertion point.
class GradBuilder {
public:
  GradBuilder(OpBuilder &b, Location loc, std::function<Value(Value)> primal,
              std::function<bool(Value)> needs)
      : b(b), loc(loc), primalFn(std::move(primal)), needsFn(std::move(needs)) {}

  OpBuilder &b;
  Location loc;

  /// The forward value `v` as the backward sees it (a saved tensor, an
  /// input, or a cloned constant).
  Value primal(Value v) { return primalFn(v); }
  /// Whether the backward needs a gradient for forward value `v` (an
  /// operand): rules skip the others (and the saved values they use).
  bool needs(Value v) { return needsFn(v); }
  /// A 0-d constant of float type `elt`.
  Value scalar(Type elt, double value);
  /// `g` summed over the dims it was broadcast along so that it has
  /// `target`'s shape, then cast to `target`'s element type.
  Value reduceTo(Value g, RankedTensorType target);
  /// `v` reshaped to `shape`.
  Value reshape(Value v, ArrayRef<int64_t> shape);
  /// `v` broadcast to `shape`.
  Value broadcast(Value v, ArrayRef<int64_t> shape);
  /// Zeros of `type`.
  Value zeros(RankedTensorType type);
  /// `v` cast to element type `elt` (v itself when it has it).
  Value cast(Value v, Type elt);
  /// `v[start:end:step]` in every dim (static shapes).
  Value slice(Value v, ArrayRef<int64_t> start, ArrayRef<int64_t> end, ArrayRef<int64_t> step);
  /// `v` with `before`/`after` cells of value `fill` added along `dim`.
  Value pad(Value v, int64_t dim, int64_t before, int64_t after, double fill = 0.0);
  /// The inverse of a strided slice along `dim`: a tensor of `size` cells
  /// there with `v[i]` at `start + i * step` and zeros elsewhere (cells
  /// before 0 or from `size` on are dropped). Static shapes.
  Value place(Value v, int64_t dim, int64_t start, int64_t step, int64_t size);
  /// `parts` joined along `dim` (one part: itself).
  Value concat(ArrayRef<Value> parts, int64_t dim);
  Value add(Value a, Value c);
  Value sub(Value a, Value c);
  Value mul(Value a, Value c);
  Value div(Value a, Value c);
  Value neg(Value a);

private:
  std::function<Value(Value)> primalFn;
  std::function<bool(Value)> needsFn;
};

/// A rule: fills `grads` (one per operand, null for none) from `grad`, the
/// gradient of `op`'s single result; failure with `why` set when this
/// instance has no gradient (e.g. a strided slice).
using GradRule = std::function<LogicalResult(GradBuilder &, Operation *op, Value grad,
                                             SmallVectorImpl<Value> &grads, std::string &why)>;

/// The table, by op name ("kiln.add").
using GradRuleTable = llvm::StringMap<GradRule>;

/// Rules of the elementwise ops (arithmetic, activations, casts, select).
void addElementwiseGradRules(GradRuleTable &table);
/// Rules of the shape ops (permute, reshape, broadcast_to, slice, concat,
/// embedding).
void addShapeGradRules(GradRuleTable &table);
/// Rules of matmul, reductions and normalizations.
void addReductionGradRules(GradRuleTable &table);
/// Rules of conv2d, maximum and minimum.
void addNNGradRules(GradRuleTable &table);
/// Rules of max_pool2d and avg_pool2d.
void addPoolGradRules(GradRuleTable &table);

/// The rule for `op`, or null.
const GradRule *lookupGradRule(Operation *op);

/// Why `op` has no gradient rule (for the graph break / remark).
std::string nonDifferentiableReason(Operation *op);

} // namespace mlir::kiln

#endif // KILN_TRANSFORMS_AUTODIFF_GRADRULES_H
