//===- ElementwiseGrads.cpp - gradient rules of elementwise kiln ops -------===//
// SPDX-License-Identifier: Apache-2.0
//
// Reverse-mode rules for arithmetic, activations, casts and kiln.select
// (GradRules.h). Each follows torch's derivatives.yaml formula for the op;
// broadcasting is undone by the driver (GradBuilder::reduceTo), which also
// casts a cast's gradient back to its operand's type.
//===----------------------------------------------------------------------===//
#include "transforms/autodiff/GradRules.h"

#include "ir/KilnOps.h"

#include <cmath>

namespace mlir::kiln {
namespace {

using UnaryFn = std::function<Value(GradBuilder &, Operation *, Value x, Value g)>;

/// A rule for a one-operand op: `fn` returns the operand's gradient.
GradRule unary(UnaryFn fn) {
  return
      [fn](GradBuilder &gb, Operation *op, Value g, SmallVectorImpl<Value> &grads, std::string &) {
        grads[0] = fn(gb, op, op->getOperand(0), g);
        return success();
      };
}

Type eltOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()).getElementType(); }

/// The result of `op` as the backward sees it.
Value resultOf(GradBuilder &gb, Operation *op) { return gb.primal(op->getResult(0)); }

Value compare(GradBuilder &gb, StringRef kind, Value x, double c) {
  Value k = gb.scalar(eltOf(x), c);
  if (kind == "gt")
    return gb.b.create<GtOp>(gb.loc, x, k);
  return gb.b.create<LtOp>(gb.loc, x, k);
}

Value select(GradBuilder &gb, Value cond, Value a, Value c) {
  return gb.b.create<SelectOp>(gb.loc, cond, a, c);
}

void addArithmetic(GradRuleTable &t) {
  t[AddOp::getOperationName()] = [](GradBuilder &, Operation *, Value g,
                                    SmallVectorImpl<Value> &grads, std::string &) {
    grads[0] = grads[1] = g;
    return success();
  };
  t[SubOp::getOperationName()] = [](GradBuilder &gb, Operation *op, Value g,
                                    SmallVectorImpl<Value> &grads, std::string &) {
    grads[0] = g;
    if (gb.needs(op->getOperand(1)))
      grads[1] = gb.neg(g);
    return success();
  };
  t[MulOp::getOperationName()] = [](GradBuilder &gb, Operation *op, Value g,
                                    SmallVectorImpl<Value> &grads, std::string &) {
    Value a = op->getOperand(0), c = op->getOperand(1);
    if (gb.needs(a))
      grads[0] = gb.mul(g, gb.primal(c));
    if (gb.needs(c))
      grads[1] = gb.mul(g, gb.primal(a));
    return success();
  };
  // d(a/b)/da = 1/b, d(a/b)/db = -(a/b)/b.
  t[DivOp::getOperationName()] = [](GradBuilder &gb, Operation *op, Value g,
                                    SmallVectorImpl<Value> &grads, std::string &) {
    Value ga = gb.div(g, gb.primal(op->getOperand(1)));
    grads[0] = ga;
    if (gb.needs(op->getOperand(1)))
      grads[1] = gb.neg(gb.mul(ga, resultOf(gb, op)));
    return success();
  };
  // pow(a, b): b * a^(b-1) for a, 0 where b == 0 (not 0 * inf at a == 0);
  // a^b * log(a) for b, 0 where a == 0 and b >= 0: torch's masks. exp2(x)
  // is pow(2, x).
  t[PowOp::getOperationName()] = [](GradBuilder &gb, Operation *op, Value g,
                                    SmallVectorImpl<Value> &grads, std::string &) {
    Value a = op->getOperand(0), e = op->getOperand(1);
    Value pe = gb.primal(e);
    if (gb.needs(e)) {
      Value pa = gb.primal(a);
      Value dlog = gb.mul(resultOf(gb, op), gb.b.create<LogOp>(gb.loc, pa));
      Value atZero = gb.b.create<EqOp>(gb.loc, pa, gb.scalar(eltOf(pa), 0.0));
      Value nonNegative = gb.b.create<GeOp>(gb.loc, pe, gb.scalar(eltOf(pe), 0.0));
      Value zero = gb.scalar(eltOf(dlog), 0.0);
      grads[1] = gb.mul(g, select(gb, atZero, select(gb, nonNegative, zero, dlog), dlog));
    }
    if (gb.needs(a)) {
      Value lower = gb.b.create<PowOp>(gb.loc, gb.primal(a), gb.sub(pe, gb.scalar(eltOf(e), 1.0)));
      Value zeroExponent = gb.b.create<EqOp>(gb.loc, pe, gb.scalar(eltOf(pe), 0.0));
      Value d = gb.mul(pe, lower);
      grads[0] = gb.mul(g, select(gb, zeroExponent, gb.scalar(eltOf(d), 0.0), d));
    }
    return success();
  };
  t[NegOp::getOperationName()] =
      unary([](GradBuilder &gb, Operation *, Value, Value g) { return gb.neg(g); });
  // A float → float cast: the driver casts the gradient back.
  t[CastOp::getOperationName()] =
      unary([](GradBuilder &, Operation *, Value, Value g) { return g; });
  t[SelectOp::getOperationName()] = [](GradBuilder &gb, Operation *op, Value g,
                                       SmallVectorImpl<Value> &grads, std::string &) {
    Value cond = gb.primal(op->getOperand(0));
    Value zero = gb.scalar(eltOf(g), 0.0);
    if (gb.needs(op->getOperand(1)))
      grads[1] = select(gb, cond, g, zero);
    if (gb.needs(op->getOperand(2)))
      grads[2] = select(gb, cond, zero, g);
    return success();
  };
}

void addTranscendental(GradRuleTable &t) {
  t[ExpOp::getOperationName()] = unary(
      [](GradBuilder &gb, Operation *op, Value, Value g) { return gb.mul(g, resultOf(gb, op)); });
  t[Expm1Op::getOperationName()] = unary([](GradBuilder &gb, Operation *op, Value, Value g) {
    return gb.mul(g, gb.add(resultOf(gb, op), gb.scalar(eltOf(g), 1.0)));
  });
  t[LogOp::getOperationName()] =
      unary([](GradBuilder &gb, Operation *, Value x, Value g) { return gb.div(g, gb.primal(x)); });
  t[Log2Op::getOperationName()] = unary([](GradBuilder &gb, Operation *, Value x, Value g) {
    return gb.div(g, gb.mul(gb.primal(x), gb.scalar(eltOf(x), std::log(2.0))));
  });
  t[Log1pOp::getOperationName()] = unary([](GradBuilder &gb, Operation *, Value x, Value g) {
    return gb.div(g, gb.add(gb.primal(x), gb.scalar(eltOf(x), 1.0)));
  });
  // d sqrt(x) = g / (2 sqrt(x)); where the capture marked the sqrt
  // (`kiln.grad_at_zero`: a norm or std) 0 where sqrt(x) is 0, as eager's
  // norm/std backward (the infinite slope times a zero is NaN otherwise).
  t[SqrtOp::getOperationName()] =
      unary([](GradBuilder &gb, Operation *op, Value, Value g) -> Value {
        Value y = resultOf(gb, op);
        Value d = gb.div(g, gb.mul(y, gb.scalar(eltOf(g), 2.0)));
        if (!op->hasAttr("kiln.grad_at_zero"))
          return d;
        Value zero = gb.scalar(eltOf(g), 0.0);
        Value atZero = gb.b.create<EqOp>(gb.loc, y, zero);
        return gb.b.create<SelectOp>(gb.loc, atZero, zero, d).getResult();
      });
  // d rsqrt(x) = -0.5 * rsqrt(x)^3.
  t[RsqrtOp::getOperationName()] = unary([](GradBuilder &gb, Operation *op, Value, Value g) {
    Value y = resultOf(gb, op);
    Value cube = gb.mul(gb.mul(y, y), y);
    return gb.mul(g, gb.mul(cube, gb.scalar(eltOf(g), -0.5)));
  });
  t[SinOp::getOperationName()] = unary([](GradBuilder &gb, Operation *, Value x, Value g) {
    return gb.mul(g, gb.b.create<CosOp>(gb.loc, gb.primal(x)));
  });
  t[CosOp::getOperationName()] = unary([](GradBuilder &gb, Operation *, Value x, Value g) {
    return gb.neg(gb.mul(g, gb.b.create<SinOp>(gb.loc, gb.primal(x))));
  });
  t[TanOp::getOperationName()] = unary([](GradBuilder &gb, Operation *op, Value, Value g) {
    Value y = resultOf(gb, op);
    return gb.mul(g, gb.add(gb.mul(y, y), gb.scalar(eltOf(g), 1.0)));
  });
  t[AtanOp::getOperationName()] = unary([](GradBuilder &gb, Operation *, Value x, Value g) {
    Value px = gb.primal(x);
    return gb.div(g, gb.add(gb.mul(px, px), gb.scalar(eltOf(g), 1.0)));
  });
  // 2/sqrt(pi) * exp(-x^2).
  t[ErfOp::getOperationName()] = unary([](GradBuilder &gb, Operation *, Value x, Value g) {
    Value px = gb.primal(x);
    Value e = gb.b.create<ExpOp>(gb.loc, gb.neg(gb.mul(px, px)));
    return gb.mul(g, gb.mul(e, gb.scalar(eltOf(g), 2.0 / std::sqrt(M_PI))));
  });
}

/// gelu'(x): exact (erf) or tanh-approximated, as torch's GeluBackward.
Value geluDerivative(GradBuilder &gb, GeluOp op) {
  Value x = gb.primal(op.getInput());
  Type elt = eltOf(x);
  auto k = [&](double v) { return gb.scalar(elt, v); };
  if (op.getApproximate() == "tanh") {
    double beta = std::sqrt(2.0 / M_PI), kappa = 0.044715;
    Value x2 = gb.mul(x, x);
    Value inner = gb.mul(k(beta), gb.add(x, gb.mul(k(kappa), gb.mul(x2, x))));
    Value th = gb.b.create<TanhOp>(gb.loc, inner);
    Value left = gb.mul(k(0.5), gb.add(k(1.0), th));
    Value dth = gb.sub(k(1.0), gb.mul(th, th));
    Value dinner = gb.mul(k(beta), gb.add(k(1.0), gb.mul(k(3 * kappa), x2)));
    return gb.add(left, gb.mul(gb.mul(k(0.5), x), gb.mul(dth, dinner)));
  }
  Value cdf = gb.mul(k(0.5), gb.add(k(1.0), gb.b.create<ErfOp>(gb.loc, gb.mul(x, k(M_SQRT1_2)))));
  Value pdf = gb.mul(gb.b.create<ExpOp>(gb.loc, gb.mul(k(-0.5), gb.mul(x, x))),
                     k(1.0 / std::sqrt(2.0 * M_PI)));
  return gb.add(cdf, gb.mul(x, pdf));
}

void addActivations(GradRuleTable &t) {
  t[TanhOp::getOperationName()] = unary([](GradBuilder &gb, Operation *op, Value, Value g) {
    Value y = resultOf(gb, op);
    return gb.mul(g, gb.sub(gb.scalar(eltOf(g), 1.0), gb.mul(y, y)));
  });
  t[SigmoidOp::getOperationName()] = unary([](GradBuilder &gb, Operation *op, Value, Value g) {
    Value y = resultOf(gb, op);
    return gb.mul(g, gb.mul(y, gb.sub(gb.scalar(eltOf(g), 1.0), y)));
  });
  // torch's threshold_backward: the gradient where the result is > 0.
  t[ReluOp::getOperationName()] = unary([](GradBuilder &gb, Operation *op, Value, Value g) {
    Value pos = compare(gb, "gt", resultOf(gb, op), 0.0);
    return select(gb, pos, g, gb.scalar(eltOf(g), 0.0));
  });
  t[AbsOp::getOperationName()] = unary([](GradBuilder &gb, Operation *, Value x, Value g) {
    Value px = gb.primal(x), zero = gb.scalar(eltOf(g), 0.0);
    Value sign = select(gb, compare(gb, "lt", px, 0.0), gb.neg(g), zero);
    return select(gb, compare(gb, "gt", px, 0.0), g, sign);
  });
  t[GeluOp::getOperationName()] = unary([](GradBuilder &gb, Operation *op, Value, Value g) {
    return gb.mul(g, geluDerivative(gb, cast<GeluOp>(op)));
  });
  // silu'(x) = s * (1 + x * (1 - s)), s = sigmoid(x).
  t[SiluOp::getOperationName()] = unary([](GradBuilder &gb, Operation *, Value x, Value g) {
    Value px = gb.primal(x), one = gb.scalar(eltOf(g), 1.0);
    Value s = gb.b.create<SigmoidOp>(gb.loc, px);
    return gb.mul(g, gb.mul(s, gb.add(one, gb.mul(px, gb.sub(one, s)))));
  });
}

} // namespace

void addElementwiseGradRules(GradRuleTable &table) {
  addArithmetic(table);
  addTranscendental(table);
  addActivations(table);
}

} // namespace mlir::kiln
