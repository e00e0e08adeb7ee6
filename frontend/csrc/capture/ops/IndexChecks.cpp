//===- IndexChecks.cpp - eager's index errors for data-dependent gathers --===//
// SPDX-License-Identifier: Apache-2.0
//
// kiln.gather and kiln.embedding clamp each index into the dim they read
// (so a read never leaves the operand), but eager raises IndexError on an
// index out of range: `x[i]`, index_select, gather, embedding, nll_loss's
// target. Indices that come from data (a graph input, a computation) cannot
// be guarded, so the graph computes one extra 0-d i64 result, non-zero when
// any such index was out of range, and the runtime raises eager's error
// from it before the results reach the caller (Entry.cpp's runGraph, before
// side effects and in-place write-backs are replayed). Indices built from
// constants only (flip, views, as_strided) are in range by construction
// and get no check; a gather along a symbolic dim is built by kiln from
// that size (SymbolicIndexing.cpp) and gets none either.
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

#include "ir/KilnOps.h"

#include "llvm/ADT/DenseSet.h"

namespace kiln {
namespace {

/// The values of `entry` computed from constants only (kiln ops without
/// randomness whose operands are such values), in one pass in order.
llvm::DenseSet<Value> constantValues(mlir::Block &entry) {
  llvm::DenseSet<Value> constant;
  for (mlir::Operation &op : entry) {
    bool c = op.getDialect() && op.getDialect()->getNamespace() == "kiln" &&
             op.getNumRegions() == 0 && !llvm::isa<mlir::kiln::RandomOp>(op);
    for (Value operand : op.getOperands())
      c = c && constant.contains(operand);
    if (c)
      constant.insert(op.getResults().begin(), op.getResults().end());
  }
  return constant;
}

} // namespace

Value indexRangeCheck(Interpreter &I, mlir::Block &entry) {
  llvm::DenseSet<Value> constant = constantValues(entry);
  llvm::SmallVector<std::pair<Value, int64_t>> checks; // (index, size of the dim it reads)
  for (mlir::Operation &op : entry) {
    Value index;
    int64_t size;
    if (auto g = llvm::dyn_cast<mlir::kiln::GatherOp>(op)) {
      index = g.getIndex();
      size = ttype(g.getInput()).getRank() ? ttype(g.getInput()).getDimSize(g.getDim()) : 1;
    } else if (auto em = llvm::dyn_cast<mlir::kiln::EmbeddingOp>(op)) {
      index = em.getIndices();
      size = ttype(em.getWeight()).getDimSize(0);
    } else {
      continue;
    }
    bool empty = ttype(index).hasStaticShape() && ttype(index).getNumElements() == 0;
    if (!mlir::ShapedType::isDynamic(size) && !empty && !constant.contains(index))
      checks.push_back({index, size});
  }
  if (checks.empty())
    return Value();
  I.builder().setInsertionPointToEnd(&entry);
  Emit e(I);
  auto i64 = [&](int64_t x) {
    return e.scalar(PyRef::steal(PyLong_FromLongLong(x)).get(), DType::I64);
  };
  Value flag;
  for (auto &[index, size] : checks) {
    // clamp(i, 0, size - 1) != i: out of range, whatever the index dtype.
    Value i = e.cast(index, DType::I64);
    Value clamped = e.inferred<mlir::kiln::MinimumOp>(
        {e.inferred<mlir::kiln::MaximumOp>({i, i64(0)}), i64(size - 1)});
    Value bad = e.cast(e.inferred<mlir::kiln::NeOp>({clamped, i}), DType::I64);
    std::vector<int64_t> all;
    for (int64_t d = 0; d < ttype(bad).getRank(); ++d)
      all.push_back(d);
    Value any = all.empty() ? bad : e.reduce<mlir::kiln::MaxOp>(bad, all, false);
    flag = flag ? e.inferred<mlir::kiln::MaximumOp>({flag, any}) : any;
  }
  return flag;
}

} // namespace kiln
