//===- CudaArgReductions.cpp - argmax / argmin over rows, one block per row -===//
// SPDX-License-Identifier: Apache-2.0
//
// The block-parallel form of a two-output reduction that is the kiln
// lowering's argmax / argmin (codegen/common/Reduction.cpp: value and index
// accumulators, an element taken when strictly greater / less, or when it
// is NaN and the current value is not) over the innermost dim: one block
// per row, each thread folds its strided slice of the row in order (the
// generic's body, as the serial form does), then the threads' (value,
// index) pairs are merged in shared memory by a tree: NaN beats a number,
// else the greater (less) value, ties and two NaNs to the lower index —
// exactly the sequential fold's answer (the first NaN, else the first
// extreme). A thread that saw no element keeps the fills (the extreme's
// identity, index 0), which is also the sequential answer when every
// element equals that identity. Other bodies keep the serial form.
//===----------------------------------------------------------------------===//
#include "codegen/cuda/CudaEmitterInternal.h"

namespace mlir::kiln::cuda::detail {

/// Whether `c` is `cmpf pred, a, b` (for floats) or `cmpi pred, a, b`.
static bool isCompare(Value c, Value a, Value b, arith::CmpFPredicate fp, arith::CmpIPredicate ip) {
  if (auto f = c.getDefiningOp<arith::CmpFOp>())
    return f.getPredicate() == fp && f.getLhs() == a && f.getRhs() == b;
  if (auto i = c.getDefiningOp<arith::CmpIOp>())
    return i.getPredicate() == ip && i.getLhs() == a && i.getRhs() == b;
  return false;
}

/// Whether `take` is `x > v` (`x < v` when !isMax) or, for floats,
/// `(x > v) | (isnan(x) & !isnan(v))` in either order.
static bool isTake(Value take, Value x, Value v, bool isMax) {
  auto fp = isMax ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT;
  auto ip = isMax ? arith::CmpIPredicate::sgt : arith::CmpIPredicate::slt;
  if (!isa<FloatType>(x.getType()))
    return isCompare(take, x, v, fp, ip);
  auto orOp = take.getDefiningOp<arith::OrIOp>();
  if (!orOp)
    return false;
  auto nanClause = [&](Value c) {
    auto a = c.getDefiningOp<arith::AndIOp>();
    auto uno = arith::CmpFPredicate::UNO, ord = arith::CmpFPredicate::ORD;
    auto ne = arith::CmpIPredicate::ne;
    return a && isCompare(a.getLhs(), x, x, uno, ne) && isCompare(a.getRhs(), v, v, ord, ne);
  };
  return (isCompare(orOp.getLhs(), x, v, fp, ip) && nanClause(orOp.getRhs())) ||
         (isCompare(orOp.getRhs(), x, v, fp, ip) && nanClause(orOp.getLhs()));
}

std::optional<bool> rowArgReduction(linalg::GenericOp op) {
  unsigned n = op.getNumLoops();
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 2 || n == 0 ||
      op.getIteratorTypesArray().back() != utils::IteratorType::reduction ||
      llvm::count(op.getIteratorTypesArray(), utils::IteratorType::reduction) != 1)
    return std::nullopt;
  Block &b = op.getRegion().front();
  Value x = b.getArgument(0), v = b.getArgument(1), i = b.getArgument(2);
  auto y = cast<linalg::YieldOp>(b.getTerminator());
  auto s0 = y.getOperand(0).getDefiningOp<arith::SelectOp>();
  auto s1 = y.getOperand(1).getDefiningOp<arith::SelectOp>();
  if (!s0 || !s1 || s0.getCondition() != s1.getCondition() || s0.getTrueValue() != x ||
      s0.getFalseValue() != v || s1.getFalseValue() != i || !i.getType().isInteger(64))
    return std::nullopt;
  auto cast = s1.getTrueValue().getDefiningOp<arith::IndexCastOp>();
  auto idx = cast ? cast.getIn().getDefiningOp<linalg::IndexOp>() : linalg::IndexOp();
  if (!idx || idx.getDim() != n - 1)
    return std::nullopt;
  for (bool isMax : {true, false})
    if (isTake(s0.getCondition(), x, v, isMax))
      return isMax;
  return std::nullopt;
}

void FunctionEmitter::printRowArgReduction(KernelInfo &k, bool isMax, ArrayRef<int64_t> ranges,
                                           const std::string &ity,
                                           const llvm::SmallBitVector &usedDims,
                                           const std::string &valueType, const std::string &accs,
                                           const std::string &inner, const std::string &stores) {
  unsigned rd = ranges.size() - 1;
  int64_t length = ranges.back(), rows = 1;
  for (unsigned d = 0; d < rd; ++d)
    rows *= ranges[d];
  k.kind = KernelInfo::RowReduction;
  k.blockX = reductionBlockSize(length);
  k.gridX = std::max<int64_t>(1, std::min(rows, kMaxGrid));
  os << "  __shared__ " << valueType << " s_v[" << k.blockX << "];\n";
  os << "  __shared__ long long s_i[" << k.blockX << "];\n";
  os << "  for (" << ity << " row = blockIdx.x; row < " << rows << "; row += gridDim.x) {\n";
  SmallVector<std::string> decode = decodeLinearIndex("row", ranges.drop_back());
  for (unsigned d = 0; d < rd; ++d)
    if (usedDims.test(d))
      os << "    const " << ity << " d" << d << " = " << decode[d] << ";\n";
  os << accs;
  os << "    for (" << ity << " d" << rd << " = threadIdx.x; d" << rd << " < " << length << "; d"
     << rd << " += blockDim.x) {\n"
     << inner << "    }\n";
  os << "    s_v[threadIdx.x] = acc0;\n    s_i[threadIdx.x] = acc1;\n    __syncthreads();\n";
  os << "    // Merge: NaN beats a number, else the " << (isMax ? "greater" : "less")
     << " value; ties and two NaNs: the lower index.\n";
  os << "    for (unsigned h = blockDim.x / 2; h > 0; h >>= 1) {\n"
     << "      if (threadIdx.x < h) {\n"
     << "        const " << valueType << " a = s_v[threadIdx.x], b = s_v[threadIdx.x + h];\n"
     << "        const long long ia = s_i[threadIdx.x], ib = s_i[threadIdx.x + h];\n"
     << "        const bool an = a != a, bn = b != b;\n"
     << "        if (bn ? (!an || ib < ia) : (!an && ((b " << (isMax ? ">" : "<")
     << " a) || (b == a && ib < ia)))) {\n"
     << "          s_v[threadIdx.x] = b;\n          s_i[threadIdx.x] = ib;\n        }\n      }\n"
     << "      __syncthreads();\n    }\n";
  os << "    if (threadIdx.x == 0) {\n      acc0 = s_v[0];\n      acc1 = s_i[0];\n"
     << stores << "    }\n    __syncthreads();\n  }\n}\n\n";
}

} // namespace mlir::kiln::cuda::detail
