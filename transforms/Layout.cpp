//===- Layout.cpp - kiln-layout: channels-last regions on kiln IR -----------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements `kiln-layout` (described in transforms/Passes.td). kiln IR is
// NCHW; a model that permutes to channels-last itself (ConvNeXt's
// LayerNorm and Linear layers on [N, H, W, C]) pays a transpose on both
// sides of every convolution and of the residual stream. The pass works on
// the permute between the two layouts, P = permute(a, [0, 3, 1, 2])
// (NHWC → NCHW), with three local rewrites repeated until none applies:
//
// - sink: op(P(a), b...) = P(op(a, b'...)) for an elementwise op whose other
//   operands are the same permute of same-shaped values, scalars or
//   broadcast operands smaller than the result (those are permuted
//   instead: a [C, 1, 1] bias becomes [1, 1, 1, C]);
// - cancel: permute(P(a), [0, 2, 3, 1]) = a;
// - convert: a convolution with a channels-last form (LayoutConvs.h) whose
//   result reaches a permute to NHWC through single-use elementwise ops, or
//   a tiling one (ConvNeXt's downsampling) whose input is P(a), becomes
//   P(conv_nhwc(permute(x))).
//
// Only permutes move: a value the function returns, or one an op other
// than those reads, keeps its NCHW form (the permute stays where the value
// leaves the channels-last region), so outputs keep eager's layout.
//===----------------------------------------------------------------------===//
#include "transforms/LayoutConvs.h"
#include "transforms/Passes.h"

#include "ir/KilnBuilders.h"
#include "ir/KilnOps.h"

namespace mlir::kiln {

#define GEN_PASS_DEF_LAYOUTPASS
#include "transforms/Passes.h.inc"

namespace {

constexpr int64_t kToNchw[] = {0, 3, 1, 2};
constexpr int64_t kToNhwc[] = {0, 2, 3, 1};

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// `v`'s defining permute when its dims are `dims`.
PermuteOp permuteOf(Value v, ArrayRef<int64_t> dims) {
  auto p = v.getDefiningOp<PermuteOp>();
  return p && p.getDims() == dims ? p : PermuteOp();
}

/// permute(v, dims), or the value it cancels to when `v` is a permute.
Value permute(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> dims) {
  if (auto inner = v.getDefiningOp<PermuteOp>()) {
    SmallVector<int64_t> composed;
    for (int64_t d : dims)
      composed.push_back(inner.getDims()[d]);
    if (llvm::equal(composed, llvm::seq<int64_t>(0, composed.size())))
      return inner.getInput();
  }
  return buildPermute(b, loc, v, dims);
}

/// The elementwise ops a permute moves below: one result shaped like its
/// full-size operands (broadcasting, attributes unrelated to dims).
bool isElementwise(Operation *op) {
  return op->getNumResults() == 1 &&
         isa<AddOp, SubOp, MulOp, DivOp, MaximumOp, MinimumOp, PowOp, ReluOp, GeluOp, SiluOp,
             SigmoidOp, TanhOp, NegOp, AbsOp, ExpOp, ErfOp, SqrtOp, RsqrtOp, RoundOp, CastOp>(op);
}

/// Whether operand `o` of an elementwise op whose result is P(a)-shaped
/// has a form in a's frame: P itself (or the same permute of a same-shaped
/// value), a scalar, or a broadcast operand smaller than the result.
bool hasUnpermuted(Value o, RankedTensorType result) {
  auto t = dyn_cast<RankedTensorType>(o.getType());
  if (!t || !t.hasStaticShape() || !result.hasStaticShape())
    return false;
  if (t.getRank() == 0 || (permuteOf(o, kToNchw) && t.getShape() == result.getShape()))
    return true;
  return t.getRank() <= 4 && t.getNumElements() < result.getNumElements();
}

/// That form: P's input, the scalar, or the broadcast operand reshaped to
/// rank 4 and permuted to NHWC.
Value unpermuted(OpBuilder &b, Location loc, Value o, RankedTensorType result) {
  auto t = cast<RankedTensorType>(o.getType());
  if (t.getRank() == 0)
    return o;
  if (PermuteOp p = permuteOf(o, kToNchw); p && t.getShape() == result.getShape())
    return p.getInput();
  SmallVector<int64_t> shape(4 - t.getRank(), 1);
  llvm::append_range(shape, t.getShape());
  if (t.getRank() < 4)
    o = b.create<ReshapeOp>(loc, RankedTensorType::get(shape, t.getElementType()), o);
  return permute(b, loc, o, kToNhwc);
}

/// Rewrites elementwise `user` of P(a) as P(user(a, ...)) when every
/// operand has a form in a's frame (hasUnpermuted).
bool sinkInto(Operation *user) {
  auto result = cast<RankedTensorType>(user->getResult(0).getType());
  if (!llvm::all_of(user->getOperands(), [&](Value o) { return hasUnpermuted(o, result); }))
    return false;
  OpBuilder b(user);
  SmallVector<Value> operands;
  for (Value o : user->getOperands())
    operands.push_back(unpermuted(b, user->getLoc(), o, result));
  SmallVector<int64_t> shape = {result.getDimSize(0), result.getDimSize(2), result.getDimSize(3),
                                result.getDimSize(1)};
  OperationState state(user->getLoc(), user->getName().getStringRef(), operands,
                       {RankedTensorType::get(shape, result.getElementType())}, user->getAttrs());
  Operation *moved = b.create(state);
  user->getResult(0).replaceAllUsesWith(permute(b, user->getLoc(), moved->getResult(0), kToNchw));
  user->erase();
  return true;
}

/// One sweep of sink and cancel over every P in `func`.
bool sinkPermutes(func::FuncOp func) {
  bool changed = false;
  SmallVector<PermuteOp> permutes;
  func.walk([&](PermuteOp p) {
    if (p.getDims() == ArrayRef<int64_t>(kToNchw))
      permutes.push_back(p);
  });
  for (PermuteOp p : permutes) {
    SmallVector<Operation *> users;
    for (Operation *user : p->getUsers())
      if (!llvm::is_contained(users, user))
        users.push_back(user);
    for (Operation *user : users) {
      if (auto q = dyn_cast<PermuteOp>(user); q && q.getDims() == ArrayRef<int64_t>(kToNhwc)) {
        q.getResult().replaceAllUsesWith(p.getInput());
        q.erase();
        changed = true;
      } else if (isElementwise(user) && user->getResult(0).getType() == p.getType()) {
        changed |= sinkInto(user);
      }
    }
    if (p->use_empty())
      p.erase();
  }
  return changed;
}

/// Whether `v` flows into a permute to NHWC through single-use elementwise
/// ops (a bias add), where an NHWC result would cancel it.
bool reachesNhwc(Value v) {
  for (int depth = 0; depth < 4 && v.hasOneUse(); ++depth) {
    Operation *user = *v.getUsers().begin();
    if (auto q = dyn_cast<PermuteOp>(user))
      return q.getDims() == ArrayRef<int64_t>(kToNhwc);
    if (!isElementwise(user) || user->getResult(0).getType() != v.getType())
      return false;
    v = user->getResult(0);
  }
  return false;
}

/// Converts the convolutions whose result is wanted channels-last, and the
/// downsampling (tiling) ones whose input is channels-last. A depthwise
/// conv whose result goes on NCHW (MobileNet's, after a oneDNN stem) stays:
/// converting it only moved the transpose (2-5% slower there).
bool convertConvs(func::FuncOp func) {
  SmallVector<Conv2dOp> convs;
  func.walk([&](Conv2dOp op) {
    if (hasNhwcForm(op) &&
        (reachesNhwc(op.getResult()) || (isTiling(op) && permuteOf(op.getInput(), kToNchw))))
      convs.push_back(op);
  });
  for (Conv2dOp op : convs) {
    OpBuilder b(op);
    Value x = permute(b, op.getLoc(), op.getInput(), kToNhwc);
    Value y = buildNhwcConv(b, op.getLoc(), op, x);
    op.getResult().replaceAllUsesWith(permute(b, op.getLoc(), y, kToNchw));
    Value input = op.getInput();
    op.erase();
    if (auto p = input.getDefiningOp<PermuteOp>(); p && p->use_empty())
      p.erase();
  }
  return !convs.empty();
}

struct LayoutPass : impl::LayoutPassBase<LayoutPass> {
  using LayoutPassBase::LayoutPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // Only graphs that go channels-last themselves (a permute to NHWC:
    // ConvNeXt); NCHW networks are left as they are (sinking the permutes of
    // their oneDNN convolutions further measured 2-4% slower on
    // mobilenet_v3_large and efficientnet_b0).
    bool channelsLast = false;
    func.walk([&](PermuteOp p) { channelsLast |= p.getDims() == ArrayRef<int64_t>(kToNhwc); });
    if (!channelsLast)
      return;
    // Each round converts the convolutions next to the channels-last values
    // the previous one made; a chain of N blocks needs about N rounds.
    for (int round = 0; round < 256; ++round) {
      bool changed = sinkPermutes(func);
      changed |= convertConvs(func);
      if (!changed)
        break;
    }
  }
};

} // namespace
} // namespace mlir::kiln
