//===- FuseRows.cpp - run row-wise linalg chains row by row ------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// `kiln-fuse-rows`: after bufferization, a run of `linalg.generic` (and
// `linalg.fill`) ops whose
// first loop is parallel over the same N rows (softmax: max, sum, divide;
// layer_norm: mean, variance, normalize) is moved into one `scf.for` over
// rows, each op working on `memref.subview`s of row i. Every op then reads
// the row from cache instead of streaming the whole tensor from memory.
// The legality check is deliberately narrow: each buffer written by the run
// must be accessed by the run only through row i (map result 0 is d0; views
// between the access and the allocation keep dim 0 as dim 0).
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_FUSEROWSPASS
#include "codegen/Passes.h.inc"

namespace {

/// True when group 0 of `re` maps the row dim alone (extra dims are 1) in
/// `expanded`, the higher-rank side of a reshape.
bool firstGroupKeepsRows(ArrayRef<ReassociationIndices> re, MemRefType expanded) {
  if (re.empty())
    return false;
  for (int64_t d : ArrayRef<int64_t>(re[0]).drop_front())
    if (expanded.getDimSize(d) != 1)
      return false;
  return true;
}

/// The allocation (or argument) under `v`, and whether every view on the
/// way maps dim 0 to dim 0 with `n` rows.
std::pair<Value, bool> rootOf(Value v, int64_t n) {
  bool keepsRows = true;
  while (Operation *def = v.getDefiningOp()) {
    if (auto e = dyn_cast<memref::ExpandShapeOp>(def)) {
      keepsRows &= firstGroupKeepsRows(e.getReassociationIndices(), e.getResultType());
      v = e.getSrc();
    } else if (auto c = dyn_cast<memref::CollapseShapeOp>(def)) {
      keepsRows &= firstGroupKeepsRows(c.getReassociationIndices(), c.getSrcType());
      v = c.getSrc();
    } else if (auto view = dyn_cast<ViewLikeOpInterface>(def)) {
      keepsRows = false;
      v = view.getViewSource();
    } else {
      break;
    }
  }
  auto type = dyn_cast<MemRefType>(v.getType());
  keepsRows &= type && type.getRank() >= 1 && type.getDimSize(0) == n;
  return {v, keepsRows};
}

/// How an operand is indexed by the row loop d0.
enum class RowAccess { Row, Whole, Other };

RowAccess classify(linalg::LinalgOp op, OpOperand &operand, int64_t n) {
  AffineMap map = op.getMatchingIndexingMap(&operand);
  if (!map.isFunctionOfDim(0))
    return RowAccess::Whole;
  auto type = dyn_cast<MemRefType>(operand.get().getType());
  if (!type || type.getRank() == 0 || type.getDimSize(0) != n ||
      map.getResult(0) != getAffineDimExpr(0, op.getContext()))
    return RowAccess::Other;
  for (AffineExpr e : map.getResults().drop_front())
    if (e.isFunctionOfDim(0))
      return RowAccess::Other;
  return RowAccess::Row;
}

/// Rows of a candidate op (its static first-loop extent), or 0.
int64_t candidateRows(Operation *op) {
  // Generics and fills only: a matmul per row would defeat BLAS.
  if (!isa<linalg::GenericOp, linalg::FillOp>(op))
    return 0;
  auto generic = cast<linalg::LinalgOp>(op);
  if (!generic.hasPureBufferSemantics() || generic.hasIndexSemantics() ||
      generic.getNumLoops() < 1 ||
      generic.getIteratorTypesArray()[0] != utils::IteratorType::parallel)
    return 0;
  int64_t n = generic.getStaticLoopRanges()[0];
  if (ShapedType::isDynamic(n) || n < 2)
    return 0;
  // Outputs are written row by row; any operand that reads through d0 other
  // than as its leading index (a transposed input) cannot be cut into rows.
  for (OpOperand &operand : generic->getOpOperands()) {
    RowAccess access = classify(generic, operand, n);
    if (access == RowAccess::Other ||
        (generic.isDpsInit(&operand) && access != RowAccess::Row))
      return 0;
  }
  return n;
}

/// True when running `group` row by row computes what it computed op by op.
bool isLegal(ArrayRef<linalg::LinalgOp> group, int64_t n) {
  DenseSet<Value> written, unsafe;
  for (linalg::LinalgOp op : group) {
    for (OpOperand &operand : op->getOpOperands()) {
      auto [root, keepsRows] = rootOf(operand.get(), n);
      if (op.isDpsInit(&operand))
        written.insert(root);
      if (!keepsRows || classify(op, operand, n) != RowAccess::Row)
        unsafe.insert(root);
    }
  }
  return llvm::none_of(written, [&](Value root) { return unsafe.contains(root); });
}

/// Moves `group` into one loop over rows, placed at the last op.
void fuseRows(ArrayRef<linalg::LinalgOp> group, int64_t n) {
  linalg::LinalgOp last = group.back();
  Location loc = last.getLoc();
  OpBuilder b(last);
  Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
  Value rows = b.create<arith::ConstantIndexOp>(loc, n);
  Value one = b.create<arith::ConstantIndexOp>(loc, 1);
  auto loop = b.create<scf::ForOp>(loc, zero, rows, one);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  Value row = loop.getInductionVar();
  for (linalg::LinalgOp op : group) {
    Operation *clone = b.clone(*op);
    for (OpOperand &operand : op->getOpOperands()) {
      if (classify(op, operand, n) != RowAccess::Row)
        continue;
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(clone);
      Value v = operand.get();
      auto type = cast<MemRefType>(v.getType());
      SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
      SmallVector<OpFoldResult> sizes = memref::getMixedSizes(b, loc, v);
      SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
      offsets[0] = row;
      sizes[0] = b.getIndexAttr(1);
      clone->setOperand(operand.getOperandNumber(),
                        b.create<memref::SubViewOp>(loc, v, offsets, sizes, strides));
    }
  }
  for (linalg::LinalgOp op : group)
    op->erase();
}

/// Ops a run may step over: they neither read nor write existing memory.
bool isTransparent(Operation *op) {
  return isMemoryEffectFree(op) || isa<memref::AllocOp, memref::AllocaOp>(op);
}

struct FuseRowsPass : impl::FuseRowsPassBase<FuseRowsPass> {
  void runOnOperation() override {
    for (Block &block : getOperation().getBody()) {
      SmallVector<SmallVector<linalg::LinalgOp>> runs;
      SmallVector<int64_t> runRows;
      SmallVector<linalg::LinalgOp> run;
      int64_t rows = 0;
      auto flush = [&] {
        bool reduces = llvm::any_of(run, [](linalg::LinalgOp op) {
          return op.getNumReductionLoops() > 0;
        });
        if (run.size() >= 2 && reduces) {
          runs.push_back(run);
          runRows.push_back(rows);
        }
        run.clear();
        rows = 0;
      };
      for (Operation &op : block) {
        int64_t n = candidateRows(&op);
        if (n == 0) {
          if (!isTransparent(&op))
            flush();
          continue;
        }
        auto generic = cast<linalg::LinalgOp>(&op);
        if (n == rows) {
          run.push_back(generic);
          if (isLegal(run, rows))
            continue;
          run.pop_back();
        }
        flush();
        run.push_back(generic);
        rows = n;
      }
      flush();
      for (auto [r, n] : llvm::zip(runs, runRows))
        fuseRows(r, n);
    }
  }
};

} // namespace
} // namespace mlir::kiln
