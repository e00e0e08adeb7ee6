//===- KilnOps.cpp - kiln op verifiers and shape inference -------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Result-type inference (InferTypeOpInterface) and custom verifiers of the
// kiln ops. Every error names what is wrong and the offending value so the
// diagnostic is actionable; each has a case in test/ir/invalid.mlir.
//===----------------------------------------------------------------------===//
#include "ir/KilnOps.h"
#include "ir/ShapeUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

RankedTensorType rankedType(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// Shared inference of the broadcasting binary ops: operands share an
/// element type; the result has `resultElt` (or the operand element type).
LogicalResult inferBroadcast(std::optional<Location> loc, ValueRange operands, Type resultElt,
                             SmallVectorImpl<Type> &inferred) {
  auto lhs = rankedType(operands[0]);
  auto rhs = rankedType(operands[1]);
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "operands have different element types (", lhs.getElementType(),
                             " vs ", rhs.getElementType(), "); insert kiln.cast to promote");
  auto shape = broadcastShapes(lhs.getShape(), rhs.getShape());
  if (!shape)
    return emitOptionalError(loc, "shapes ", lhs, " and ", rhs, " are not broadcast-compatible");
  inferred.push_back(RankedTensorType::get(*shape, resultElt ? resultElt : lhs.getElementType()));
  return success();
}

/// Checks that `dims` are unique and each in [0, rank).
LogicalResult verifyDims(std::optional<Location> loc, ArrayRef<int64_t> dims, int64_t rank,
                         StringRef what) {
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t d : dims) {
    if (d < 0 || d >= rank)
      return emitOptionalError(loc, what, " dim ", d, " is out of range for rank ", rank);
    if (!seen.insert(d).second)
      return emitOptionalError(loc, what, " dim ", d, " is repeated");
  }
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Broadcasting elementwise ops
//===----------------------------------------------------------------------===//

#define KILN_BINARY_INFER(OP, RESULT_ELT)                                                          \
  LogicalResult OP::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,                \
                                     ValueRange operands, DictionaryAttr, OpaqueProperties,        \
                                     RegionRange, SmallVectorImpl<Type> &inferred) {               \
    return inferBroadcast(loc, operands, RESULT_ELT, inferred);                                    \
  }

KILN_BINARY_INFER(AddOp, Type())
KILN_BINARY_INFER(SubOp, Type())
KILN_BINARY_INFER(MulOp, Type())
KILN_BINARY_INFER(DivOp, Type())
KILN_BINARY_INFER(PowOp, Type())
KILN_BINARY_INFER(MaximumOp, Type())
KILN_BINARY_INFER(MinimumOp, Type())
KILN_BINARY_INFER(FmodOp, Type())
KILN_BINARY_INFER(FloorDivOp, Type())
KILN_BINARY_INFER(EqOp, IntegerType::get(ctx, 1))
KILN_BINARY_INFER(NeOp, IntegerType::get(ctx, 1))
KILN_BINARY_INFER(LtOp, IntegerType::get(ctx, 1))
KILN_BINARY_INFER(LeOp, IntegerType::get(ctx, 1))
KILN_BINARY_INFER(GtOp, IntegerType::get(ctx, 1))
KILN_BINARY_INFER(GeOp, IntegerType::get(ctx, 1))
#undef KILN_BINARY_INFER

LogicalResult SelectOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         ValueRange operands, DictionaryAttr, OpaqueProperties,
                                         RegionRange, SmallVectorImpl<Type> &inferred) {
  auto cond = rankedType(operands[0]);
  auto t = rankedType(operands[1]);
  auto f = rankedType(operands[2]);
  if (t.getElementType() != f.getElementType())
    return emitOptionalError(loc, "on_true and on_false have different element types (",
                             t.getElementType(), " vs ", f.getElementType(), ")");
  auto values = broadcastShapes(t.getShape(), f.getShape());
  auto all = values ? broadcastShapes(cond.getShape(), *values) : std::nullopt;
  if (!all)
    return emitOptionalError(loc, "shapes of condition ", cond, ", on_true ", t, " and on_false ",
                             f, " are not broadcast-compatible");
  inferred.push_back(RankedTensorType::get(*all, t.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         ValueRange operands, DictionaryAttr, OpaqueProperties,
                                         RegionRange, SmallVectorImpl<Type> &inferred) {
  auto lhs = rankedType(operands[0]);
  auto rhs = rankedType(operands[1]);
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return emitOptionalError(loc, "operands must have rank >= 2, got ", lhs, " and ", rhs);
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "operands have different element types (", lhs.getElementType(),
                             " vs ", rhs.getElementType(), ")");
  ArrayRef<int64_t> ls = lhs.getShape(), rs = rhs.getShape();
  int64_t k1 = ls.back(), k2 = rs[rs.size() - 2];
  if (!ShapedType::isDynamic(k1) && !ShapedType::isDynamic(k2) && k1 != k2)
    return emitOptionalError(loc, "contraction dims differ: lhs has K = ", k1,
                             ", rhs has K = ", k2);
  auto batch = broadcastShapes(ls.drop_back(2), rs.drop_back(2));
  if (!batch)
    return emitOptionalError(loc, "batch dims of ", lhs, " and ", rhs,
                             " are not broadcast-compatible");
  SmallVector<int64_t> shape = *batch;
  shape.push_back(ls[ls.size() - 2]);
  shape.push_back(rs.back());
  inferred.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

LogicalResult PermuteOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          ValueRange operands, DictionaryAttr attrs,
                                          OpaqueProperties props, RegionRange regions,
                                          SmallVectorImpl<Type> &inferred) {
  Adaptor adaptor(operands, attrs, props, regions);
  auto type = rankedType(adaptor.getInput());
  ArrayRef<int64_t> dims = adaptor.getDims();
  if (static_cast<int64_t>(dims.size()) != type.getRank())
    return emitOptionalError(loc, "dims has ", dims.size(), " entries but the operand has rank ",
                             type.getRank());
  if (failed(verifyDims(loc, dims, type.getRank(), "permutation")))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t d : dims)
    shape.push_back(type.getDimSize(d));
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

LogicalResult ReshapeOp::verify() {
  auto in = rankedType(getInput());
  auto out = rankedType(getResult());
  if (in.getElementType() != out.getElementType())
    return emitOpError("cannot change the element type (")
           << in.getElementType() << " to " << out.getElementType() << "); use kiln.cast";
  if (!in.hasStaticShape() || !out.hasStaticShape())
    return success();
  std::optional<int64_t> inCount = staticElementCount(in.getShape());
  std::optional<int64_t> outCount = staticElementCount(out.getShape());
  if (!inCount || !outCount)
    return emitOpError("element count of ") << (inCount ? out : in) << " does not fit in 64 bits";
  if (*inCount != *outCount)
    return emitOpError("element count changes from ") << *inCount << " to " << *outCount;
  return success();
}

LogicalResult BroadcastToOp::verify() {
  auto in = rankedType(getInput());
  auto out = rankedType(getResult());
  if (in.getElementType() != out.getElementType())
    return emitOpError("cannot change the element type (")
           << in.getElementType() << " to " << out.getElementType() << ")";
  if (!isBroadcastableTo(in.getShape(), out.getShape()))
    return emitOpError("operand type ") << in << " cannot be broadcast to " << out;
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        ValueRange operands, DictionaryAttr attrs,
                                        OpaqueProperties props, RegionRange regions,
                                        SmallVectorImpl<Type> &inferred) {
  Adaptor adaptor(operands, attrs, props, regions);
  auto type = rankedType(adaptor.getInput());
  ArrayRef<int64_t> start = adaptor.getStart(), end = adaptor.getEnd(), step = adaptor.getStep();
  int64_t rank = type.getRank();
  if ((int64_t)start.size() != rank || (int64_t)end.size() != rank || (int64_t)step.size() != rank)
    return emitOptionalError(loc, "start, end and step must have one entry per dim (rank ", rank,
                             "), got ", start.size(), ", ", end.size(), " and ", step.size());
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    if (step[i] < 1)
      return emitOptionalError(loc, "step ", step[i], " of dim ", i, " must be >= 1");
    int64_t size = type.getDimSize(i);
    if (end[i] == -1 && start[i] == 0 && step[i] == 1) {
      shape.push_back(size); // the whole dim, static or dynamic
      continue;
    }
    // Negative bounds count from the end (sliceBounds). Along a dynamic dim
    // both from the front or both from the end give a static length, a
    // start from the front and an end from the end a dynamic one.
    bool dyn = ShapedType::isDynamic(size);
    if (dyn && start[i] < 0 && end[i] >= 0)
      return emitOptionalError(loc, "dim ", i, ": a start from the end needs an end from the end");
    if (dyn && start[i] >= 0 && end[i] < 0) {
      shape.push_back(ShapedType::kDynamic);
      continue;
    }
    // Both from the end: end + 1 - start (128 bits: no bound overflows).
    __int128 wide = (__int128)end[i] - start[i] + (start[i] < 0 && end[i] < 0 ? 1 : 0);
    if (wide > INT64_MAX)
      return emitOptionalError(loc, "dim ", i, ": start ", start[i], " and end ", end[i],
                               " span more than 2^63 elements");
    int64_t span = (int64_t)wide;
    if (!dyn) {
      auto [b, e] = sliceBounds(start[i], end[i], size);
      if (b < 0 || b > e)
        return emitOptionalError(loc, "dim ", i, ": need 0 <= start <= end, got start ", start[i],
                                 " and end ", end[i]);
      if (e > size)
        return emitOptionalError(loc, "dim ", i, ": end ", end[i], " exceeds the dim size ", size);
      span = e - b;
    } else if (span < 0) {
      return emitOptionalError(loc, "dim ", i, ": need start <= end, got start ", start[i],
                               " and end ", end[i]);
    }
    // ceil(span / step) without overflow: 0 <= span.
    shape.push_back(span / step[i] + (span % step[i] != 0));
  }
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         ValueRange operands, DictionaryAttr attrs,
                                         OpaqueProperties props, RegionRange regions,
                                         SmallVectorImpl<Type> &inferred) {
  Adaptor adaptor(operands, attrs, props, regions);
  if (operands.empty())
    return emitOptionalError(loc, "needs at least one operand");
  auto first = rankedType(operands[0]);
  int64_t rank = first.getRank();
  int64_t dim = adaptor.getDim();
  if (rank < 1)
    return emitOptionalError(loc, "operands must have rank >= 1, got ", first);
  if (dim < 0 || dim >= rank)
    return emitOptionalError(loc, "dim ", dim, " is out of range for rank ", rank);
  SmallVector<int64_t> shape(first.getShape());
  for (Value v : operands.drop_front()) {
    auto t = rankedType(v);
    if (t.getElementType() != first.getElementType())
      return emitOptionalError(loc, "operands have different element types (",
                               first.getElementType(), " vs ", t.getElementType(),
                               "); insert kiln.cast to promote");
    if (t.getRank() != rank)
      return emitOptionalError(loc, "operands have different ranks (", first, " vs ", t, ")");
    for (int64_t i = 0; i < rank; ++i) {
      int64_t a = shape[i], b = t.getDimSize(i);
      if (i == dim) {
        int64_t sum;
        if (ShapedType::isDynamic(a) || ShapedType::isDynamic(b))
          sum = ShapedType::kDynamic;
        else if (llvm::AddOverflow(a, b, sum))
          return emitOptionalError(loc, "the concatenated size of dim ", dim,
                                   " does not fit in 64 bits");
        shape[i] = sum;
      } else if (!ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b) {
        return emitOptionalError(loc, "operand ", t, " differs from ", first, " in dim ", i,
                                 " (only dim ", dim, " may differ)");
      } else if (ShapedType::isDynamic(a)) {
        shape[i] = b;
      }
    }
  }
  inferred.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            ValueRange operands, DictionaryAttr, OpaqueProperties,
                                            RegionRange, SmallVectorImpl<Type> &inferred) {
  auto weight = rankedType(operands[0]);
  auto indices = rankedType(operands[1]);
  if (weight.getRank() != 2)
    return emitOptionalError(loc, "weight must be 2-D, got ", weight);
  if (!indices.getElementType().isInteger(64) && !indices.getElementType().isInteger(32))
    return emitOptionalError(loc, "indices must be i64 or i32, got ", indices);
  SmallVector<int64_t> shape(indices.getShape());
  shape.push_back(weight.getDimSize(1));
  inferred.push_back(RankedTensorType::get(shape, weight.getElementType()));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         ValueRange operands, DictionaryAttr attrs,
                                         OpaqueProperties props, RegionRange regions,
                                         SmallVectorImpl<Type> &inferred) {
  Adaptor adaptor(operands, attrs, props, regions);
  auto input = rankedType(adaptor.getInput());
  auto index = rankedType(adaptor.getIndex());
  int64_t rank = input.getRank(), dim = adaptor.getDim();
  if (index.getRank() != rank)
    return emitOptionalError(loc, "index ", index, " must have the rank of the operand ", input);
  if (dim < 0 || dim >= std::max<int64_t>(rank, 1))
    return emitOptionalError(loc, "dim ", dim, " is out of range for rank ", rank);
  for (int64_t i = 0; i < rank; ++i) {
    int64_t is = index.getDimSize(i), s = input.getDimSize(i);
    if (i != dim && !ShapedType::isDynamic(is) && !ShapedType::isDynamic(s) && is > s)
      return emitOptionalError(loc, "index dim ", i, " has size ", is,
                               ", larger than the operand's ", s);
  }
  inferred.push_back(RankedTensorType::get(index.getShape(), input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

#define KILN_REDUCTION_INFER(OP)                                                                   \
  LogicalResult OP::inferReturnTypes(                                                              \
      MLIRContext *, std::optional<Location> loc, ValueRange operands, DictionaryAttr attrs,       \
      OpaqueProperties props, RegionRange regions, SmallVectorImpl<Type> &inferred) {              \
    Adaptor adaptor(operands, attrs, props, regions);                                              \
    auto type = rankedType(adaptor.getInput());                                                    \
    if (failed(verifyDims(loc, adaptor.getDims(), type.getRank(), "reduction")))                   \
      return failure();                                                                            \
    inferred.push_back(RankedTensorType::get(                                                      \
        reducedShape(type.getShape(), adaptor.getDims(), adaptor.getKeepdim()),                    \
        type.getElementType()));                                                                   \
    return success();                                                                              \
  }

KILN_REDUCTION_INFER(SumOp)
KILN_REDUCTION_INFER(MeanOp)
KILN_REDUCTION_INFER(MaxOp)
KILN_REDUCTION_INFER(MinOp)
KILN_REDUCTION_INFER(ProdOp)
#undef KILN_REDUCTION_INFER

/// Shared inference of argmax/argmin: `dim` removed (or kept as 1), i64.
static LogicalResult inferArgReduction(MLIRContext *ctx, std::optional<Location> loc,
                                       RankedTensorType type, int64_t dim, bool keepdim,
                                       SmallVectorImpl<Type> &inferred) {
  int64_t rank = type.getRank();
  if (dim < 0 || dim >= std::max<int64_t>(rank, 1))
    return emitOptionalError(loc, "dim ", dim, " is out of range for rank ", rank);
  SmallVector<int64_t> dims;
  if (rank > 0)
    dims.push_back(dim);
  inferred.push_back(RankedTensorType::get(reducedShape(type.getShape(), dims, keepdim),
                                           IntegerType::get(ctx, 64)));
  return success();
}

/// Shared verifier of argmax/argmin: `dim` in range, no i1 operand, no
/// empty reduced dim. Runs before the inferred-type check (which InferType
/// defers until after `verify()`), so it checks `dim` itself before using it.
static LogicalResult verifyArgReduction(Operation *op, RankedTensorType type, int64_t dim) {
  if (dim < 0 || dim >= std::max<int64_t>(type.getRank(), 1))
    return op->emitOpError("dim ") << dim << " is out of range for rank " << type.getRank();
  if (type.getElementType().isInteger(1))
    return op->emitOpError("operand must not be i1 (torch rejects bool)");
  if (type.getRank() > 0 && type.getDimSize(dim) == 0)
    return op->emitOpError("cannot reduce the empty dim ") << dim;
  return success();
}

#define KILN_ARG_REDUCTION(OP)                                                                     \
  LogicalResult OP::inferReturnTypes(                                                              \
      MLIRContext *ctx, std::optional<Location> loc, ValueRange operands, DictionaryAttr attrs,    \
      OpaqueProperties props, RegionRange regions, SmallVectorImpl<Type> &inferred) {              \
    Adaptor adaptor(operands, attrs, props, regions);                                              \
    return inferArgReduction(ctx, loc, rankedType(adaptor.getInput()),                             \
                             static_cast<int64_t>(adaptor.getDim()), adaptor.getKeepdim(),         \
                             inferred);                                                            \
  }                                                                                                \
  LogicalResult OP::verify() {                                                                     \
    return verifyArgReduction(*this, rankedType(getInput()), static_cast<int64_t>(getDim()));      \
  }
KILN_ARG_REDUCTION(ArgmaxOp)
KILN_ARG_REDUCTION(ArgminOp)
#undef KILN_ARG_REDUCTION

LogicalResult CumsumOp::verify() {
  int64_t rank = rankedType(getInput()).getRank();
  int64_t dim = static_cast<int64_t>(getDim()); // I64Attr getters are unsigned
  if (dim < 0 || dim >= std::max<int64_t>(rank, 1))
    return emitOpError("dim ") << dim << " is out of range for rank " << rank;
  return success();
}

//===----------------------------------------------------------------------===//
// Activations and normalizations
//===----------------------------------------------------------------------===//

LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be \"none\" or \"tanh\", got \"")
           << getApproximate() << "\"";
  return success();
}

LogicalResult SoftmaxOp::verify() {
  int64_t rank = rankedType(getInput()).getRank();
  int64_t dim = getDim();
  if (dim < 0 || dim >= std::max<int64_t>(rank, 1))
    return emitOpError("dim ") << dim << " is out of range for rank " << rank;
  return success();
}

LogicalResult LayerNormOp::verify() {
  auto in = rankedType(getInput());
  int64_t n = getNumDims();
  if (n < 1 || n > in.getRank())
    return emitOpError("num_dims must be in [1, ") << in.getRank() << "], got " << n;
  // Written so that NaN is rejected too.
  if (!(getEps().convertToDouble() >= 0))
    return emitOpError("eps must be non-negative");
  ArrayRef<int64_t> normalized = in.getShape().take_back(n);
  for (auto [name, v] : {std::pair<StringRef, Value>{"weight", getWeight()},
                         std::pair<StringRef, Value>{"bias", getBias()}}) {
    if (!v)
      continue;
    auto t = rankedType(v);
    if (t.getElementType() != in.getElementType())
      return emitOpError() << name << " element type " << t.getElementType()
                           << " differs from the input's " << in.getElementType();
    if (t.getShape() != normalized)
      return emitOpError() << name << " type " << t << " must have the normalized shape (the last "
                           << n << " dims of " << in << ")";
  }
  return success();
}

/// Parses the types of `kiln.layer_norm`'s optional `weight` and `bias`: one
/// `, type` for each operand that is present, in that order. (A declarative
/// `(`,` type($weight)^)? (`,` type($bias)^)?` is ambiguous when only `bias`
/// is given: its type would be taken for the weight's.)
static ParseResult parseLayerNormAffineTypes(
    OpAsmParser &parser, const std::optional<OpAsmParser::UnresolvedOperand> &weight,
    const std::optional<OpAsmParser::UnresolvedOperand> &bias, Type &weightType, Type &biasType) {
  if (weight && (parser.parseComma() || parser.parseType(weightType)))
    return failure();
  if (bias && (parser.parseComma() || parser.parseType(biasType)))
    return failure();
  return success();
}

/// Prints what parseLayerNormAffineTypes parses.
static void printLayerNormAffineTypes(OpAsmPrinter &printer, LayerNormOp, Value weight, Value bias,
                                      Type weightType, Type biasType) {
  if (weight)
    printer << ", " << weightType;
  if (bias)
    printer << ", " << biasType;
}

#define GET_OP_CLASSES
#include "ir/KilnOps.cpp.inc"
