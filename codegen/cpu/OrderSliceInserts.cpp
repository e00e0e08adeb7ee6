//===- OrderSliceInserts.cpp - pieces of a tensor built where they are made ---===//
// SPDX-License-Identifier: Apache-2.0
//
// `kiln-cpu-order-slice-inserts` (Passes.td): a concat (or a pad built as a
// concat) lowers to a `tensor.empty` and a chain of `tensor.insert_slice`s
// at the concat's position, after every piece's producer. Upstream's
// eliminate-empty-tensors can only let a producer write into its place in
// the destination when the destination's chain value up to that insert
// exists before the producer, so with the chain at the end every piece got
// a buffer of its own and was copied. This pass moves the destination to
// just before the first piece's producer and puts each insert right after
// its piece's producer, in producer order (the pieces are disjoint boxes,
// so their order does not change the result): the max-pool gradient's
// stride-phase interleave and the zero-padded inputs of its taps are then
// computed in place.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"

#include "llvm/ADT/STLExtras.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_CPUORDERSLICEINSERTSPASS
#include "codegen/cpu/Passes.h.inc"

namespace {

/// The box an insert writes, as [begin, end) per dim, when its offsets,
/// sizes and strides are all static; a strided insert's box is the one
/// around the elements it writes.
std::optional<SmallVector<std::pair<int64_t, int64_t>>> staticBox(tensor::InsertSliceOp insert) {
  if (!insert.getOffsets().empty() || !insert.getSizes().empty() || !insert.getStrides().empty())
    return std::nullopt;
  SmallVector<std::pair<int64_t, int64_t>> box;
  for (auto [offset, size, stride] : llvm::zip_equal(
           insert.getStaticOffsets(), insert.getStaticSizes(), insert.getStaticStrides()))
    box.push_back({offset, offset + (size == 0 ? 0 : (size - 1) * stride + 1)});
  return box;
}

bool disjoint(ArrayRef<std::pair<int64_t, int64_t>> a, ArrayRef<std::pair<int64_t, int64_t>> b) {
  for (auto [x, y] : llvm::zip_equal(a, b))
    if (x.second <= y.first || y.second <= x.first || x.first == x.second || y.first == y.second)
      return true;
  return false;
}

/// The chain of inserts starting at `empty`: each insert's destination is
/// the previous one's result, its only use, all in `empty`'s block, with
/// static, pairwise disjoint boxes. Empty when the chain is anything else.
SmallVector<tensor::InsertSliceOp> disjointChain(tensor::EmptyOp empty) {
  SmallVector<tensor::InsertSliceOp> chain;
  SmallVector<SmallVector<std::pair<int64_t, int64_t>>> boxes;
  Value value = empty.getResult();
  while (value.hasOneUse()) {
    auto insert = dyn_cast<tensor::InsertSliceOp>(*value.getUsers().begin());
    if (!insert || insert.getDest() != value || insert->getBlock() != empty->getBlock())
      break;
    auto box = staticBox(insert);
    if (!box)
      return {};
    for (auto &other : boxes)
      if (!disjoint(*box, other))
        return {};
    boxes.push_back(std::move(*box));
    chain.push_back(insert);
    value = insert.getResult();
  }
  return chain;
}

/// The op of `block` that defines `value` (or holds its definition), null
/// when it is defined outside the block or is a block argument.
Operation *producerIn(Block *block, Value value) {
  Operation *def = value.getDefiningOp();
  return def ? block->findAncestorOpInBlock(*def) : nullptr;
}

/// Rebuilds `empty`'s chain in producer order, each insert right after its
/// piece's producer, and `empty` before the first producer.
void reorder(tensor::EmptyOp empty, ArrayRef<tensor::InsertSliceOp> chain) {
  Block *block = empty->getBlock();
  SmallVector<tensor::InsertSliceOp> order(chain);
  // Producer order; pieces without a producer here (arguments) first.
  auto before = [&](tensor::InsertSliceOp a, tensor::InsertSliceOp b) {
    Operation *pa = producerIn(block, a.getSource()), *pb = producerIn(block, b.getSource());
    if (!pa || !pb)
      return !pa && pb;
    return pa->isBeforeInBlock(pb);
  };
  llvm::stable_sort(order, before);
  // The destination before the first piece produced here.
  for (tensor::InsertSliceOp insert : order)
    if (Operation *first = producerIn(block, insert.getSource())) {
      if (first->isBeforeInBlock(empty))
        empty->moveBefore(first);
      break;
    }

  OpBuilder builder(empty->getContext());
  Value dest = empty.getResult();
  Operation *last = empty;
  for (tensor::InsertSliceOp insert : order) {
    Operation *producer = producerIn(block, insert.getSource());
    if (producer && last->isBeforeInBlock(producer))
      last = producer;
    builder.setInsertionPointAfter(last);
    auto placed = builder.create<tensor::InsertSliceOp>(
        insert.getLoc(), insert.getSource(), dest, insert.getMixedOffsets(), insert.getMixedSizes(),
        insert.getMixedStrides());
    dest = placed.getResult();
    last = placed;
  }
  tensor::InsertSliceOp end = chain.back();
  end.getResult().replaceAllUsesWith(dest);
  for (tensor::InsertSliceOp insert : llvm::reverse(chain))
    insert.erase();
}

struct CpuOrderSliceInsertsPass : impl::CpuOrderSliceInsertsPassBase<CpuOrderSliceInsertsPass> {
  void runOnOperation() override {
    SmallVector<tensor::EmptyOp> empties;
    getOperation().walk([&](tensor::EmptyOp empty) {
      if (empty.getDynamicSizes().empty())
        empties.push_back(empty);
    });
    for (tensor::EmptyOp empty : empties) {
      SmallVector<tensor::InsertSliceOp> chain = disjointChain(empty);
      if (!chain.empty())
        reorder(empty, chain);
    }
  }
};

} // namespace
} // namespace mlir::kiln
