//===- Autodiff.cpp - reverse-mode autodiff on kiln IR ---------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The `kiln-autodiff` pass and buildGradientFunctions (Autodiff.h). The
// function's single block is analysed twice: forward from the
// differentiable inputs (`active`: float values computed from them, except
// through ops marked kiln.no_grad, stop-gradients among them) and backward from the differentiable
// results (`useful`). Ops that are both get their rule from the one table
// (transforms/autodiff/GradRules.h), applied in reverse program order to
// build `@<fn>_bwd`; the forward values a rule reads are placeholders
// until the partitioner (transforms/autodiff/Partition.h: a min-cut over
// the forward, weighted by bytes) decides which values the forward saves
// and which ops the backward recomputes from them (constants are cloned,
// stop-gradients read through). `@<fn>_fwd` is `fn` returning the saved
// intermediates too.
//===----------------------------------------------------------------------===//
#include "transforms/Autodiff.h"
#include "transforms/Passes.h"
#include "transforms/autodiff/GradRules.h"
#include "transforms/autodiff/Partition.h"

#include "ir/KilnOps.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/BitVector.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_AUTODIFFPASS
#include "transforms/Passes.h.inc"

namespace {

bool isFloatTensor(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  return t && llvm::isa<FloatType>(t.getElementType());
}

class Differentiator {
public:
  Differentiator(func::FuncOp fn, ArrayRef<bool> diffInputs, ArrayRef<bool> diffResults,
                 const PartitionOptions &options)
      : fn(fn), diffInputs(diffInputs), diffResults(diffResults), options(options) {}

  FailureOr<GradientFunctions> run(std::string &why, Operation *&culprit);

private:
  void analyse();
  LogicalResult checkRules(std::string &why, Operation *&culprit);
  Value primal(Value v);
  Value savedArgument(Value v);
  void placeSaved();
  void sinkOpsOfSavedValues();
  void accumulate(Value v, Value g);
  LogicalResult buildBackward(std::string &why, Operation *&culprit);
  void buildForward();
  void findInputDeps();
  bool needs(Value v) const { return active.contains(v) && useful.contains(v); }

  func::FuncOp fn;
  ArrayRef<bool> diffInputs, diffResults;
  PartitionOptions options;
  func::ReturnOp ret;
  llvm::DenseSet<Value> active, useful;
  GradientFunctions out;
  Block *bwdBlock = nullptr;
  std::unique_ptr<OpBuilder> builder;
  llvm::DenseMap<Value, Value> primals, adjoints;
  SmallVector<Value> pending; ///< forward values the rules read (placeholders)
  SmallVector<Value> extras;  ///< forward values returned as extra results
};

void Differentiator::analyse() {
  Block &body = fn.getBody().front();
  for (BlockArgument arg : body.getArguments())
    if (arg.getArgNumber() < diffInputs.size() && diffInputs[arg.getArgNumber()] &&
        isFloatTensor(arg))
      active.insert(arg);
  for (Operation &op : body) {
    if (op.hasAttr(kNoGradAttr) ||
        llvm::none_of(op.getOperands(), [&](Value v) { return active.contains(v); }))
      continue;
    for (Value r : op.getResults())
      if (isFloatTensor(r))
        active.insert(r);
  }
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    if (i < diffResults.size() && diffResults[i] && active.contains(v))
      useful.insert(v);
  for (Operation &op : llvm::reverse(body))
    if (llvm::any_of(op.getResults(), [&](Value r) { return useful.contains(r); }))
      for (Value v : op.getOperands())
        if (active.contains(v))
          useful.insert(v);
}

/// Every op on a gradient path (a needed result, an operand needing a
/// gradient) must have a rule and one result.
LogicalResult Differentiator::checkRules(std::string &why, Operation *&culprit) {
  for (Operation &op : fn.getBody().front()) {
    if (isa<func::ReturnOp>(op) ||
        !llvm::any_of(op.getResults(), [&](Value r) { return needs(r); }))
      continue;
    if (!llvm::any_of(op.getOperands(), [&](Value v) { return needs(v); }))
      continue;
    if (op.getNumResults() != 1 || !lookupGradRule(&op)) {
      why = nonDifferentiableReason(&op);
      culprit = &op;
      return failure();
    }
  }
  return success();
}

/// The forward value `v` in the backward: a constant is cloned, a
/// stop-gradient read through; anything else is a placeholder argument
/// until placeSaved() decides whether the forward saves it.
Value Differentiator::primal(Value v) {
  if (Value known = primals.lookup(v))
    return known;
  Value mapped;
  Operation *def = v.getDefiningOp();
  if (def && isa<ConstantOp>(def)) {
    OpBuilder::InsertionGuard guard(*builder);
    builder->setInsertionPointToStart(bwdBlock);
    mapped = builder->clone(*def)->getResult(0);
  } else if (def && isStopGradient(def)) {
    mapped = primal(def->getOperand(0)); // an identity: nothing to save
  } else {
    mapped = bwdBlock->addArgument(v.getType(), v.getLoc());
    pending.push_back(v);
  }
  primals[v] = mapped;
  return mapped;
}

/// The backward argument receiving saved value `v`, in the layout
/// GradientFunctions describes (inputs, results, then extras).
Value Differentiator::savedArgument(Value v) {
  unsigned numGrads = out.gradResults.size();
  auto results = ret.getOperands();
  auto asResult = llvm::find(results, v);
  if (auto arg = llvm::dyn_cast<BlockArgument>(v)) {
    unsigned at = numGrads + out.savedInputs.size();
    out.savedInputs.push_back(arg.getArgNumber());
    return bwdBlock->insertArgument(at, v.getType(), v.getLoc());
  }
  if (asResult != results.end()) {
    unsigned at = numGrads + out.savedInputs.size() + out.savedResults.size();
    out.savedResults.push_back(asResult - results.begin());
    return bwdBlock->insertArgument(at, v.getType(), v.getLoc());
  }
  extras.push_back(v);
  return bwdBlock->addArgument(v.getType(), v.getLoc());
}

/// Replaces the placeholders by saved arguments and ops recomputed at the
/// start of the backward, as the partitioner (autodiff/Partition.h) chose.
void Differentiator::placeSaved() {
  Partition part = partitionForBackward(fn.getBody().front(), pending, options);
  out.savedBytes = part.savedBytes;
  IRMapping map;
  for (Value v : part.saved)
    map.map(v, savedArgument(v));
  OpBuilder b = OpBuilder::atBlockBegin(bwdBlock);
  for (Operation *op : part.recomputed)
    b.clone(*op, map);
  llvm::BitVector dead(bwdBlock->getNumArguments());
  for (Value v : pending) {
    auto placeholder = llvm::cast<BlockArgument>(primals[v]);
    placeholder.replaceAllUsesWith(map.lookup(v));
    dead.set(placeholder.getArgNumber());
  }
  bwdBlock->eraseArguments(dead);
  sinkOpsOfSavedValues();
}

/// Moves every op of the backward computed from saved values alone (the
/// recomputed forward ops, and rule ops such as max pooling's tap masks)
/// to just before its first user. The backward consumes the forward's
/// values last-to-first, so a value recomputed at the start for the first
/// layer's gradient would otherwise stay live through the whole backward.
/// Visited last to first, a chain moves together; the values such ops read
/// are saved arguments (not in kiln's arena) or other such ops.
void Differentiator::sinkOpsOfSavedValues() {
  llvm::DenseSet<Operation *> fromSaved;
  SmallVector<Operation *> order;
  for (Operation &op : *bwdBlock) {
    if (op.hasTrait<OpTrait::IsTerminator>() || op.getNumRegions() || !isMemoryEffectFree(&op))
      continue;
    if (llvm::all_of(op.getOperands(), [&](Value v) {
          if (Operation *def = v.getDefiningOp())
            return fromSaved.contains(def);
          auto arg = llvm::cast<BlockArgument>(v);
          return arg.getOwner() == bwdBlock && arg.getArgNumber() >= out.gradResults.size();
        })) {
      fromSaved.insert(&op);
      order.push_back(&op);
    }
  }
  for (Operation *op : llvm::reverse(order)) {
    Operation *first = nullptr;
    for (Operation *user : op->getUsers()) {
      Operation *top = bwdBlock->findAncestorOpInBlock(*user);
      if (top && (!first || top->isBeforeInBlock(first)))
        first = top;
    }
    if (first)
      op->moveBefore(first);
  }
}

/// True when `v` is zeros as GradBuilder::zeros builds them (a splat zero
/// constant, maybe broadcast).
bool isZeros(Value v) {
  if (auto b = v.getDefiningOp<BroadcastToOp>())
    v = b.getInput();
  auto c = v.getDefiningOp<ConstantOp>();
  auto dense = c ? llvm::dyn_cast<DenseElementsAttr>(c.getValue()) : nullptr;
  return dense && dense.isSplat() && llvm::isa<FloatType>(dense.getElementType()) &&
         dense.getSplatValue<APFloat>().isZero();
}

/// `a + b` as one concat when both are concats along one dim whose nonzero
/// pieces do not overlap, each lying within zeros of the other (the
/// gradients of disjoint slices of one tensor, e.g. attention's q, k and v
/// cut from one projection, each padded with zeros): the pieces side by
/// side, no zero-filled full-size tensors and no adds. Null otherwise.
Value joinDisjointConcats(GradBuilder &gb, Value a, Value g) {
  auto ca = a.getDefiningOp<ConcatOp>(), cb = g.getDefiningOp<ConcatOp>();
  if (!ca || !cb || a.getType() != g.getType() || ca.getDim() != cb.getDim())
    return {};
  int64_t dim = ca.getDim();
  // The pieces as [start, end) ranges along dim (static sizes only).
  struct Piece {
    int64_t start, end;
    Value value;
    bool zero;
  };
  auto piecesOf = [&](ConcatOp c, SmallVectorImpl<Piece> &out) {
    int64_t at = 0;
    for (Value v : c.getInputs()) {
      int64_t n = llvm::cast<RankedTensorType>(v.getType()).getDimSize(dim);
      if (ShapedType::isDynamic(n))
        return false;
      out.push_back({at, at + n, v, isZeros(v)});
      at += n;
    }
    return true;
  };
  SmallVector<Piece> pa, pb;
  if (!piecesOf(ca, pa) || !piecesOf(cb, pb))
    return {};
  // Every nonzero piece of one side lies within one zero piece of the other.
  auto covered = [](const Piece &p, ArrayRef<Piece> other) {
    return llvm::any_of(
        other, [&](const Piece &q) { return q.zero && q.start <= p.start && p.end <= q.end; });
  };
  SmallVector<Piece> nonzero;
  for (auto [mine, other] : {std::pair{&pa, &pb}, std::pair{&pb, &pa}})
    for (const Piece &p : *mine)
      if (!p.zero) {
        if (!covered(p, *other))
          return {};
        nonzero.push_back(p);
      }
  llvm::sort(nonzero, [](const Piece &x, const Piece &y) { return x.start < y.start; });
  auto type = llvm::cast<RankedTensorType>(a.getType());
  auto zeros = [&](int64_t n) {
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] = n;
    return gb.zeros(type.clone(shape));
  };
  SmallVector<Value> parts;
  int64_t at = 0;
  for (const Piece &p : nonzero) {
    if (p.start > at)
      parts.push_back(zeros(p.start - at));
    parts.push_back(p.value);
    at = p.end;
  }
  if (at < type.getDimSize(dim))
    parts.push_back(zeros(type.getDimSize(dim) - at));
  return gb.concat(parts, dim);
}

void Differentiator::accumulate(Value v, Value g) {
  Value &slot = adjoints[v];
  if (!slot) {
    slot = g;
    return;
  }
  GradBuilder gb(
      *builder, v.getLoc(), [&](Value x) { return primal(x); }, [&](Value x) { return needs(x); });
  if (Value joined = joinDisjointConcats(gb, slot, g))
    slot = joined;
  else
    slot = builder->create<AddOp>(v.getLoc(), slot, g);
}

LogicalResult Differentiator::buildBackward(std::string &why, Operation *&culprit) {
  Block &body = fn.getBody().front();
  for (Operation &op : llvm::reverse(body)) {
    if (isa<func::ReturnOp>(op) || op.getNumResults() != 1)
      continue;
    Value g = adjoints.lookup(op.getResult(0));
    if (!g || !llvm::any_of(op.getOperands(), [&](Value v) { return needs(v); }))
      continue;
    GradBuilder gb(
        *builder, op.getLoc(), [&](Value v) { return primal(v); },
        [&](Value v) { return needs(v); });
    SmallVector<Value> grads(op.getNumOperands());
    if (failed((*lookupGradRule(&op))(gb, &op, g, grads, why))) {
      culprit = &op;
      return failure();
    }
    for (auto [operand, grad] : llvm::zip(op.getOperands(), grads))
      if (grad && needs(operand)) {
        auto type = llvm::cast<RankedTensorType>(operand.getType());
        accumulate(operand, grad.getType() == type ? grad : gb.reduceTo(grad, type));
      }
  }
  SmallVector<Value> results;
  for (BlockArgument arg : body.getArguments())
    if (Value g = needs(arg) ? adjoints.lookup(arg) : Value()) {
      out.gradInputs.push_back(arg.getArgNumber());
      results.push_back(g);
    }
  builder->create<func::ReturnOp>(fn.getLoc(), results);
  return success();
}

void Differentiator::findInputDeps() {
  Block &body = fn.getBody().front();
  out.inputDeps.resize(out.gradInputs.size());
  for (auto [k, i] : llvm::enumerate(out.gradResults)) {
    llvm::DenseSet<Value> reach{ret.getOperand(i)};
    for (Operation &op : llvm::reverse(body))
      if (llvm::any_of(op.getResults(), [&](Value r) { return reach.contains(r); }))
        for (Value v : op.getOperands())
          if (needs(v))
            reach.insert(v);
    for (auto [j, arg] : llvm::enumerate(out.gradInputs))
      if (reach.contains(body.getArgument(arg)))
        out.inputDeps[j].push_back(static_cast<int64_t>(k));
  }
}

void Differentiator::buildForward() {
  IRMapping map;
  func::FuncOp fwd = fn.clone(map);
  fwd.setName((fn.getName() + "_fwd").str());
  auto fwdRet = cast<func::ReturnOp>(fwd.getBody().front().getTerminator());
  SmallVector<Value> results(fwdRet.getOperands());
  for (Value v : extras)
    results.push_back(map.lookup(v));
  fwdRet->setOperands(results);
  fwd.setType(
      FunctionType::get(fn.getContext(), fn.getArgumentTypes(), ValueRange(results).getTypes()));
  fn->getBlock()->getOperations().insert(std::next(Block::iterator(fn)), fwd);
  out.forward = fwd;
  out.numSaved = static_cast<int64_t>(extras.size());
}

FailureOr<GradientFunctions> Differentiator::run(std::string &why, Operation *&culprit) {
  if (!fn.getBody().hasOneBlock()) {
    why = "a function of several blocks";
    culprit = fn;
    return failure();
  }
  ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  analyse();
  if (llvm::none_of(fn.getArguments(), [&](Value a) { return needs(a); })) {
    why = "no differentiable (float, marked) input reaches a differentiable result";
    culprit = fn;
    return failure();
  }
  if (failed(checkRules(why, culprit)))
    return failure();
  OpBuilder top(fn);
  top.setInsertionPointAfter(fn);
  SmallVector<Type> gradTypes;
  // A value returned twice gets both results' gradients.
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    if (useful.contains(v) && i < diffResults.size() && diffResults[i]) {
      out.gradResults.push_back(i);
      gradTypes.push_back(v.getType());
    }
  auto bwd = top.create<func::FuncOp>(fn.getLoc(), (fn.getName() + "_bwd").str(),
                                      top.getFunctionType(gradTypes, {}));
  bwdBlock = bwd.addEntryBlock();
  builder = std::make_unique<OpBuilder>(bwdBlock, bwdBlock->end());
  for (auto [k, i] : llvm::enumerate(out.gradResults))
    accumulate(ret.getOperand(i), bwdBlock->getArgument(k));
  if (failed(buildBackward(why, culprit))) {
    bwd.erase();
    return failure();
  }
  placeSaved();
  auto bwdRet = cast<func::ReturnOp>(bwdBlock->getTerminator());
  bwd.setType(top.getFunctionType(bwdBlock->getArgumentTypes(), bwdRet.getOperandTypes()));
  out.backward = bwd;
  buildForward();
  findInputDeps();
  bwd->setAttr("kiln.grad_results", top.getDenseI64ArrayAttr(out.gradResults));
  bwd->setAttr("kiln.grad_inputs", top.getDenseI64ArrayAttr(out.gradInputs));
  bwd->setAttr("kiln.saved_inputs", top.getDenseI64ArrayAttr(out.savedInputs));
  bwd->setAttr("kiln.saved_results", top.getDenseI64ArrayAttr(out.savedResults));
  bwd->setAttr("kiln.num_saved", top.getI64IntegerAttr(out.numSaved));
  // The extras (the last arguments) are read by the backward alone: the
  // runtime may drop each after its last read (kiln-cpu-release-dead-inputs).
  SmallVector<int64_t> extras;
  for (int64_t i = bwdBlock->getNumArguments() - out.numSaved; i < bwdBlock->getNumArguments(); ++i)
    extras.push_back(i);
  bwd->setAttr("kiln.release_inputs", top.getDenseI64ArrayAttr(extras));
  bwd->setAttr("kiln.saved_bytes", top.getI64IntegerAttr(out.savedBytes));
  return out;
}

struct AutodiffPass : impl::AutodiffPassBase<AutodiffPass> {
  using AutodiffPassBase::AutodiffPassBase;
  void runOnOperation() override {
    SmallVector<func::FuncOp> funcs(getOperation().getOps<func::FuncOp>());
    for (func::FuncOp fn : funcs) {
      if (fn.isExternal())
        continue;
      SmallVector<bool> diffInputs;
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        diffInputs.push_back(fn.getArgAttr(i, kRequiresGradAttr) != nullptr);
      if (llvm::none_of(diffInputs, [](bool b) { return b; }))
        continue;
      SmallVector<bool> diffResults(fn.getNumResults(), true);
      std::string why;
      Operation *culprit = nullptr;
      PartitionOptions partition;
      partition.memoryBudget = memoryBudget;
      if (failed(buildGradientFunctions(fn, diffInputs, diffResults, why, culprit, partition)))
        (culprit ? culprit : fn.getOperation())->emitRemark("not differentiable: ") << why;
    }
  }
};

} // namespace

bool isStopGradient(Operation *op) {
  return isa<CastOp>(op) && op->hasAttr(kNoGradAttr) &&
         op->getOperand(0).getType() == op->getResult(0).getType();
}

FailureOr<GradientFunctions> buildGradientFunctions(func::FuncOp fn, ArrayRef<bool> diffInputs,
                                                    ArrayRef<bool> diffResults, std::string &why,
                                                    Operation *&culprit,
                                                    const PartitionOptions &partition) {
  culprit = nullptr;
  return Differentiator(fn, diffInputs, diffResults, partition).run(why, culprit);
}

} // namespace mlir::kiln
