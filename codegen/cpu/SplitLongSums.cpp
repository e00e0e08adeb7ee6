//===- SplitLongSums.cpp - f32 sums over many elements in two stages -------===//
// SPDX-License-Identifier: Apache-2.0
//
// The `kiln-cpu-split-long-sums` pass. A reduction loop accumulates into one
// f32 per output (one per vector lane once LLVM vectorizes it), so its error
// grows with the element count: x.sum() of 1e7 values near 1000 came out
// 7e-4 off (eager's cascade sum: 5e-8) and x.var() of them 5.6x off, the
// mean's error squared. Each f32 kiln.sum / kiln.mean over more than
// kMaxElements elements (static shapes) is rewritten into sums over at most
// about that many elements each:
// - several reduced dims (size-1 dims ignored): the inner ones first (kept
//   as size-1 dims), then the outermost over those partial sums;
// - one reduced dim of n elements: cut into [n / kChunk, kChunk] (a slice
//   and a reshape; a remainder slice summed on its own and added), summed
//   over the chunk, then over the chunk sums.
// The new sums are rewritten again until every one is short. A mean becomes
// that sum divided by the element count. Runs on kiln IR after
// kiln-decompose (layer_norm/softmax expose their sums), before lowering.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"

#include "ir/KilnOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_CPUSPLITLONGSUMSPASS
#include "codegen/cpu/Passes.h.inc"

namespace {

constexpr int64_t kMaxElements = 32768;
constexpr int64_t kChunk = 1024;

/// The reduced dims of extent > 1, ascending.
SmallVector<int64_t> effectiveDims(RankedTensorType type, ArrayRef<int64_t> dims) {
  SmallVector<int64_t> out;
  for (int64_t d : dims)
    if (type.getDimSize(d) > 1)
      out.push_back(d);
  llvm::sort(out);
  return out;
}

/// kiln.sum of `x` over `dims`, keepdim.
Value keepSum(PatternRewriter &b, Location loc, Value x, ArrayRef<int64_t> dims) {
  return b.create<SumOp>(loc, x, b.getDenseI64ArrayAttr(dims), b.getBoolAttr(true));
}

/// Elements [lo, hi) of `x` along `dim`.
Value sliceDim(PatternRewriter &b, Location loc, Value x, int64_t dim, int64_t lo, int64_t hi) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> start(type.getRank(), 0), end(type.getShape()), step(type.getRank(), 1);
  start[dim] = lo;
  end[dim] = hi;
  return b.create<SliceOp>(loc, x, b.getDenseI64ArrayAttr(start), b.getDenseI64ArrayAttr(end),
                           b.getDenseI64ArrayAttr(step));
}

/// Sum of `x` over its one long dim `dim`, keepdim, in chunks of kChunk.
Value chunkedSum(PatternRewriter &b, Location loc, Value x, int64_t dim) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t n = type.getDimSize(dim), main = n / kChunk * kChunk;
  Value body = main == n ? x : sliceDim(b, loc, x, dim, 0, main);
  SmallVector<int64_t> split(type.getShape());
  split[dim] = kChunk;
  split.insert(split.begin() + dim, main / kChunk);
  Value chunks = b.create<ReshapeOp>(loc, type.clone(split), body);
  SmallVector<int64_t> kept(type.getShape());
  kept[dim] = 1;
  Value sum = b.create<ReshapeOp>(loc, type.clone(kept), keepSum(b, loc, chunks, {dim, dim + 1}));
  if (main == n)
    return sum;
  return b.create<AddOp>(loc, sum, keepSum(b, loc, sliceDim(b, loc, x, dim, main, n), {dim}));
}

template <typename OpTy> struct SplitLongSum : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &b) const override {
    Value x = op.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    if (!type.getElementType().isF32() || !type.hasStaticShape())
      return failure();
    SmallVector<int64_t> dims = effectiveDims(type, op.getDims());
    int64_t count = 1;
    for (int64_t d : dims)
      count *= type.getDimSize(d);
    if (count <= kMaxElements)
      return failure();
    Location loc = op.getLoc();
    Value sum;
    if (dims.size() > 1)
      sum = keepSum(b, loc, keepSum(b, loc, x, ArrayRef<int64_t>(dims).drop_front()), dims);
    else
      sum = chunkedSum(b, loc, x, dims.front());
    if (std::is_same_v<OpTy, MeanOp>) {
      auto scalar = RankedTensorType::get({}, type.getElementType());
      auto attr = DenseElementsAttr::get(scalar, b.getF32FloatAttr(static_cast<float>(count)));
      sum = b.create<DivOp>(loc, sum, b.create<ConstantOp>(loc, cast<ElementsAttr>(attr)));
    }
    if (sum.getType() != op.getType())
      sum = b.create<ReshapeOp>(loc, op.getType(), sum);
    b.replaceOp(op, sum);
    return success();
  }
};

struct CpuSplitLongSumsPass : impl::CpuSplitLongSumsPassBase<CpuSplitLongSumsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SplitLongSum<SumOp>, SplitLongSum<MeanOp>>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace mlir::kiln
