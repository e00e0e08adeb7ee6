//===- DestinationOutputs.cpp - results become caller-provided buffers -------===//
// SPDX-License-Identifier: Apache-2.0
//
// Rewrites each public `func.func` that returns tensors into one that takes
// an extra identity-layout memref argument per result, writes each returned
// tensor into it with `bufferization.materialize_in_destination` (so that
// `eliminate-empty-tensors` lets the producer compute straight into the
// caller's buffer) and returns nothing. Tensor inputs are marked
// `bufferization.writable = false`: they alias the caller's tensors and must
// never be written. Every buffer argument gets `llvm.noalias`: the caller
// guarantees that outputs are fresh buffers overlapping no input or other
// output (inputs may alias each other; they are only read). The function
// gets `llvm.emit_c_interface`. A returned tensor.expand_shape or
// collapse_shape is written through the matching view of the output
// buffer (no copy of the reshaped result). A `tensor.empty`, a fill of one or an
// insert_slice chain into one with several users (CSE merges identical
// ones) is first duplicated per user:
// MLIR 19's eliminate-empty-tensors rewrites a shared init for one
// destination and then copies the wrong results into the others.
//===----------------------------------------------------------------------===//
#include "codegen/common/Passes.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_DESTINATIONOUTPUTSPASS
#include "codegen/common/Passes.h.inc"

namespace {

/// Rewrites one function; fails (with a diagnostic) on non-tensor results.
LogicalResult rewriteFunction(func::FuncOp func) {
  FunctionType type = func.getFunctionType();
  SmallVector<Type> outputs;
  for (Type t : type.getResults()) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    if (!tensor)
      return func.emitError() << "result type " << t << " is not a ranked tensor";
    outputs.push_back(MemRefType::get(tensor.getShape(), tensor.getElementType()));
  }
  MLIRContext *ctx = func.getContext();
  for (auto [i, t] : llvm::enumerate(type.getInputs()))
    if (isa<TensorType>(t))
      func.setArgAttr(i, "bufferization.writable", BoolAttr::get(ctx, false));
  // Outputs are fresh buffers that overlap nothing and inputs are only
  // read, so every buffer argument is `noalias`: LLVM may then keep
  // accumulators in registers and vectorize without runtime checks.
  for (unsigned i = 0, e = type.getNumInputs(); i < e; ++i)
    if (isa<TensorType>(type.getInput(i)))
      func.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(), UnitAttr::get(ctx));
  func->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
  if (outputs.empty())
    return success();

  // `kiln.in_place_input` on a result (the frontend passes that input's
  // memory as its buffer; kiln-cpu-in-place-outputs) and
  // `kiln.lazy_output` (the frontend passes no memory: kiln-cpu-lazy-outputs
  // allocates it where it is first written) move to its output argument.
  constexpr const char *kMovedAttrs[] = {"kiln.in_place_input", "kiln.lazy_output"};
  SmallVector<SmallVector<Attribute, 2>> moved;
  for (unsigned i = 0, e = outputs.size(); i < e; ++i) {
    moved.emplace_back();
    for (const char *name : kMovedAttrs)
      moved.back().push_back(func.getResultAttr(i, name));
  }
  func.removeResAttrsAttr();
  Block &entry = func.getBody().front();
  unsigned firstOut = entry.getNumArguments();
  SmallVector<Location> locs(outputs.size(), func.getLoc());
  entry.addArguments(outputs, locs);
  SmallVector<Type> inputs(type.getInputs());
  inputs.append(outputs);
  func.setType(FunctionType::get(ctx, inputs, {}));
  for (unsigned i = firstOut, e = inputs.size(); i < e; ++i) {
    func.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(), UnitAttr::get(ctx));
    for (auto [name, a] : llvm::zip(kMovedAttrs, moved[i - firstOut]))
      if (a)
        func.setArgAttr(i, name, a);
  }

  func.walk([&](func::ReturnOp ret) {
    OpBuilder b(ret);
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      Value dest = entry.getArgument(firstOut + i);
      // A returned reshape of `u`: `u` is written through the reshaped view
      // of the output buffer, so its producer computes into the caller's
      // buffer instead of a temporary that is then copied.
      // The view is made at the top of the function: eliminate-empty-tensors
      // needs the destination to dominate the producer's tensor.empty.
      OpBuilder top = OpBuilder::atBlockBegin(&entry);
      if (auto expand = v.getDefiningOp<tensor::ExpandShapeOp>()) {
        dest = top.create<memref::CollapseShapeOp>(ret.getLoc(), dest,
                                                   expand.getReassociationIndices());
        v = expand.getSrc();
      } else if (auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>();
                 collapse && collapse.getSrcType().hasStaticShape()) {
        auto srcType = collapse.getSrcType();
        dest = top.create<memref::ExpandShapeOp>(
            ret.getLoc(), MemRefType::get(srcType.getShape(), srcType.getElementType()), dest,
            collapse.getReassociationIndices());
        v = collapse.getSrc();
      }
      auto m = b.create<bufferization::MaterializeInDestinationOp>(ret.getLoc(), v, dest);
      m.setRestrict(true);
      m.setWritable(true);
    }
    llvm::SetVector<Operation *> bypassed;
    for (Value v : ret.getOperands())
      if (v.getDefiningOp<tensor::ExpandShapeOp>() || v.getDefiningOp<tensor::CollapseShapeOp>())
        bypassed.insert(v.getDefiningOp());
    b.create<func::ReturnOp>(ret.getLoc());
    ret.erase();
    // A reshape only the return used is dead now; left in place, MLIR 19's
    // bufferization turns a dynamic expand_shape into an invalid
    // memref.expand_shape (no output sizes).
    for (Operation *op : bypassed)
      if (op->use_empty())
        op->erase();
  });
  return success();
}

/// True for ops that only create or fill a fresh tensor (cheap to repeat),
/// including `tensor.insert_slice` into such a tensor (the first steps of a
/// concat, which CSE shares between two concats with a common first operand).
bool isInitOp(Operation *op) {
  if (isa<tensor::EmptyOp, linalg::FillOp>(op))
    return true;
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
    Operation *dest = insert.getDest().getDefiningOp();
    return dest && isInitOp(dest);
  }
  auto generic = dyn_cast<linalg::GenericOp>(op);
  return generic && generic.getNumDpsInputs() == 0 &&
         generic.getNumLoops() == generic.getNumParallelLoops();
}

/// True when `use` is a tensor its user writes into (a DPS init, or the
/// destination of an insert_slice).
bool isDestinationUse(OpOperand &use) {
  Operation *user = use.getOwner();
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(user))
    return &use == &insert.getDestMutable();
  auto dps = dyn_cast<DestinationStyleOpInterface>(user);
  return dps && dps.isDpsInit(&use);
}

/// Gives every use of an init op (`tensor.empty`, a fill of one) its own
/// copy, users first so that the clones of a fill get their own empties too.
void unshareInits(func::FuncOp func) {
  SmallVector<Operation *> inits;
  func.walk([&](Operation *op) {
    if (isInitOp(op))
      inits.push_back(op);
  });
  for (Operation *op : llvm::reverse(inits)) {
    // An insert_slice chain (a concat prefix) is only duplicated for the
    // users that write into it; readers (say, the slices of a padded
    // input) keep sharing it instead of each getting a copy.
    bool chain = isa<tensor::InsertSliceOp>(op);
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : op->getUses())
      if (!chain || isDestinationUse(use))
        uses.push_back(&use);
    for (size_t i = 1; i < uses.size(); ++i) {
      OpOperand *use = uses[i];
      OpBuilder b(op);
      use->set(b.clone(*op)->getResult(0));
    }
  }
}

struct DestinationOutputsPass : impl::DestinationOutputsPassBase<DestinationOutputsPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.isPublic())
        continue;
      unshareInits(func);
      if (failed(rewriteFunction(func)))
        return signalPassFailure();
    }
  }
};

} // namespace
} // namespace mlir::kiln
