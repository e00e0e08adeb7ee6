//===- CoreNN.cpp - matmul, linear, softmax and layer_norm ----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Ops and torch names of the core network layers: torch.matmul (with
// mm/bmm and the `@` operator, following matmul's 1-D rules), F.linear,
// softmax and F.layer_norm. Integer operands are Unsupported where eager
// raises or computes integer results kiln does not model.
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

namespace kiln {

using namespace mlir::kiln;

namespace {

/// lhs @ rhs on float operands, with torch.matmul's 1-D rules (prepend or
/// append a dim, then remove it).
Value matmulValues(Emit &e, Value lhs, Value rhs) {
  DType dl = dtypeOf(ttype(lhs).getElementType()), dr = dtypeOf(ttype(rhs).getElementType());
  if (dl != dr) // eager's matmul/mm/addmm never promote
    throw Unsupported(BreakCategory::UserError,
                      "matmul of " + dtypeName(dl) + " and " + dtypeName(dr) +
                          " tensors (eager raises: both must have the same dtype)",
                      hint::kRaisesInEager);
  DType d = resultType({makeTensor(lhs), makeTensor(rhs)});
  if (!isFloatingDType(d))
    throw Unsupported(BreakCategory::UnsupportedOp, "integer matmul");
  lhs = e.cast(lhs, d);
  rhs = e.cast(rhs, d);
  int64_t rl = ttype(lhs).getRank(), rr = ttype(rhs).getRank();
  if (rl == 0 || rr == 0)
    throw Unsupported(BreakCategory::UserError, "matmul of a 0-d tensor (eager raises)",
                      hint::kRaisesInEager);
  if (rl == 1)
    lhs = e.reshape(lhs, {1, ttype(lhs).getDimSize(0)});
  if (rr == 1)
    rhs = e.reshape(rhs, {ttype(rhs).getDimSize(0), 1});
  Value r = e.inferred<MatmulOp>({lhs, rhs});
  llvm::SmallVector<int64_t> shape(ttype(r).getShape());
  if (rr == 1)
    shape.erase(shape.end() - 1);
  if (rl == 1)
    shape.erase(shape.end() - (rr == 1 ? 1 : 2));
  return e.reshape(r, shape);
}

VarP matmul(Interpreter &I, const std::string &op, Args &a) {
  Value lhs = tensorArg(inputArg(a, op), op);
  Value rhs = tensorArg(a.get("other"), op);
  Emit e(I);
  return T(matmulValues(e, lhs, rhs));
}

VarP linear(Interpreter &I, const std::string &op, Args &a) {
  Value lhs = tensorArg(inputArg(a, op), op);
  Value w = tensorArg(a.get("weight"), op);
  if (ttype(w).getRank() != 2)
    throw Unsupported("linear with a non-2-D weight");
  Emit e(I);
  Value r = matmulValues(e, lhs, e.permute(w, {1, 0}));
  if (!a.isNone("bias") && a.get("bias")->isTensor() &&
      ttype(tensorArg(a.get("bias"), op)).getElementType() != ttype(w).getElementType())
    throw Unsupported(BreakCategory::UserError,
                      "linear with a bias of another dtype than its weight (eager raises)",
                      hint::kRaisesInEager);
  if (!a.isNone("bias"))
    r = e.binary<AddOp>(T(r), a.get("bias"));
  return T(r);
}

/// An optional `dtype=` argument applied to `v` (`what` names it in errors).
Value castToDtypeArg(Emit &e, Value v, const Args &a, const char *what) {
  if (a.isNone("dtype"))
    return v;
  auto d = dtypeFromObject(constObj(a.get("dtype"), "dtype"));
  if (!d)
    throw Unsupported(what);
  return e.cast(v, *d);
}

VarP softmax(Interpreter &I, const std::string &op, Args &a) {
  Value v = tensorArg(inputArg(a, op), op);
  int64_t rank = ttype(v).getRank();
  if (a.isNone("dim"))
    throw Unsupported("softmax without dim");
  Emit e(I);
  v = castToDtypeArg(e, v, a, "softmax dtype");
  if (!isFloatingDType(dtypeOf(ttype(v).getElementType())))
    throw Unsupported("softmax of an integer tensor without dtype= (eager raises)");
  v = e.floatUnaryInput(makeTensor(v));
  int64_t dim = normDim(asInt(a.get("dim"), "dim"), rank);
  return T(e.b.create<SoftmaxOp>(I.loc(), v, e.b.getI64IntegerAttr(rank == 0 ? 0 : dim)));
}

VarP layerNorm(Interpreter &I, const std::string &op, Args &a) {
  Value v = tensorArg(inputArg(a, op), op);
  int64_t rank = ttype(v).getRank();
  std::vector<int64_t> ns = asInts(a.get("normalized_shape"), "normalized_shape");
  auto shape = ttype(v).getShape();
  if (ns.empty() || (int64_t)ns.size() > rank ||
      !std::equal(ns.begin(), ns.end(), shape.end() - ns.size()))
    throw Unsupported("layer_norm normalized_shape does not match the input");
  if (!isFloatingDType(dtypeOf(ttype(v).getElementType())))
    throw Unsupported("layer_norm of ints");
  Value w = a.isNone("weight") ? Value() : tensorArg(a.get("weight"), op);
  Value bias = a.isNone("bias") ? Value() : tensorArg(a.get("bias"), op);
  // A bf16/f16 input with float32 weight and bias (autocast's linear
  // output into a float32 LayerNorm): eager's CPU kernel computes in float32
  // and returns the input's dtype.
  DType in = dtypeOfValue(v);
  bool mixed = isNarrow(in) &&
               ((w && dtypeOfValue(w) == DType::F32) || (bias && dtypeOfValue(bias) == DType::F32));
  auto elt = mixed ? Emit(I).elt(DType::F32) : ttype(v).getElementType();
  for (Value p : {w, bias})
    if (p &&
        (ttype(p).getShape() != llvm::ArrayRef<int64_t>(ns) || ttype(p).getElementType() != elt))
      throw Unsupported("layer_norm weight/bias shape or dtype mismatch");
  double eps = a.isNone("eps") ? 1e-5 : asDouble(a.get("eps"), "eps");
  Emit e(I);
  Value x = e.cast(v, dtypeOf(elt));
  Value r = e.b.create<LayerNormOp>(I.loc(), ttype(x), x, w, bias, e.b.getI64IntegerAttr(ns.size()),
                                    e.b.getF64FloatAttr(eps));
  return T(e.cast(r, in));
}

} // namespace

void registerCoreNNOps(OpRegistry &r) {
  r.op("matmul", matmul, Params{"input", "other"})
      .torchAndMethod()
      .torchAndMethod("mm")
      .torchAndMethod("bmm")
      .binaryOperator("@", "matmul");
  r.op("linear", linear, Params{"input", "weight", "bias"}).functional();
  r.op("softmax", softmax, Params{"input", "dim", "dtype"})
      .torchAndMethod()
      .functional(Params{"input", "dim", "_stacklevel", "dtype"});
  r.op("layer_norm", layerNorm, Params{"input", "normalized_shape", "weight", "bias", "eps"})
      .functional();
}

} // namespace kiln
