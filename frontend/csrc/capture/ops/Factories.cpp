//===- Factories.cpp - zeros, ones, full (and _like) and arange -----------===//
// SPDX-License-Identifier: Apache-2.0
//
// Ops and torch names of the tensor factories: torch.zeros/ones/full, their
// `_like` forms, torch.arange, empty(_like), x.new_*, eye and linspace (its
// values computed by torch at capture time). Static sizes become one splat (or dense)
// kiln.constant; symbolic sizes build the tensor from the input that
// carries the size (SymbolicSizes.cpp). `device=` must be the graph's
// device (CPU, a CUDA device, or meta for a dry run; a torch.device, a
// string or an index); the other factory keywords only at their defaults
// (strided, no grad, no pinning).
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"
#include "GilOnce.h"
#include "capture/interp/CaptureTimeCalls.h"

#include <cmath>
#include <functional>

namespace kiln {

using namespace mlir::kiln;

namespace {

/// torch.device (borrowed, process lifetime).
PyObject *torchDeviceType() {
  static PyOnce once;
  return once.get([] { return PyObject_GetAttrString(torchModule(), "device"); });
}

/// TensorMeta::device of torch.device `dev`; a bare `cuda` (the current
/// device, which no guard covers) is the graph's device only on a machine
/// with one GPU.
int deviceIndex(const std::string &op, PyObject *dev, int graph) {
  PyRef type = PyRef::steal(PyObject_GetAttrString(dev, "type"));
  PyRef index = PyRef::steal(PyObject_GetAttrString(dev, "index"));
  if (!type || !index)
    throw Unsupported(withPythonError(op + ": cannot read device="));
  std::string t = pyText(type.get());
  if (t == "cpu")
    return TensorMeta::kCpuDevice;
  if (t == "meta")
    return TensorMeta::kMetaDevice;
  if (t != "cuda")
    return TensorMeta::kOtherDevice;
  if (index.get() != Py_None)
    return int(PyLong_AsLong(index.get()));
  PyRef cuda = PyRef::steal(PyObject_GetAttrString(torchModule(), "cuda"));
  PyRef count =
      cuda ? PyRef::steal(PyObject_CallMethod(cuda.get(), "device_count", nullptr)) : PyRef();
  if (graph >= 0 && count && PyLong_AsLong(count.get()) == 1)
    return 0;
  PyErr_Clear();
  throw Unsupported(BreakCategory::UnsupportedOp,
                    op + " on device 'cuda' without an index where it may not be the graph's (" +
                        deviceName(graph) + ")",
                    "pass the device of a graph tensor (device=x.device)");
}

} // namespace

void checkFactoryDevice(Interpreter &I, const std::string &op, const Args &a, bool like) {
  std::optional<int> graph = CaptureTimeCalls::graphDevice(I);
  if (a.isNone("device") && like)
    return; // the input's device: the graph's
  PyRef dev;
  if (a.isNone("device")) {
    dev = PyRef::steal(PyObject_CallMethod(torchModule(), "get_default_device", nullptr));
  } else {
    PyObject *o = constObj(a.get("device"), "device");
    dev = PyRef::steal(PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject *>(torchDeviceType()))
                           ? Py_NewRef(o)
                           : PyObject_CallOneArg(torchDeviceType(), o));
  }
  if (!dev) // torch.device("nonsense"): eager raises
    throw Unsupported(BreakCategory::UserError, withPythonError(op + ": device="));
  int mine = graph ? *graph : TensorMeta::kCpuDevice;
  int d = deviceIndex(op, dev.get(), mine);
  if (d == mine && (graph || d == TensorMeta::kCpuDevice))
    return;
  // A tensor on another device than the graph's would be a graph value on
  // the graph's device: wrong wherever its device shows (eager raises when
  // it meets a graph tensor, or returns it there).
  std::string where = graph ? "the graph's device is " + deviceName(*graph)
                            : "before any tensor input (the graph's device is not known yet)";
  throw Unsupported(BreakCategory::UnsupportedOp, op + " on " + pyText(dev.get()) + "; " + where,
                    "create it on the device of a graph tensor (device=x.device)");
}

std::optional<DType> factoryDType(Interpreter &I, const std::string &op, const Args &a, bool like) {
  auto isNoneOr = [&](const char *name, auto ok) {
    return a.isNone(name) || ok(constObj(a.get(name), name));
  };
  auto strIs = [](PyObject *o, const char *s) { return pyText(o) == s; };
  if (!a.isNone("out"))
    throw Unsupported(BreakCategory::UnsupportedOp, op + " with out=");
  checkFactoryDevice(I, op, a, like);
  if (!isNoneOr("layout", [&](PyObject *o) { return strIs(o, "torch.strided"); }) ||
      !isNoneOr("requires_grad", [](PyObject *o) { return o == Py_False; }) ||
      !isNoneOr("pin_memory", [](PyObject *o) { return o == Py_False; }) ||
      !isNoneOr("memory_format", [&](PyObject *o) {
        return strIs(o, "torch.preserve_format") || strIs(o, "torch.contiguous_format");
      }))
    throw Unsupported(BreakCategory::UnsupportedOp,
                      op + " with layout/requires_grad/pin_memory/memory_format");
  if (a.isNone("dtype"))
    return std::nullopt;
  std::optional<DType> dtype = dtypeFromObject(constObj(a.get("dtype"), "dtype"));
  if (!dtype)
    throw Unsupported(BreakCategory::UnsupportedOp, op + ": unsupported dtype");
  return dtype;
}

/// The sizes of `x` (a `_like` factory's input).
FactorySizes likeSizes(Interpreter &I, Value x) {
  FactorySizes s;
  auto shape = ttype(x).getShape();
  s.shape.assign(shape.begin(), shape.end());
  for (int64_t i = 0; i < ttype(x).getRank(); ++i)
    s.symDims.push_back(I.sizeVar(x, i));
  if (!anySymInt(makeSeq(Var::Kind::Tuple, s.symDims)))
    s.symDims.clear();
  return s;
}

/// The sizes of a factory's `size` argument.
FactorySizes sizeArgument(const std::string &op, const Args &a) {
  FactorySizes s;
  VarP size = a.get("size");
  // torch's argument parser rejects a bool as the size or as its first
  // element (`torch.zeros(True)`, `zeros([True, 2])`), yet takes one later
  // (`zeros(2, True)`): a break lets eager raise its TypeError.
  auto isBoolConst = [](const VarP &v) { return v && v->isConst() && PyBool_Check(v->obj.get()); };
  auto firstIsBool = [&](const VarP &v) {
    if (!v)
      return false;
    if (!v->items.empty())
      return isBoolConst(v->items[0]);
    PyObject *o = v->isConst() ? v->obj.get() : nullptr;
    return o && (PyTuple_Check(o) || PyList_Check(o)) && PySequence_Size(o) > 0 &&
           PyBool_Check(PySequence_Fast_GET_ITEM(o, 0));
  };
  if (isBoolConst(size) || firstIsBool(size))
    throw Unsupported(BreakCategory::UserError, op + ": a bool where torch takes a size");
  if (anySymInt(size)) {
    s.symDims = size->kind == Var::Kind::SymInt ? std::vector<VarP>{size} : size->items;
    for (const VarP &d : s.symDims)
      if (d->kind != Var::Kind::SymInt && asInt(d, "size") < 0)
        throw Unsupported(op + ": negative size");
    return s;
  }
  if (!size)
    throw Unsupported(op + ": missing size");
  s.shape = asInts(size, "size");
  for (int64_t n : s.shape)
    if (n < 0)
      throw Unsupported(op + ": negative size");
  return s;
}

namespace {

/// The dtype of fill value `o` (Unsupported unless it is a Python number).
DType fillDType(PyObject *o) {
  std::optional<DTypeCategory> c = scalarCategory(o);
  if (!c)
    throw Unsupported("fill value must be a Python number");
  return scalarDType(*c);
}

/// What a filled factory writes.
enum class Fill { Zero, One, Value };

/// zeros/ones/full and their `_like` forms: a splat constant (or a
/// symbolic-size fill).
template <Fill F, bool Like> VarP filled(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  std::optional<DType> dtype = factoryDType(I, op, a, Like);
  FactorySizes sizes;
  if (Like) {
    Value x = tensorArg(a.get("input"), op);
    if (!dtype)
      dtype = dtypeOf(ttype(x).getElementType());
    sizes = likeSizes(I, x);
  } else {
    sizes = sizeArgument(op, a);
  }
  PyRef fill = F == Fill::Zero  ? PyRef::steal(PyLong_FromLong(0))
               : F == Fill::One ? PyRef::steal(PyLong_FromLong(1))
                                : PyRef::borrow(constObj(a.get("fill_value"), "fill_value"));
  if (!dtype)
    dtype = F == Fill::Value ? fillDType(fill.get()) : defaultFloat();
  fillDType(fill.get()); // a number
  Value scalar = e.scalar(fill.get(), *dtype);
  auto attr = llvm::cast<mlir::DenseElementsAttr>(
      llvm::cast<ConstantOp>(scalar.getDefiningOp()).getValue());
  if (!sizes.symDims.empty())
    return T(I.symFull(sizes.symDims, scalar));
  if (mlir::ShapedType::isDynamicShape(sizes.shape))
    throw Unsupported(BreakCategory::DynamicShape, op + " of a tensor with a symbolic size");
  auto type = RankedTensorType::get(sizes.shape, e.elt(*dtype));
  Value splat =
      e.b.create<ConstantOp>(I.loc(), llvm::cast<mlir::ElementsAttr>(mlir::DenseElementsAttr::get(
                                          type, attr.getSplatValue<mlir::Attribute>())));
  scalar.getDefiningOp()->erase();
  return T(splat);
}

/// Symbolic size `v` (a SymInt or a Python int) as a 0-d i64 value of the
/// graph: each symbol is the count of a line read from the input that
/// carries it (SymbolicSizes.cpp), combined by the expression's + - *.
Value symScalar(Interpreter &I, const VarP &v) {
  Emit e(I);
  if (v->kind != Var::Kind::SymInt)
    return e.num((double)asInt(v, "arange bound"), DType::I64);
  std::function<Value(const SizeExprP &)> build = [&](const SizeExprP &x) -> Value {
    using Op = SizeExpr::Op;
    if (!x)
      throw Unsupported(BreakCategory::DynamicShape,
                        "arange bound: a symbolic size whose origin kiln does not track");
    switch (x->op) {
    case Op::Const:
      return e.num((double)x->value, DType::I64);
    case Op::Sym:
      return I.symbolValue((int)x->value);
    case Op::Add:
      return e.bin<AddOp>(build(x->lhs), build(x->rhs));
    case Op::Sub:
      return e.bin<SubOp>(build(x->lhs), build(x->rhs));
    case Op::Mul:
      return e.bin<MulOp>(build(x->lhs), build(x->rhs));
    default:
      throw Unsupported(BreakCategory::DynamicShape,
                        "arange bound: a symbolic size with // or % (" + sizeExprText(*x) + ")",
                        hint::kSpecializeSizes);
    }
  };
  return build(v->sym);
}

/// arange(start, end, step) where a bound is a symbolic size: `start +
/// step * iota(count)`, count = ceil((end - start) / step) for an int
/// step > 0. A constant count (arange(past, past + n)) gives a static
/// length; a symbolic one a line read from the input that carries it
/// (SymbolicSizes.cpp). The start is computed in the graph.
VarP symbolicArange(Interpreter &I, const Args &a, std::optional<DType> dtype) {
  VarP step = a.isNone("step") ? constInt(1) : a.get("step");
  if (step->kind == Var::Kind::SymInt || !step->isConst() || !PyLong_Check(step->obj.get()) ||
      asInt(step, "step") <= 0)
    throw Unsupported(BreakCategory::DynamicShape,
                      "arange of a symbolic size needs a constant int step > 0");
  int64_t k = asInt(step, "step");
  VarP start = a.isNone("end") ? constInt(0) : a.get("start");
  VarP end = a.isNone("end") ? a.get("start") : a.get("end");
  for (const VarP &b : {start, end})
    if (b->kind != Var::Kind::SymInt && !(b->isConst() && PyLong_CheckExact(b->obj.get())))
      throw Unsupported(BreakCategory::DynamicShape,
                        "arange with a symbolic bound and a bound that is not an int");
  // + - // on SymInts or Python ints (symIntBinary takes SymInts only).
  auto arith = [&](const char *op, const VarP &x, const VarP &y) {
    if (VarP r = I.symIntBinary(op, x, y))
      return r;
    int64_t a = asInt(x, "arange bound"), b = asInt(y, "arange bound");
    int64_t r = op[0] == '-' ? a - b : op[0] == '+' ? a + b : (a - ((a % b + b) % b)) / b;
    return constInt(r);
  };
  VarP span = arith("-", end, start);
  VarP count = k == 1 ? span : arith("//", arith("+", span, constInt(k - 1)), constInt(k));
  Emit e(I);
  Value r;
  if (count->kind == Var::Kind::SymInt) {
    I.symIntBinary(">=", count, constInt(0)); // guarded, as eager raises below 0
    r = I.symIota(count);
  } else {
    int64_t n = asInt(count, "arange length");
    if (n < 0)
      throw Unsupported(BreakCategory::UserError, "arange: invalid bounds (eager raises)");
    if (n > (1 << 16))
      throw Unsupported("arange with more than 65536 elements");
    std::vector<double> iota;
    for (int64_t i = 0; i < n; ++i)
      iota.push_back((double)i);
    r = e.dense({n}, DType::I64, iota);
  }
  if (k != 1)
    r = e.bin<MulOp>(r, e.num((double)k, DType::I64));
  bool zeroStart = start->kind != Var::Kind::SymInt && asInt(start, "start") == 0;
  if (!zeroStart)
    r = e.bin<AddOp>(r, symScalar(I, start));
  return T(e.cast(r, dtype ? *dtype : DType::I64));
}

/// A dense `n`-element constant `start + i * step` of element type `elt`.
mlir::Attribute arangeValues(Emit &e, Type elt, int64_t n, double start, double step) {
  auto type = RankedTensorType::get({n}, elt);
  llvm::SmallVector<mlir::Attribute> vals;
  if (elt.isInteger(1))
    throw Unsupported("arange of bools");
  for (int64_t i = 0; i < n; ++i)
    vals.push_back(
        llvm::isa<mlir::FloatType>(elt)
            ? mlir::Attribute(e.b.getFloatAttr(elt, start + i * step))
            : mlir::Attribute(e.b.getIntegerAttr(elt, static_cast<int64_t>(start + i * step))));
  return mlir::DenseElementsAttr::get(type, vals);
}

VarP arange(Interpreter &I, const std::string &op, Args &a) {
  std::optional<DType> dtype = factoryDType(I, op, a, false);
  if (anySymInt(a.get("start")) || anySymInt(a.get("end")))
    return symbolicArange(I, a, dtype);
  std::vector<PyObject *> v;
  for (const char *n : {"start", "end", "step"})
    if (!a.isNone(n))
      v.push_back(constObj(a.get(n), n));
  if (a.isNone("end") && !a.isNone("step"))
    throw Unsupported("arange: step without end");
  if (v.empty()) // arange(None), arange(): eager raises TypeError
    throw Unsupported(BreakCategory::UserError, "arange without an end (eager raises)");
  double start = 0, end, step = 1;
  bool allInt = true;
  for (PyObject *o : v) {
    std::optional<DTypeCategory> c = scalarCategory(o);
    if (!c || *c == DTypeCategory::Bool)
      throw Unsupported("arange bounds must be numbers");
    allInt &= *c == DTypeCategory::Integer;
  }
  if (v.size() == 1) {
    end = PyFloat_AsDouble(v[0]);
  } else {
    start = PyFloat_AsDouble(v[0]);
    end = PyFloat_AsDouble(v[1]);
    if (v.size() == 3)
      step = PyFloat_AsDouble(v[2]);
  }
  if (step == 0 || (end - start) / step < 0)
    throw Unsupported("arange: invalid bounds");
  if (allInt && std::max({std::fabs(start), std::fabs(end), std::fabs(step)}) >= 0x1p53)
    throw Unsupported("arange with integer bounds of 2**53 or more (not exact as doubles)");
  int64_t n = static_cast<int64_t>(std::ceil((end - start) / step));
  DType d = dtype ? *dtype : allInt ? DType::I64 : defaultFloat();
  if (!allInt && !isFloatingDType(d) && d != DType::Bool) {
    // An integer dtype with float bounds: eager truncates start and step to
    // integers for the values, and for int64 also the end for the length,
    // computed in integers (`arange(0, 10, 2.5, dtype=int64)` is 0, 2, .. 8;
    // int32 gives 0, 2, 4, 6, its length from the doubles).
    auto xs = static_cast<int64_t>(start), xe = static_cast<int64_t>(end),
         xst = static_cast<int64_t>(step);
    if (xst == 0)
      throw Unsupported("arange: a step that truncates to 0 for an integer dtype");
    if (d == DType::I64)
      n = std::max<int64_t>(0, (xe - xs + xst - (xst > 0 ? 1 : -1)) / xst);
    start = static_cast<double>(xs);
    step = static_cast<double>(xst);
  }
  if (n > (1 << 16))
    throw Unsupported("arange with more than 65536 elements");
  Emit e(I);
  mlir::Attribute attr = arangeValues(e, e.elt(d), n, start, step);
  return T(e.b.create<ConstantOp>(I.loc(), llvm::cast<mlir::ElementsAttr>(attr)));
}

/// empty(_like): zeros(_like) (empty values are unspecified: zeros are as
/// good as any, and testable).
template <bool Like> VarP empty(Interpreter &I, const std::string &op, Args &a) {
  Args b = a;
  return applyTracked(I, Like ? "zeros_like" : "zeros", b);
}

/// x.new_zeros/new_ones/new_full/new_empty: the factory `Factory` with x's
/// dtype and device unless `dtype=`/`device=` is given.
template <const char *Factory> VarP newTensor(Interpreter &I, const std::string &op, Args &a) {
  Value v = tensorArg(a.get("input"), op);
  Args b = a;
  b.named.erase("input");
  if (b.isNone("dtype"))
    b.named["dtype"] = makeConst(PyRef::borrow(dtypeObject(dtypeOfValue(v))));
  if (b.isNone("device"))
    b.named["device"] = I.tensorAttribute(a.get("input"), "device");
  return applyTracked(I, Factory, b);
}
constexpr char kZeros[] = "zeros", kOnes[] = "ones", kFull[] = "full";

/// The `dtype=` of eye/linspace (on the graph's device).
std::optional<DType> creationDType(Interpreter &I, const std::string &op, const Args &a) {
  checkFactoryDevice(I, op, a, false);
  if (a.isNone("dtype"))
    return std::nullopt;
  // A dtype kiln has no type for (uint8, int8, ...) breaks; it must not
  // read as "no dtype" (eye/linspace came back as the default float).
  std::optional<DType> d = dtypeFromObject(constObj(a.get("dtype"), "dtype"));
  if (!d)
    throw Unsupported(BreakCategory::UnsupportedOp, op + ": unsupported dtype");
  return d;
}

VarP eye(Interpreter &I, const std::string &op, Args &a) {
  std::optional<DType> dt = creationDType(I, op, a);
  int64_t n = asInt(a.get("n"), "n"), m = intArg(a, "m", n);
  if (n < 0 || m < 0)
    throw Unsupported(BreakCategory::UserError, "eye with a negative size (eager raises)");
  std::vector<double> vals;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j)
      vals.push_back(i == j);
  return T(Emit(I).dense({n, m}, dt ? *dt : defaultFloat(), vals));
}

VarP linspace(Interpreter &I, const std::string &op, Args &a) {
  std::optional<DType> dt = creationDType(I, op, a);
  double start = asDouble(a.get("start"), "start"), end = asDouble(a.get("end"), "end");
  int64_t steps = asInt(a.get("steps"), "steps");
  if (steps < 0 || steps > (1 << 16))
    throw Unsupported("linspace steps out of range");
  DType d = dt ? *dt : defaultFloat();
  if (!isFloatingDType(d))
    throw Unsupported(BreakCategory::UnsupportedOp, "integer linspace is not supported yet");
  // The values torch computes (in the dtype's arithmetic, vectorized on this
  // CPU: a double computation differed by an ulp), as a constant.
  PyRef fn = PyRef::steal(PyObject_GetAttrString(torchModule(), "linspace"));
  PyRef args = PyRef::steal(Py_BuildValue("(ddL)", start, end, static_cast<long long>(steps)));
  PyRef kwargs = PyRef::steal(Py_BuildValue("{s:O}", "dtype", dtypeObject(d)));
  PyRef values = PyRef::steal(
      fn && args && kwargs ? PyObject_Call(fn.get(), args.get(), kwargs.get()) : nullptr);
  PyRef list =
      PyRef::steal(values ? PyObject_CallMethod(values.get(), "tolist", nullptr) : nullptr);
  if (!list || !PyList_Check(list.get())) {
    PyErr_Clear();
    throw Unsupported("linspace: torch.linspace failed at capture time");
  }
  std::vector<double> vals;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list.get()); ++i)
    vals.push_back(PyFloat_AsDouble(PyList_GET_ITEM(list.get(), i)));
  return T(Emit(I).dense({steps}, d, vals));
}

} // namespace

void registerFactoryOps(OpRegistry &r) {
  const Params keywords{"out",           "dtype",      "layout",       "device",
                        "requires_grad", "pin_memory", "memory_format"};
  r.op("zeros", filled<Fill::Zero, false>, Params{"*size"}.with(keywords)).torch();
  r.op("ones", filled<Fill::One, false>, Params{"*size"}.with(keywords)).torch();
  r.op("full", filled<Fill::Value, false>, Params{"size", "fill_value"}.with(keywords)).torch();
  r.op("zeros_like", filled<Fill::Zero, true>, Params{"input"}.with(keywords)).torch();
  r.op("ones_like", filled<Fill::One, true>, Params{"input"}.with(keywords)).torch();
  r.op("full_like", filled<Fill::Value, true>, Params{"input", "fill_value"}.with(keywords))
      .torch();
  r.op("arange", arange, Params{"start", "end", "step"}.with(keywords)).torch();
  const Params creation{"dtype",         "layout",     "device",
                        "requires_grad", "pin_memory", "memory_format"};
  const Params sizes{"input", "*size"};
  const VmapRule factory = VmapRule::Factory;
  r.op("empty", empty<false>, Params{"*size"}.with(creation)).torch();
  r.op("empty_like", empty<true>, Params{"input"}.with(creation)).torch();
  r.op("new_zeros", newTensor<kZeros>, sizes.with(creation), NoTraits, factory).method();
  r.op("new_ones", newTensor<kOnes>, sizes.with(creation), NoTraits, factory).method();
  r.op("new_empty", newTensor<kZeros>, sizes.with(creation), NoTraits, factory).method();
  r.op("new_full", newTensor<kFull>, Params{"input", "size", "fill_value"}.with(creation), NoTraits,
       factory)
      .method();
  r.op("eye", eye, Params{"n", "m"}.with(creation)).torch();
  r.op("linspace", linspace, Params{"start", "end", "steps"}.with(creation)).torch();
}

} // namespace kiln
