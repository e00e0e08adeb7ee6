//===- IndexChecks.cpp - eager's index errors for data-dependent gathers --===//
// SPDX-License-Identifier: Apache-2.0
//
// kiln.gather and kiln.embedding clamp each index into the dim they read
// (so a read never leaves the operand), but eager raises on an index out of
// range: IndexError for `x[i]`, index_select, embedding, nll_loss's target,
// RuntimeError for torch.gather and F.one_hot's classes (the gather's
// IndexErrorCode attribute, Capture.h). Indices that come from data (a graph input, a computation)
// cannot be guarded, so the graph computes one extra 0-d i64 result, non-zero when any such index
// was out of range, and the runtime raises eager's error from it before the results reach the
// caller (Entry.cpp's runGraph, before side effects and in-place write-backs are replayed). Literal
// indices (kiln's own positions for flips, views, as_strided and resizes, and a user's
// `x[torch.tensor([6])]`) are checked at capture: out of range, the capture fails as a user error
// and eager raises. A gather along a symbolic dim, or marked `kiln.in_range` (a symbolic slice), is
// built by kiln from that size (SymbolicIndexing.cpp) and gets no check. An embedding whose rows
// are a symbolic size (advanced indexing of a tensor with symbolic dims) is checked against that
// size computed when the graph runs.
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

#include "ir/KilnOps.h"

namespace kiln {
namespace {

/// The elements of `index` when it is a kiln.constant seen through shape
/// ops and casts (the positions kiln builds for views, flips, resizes; a
/// user's `torch.tensor([...])`); null otherwise.
mlir::DenseElementsAttr literalIndex(Value index) {
  while (mlir::Operation *def = index.getDefiningOp()) {
    if (auto c = llvm::dyn_cast<mlir::kiln::ConstantOp>(def))
      return llvm::dyn_cast<mlir::DenseElementsAttr>(c.getValue());
    if (!llvm::isa<mlir::kiln::BroadcastToOp, mlir::kiln::ReshapeOp, mlir::kiln::CastOp>(def))
      return {};
    index = def->getOperand(0);
  }
  return {};
}

} // namespace

Value indexRangeCheck(Interpreter &I, mlir::Block &entry) {
  struct Check {
    Value index;
    int64_t size; ///< of the dim it reads
    int64_t code; ///< IndexErrorCode
    VarP symSize; ///< the size as a SymInt when it is a symbolic size
  };
  llvm::SmallVector<Check> checks;
  for (mlir::Operation &op : entry) {
    Value index;
    int64_t size;
    int64_t code = kIndexErrorIndex;
    VarP symSize;
    if (auto attr = op.getAttrOfType<mlir::IntegerAttr>(kIndexErrorAttr))
      code = attr.getInt();
    if (auto g = llvm::dyn_cast<mlir::kiln::GatherOp>(op)) {
      if (op.hasAttr("kiln.in_range")) // a symbolic slice (SymbolicIndexing.cpp)
        continue;
      index = g.getIndex();
      size = ttype(g.getInput()).getRank() ? ttype(g.getInput()).getDimSize(g.getDim()) : 1;
    } else if (auto em = llvm::dyn_cast<mlir::kiln::EmbeddingOp>(op)) {
      index = em.getIndices();
      size = ttype(em.getWeight()).getDimSize(0);
      // Rows that are a symbolic size (an advanced index of a tensor with
      // symbolic dims, SymbolicIndexing.cpp): checked against that size
      // read at run time, by the same ops in the shadow static capture.
      if (I.symbolOfDim(em.getWeight(), 0) >= 0)
        symSize = I.sizeVar(em.getWeight(), 0);
    } else {
      continue;
    }
    bool empty = ttype(index).hasStaticShape() && ttype(index).getNumElements() == 0;
    if ((mlir::ShapedType::isDynamic(size) && !symSize) || empty)
      continue;
    if (symSize && symSize->kind == Var::Kind::SymInt) {
      checks.push_back({index, size, code, symSize});
      continue;
    }
    // Literal positions are checked now; other constant-derived ones (a
    // negative literal made positive) are checked per call like data.
    if (auto literal = literalIndex(index);
        literal && llvm::isa<mlir::IntegerType>(literal.getElementType())) {
      for (const llvm::APInt &i : literal.getValues<llvm::APInt>())
        if (i.isNegative() || i.sge(size))
          throw Unsupported(BreakCategory::UserError, "an index out of range of a dim of size " +
                                                          std::to_string(size) + " (eager raises)");
      continue;
    }
    checks.push_back({index, size, code, nullptr});
  }
  if (checks.empty())
    return Value();
  I.builder().setInsertionPointToEnd(&entry);
  Emit e(I);
  auto i64 = [&](int64_t x) {
    return e.scalar(PyRef::steal(PyLong_FromLongLong(x)).get(), DType::I64);
  };
  Value flag;
  for (auto &[index, size, code, symSize] : checks) {
    // clamp(i, 0, size - 1) != i: out of range, whatever the index dtype.
    Value i = e.cast(index, DType::I64);
    Value last;
    if (symSize) { // the size at run time
      VarP n = symbolicSizeValue(I, *symSize->sym);
      last = n->isTensor() ? e.inferred<mlir::kiln::SubOp>({e.cast(n->value, DType::I64), i64(1)})
                           : i64(asInt(n, "size") - 1);
    } else {
      last = i64(size - 1);
    }
    Value clamped =
        e.inferred<mlir::kiln::MinimumOp>({e.inferred<mlir::kiln::MaximumOp>({i, i64(0)}), last});
    Value bad = e.cast(e.inferred<mlir::kiln::NeOp>({clamped, i}), DType::I64);
    if (code != kIndexErrorIndex)
      bad = e.inferred<mlir::kiln::MulOp>({bad, i64(code)});
    std::vector<int64_t> all;
    for (int64_t d = 0; d < ttype(bad).getRank(); ++d)
      all.push_back(d);
    Value any = all.empty() ? bad : e.reduce<mlir::kiln::MaxOp>(bad, all, false);
    flag = flag ? e.inferred<mlir::kiln::MaximumOp>({flag, any}) : any;
  }
  return flag;
}

} // namespace kiln
