//===- BuiltModules.cpp - nn.Modules constructed inside compiled code -----===//
// SPDX-License-Identifier: Apache-2.0
//
// `loss_fct = CrossEntropyLoss(ignore_index=-100); loss_fct(logits, labels)`
// (HuggingFace T5/BART heads with `labels`) builds a module on every call.
// The capture builds it once, now, with the same constant arguments, and
// inlines its forward on that object like any module without a source:
// every attribute it reads is a constant of the capture. That equals a
// fresh module per call only when construction is a pure function of the
// arguments and the object stays private to the frame, so a class
// qualifies when every __init__ of its MRO is in a module listed in
// kiln._capture_time.CONSTRUCT_AT_CAPTURE (torch.nn's classes), its
// arguments are constants known at capture (numbers, strings, dtypes,
// tuples/lists of those, modules built the same way), the constructor
// draws no random numbers and the module holds no parameter, buffer or
// tensor attribute afterwards (a layer with weights is new tensors per
// call). Registration hooks (torch's global ones) must be absent and are
// guarded empty; the class's __init__ and forward are guarded (patching
// recompiles). An attribute store on the object, or the object returned,
// stored into Python state or live at a graph break, is a break (the one
// object would be shared by every call).
//===----------------------------------------------------------------------===//
#include "capture/interp/CaptureTimeCalls.h"
#include "GilOnce.h"

#include <map>

namespace kiln {
namespace {

/// The built modules of each capture in progress (under the GIL; leaked:
/// its PyRefs must not be released after Python's finalization).
std::map<const Interpreter *, std::vector<PyRef>> &tables() {
  static auto *t = new std::map<const Interpreter *, std::vector<PyRef>>();
  return *t;
}

/// `module.attr` (new reference), or null.
PyRef importAttr(const char *module, const char *attr) {
  PyRef m = PyRef::steal(PyImport_ImportModule(module));
  PyRef a = m ? PyRef::steal(PyObject_GetAttrString(m.get(), attr)) : PyRef();
  PyErr_Clear();
  return a;
}

PyObject *moduleModule() {
  static PyOnce once;
  return once.get([] { return PyImport_ImportModule("torch.nn.modules.module"); });
}

/// kiln._capture_time.CONSTRUCT_AT_CAPTURE (a tuple of module-name
/// prefixes; borrowed, process lifetime), or null.
PyObject *listedPrefixes() {
  static PyOnce once;
  return once.get([] {
    PyRef mod = PyRef::steal(PyImport_ImportModule("kiln._capture_time"));
    PyObject *t = mod ? PyObject_GetAttrString(mod.get(), "CONSTRUCT_AT_CAPTURE") : nullptr;
    PyErr_Clear();
    return t; // leaked: process lifetime
  });
}

/// Whether the __init__ of every class of `t`'s MRO before nn.Module that
/// defines one is a Python function of a listed module ("" when it is,
/// else the class).
std::string unlistedInit(PyTypeObject *t) {
  PyObject *prefixes = listedPrefixes(), *mro = t->tp_mro;
  PyRef moduleType =
      PyRef::steal(moduleModule() ? PyObject_GetAttrString(moduleModule(), "Module") : nullptr);
  for (Py_ssize_t i = 0; mro && i < PyTuple_GET_SIZE(mro); ++i) {
    PyObject *base = PyTuple_GET_ITEM(mro, i);
    if (base == moduleType.get())
      break;
    PyObject *init =
        PyDict_GetItemString(reinterpret_cast<PyTypeObject *>(base)->tp_dict, "__init__");
    if (!init)
      continue;
    // The function's own module (a class patched with another __init__ keeps its __module__).
    PyRef name =
        PyFunction_Check(init) ? PyRef::steal(PyObject_GetAttrString(init, "__module__")) : PyRef();
    PyErr_Clear();
    PyRef ok = name && prefixes && PyUnicode_Check(name.get())
                   ? PyRef::steal(PyObject_CallMethod(name.get(), "startswith", "(O)", prefixes))
                   : PyRef();
    PyErr_Clear();
    if (ok.get() != Py_True)
      return pyText(base);
  }
  return "";
}

/// The Python object a constructor argument stands for (new reference), or
/// null when it is not a constant the construction may depend on.
PyRef constantArgument(Interpreter &I, const VarP &v, int depth) {
  if (depth > 4)
    return PyRef();
  if (v->kind == Var::Kind::Tuple || v->kind == Var::Kind::List) {
    if (v->obj) // a namedtuple or other tuple subclass
      return PyRef();
    PyRef seq = PyRef::steal(v->kind == Var::Kind::Tuple ? PyTuple_New((Py_ssize_t)v->items.size())
                                                         : PyList_New((Py_ssize_t)v->items.size()));
    for (size_t i = 0; seq && i < v->items.size(); ++i) {
      PyRef item = constantArgument(I, v->items[i], depth + 1);
      if (!item)
        return PyRef();
      if (v->kind == Var::Kind::Tuple)
        PyTuple_SET_ITEM(seq.get(), (Py_ssize_t)i, item.release());
      else
        PyList_SET_ITEM(seq.get(), (Py_ssize_t)i, item.release());
    }
    return seq;
  }
  if (!v->isConst())
    return PyRef();
  PyObject *o = v->obj.get();
  if (isModule(o))
    return isBuiltModule(I, o) ? PyRef::borrow(o) : PyRef();
  bool scalar = o == Py_None || PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o) ||
                PyUnicode_CheckExact(o) || PyComplex_CheckExact(o) || PyBytes_CheckExact(o);
  std::string type = Py_TYPE(o)->tp_name;
  bool torchConstant = type == "torch.dtype" || type == "torch.device" || type == "torch.layout" ||
                       type == "torch.memory_format";
  if (!scalar && !torchConstant)
    return PyRef(); // containers and objects of the frame may change after compiling
  I.guardValue(v);  // a value read from the frame: guarded by value
  return PyRef::borrow(o);
}

/// Why `module` cannot stand for a fresh module per call ("" when it can):
/// a parameter, buffer or tensor attribute (new tensors per call).
std::string heldState(PyObject *module, int depth) {
  PyObject **dictPtr = _PyObject_GetDictPtr(module);
  PyObject *dict = dictPtr ? *dictPtr : nullptr;
  if (!dict || depth > 16)
    return "its state cannot be read";
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(dict, &pos, &k, &v)) {
    if (isTensor(v))
      return "it holds the tensor attribute '" + pyText(k) + "'";
    if (!PyDict_Check(v))
      continue;
    std::string which = pyText(k);
    PyObject *k2, *v2;
    Py_ssize_t pos2 = 0;
    while (PyDict_Next(v, &pos2, &k2, &v2)) {
      if (isTensor(v2))
        return "it holds the tensor '" + pyText(k2) + "' (in " + which + ")";
      if (which == "_modules" && v2 != Py_None && isModule(v2)) {
        std::string inner = heldState(v2, depth + 1);
        if (!inner.empty())
          return "its submodule '" + pyText(k2) + "': " + inner;
      }
    }
  }
  return "";
}

/// The CPU generator's state (to see whether the constructor drew numbers).
PyRef rngState() {
  static PyOnce once;
  PyObject *get = once.get([] { return importAttr("torch", "get_rng_state").release(); });
  PyRef s = get ? PyRef::steal(PyObject_CallNoArgs(get)) : PyRef();
  PyErr_Clear();
  return s;
}

bool sameState(PyObject *a, PyObject *b) {
  static PyOnce once;
  PyObject *equal = once.get([] { return importAttr("torch", "equal").release(); });
  PyRef r =
      a && b && equal ? PyRef::steal(PyObject_CallFunctionObjArgs(equal, a, b, nullptr)) : PyRef();
  PyErr_Clear();
  return r.get() == Py_True;
}

} // namespace

bool isBuiltModule(const Interpreter &I, PyObject *o) {
  auto it = tables().find(&I);
  if (it == tables().end())
    return false;
  for (const PyRef &m : it->second)
    if (m.get() == o)
      return true;
  return false;
}

bool holdsBuiltModule(const Interpreter &I, const VarP &v, int depth) {
  if (!v || depth > 8)
    return false;
  if (v->isConst())
    return isBuiltModule(I, v->obj.get());
  for (const VarP &item : v->items)
    if (holdsBuiltModule(I, item, depth + 1))
      return true;
  return holdsBuiltModule(I, v->self, depth + 1);
}

void builtModulesEnd(const Interpreter &I) { tables().erase(&I); }

VarP CaptureTimeCalls::builtModuleDunder(Interpreter &I, const VarP &m, const char *name) {
  if (!m->isConst() || !isBuiltModule(I, m->obj.get()))
    return nullptr;
  PyRef key = PyRef::steal(PyUnicode_InternFromString(name));
  PyObject *fn = _PyType_Lookup(Py_TYPE(m->obj.get()), key.get());
  if (!fn || !PyFunction_Check(fn))
    return nullptr;
  int typeSrc = I.out_.sources.add(Source::Kind::Constant, -1, 0,
                                   reinterpret_cast<PyObject *>(Py_TYPE(m->obj.get())));
  I.guardValue(makeConst(PyRef::borrow(fn),
                         I.out_.sources.add(Source::Kind::TypeLookup, typeSrc, 0, key.get())));
  std::vector<VarP> args{m};
  std::map<std::string, VarP> kwargs;
  return I.inlineFunction(fn, -1, args, kwargs);
}

VarP CaptureTimeCalls::constructModule(Interpreter &I, const VarP &callee, PyObject *cls,
                                       std::vector<VarP> &args,
                                       std::map<std::string, VarP> &kwargs) {
  static PyOnce moduleTypeOnce;
  PyObject *moduleType =
      moduleTypeOnce.get([] { return importAttr("torch.nn", "Module").release(); });
  if (!PyType_Check(cls) || !moduleType ||
      !PyType_IsSubtype(reinterpret_cast<PyTypeObject *>(cls),
                        reinterpret_cast<PyTypeObject *>(moduleType)))
    return nullptr;
  const char *hint = "construct the module outside the compiled function (in __init__)";
  std::string name = pyText(cls);
  std::string unlisted = unlistedInit(reinterpret_cast<PyTypeObject *>(cls));
  if (!unlisted.empty())
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "constructing the module " + name +
                          " in the compiled code: the __init__ of " + unlisted +
                          " is not one kiln runs at capture (torch.nn's)",
                      hint);
  PyRef argTuple = PyRef::steal(PyTuple_New((Py_ssize_t)args.size()));
  PyRef kwDict = PyRef::steal(PyDict_New());
  auto refuse = [&] {
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "constructing the module " + name +
                          " in the compiled code with arguments that are not constants "
                          "(tensors, objects or modules of the frame)",
                      hint);
  };
  for (size_t i = 0; i < args.size(); ++i) {
    I.materializeDeep(args[i]);
    PyRef a = constantArgument(I, args[i], 0);
    if (!a)
      refuse();
    PyTuple_SET_ITEM(argTuple.get(), (Py_ssize_t)i, a.release());
  }
  for (auto &[k, v] : kwargs) {
    I.materializeDeep(v);
    PyRef a = constantArgument(I, v, 0);
    if (!a)
      refuse();
    PyDict_SetItemString(kwDict.get(), k.c_str(), a.get());
  }
  for (const char *hooks :
       {"_global_module_registration_hooks", "_global_parameter_registration_hooks",
        "_global_buffer_registration_hooks"}) {
    PyRef h = PyRef::steal(PyObject_GetAttrString(moduleModule(), hooks));
    PyErr_Clear();
    if (!h || !PyDict_Check(h.get()))
      continue;
    if (PyDict_Size(h.get()) > 0)
      throw Unsupported(BreakCategory::PythonBuiltin,
                        "constructing the module " + name + ": global registration hooks are set",
                        hint);
    I.guardLength(I.out_.sources.add(Source::Kind::Constant, -1, 0, h.get()), 0);
  }
  PyRef before = rngState();
  PyRef made = PyRef::steal(PyObject_Call(cls, argTuple.get(), kwDict.get()));
  if (!made)
    throw Unsupported(BreakCategory::UserError,
                      withPythonError("constructing the module " + name + " raised"),
                      hint::kRaisesInEager);
  if (!sameState(before.get(), rngState().get())) {
    static PyOnce once; // undone: eager draws them when it runs the constructor
    PyObject *set = once.get([] { return importAttr("torch", "set_rng_state").release(); });
    PyRef r = set && before ? PyRef::steal(PyObject_CallOneArg(set, before.get())) : PyRef();
    PyErr_Clear();
    throw Unsupported(BreakCategory::Random,
                      "constructing the module " + name + " draws random numbers", hint);
  }
  std::string state = heldState(made.get(), 0);
  if (!state.empty())
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "constructing the module " + name + " in the compiled code: " + state +
                          " (new tensors on every call)",
                      hint);
  // Patching the class's __init__ or forward after compiling recompiles.
  int typeSrc = I.out_.sources.add(Source::Kind::Constant, -1, 0, cls);
  for (const char *slot : {"__init__", "forward"}) {
    PyRef key = PyRef::steal(PyUnicode_InternFromString(slot));
    if (PyObject *v = _PyType_Lookup(reinterpret_cast<PyTypeObject *>(cls), key.get()))
      I.guardValue(makeConst(PyRef::borrow(v),
                             I.out_.sources.add(Source::Kind::TypeLookup, typeSrc, 0, key.get())));
  }
  (void)callee;
  tables()[&I].push_back(made);
  I.keepAlive_.push_back(made);
  return makeConst(made);
}

} // namespace kiln
