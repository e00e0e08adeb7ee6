//===- CudaOnePass.cpp - one-pass statistics for row groups ---------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Finds the pairs of row reductions in a row group that can share one read
// of the row (planOnePass) and prints their combined statistics loop
// (printOnePassStats):
//   - online softmax: `m = max(P)` then `s = sum(exp(P' - m))` with P' ≡ P
//     → a running (max, rescaled sum) per thread, merged across the block
//     with (m, s) ⊕ (m', s') = (M, s·e^(m−M) + s'·e^(m'−M)), M = max(m, m');
//     a sum shifted by another per-row value h computed from the max
//     (log_softmax) is s·e^(m−h);
//   - Welford: `t = sum(P)`, `mean = t / N` (per-row member), then
//     `q = sum((P' - mean)^2)` with P' ≡ P → (count, mean, M2) per thread,
//     merged with Chan's rule; t = mean·N and q = M2.
// Everything else keeps the one-loop-per-reduction form of CudaRowGroups.cpp.
// The preamble functions (kiln_online_add, kiln_welford_add, their merges,
// kiln_block_merge) are in CudaEmitter.cpp.
//===----------------------------------------------------------------------===//
#include "codegen/cuda/CudaEmitterInternal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

namespace mlir::kiln::cuda::detail {

namespace {

Value stripReshapesOf(Value v) {
  while (true) {
    if (auto e = v.getDefiningOp<tensor::ExpandShapeOp>())
      v = e.getSrc();
    else if (auto c = v.getDefiningOp<tensor::CollapseShapeOp>())
      v = c.getSrc();
    else
      return v;
  }
}

/// Loop dim of a member → "p<k>" (row coordinate), "col" or "0" (unit).
std::string dimRole(linalg::GenericOp g, unsigned dim, size_t numRowDims) {
  size_t k = 0;
  SmallVector<int64_t> ranges = g.getStaticLoopRanges();
  for (unsigned j = 0; j < ranges.size(); ++j) {
    std::string role = ranges[j] == 1 ? "0" : k < numRowDims ? "p" + std::to_string(k) : "col";
    if (ranges[j] != 1)
      ++k;
    if (j == dim)
      return role;
  }
  return "?";
}

/// How an input operand is read: its tensor (through reshapes) and, per
/// non-unit tensor dim, the role of the loop dim indexing it.
std::optional<std::pair<Value, std::string>> accessOf(linalg::GenericOp g, OpOperand &o,
                                                      size_t numRowDims) {
  auto tt = dyn_cast<RankedTensorType>(o.get().getType());
  if (!tt)
    return std::make_pair(o.get(), std::string("scalar"));
  std::string key;
  AffineMap map = g.getMatchingIndexingMap(&o);
  for (auto [k, e] : llvm::enumerate(map.getResults())) {
    if (tt.getDimSize(k) == 1)
      continue;
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d)
      return std::nullopt;
    key += dimRole(g, d.getPosition(), numRowDims) + ",";
  }
  return std::make_pair(stripReshapesOf(o.get()), key);
}

/// Whether `a` (in the body of `ga`) and `b` (in `gb`) compute the same
/// value for the same row and column: same ops and attributes over the
/// same tensors read at the same (row, column).
bool sameValue(Value a, linalg::GenericOp ga, Value b, linalg::GenericOp gb, size_t nRow,
               unsigned depth = 0) {
  if (depth > 64)
    return false;
  auto aa = dyn_cast<BlockArgument>(a), ba = dyn_cast<BlockArgument>(b);
  bool aIn = aa && aa.getOwner() == &ga.getRegion().front();
  bool bIn = ba && ba.getOwner() == &gb.getRegion().front();
  if (aIn || bIn) {
    if (!aIn || !bIn || aa.getArgNumber() >= ga.getNumDpsInputs() ||
        ba.getArgNumber() >= gb.getNumDpsInputs())
      return false;
    auto ka = accessOf(ga, ga->getOpOperand(aa.getArgNumber()), nRow);
    auto kb = accessOf(gb, gb->getOpOperand(ba.getArgNumber()), nRow);
    return ka && kb && *ka == *kb;
  }
  Operation *oa = a.getDefiningOp(), *ob = b.getDefiningOp();
  bool aBody = oa && ga->isAncestor(oa), bBody = ob && gb->isAncestor(ob);
  if (!aBody || !bBody)
    return !aBody && !bBody && a == b; // captured from outside: the same value
  if (oa->getName() != ob->getName() || oa->getAttrDictionary() != ob->getAttrDictionary() ||
      oa->getNumOperands() != ob->getNumOperands() || oa->getNumResults() != 1 ||
      ob->getNumResults() != 1 || oa->getNumRegions() || ob->getNumRegions())
    return false;
  if (auto ia = dyn_cast<linalg::IndexOp>(oa))
    return dimRole(ga, ia.getDim(), nRow) == dimRole(gb, cast<linalg::IndexOp>(ob).getDim(), nRow);
  for (unsigned i = 0; i < oa->getNumOperands(); ++i)
    if (!sameValue(oa->getOperand(i), ga, ob->getOperand(i), gb, nRow, depth + 1))
      return false;
  return true;
}

/// `yield combine(x, %out)` with `combine` of type OpT → x.
template <typename OpT> Value reducedValue(linalg::GenericOp g) {
  Block &block = g.getRegion().front();
  auto yield = cast<linalg::YieldOp>(block.getTerminator());
  auto c = yield.getOperand(0).getDefiningOp<OpT>();
  BlockArgument out = block.getArguments().back();
  if (!c || !out.hasOneUse())
    return {};
  if (c.getLhs() == out)
    return c.getRhs();
  if (c.getRhs() == out)
    return c.getLhs();
  return {};
}

/// The block argument of `g` reading the result of `producer`, if `v` is one.
bool readsResultOf(linalg::GenericOp g, Value v, linalg::GenericOp producer) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != &g.getRegion().front() || arg.getArgNumber() >= g.getNumDpsInputs())
    return false;
  return stripReshapesOf(g->getOperand(arg.getArgNumber())) == producer.getResult(0);
}

/// The init of a row reduction is the identity of its combiner (0 or -inf).
bool identityInit(linalg::GenericOp g, double identity) {
  auto fill = stripReshapesOf(g.getDpsInits()[0]).getDefiningOp<linalg::FillOp>();
  if (!fill)
    return false;
  auto c = fill.getInputs()[0].getDefiningOp<arith::ConstantOp>();
  auto f = c ? dyn_cast<FloatAttr>(c.getValue()) : FloatAttr();
  return f && f.getValueAsDouble() == identity;
}

bool isFloatRow(linalg::GenericOp g) {
  Type t = cast<RankedTensorType>(g.getResult(0).getType()).getElementType();
  return t.isF32() || t.isF16() || t.isBF16() || t.isF64();
}

/// `mean` member: yields `r / N` or `r * (1/N)` of `lead`'s result.
bool isMeanOf(linalg::GenericOp g, linalg::GenericOp lead, int64_t length) {
  auto yield = cast<linalg::YieldOp>(g.getRegion().front().getTerminator());
  Operation *op = yield.getOperand(0).getDefiningOp();
  if (!op || op->getNumOperands() != 2 || !readsResultOf(g, op->getOperand(0), lead))
    return false;
  auto c = op->getOperand(1).getDefiningOp<arith::ConstantOp>();
  auto f = c ? dyn_cast<FloatAttr>(c.getValue()) : FloatAttr();
  if (!f)
    return false;
  double v = f.getValueAsDouble(), n = double(length);
  if (isa<arith::DivFOp>(op))
    return v == n;
  return isa<arith::MulFOp>(op) && std::fabs(v * n - 1.0) < 1e-6;
}

} // namespace

SmallVector<OnePassRole> planOnePass(ArrayRef<linalg::GenericOp> members, size_t numRowDims,
                                     int64_t length, ArrayRef<bool> isReduce) {
  SmallVector<OnePassRole> roles(members.size());
  for (size_t l = 0; l < members.size(); ++l) {
    if (!isReduce[l] || roles[l].kind != OnePassRole::None || !isFloatRow(members[l]))
      continue;
    size_t p = l + 1;
    while (p < members.size() && !isReduce[p])
      ++p;
    if (p == members.size() || roles[p].kind != OnePassRole::None)
      continue;
    linalg::GenericOp lead = members[l], partner = members[p];
    // Online softmax: max(P) then sum(exp(P - max)).
    if (Value x = reducedValue<arith::MaximumFOp>(lead)) {
      Value y = reducedValue<arith::AddFOp>(partner);
      auto e = y ? y.getDefiningOp<math::ExpOp>() : math::ExpOp();
      auto s = e ? e.getOperand().getDefiningOp<arith::SubFOp>() : arith::SubFOp();
      if (!s || !identityInit(lead, -INFINITY) || !identityInit(partner, 0.0) ||
          !sameValue(x, lead, s.getLhs(), partner, numRowDims))
        continue;
      // The shift is the max itself or a per-row value h between the two
      // (log_softmax's `isinf(max) ? 0 : max`): sum(exp(P - h)) = s·e^(m−h).
      for (size_t h = l; h < p; ++h)
        if ((h == l || !isReduce[h]) && readsResultOf(partner, s.getRhs(), members[h])) {
          roles[l] = {OnePassRole::SoftmaxLead, p, h};
          roles[p] = {OnePassRole::Partner, l, h};
          break;
        }
      continue;
    }
    // Welford: sum(P), mean = sum / N, sum((P - mean)^2).
    Value x = reducedValue<arith::AddFOp>(lead);
    Value y = reducedValue<arith::AddFOp>(partner);
    auto sq = y ? y.getDefiningOp<arith::MulFOp>() : arith::MulFOp();
    if (!x || !sq || sq.getLhs() != sq.getRhs() || !identityInit(lead, 0.0) ||
        !identityInit(partner, 0.0))
      continue;
    auto d = sq.getLhs().getDefiningOp<arith::SubFOp>();
    if (!d || !sameValue(x, lead, d.getLhs(), partner, numRowDims))
      continue;
    for (size_t m = l + 1; m < p; ++m)
      if (readsResultOf(partner, d.getRhs(), members[m]) && isMeanOf(members[m], lead, length)) {
        roles[l] = {OnePassRole::WelfordLead, p, m};
        roles[p] = {OnePassRole::Partner, l, m};
        break;
      }
  }
  return roles;
}

void printOnePassStats(llvm::raw_ostream &b, const OnePassRole &role, unsigned lead,
                       const std::string &vt, const std::string &ity, int64_t length,
                       const std::string &loopBody, const std::string &partial,
                       const std::string &leadStore) {
  bool softmax = role.kind == OnePassRole::SoftmaxLead;
  std::string rl = "r" + std::to_string(lead), rp = "r" + std::to_string(role.other);
  std::string idx = std::to_string(lead);
  int n = softmax ? 2 : 3;
  std::string zero = vt == "double" ? "0.0" : "0.0f";
  std::string init = softmax ? "{" + floatLiteral(-INFINITY, vt == "double") + ", " + zero + "}"
                             : "{" + zero + ", " + zero + ", " + zero + "}";
  if (softmax)
    b << "    // " << rl << ", " << rp << ": online softmax statistics (running max, "
      << "sum of exp(x - max) rescaled when the max grows), one read of the row\n";
  else
    b << "    // " << rl << ", " << rp << ": Welford statistics (count, mean, M2), one read "
      << "of the row; " << rl << " = mean * " << length << ", " << rp << " = M2\n";
  b << "    " << vt << " " << rl << ", " << rp << ";\n    {\n";
  b << "      " << vt << " st[" << n << "] = " << init << ";\n";
  b << "      for (" << ity << " col = threadIdx.x; col < " << length << "; col += blockDim.x) {\n";
  b << loopBody;
  b << "        " << (softmax ? "kiln_online_add" : "kiln_welford_add") << "(st, " << partial
    << ");\n";
  b << "      }\n";
  b << "      kiln_block_merge<" << n << ", " << vt << ">(st, partials" << idx << ", "
    << (softmax ? "kiln_online_merge" : "kiln_welford_merge") << "{});\n";
  b << "      if (threadIdx.x == 0) {\n";
  if (softmax)
    b << "        s_" << rl << " = st[0];\n        s_" << rp << " = st[1];\n";
  else
    b << "        s_" << rl << " = st[1] * " << floatLiteral(double(length), vt == "double")
      << ";\n        s_" << rp << " = st[2];\n";
  b << leadStore;
  b << "      }\n      __syncthreads();\n";
  b << "      " << rl << " = s_" << rl << ";\n      " << rp << " = s_" << rp << ";\n    }\n";
}

} // namespace mlir::kiln::cuda::detail
