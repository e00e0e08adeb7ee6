//===- TorchIndexing.cpp - indexing, slicing, concatenation, embedding -------===//
// SPDX-License-Identifier: Apache-2.0
//
// Ops and torch names of `x[...]` (ints, slices, None, Ellipsis),
// torch.narrow, Tensor.select, chunk/split/unbind, torch.cat/concat/stack,
// F.embedding and eval-mode F.batch_norm. Views are built from two tracked
// primitives, `__slice` (kiln.slice, registered here) and `reshape`, so
// that aliasing facts (and the replay of a returned view of an input) stay
// exact. Anything eager would reject (out-of-range index, negative step,
// advanced indexing) is Unsupported: the frame runs eagerly and raises
// torch's error.
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

#include "ir/ShapeUtils.h"

namespace kiln {

using namespace mlir::kiln;

VarP wrapIndex(Interpreter &I, const VarP &i64, const VarP &size) {
  VarP negative = callOp(I, "lt", {{"input", i64}, {"other", constInt(0)}});
  return callOp(
      I, "add",
      {{"input", i64}, {"other", callOp(I, "mul", {{"input", negative}, {"other", size}})}});
}

VarP failingRow(Interpreter &I, const VarP &row, const VarP &bad) {
  VarP next = callOp(I, "add", {{"input", row}, {"other", constInt(1)}});
  VarP drop = callOp(I, "mul", {{"input", callOp(I, "long", {{"input", bad}})}, {"other", next}});
  return callOp(I, "sub", {{"input", row}, {"other", drop}});
}

VarP advancedRow(Interpreter &I, const std::vector<VarP> &indices, const std::vector<VarP> &dims) {
  VarP lin, bad;
  for (size_t j = 0; j < indices.size(); ++j) {
    const VarP &ij = indices[j];
    Type et = ttype(ij->value).getElementType();
    if (et.isInteger(1))
      throw Unsupported(
          "indexing with a bool tensor (a mask: data-dependent shape) is not supported");
    if (!llvm::isa<mlir::IntegerType>(et))
      throw Unsupported("tensors used as indices must be integer (eager raises)");
    VarP pos = wrapIndex(I, callOp(I, "long", {{"input", ij}}), dims[j]);
    if (indices.size() > 1) { // outside its own dim, whatever the sum
      VarP out = callOp(I, "logical_or",
                        {{"input", callOp(I, "lt", {{"input", pos}, {"other", constInt(0)}})},
                         {"other", callOp(I, "ge", {{"input", pos}, {"other", dims[j]}})}});
      bad = bad ? callOp(I, "logical_or", {{"input", bad}, {"other", out}}) : out;
    }
    lin = lin ? callOp(I, "add",
                       {{"input", callOp(I, "mul", {{"input", lin}, {"other", dims[j]}})},
                        {"other", pos}})
              : pos;
  }
  return bad ? failingRow(I, lin, bad) : lin;
}

namespace {

PyRef intTuple(llvm::ArrayRef<int64_t> v) {
  PyRef t = PyRef::steal(PyTuple_New(v.size()));
  for (size_t i = 0; i < v.size(); ++i)
    PyTuple_SET_ITEM(t.get(), i, PyLong_FromLongLong(v[i]));
  return t;
}

VarP constInts(llvm::ArrayRef<int64_t> v) { return makeConst(intTuple(v)); }

Value tensorOf(const VarP &v, const std::string &op) {
  if (!v || !v->isTensor())
    throw Unsupported(op + " expects a tensor");
  return v->value;
}

/// Requires a static shape (slicing needs the sizes to normalize indices).
llvm::ArrayRef<int64_t> staticShape(Value v, const std::string &op) {
  auto t = ttype(v);
  if (!t.hasStaticShape())
    throw Unsupported(op + " of a tensor with dynamic dims");
  return t.getShape();
}

/// kiln.slice of `x` through the tracked `__slice` primitive. One that
/// keeps everything returns `x` itself, unless `asView`: then it is still
/// emitted (it folds away later) so that the result is a new view of `x`
/// (returned, it replays as `x[:, ...]`, aliasing like eager).
VarP slice(Interpreter &I, const VarP &x, std::vector<int64_t> start, std::vector<int64_t> end,
           std::vector<int64_t> step, bool asView = false) {
  auto shape = ttype(x->value).getShape();
  bool identity = true;
  for (size_t i = 0; i < shape.size(); ++i)
    identity &= start[i] == 0 && end[i] == shape[i] && (step[i] == 1 || shape[i] <= 1);
  if (identity && !asView)
    return x;
  // A whole symbolic dim is `end = -1` (also in the shadow static capture,
  // so that both build the same slice; DynamicShapes.h).
  for (size_t i = 0; i < shape.size(); ++i)
    if (start[i] == 0 && step[i] == 1 && end[i] == shape[i] && I.symbolOfDim(x->value, i) != -1)
      end[i] = -1;
  Args a;
  a.named["input"] = x;
  a.named["start"] = constInts(start);
  a.named["end"] = constInts(end);
  a.named["step"] = constInts(step);
  return applyTracked(I, "__slice", a);
}

/// Tracked reshape of `x` to `shape` (returns `x` when it already has it).
VarP reshape(Interpreter &I, const VarP &x, llvm::ArrayRef<int64_t> shape) {
  if (ttype(x->value).getShape() == shape)
    return x;
  Args a;
  a.named["input"] = x;
  a.named["shape"] = constInts(shape);
  if (mlir::ShapedType::isDynamicShape(shape)) {
    // `?` target dims as untracked SymInts (a reshape target only).
    std::vector<VarP> dims;
    for (int64_t s : shape) {
      if (!mlir::ShapedType::isDynamic(s)) {
        dims.push_back(constInt(s));
        continue;
      }
      auto v = std::make_shared<Var>();
      v->kind = Var::Kind::SymInt;
      dims.push_back(v);
    }
    a.named["shape"] = makeSeq(Var::Kind::Tuple, dims);
  }
  return applyTracked(I, "reshape", a);
}

/// Slice [s, s+len) of dim `d` (a new view even when it is all of `x`).
VarP narrowDim(Interpreter &I, const VarP &x, int64_t d, int64_t s, int64_t len,
               bool asView = true) {
  auto shape = ttype(x->value).getShape();
  std::vector<int64_t> start(shape.size(), 0), end(shape.begin(), shape.end()),
      step(shape.size(), 1);
  start[d] = s;
  end[d] = s + len;
  return slice(I, x, start, end, step, asView);
}

/// Element `i` of dim `d`, with the dim dropped (Tensor.select).
VarP selectDim(Interpreter &I, const VarP &x, int64_t d, int64_t i) {
  auto shape = ttype(x->value).getShape();
  if (i < -shape[d] || i >= shape[d])
    throw Unsupported(BreakCategory::UserError, "index out of range", hint::kRaisesInEager);
  if (i < 0)
    i += shape[d];
  VarP r = narrowDim(I, x, d, i, 1, /*asView=*/false);
  std::vector<int64_t> ns(shape.begin(), shape.end());
  ns.erase(ns.begin() + d);
  return reshape(I, r, ns);
}

bool isNoneObj(PyObject *o) { return o == Py_None; }

/// x[i0, ..., ik-1] with integer index tensors for the leading k dims
/// (advanced indexing): the indices broadcast to one shape S, negative ones
/// wrap, and the result is S + x.shape[k:]. Built as one row lookup
/// (kiln.embedding) into x viewed as [prod(shape[:k]), prod(shape[k:])]
/// with the row index advancedRow; an index out of range raises eager's
/// IndexError after the graph ran (IndexChecks.cpp).
VarP advancedIndex(Interpreter &I, const VarP &x, const std::vector<VarP> &indices) {
  Value v = tensorOf(x, "indexing");
  auto shape = staticShape(v, "indexing");
  size_t k = indices.size();
  if (k == 0 || k > shape.size())
    throw Unsupported("too many indices for tensor (eager raises)");
  std::vector<VarP> dims;
  for (size_t j = 0; j < k; ++j)
    dims.push_back(constInt(shape[j]));
  VarP lin = advancedRow(I, indices, dims);
  int64_t rows = 1, cols = 1;
  for (size_t d = 0; d < shape.size(); ++d)
    (d < k ? rows : cols) *= shape[d];
  VarP table = reshape(I, x, {rows, cols});
  bool isBool = ttype(v).getElementType().isInteger(1);
  if (isBool)
    table = callOp(I, "long", {{"input", table}});
  VarP picked = callOp(I, "embedding", {{"input", lin}, {"weight", table}});
  std::vector<int64_t> out(ttype(lin->value).getShape().begin(),
                           ttype(lin->value).getShape().end());
  out.insert(out.end(), shape.begin() + k, shape.end());
  VarP r = reshape(I, picked, out);
  return isBool ? callOp(I, "bool", {{"input", r}}) : r;
}

/// x[index] for index made of ints, slices, None and Ellipsis.
VarP getitem(Interpreter &I, const VarP &x, const VarP &index) {
  Value v = tensorOf(x, "indexing");
  if (VarP r = I.symbolicGetitem(x, index))
    return r; // symbolic sizes
  std::vector<PyObject *> items;
  if (index->isTensor())
    return advancedIndex(I, x, {index});
  if (index->kind == Var::Kind::Tuple) {
    bool allTensors = !index->items.empty();
    for (auto &it : index->items)
      allTensors &= it->isTensor();
    if (allTensors)
      return advancedIndex(I, x, index->items);
    for (auto &it : index->items) {
      if (it->isTensor())
        throw Unsupported("indexing with tensors mixed with other indices is not supported yet");
      items.push_back(constObj(it, "index"));
    }
  } else {
    PyObject *o = constObj(index, "index");
    if (PyTuple_Check(o)) {
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); ++i)
        items.push_back(PyTuple_GET_ITEM(o, i));
    } else {
      items.push_back(o);
    }
  }
  auto shape = staticShape(v, "indexing");
  int64_t rank = shape.size();
  int64_t consuming = 0, ellipses = 0;
  for (PyObject *o : items) {
    if (o == Py_Ellipsis)
      ++ellipses;
    else if (isNoneObj(o))
      continue;
    else if (PySlice_Check(o) || (PyLong_Check(o) && !PyBool_Check(o)))
      ++consuming;
    else
      throw Unsupported("index " + pyText(o, true) +
                        " is not supported yet (ints, slices, None and ... are)");
  }
  if (ellipses > 1)
    throw Unsupported("an index can only have a single ellipsis (eager raises)");
  if (consuming > rank)
    throw Unsupported("too many indices for tensor (eager raises)");
  std::vector<int64_t> start(rank, 0), end(shape.begin(), shape.end()), step(rank, 1);
  std::vector<int64_t> out; // final shape
  int64_t d = 0;
  for (PyObject *o : items) {
    if (o == Py_Ellipsis) {
      for (int64_t k = 0; k < rank - consuming; ++k, ++d)
        out.push_back(shape[d]);
    } else if (isNoneObj(o)) {
      out.push_back(1);
    } else if (PySlice_Check(o)) {
      Py_ssize_t s, e, st;
      if (PySlice_Unpack(o, &s, &e, &st) < 0)
        throw Unsupported(BreakCategory::UserError, withPythonError("invalid slice"));
      if (st <= 0)
        throw Unsupported("slice step must be positive (eager raises)");
      Py_ssize_t len = PySlice_AdjustIndices(shape[d], &s, &e, st);
      start[d] = s;
      end[d] = len == 0 ? s : s + (len - 1) * st + 1;
      step[d] = st;
      out.push_back(len);
      ++d;
    } else {
      long long i = PyLong_AsLongLong(o);
      if (PyErr_Occurred())
        throw Unsupported(BreakCategory::UserError, withPythonError("index out of range"));
      if (i < -shape[d] || i >= shape[d])
        throw Unsupported(BreakCategory::UserError, "index out of range", hint::kRaisesInEager);
      if (i < 0)
        i += shape[d];
      start[d] = i;
      end[d] = i + 1;
      ++d;
    }
  }
  for (; d < rank; ++d)
    out.push_back(shape[d]);
  // Only x[...] / x[:] (nothing sliced or reshaped) needs the forced view.
  bool reshaped = llvm::ArrayRef<int64_t>(out) != shape;
  VarP r = slice(I, x, start, end, step, /*asView=*/!reshaped);
  return reshape(I, r, out);
}

/// Sizes of torch.split(x, split_size_or_sections, dim) along a dim of size n.
std::vector<int64_t> splitSizes(const VarP &sizes, int64_t n) {
  PyObject *o = sizes->isConst() ? sizes->obj.get() : nullptr;
  std::vector<int64_t> out;
  if (o && PyLong_Check(o)) {
    int64_t s = PyLong_AsLongLong(o);
    if (s <= 0 && !(s == 0 && n == 0))
      throw Unsupported("split size must be positive (eager raises)");
    if (n == 0)
      return {0};
    for (int64_t at = 0; at < n; at += s)
      out.push_back(std::min(s, n - at));
    return out;
  }
  out = asInts(sizes, "split sizes");
  int64_t total = 0;
  for (int64_t s : out) {
    if (s < 0)
      throw Unsupported("negative split size (eager raises)");
    total += s;
  }
  if (total != n)
    throw Unsupported("split sizes do not add up to the dim size (eager raises)");
  return out;
}

VarP splitInto(Interpreter &I, const VarP &x, int64_t d, const std::vector<int64_t> &sizes) {
  std::vector<VarP> parts;
  int64_t at = 0;
  for (int64_t s : sizes) {
    parts.push_back(narrowDim(I, x, d, at, s));
    at += s;
  }
  return makeSeq(Var::Kind::Tuple, parts);
}

/// The tensors of torch.cat/stack's `tensors` argument.
std::vector<VarP> tensorList(Interpreter &, const VarP &seq, const std::string &op) {
  if (!seq)
    throw Unsupported(op + ": missing tensors");
  if (seq->kind != Var::Kind::Tuple && seq->kind != Var::Kind::List)
    throw Unsupported(op + " expects a tuple or list of tensors");
  if (seq->items.empty())
    throw Unsupported(op + " of an empty list (eager raises)");
  for (auto &t : seq->items)
    if (!t->isTensor())
      throw Unsupported(op + " expects tensors");
  return seq->items;
}

VarP fresh(Value v) {
  VarP r = T(v);
  r->fresh = true;
  return r;
}

Value concat(Interpreter &I, std::vector<Value> values, int64_t dim) {
  Emit e(I);
  std::vector<VarP> vars;
  for (Value v : values)
    vars.push_back(T(v));
  DType d = resultType(vars);
  for (Value &v : values)
    v = e.cast(v, d);
  if (values.size() == 1)
    return values[0];
  llvm::SmallVector<Type> types;
  auto attrs = e.b.getDictionaryAttr({e.b.getNamedAttr("dim", e.b.getI64IntegerAttr(dim))});
  ConcatOp::Properties props;
  props.dim = e.b.getI64IntegerAttr(dim);
  if (mlir::failed(ConcatOp::inferReturnTypes(e.b.getContext(), I.loc(), values, attrs,
                                              mlir::OpaqueProperties(&props), mlir::RegionRange(),
                                              types)))
    throw Unsupported("invalid operands for torch.cat (eager raises)");
  return e.b.create<ConcatOp>(I.loc(), types.front(), values, e.b.getI64IntegerAttr(dim));
}

/// batch_norm in training mode: normalized with the batch's statistics
/// (biased variance) over every dim but 1; the running stats, when given,
/// become `(1 - momentum) * running + momentum * batch` (unbiased variance)
/// in place, as eager's kernel does (without gradients: GradFlow.cpp).
VarP batchNormTraining(Interpreter &I, Args &a, Value x) {
  Emit e(I);
  auto xt = ttype(x);
  if (!xt.hasStaticShape())
    throw Unsupported(BreakCategory::DynamicShape,
                      "batch_norm in training mode with symbolic sizes is not supported");
  if (xt.getRank() < 2)
    throw Unsupported(BreakCategory::UserError, "batch_norm expects rank >= 2 (eager raises)");
  DType d = dtypeOf(xt.getElementType());
  if (!isFloatingDType(d))
    throw Unsupported("batch_norm of an integer tensor");
  DType c = isNarrow(d) ? DType::F32 : d;
  int64_t ch = xt.getDimSize(1), n = xt.getNumElements() / std::max<int64_t>(ch, 1);
  if (n <= 1)
    throw Unsupported(BreakCategory::UserError,
                      "batch_norm in training mode with one value per channel (eager raises)");
  std::vector<int64_t> dims, bshape(xt.getRank(), 1);
  bshape[1] = ch;
  for (int64_t i = 0; i < xt.getRank(); ++i)
    if (i != 1)
      dims.push_back(i);
  auto param = [&](const char *name) {
    Value p = tensorOf(a.get(name), "batch_norm");
    if (ttype(p).getShape() != llvm::ArrayRef<int64_t>{ch})
      throw Unsupported(BreakCategory::UserError,
                        std::string("batch_norm: ") + name + " shape mismatch (eager raises)");
    // float32 parameters of a bf16/f16 input (autocast's conv output): eager
    // computes in float32 and returns the input's dtype.
    DType pd = dtypeOf(ttype(p).getElementType());
    if (pd != d && !(isNarrow(d) && pd == DType::F32))
      throw Unsupported(std::string("batch_norm with a ") + name + " of another dtype");
    return p;
  };
  double eps = floatArg(a, "eps", 1e-5);
  Value xc = e.cast(x, c);
  Value mean = e.reduce<MeanOp>(xc, dims, true);
  Value centered = e.bin<SubOp>(xc, mean);
  Value var = e.reduce<MeanOp>(e.bin<MulOp>(centered, centered), dims, true);
  Value r = e.bin<MulOp>(centered, e.unary<RsqrtOp>(e.bin<AddOp>(var, e.num(eps, c))));
  if (!a.isNone("weight"))
    r = e.bin<MulOp>(r, e.reshape(e.cast(param("weight"), c), bshape));
  if (!a.isNone("bias"))
    r = e.bin<AddOp>(r, e.reshape(e.cast(param("bias"), c), bshape));
  if (a.isNone("running_mean") != a.isNone("running_var"))
    throw Unsupported(BreakCategory::UserError, "batch_norm with one running stat (eager raises)");
  if (!a.isNone("running_mean")) {
    if (a.isNone("momentum") || !a.get("momentum")->isConst())
      throw Unsupported("batch_norm in training mode with a momentum that is not a number");
    double m = floatArg(a, "momentum", 0.1);
    auto update = [&](const char *name, Value batch) {
      Value run = e.cast(param(name), c);
      Value v = e.bin<AddOp>(e.bin<MulOp>(e.reshape(batch, {ch}), e.num(m, c)),
                             e.bin<MulOp>(run, e.num(1.0 - m, c)));
      v = e.cast(v, dtypeOfValue(param(name)));
      I.markNoGrad(v);
      // Eager's kernel writes them through their data: no version bump.
      I.assignInPlace(a.get(name), v, "batch_norm(training=True) running stats", nullptr, 0);
    };
    update("running_mean", mean);
    update("running_var", e.bin<MulOp>(var, e.num((double)n / (double)(n - 1), c)));
  }
  return fresh(e.cast(r, d));
}

VarP batchNorm(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  Value x = tensorOf(a.get("input"), "batch_norm");
  bool training =
      !a.isNone("training") && PyObject_IsTrue(constObj(a.get("training"), "training")) == 1;
  if (training)
    return batchNormTraining(I, a, x);
  if (a.isNone("running_mean") || a.isNone("running_var"))
    throw Unsupported("batch_norm without running stats");
  Value mean = tensorOf(a.get("running_mean"), "batch_norm");
  Value var = tensorOf(a.get("running_var"), "batch_norm");
  auto xt = ttype(x);
  if (xt.getRank() < 2 || mlir::ShapedType::isDynamic(xt.getDimSize(1)))
    throw Unsupported("batch_norm needs an input of rank >= 2 with a static channel dim");
  mlir::Type elt = xt.getElementType();
  if (!llvm::isa<mlir::FloatType>(elt))
    throw Unsupported("batch_norm of an integer tensor");
  DType in = dtypeOf(elt);
  if (isNarrow(in) && dtypeOfValue(mean) == DType::F32) {
    // float32 stats of a bf16/f16 input (autocast's conv output): computed
    // in float32, returned in the input's dtype, as eager's CPU kernel.
    x = e.cast(x, DType::F32);
    elt = ttype(x).getElementType();
  }
  int64_t c = xt.getDimSize(1);
  std::vector<int64_t> bshape(xt.getRank(), 1);
  bshape[1] = c;
  auto param = [&](Value p) {
    auto t = ttype(p);
    if (t.getRank() != 1 || t.getDimSize(0) != c)
      throw Unsupported("batch_norm: stats/affine shape mismatch (eager raises)");
    if (t.getElementType() != elt)
      throw Unsupported("batch_norm with parameters of another dtype than the input");
    return e.reshape(p, bshape);
  };
  double eps = a.isNone("eps") ? 1e-5 : asDouble(a.get("eps"), "eps");
  DType d = dtypeOf(elt);
  PyRef epsObj = PyRef::steal(PyFloat_FromDouble(eps));
  Value centered = e.inferred<SubOp>({x, param(mean)});
  Value denom = e.inferred<AddOp>({param(var), e.scalar(epsObj.get(), d)});
  Value r = e.inferred<MulOp>({centered, e.unary<RsqrtOp>(denom)});
  if (!a.isNone("weight"))
    r = e.inferred<MulOp>({r, param(tensorOf(a.get("weight"), "batch_norm"))});
  if (!a.isNone("bias"))
    r = e.inferred<AddOp>({r, param(tensorOf(a.get("bias"), "batch_norm"))});
  return fresh(e.cast(r, in));
}

VarP slicePrimitive(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  Value v = tensorOf(a.get("input"), "slice");
  auto start = asInts(a.get("start"), "start"), end = asInts(a.get("end"), "end"),
       step = asInts(a.get("step"), "step");
  auto attrs = e.b.getDictionaryAttr({});
  SliceOp::Properties props;
  props.start = e.b.getDenseI64ArrayAttr(start);
  props.end = e.b.getDenseI64ArrayAttr(end);
  props.step = e.b.getDenseI64ArrayAttr(step);
  llvm::SmallVector<Type> types;
  if (mlir::failed(SliceOp::inferReturnTypes(e.b.getContext(), I.loc(), mlir::ValueRange{v}, attrs,
                                             mlir::OpaqueProperties(&props), mlir::RegionRange(),
                                             types)))
    throw Unsupported("invalid slice");
  return T(e.b.create<SliceOp>(I.loc(), types.front(), v, props.start, props.end, props.step));
}

VarP stack(Interpreter &I, const std::string &op, Args &a) {
  if (!a.isNone("out"))
    throw Unsupported(BreakCategory::UnsupportedOp, op + " with out=");
  std::vector<VarP> ts = tensorList(I, a.get("tensors"), "torch." + op);
  int64_t dimArg = intArg(a, "dim", 0);
  auto first = ttype(ts[0]->value).getShape();
  int64_t rank = first.size();
  if (dimArg < -(rank + 1) || dimArg > rank)
    throw Unsupported("stack: dim out of range (eager raises)");
  int64_t d = dimArg < 0 ? dimArg + rank + 1 : dimArg;
  Emit e(I);
  std::vector<Value> values;
  for (auto &t : ts) {
    auto s = ttype(t->value).getShape();
    if (s != first)
      throw Unsupported("stack expects each tensor to be equal size (eager raises)");
    std::vector<int64_t> ns(s.begin(), s.end());
    ns.insert(ns.begin() + d, 1);
    values.push_back(e.reshape(t->value, ns));
  }
  return fresh(concat(I, values, d));
}

VarP cat(Interpreter &I, const std::string &op, Args &a) {
  if (!a.isNone("out"))
    throw Unsupported(BreakCategory::UnsupportedOp, op + " with out=");
  std::vector<VarP> ts = tensorList(I, a.get("tensors"), "torch." + op);
  int64_t dimArg = intArg(a, "dim", 0);
  std::vector<Value> values;
  // torch.cat skips 1-D empty tensors (legacy behaviour).
  for (auto &t : ts) {
    auto tt = ttype(t->value);
    if (tt.getRank() == 1 && tt.getDimSize(0) == 0 && ts.size() > 1)
      continue;
    values.push_back(t->value);
  }
  if (values.empty())
    values.push_back(ts[0]->value);
  int64_t rank = ttype(values[0]).getRank();
  if (rank == 0)
    throw Unsupported("cat of 0-d tensors (eager raises)");
  Value r = concat(I, values, normDim(dimArg, rank));
  // One tensor left (the others empty): eager still returns a new tensor.
  if (llvm::any_of(ts, [&](const VarP &t) { return t->value == r; }))
    return freshResult(r);
  return fresh(r);
}

VarP embedding(Interpreter &I, const std::string &op, Args &a) {
  Value idx = tensorOf(a.get("input"), "embedding");
  Value w = tensorOf(a.get("weight"), "embedding");
  if (!a.isNone("max_norm"))
    throw Unsupported(BreakCategory::SideEffect,
                      "embedding with max_norm (renormalizes the weight in place)");
  auto it = ttype(idx).getElementType();
  if (!it.isInteger(64) && !it.isInteger(32))
    throw Unsupported("embedding indices must be int64 or int32 (eager raises)");
  if (ttype(w).getRank() != 2)
    throw Unsupported("embedding weight must be 2-D");
  Emit e(I);
  mlir::Operation *emb = e.inferred<EmbeddingOp>({w, idx}).getDefiningOp();
  // Gradient-only arguments, for kiln-autodiff's rule (ShapeGrads.cpp).
  if (!a.isNone("padding_idx")) {
    int64_t rows = ttype(w).getDimSize(0), pad = asInt(a.get("padding_idx"), "padding_idx");
    if (pad < -rows || pad >= rows)
      throw Unsupported(BreakCategory::UserError, "embedding: padding_idx must be within "
                                                  "num_embeddings (eager raises)");
    emb->setAttr("kiln.padding_idx", I.builder().getI64IntegerAttr(pad < 0 ? pad + rows : pad));
  }
  for (const char *flag : {"scale_grad_by_freq", "sparse"})
    if (boolArg(a, flag, false))
      emb->setAttr(std::string("kiln.") + flag, I.builder().getUnitAttr());
  return fresh(emb->getResult(0));
}

VarP getitemOp(Interpreter &I, const std::string &op, Args &a) {
  VarP x = a.get("input");
  tensorOf(x, op);
  return getitem(I, x, a.get("index"));
}

/// The static dim `d` of `x` that narrow/select/chunk/split/unbind cut
/// (its other dims may be symbolic: they are kept whole).
int64_t cutDim(Interpreter &I, Value x, const std::string &op, int64_t d) {
  if (ttype(x).getRank() == 0)
    throw Unsupported(op + " of a 0-d tensor (eager raises)");
  d = normDim(d, ttype(x).getRank());
  if (I.symbolOfDim(x, d) != -1)
    throw Unsupported(BreakCategory::DynamicShape, op + " along a symbolic dim");
  return d;
}

/// narrow(d, start, length) along symbolic dim `d` of `x` as the slice
/// `x[..., start:stop]` (SymbolicIndexing.cpp): a constant length, or one
/// that is the size minus a constant (`narrow(1, 1, s - 2)`: `[1:-1]`).
VarP narrowSymbolic(Interpreter &I, const VarP &x, int64_t d, Args &a) {
  int64_t start = asInt(a.get("start"), "start");
  VarP len = a.get("length"), size = I.sizeVar(x->value, d);
  PyRef stop;
  if (len->kind == Var::Kind::SymInt) {
    VarP over = I.symIntBinary("-", len, size);
    if (!over || over->kind == Var::Kind::SymInt || start < 0)
      throw Unsupported(BreakCategory::DynamicShape,
                        "narrow along a symbolic dim to a length that is not the size minus a "
                        "constant",
                        hint::kSpecializeSizes);
    int64_t back = start + asInt(over, "length");
    if (back > 0)
      throw Unsupported("narrow out of range (eager raises)");
    stop = back == 0 ? PyRef::borrow(Py_None) : PyRef::steal(PyLong_FromLongLong(back));
  } else {
    int64_t n = asInt(len, "length");
    if (n < 0)
      throw Unsupported("narrow with a negative length (eager raises)");
    stop = start < 0 && start + n == 0 ? PyRef::borrow(Py_None)
                                       : PyRef::steal(PyLong_FromLongLong(start + n));
  }
  PyRef index = PyRef::steal(PyTuple_New(d + 1));
  for (int64_t i = 0; i <= d; ++i) {
    PyRef b = PyRef::steal(PyLong_FromLongLong(start));
    PyTuple_SET_ITEM(index.get(), i,
                     i < d ? PySlice_New(nullptr, nullptr, nullptr)
                           : PySlice_New(b.get(), stop.get(), nullptr));
  }
  return I.symbolicGetitem(x, makeConst(index));
}

VarP narrow(Interpreter &I, const std::string &op, Args &a) {
  VarP x = a.get("input");
  Value v = tensorOf(x, op);
  if (ttype(v).getRank() > 0) {
    int64_t dim = normDim(asInt(a.get("dim"), "dim"), ttype(v).getRank());
    if (I.symbolOfDim(v, dim) != -1)
      return narrowSymbolic(I, x, dim, a);
  }
  int64_t d = cutDim(I, v, op, asInt(a.get("dim"), "dim"));
  int64_t n = ttype(v).getDimSize(d);
  int64_t s = asInt(a.get("start"), "start"), len = asInt(a.get("length"), "length");
  if (s < 0)
    s += n;
  if (s < 0 || len < 0 || s + len > n)
    throw Unsupported("narrow out of range (eager raises)");
  return narrowDim(I, x, d, s, len);
}

VarP select(Interpreter &I, const std::string &op, Args &a) {
  VarP x = a.get("input");
  Value v = tensorOf(x, op);
  return selectDim(I, x, cutDim(I, v, op, asInt(a.get("dim"), "dim")),
                   asInt(a.get("index"), "index"));
}

VarP unbind(Interpreter &I, const std::string &op, Args &a) {
  VarP x = a.get("input");
  Value v = tensorOf(x, op);
  int64_t d = cutDim(I, v, op, intArg(a, "dim", 0));
  std::vector<VarP> parts;
  for (int64_t i = 0; i < ttype(v).getDimSize(d); ++i)
    parts.push_back(selectDim(I, x, d, i));
  return makeSeq(Var::Kind::Tuple, parts);
}

VarP chunk(Interpreter &I, const std::string &op, Args &a) {
  VarP x = a.get("input");
  Value v = tensorOf(x, op);
  int64_t d = cutDim(I, v, op, intArg(a, "dim", 0));
  int64_t n = ttype(v).getDimSize(d);
  int64_t chunks = asInt(a.get("chunks"), "chunks");
  if (chunks <= 0)
    throw Unsupported("chunk expects chunks > 0 (eager raises)");
  int64_t size = (n + chunks - 1) / chunks;
  std::vector<int64_t> sizes;
  if (n == 0) {
    sizes.assign(chunks, 0);
  } else {
    for (int64_t at = 0; at < n; at += size)
      sizes.push_back(std::min(size, n - at));
  }
  return splitInto(I, x, d, sizes);
}

VarP split(Interpreter &I, const std::string &op, Args &a) {
  VarP x = a.get("input");
  Value v = tensorOf(x, op);
  int64_t d = cutDim(I, v, op, intArg(a, "dim", 0));
  VarP sizes = a.get("split_size_or_sections");
  if (!sizes)
    sizes = a.get("split_size");
  if (!sizes)
    throw Unsupported("split: missing split_size");
  return splitInto(I, x, d, splitSizes(sizes, ttype(v).getDimSize(d)));
}

} // namespace

void registerIndexingOps(OpRegistry &r) {
  const unsigned viewSteps = View | Composite;
  r.op("__slice", slicePrimitive, Params{"input", "start", "end", "step"}, View);
  r.op("getitem", getitemOp, Params{"input", "index"}, viewSteps, VmapRule::Index)
      .method("__getitem__");
  r.op("narrow", narrow, Params{"input", "dim", "start", "length"}, viewSteps).torchAndMethod();
  r.op("select", select, Params{"input", "dim", "index"}, viewSteps).torchAndMethod();
  r.op("chunk", chunk, Params{"input", "chunks", "dim"}, viewSteps).torchAndMethod();
  r.op("split", split, Params{"input", "split_size_or_sections", "dim"}, viewSteps)
      .torch()
      .method(Params{"input", "split_size", "dim"});
  r.op("unbind", unbind, Params{"input", "dim"}, viewSteps).torchAndMethod();
  r.op("cat", cat, Params{"tensors", "dim", "out"}, Composite)
      .torch()
      .torch("concat")
      .torch("concatenate");
  r.op("stack", stack, Params{"tensors", "dim", "out"}, Composite).torch();
  r.op("embedding", embedding,
       Params{"input", "weight", "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq",
              "sparse"},
       Composite)
      .functional();
  r.op("batch_norm", batchNorm,
       Params{"input", "running_mean", "running_var", "weight", "bias", "training", "momentum",
              "eps"},
       Composite)
      .functional();
}

} // namespace kiln
