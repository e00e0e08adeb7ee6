//===- InPlaceOutputs.cpp - results written into the input they update -------===//
// SPDX-License-Identifier: Apache-2.0
//
// `kiln-cpu-in-place-outputs`: an output argument marked
// `kiln.in_place_input = i` (the frontend's write-back of graph input `i`,
// e.g. an optimizer's parameter update) is given, at run time, the memory of
// input `i` itself, so the result needs no buffer of its own and no copy
// back. This pass makes that sharing correct: every read of input `i` is
// redirected to the output argument (so the function accesses that memory
// through one `llvm.noalias` pointer) when all reads happen before the first
// op touching the output, or in that op itself as a parallel
// `linalg.generic` reading the input with the same one-to-one indexing map
// it writes the output with (each element is read before it is written).
// Otherwise the input's value is first copied to a fresh buffer that all its
// readers use instead. Either way input `i` is left unused. Runs after
// bufferization (the buffers and the order of the loops are final).
//===----------------------------------------------------------------------===//
#include "codegen/cpu/MemRefViews.h"
#include "codegen/cpu/Passes.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_CPUINPLACEOUTPUTSPASS
#include "codegen/cpu/Passes.h.inc"

namespace {

constexpr const char kInPlaceAttr[] = "kiln.in_place_input";

/// True when `op` (or an op nested in it) uses a value of `set` other than
/// as the source of a view.
bool accesses(Operation *op, const llvm::SmallPtrSet<Value, 8> &set) {
  if (isa<ViewLikeOpInterface>(op))
    return false;
  bool found = false;
  op->walk([&](Operation *inner) {
    if (isa<ViewLikeOpInterface>(inner))
      return;
    for (Value v : inner->getOperands())
      found |= set.contains(v);
  });
  return found;
}

/// True when `op` is a parallel linalg.generic that reads `in` (directly,
/// as inputs only) and writes `out` (directly, as its inits) all through
/// one permutation map, touching neither in its body.
bool readsEachElementBeforeWriting(Operation *op, Value in, Value out,
                                   const llvm::SmallPtrSet<Value, 8> &ins,
                                   const llvm::SmallPtrSet<Value, 8> &outs) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumLoops() != generic.getNumParallelLoops())
    return false;
  AffineMap map;
  for (OpOperand &operand : generic->getOpOperands()) {
    Value v = operand.get();
    bool isIn = ins.contains(v), isOut = outs.contains(v);
    if (!isIn && !isOut)
      continue;
    bool init = generic.isDpsInit(&operand);
    if ((isIn && (v != in || init)) || (isOut && (v != out || !init)))
      return false;
    AffineMap m = generic.getMatchingIndexingMap(&operand);
    if (!m.isPermutation() || (map && m != map))
      return false;
    map = m;
  }
  bool inBody = false;
  generic.getRegion().walk([&](Operation *inner) {
    for (Value v : inner->getOperands())
      inBody |= ins.contains(v) || outs.contains(v);
  });
  return !inBody;
}

/// Whether input `in` may share the memory of output `out` (see the file
/// comment): `body` is the function's only block.
bool canShare(Block &body, Value in, Value out) {
  llvm::SmallPtrSet<Value, 8> ins = viewsOf(in), outs = viewsOf(out);
  Operation *firstWrite = nullptr;
  for (Operation &op : body)
    if (accesses(&op, outs)) {
      firstWrite = &op;
      break;
    }
  bool written = false;
  for (Operation &op : body) {
    if (&op == firstWrite) {
      if (accesses(&op, ins) && !readsEachElementBeforeWriting(&op, in, out, ins, outs))
        return false;
      written = true;
    } else if (written && accesses(&op, ins)) {
      return false;
    }
  }
  return true;
}

/// Gives input `in`'s readers a copy of the shared memory made at entry.
void readFromCopy(func::FuncOp func, BlockArgument in, BlockArgument out) {
  Block &body = func.getBody().front();
  auto type = cast<MemRefType>(in.getType());
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  Value copy = b.create<memref::AllocOp>(func.getLoc(),
                                         MemRefType::get(type.getShape(), type.getElementType()));
  b.create<memref::CopyOp>(func.getLoc(), out, copy);
  in.replaceAllUsesWith(copy);
  b.setInsertionPoint(body.getTerminator());
  b.create<memref::DeallocOp>(func.getLoc(), copy);
}

struct CpuInPlaceOutputsPass : impl::CpuInPlaceOutputsPassBase<CpuInPlaceOutputsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    Block &body = func.getBody().front();
    for (unsigned o = 0, e = func.getNumArguments(); o < e; ++o) {
      auto attr = func.getArgAttrOfType<IntegerAttr>(o, kInPlaceAttr);
      if (!attr)
        continue;
      func.removeArgAttr(o, kInPlaceAttr);
      int64_t i = attr.getInt();
      BlockArgument out = body.getArgument(o);
      if (i < 0 || i >= (int64_t)e || (unsigned)i == o) {
        func.emitError() << "kiln.in_place_input " << i << " names no other argument";
        return signalPassFailure();
      }
      BlockArgument in = body.getArgument(i);
      auto inType = dyn_cast<MemRefType>(in.getType());
      auto outType = dyn_cast<MemRefType>(out.getType());
      if (!inType || !outType || inType.getShape() != outType.getShape() ||
          inType.getElementType() != outType.getElementType()) {
        func.emitError() << "kiln.in_place_input " << i << ": argument types differ";
        return signalPassFailure();
      }
      if (in.use_empty())
        continue;
      if (inType == outType && canShare(body, in, out))
        in.replaceAllUsesWith(out);
      else
        readFromCopy(func, in, out);
    }
  }
};

} // namespace
} // namespace mlir::kiln
