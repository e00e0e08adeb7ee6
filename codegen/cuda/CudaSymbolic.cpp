//===- CudaSymbolic.cpp - dynamic dims as kernel arguments ----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Symbolic sizes for the CUDA emitter (codegen/cuda/README.md, "Dynamic
// dims"): each dynamic dim of a function argument is a symbol `s<k>`; the
// size of every other dynamic dim is traced through the fused IR's shape
// ops (tensor.empty sizes, tensor.dim, arith.muli, affine.apply products,
// collapse/expand_shape, destination operands) to a constant times a
// product of symbols. Pointwise and row-reduction kernels take the symbols
// as `long long` parameters, GEMM steps carry their sizes as text; every other op with a dynamic
// tensor is refused with its name (never a kernel with a wrong size).
//===----------------------------------------------------------------------===//
#include "codegen/cuda/CudaEmitterInternal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/StringExtras.h"

namespace mlir::kiln::cuda::detail {

SymSize::SymSize(int64_t c) {
  if (c != 0)
    terms.push_back({Monomial(), c});
}

SymSize SymSize::symbol(unsigned k) {
  SymSize s(0);
  s.terms.push_back({Monomial{k}, 1});
  return s;
}

void SymSize::canonicalize() {
  llvm::sort(terms, [](const auto &a, const auto &b) { return a.first < b.first; });
  decltype(terms) merged;
  for (auto &t : terms) {
    if (!merged.empty() && merged.back().first == t.first)
      merged.back().second += t.second;
    else
      merged.push_back(t);
  }
  llvm::erase_if(merged, [](const auto &t) { return t.second == 0; });
  terms = std::move(merged);
}

bool SymSize::isNonNegative() const {
  return llvm::all_of(terms, [](const auto &t) { return t.second >= 0; });
}

std::string SymSize::str() const {
  if (terms.empty())
    return "0";
  // Terms with symbols first, the constant last: `s0 * 2 + 1`.
  SmallVector<std::pair<Monomial, int64_t>, 2> ordered(terms.begin(), terms.end());
  if (ordered.front().first.empty())
    std::rotate(ordered.begin(), ordered.begin() + 1, ordered.end());
  std::string s;
  for (auto [i, t] : llvm::enumerate(ordered)) {
    const auto &[mono, coeff] = t;
    int64_t c = i > 0 ? std::abs(coeff) : coeff;
    if (i > 0)
      s += coeff < 0 ? " - " : " + ";
    std::string term = llvm::join(
        llvm::map_range(mono, [](unsigned k) { return "s" + std::to_string(k); }), " * ");
    if (term.empty())
      term = std::to_string(c);
    else if (c != 1)
      term += " * " + std::to_string(c);
    s += term;
  }
  return s;
}

std::string SymSize::paren() const {
  bool single = terms.empty() ||
                (terms.size() == 1 && terms[0].second >= 0 &&
                 (terms[0].first.empty() || (terms[0].first.size() == 1 && terms[0].second == 1)));
  return single ? str() : "(" + str() + ")";
}

SymSize SymSize::operator*(const SymSize &o) const {
  SymSize r(0);
  for (const auto &[m1, c1] : terms)
    for (const auto &[m2, c2] : o.terms) {
      Monomial m = m1;
      m.append(m2.begin(), m2.end());
      llvm::sort(m);
      r.terms.push_back({m, c1 * c2});
    }
  r.canonicalize();
  return r;
}

SymSize SymSize::operator+(const SymSize &o) const {
  SymSize r = *this;
  r.terms.append(o.terms.begin(), o.terms.end());
  r.canonicalize();
  return r;
}

SymSize SymSize::operator-(const SymSize &o) const { return *this + o * SymSize(-1); }

std::optional<SymSize> SymSize::dividedBy(const SymSize &o) const {
  if (*this == o)
    return SymSize(1);
  if (o.terms.size() != 1)
    return std::nullopt;
  const auto &[dm, dc] = o.terms[0];
  SymSize r(0);
  for (const auto &[m, c] : terms) {
    if (c % dc != 0)
      return std::nullopt;
    Monomial q = m;
    for (unsigned k : dm) {
      auto *it = llvm::find(q, k);
      if (it == q.end())
        return std::nullopt;
      q.erase(it);
    }
    r.terms.push_back({q, c / dc});
  }
  r.canonicalize();
  return r;
}

SymShape staticShape(ArrayRef<int64_t> shape) {
  SymShape s;
  for (int64_t d : shape)
    s.push_back(SymSize(d));
  return s;
}

SmallVector<SymSize> rowMajorStrides(ArrayRef<SymSize> shape) {
  SmallVector<SymSize> s(shape.size(), SymSize(1));
  for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape[d + 1];
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

/// The polynomial an affine expression computes over `operands` (dims
/// first, then symbols), or failure for anything but sums and products of
/// them and constants (floordiv, mod, ceildiv).
static FailureOr<SymSize> affineSize(AffineExpr e, ArrayRef<FailureOr<SymSize>> operands,
                                     unsigned numDims) {
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return SymSize(c.getValue());
  if (auto d = dyn_cast<AffineDimExpr>(e))
    return operands[d.getPosition()];
  if (auto s = dyn_cast<AffineSymbolExpr>(e))
    return operands[numDims + s.getPosition()];
  if (e.getKind() != AffineExprKind::Mul && e.getKind() != AffineExprKind::Add)
    return failure();
  auto b = cast<AffineBinaryOpExpr>(e);
  FailureOr<SymSize> l = affineSize(b.getLHS(), operands, numDims);
  FailureOr<SymSize> r = affineSize(b.getRHS(), operands, numDims);
  if (failed(l) || failed(r))
    return failure();
  return e.getKind() == AffineExprKind::Mul ? *l * *r : *l + *r;
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
  } else if (isa_and_nonnull<arith::MulIOp, arith::AddIOp, arith::SubIOp>(def)) {
    FailureOr<SymSize> l = sizeOf(def->getOperand(0), user), r = sizeOf(def->getOperand(1), user);
    if (failed(l) || failed(r))
      return failure();
    if (isa<arith::MulIOp>(def))
      return *l * *r;
    return isa<arith::AddIOp>(def) ? *l + *r : *l - *r;
  } else if (auto cast = dyn_cast_or_null<arith::IndexCastOp>(def)) {
    return sizeOf(cast.getIn(), user);
  } else if (isa_and_nonnull<arith::DivUIOp, arith::DivSIOp>(def)) {
    // An exact quotient (a reshape's `-1` dim: the element count over the
    // static dims).
    FailureOr<SymSize> l = sizeOf(def->getOperand(0), user), r = sizeOf(def->getOperand(1), user);
    if (failed(l) || failed(r))
      return failure();
    if (std::optional<SymSize> q = l->dividedBy(*r))
      return *q;
  } else if (def && def->getName().getStringRef() == "affine.apply") {
    // affine.apply (no dependency on the affine dialect: its map attribute).
    auto map = def->getAttrOfType<AffineMapAttr>("map");
    SmallVector<FailureOr<SymSize>> operands;
    for (Value o : def->getOperands())
      operands.push_back(sizeOf(o, user));
    if (map && map.getValue().getNumResults() == 1 &&
        llvm::all_of(operands, [](auto &o) { return succeeded(o); })) {
      FailureOr<SymSize> r =
          affineSize(map.getValue().getResult(0), operands, map.getValue().getNumDims());
      if (succeeded(r))
        return r;
    }
  }
  InFlightDiagnostic d = user->emitError(
      "CUDA emitter: a dynamic size is not a polynomial in the arguments' dims (symbols)");
  if (def)
    d.attachNote(def->getLoc()) << "computed by '" << def->getName() << "'";
  return failure();
}

FailureOr<SymSize> FunctionEmitter::sizeOf(OpFoldResult v, Operation *user) {
  if (auto a = dyn_cast<Attribute>(v))
    return SymSize(cast<IntegerAttr>(a).getInt());
  return sizeOf(cast<Value>(v), user);
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
  } else if (auto slice = dyn_cast_or_null<tensor::ExtractSliceOp>(def)) {
    llvm::SmallBitVector dropped = slice.getDroppedDims();
    for (auto [k, size] : llvm::enumerate(slice.getMixedSizes())) {
      if (dropped.test(k))
        continue;
      FailureOr<SymSize> d = sizeOf(size, slice);
      if (failed(d))
        return failure();
      s.push_back(*d);
    }
  } else if (auto r = dyn_cast_or_null<tensor::ReshapeOp>(def)) {
    // The shape operand: sizes (index_cast of index values) or constants.
    auto elements = r.getShape().getDefiningOp<tensor::FromElementsOp>();
    if (!elements)
      return r.emitError("CUDA emitter: a dynamic reshape's shape is not built from sizes");
    for (Value size : elements.getElements()) {
      FailureOr<SymSize> d = sizeOf(size, r);
      if (failed(d))
        return failure();
      s.push_back(*d);
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

void FunctionEmitter::requireEqual(const SymSize &a, const SymSize &b) {
  if (a == b)
    return;
  std::pair<std::string, std::string> c{a.str(), b.str()};
  if (!llvm::is_contained(fplan.constraints, c))
    fplan.constraints.push_back(c);
}

void FunctionEmitter::requireAtMost(const SymSize &a, const SymSize &b) {
  if ((b - a).isNonNegative())
    return;
  std::pair<std::string, std::string> c{a.str(), b.str()};
  if (!llvm::is_contained(fplan.bounds, c))
    fplan.bounds.push_back(c);
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
      } else {
        requireEqual(r[d], (*s)[k]);
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
          tensor::DimOp, tensor::ReshapeOp, tensor::FromElementsOp, linalg::GenericOp,
          linalg::TransposeOp, tensor::ExtractSliceOp, tensor::InsertSliceOp, func::ReturnOp,
          linalg::MatmulOp, linalg::MatmulTransposeBOp, linalg::BatchMatmulOp,
          linalg::BatchMatmulTransposeBOp>(op))
    return success();
  return op.emitError("CUDA emitter: '")
         << op.getName()
         << "' with dynamic shapes is not supported yet (dynamic dims are kernel arguments of "
            "pointwise and row-reduction kernels and GEMMs only)";
}

} // namespace mlir::kiln::cuda::detail
