//===- TorchOpsReduction.cpp - reductions and scans ---------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Ops and torch names of torch's reductions: sum/mean/amax/amin, max/min
// (full, per-dim with indices, or elementwise with a tensor), prod,
// argmax/argmin, var/std (+ _mean), logsumexp, all/any, norm /
// linalg.vector_norm, count_nonzero and cumsum.
// Dtypes follow torch: integer sums and products accumulate in int64,
// float statistics of f16/bf16 compute in f32 and round once.
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

#include <cmath>
#include <limits>
#include <type_traits>

namespace kiln {

using namespace mlir::kiln;

namespace {

/// The reduced dims of a `dim` argument (None or empty: all dims).
std::vector<int64_t> reducedDims(const Args &a, int64_t rank, const char *name = "dim") {
  std::vector<int64_t> dims;
  if (a.isNone(name) || asInts(a.get(name), name).empty()) {
    for (int64_t i = 0; i < rank; ++i)
      dims.push_back(i);
    return dims;
  }
  for (int64_t d : asInts(a.get(name), name))
    dims.push_back(normDim(d, rank));
  return dims;
}

/// Number of elements over `dims` of `v` (static).
int64_t countOver(Value v, const std::vector<int64_t> &dims) {
  int64_t n = 1;
  auto shape = ttype(v).getShape();
  if (shape.empty())
    return 1;
  for (int64_t d : dims)
    n *= shape[d];
  return n;
}

/// An optional `dtype=` argument applied to `v` first.
Value withDtype(Emit &e, Value v, const Args &a) {
  if (a.isNone("dtype"))
    return v;
  auto d = dtypeFromObject(constObj(a.get("dtype"), "dtype"));
  if (!d)
    throw Unsupported("unsupported dtype");
  return e.cast(v, *d);
}

/// A reduction's result `r` in the `dtype=` asked for, if any: integers
/// accumulate in int64, but an explicit int32 (or bool: any nonzero) is
/// the result's dtype in eager.
Value asRequestedDtype(Emit &e, Value r, const Args &a) {
  if (a.isNone("dtype"))
    return r;
  auto d = dtypeFromObject(constObj(a.get("dtype"), "dtype"));
  return d ? e.cast(r, *d) : r;
}

/// (values, indices) of max/min along `dim`.
/// torch.return_types.<name> (a new reference; null if torch lacks it).
PyObject *returnType(const char *name) {
  PyRef m = PyRef::steal(PyImport_ImportModule("torch.return_types"));
  PyObject *t = m ? PyObject_GetAttrString(m.get(), name) : nullptr;
  PyErr_Clear();
  return t;
}

VarP valuesAndIndices(Interpreter &I, Value v, int64_t dim, bool keepdim, bool isMax) {
  Emit e(I);
  int64_t rank = ttype(v).getRank();
  dim = normDim(dim, rank);
  if (dtypeOfValue(v) == DType::Bool)
    throw Unsupported("max/min with dim of a bool tensor is not supported yet");
  if (rank > 0 && ttype(v).getDimSize(dim) == 0)
    throw Unsupported(BreakCategory::UserError, "max/min over an empty dim (eager raises)",
                      hint::kRaisesInEager);
  Value values = isMax ? e.reduce<MaxOp>(v, {dim}, keepdim) : e.reduce<MinOp>(v, {dim}, keepdim);
  auto attrs = {e.b.getNamedAttr("dim", e.b.getI64IntegerAttr(rank == 0 ? 0 : dim)),
                e.b.getNamedAttr("keepdim", e.b.getBoolAttr(keepdim))};
  Value idx =
      isMax ? e.checked<ArgmaxOp>({v}, attrs, "max") : e.checked<ArgminOp>({v}, attrs, "min");
  return makeSeq(Var::Kind::Tuple, {T(values), T(idx)});
}

/// sum/mean/amax: over `dim` (None or empty: every dim), after `dtype=`.
template <typename OpT> VarP coreReduction(Interpreter &I, const std::string &op, Args &a) {
  Value v = tensorArg(inputArg(a, op), op);
  std::vector<int64_t> dims;
  // torch reduces over every dim when `dim` is None or empty.
  if (a.isNone("dim") || asInts(a.get("dim"), "dim").empty()) {
    for (int64_t i = 0; i < ttype(v).getRank(); ++i)
      dims.push_back(i);
  } else {
    dims = asInts(a.get("dim"), "dim");
  }
  bool keepdim =
      !a.isNone("keepdim") && PyObject_IsTrue(constObj(a.get("keepdim"), "keepdim")) == 1;
  Emit e(I);
  if (!a.isNone("dtype")) {
    auto d = dtypeFromObject(constObj(a.get("dtype"), "dtype"));
    if (!d)
      throw Unsupported(BreakCategory::UnsupportedOp, "reduction dtype");
    v = e.cast(v, *d);
  }
  DType d = dtypeOfValue(v);
  if (std::is_same_v<OpT, MeanOp> && !isFloatingDType(d))
    throw Unsupported(BreakCategory::UserError, "mean of an integer tensor");
  if (std::is_same_v<OpT, SumOp> && !isFloatingDType(d) && d != DType::I64)
    v = e.cast(v, DType::I64); // torch sums integers in int64
  return T(asRequestedDtype(e, e.reduce<OpT>(v, dims, keepdim), a));
}

/// max/min: of everything, per dim with indices, or elementwise with a tensor.
template <bool Max> VarP maxOrMin(Interpreter &I, const std::string &op, Args &a) {
  VarP x = a.get("input");
  Value v = tensorArg(x, op);
  VarP dimArg = a.get("dim");
  if (dimArg && dimArg->isTensor()) // torch.max(x, other): elementwise
    return callOp(I, Max ? "maximum" : "minimum", {{"input", x}, {"other", dimArg}});
  bool keepdim = boolArg(a, "keepdim", false);
  if (!a.isNone("dim")) {
    VarP r = valuesAndIndices(I, v, asInt(dimArg, "dim"), keepdim, Max);
    static PyObject *types[2] = {returnType("min"), returnType("max")}; // leaked: process lifetime
    r->obj = PyRef::borrow(types[Max]); // torch.return_types.max/min: .values, .indices
    return r;
  }
  if (!a.isNone("keepdim"))
    throw Unsupported(BreakCategory::UserError, op + " with keepdim but no dim (eager raises)");
  if (ttype(v).hasStaticShape() && ttype(v).getNumElements() == 0)
    throw Unsupported(BreakCategory::UserError, op + " of an empty tensor (eager raises)");
  Emit e(I);
  std::vector<int64_t> all = reducedDims(a, ttype(v).getRank());
  return T(Max ? e.reduce<MaxOp>(v, all, false) : e.reduce<MinOp>(v, all, false));
}

/// amax/amin: a reduction with no identity, so eager raises over zero elements.
template <bool Max> VarP amaxOrAmin(Interpreter &I, const std::string &op, Args &a) {
  Value v = tensorArg(a.get("input"), op);
  std::vector<int64_t> dims = reducedDims(a, ttype(v).getRank());
  if (countOver(v, dims) == 0)
    throw Unsupported(BreakCategory::UserError,
                      op + " over a zero-size dim or an empty tensor (eager raises)",
                      hint::kRaisesInEager);
  Emit e(I);
  bool keepdim = boolArg(a, "keepdim", false);
  return T(Max ? e.reduce<MaxOp>(v, dims, keepdim) : e.reduce<MinOp>(v, dims, keepdim));
}

VarP prod(Interpreter &I, const std::string &op, Args &a) {
  Value v = tensorArg(a.get("input"), op);
  int64_t rank = ttype(v).getRank();
  bool keepdim = boolArg(a, "keepdim", false);
  Emit e(I);
  v = withDtype(e, v, a);
  if (!isFloatValue(v))
    v = e.cast(v, DType::I64);
  std::vector<int64_t> dims = a.isNone("dim")
                                  ? reducedDims(a, rank)
                                  : std::vector<int64_t>{normDim(asInt(a.get("dim"), "dim"), rank)};
  return T(asRequestedDtype(e, e.reduce<ProdOp>(v, dims, a.isNone("dim") ? false : keepdim), a));
}

template <bool Max> VarP argMaxOrMin(Interpreter &I, const std::string &op, Args &a) {
  Value v = tensorArg(a.get("input"), op);
  int64_t rank = ttype(v).getRank();
  bool keepdim = boolArg(a, "keepdim", false);
  if (dtypeOfValue(v) == DType::Bool)
    throw Unsupported(BreakCategory::UserError, op + " of a bool tensor (eager raises)");
  Emit e(I);
  Value in = v;
  int64_t dim = 0;
  if (a.isNone("dim"))
    in = e.reshape(v, {ttype(v).getNumElements()});
  else
    dim = normDim(asInt(a.get("dim"), "dim"), rank);
  auto attrs = {e.b.getNamedAttr("dim", e.b.getI64IntegerAttr(rank == 0 ? 0 : dim)),
                e.b.getNamedAttr("keepdim", e.b.getBoolAttr(a.isNone("dim") ? false : keepdim))};
  Value r = Max ? e.checked<ArgmaxOp>({in}, attrs, op) : e.checked<ArgminOp>({in}, attrs, op);
  if (a.isNone("dim") && keepdim)
    r = e.reshape(r, std::vector<int64_t>(rank, 1));
  return T(r);
}

/// all/any: a min/max over the input as bools.
template <bool Any> VarP allOrAny(Interpreter &I, const std::string &op, Args &a) {
  Value v = tensorArg(a.get("input"), op);
  int64_t rank = ttype(v).getRank();
  bool keepdim = boolArg(a, "keepdim", false);
  Emit e(I);
  Value b = e.cast(v, DType::Bool);
  std::vector<int64_t> dims = reducedDims(a, rank);
  if (rank == 0)
    return T(b);
  return T(Any ? e.reduce<MaxOp>(b, dims, keepdim) : e.reduce<MinOp>(b, dims, keepdim));
}

VarP countNonzero(Interpreter &I, const std::string &op, Args &a) {
  Value v = tensorArg(a.get("input"), op);
  Emit e(I);
  Value nz = e.cast(e.bin<NeOp>(v, e.num(0, dtypeOfValue(v))), DType::I64);
  return T(e.reduce<SumOp>(nz, reducedDims(a, ttype(v).getRank()), false));
}

VarP cumsum(Interpreter &I, const std::string &op, Args &a) {
  Value v = tensorArg(a.get("input"), op);
  int64_t rank = ttype(v).getRank();
  if (a.isNone("dim"))
    throw Unsupported(BreakCategory::UserError, "cumsum without dim (eager raises)");
  Emit e(I);
  v = withDtype(e, v, a);
  DType vd = dtypeOfValue(v);
  if (vd == DType::Bool && !a.isNone("dtype"))
    throw Unsupported(BreakCategory::UserError, "cumsum with dtype=torch.bool (eager raises)");
  int64_t dim = normDim(asInt(a.get("dim"), "dim"), rank);
  Value in = !isFloatingDType(vd) ? e.cast(v, DType::I64)
             : isNarrow(vd)       ? e.cast(v, DType::F32)
                                  : v;
  auto attrs = {e.b.getNamedAttr("dim", e.b.getI64IntegerAttr(rank == 0 ? 0 : dim))};
  Value r = e.checked<CumsumOp>({in}, attrs, op);
  return T(isNarrow(vd) ? e.cast(r, vd) : asRequestedDtype(e, r, a));
}

/// The input of a float statistic, in opmath precision (f16/bf16 in f32).
struct Statistic {
  Statistic(Interpreter &I, const std::string &op, const Args &a) : e(I) {
    Value v = tensorArg(a.get("input"), op);
    rank = ttype(v).getRank();
    type = dtypeOfValue(v);
    if (!isFloatingDType(type))
      throw Unsupported(BreakCategory::UserError, op + " of an integer tensor (eager raises)");
    compute = isNarrow(type) ? DType::F32 : type;
    w = e.cast(v, compute);
    keepdim = boolArg(a, "keepdim", false);
  }
  Emit e;
  int64_t rank;
  DType type, compute;
  Value w;
  bool keepdim;
};

VarP logsumexp(Interpreter &I, const std::string &op, Args &a) {
  Statistic s(I, op, a);
  Emit &e = s.e;
  std::vector<int64_t> dims = reducedDims(a, s.rank);
  Value m = e.reduce<MaxOp>(s.w, dims, true);
  // An infinite max would give inf - inf = NaN; use 0 there (as torch).
  double inf = std::numeric_limits<double>::infinity();
  m = e.select(e.bin<EqOp>(e.unary<AbsOp>(m), e.num(inf, s.compute)), e.num(0, s.compute), m);
  Value sum = e.reduce<SumOp>(e.unary<ExpOp>(e.bin<SubOp>(s.w, m)), dims, s.keepdim);
  Value mk = s.keepdim ? m : e.reshape(m, ttype(sum).getShape());
  return T(e.cast(e.bin<AddOp>(e.unary<LogOp>(sum), mk), s.type));
}

/// True when a dim of `dims` of `v` is a symbolic size (also in the shadow
/// static capture, so that both build the same graph).
bool symbolicOver(Interpreter &I, Value v, const std::vector<int64_t> &dims) {
  for (int64_t d : dims)
    if (I.symbolOfDim(v, d) != -1)
      return true;
  return false;
}

/// max(n - correction, 0) for the n elements over `dims` of `v`, counted in
/// the graph (a symbolic size's value is known at run time only): a sum of
/// ones (`x == x` or `x != x` is true everywhere, NaN included).
Value countInGraph(Emit &e, Value v, const std::vector<int64_t> &dims, bool keepdim,
                   double correction, DType d) {
  Value ones = e.cast(e.bin<NeOp>(e.bin<EqOp>(v, v), e.bin<NeOp>(v, v)), d);
  Value n = e.reduce<SumOp>(ones, dims, keepdim);
  return e.bin<MaximumOp>(e.bin<SubOp>(n, e.num(correction, d)), e.num(0, d));
}

/// var/std (`Sqrt`), and with the mean too (`WithMean`: var_mean, std_mean).
template <bool Sqrt, bool WithMean> VarP variance(Interpreter &I, const std::string &op, Args &a) {
  Statistic s(I, op, a);
  Emit &e = s.e;
  VarP dimArg = a.get("dim");
  double correction = 1;
  if (dimArg && dimArg->isConst() && PyBool_Check(dimArg->obj.get())) { // var(x, unbiased)
    correction = dimArg->obj.get() == Py_True ? 1 : 0;
    a.named.erase("dim");
  }
  if (!a.isNone("unbiased"))
    correction = boolArg(a, "unbiased", true) ? 1 : 0;
  if (!a.isNone("correction"))
    correction = asDouble(a.get("correction"), "correction");
  std::vector<int64_t> dims = reducedDims(a, s.rank);
  int64_t n = countOver(s.w, dims);
  Value mean = e.reduce<MeanOp>(s.w, dims, true);
  Value c = e.bin<SubOp>(s.w, mean);
  Value ss = e.reduce<SumOp>(e.bin<MulOp>(c, c), dims, s.keepdim);
  Value r = e.bin<DivOp>(ss, symbolicOver(I, s.w, dims)
                                 ? countInGraph(e, s.w, dims, s.keepdim, correction, s.compute)
                                 : e.num(std::max(0.0, n - correction), s.compute));
  if (Sqrt)
    r = e.zeroGradAtZero(e.unary<SqrtOp>(r));
  r = e.cast(r, s.type);
  if (!WithMean)
    return T(r);
  Value mk = s.keepdim ? mean : e.reshape(mean, ttype(r).getShape());
  return makeSeq(Var::Kind::Tuple, {T(r), T(e.cast(mk, s.type))});
}

/// The order `p` of a norm (`name`: "p" or "ord"); 2 when None, "fro" is 2.
double normOrder(const Args &a, const char *name) {
  VarP pArg = a.get(name);
  if (!pArg || (pArg->isConst() && pArg->obj.get() == Py_None))
    return 2;
  PyObject *o = constObj(pArg, "p");
  if (!PyUnicode_Check(o))
    return asDouble(pArg, "p");
  if (pyText(o) != "fro")
    throw Unsupported(BreakCategory::UnsupportedOp,
                      "norm p='" + pyText(o) + "' is not supported yet");
  return 2;
}

/// norm (`Ord` false: its order is `p`) and linalg.vector_norm (`ord`).
template <bool Ord> VarP norm(Interpreter &I, const std::string &op, Args &a) {
  Statistic s(I, op, a);
  Emit &e = s.e;
  double p = normOrder(a, Ord ? "ord" : "p");
  if (!Ord && !a.isNone("dtype"))
    throw Unsupported(BreakCategory::UnsupportedOp, "norm with dtype= is not supported yet");
  std::vector<int64_t> dims = reducedDims(a, s.rank);
  Value w = s.w, absV = e.unary<AbsOp>(w);
  Value r;
  if (std::isinf(p)) {
    if (countOver(w, dims) == 0)
      throw Unsupported(BreakCategory::UserError, "inf-norm of an empty tensor (eager raises)");
    r = p > 0 ? e.reduce<MaxOp>(absV, dims, s.keepdim) : e.reduce<MinOp>(absV, dims, s.keepdim);
  } else if (p == 2) {
    r = e.zeroGradAtZero(e.unary<SqrtOp>(e.reduce<SumOp>(e.bin<MulOp>(w, w), dims, s.keepdim)));
  } else if (p == 1) {
    r = e.reduce<SumOp>(absV, dims, s.keepdim);
  } else if (p == 0) {
    r = e.reduce<SumOp>(e.cast(e.bin<NeOp>(w, e.num(0, s.compute)), s.compute), dims, s.keepdim);
  } else {
    Value sum = e.reduce<SumOp>(e.bin<PowOp>(absV, e.num(p, s.compute)), dims, s.keepdim);
    r = e.bin<PowOp>(sum, e.num(1.0 / p, s.compute));
  }
  return T(e.cast(r, s.type));
}

} // namespace

void registerReductionOps(OpRegistry &r) {
  const Params withDtypeArg{"input", "dim", "keepdim", "dtype"}, dimKeep{"input", "dim", "keepdim"};
  r.op("sum", coreReduction<SumOp>, withDtypeArg).torchAndMethod();
  r.op("mean", coreReduction<MeanOp>, withDtypeArg).torchAndMethod();
  r.op("amax", amaxOrAmin<true>, dimKeep).torchAndMethod();
  r.op("amin", amaxOrAmin<false>, dimKeep).torchAndMethod();
  r.op("max", maxOrMin<true>, dimKeep).torchAndMethod();
  r.op("min", maxOrMin<false>, dimKeep).torchAndMethod();
  r.op("argmax", argMaxOrMin<true>, dimKeep).torchAndMethod();
  r.op("argmin", argMaxOrMin<false>, dimKeep).torchAndMethod();
  r.op("all", allOrAny<false>, dimKeep).torchAndMethod();
  r.op("any", allOrAny<true>, dimKeep).torchAndMethod();
  r.op("logsumexp", logsumexp, dimKeep).torchAndMethod();
  r.op("prod", prod, withDtypeArg).torchAndMethod();
  r.op("count_nonzero", countNonzero, Params{"input", "dim"}).torchAndMethod();
  r.op("cumsum", cumsum, Params{"input", "dim", "dtype"}).torchAndMethod();
  const Params variance_{"input", "dim", "unbiased", "keepdim", "correction"};
  r.op("var", variance<false, false>, variance_).torchAndMethod();
  r.op("std", variance<true, false>, variance_).torchAndMethod();
  r.op("var_mean", variance<false, true>, variance_).torch();
  r.op("std_mean", variance<true, true>, variance_).torch();
  r.op("norm", norm<false>, Params{"input", "p", "dim", "keepdim", "dtype"}).torchAndMethod();
  r.op("vector_norm", norm<true>, Params{"input", "ord", "dim", "keepdim", "dtype"})
      .function("torch.linalg", nullptr);
}

} // namespace kiln
