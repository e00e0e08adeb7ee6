//===- PythonBuiltins.cpp - builtins answered for abstract values ---------===//
// SPDX-License-Identifier: Apache-2.0
//
// Calls of Python builtins during capture: callBuiltin (len, isinstance,
// getattr/hasattr, range/enumerate/zip/sorted, min/max/sum/any/all, pure
// builtins evaluated on constants, ...) and callIntrospection, whose answer
// depends only on the kind of a value, not on tensor data: `callable(x)` of
// a function made in the frame, a tensor, a container built here.
//===----------------------------------------------------------------------===//
#include "capture/interp/CaptureTimeCalls.h"
#include "capture/interp/Interp.h"
#include "capture/interp/PlainObjects.h"
#include "GilOnce.h"
#include "capture/values/IdTokens.h"

#include <functional>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace kiln {
namespace {

/// Pure builtins that may be evaluated on constants at capture time.
bool isPureBuiltin(const std::string &name) {
  static const std::unordered_set<std::string> pure = {
      "len",      "isinstance", "issubclass", "range",   "tuple",   "list",      "int",
      "float",    "bool",       "min",        "max",     "abs",     "round",     "sum",
      "any",      "all",        "str",        "hasattr", "getattr", "enumerate", "zip",
      "reversed", "sorted",     "divmod",     "pow",     "type"};
  return pure.count(name) > 0;
}

/// The exact Python type of a value built in the frame that is not a tensor
/// (borrowed; null when unknown): a container built here or a ModelOutput
/// record, a user object or namedtuple (UserObjects.cpp), a Python number
/// read from a tensor, a bound method (`module.weight()` of torch.ao's and
/// kiln.quant's quantized layers: `isinstance(layer.weight, torch.Tensor)`).
PyObject *containerType(const VarP &v) {
  switch (v->kind) {
  case Var::Kind::Dict:
    return v->obj        ? v->obj.get()
           : v->dictType ? v->dictType.get() // OrderedDict/defaultdict (Collections.cpp)
                         : (PyObject *)&PyDict_Type;
  case Var::Kind::Object:
  case Var::Kind::Scalar:
    return v->obj.get();
  case Var::Kind::Tuple:
    return v->obj ? v->obj.get() : (PyObject *)&PyTuple_Type;
  case Var::Kind::List:
    return (PyObject *)&PyList_Type;
  case Var::Kind::SymInt: // a symbolic size or int argument
    return (PyObject *)&PyLong_Type;
  case Var::Kind::BoundMethod: // a Python function bound to its receiver
    return (PyObject *)&PyMethod_Type;
  default:
    return nullptr;
  }
}

/// Whether ops on the tensors `inputs` return plain torch.Tensors: each is
/// one, or of a subclass whose __torch_function__ is disabled (Parameter);
/// other subclasses keep their type through Tensor.__torch_function__.
bool opsReturnPlainTensors(const std::vector<PyRef> &inputs) {
  PyRef tensor = PyRef::steal(PyObject_GetAttrString(torchModule(), "Tensor"));
  PyRef c = PyRef::steal(PyObject_GetAttrString(torchModule(), "_C"));
  PyRef disabled =
      PyRef::steal(c ? PyObject_GetAttrString(c.get(), "_disabled_torch_function_impl") : nullptr);
  PyErr_Clear();
  for (const PyRef &o : inputs) {
    auto *t = reinterpret_cast<PyObject *>(Py_TYPE(o.get()));
    if (!isTensor(o.get()) || t == tensor.get())
      continue;
    PyRef fn = PyRef::steal(PyObject_GetAttrString(t, "__torch_function__"));
    PyErr_Clear();
    if (!fn || !disabled || fn.get() != disabled.get())
      return false;
  }
  return static_cast<bool>(tensor);
}

/// `type(v)` of a value that is not a constant (null: not answered here): a
/// graph input tensor's exact type (guarded with its metadata), torch.Tensor
/// for a tensor computed in the graph from plain tensors, containerType
/// otherwise.
VarP typeOf(const VarP &v, const std::vector<PyRef> &inputObjects) {
  if (v->isConst() || v->kind == Var::Kind::Null)
    return nullptr;
  if (v->isTensor()) {
    if (v->inputIndex >= 0 && v->inputIndex < static_cast<int>(inputObjects.size()))
      return makeConst(
          PyRef::borrow(reinterpret_cast<PyObject *>(Py_TYPE(inputObjects[v->inputIndex].get()))));
    if (!opsReturnPlainTensors(inputObjects))
      return nullptr;
    return makeConst(PyRef::steal(PyObject_GetAttrString(torchModule(), "Tensor")));
  }
  PyObject *type = containerType(v);
  return type ? makeConst(PyRef::borrow(type)) : nullptr;
}

/// The id() tokens of one capture, (Var, token) pairs, in a capsule that
/// the capture keeps alive (IdTokens.h).
using IdTable = std::vector<std::pair<VarP, PyRef>>;
constexpr const char *kIdTableName = "kiln.id_tokens";

/// `id(v)`: the real id of a guarded object read from the frame (through
/// `guardSourced`), None/True/False's own; for a value that is a new
/// object per eager call a token (IdTokens.h). Anything else breaks.
VarP idOf(const VarP &v, std::vector<PyRef> &keepAlive,
          const std::function<void(const VarP &)> &guardSourced) {
  if (v->isConst()) {
    PyObject *o = v->obj.get();
    bool singleton = o == Py_None || o == Py_True || o == Py_False || o == Py_Ellipsis;
    bool objectIdentity = v->source >= 0 && !PyLong_Check(o) && !PyFloat_Check(o) &&
                          !PyUnicode_Check(o) && !PyBytes_Check(o) && !PyTuple_Check(o) &&
                          !PyComplex_Check(o) && !isTensor(o);
    if (!singleton && !objectIdentity)
      throw Unsupported(BreakCategory::PythonBuiltin,
                        "id() of a constant whose identity kiln does not know per call");
    if (!singleton)
      guardSourced(v);
    return makeConst(PyRef::steal(PyLong_FromVoidPtr(o)));
  }
  bool perCall = v->isTensor() || v->kind == Var::Kind::List || v->kind == Var::Kind::Dict ||
                 v->kind == Var::Kind::Tuple || v->kind == Var::Kind::Object ||
                 v->kind == Var::Kind::Function;
  if (!perCall || (v->source >= 0 && !v->isTensor()))
    throw Unsupported(BreakCategory::PythonBuiltin, "id() of a value kiln does not track");
  if (!idTokenType())
    throw Unsupported(BreakCategory::Other, "cannot make an id() token");
  IdTable *table = nullptr;
  for (const PyRef &k : keepAlive)
    if (PyCapsule_IsValid(k.get(), kIdTableName))
      table = static_cast<IdTable *>(PyCapsule_GetPointer(k.get(), kIdTableName));
  if (!table) {
    table = new IdTable();
    PyRef cap = PyRef::steal(PyCapsule_New(table, kIdTableName, [](PyObject *c) {
      delete static_cast<IdTable *>(PyCapsule_GetPointer(c, kIdTableName));
    }));
    if (!cap) {
      delete table;
      PyErr_Clear();
      throw Unsupported(BreakCategory::Other, "cannot make an id() token table");
    }
    keepAlive.push_back(cap);
  }
  for (const auto &[w, token] : *table) {
    const char *why = "";
    int same = v->isTensor() && w->isTensor() ? sameTensorIdentity(v, w, &why) : v == w;
    if (same < 0)
      throw Unsupported(BreakCategory::PythonBuiltin, std::string("id() of ") + why);
    if (same)
      return makeConst(token);
  }
  PyRef token = PyRef::steal(PyObject_CallNoArgs(idTokenType()));
  if (!token) {
    PyErr_Clear();
    throw Unsupported(BreakCategory::Other, "cannot make an id() token");
  }
  table->emplace_back(v, token);
  return makeConst(token);
}

} // namespace

void Interpreter::guardCallableClass(const VarP &v) {
  // callable(obj) of a caller's plain object follows its class's __call__,
  // which the class can gain or lose after compiling (its type guard alone
  // kept the answer): the lookup is guarded, or its absence from the dict of
  // every Python class of the MRO.
  PyObject *o = v->obj.get();
  int src = sourceOf(v);
  if (src < 0 || !isPlainObject(o))
    return;
  static PyOnce callNameOnce;
  PyObject *callName = callNameOnce.get([] { return PyUnicode_InternFromString("__call__"); });
  if (PyObject *own = _PyType_Lookup(Py_TYPE(o), callName))
    return guardClassAttr(v, callName, own, /*notShadowed=*/false);
  guardType(src, o);
  PyObject *mro = Py_TYPE(o)->tp_mro;
  for (Py_ssize_t i = 0; mro && i < PyTuple_GET_SIZE(mro); ++i) {
    PyObject *cls = PyTuple_GET_ITEM(mro, i);
    if (!PyType_HasFeature(reinterpret_cast<PyTypeObject *>(cls), Py_TPFLAGS_HEAPTYPE))
      continue; // a builtin class cannot gain attributes
    int clsSrc = out_.sources.add(Source::Kind::Constant, -1, 0, cls);
    guardNotInDict(out_.sources.add(Source::Kind::ObjDict, clsSrc, 0, nullptr), callName);
  }
}

VarP Interpreter::callIntrospection(PyObject *fn, const std::string &name, std::vector<VarP> &args,
                                    std::map<std::string, VarP> &kwargs) {
  if (fn != PyDict_GetItemString(PyEval_GetBuiltins(), "callable") || args.size() != 1 ||
      !kwargs.empty())
    return nullptr;
  (void)name;
  const VarP &v = args[0];
  bool result = false;
  switch (v->kind) {
  case Var::Kind::Function:
  case Var::Kind::BoundMethod:
  case Var::Kind::TensorMethod:
  case Var::Kind::ListMethod:
    result = true;
    break;
  case Var::Kind::Const:
    result = PyCallable_Check(v->obj.get());
    guardCallableClass(v);
    break;
  case Var::Kind::Tensor:
  case Var::Kind::SymInt:
  case Var::Kind::Scalar:
  case Var::Kind::Tuple:
  case Var::Kind::List:
  case Var::Kind::Iter:
    result = false;
    break;
  case Var::Kind::Object: { // a user object: its class defines __call__
    static PyOnce callNameOnce;
    PyObject *callName = callNameOnce.get([] { return PyUnicode_InternFromString("__call__"); });
    result = _PyType_Lookup(reinterpret_cast<PyTypeObject *>(v->obj.get()), callName) != nullptr;
    break;
  }
  case Var::Kind::Dict: { // a dict, or a ModelOutput record (`obj`: its class)
    PyObject *cls = v->obj ? v->obj.get() : reinterpret_cast<PyObject *>(&PyDict_Type);
    result = PyType_Check(cls) && reinterpret_cast<PyTypeObject *>(cls)->tp_call != nullptr;
    break;
  }
  default:
    throw Unsupported(BreakCategory::PythonBuiltin, "callable() of a value kiln does not track");
  }
  return makeConst(PyRef::borrow(result ? Py_True : Py_False));
}

VarP Interpreter::callAtCapture(PyObject *fn, std::vector<VarP> &args,
                                std::map<std::string, VarP> &kwargs) {
  static PyOnce signatureOnce;
  PyObject *signature = signatureOnce.get([] {
    PyRef m = PyRef::steal(PyImport_ImportModule("inspect"));
    PyObject *f = m ? PyObject_GetAttrString(m.get(), "signature") : nullptr;
    PyErr_Clear();
    return f; // leaked: process lifetime
  });
  if (!fn || fn != signature)
    return nullptr;
  // inspect.signature(f) depends only on f's code, defaults and
  // annotations: evaluated now on the function the capture resolved (a
  // constant, a method bound to a constant receiver, or a function made
  // here), like Dynamo. The function itself is already guarded by how it
  // was reached (identity of its source, or of its receiver).
  if (args.size() != 1 || !kwargs.empty())
    throw Unsupported(BreakCategory::PythonBuiltin, "inspect.signature with options");
  const VarP &f = args[0];
  PyRef target;
  if (f->kind == Var::Kind::Function && (f->fnDefaults || f->fnKwDefaults))
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "inspect.signature of a function whose defaults are values of the frame");
  if (f->kind == Var::Kind::Const || f->kind == Var::Kind::Function) {
    target = f->obj;
  } else if (f->kind == Var::Kind::BoundMethod && f->self && f->self->isConst()) {
    target = PyRef::steal(PyMethod_New(f->obj.get(), f->self->obj.get()));
  } else {
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "inspect.signature of a value kiln does not track");
  }
  PyRef sig = target ? PyRef::steal(PyObject_CallOneArg(signature, target.get())) : PyRef();
  if (!sig)
    throw Unsupported(BreakCategory::UserError,
                      withPythonError("inspect.signature raised at capture time"),
                      hint::kRaisesInEager);
  keepAlive_.push_back(sig);
  return makeConst(sig);
}

/// Whether `fn` (named `name`, from module `mod`) may be evaluated on
/// constants at capture time: pure builtins and builtin types, `math`, and
/// torch's device/finfo/iinfo/Size constructors.
static bool evaluableAtCapture(PyObject *fn, const std::string &name, const std::string &mod) {
  static PyOnce deviceTypeOnce, finfoTypeOnce, iinfoTypeOnce, sizeTypeOnce;
  PyObject *sizeType =
      sizeTypeOnce.get([] { return PyObject_GetAttrString(torchModule(), "Size"); });
  PyObject *deviceType =
      deviceTypeOnce.get([] { return PyObject_GetAttrString(torchModule(), "device"); });
  PyObject *finfoType =
      finfoTypeOnce.get([] { return PyObject_GetAttrString(torchModule(), "finfo"); });
  PyObject *iinfoType =
      iinfoTypeOnce.get([] { return PyObject_GetAttrString(torchModule(), "iinfo"); });
  bool isBuiltinType =
      PyType_Check(fn) && (fn == (PyObject *)&PyLong_Type || fn == (PyObject *)&PyFloat_Type ||
                           fn == (PyObject *)&PyBool_Type || fn == (PyObject *)&PyTuple_Type ||
                           fn == (PyObject *)&PyList_Type || fn == (PyObject *)&PyRange_Type ||
                           fn == (PyObject *)&PySlice_Type);
  // operator.index (ModuleList/ParameterList indexing): an int's index.
  bool operatorIndex = mod == "_operator" && name == "index";
  return isBuiltinType || (mod == "builtins" && isPureBuiltin(name)) || mod == "math" ||
         operatorIndex || fn == deviceType || fn == finfoType || fn == iinfoType ||
         fn == sizeType; // torch.Size(ints): torch.broadcast_shapes' result
}

/// The string attribute `attr` of `fn` ("" when missing or not a str).
static std::string stringAttribute(PyObject *fn, const char *attr) {
  PyRef value = PyRef::steal(PyObject_GetAttrString(fn, attr));
  if (!value)
    PyErr_Clear(); // a callable without __name__/__module__: no name
  return value && PyUnicode_Check(value.get()) ? PyUnicode_AsUTF8(value.get()) : "";
}

VarP Interpreter::callBuiltin(PyObject *fn, std::vector<VarP> &args,
                              std::map<std::string, VarP> &kwargs) {
  std::string name = PyType_Check(fn) ? reinterpret_cast<PyTypeObject *>(fn)->tp_name
                                      : stringAttribute(fn, "__name__");
  std::string mod = stringAttribute(fn, "__module__");
  if (VarP r = callPureMethod(fn, args, kwargs))
    return r;
  if (VarP r = callIntrospection(fn, name, args, kwargs))
    return r;
  if (fn == PyDict_GetItemString(PyEval_GetBuiltins(), "id") && args.size() == 1 && kwargs.empty())
    return idOf(args[0], keepAlive_, [this](const VarP &v) {
      guardValue(v); // identity (a module: by type, so pinned to identity)
      pinIdentity(v->obj.get(), "id() of it");
      if (isModule(v->obj.get()))
        pinModuleIdentity("id() of a module");
    });
  // Built-in exception classes only store their arguments: constructing one
  // (to raise it) is evaluated now. A user-defined one runs its own
  // __init__: the construct is left to eager (where it is raised).
  if (VarP e = constructException(fn, args, kwargs)) // Exceptions.cpp
    return e;
  bool builtinException = PyExceptionClass_Check(fn) && mod == "builtins";
  if (PyExceptionClass_Check(fn) && !builtinException)
    throw Unsupported(BreakCategory::UserError, "constructs the exception " + pyText(fn),
                      hint::kRaisesInEager);
  if (!evaluableAtCapture(fn, name, mod) && !builtinException)
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "call to " + pyText(fn) + " is not supported" +
                          (name == "print" ? " (print has side effects)" : ""),
                      "kiln runs the call eagerly at a graph break; move it out of the compiled "
                      "function to keep one graph");
  // Builtins answered for abstract values (tensors, containers built here,
  // objects of the frame); each handler returns nullptr when its arguments
  // are all constants, which are then evaluated by the builtin itself.
  static const std::unordered_map<std::string, BuiltinHandler> handlers = {
      {"getattr", &Interpreter::builtinGetattr},
      {"hasattr", &Interpreter::builtinGetattr},
      {"sum", &Interpreter::builtinSum},
      {"len", &Interpreter::builtinLen},
      {"isinstance", &Interpreter::builtinIsinstance},
      {"tuple", &Interpreter::builtinSequence},
      {"list", &Interpreter::builtinSequence},
      {"int", &Interpreter::builtinScalar},
      {"float", &Interpreter::builtinScalar},
      {"bool", &Interpreter::builtinScalar},
      {"abs", &Interpreter::builtinScalar},
      {"type", &Interpreter::builtinScalar},
  };
  // bool() of a tuple/list/dict built in the frame (`bool(kwargs)`): its length.
  if (name == "bool" && args.size() == 1 && kwargs.empty() && !args[0]->obj &&
      (args[0]->kind == Var::Kind::Tuple || args[0]->kind == Var::Kind::List ||
       args[0]->kind == Var::Kind::Dict))
    return makeConst(PyRef::borrow(args[0]->items.empty() ? Py_False : Py_True));
  if (name == "type" && args.size() == 1 && kwargs.empty())
    if (VarP t = typeOf(args[0], inputObjects_))
      return t;
  auto handler = handlers.find(name);
  if (handler != handlers.end())
    if (VarP r = (this->*handler->second)(name, args, kwargs))
      return r;
  pinModulesIn(args, name); // evaluated on the module object itself
  return callOnConstants(fn, name, args, kwargs);
}

VarP Interpreter::builtinGetattr(const std::string &name, std::vector<VarP> &args,
                                 std::map<std::string, VarP> &kwargs) {
  bool isGetattr = name == "getattr";
  if (args.size() < 2 || !args[1]->isConst() || !PyUnicode_Check(args[1]->obj.get()) ||
      !kwargs.empty())
    return nullptr;
  // getattr/hasattr on an object of the frame read the attribute through a
  // guarded source (the object may change between calls).
  if (VarP v = overlayAttr(args[0], pyText(args[1]->obj.get())))
    return isGetattr ? v : makeConst(PyRef::borrow(Py_True));
  if (args[0]->kind == Var::Kind::Object) { // UserObjects.cpp
    VarP v = objectAttr(args[0], args[1]->obj.get(), /*missingOk=*/true);
    if (!v && isGetattr && args.size() != 3)
      return objectAttr(args[0], args[1]->obj.get()); // raises AttributeError
    if (!isGetattr)
      return makeConst(PyRef::borrow(v ? Py_True : Py_False));
    return v ? v : args[2];
  }
  if (!args[0]->isConst() || sourceOf(args[0]) < 0)
    return nullptr;
  if (!PyObject_HasAttr(args[0]->obj.get(), args[1]->obj.get())) {
    PyErr_Clear(); // hasattr semantics: any error reads as "missing"
    // A missing attribute: the default (getattr) or False, guarded by a
    // HasAttr guard on the object (an attribute set later recompiles).
    if (isGetattr && args.size() != 3)
      throw Unsupported(BreakCategory::UserError,
                        "getattr() of a missing attribute without a default");
    Guard g;
    g.kind = Guard::Kind::HasAttr;
    g.source = sourceOf(args[0]);
    g.expected = PyRef::steal(PyTuple_Pack(2, args[1]->obj.get(), Py_False));
    out_.guards.push_back(std::move(g));
    return isGetattr ? args[2] : makeConst(PyRef::borrow(Py_False));
  }
  VarP v = loadAttr(args[0], args[1]->obj.get());
  return isGetattr ? v : makeConst(PyRef::borrow(Py_True));
}

VarP Interpreter::builtinSum(const std::string &, std::vector<VarP> &args,
                             std::map<std::string, VarP> &kwargs) {
  // sum() over tensors: a chain of `+` (eager adds to the start value too).
  if (args.empty() || args.size() > 2 ||
      (args[0]->isConst() && (args.size() != 2 || args[1]->isConst())))
    return nullptr;
  VarP acc = args.size() == 2        ? args[1]
             : kwargs.count("start") ? kwargs["start"]
                                     : makeConst(PyRef::steal(PyLong_FromLong(0)));
  for (const VarP &item : iterItems(args[0])) {
    if (VarP t = tensorBinary("+", acc, item)) {
      acc = t;
      continue;
    }
    if (VarP s = scalarBinary("+", acc, item)) { // ops/Scalars.cpp
#if PY_VERSION_HEX >= 0x030C0000
      if (s->obj.get() == (PyObject *)&PyFloat_Type) // 3.12 sums floats compensated
        throw Unsupported(BreakCategory::PythonBuiltin,
                          "sum() of Python floats read from tensors (compensated summation)");
#endif
      acc = s;
      continue;
    }
    PyRef r = PyRef::steal(constBinary("+", constObj(acc, "operand"), constObj(item, "operand")));
    if (!r)
      throw Unsupported(BreakCategory::UserError, withPythonError("sum() raised on constants"),
                        hint::kRaisesInEager);
    acc = makeConst(r);
  }
  return acc;
}

VarP Interpreter::builtinLen(const std::string &, std::vector<VarP> &args,
                             std::map<std::string, VarP> &) {
  if (args.size() != 1)
    return nullptr;
  const VarP &v = args[0];
  if (v->isTensor()) // answered from the static shape
    return tensorAttribute(v, kTensorLenQuery);
  if (v->isConst() && v->source >= 0 &&
      (PyTuple_CheckExact(v->obj.get()) || PyList_CheckExact(v->obj.get()) ||
       PyDict_CheckExact(v->obj.get()) || isModelOutputRecord(v->obj.get()) ||
       keepsDictMethod(v->obj.get(), "__len__"))) {
    // len() of a container of the frame (e.g. a module's hook dict): the
    // container may be mutated between calls, so its length is guarded.
    refuseMutatedAlias(v);
    Py_ssize_t n = PyObject_Length(v->obj.get());
    guardLength(v->source, n);
    return makeConst(PyRef::steal(PyLong_FromSsize_t(n)));
  }
  if (v->kind == Var::Kind::Tuple || v->kind == Var::Kind::List || v->kind == Var::Kind::Dict)
    return makeConst(PyRef::steal(PyLong_FromSize_t(v->items.size())));
  if (CaptureTimeCalls::dunderClass(*this, v)) // a user object: its class's __len__ inlined
    return CaptureTimeCalls::objectLen(*this, v);
  return moduleContainerLen(v); // ModuleGuards.cpp
}

VarP Interpreter::builtinIsinstance(const std::string &, std::vector<VarP> &args,
                                    std::map<std::string, VarP> &) {
  if (args.size() != 2 || args[0]->isConst() || args[0]->kind == Var::Kind::Null)
    return nullptr;
  const VarP &v = args[0];
  // A graph input answers as the caller's tensor (its exact type is guarded:
  // an nn.Parameter is one); a tensor computed here as an empty plain tensor
  // would; a container built here (or a ModelOutput record) as its type.
  PyRef probe;
  PyObject *type = containerType(v);
  if (v->isTensor() && v->inputIndex >= 0 && v->inputIndex < static_cast<int>(inputObjects_.size()))
    probe = inputObjects_[v->inputIndex];
  else if (v->isTensor())
    probe = PyRef::steal(PyObject_CallMethod(torchModule(), "empty", "i", 0));
  if (!probe && !type)
    return nullptr;
  PyRef cls = seqAsConst(args[1]);
  PyObject *classes = cls ? cls.get() : constObj(args[1], "class");
  int r = probe ? PyObject_IsInstance(probe.get(), classes) : PyObject_IsSubclass(type, classes);
  if (r < 0)
    throw Unsupported(BreakCategory::UserError, withPythonError("isinstance() raised"),
                      hint::kRaisesInEager);
  return makeConst(PyRef::borrow(r == 1 ? Py_True : Py_False));
}

VarP Interpreter::builtinSequence(const std::string &name, std::vector<VarP> &args,
                                  std::map<std::string, VarP> &) {
  Var::Kind kind = name == "tuple" ? Var::Kind::Tuple : Var::Kind::List;
  if (args.empty()) // list(): a new empty list (a Var, so it can be mutated)
    return makeSeq(kind, {});
  if (args.size() != 1)
    return nullptr;
  // A caller's list/tuple: its items each read through their own source
  // (iterItems), not the compile-time objects.
  PyObject *o = args[0]->isConst() ? args[0]->obj.get() : nullptr;
  if (o && (args[0]->source < 0 || (!PyList_CheckExact(o) && !PyTuple_CheckExact(o))))
    return nullptr;
  return makeSeq(kind, iterItems(args[0]));
}

/// `r`, the result of calling `fn` at capture, to be kept as a constant. A
/// tensor (getattr on an object without a source ...) has no source to be
/// re-read per call: baked in, it would go stale when the object is
/// updated, so the call runs eagerly instead (Unsupported).
static PyRef refuseTensor(PyObject *fn, PyRef r) {
  if (isTensor(r.get()))
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "call to " + pyText(fn) + " returns a tensor read at capture time",
                      "kiln runs the call eagerly at a graph break");
  return r;
}

VarP Interpreter::callOnConstants(PyObject *fn, const std::string &name, std::vector<VarP> &args,
                                  std::map<std::string, VarP> &kwargs) {
  CaptureTimeCalls::guardBuiltinState(*this, name, args);
  // sorted(d), min(t), any(l) ... over containers built here whose items
  // are constants (a dict's keys): evaluated on a list of those constants.
  if ((name == "any" || name == "all") && args.size() == 1 && kwargs.empty() &&
      !args[0]->isConst() && !args[0]->isTensor()) {
    // Consumed up to the first true (any) / false (all) item, as in eager:
    // a generator's side effects after it do not happen.
    bool any = name == "any";
    VarP it = getIter(args[0]);
    while (VarP item = iterNext(it))
      if (truthy(item) == any)
        return makeConst(PyRef::borrow(any ? Py_True : Py_False));
    return makeConst(PyRef::borrow(any ? Py_False : Py_True));
  }
  static const std::set<std::string> overItems = {"sorted", "min", "max", "set", "frozenset"};
  if (overItems.count(name) && args.size() == 1 && !args[0]->isConst() && !args[0]->isTensor()) {
    std::vector<VarP> items = iterItems(args[0]);
    PyRef list = PyRef::steal(PyList_New(items.size()));
    for (size_t i = 0; i < items.size(); ++i) {
      PyObject *o = constObj(items[i], "item");
      Py_INCREF(o);
      PyList_SET_ITEM(list.get(), i, o);
    }
    keepAlive_.push_back(list);
    args[0] = makeConst(list);
  }
  PyRef tuple = PyRef::steal(PyTuple_New(args.size()));
  for (size_t i = 0; i < args.size(); ++i) {
    PyRef c = seqAsConst(args[i]); // (int, float) built here is a constant too
    PyObject *o = c ? c.release()
                    : (Py_INCREF(constObj(args[i], "argument of a builtin")), args[i]->obj.get());
    PyTuple_SET_ITEM(tuple.get(), i, o);
    if (name != "isinstance" && name != "issubclass" && name != "type" && name != "callable") {
      pinPlainObjectsIn(o, "a builtin is evaluated on it at capture"); // type-only ones are not
      if (!c && name != "hasattr" && name != "getattr")
        CaptureTimeCalls::guardDunderState(*this, args[i], "a builtin evaluated at capture");
    }
    // An iterator of the caller (a generator, itertools.chain, zip, ...):
    // the call would consume it at capture time and the frame would then
    // see it empty.
    if (!c && PyIter_Check(o))
      throw Unsupported(BreakCategory::PythonBuiltin,
                        "call to " + name +
                            "() on an iterator object from outside the graph "
                            "(calling it while capturing would consume it)");
  }
  PyRef kw = PyRef::steal(PyDict_New());
  for (auto &[k, v] : kwargs) {
    PyRef c = seqAsConst(v);
    pinPlainObjectsIn(c ? c.get() : constObj(v, "keyword argument"),
                      "a builtin is evaluated on it at capture");
    PyDict_SetItemString(kw.get(), k.c_str(), c ? c.get() : constObj(v, "keyword argument"));
  }
  PyRef r = PyRef::steal(PyObject_Call(fn, tuple.get(), kw.get()));
  if (!r) // a pure builtin on constants: eager raises the same (Exceptions.cpp)
    raisePending("call to " + pyText(fn) + " raised at capture time");
  if (PyIter_Check(r.get()) || PyObject_TypeCheck(r.get(), &PyEnum_Type) ||
      PyObject_TypeCheck(r.get(), &PyZip_Type)) {
    PyRef list = PyRef::steal(PySequence_List(r.get()));
    if (!list)
      throw Unsupported(BreakCategory::UserError,
                        withPythonError("iterating the result of " + pyText(fn) + " raised"),
                        hint::kRaisesInEager);
    std::vector<VarP> items;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list.get()); ++i)
      items.push_back(makeConst(refuseTensor(fn, PyRef::borrow(PyList_GET_ITEM(list.get(), i)))));
    return makeSeq(Var::Kind::Iter, items);
  }
  PyRef result = refuseTensor(fn, r);
  r = PyRef();
  noteFresh(result); // list(...), sorted(...), dict(...): a new container (ContainerMethods.cpp)
  return makeConst(result);
}

} // namespace kiln
