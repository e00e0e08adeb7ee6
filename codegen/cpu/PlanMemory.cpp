//===- PlanMemory.cpp - one arena for a function's intermediates --------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements `kiln-cpu-plan-memory`: static top-level intermediates become
// views of one arena per call, packed by liveness. The algorithm (live
// ranges, in-place reuse, fill sinking, best-fit packing, the arena's
// attributes) is described once, in codegen/cpu/Passes.td
// (CpuPlanMemoryPass; generated: docs/reference/KilnCpuPasses.md).
//===----------------------------------------------------------------------===//
#include "codegen/cpu/Passes.h"
#include "codegen/cpu/LiveRanges.h"
#include "codegen/cpu/SinkFills.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_CPUPLANMEMORYPASS
#include "codegen/cpu/Passes.h.inc"

namespace {

/// One planned allocation.
struct Buffer {
  memref::AllocOp alloc;
  int64_t bytes = 0;
  int64_t align = 1;
  /// Positions in the entry block of the first and last use (inclusive).
  unsigned first = 0, last = 0;
  int64_t offset = -1;
  /// In-place neighbours: `next` is written, at this buffer's last access,
  /// over its bytes (same offset).
  Buffer *prev = nullptr, *next = nullptr;
};

/// Bytes of one element, or 0 when the arena does not take the type.
int64_t elementBytes(Type t) {
  if (t.isIntOrFloat())
    return llvm::divideCeil(t.getIntOrFloatBitWidth(), 8);
  if (t.isIndex())
    return 8; // the LLVM lowering's default index width
  return 0;
}

/// A plannable top-level allocation of `entry`, or nullopt.
std::optional<Buffer> plannable(memref::AllocOp alloc, Block &entry,
                                const DenseMap<Operation *, unsigned> &position, int64_t minAlign) {
  MemRefType type = alloc.getType();
  int64_t elem = elementBytes(type.getElementType());
  if (!type.hasStaticShape() || !type.getLayout().isIdentity() || type.getMemorySpace() ||
      elem == 0 || !alloc.getSymbolOperands().empty())
    return std::nullopt;
  Buffer b;
  b.alloc = alloc;
  b.bytes = std::max<int64_t>(1, type.getNumElements() * elem);
  b.align = std::max<int64_t>(minAlign, alloc.getAlignment().value_or(1));
  if (failed(bufferLiveRange(alloc.getResult(), entry, position, b.first, b.last)))
    return std::nullopt;
  return b;
}

/// Assigns offsets (greedy by size, best fit); returns the arena's size.
int64_t pack(MutableArrayRef<Buffer> buffers) {
  SmallVector<Buffer *> order;
  for (Buffer &b : buffers)
    order.push_back(&b);
  llvm::stable_sort(order, [](Buffer *a, Buffer *b) {
    return a->bytes != b->bytes ? a->bytes > b->bytes : a->first < b->first;
  });
  int64_t arena = 0;
  SmallVector<Buffer *> placed;
  for (Buffer *b : order) {
    SmallVector<Buffer *> live;
    for (Buffer *p : placed)
      if (p->first <= b->last && b->first <= p->last)
        live.push_back(p);
    llvm::sort(live, [](Buffer *x, Buffer *y) { return x->offset < y->offset; });
    int64_t cursor = 0, best = -1, bestWaste = 0;
    for (Buffer *p : live) {
      int64_t start = llvm::alignTo(cursor, b->align);
      int64_t waste = p->offset - start - b->bytes;
      if (waste >= 0 && (best < 0 || waste < bestWaste)) {
        best = start;
        bestWaste = waste;
      }
      cursor = std::max(cursor, p->offset + p->bytes);
    }
    b->offset = best >= 0 ? best : static_cast<int64_t>(llvm::alignTo(cursor, b->align));
    arena = std::max(arena, b->offset + b->bytes);
    placed.push_back(b);
  }
  return arena;
}

/// The allocation under `v` through ops that keep its linear addressing
/// (collapse/expand_shape, cast), or null.
Value contiguousRoot(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto c = dyn_cast<memref::CollapseShapeOp>(def))
      v = c.getSrc();
    else if (auto e = dyn_cast<memref::ExpandShapeOp>(def))
      v = e.getSrc();
    else if (auto c = dyn_cast<memref::CastOp>(def))
      v = c.getSource();
    else
      break;
  }
  return v.getDefiningOp<memref::AllocOp>() ? v : Value();
}

/// The value under `v` through every view.
Value anyRoot(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

/// Whether `op` touches `a` or `b` other than through `in` and `out`
/// (another operand, or a load in its body).
bool touchesElsewhere(Operation *op, OpOperand *in, OpOperand *out, Value a, Value b) {
  for (OpOperand &o : op->getOpOperands())
    if (&o != in && &o != out && llvm::is_contained({a, b}, anyRoot(o.get())))
      return true;
  WalkResult r = op->walk([&](Operation *inner) {
    if (inner == op)
      return WalkResult::advance();
    for (Value v : inner->getOperands())
      if (llvm::is_contained({a, b}, anyRoot(v)))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return r.wasInterrupted();
}

/// In place: where an all-parallel `linalg.generic` is the last access of
/// input buffer A and the first of output buffer B, both of the same
/// size, seen through views of the same type (linear addressing: reshapes
/// of the whole buffer) with the same permutation indexing map, and no
/// other operand touches them, each iteration reads element e of A before
/// writing element e of B and no two iterations share an element: B may
/// take A's bytes. Links such pairs (chains A → B → C...).
void linkInPlace(Block &entry, const DenseMap<Operation *, unsigned> &position,
                 MutableArrayRef<Buffer> buffers) {
  DenseMap<Value, Buffer *> byRoot;
  for (Buffer &b : buffers)
    byRoot[b.alloc.getResult()] = &b;
  for (auto generic : entry.getOps<linalg::GenericOp>()) {
    if (!generic.hasPureBufferSemantics() || generic.getNumParallelLoops() != generic.getNumLoops())
      continue;
    unsigned at = position.lookup(generic);
    for (OpOperand &out : generic.getDpsInitsMutable()) {
      Value rootB = contiguousRoot(out.get());
      Buffer *b = rootB ? byRoot.lookup(rootB) : nullptr;
      AffineMap map = generic.getMatchingIndexingMap(&out);
      if (!b || b->prev || b->first != at || !map.isPermutation())
        continue;
      for (OpOperand *in : generic.getDpsInputOperands()) {
        Value rootA = contiguousRoot(in->get());
        Buffer *a = rootA ? byRoot.lookup(rootA) : nullptr;
        if (!a || a == b || a->next || a->last != at || a->bytes != b->bytes ||
            in->get().getType() != out.get().getType() ||
            generic.getMatchingIndexingMap(in) != map ||
            touchesElsewhere(generic, in, &out, rootA, rootB))
          continue;
        a->next = b;
        b->prev = a;
        break;
      }
    }
  }
}

/// One slot per in-place chain (a buffer without neighbours is its own
/// chain): the chain's range, its largest size and alignment.
SmallVector<Buffer> chainSlots(MutableArrayRef<Buffer> buffers) {
  SmallVector<Buffer> slots;
  for (Buffer &head : buffers) {
    if (head.prev)
      continue;
    Buffer slot = head;
    slot.next = &head; // the chain, for assigning offsets
    for (Buffer *m = head.next; m; m = m->next) {
      slot.bytes = std::max(slot.bytes, m->bytes);
      slot.align = std::max(slot.align, m->align);
      slot.first = std::min(slot.first, m->first);
      slot.last = std::max(slot.last, m->last);
    }
    slots.push_back(slot);
  }
  return slots;
}

/// The most bytes of `buffers` live at one op of a block of `n` ops: no
/// packing can make the arena smaller (the packing's lower bound).
int64_t peakLiveBytes(ArrayRef<Buffer> buffers, unsigned n) {
  SmallVector<int64_t> delta(n + 1, 0);
  for (const Buffer &b : buffers) {
    delta[b.first] += b.bytes;
    delta[b.last + 1] -= b.bytes;
  }
  int64_t live = 0, peak = 0;
  for (int64_t d : delta)
    peak = std::max(peak, live += d);
  return peak;
}

/// Where each output the frontend allocates at its first write
/// (`kiln.lazy_output`) is first touched, with its bytes (static ones).
SmallVector<std::pair<unsigned, int64_t>>
lazyOutputStarts(func::FuncOp func, Block &entry, const DenseMap<Operation *, unsigned> &position) {
  SmallVector<std::pair<unsigned, int64_t>> starts;
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<MemRefType>(arg.getType());
    unsigned first = 0, last = 0;
    if (!func.getArgAttr(arg.getArgNumber(), kLazyOutputAttr) || !type || !type.hasStaticShape() ||
        !elementBytes(type.getElementType()) ||
        failed(bufferLiveRange(arg, entry, position, first, last)))
      continue;
    starts.push_back({first, type.getNumElements() * elementBytes(type.getElementType())});
  }
  return starts;
}

/// In-place chains of `buffers` (linked by linkInPlace): per buffer the
/// index of its chain's head, per head the chain as one slot.
struct Chains {
  SmallVector<unsigned> head;
  SmallVector<Buffer> slot; ///< valid at head indices
};

Chains chainsOf(MutableArrayRef<Buffer> buffers) {
  Chains c;
  DenseMap<Buffer *, unsigned> index;
  for (auto [i, b] : llvm::enumerate(buffers))
    index[&b] = i;
  c.slot.resize(buffers.size());
  for (auto [i, b] : llvm::enumerate(buffers)) {
    Buffer *h = &b;
    while (h->prev)
      h = h->prev;
    c.head.push_back(index.lookup(h));
  }
  for (auto [i, b] : llvm::enumerate(buffers))
    if (c.head[i] == i) {
      c.slot[i] = b;
      c.slot[i].prev = c.slot[i].next = nullptr;
    }
  for (auto [i, b] : llvm::enumerate(buffers)) {
    Buffer &slot = c.slot[c.head[i]];
    slot.bytes = std::max(slot.bytes, b.bytes);
    slot.first = std::min(slot.first, b.first);
    slot.last = std::max(slot.last, b.last);
  }
  return c;
}

/// Estimated peak bytes over the block's `n` ops when the chains with
/// `inTail` set (at their head index) are allocated buffer by buffer
/// (kiln-cpu-free-early frees each after its last use) and the others
/// share an arena (the live peak of their slots, held from their first use
/// to their last), plus each lazy output from its first touch on.
int64_t estimatedPeak(ArrayRef<Buffer> buffers, const Chains &chains, ArrayRef<bool> inTail,
                      unsigned n, ArrayRef<std::pair<unsigned, int64_t>> outputs) {
  SmallVector<Buffer> arenaSlots;
  SmallVector<int64_t> delta(n + 1, 0);
  for (auto [i, b] : llvm::enumerate(buffers)) {
    unsigned h = chains.head[i];
    if (!inTail[h]) {
      if (h == i)
        arenaSlots.push_back(chains.slot[h]);
      continue;
    }
    delta[b.first] += b.bytes;
    delta[b.last + 1] -= b.bytes;
  }
  if (!arenaSlots.empty()) {
    unsigned begin = n, end = 0;
    for (const Buffer &b : arenaSlots) {
      begin = std::min(begin, b.first);
      end = std::max(end, b.last);
    }
    int64_t arena = peakLiveBytes(arenaSlots, n);
    delta[begin] += arena;
    delta[end + 1] -= arena;
  }
  for (auto [first, bytes] : outputs)
    delta[first] += bytes;
  int64_t live = 0, peak = 0;
  for (int64_t d : delta)
    peak = std::max(peak, live += d);
  return peak;
}

/// Leaves out of the arena the buffers (whole in-place chains) still live
/// where a lazy output is first written, when that lowers the estimated
/// peak by at least 1/64 of it and 64 KiB: the arena then dies before the
/// output is allocated (a segmentation model's small class map would
/// otherwise keep the whole backbone's arena alive under its upsampled
/// output). Returns the buffers to plan, unlinked.
SmallVector<Buffer> cutTail(SmallVector<Buffer> buffers, Block &entry,
                            const DenseMap<Operation *, unsigned> &position, unsigned n,
                            ArrayRef<std::pair<unsigned, int64_t>> outputs) {
  if (outputs.empty())
    return buffers;
  linkInPlace(entry, position, buffers);
  Chains chains = chainsOf(buffers);
  SmallVector<bool> none(buffers.size(), false), best = none;
  int64_t bestPeak = estimatedPeak(buffers, chains, none, n, outputs);
  int64_t margin = std::max<int64_t>(bestPeak / 64, 64 << 10);
  int64_t noCut = bestPeak;
  for (auto [cut, bytes] : outputs) {
    SmallVector<bool> tail(buffers.size(), false);
    for (auto [i, h] : llvm::enumerate(chains.head))
      if (h == i)
        tail[i] = chains.slot[i].last >= cut;
    int64_t peak = estimatedPeak(buffers, chains, tail, n, outputs);
    if (peak < bestPeak && peak + margin <= noCut) {
      bestPeak = peak;
      best = tail;
    }
  }
  SmallVector<Buffer> planned;
  for (auto [i, b] : llvm::enumerate(buffers))
    if (!best[chains.head[i]]) {
      planned.push_back(b);
      planned.back().prev = planned.back().next = nullptr;
    }
  return planned;
}

struct CpuPlanMemoryPass : impl::CpuPlanMemoryPassBase<CpuPlanMemoryPass> {
  using CpuPlanMemoryPassBase::CpuPlanMemoryPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    Block &entry = func.getBody().front();
    sinkFills(entry);
    DenseMap<Operation *, unsigned> position;
    unsigned n = 0;
    for (Operation &op : entry)
      position[&op] = n++;
    SmallVector<Buffer> buffers;
    for (auto alloc : entry.getOps<memref::AllocOp>())
      if (std::optional<Buffer> b = plannable(alloc, entry, position, alignment))
        buffers.push_back(*b);
    buffers =
        cutTail(std::move(buffers), entry, position, n, lazyOutputStarts(func, entry, position));
    if (buffers.empty())
      return;
    linkInPlace(entry, position, buffers);
    SmallVector<Buffer> slots = chainSlots(buffers);
    int64_t arenaBytes = pack(slots);
    for (Buffer &slot : slots)
      for (Buffer *m = slot.next; m; m = m->next)
        m->offset = slot.offset;
    int64_t maxAlign = alignment;
    for (Buffer &b : buffers)
      maxAlign = std::max(maxAlign, b.align);

    OpBuilder builder = OpBuilder::atBlockBegin(&entry);
    Location loc = func.getLoc();
    auto arenaType = MemRefType::get({arenaBytes}, builder.getI8Type());
    auto arenaOp =
        builder.create<memref::AllocOp>(loc, arenaType, builder.getI64IntegerAttr(maxAlign));
    Value arena = arenaOp;
    // What the plan did, for IR dumps (the statistics below are compiled
    // out of release LLVM builds).
    int64_t plannedBytes = 0;
    for (Buffer &b : buffers)
      plannedBytes += b.bytes;
    int64_t livePeak = peakLiveBytes(slots, n);
    arenaOp->setAttr("kiln.planned_buffers", builder.getI64IntegerAttr(buffers.size()));
    arenaOp->setAttr("kiln.planned_bytes", builder.getI64IntegerAttr(plannedBytes));
    arenaOp->setAttr("kiln.live_peak_bytes", builder.getI64IntegerAttr(livePeak));
    for (Buffer &b : buffers) {
      builder.setInsertionPoint(b.alloc);
      Value offset = builder.create<arith::ConstantIndexOp>(b.alloc.getLoc(), b.offset);
      Value view = builder.create<memref::ViewOp>(b.alloc.getLoc(), b.alloc.getType(), arena,
                                                  offset, ValueRange{});
      b.alloc.getResult().replaceAllUsesWith(view);
      b.alloc.erase();
    }
    numBuffers += buffers.size();
    numBytes += plannedBytes;
    numArenaBytes += arenaBytes;
    numLiveBytes += livePeak;
  }
};

} // namespace
} // namespace mlir::kiln
