//===- NumpyInterop.cpp - NumPy code on arrays captured as tensor ops ---------===//
// SPDX-License-Identifier: Apache-2.0
//
// NumPy arrays inside the graph (issue 15 item 6): an Ndarray Var wraps the
// Tensor Var holding its data. `t.numpy()` and `torch.from_numpy(a)` /
// `torch.as_tensor(a)` share that Var, so an in-place update through one is
// seen through the other, as eager's shared memory. A numpy.ndarray read
// from the frame is a graph input through the source torch.from_numpy(...)
// (type-guarded, then guarded like a tensor). NumPy functions, ndarray
// methods and operators on Ndarrays map to torch ops; NumPy's dtype rules
// (float64 defaults, NEP 50 scalars, int true division) are not re-derived
// here: the same call is run on small stand-in arrays of the operands'
// dtypes and shapes (the oracle), and the torch result is checked against
// its shape and cast to its dtype (the operands first, when the result is
// floating, so the arithmetic runs at NumPy's precision). NumPy functions
// whose arguments are all constants are folded at capture (a fixed list of
// pure ones); anything else is a `numpy` break.
//===----------------------------------------------------------------------===//
#include "GilOnce.h"
#include "capture/interp/NumpyInterop.h"
#include "capture/ops/TorchOpsImpl.h"

#include <cmath>
#include <set>
#include <unordered_map>

namespace kiln {
namespace {

/// numpy when it is imported (kiln never imports it for the user); null otherwise.
PyObject *numpyIfLoaded() {
  PyObject *mods = PyImport_GetModuleDict();
  PyObject *m = mods ? PyDict_GetItemString(mods, "numpy") : nullptr;
  return m;
}

PyObject *npAttr(const char *name) {
  PyObject *m = numpyIfLoaded();
  PyObject *a = m ? PyObject_GetAttrString(m, name) : nullptr;
  PyErr_Clear();
  Py_XDECREF(a); // numpy's module attributes live as long as the process
  return a;
}

bool isNdarray(PyObject *o) {
  PyObject *t = npAttr("ndarray");
  return t && reinterpret_cast<PyObject *>(Py_TYPE(o)) == t;
}

bool isNumpyScalar(PyObject *o) {
  PyObject *g = npAttr("generic");
  return g && PyObject_IsInstance(o, g) == 1;
}

Unsupported numpyBreak(const std::string &why) {
  return Unsupported(BreakCategory::Numpy, why,
                     "use torch operations on tensors, or let this part run eagerly");
}

VarP ndarrayVar(VarP t, bool scalar) {
  auto v = std::make_shared<Var>();
  v->kind = Var::Kind::Ndarray;
  v->self = std::move(t);
  if (scalar)
    v->name = "scalar";
  return v;
}

PyObject *torchAttr(const char *name) {
  PyRef torch = PyRef::steal(PyImport_ImportModule("torch"));
  PyObject *a = torch ? PyObject_GetAttrString(torch.get(), name) : nullptr;
  PyErr_Clear();
  Py_XDECREF(a);
  return a;
}

/// The static shape of an Ndarray's data; a break for a symbolic dim.
std::vector<int64_t> staticShape(Interpreter &I, const VarP &a) {
  auto type = llvm::cast<mlir::RankedTensorType>(a->self->value.getType());
  std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
  for (int64_t d : shape)
    if (mlir::ShapedType::isDynamic(d) && NumpyInterop::readSymbolicSize(I)) // retried static
      throw Unsupported(BreakCategory::DynamicShape, "a NumPy array of a symbolic size");
  return shape;
}

/// numpy dtype of the torch dtype of graph value `v`.
PyRef numpyDtypeOf(mlir::Value v) {
  PyObject *dt = dtypeObject(dtypeOfValue(v));
  PyRef kw = PyRef::steal(Py_BuildValue("{s:O}", "dtype", dt));
  PyRef zero = PyRef::steal(Py_BuildValue("(i)", 0));
  PyRef t = PyRef::steal(PyObject_Call(torchAttr("empty"), zero.get(), kw.get()));
  PyRef arr = PyRef::steal(t ? PyObject_CallMethod(t.get(), "numpy", nullptr) : nullptr);
  PyRef d = PyRef::steal(arr ? PyObject_GetAttrString(arr.get(), "dtype") : nullptr);
  if (!d) {
    PyErr_Clear();
    throw Unsupported(BreakCategory::UserError,
                      "dtype " + pyText(dt) + " has no NumPy equivalent (eager raises)");
  }
  return d;
}

/// torch dtype object of numpy dtype `d` (borrowed singleton).
PyObject *torchDtypeOfNumpy(PyObject *d) {
  PyRef kw = PyRef::steal(Py_BuildValue("{s:O}", "dtype", d));
  PyRef zero = PyRef::steal(Py_BuildValue("(i)", 0));
  PyRef arr = PyRef::steal(PyObject_Call(npAttr("empty"), zero.get(), kw.get()));
  PyRef t = PyRef::steal(arr ? PyObject_CallOneArg(torchAttr("from_numpy"), arr.get()) : nullptr);
  PyRef td = PyRef::steal(t ? PyObject_GetAttrString(t.get(), "dtype") : nullptr);
  if (!td || !dtypeFromObject(td.get())) {
    PyErr_Clear();
    throw numpyBreak("NumPy dtype " + pyText(d) + " has no kiln equivalent");
  }
  return td.get(); // torch dtypes are singletons
}

/// A NumPy stand-in for Var `v` (ones of an Ndarray's shape and dtype;
/// constants as they are); null for a Var the oracle cannot stand in for.
PyRef proxyOf(Interpreter &I, const VarP &v, int depth = 0) {
  if (v->kind == Var::Kind::Ndarray) {
    PyRef dt = numpyDtypeOf(v->self->value);
    std::vector<int64_t> shape = staticShape(I, v);
    PyRef shp = PyRef::steal(PyTuple_New((Py_ssize_t)shape.size()));
    for (size_t i = 0; i < shape.size(); ++i)
      PyTuple_SET_ITEM(shp.get(), i, PyLong_FromLongLong(shape[i]));
    PyRef arr =
        PyRef::steal(PyObject_CallFunctionObjArgs(npAttr("ones"), shp.get(), dt.get(), nullptr));
    if (arr && v->name == "scalar") {
      PyRef empty = PyRef::steal(PyTuple_New(0));
      arr = PyRef::steal(PyObject_GetItem(arr.get(), empty.get()));
    }
    return arr;
  }
  if (v->isConst())
    return v->obj;
  if ((v->kind == Var::Kind::Tuple || v->kind == Var::Kind::List) && depth < 4) {
    PyRef seq = PyRef::steal(PyList_New(0));
    for (const VarP &item : v->items) {
      PyRef p = proxyOf(I, item, depth + 1);
      if (!p)
        return PyRef();
      PyList_Append(seq.get(), p.get());
    }
    return v->kind == Var::Kind::Tuple ? PyRef::steal(PyList_AsTuple(seq.get())) : seq;
  }
  return PyRef();
}

/// Var `v` as a torch argument: an Ndarray's tensor, a NumPy scalar as
/// the Python number (torch reads them alike), containers item by item.
VarP torchArg(const VarP &v) {
  if (v->kind == Var::Kind::Ndarray)
    return v->self;
  if (v->isConst() && isNumpyScalar(v->obj.get())) {
    PyRef item = PyRef::steal(PyObject_CallMethod(v->obj.get(), "item", nullptr));
    if (!item)
      throw numpyBreak(withPythonError("a NumPy scalar"));
    return makeConst(item);
  }
  if (v->kind == Var::Kind::Tuple || v->kind == Var::Kind::List) {
    std::vector<VarP> items;
    for (const VarP &i : v->items)
      items.push_back(torchArg(i));
    return makeSeq(v->kind, items);
  }
  return v;
}

bool holdsNdarray(const VarP &v, int depth = 0) {
  if (v->kind == Var::Kind::Ndarray)
    return true;
  if ((v->kind == Var::Kind::Tuple || v->kind == Var::Kind::List) && depth < 4)
    for (const VarP &i : v->items)
      if (holdsNdarray(i, depth + 1))
        return true;
  return false;
}

/// How a NumPy function maps onto torch.
enum class Map { Elementwise, Reduction, Reshape, Transpose, Concat };
struct NumpyOp {
  std::string torch;
  Map kind;
};

/// NumPy name[:torch name] per kind (no ":": the same name).
const std::unordered_map<std::string, NumpyOp> &numpyOps() {
  static const std::unordered_map<std::string, NumpyOp> ops = [] { // no Python
    std::unordered_map<std::string, NumpyOp> m;
    const std::pair<Map, const char *> lists[] = {
        {Map::Elementwise,
         "tanh sin cos tan exp exp2 log log2 log10 log1p expm1 sqrt abs absolute:abs "
         "negative:neg sign floor ceil sinh cosh arctan:atan arcsin:asin arccos:acos "
         "arctanh:atanh square isnan isinf isfinite logical_not add subtract:sub "
         "multiply:mul divide:div true_divide:div maximum minimum power:pow arctan2:atan2 "
         "equal:eq not_equal:ne less:lt less_equal:le greater:gt greater_equal:ge "
         "logical_and logical_or where clip:clamp matmul"},
        {Map::Reduction, "sum mean prod max:amax min:amin amax amin argmax argmin all any std var"},
        {Map::Reshape, "reshape"},
        {Map::Transpose, "transpose:permute"},
        {Map::Concat, "concatenate:cat stack"}};
    for (auto &[kind, list] : lists) {
      std::string text = std::string(list) + " ", word;
      for (char c : text) {
        if (c != ' ') {
          word += c;
          continue;
        }
        size_t colon = word.find(':');
        m[word.substr(0, colon)] = {colon == std::string::npos ? word : word.substr(colon + 1),
                                    kind};
        word.clear();
      }
    }
    return m;
  }();
  return ops;
}

/// Pure NumPy functions folded at capture when all arguments are constants.
bool foldable(PyObject *fn, const std::string &name) {
  static const std::set<std::string> names = {
      "linspace", "arange", "array",       "asarray",  "zeros",     "ones",
      "full",     "eye",    "identity",    "logspace", "geomspace", "sum",
      "mean",     "prod",   "max",         "min",      "amax",      "amin",
      "clip",     "where",  "concatenate", "stack",    "reshape",   "transpose",
      "sqrt",     "exp",    "log",         "dtype",    "float32",   "float64"};
  PyObject *ufunc = npAttr("ufunc");
  if (ufunc && PyObject_IsInstance(fn, ufunc) == 1)
    return true;
  PyObject *generic = npAttr("generic");
  if (generic && PyType_Check(fn) && PyObject_IsSubclass(fn, generic) == 1)
    return true;
  PyErr_Clear();
  return names.count(name) && npAttr(name.c_str()) == fn;
}

/// NumPy's name for numpy callable `fn` ("" when it is not numpy's).
std::string numpyName(PyObject *fn, bool &randomFn) {
  randomFn = false;
  PyRef mod = PyRef::steal(PyObject_GetAttrString(fn, "__module__"));
  PyErr_Clear();
  const char *m = mod && PyUnicode_Check(mod.get()) ? PyUnicode_AsUTF8(mod.get()) : nullptr;
  PyObject *ufunc = npAttr("ufunc");
  bool isUfunc = ufunc && PyObject_IsInstance(fn, ufunc) == 1;
  if (!isUfunc && (!m || std::string(m).rfind("numpy", 0) != 0))
    return "";
  randomFn = m && std::string(m).rfind("numpy.random", 0) == 0;
  PyRef n = PyRef::steal(PyObject_GetAttrString(fn, "__name__"));
  PyErr_Clear();
  return n && PyUnicode_Check(n.get()) ? PyUnicode_AsUTF8(n.get()) : "?";
}

/// Runs the oracle: `fn(*args, **kwargs)` on stand-ins, with NumPy's
/// floating-point warnings off; a Python error is eager's: a user-error break.
PyRef runOracle(PyObject *fn, const std::vector<PyRef> &args,
                const std::map<std::string, PyRef> &kwargs, const std::string &what) {
  PyRef tuple = PyRef::steal(PyTuple_New((Py_ssize_t)args.size()));
  for (size_t i = 0; i < args.size(); ++i) {
    Py_INCREF(args[i].get());
    PyTuple_SET_ITEM(tuple.get(), i, args[i].get());
  }
  PyRef kw = PyRef::steal(PyDict_New());
  for (auto &[k, v] : kwargs)
    PyDict_SetItemString(kw.get(), k.c_str(), v.get());
  PyRef errKw = PyRef::steal(Py_BuildValue("{s:s}", "all", "ignore"));
  PyRef errstate = PyRef::steal(
      PyObject_Call(npAttr("errstate"), PyRef::steal(PyTuple_New(0)).get(), errKw.get()));
  PyRef entered =
      PyRef::steal(errstate ? PyObject_CallMethod(errstate.get(), "__enter__", nullptr) : nullptr);
  PyRef r = PyRef::steal(PyObject_Call(fn, tuple.get(), kw.get()));
  std::string error = r ? "" : takePythonErrorText();
  if (entered)
    PyRef::steal(PyObject_CallMethod(errstate.get(), "__exit__", "OOO", Py_None, Py_None, Py_None));
  PyErr_Clear();
  if (!r)
    throw Unsupported(BreakCategory::UserError, what + " raises in NumPy: " + error);
  return r;
}

} // namespace

bool NumpyInterop::readSymbolicSize(Interpreter &I) { return I.out_.readSymbolicSize = true; }

VarP NumpyInterop::fromSource(Interpreter &I, PyObject *value, int source) {
  if (!numpyIfLoaded() || !isNdarray(value)) {
    if (VarP s = I.dynamicNumberRead(value, source)) // an int argument made symbolic
      return s;
    VarP v = makeConst(PyRef::borrow(value), source);
    I.guardValue(v);
    return v;
  }
  I.guardType(source, value);
  PyRef writeable = PyRef::steal(PyObject_GetAttrString(value, "flags"));
  PyRef w =
      PyRef::steal(writeable ? PyObject_GetAttrString(writeable.get(), "writeable") : nullptr);
  PyErr_Clear();
  if (!w || w.get() != Py_True)
    throw numpyBreak("a read-only NumPy array input");
  PyRef t = PyRef::steal(PyObject_CallOneArg(torchAttr("from_numpy"), value));
  if (!t)
    throw numpyBreak(withPythonError("a NumPy array input torch cannot share"));
  VarP tensor =
      I.fromSource(t.get(), I.out_.sources.add(Source::Kind::FromNumpy, source, 0, nullptr), false);
  return ndarrayVar(tensor, false);
}

VarP NumpyInterop::toNumpy(Interpreter &I, const VarP &t, std::vector<VarP> &args,
                           std::map<std::string, VarP> &kwargs) {
  if (!args.empty() || !kwargs.empty())
    throw numpyBreak("Tensor.numpy() with arguments");
  if (t->vmapLevels > 0 || I.graphDevice_ != TensorMeta::kCpuDevice)
    throw Unsupported(BreakCategory::UserError,
                      "Tensor.numpy() of a non-CPU tensor (eager raises)");
  VarP rg = I.tensorRequiresGrad(t);
  if (rg->isConst() && rg->obj.get() == Py_True)
    throw Unsupported(BreakCategory::UserError,
                      "Tensor.numpy() of a tensor that requires grad (eager raises)");
  numpyDtypeOf(t->value); // bfloat16 ...: eager raises
  return ndarrayVar(t, false);
}

VarP NumpyInterop::constant(Interpreter &I, PyObject *arr) {
  PyRef td =
      PyRef::borrow(torchDtypeOfNumpy(PyRef::steal(PyObject_GetAttrString(arr, "dtype")).get()));
  PyRef size = PyRef::steal(PyObject_GetAttrString(arr, "size"));
  if (!size || PyLong_AsLongLong(size.get()) > (1 << 16))
    throw numpyBreak("a constant NumPy array of more than 65536 elements");
  PyRef flat = PyRef::steal(PyObject_CallMethod(arr, "ravel", nullptr));
  PyRef f64 =
      PyRef::steal(flat ? PyObject_CallMethod(flat.get(), "astype", "s", "float64") : nullptr);
  PyRef back = PyRef::steal(
      f64 ? PyObject_CallMethod(f64.get(), "astype", "O",
                                PyRef::steal(PyObject_GetAttrString(arr, "dtype")).get())
          : nullptr);
  PyRef same = PyRef::steal(
      back ? PyObject_CallFunctionObjArgs(npAttr("array_equal"), back.get(), flat.get(), nullptr)
           : nullptr);
  PyRef list = PyRef::steal(f64 ? PyObject_CallMethod(f64.get(), "tolist", nullptr) : nullptr);
  PyRef shape = PyRef::steal(PyObject_GetAttrString(arr, "shape"));
  if (!list || !shape || !same) {
    PyErr_Clear();
    throw numpyBreak("a constant NumPy array kiln cannot embed");
  }
  if (same.get() != Py_True)
    throw numpyBreak("a constant NumPy array whose values a float64 does not hold exactly");
  std::vector<double> values;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list.get()); ++i)
    values.push_back(PyFloat_AsDouble(PyList_GET_ITEM(list.get(), i)));
  std::vector<int64_t> dims;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape.get()); ++i)
    dims.push_back(PyLong_AsLongLong(PyTuple_GET_ITEM(shape.get(), i)));
  Emit e(I);
  return ndarrayVar(makeTensor(e.dense(dims, *dtypeFromObject(td.get()), values)), false);
}

namespace {
/// One NumPy operation to run: the oracle call (`oracle` on `npArgs`) and
/// the torch op (`torchName`, "Tensor.x" for a method of the first
/// argument) on `tArgs`/`tKwargs`; `castInputs`: floating results compute
/// at the result's dtype.
struct NumpyStep {
  PyObject *oracle;
  std::vector<VarP> npArgs;
  std::map<std::string, VarP> npKwargs;
  std::string torchName;
  std::vector<VarP> tArgs;
  std::map<std::string, VarP> tKwargs;
  bool castInputs = true;
  std::string what;
};
} // namespace

static VarP applyNumpyStep(Interpreter &I, NumpyStep &s,
                           const std::function<VarP(const VarP &, PyObject *)> &cast,
                           const std::function<VarP(NumpyStep &)> &run) {
  std::vector<PyRef> proxies;
  for (const VarP &a : s.npArgs) {
    PyRef p = proxyOf(I, a);
    if (!p)
      throw numpyBreak(s.what + " with an argument that is not an array or a constant");
    proxies.push_back(p);
  }
  std::map<std::string, PyRef> kw;
  for (auto &[k, v] : s.npKwargs) {
    PyRef p = proxyOf(I, v);
    if (!p)
      throw numpyBreak(s.what + " with an argument that is not an array or a constant");
    kw[k] = p;
  }
  PyRef r = runOracle(s.oracle, proxies, kw, s.what);
  bool array = isNdarray(r.get());
  if (!array && !isNumpyScalar(r.get()))
    throw numpyBreak(s.what + " returns a " + std::string(Py_TYPE(r.get())->tp_name));
  PyRef npDtype = PyRef::steal(PyObject_GetAttrString(r.get(), "dtype"));
  PyObject *td = torchDtypeOfNumpy(npDtype.get());
  DType want = *dtypeFromObject(td);
  bool floating = want == DType::F64 || want == DType::F32 || want == DType::F16;
  if (s.castInputs && floating)
    for (VarP &a : s.tArgs) {
      if (a->isTensor() && dtypeOfValue(a->value) != want)
        a = cast(a, td);
      if (a->kind == Var::Kind::Tuple || a->kind == Var::Kind::List) { // concatenate's arrays
        std::vector<VarP> items = a->items;
        for (VarP &i : items)
          if (i->isTensor() && dtypeOfValue(i->value) != want)
            i = cast(i, td);
        a = makeSeq(a->kind, items);
      }
    }
  VarP t = run(s);
  if (!t || !t->isTensor())
    throw numpyBreak(s.what + " has no tensor mapping here");
  PyRef shape = PyRef::steal(PyObject_GetAttrString(r.get(), "shape"));
  auto type = llvm::cast<mlir::RankedTensorType>(t->value.getType());
  bool sameShape = shape && PyTuple_GET_SIZE(shape.get()) == type.getRank();
  for (int64_t i = 0; sameShape && i < type.getRank(); ++i)
    sameShape = PyLong_AsLongLong(PyTuple_GET_ITEM(shape.get(), i)) == type.getDimSize(i);
  if (!sameShape)
    throw numpyBreak(s.what + ": the torch op's shape differs from NumPy's");
  if (dtypeOfValue(t->value) != want)
    t = cast(t, td);
  (void)I;
  return ndarrayVar(t, !array);
}

/// Splits reduction arguments `(a, axis=None, ..., keepdims=False, ddof=0)`
/// into torch's (dim=, keepdim=, correction=).
static void reductionArgs(NumpyStep &s, const std::string &np, size_t first,
                          std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  VarP axis = args.size() > first ? args[first] : nullptr;
  if (args.size() > first + 1)
    throw numpyBreak("np." + np + " with more than an axis positionally");
  for (auto &[k, v] : kwargs) {
    if (k == "axis")
      axis = v;
    else if (k == "keepdims" && v->isConst())
      s.tKwargs["keepdim"] = v;
    else if (k == "ddof" && (np == "std" || np == "var"))
      s.tKwargs["correction"] = v;
    else
      throw numpyBreak("np." + np + " with argument " + k);
  }
  if (axis && !(axis->isConst() && axis->obj.get() == Py_None))
    s.tKwargs["dim"] = axis;
  else if (s.tKwargs.count("keepdim") && (np == "argmax" || np == "argmin"))
    throw numpyBreak("np." + np + " with keepdims and no axis");
  if ((np == "std" || np == "var") && !s.tKwargs.count("correction"))
    s.tKwargs["correction"] = makeConst(PyRef::steal(PyLong_FromLong(0)));
  if (!s.tKwargs.count("dim") && (s.torchName == "amax" || s.torchName == "amin")) {
    int64_t rank = llvm::cast<mlir::RankedTensorType>(s.tArgs[0]->value.getType()).getRank();
    PyRef dims = PyRef::steal(PyTuple_New(rank));
    for (int64_t i = 0; i < rank; ++i)
      PyTuple_SET_ITEM(dims.get(), i, PyLong_FromLongLong(i));
    s.tKwargs["dim"] = makeConst(dims);
  }
}

VarP NumpyInterop::mapped(Interpreter &I, PyObject *oracle, const std::string &np,
                          std::vector<VarP> &args, std::map<std::string, VarP> &kwargs,
                          bool method) {
  // `method`: args[0] is the array (the oracle is its stand-in's bound method).
  auto it = numpyOps().find(np);
  std::string what = method ? "ndarray." + np : "np." + np;
  if (it == numpyOps().end())
    throw numpyBreak(what + " is not mapped to torch ops");
  NumpyStep s;
  s.oracle = oracle;
  s.what = what;
  s.npArgs.assign(args.begin() + (method ? 1 : 0), args.end());
  s.npKwargs = kwargs;
  s.torchName = it->second.torch;
  for (const VarP &a : args)
    s.tArgs.push_back(torchArg(a));
  size_t first = 1; // the first argument after the array
  switch (it->second.kind) {
  case Map::Elementwise:
    if (!kwargs.empty())
      throw numpyBreak(what + " with keyword arguments (out=, dtype=, where= ...)");
    break;
  case Map::Reduction:
    reductionArgs(s, np, first, s.tArgs, kwargs);
    s.tArgs.resize(1);
    break;
  case Map::Reshape: {
    if (!kwargs.empty() || s.tArgs.size() < 2)
      throw numpyBreak(what + " with keyword arguments");
    std::vector<VarP> dims(s.tArgs.begin() + 1, s.tArgs.end());
    s.tArgs = {s.tArgs[0], dims.size() == 1 ? dims[0] : makeSeq(Var::Kind::Tuple, dims)};
    break;
  }
  case Map::Transpose: {
    if (!kwargs.empty())
      throw numpyBreak(what + " with keyword arguments");
    std::vector<VarP> dims(s.tArgs.begin() + 1, s.tArgs.end());
    if (dims.size() == 1 && !(dims[0]->isConst() && dims[0]->obj.get() == Py_None))
      dims = {dims[0]};
    else if (dims.empty() || dims.size() == 1) { // reversed axes
      int64_t rank = llvm::cast<mlir::RankedTensorType>(s.tArgs[0]->value.getType()).getRank();
      PyRef rev = PyRef::steal(PyTuple_New(rank));
      for (int64_t i = 0; i < rank; ++i)
        PyTuple_SET_ITEM(rev.get(), i, PyLong_FromLongLong(rank - 1 - i));
      dims = {makeConst(rev)};
    } else
      dims = {makeSeq(Var::Kind::Tuple, dims)};
    s.tArgs = {s.tArgs[0], dims[0]};
    break;
  }
  case Map::Concat: {
    if (method || args.empty() || args.size() > 2 ||
        kwargs.size() > (kwargs.count("axis") ? 1u : 0u))
      throw numpyBreak(what + " with arguments other than (arrays, axis)");
    VarP axis = args.size() > 1 ? args[1] : kwargs.count("axis") ? kwargs["axis"] : nullptr;
    if (axis && !(axis->isConst() && PyLong_Check(axis->obj.get())))
      throw numpyBreak(what + " with an axis that is not an int");
    VarP seq = s.tArgs[0];
    if (seq->kind != Var::Kind::Tuple && seq->kind != Var::Kind::List)
      throw numpyBreak(what + " of something other than a tuple/list of arrays");
    s.tArgs = {seq};
    if (axis)
      s.tKwargs["dim"] = axis;
    break;
  }
  }
  if (it->second.kind != Map::Concat)
    for (const VarP &a : s.tArgs)
      if (a->kind != Var::Kind::Tensor && !a->isConst() && !(seqAsConst(a)))
        throw numpyBreak(what + " with an argument that is neither an array nor a constant");
  if (s.tArgs.empty() || (it->second.kind != Map::Concat && !s.tArgs[0]->isTensor()))
    throw numpyBreak(what + " whose first argument is not an array");
  auto cast = [&I](const VarP &t, PyObject *td) {
    std::vector<VarP> a{makeConst(PyRef::borrow(td))};
    std::map<std::string, VarP> none;
    return I.callTensorMethod(t, "to", a, none);
  };
  auto run = [&I](NumpyStep &st) -> VarP {
    PyObject *fn = torchAttr(st.torchName.c_str());
    if (!fn)
      return nullptr;
    return I.callTorchFunction(fn, st.tArgs, st.tKwargs);
  };
  return applyNumpyStep(I, s, cast, run);
}

VarP NumpyInterop::call(Interpreter &I, PyObject *fn, std::vector<VarP> &args,
                        std::map<std::string, VarP> &kwargs) {
  if (!numpyIfLoaded())
    return nullptr;
  bool any = false;
  for (const VarP &a : args)
    any |= holdsNdarray(a);
  for (auto &[k, v] : kwargs)
    any |= holdsNdarray(v);
  for (const char *conv : {"from_numpy", "as_tensor", "asarray", "tensor"}) {
    if (fn != torchAttr(conv) || args.size() != 1)
      continue;
    VarP a = args[0];
    bool constArray = a->isConst() && isNdarray(a->obj.get());
    if (a->kind != Var::Kind::Ndarray && !constArray)
      return nullptr;
    VarP dtype = kwargs.count("dtype") ? kwargs["dtype"] : nullptr;
    if (kwargs.size() > (dtype ? 1u : 0u) || (std::string(conv) == "from_numpy" && dtype))
      throw numpyBreak(std::string("torch.") + conv + " of a NumPy array with keyword arguments");
    if (constArray)
      a = constant(I, a->obj.get());
    std::vector<VarP> none;
    std::map<std::string, VarP> nokw;
    VarP t = a->self;                  // shares the array's memory: the same Var
    if (std::string(conv) == "tensor") // a copy
      t = I.callTensorMethod(t, "clone", none, nokw);
    if (dtype && !(dtype->isConst() && dtype->obj.get() == Py_None)) {
      std::vector<VarP> to{dtype}; // the same dtype: shared; another: a copy, as eager
      t = I.callTensorMethod(t, "to", to, nokw);
    }
    return t;
  }
  bool randomFn = false;
  std::string np = numpyName(fn, randomFn);
  if (np.empty()) {
    // Python code (inlined), classes and modules take arrays like any value;
    // a torch or builtin callable given one is not modeled.
    if (any && !PyFunction_Check(fn) && !PyMethod_Check(fn) && !PyType_Check(fn) && !isModule(fn))
      throw numpyBreak(pyText(fn) + " called with a NumPy array");
    return nullptr;
  }
  if (randomFn)
    throw Unsupported(BreakCategory::Random, "np.random." + np + " (NumPy's generator state)");
  if (any)
    return mapped(I, fn, np, args, kwargs, false);
  // All constants: fold the pure ones at capture.
  std::vector<PyRef> consts;
  for (const VarP &a : args) {
    PyRef c = a->isConst() ? a->obj : seqAsConst(a);
    if (!c)
      throw numpyBreak("np." + np + " of a value known only when the graph runs");
    consts.push_back(c);
  }
  std::map<std::string, PyRef> kc;
  for (auto &[k, v] : kwargs) {
    PyRef c = v->isConst() ? v->obj : seqAsConst(v);
    if (!c || k == "out")
      throw numpyBreak("np." + np + " with argument " + k + " known only when the graph runs");
    kc[k] = c;
  }
  if (!foldable(fn, np))
    throw numpyBreak("np." + np + " is not supported");
  PyRef r = runOracle(fn, consts, kc, "np." + np);
  if (isNdarray(r.get()))
    return constant(I, r.get());
  return makeConst(r);
}

VarP NumpyInterop::attribute(Interpreter &I, const VarP &a, const std::string &name) {
  if (a->isTensor() && name != "numpy")
    return I.tensorAttribute(a, name);
  if (a->isTensor()) {
    auto m = std::make_shared<Var>();
    m->kind = Var::Kind::TensorMethod;
    m->self = a;
    m->name = name;
    return m;
  }
  static const std::set<std::string> methods = {
      "sum", "mean", "prod",    "max",       "min",    "argmax", "argmin",  "all",   "any",
      "std", "var",  "reshape", "transpose", "astype", "copy",   "flatten", "ravel", "clip"};
  std::vector<int64_t> shape = staticShape(I, a);
  if (name == "shape" || name == "ndim" || name == "size") {
    if (a->name == "scalar" && name == "shape")
      return makeConst(PyRef::steal(PyTuple_New(0)));
    PyRef shp = PyRef::steal(PyTuple_New((Py_ssize_t)shape.size()));
    int64_t n = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
      PyTuple_SET_ITEM(shp.get(), i, PyLong_FromLongLong(shape[i]));
      n *= shape[i];
    }
    if (name == "shape")
      return makeConst(shp);
    return makeConst(PyRef::steal(PyLong_FromLongLong(name == "ndim" ? (int64_t)shape.size() : n)));
  }
  if (name == "dtype")
    return makeConst(numpyDtypeOf(a->self->value));
  if (name == "T") {
    std::vector<VarP> args{a};
    std::map<std::string, VarP> none;
    return method(I, a, "transpose", args, none);
  }
  if (!methods.count(name))
    throw numpyBreak("ndarray." + name + " is not supported");
  auto m = std::make_shared<Var>();
  m->kind = Var::Kind::TensorMethod;
  m->self = a;
  m->name = name;
  return m;
}

VarP NumpyInterop::method(Interpreter &I, const VarP &a, const std::string &name,
                          std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  std::vector<VarP> all{a};
  if (!(name == "transpose" && !args.empty() && args[0] == a))
    all.insert(all.end(), args.begin(), args.end());
  else
    all = args;
  PyRef proxy = proxyOf(I, a);
  PyRef bound = PyRef::steal(proxy ? PyObject_GetAttrString(proxy.get(), name.c_str()) : nullptr);
  if (!bound) {
    PyErr_Clear();
    throw numpyBreak("ndarray." + name + " is not supported");
  }
  if (name == "astype" || name == "copy" || name == "flatten" || name == "ravel") {
    // A copy (ravel: a view where eager can, a copy here: break unless
    // nothing can tell, i.e. contiguous data is flattened by reshape).
    if (name == "astype" && (all.size() != 2 || !kwargs.empty()))
      throw numpyBreak("ndarray.astype with arguments other than the dtype");
    if (name != "astype" && (all.size() != 1 || !kwargs.empty()))
      throw numpyBreak("ndarray." + name + " with arguments");
    if (name == "ravel")
      throw numpyBreak("ndarray.ravel (a view or a copy depending on the layout)");
    NumpyStep s;
    s.oracle = bound.get();
    s.what = "ndarray." + name;
    s.npArgs.assign(all.begin() + 1, all.end());
    s.castInputs = false;
    s.tArgs = {a->self};
    auto cast = [&I](const VarP &t, PyObject *td) {
      std::vector<VarP> c{makeConst(PyRef::borrow(td))};
      std::map<std::string, VarP> none;
      return I.callTensorMethod(t, "to", c, none);
    };
    bool flatten = name == "flatten";
    auto run = [&I, flatten](NumpyStep &st) -> VarP {
      std::vector<VarP> none;
      std::map<std::string, VarP> nokw;
      VarP c = I.callTensorMethod(st.tArgs[0], "clone", none, nokw);
      if (!flatten)
        return c;
      std::vector<VarP> dims{makeConst(PyRef::steal(PyLong_FromLong(-1)))};
      return I.callTensorMethod(c, "reshape", dims, nokw);
    };
    return applyNumpyStep(I, s, cast, run);
  }
  if (name == "reshape" || name == "transpose") // views in NumPy: kept only if nothing writes
    a->self->viewed = true;
  std::string np = name == "max" ? "max" : name;
  return mapped(I, bound.get(), np, all, kwargs, true);
}

VarP NumpyInterop::binary(Interpreter &I, const std::string &sym, const VarP &lhs,
                          const VarP &rhs) {
  bool l = lhs->kind == Var::Kind::Ndarray, r = rhs && rhs->kind == Var::Kind::Ndarray;
  if (!l && !r) {
    // A tensor with a NumPy scalar: torch reads it as the Python number.
    if (!rhs || !numpyIfLoaded() || !(lhs->isTensor() || rhs->isTensor()))
      return nullptr;
    const VarP &other = lhs->isTensor() ? rhs : lhs;
    if (!other->isConst() || !isNumpyScalar(other->obj.get()))
      return nullptr;
    VarP num = torchArg(other);
    return I.tensorBinary(sym, lhs->isTensor() ? lhs : num, lhs->isTensor() ? num : rhs);
  }
  static const std::unordered_map<std::string, std::pair<const char *, const char *>> ops = {
      {"+", {"add", "add"}},
      {"-", {"sub", "sub"}},
      {"*", {"mul", "mul"}},
      {"/", {"truediv", "div"}},
      {"**", {"pow", "pow"}},
      {"@", {"matmul", "matmul"}},
      {"<", {"lt", "lt"}},
      {"<=", {"le", "le"}},
      {">", {"gt", "gt"}},
      {">=", {"ge", "ge"}},
      {"==", {"eq", "eq"}},
      {"!=", {"ne", "ne"}},
      {"&", {"and_", "bitwise_and"}},
      {"|", {"or_", "bitwise_or"}},
      {"^", {"xor", "bitwise_xor"}},
      {"neg", {"neg", "neg"}},
      {"~", {"invert", "bitwise_not"}}};
  std::string op = sym;
  if (op.size() > 1 && op.back() == '=' && op != "==" && op != "!=" && op != "<=" && op != ">=")
    throw numpyBreak("in-place operator " + sym +
                     " on a NumPy array (it writes memory a "
                     "tensor may share)");
  auto it = ops.find(op);
  if (it == ops.end()) // // and % differ from torch on integer division by zero
    throw numpyBreak("operator " + sym + " on NumPy arrays");
  const VarP &other = l ? rhs : lhs;
  if (other && other->kind != Var::Kind::Ndarray && !other->isConst())
    throw numpyBreak("operator " + sym + " between a NumPy array and a " +
                     (other->isTensor() ? "tensor" : "value known only when the graph runs"));
  PyRef opmod = PyRef::steal(PyImport_ImportModule("operator"));
  PyRef fn = PyRef::steal(PyObject_GetAttrString(opmod.get(), it->second.first));
  NumpyStep s;
  s.oracle = fn.get();
  s.what = "operator " + sym + " on NumPy arrays";
  s.npArgs = {lhs};
  if (rhs)
    s.npArgs.push_back(rhs);
  s.torchName = it->second.second;
  for (const VarP &a : s.npArgs)
    s.tArgs.push_back(torchArg(a));
  auto cast = [&I](const VarP &t, PyObject *td) {
    std::vector<VarP> c{makeConst(PyRef::borrow(td))};
    std::map<std::string, VarP> none;
    return I.callTensorMethod(t, "to", c, none);
  };
  auto run = [&I, op](NumpyStep &st) -> VarP {
    if (st.tArgs.size() == 2)
      return I.tensorBinary(op, st.tArgs[0], st.tArgs[1]);
    std::vector<VarP> none;
    std::map<std::string, VarP> nokw;
    return I.callTensorMethod(st.tArgs[0], st.torchName, none, nokw);
  };
  return applyNumpyStep(I, s, cast, run);
}

} // namespace kiln
