//===- CudaSymbolic.cpp - dynamic dims as kernel arguments ----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Symbolic sizes for the CUDA emitter (codegen/cuda/README.md, "Dynamic
// dims"): each dynamic dim of a function argument is a symbol `s<k>`; the
// size of every other dynamic dim is traced through the fused IR's shape
// ops (tensor.empty sizes, tensor.dim, arith.muli, affine.apply products,
// collapse/expand_shape, destination operands) to a constant times a
// product of symbols. Pointwise and row-reduction kernels take the symbols
// as `long long` parameters; every other op with a dynamic tensor is
// refused with its name (never a kernel with a wrong size).
//===----------------------------------------------------------------------===//
#include "codegen/cuda/CudaEmitterInternal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/StringExtras.h"

namespace mlir::kiln::cuda::detail {

SymSize SymSize::symbol(unsigned k) {
  SymSize s;
  s.syms.push_back(k);
  return s;
}

std::string SymSize::str() const {
  if (syms.empty())
    return std::to_string(c);
  std::string s =
      llvm::join(llvm::map_range(syms, [](unsigned k) { return "s" + std::to_string(k); }), " * ");
  return c == 1 ? s : s + " * " + std::to_string(c);
}

std::string SymSize::paren() const {
  std::string s = str();
  return syms.size() + (c != 1 && !syms.empty()) > 1 ? "(" + s + ")" : s;
}

SymSize SymSize::operator*(const SymSize &o) const {
  SymSize r;
  r.c = c * o.c;
  r.syms = syms;
  r.syms.append(o.syms.begin(), o.syms.end());
  llvm::sort(r.syms);
  return r;
}

SymShape staticShape(ArrayRef<int64_t> shape) {
  SymShape s;
  for (int64_t d : shape)
    s.push_back(SymSize(d));
  return s;
}

SymSize product(ArrayRef<SymSize> dims) {
  SymSize p;
  for (const SymSize &d : dims)
    p = p * d;
  return p;
}

bool isStatic(ArrayRef<SymSize> dims) {
  return llvm::all_of(dims, [](const SymSize &d) { return d.isStatic(); });
}

SmallVector<std::string> decodeLinearIndex(const std::string &var, ArrayRef<SymSize> dims) {
  SymSize s;
  SmallVector<std::string> decode(dims.size());
  for (int64_t d = int64_t(dims.size()) - 1; d >= 0; --d) {
    std::string e = s.isOne() ? var : var + " / " + s.paren();
    if (dims[d].isOne())
      e = "0";
    else if (d > 0)
      e = (s.isOne() ? e : "(" + e + ")") + " % " + dims[d].paren();
    decode[d] = e;
    s = s * dims[d];
  }
  return decode;
}

SmallVector<std::string> decodeLinearIndex(const std::string &var, ArrayRef<int64_t> dims) {
  return decodeLinearIndex(var, staticShape(dims));
}

std::vector<std::string> FunctionEmitter::symbolParams() const {
  std::vector<std::string> p;
  for (size_t k = 0; k < fplan.symbols.size(); ++k)
    p.push_back("long long s" + std::to_string(k));
  return p;
}

/// The product an affine expression computes over `operands` (dims first,
/// then symbols), or failure for anything but products of them and
/// constants.
static FailureOr<SymSize> affineProduct(AffineExpr e, ArrayRef<FailureOr<SymSize>> operands,
                                        unsigned numDims) {
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return SymSize(c.getValue());
  if (auto d = dyn_cast<AffineDimExpr>(e))
    return operands[d.getPosition()];
  if (auto s = dyn_cast<AffineSymbolExpr>(e))
    return operands[numDims + s.getPosition()];
  if (e.getKind() != AffineExprKind::Mul)
    return failure();
  auto b = cast<AffineBinaryOpExpr>(e);
  FailureOr<SymSize> l = affineProduct(b.getLHS(), operands, numDims);
  FailureOr<SymSize> r = affineProduct(b.getRHS(), operands, numDims);
  if (failed(l) || failed(r))
    return failure();
  return *l * *r;
}

FailureOr<SymSize> FunctionEmitter::sizeOf(Value v, Operation *user) {
  APInt c;
  if (matchPattern(v, m_ConstantInt(&c)))
    return SymSize(c.getSExtValue());
  Operation *def = v.getDefiningOp();
  if (auto dim = dyn_cast_or_null<tensor::DimOp>(def)) {
    std::optional<int64_t> i = dim.getConstantIndex();
    FailureOr<SymShape> s = shapeOf(dim.getSource());
    if (i && succeeded(s) && *i < int64_t(s->size()))
      return (*s)[*i];
  } else if (auto mul = dyn_cast_or_null<arith::MulIOp>(def)) {
    FailureOr<SymSize> l = sizeOf(mul.getLhs(), user), r = sizeOf(mul.getRhs(), user);
    if (succeeded(l) && succeeded(r))
      return *l * *r;
    return failure();
  } else if (def && def->getName().getStringRef() == "affine.apply") {
    // affine.apply (no dependency on the affine dialect: its map attribute).
    auto map = def->getAttrOfType<AffineMapAttr>("map");
    SmallVector<FailureOr<SymSize>> operands;
    for (Value o : def->getOperands())
      operands.push_back(sizeOf(o, user));
    if (map && map.getValue().getNumResults() == 1 &&
        llvm::all_of(operands, [](auto &o) { return succeeded(o); })) {
      FailureOr<SymSize> r =
          affineProduct(map.getValue().getResult(0), operands, map.getValue().getNumDims());
      if (succeeded(r))
        return r;
    }
  }
  InFlightDiagnostic d = user->emitError(
      "CUDA emitter: a dynamic size is not a product of the arguments' dims (symbols)");
  if (def)
    d.attachNote(def->getLoc()) << "computed by '" << def->getName() << "'";
  return failure();
}

FailureOr<SymShape> FunctionEmitter::shapeOf(Value v) {
  auto tt = cast<RankedTensorType>(v.getType());
  if (tt.hasStaticShape())
    return staticShape(tt.getShape());
  auto it = symShapes.find(v);
  if (it != symShapes.end())
    return it->second;
  Operation *def = v.getDefiningOp();
  SymShape s;
  if (auto e = dyn_cast_or_null<tensor::EmptyOp>(def)) {
    for (int64_t d = 0; d < tt.getRank(); ++d) {
      if (!tt.isDynamicDim(d)) {
        s.push_back(SymSize(tt.getDimSize(d)));
        continue;
      }
      FailureOr<SymSize> size = sizeOf(e.getDynamicSize(d), e);
      if (failed(size))
        return failure();
      s.push_back(*size);
    }
  } else if (auto c = dyn_cast_or_null<tensor::CollapseShapeOp>(def)) {
    FailureOr<SymShape> src = shapeOf(c.getSrc());
    if (failed(src))
      return failure();
    for (ReassociationIndices group : c.getReassociationIndices()) {
      SymSize p;
      for (int64_t i : group)
        p = p * (*src)[i];
      s.push_back(p);
    }
  } else if (auto e = dyn_cast_or_null<tensor::ExpandShapeOp>(def)) {
    // static_output_shape, its dynamic entries from output_shape in order.
    auto dynamicSizes = e.getOutputShape();
    size_t next = 0;
    for (int64_t d : e.getStaticOutputShape()) {
      if (!ShapedType::isDynamic(d)) {
        s.push_back(SymSize(d));
        continue;
      }
      if (next >= dynamicSizes.size())
        return e.emitError("CUDA emitter: malformed output_shape");
      FailureOr<SymSize> size = sizeOf(dynamicSizes[next++], e);
      if (failed(size))
        return failure();
      s.push_back(*size);
    }
  } else if (auto dps = dyn_cast_or_null<DestinationStyleOpInterface>(def)) {
    FailureOr<SymShape> init = shapeOf(dps.getDpsInits()[cast<OpResult>(v).getResultNumber()]);
    if (failed(init))
      return failure();
    s = *init;
  } else {
    if (def)
      def->emitError("CUDA emitter: cannot trace the dynamic shape ") << tt << " of its result";
    else
      func.emitError("CUDA emitter: cannot trace the dynamic shape ") << tt;
    return failure();
  }
  symShapes[v] = s;
  return s;
}

FailureOr<SymShape> FunctionEmitter::loopRangesOf(linalg::GenericOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SymShape r = staticShape(ranges);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  // Each loop dim's size from the first operand dim it indexes; every other
  // operand dim it indexes must have that size at run time (a constraint
  // the executors check per call, e.g. `s0 == s2` for x + y of two `?`s).
  SmallVector<bool> found(ranges.size(), false);
  for (unsigned d = 0; d < ranges.size(); ++d)
    found[d] = !ShapedType::isDynamic(ranges[d]);
  for (OpOperand &operand : op->getOpOperands()) {
    auto tt = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!tt || tt.hasStaticShape())
      continue;
    FailureOr<SymShape> s = shapeOf(operand.get());
    if (failed(s))
      return failure();
    AffineMap map = maps[operand.getOperandNumber()];
    for (unsigned k = 0; k < map.getNumResults(); ++k) {
      auto e = dyn_cast<AffineDimExpr>(map.getResult(k));
      if (!e)
        continue;
      unsigned d = e.getPosition();
      if (!found[d]) {
        r[d] = (*s)[k];
        found[d] = true;
      } else if ((*s)[k] != r[d]) {
        std::pair<std::string, std::string> c{r[d].str(), (*s)[k].str()};
        if (!llvm::is_contained(fplan.constraints, c))
          fplan.constraints.push_back(c);
      }
    }
  }
  for (unsigned d = 0; d < ranges.size(); ++d)
    if (!found[d])
      return op.emitError("CUDA emitter: no operand gives the size of loop dim ") << d;
  return r;
}

LogicalResult FunctionEmitter::checkDynamicSupported(Operation &op) {
  auto dynamic = [](Type t) {
    auto r = dyn_cast<RankedTensorType>(t);
    return r && !r.hasStaticShape();
  };
  if (!llvm::any_of(op.getOperandTypes(), dynamic) && !llvm::any_of(op.getResultTypes(), dynamic))
    return success();
  if (isa<tensor::EmptyOp, linalg::FillOp, tensor::ExpandShapeOp, tensor::CollapseShapeOp,
          tensor::DimOp, linalg::GenericOp, func::ReturnOp>(op))
    return success();
  return op.emitError("CUDA emitter: '")
         << op.getName()
         << "' with dynamic shapes is not supported yet (dynamic dims are kernel arguments of "
            "pointwise and row-reduction kernels only)";
}

} // namespace mlir::kiln::cuda::detail
