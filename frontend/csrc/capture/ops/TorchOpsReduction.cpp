//===- TorchOpsReduction.cpp - reductions and scans ---------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Table entries and handlers of torch's reductions beyond sum/mean/amax
// (TorchOps.cpp): amin, max/min (full, per-dim with indices, or
// elementwise with a tensor), prod, argmax/argmin, var/std (+ _mean),
// logsumexp, all/any, norm / linalg.vector_norm, count_nonzero and cumsum.
// Dtypes follow torch: integer sums and products accumulate in int64,
// float statistics of f16/bf16 compute in f32 and round once.
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

#include <cmath>
#include <limits>

namespace kiln {

using namespace mlir::kiln;

namespace {

DType dtypeOfValue(Value v) { return dtypeOf(ttype(v).getElementType()); }
bool isNarrow(DType d) { return d == DType::F16 || d == DType::BF16; }

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

/// (values, indices) of max/min along `dim`.
VarP valuesAndIndices(Interpreter &I, Value v, int64_t dim, bool keepdim, bool isMax) {
  Emit e(I);
  int64_t rank = ttype(v).getRank();
  dim = normDim(dim, rank);
  if (dtypeOfValue(v) == DType::Bool)
    throw Unsupported("max/min with dim of a bool tensor is not supported yet");
  if (rank > 0 && ttype(v).getDimSize(dim) == 0)
    throw Unsupported("max/min over an empty dim (eager raises)");
  Value values = isMax ? e.reduce<MaxOp>(v, {dim}, keepdim) : e.reduce<MinOp>(v, {dim}, keepdim);
  auto attrs = {e.b.getNamedAttr("dim", e.b.getI64IntegerAttr(rank == 0 ? 0 : dim)),
                e.b.getNamedAttr("keepdim", e.b.getBoolAttr(keepdim))};
  Value idx =
      isMax ? e.checked<ArgmaxOp>({v}, attrs, "max") : e.checked<ArgminOp>({v}, attrs, "min");
  return makeSeq(Var::Kind::Tuple, {T(values), T(idx)});
}

VarP reduction(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  VarP x = a.get("input");
  Value v = tensorArg(x, op);
  int64_t rank = ttype(v).getRank();
  DType d = dtypeOfValue(v);
  bool keepdim = boolArg(a, "keepdim", false);
  if (op == "max" || op == "min") {
    VarP dimArg = a.get("dim");
    if (dimArg && dimArg->isTensor()) // torch.max(x, other): elementwise
      return callOp(I, op == "max" ? "maximum" : "minimum", {{"input", x}, {"other", dimArg}});
    if (a.isNone("dim")) {
      if (!a.isNone("keepdim"))
        throw Unsupported(op + " with keepdim but no dim (eager raises)");
      if (ttype(v).hasStaticShape() && ttype(v).getNumElements() == 0)
        throw Unsupported(op + " of an empty tensor (eager raises)");
      std::vector<int64_t> all = reducedDims(a, rank);
      return T(op == "max" ? e.reduce<MaxOp>(v, all, false) : e.reduce<MinOp>(v, all, false));
    }
    return valuesAndIndices(I, v, asInt(dimArg, "dim"), keepdim, op == "max");
  }
  if (op == "amin") {
    std::vector<int64_t> dims = reducedDims(a, rank);
    if (countOver(v, dims) == 0)
      throw Unsupported("amin of an empty tensor (eager raises)");
    return T(e.reduce<MinOp>(v, dims, keepdim));
  }
  if (op == "prod") {
    v = withDtype(e, v, a);
    if (dtypeCategory(dtypeOfValue(v)) < 2)
      v = e.cast(v, DType::I64);
    std::vector<int64_t> dims =
        a.isNone("dim") ? reducedDims(a, rank)
                        : std::vector<int64_t>{normDim(asInt(a.get("dim"), "dim"), rank)};
    return T(e.reduce<ProdOp>(v, dims, a.isNone("dim") ? false : keepdim));
  }
  if (op == "argmax" || op == "argmin") {
    if (d == DType::Bool)
      throw Unsupported(op + " of a bool tensor (eager raises)");
    Value in = v;
    int64_t dim = 0;
    if (a.isNone("dim")) {
      int64_t n = ttype(v).getNumElements();
      in = e.reshape(v, {n});
    } else {
      dim = normDim(asInt(a.get("dim"), "dim"), rank);
    }
    auto attrs = {e.b.getNamedAttr("dim", e.b.getI64IntegerAttr(rank == 0 ? 0 : dim)),
                  e.b.getNamedAttr("keepdim", e.b.getBoolAttr(a.isNone("dim") ? false : keepdim))};
    Value r = op == "argmax" ? e.checked<ArgmaxOp>({in}, attrs, op)
                             : e.checked<ArgminOp>({in}, attrs, op);
    if (a.isNone("dim") && keepdim)
      r = e.reshape(r, std::vector<int64_t>(rank, 1));
    return T(r);
  }
  if (op == "all" || op == "any") {
    Value b = e.cast(v, DType::Bool);
    std::vector<int64_t> dims = reducedDims(a, rank);
    if (rank == 0)
      return T(b);
    return T(op == "any" ? e.reduce<MaxOp>(b, dims, keepdim) : e.reduce<MinOp>(b, dims, keepdim));
  }
  if (op == "count_nonzero") {
    Value nz = e.cast(e.bin<NeOp>(v, e.num(0, d)), DType::I64);
    return T(e.reduce<SumOp>(nz, reducedDims(a, rank), false));
  }
  if (op == "cumsum") {
    if (a.isNone("dim"))
      throw Unsupported("cumsum without dim (eager raises)");
    v = withDtype(e, v, a);
    DType vd = dtypeOfValue(v);
    int64_t dim = normDim(asInt(a.get("dim"), "dim"), rank);
    Value in = dtypeCategory(vd) < 2 ? e.cast(v, DType::I64)
               : isNarrow(vd)        ? e.cast(v, DType::F32)
                                     : v;
    auto attrs = {e.b.getNamedAttr("dim", e.b.getI64IntegerAttr(rank == 0 ? 0 : dim))};
    Value r = e.checked<CumsumOp>({in}, attrs, op);
    return T(isNarrow(vd) ? e.cast(r, vd) : r);
  }
  // Float statistics.
  if (dtypeCategory(d) < 2)
    throw Unsupported(op + " of an integer tensor (eager raises)");
  DType compute = isNarrow(d) ? DType::F32 : d;
  Value w = e.cast(v, compute);
  if (op == "logsumexp") {
    std::vector<int64_t> dims = reducedDims(a, rank);
    Value m = e.reduce<MaxOp>(w, dims, true);
    // An infinite max would give inf - inf = NaN; use 0 there (as torch).
    double inf = std::numeric_limits<double>::infinity();
    m = e.select(e.bin<EqOp>(e.unary<AbsOp>(m), e.num(inf, compute)), e.num(0, compute), m);
    Value s = e.reduce<SumOp>(e.unary<ExpOp>(e.bin<SubOp>(w, m)), dims, keepdim);
    Value mk = keepdim ? m : e.reshape(m, ttype(s).getShape());
    return T(e.cast(e.bin<AddOp>(e.unary<LogOp>(s), mk), d));
  }
  if (op == "var" || op == "std" || op == "var_mean" || op == "std_mean") {
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
    std::vector<int64_t> dims = reducedDims(a, rank);
    int64_t n = countOver(w, dims);
    Value mean = e.reduce<MeanOp>(w, dims, true);
    Value c = e.bin<SubOp>(w, mean);
    Value ss = e.reduce<SumOp>(e.bin<MulOp>(c, c), dims, keepdim);
    Value r = e.bin<DivOp>(ss, e.num(std::max(0.0, n - correction), compute));
    if (op[0] == 's')
      r = e.unary<SqrtOp>(r);
    r = e.cast(r, d);
    if (op.size() > 4) {
      Value mk = keepdim ? mean : e.reshape(mean, ttype(r).getShape());
      return makeSeq(Var::Kind::Tuple, {T(r), T(e.cast(mk, d))});
    }
    return T(r);
  }
  if (op == "norm" || op == "vector_norm") {
    VarP pArg = a.get(op == "norm" ? "p" : "ord");
    double p = 2;
    if (pArg && !(pArg->isConst() && pArg->obj.get() == Py_None)) {
      PyObject *o = constObj(pArg, "p");
      if (PyUnicode_Check(o)) {
        if (pyText(o) != "fro")
          throw Unsupported("norm p='" + pyText(o) + "' is not supported yet");
      } else {
        p = asDouble(pArg, "p");
      }
    }
    if (op == "norm" && !a.isNone("dtype"))
      throw Unsupported("norm with dtype= is not supported yet");
    std::vector<int64_t> dims = reducedDims(a, rank);
    Value absV = e.unary<AbsOp>(w);
    Value r;
    if (std::isinf(p)) {
      if (countOver(w, dims) == 0)
        throw Unsupported("inf-norm of an empty tensor (eager raises)");
      r = p > 0 ? e.reduce<MaxOp>(absV, dims, keepdim) : e.reduce<MinOp>(absV, dims, keepdim);
    } else if (p == 2) {
      r = e.unary<SqrtOp>(e.reduce<SumOp>(e.bin<MulOp>(w, w), dims, keepdim));
    } else if (p == 1) {
      r = e.reduce<SumOp>(absV, dims, keepdim);
    } else if (p == 0) {
      r = e.reduce<SumOp>(e.cast(e.bin<NeOp>(w, e.num(0, compute)), compute), dims, keepdim);
    } else {
      Value s = e.reduce<SumOp>(e.bin<PowOp>(absV, e.num(p, compute)), dims, keepdim);
      r = e.bin<PowOp>(s, e.num(1.0 / p, compute));
    }
    return T(e.cast(r, d));
  }
  throw Unsupported("op " + op + " is not mapped");
}

} // namespace

void registerReductionOps(OpTable &t) {
  const std::vector<std::string> dimKeep = {"input", "dim", "keepdim"};
  for (const char *n : {"max", "min", "amin", "argmax", "argmin", "all", "any", "logsumexp"})
    t.both(n, {n, dimKeep});
  t.both("prod", {"prod", {"input", "dim", "keepdim", "dtype"}});
  t.both("count_nonzero", {"count_nonzero", {"input", "dim"}});
  t.both("cumsum", {"cumsum", {"input", "dim", "dtype"}});
  for (const char *n : {"var", "std", "var_mean", "std_mean"}) {
    OpSpec spec{n, {"input", "dim", "unbiased", "keepdim", "correction"}};
    if (n[3] == '_')
      t.function("torch", n, spec);
    else
      t.both(n, spec);
  }
  t.both("norm", {"norm", {"input", "p", "dim", "keepdim", "dtype"}});
  t.function("torch.linalg", "vector_norm",
             {"vector_norm", {"input", "ord", "dim", "keepdim", "dtype"}});
  for (const char *n :
       {"max", "min", "amin", "prod", "argmax", "argmin", "all", "any", "count_nonzero", "cumsum",
        "logsumexp", "var", "std", "var_mean", "std_mean", "norm", "vector_norm"})
    t.handler(n, reduction);
}

} // namespace kiln
