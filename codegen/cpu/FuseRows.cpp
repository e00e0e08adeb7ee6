//===- FuseRows.cpp - run row-wise linalg chains row by row ------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// `kiln-cpu-fuse-rows`: after bufferization, a run of `linalg.generic` (and
// `linalg.fill`) ops whose
// first loop is parallel over the same N rows (softmax: max, sum, divide;
// layer_norm: mean, variance, normalize) is moved into one `scf.for` over
// rows, each op working on `memref.subview`s of row i. Every op then reads
// the row from cache instead of streaming the whole tensor from memory.
// The legality check is deliberately narrow: each buffer written by the run
// must be accessed by the run only through row i (map result 0 is d0; only
// reshapes lie between the access and a contiguous allocation, so row i is
// the same slice of memory in every view). An
// allocation the loop uses only one row at a time then shrinks to one row
// (contractRowBuffers).
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"
#include "codegen/cpu/SinkFills.h"
#include "codegen/common/Patterns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_CPUFUSEROWSPASS
#include "codegen/cpu/Passes.h.inc"

namespace {

/// The allocation (or argument) under `v`, and whether row i of `v` (a
/// view with `n` rows) is the same memory as row i of every other such view
/// of it: true through expand/collapse_shape chains over a contiguous
/// (identity-layout) buffer, where row i is always the i-th of n equal
/// slices of the buffer in linear order.
std::pair<Value, bool> rootOf(Value v, int64_t n) {
  bool keepsRows = true;
  while (Operation *def = v.getDefiningOp()) {
    if (auto e = dyn_cast<memref::ExpandShapeOp>(def)) {
      v = e.getSrc();
    } else if (auto c = dyn_cast<memref::CollapseShapeOp>(def)) {
      v = c.getSrc();
    } else if (auto view = dyn_cast<ViewLikeOpInterface>(def)) {
      keepsRows = false;
      v = view.getViewSource();
    } else {
      break;
    }
  }
  auto type = dyn_cast<MemRefType>(v.getType());
  keepsRows &= type && type.hasStaticShape() && type.getLayout().isIdentity() &&
               type.getNumElements() % n == 0;
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
  // Generics and fills only: a matmul per row would defeat BLAS (so would
  // one batch element per call of the shared-left-operand GEMM generic).
  if (!isa<linalg::GenericOp, linalg::FillOp>(op) || isSharedLhsBatchMatmul(op))
    return 0;
  // The zero fill of a GEMM's output (sunk next to it) stays there:
  // kiln-cpu-linalg-to-blas absorbs it as beta = 0, where a row loop would
  // write the zeros and the GEMM read them back (GPT-2's LM head after the
  // final LayerNorm: a 26 MB memset and a beta = 1 GEMM).
  if (auto fill = dyn_cast<linalg::FillOp>(op)) {
    auto next = dyn_cast_or_null<linalg::LinalgOp>(op->getNextNode());
    if (next && isBlasGemm(next) && next.getDpsInits()[0] == fill.getDpsInits()[0])
      return 0;
  }
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
    if (access == RowAccess::Other || (generic.isDpsInit(&operand) && access != RowAccess::Row))
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
scf::ForOp fuseRows(ArrayRef<linalg::LinalgOp> group, int64_t n) {
  linalg::LinalgOp last = group.back();
  Location loc = last.getLoc();
  OpBuilder b(last);
  Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
  Value rows = b.create<arith::ConstantIndexOp>(loc, n);
  Value one = b.create<arith::ConstantIndexOp>(loc, 1);
  auto loop = b.create<scf::ForOp>(loc, zero, rows, one);
  // Rows are independent (isLegal): kiln-cpu-parallelize-loops may share them
  // among threads, giving each its own copy of the one-row buffers.
  loop->setAttr(kIndependentRowsAttr, b.getUnitAttr());
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
  return loop;
}

/// True for a view of row `row` alone: offsets (row, 0, ...), sizes
/// (1, whole dims...), unit strides, on a source shaped like the buffer.
bool isRowView(memref::SubViewOp view, Value row) {
  MemRefType source = view.getSourceType();
  for (auto [i, offset] : llvm::enumerate(view.getMixedOffsets())) {
    if (i == 0 ? offset != OpFoldResult(row) : !isConstantIntValue(offset, 0))
      return false;
  }
  for (auto [i, size] : llvm::enumerate(view.getMixedSizes()))
    if (!isConstantIntValue(size, i == 0 ? 1 : source.getDimSize(i)))
      return false;
  return llvm::all_of(view.getMixedStrides(),
                      [](OpFoldResult s) { return isConstantIntValue(s, 1); });
}

/// The row views of `alloc` inside `loop` (through reshapes; see rootOf),
/// when they are its only uses besides deallocs; empty otherwise.
SmallVector<memref::SubViewOp> rowViewsOnly(memref::AllocOp alloc, scf::ForOp loop, int64_t n) {
  SmallVector<memref::SubViewOp> views;
  SmallVector<Value> work{alloc.getResult()};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (isa<memref::DeallocOp>(user) && v == alloc.getResult())
        continue;
      if (isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(user)) {
        work.push_back(user->getResult(0));
        continue;
      }
      auto view = dyn_cast<memref::SubViewOp>(user);
      if (!view || view->getParentOp() != loop || view.getSourceType().getDimSize(0) != n ||
          !isRowView(view, loop.getInductionVar()))
        return {};
      views.push_back(view);
    }
  }
  return views;
}

/// Buffer contraction: an allocation the row loop only touches one row at
/// a time, and nothing else uses, becomes one row-sized buffer reused by
/// every iteration (softmax's exp(x - max): 4 KiB in L1 instead of a
/// tensor-sized round trip through memory). Each iteration writes the row
/// before reading it: the buffer has no other writer, and reading
/// uninitialized memory would have been undefined before too.
constexpr int64_t kMaxStackRowBytes = 64 * 1024;

void contractRowBuffers(scf::ForOp loop, int64_t n) {
  SmallVector<memref::AllocOp> allocs;
  for (Operation *op = loop->getBlock()->empty() ? nullptr : &loop->getBlock()->front();
       op && op != loop.getOperation(); op = op->getNextNode())
    if (auto alloc = dyn_cast<memref::AllocOp>(op))
      allocs.push_back(alloc);
  for (memref::AllocOp alloc : allocs) {
    MemRefType type = alloc.getType();
    if (!type.hasStaticShape() || !type.getLayout().isIdentity() || type.getRank() < 1 ||
        type.getDimSize(0) != n)
      continue;
    SmallVector<memref::SubViewOp> views = rowViewsOnly(alloc, loop, n);
    if (views.empty())
      continue;
    SmallVector<int64_t> rowShape(type.getShape());
    rowShape[0] = 1;
    MemRefType rowType = MemRefType::get(rowShape, type.getElementType());
    // On the stack up to kMaxStackRowBytes (no malloc per call, and LLVM
    // knows it aliases no argument, so the reductions into it vectorize
    // without runtime alias checks); a larger row stays on the heap.
    int64_t rowBytes =
        rowType.getNumElements() * llvm::divideCeil(rowType.getElementTypeBitWidth(), 8);
    // An alloca goes first in the function's entry block (LLVM promotes
    // scalar ones to registers there), so only a loop directly in the
    // function body gets one: anywhere else it could run more than once.
    bool onStack = rowBytes <= kMaxStackRowBytes && isa<func::FuncOp>(loop->getParentOp());
    OpBuilder b(alloc);
    if (onStack)
      b.setInsertionPointToStart(loop->getBlock());
    Value rowBuffer =
        onStack ? b.create<memref::AllocaOp>(alloc.getLoc(), rowType, alloc.getAlignmentAttr())
                      .getResult()
                : b.create<memref::AllocOp>(alloc.getLoc(), rowType, alloc.getAlignmentAttr())
                      .getResult();
    for (memref::SubViewOp view : views) {
      b.setInsertionPoint(view);
      MemRefType viewType = view.getType();
      auto [strides, offset] = getStridesAndOffset(viewType);
      (void)offset;
      auto exact = MemRefType::get(viewType.getShape(), viewType.getElementType(),
                                   StridedLayoutAttr::get(b.getContext(), /*offset=*/0, strides));
      Value cast = b.create<memref::ReinterpretCastOp>(view.getLoc(), exact, rowBuffer,
                                                       /*offset=*/0, viewType.getShape(), strides);
      view.replaceAllUsesWith(b.create<memref::CastOp>(view.getLoc(), viewType, cast).getResult());
    }
    // Erase the views and the reshapes between them and the allocation.
    for (memref::SubViewOp view : views) {
      Value source = view.getSource();
      view.erase();
      while (Operation *def = source.getDefiningOp()) {
        if (!isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(def) || !def->use_empty())
          break;
        source = def->getOperand(0);
        def->erase();
      }
    }
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers())) {
      auto dealloc = dyn_cast<memref::DeallocOp>(user);
      if (dealloc && onStack)
        dealloc->erase();
      else if (dealloc)
        dealloc.getMemrefMutable().assign(rowBuffer);
    }
    if (alloc->use_empty())
      alloc.erase();
  }
}

/// Ops a run may step over: they neither read nor write existing memory.
bool isTransparent(Operation *op) {
  return isMemoryEffectFree(op) || isa<memref::AllocOp, memref::AllocaOp>(op);
}

struct CpuFuseRowsPass : impl::CpuFuseRowsPassBase<CpuFuseRowsPass> {
  void runOnOperation() override {
    for (Block &block : getOperation().getBody()) {
      // Hoisted GEMM-output fills would join the first run of their row
      // count (convnext's three MLP hidden buffers, zeroed in the first
      // LayerNorm's row loop, were live from there on).
      sinkFills(block);
      SmallVector<SmallVector<linalg::LinalgOp>> runs;
      SmallVector<int64_t> runRows;
      SmallVector<linalg::LinalgOp> run;
      int64_t rows = 0;
      auto flush = [&] {
        bool reduces =
            llvm::any_of(run, [](linalg::LinalgOp op) { return op.getNumReductionLoops() > 0; });
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
        contractRowBuffers(fuseRows(r, n), n);
    }
  }
};

} // namespace
} // namespace mlir::kiln
