//===- DnnlConvEpilogue.cpp - per-channel affine + activation after a conv ===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements DnnlConvEpilogue.h: walks the single-user chain after a
// convolution, accepting kiln.mul / kiln.add (either side) and kiln.sub
// (convolution side first) whose other operand is a per-output-channel
// tensor ([1, F, 1, 1] or [F, 1, 1]) outside the convolution's forward
// slice, then (when asked) a residual kiln.add of a full tensor outside
// that slice, then one kiln.relu or kiln.silu (only a ReLU after a residual).
//===----------------------------------------------------------------------===//
#include "codegen/cpu/DnnlConvEpilogue.h"

#include "mlir/Analysis/SliceAnalysis.h"

namespace mlir::kiln {
namespace {

/// Whether `c` is not computed from the convolution (a training-mode
/// BatchNorm's batch statistics are).
bool independent(Value c, Conv2dOp conv) {
  SetVector<Operation *> slice;
  BackwardSliceOptions options;
  options.inclusive = true;
  getBackwardSlice(c, &slice, options);
  return !slice.contains(conv.getOperation());
}

/// Whether `c` is a per-channel operand of a chain on `conv`'s result type.
bool perChannel(Value c, Conv2dOp conv) {
  auto t = dyn_cast<RankedTensorType>(c.getType());
  RankedTensorType y = conv.getType();
  if (!t || !t.hasStaticShape() || t.getElementType() != y.getElementType())
    return false;
  int64_t f = y.getDimSize(1);
  ArrayRef<int64_t> s = t.getShape();
  bool shapeOk = (s.size() == 4 && s[0] == 1 && s[1] == f && s[2] == 1 && s[3] == 1) ||
                 (s.size() == 3 && s[0] == f && s[1] == 1 && s[2] == 1);
  return shapeOk && independent(c, conv);
}

/// The per-channel operand of `op` when its other operand is `v` and the
/// op is one the chain takes, else null.
Value chainOperand(Operation *op, Value v, Conv2dOp conv) {
  if (op->getNumResults() != 1 || op->getResult(0).getType() != conv.getType())
    return {};
  if (!isa<MulOp, AddOp, SubOp>(op))
    return {};
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  if (lhs == v && perChannel(rhs, conv))
    return rhs;
  if (rhs == v && !isa<SubOp>(op) && perChannel(lhs, conv))
    return lhs;
  return {};
}

Operation *onlyUser(Value v) { return v.hasOneUse() ? *v.getUsers().begin() : nullptr; }

} // namespace

/// Whether `v` may be another convolution's epilogue chain (single use).
bool chainLike(Value v) {
  Operation *d = v.getDefiningOp();
  return d && d->hasOneUse() && isa<Conv2dOp, MulOp, AddOp, SubOp>(d);
}

/// The residual operand of `user` when it is a kiln.add of `v` and a full
/// tensor of the convolution's type that does not depend on it. When both
/// operands are convolution chains (a bottleneck with a downsample), the
/// left one's convolution absorbs the add.
Value residualOperand(Operation *user, Value v, Conv2dOp conv) {
  auto add = dyn_cast<AddOp>(user);
  if (!add || add.getType() != conv.getType() || add.getLhs() == add.getRhs() ||
      (add.getRhs() == v && chainLike(add.getLhs())))
    return {};
  Value other = add.getLhs() == v ? add.getRhs() : add.getLhs();
  return other.getType() == conv.getType() && independent(other, conv) ? other : Value();
}

ConvEpilogue matchConvEpilogue(Conv2dOp conv, bool residual) {
  ConvEpilogue e;
  Value v = conv.getResult();
  Block *block = conv->getBlock();
  while (Operation *user = onlyUser(v)) {
    if (user->getBlock() != block || !chainOperand(user, v, conv))
      break;
    e.ops.push_back(user);
    v = user->getResult(0);
  }
  Operation *user = onlyUser(v);
  if (residual && user && user->getBlock() == block)
    if (Value r = residualOperand(user, v, conv)) {
      e.ops.push_back(user);
      e.residualAdd = user;
      e.residual = r;
      v = user->getResult(0);
      user = onlyUser(v);
    }
  if (user && user->getBlock() == block && isa<ReluOp, SiluOp>(user) &&
      !(e.residual && isa<SiluOp>(user)) && user->getResult(0).getType() == conv.getType()) {
    e.ops.push_back(user);
    e.activation = isa<ReluOp>(user) ? 1 : 2;
    v = user->getResult(0);
  }
  e.replaced = v;
  return e;
}

std::pair<Value, Value> buildScaleShift(OpBuilder &b, Location loc, Conv2dOp conv,
                                        const ConvEpilogue &epilogue) {
  int64_t f = conv.getType().getDimSize(1);
  auto vec = RankedTensorType::get({f}, conv.getType().getElementType());
  auto splat = [&](float x) {
    return b.create<ConstantOp>(loc, DenseElementsAttr::get(vec, x)).getResult();
  };
  Value scale, shift, v = conv.getResult();
  for (Operation *op : epilogue.ops) {
    if (isa<ReluOp, SiluOp>(op) || op == epilogue.residualAdd)
      break;
    Value c = b.create<ReshapeOp>(loc, vec, chainOperand(op, v, conv));
    if (isa<MulOp>(op)) {
      scale = scale ? b.create<MulOp>(loc, vec, scale, c).getResult() : c;
      if (shift)
        shift = b.create<MulOp>(loc, vec, shift, c);
    } else if (isa<AddOp>(op)) {
      shift = shift ? b.create<AddOp>(loc, vec, shift, c).getResult() : c;
    } else {
      shift = b.create<SubOp>(loc, vec, shift ? shift : splat(0.0f), c);
    }
    v = op->getResult(0);
  }
  return {scale ? scale : splat(1.0f), shift ? shift : splat(0.0f)};
}

} // namespace mlir::kiln
