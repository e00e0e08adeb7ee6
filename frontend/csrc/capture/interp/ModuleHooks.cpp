//===- ModuleHooks.cpp - nn.Module forward hooks inlined around forward ---===//
// SPDX-License-Identifier: Apache-2.0
//
// Module.__call__ (`_call_impl`) runs forward pre-hooks (global ones from
// torch.nn.modules.module, then the module's own), forward, then forward
// hooks (global, then the module's). The capture does the same: each hook
// is read from its hook dict through a source (identity-guarded) and
// inlined like any call, with eager's rules for results (a pre-hook's
// non-None result replaces the positional args, a non-tuple one wrapped in
// a tuple; a with_kwargs pre-hook returns (args, kwargs); a forward hook's
// non-None result replaces the output). Every hook dict is guarded by its
// length and its items, and the with_kwargs dicts by length and items, so
// a hook added, removed or replaced after compiling recompiles. Backward
// hooks are not captured: a module with any breaks the graph.
//===----------------------------------------------------------------------===//
#include "capture/interp/ModuleHooks.h"
#include "capture/breaks/GraphBreak.h"
#include "GilOnce.h"

namespace kiln {
namespace {

PyObject *moduleModule() {
  static PyOnce once;
  return once.get([] {
    PyObject *m = PyImport_ImportModule("torch.nn.modules.module");
    PyErr_Clear();
    return m; // leaked: process lifetime
  });
}

/// A hook found in one of the hook dicts, in call order.
struct Hook {
  VarP fn;
  bool withKwargs = false;
};

bool isNone(const VarP &v) { return v->isConst() && v->obj.get() == Py_None; }

/// The items of a tuple result (a Tuple Var or a tuple constant); false
/// when `v` is no tuple.
bool tupleItems(const VarP &v, std::vector<VarP> &out) {
  if (v->kind == Var::Kind::Tuple) {
    out = v->items;
    return true;
  }
  if (v->isConst() && PyTuple_Check(v->obj.get())) {
    out.clear();
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(v->obj.get()); ++i)
      out.push_back(makeConst(PyRef::borrow(PyTuple_GET_ITEM(v->obj.get(), i))));
    return true;
  }
  return false;
}

/// `kwargs` as a Dict Var (the dict the hooks and forward share).
VarP kwargsDict(const std::map<std::string, VarP> &kwargs) {
  auto d = std::make_shared<Var>();
  d->kind = Var::Kind::Dict;
  for (const auto &[k, v] : kwargs) {
    d->keys.push_back(PyRef::steal(PyUnicode_FromString(k.c_str())));
    d->items.push_back(v);
  }
  return d;
}

/// Dict Var or dict constant `d` (str keys) as call keyword arguments.
std::map<std::string, VarP> kwargsOf(const VarP &d) {
  std::map<std::string, VarP> out;
  if (d->kind == Var::Kind::Dict && !d->obj) {
    for (size_t i = 0; i < d->keys.size(); ++i) {
      if (!PyUnicode_Check(d->keys[i].get()))
        throw Unsupported(BreakCategory::UserError, "forward keyword arguments with a non-str key",
                          hint::kRaisesInEager);
      out[PyUnicode_AsUTF8(d->keys[i].get())] = d->items[i];
    }
    return out;
  }
  if (d->isConst() && PyDict_CheckExact(d->obj.get())) {
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(d->obj.get(), &pos, &k, &v)) {
      if (!PyUnicode_Check(k))
        throw Unsupported(BreakCategory::UserError, "forward keyword arguments with a non-str key",
                          hint::kRaisesInEager);
      out[PyUnicode_AsUTF8(k)] = makeConst(PyRef::borrow(v));
    }
    return out;
  }
  throw Unsupported("a forward pre-hook with kwargs returned kwargs kiln does not track");
}

} // namespace

VarP callModuleForward(const ModuleHookOps &ops, const VarP &callee, int modSrc, PyObject *module,
                       std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  int dictSrc = modSrc >= 0 ? ops.addSource(Source::Kind::ObjDict, modSrc, 0, nullptr) : -1;
  PyObject **dictPtr = _PyObject_GetDictPtr(module);
  PyObject *instDict = dictPtr ? *dictPtr : nullptr;
  PyObject *globals = moduleModule();
  // The source of hook dict `name` (the module's, or the global one) and
  // its object; -1/null when missing.
  auto hookDict = [&](const char *name, bool global, PyObject *&dict) {
    if (global) {
      PyRef h = PyRef::steal(globals ? PyObject_GetAttrString(globals, name) : nullptr);
      PyErr_Clear();
      dict = h && PyDict_Check(h.get()) ? h.get() : nullptr; // held by the module
      return dict ? ops.addSource(Source::Kind::Constant, -1, 0, dict) : -1;
    }
    dict = instDict ? PyDict_GetItemString(instDict, name) : nullptr;
    if (!dict || !PyDict_Check(dict) || dictSrc < 0) {
      dict = dict && PyDict_Check(dict) ? dict : nullptr;
      return -1;
    }
    PyRef key = PyRef::steal(PyUnicode_FromString(name));
    return ops.addSource(Source::Kind::DictItem, dictSrc, 0, key.get());
  };
  // Backward hooks: not captured; their dicts are guarded empty.
  for (const char *name : {"_backward_hooks", "_backward_pre_hooks", "_global_backward_hooks",
                           "_global_backward_pre_hooks"}) {
    PyObject *d = nullptr;
    int src = hookDict(name, name[1] == 'g', d);
    if (d && PyDict_Size(d) > 0)
      throw Unsupported("module " + std::string(Py_TYPE(module)->tp_name) +
                        " has backward hooks (global or its own)");
    if (src >= 0)
      ops.guardLength(src, 0);
  }
  // The keys of a with_kwargs dict, guarded (length and each key's entry).
  auto withKwargs = [&](const char *name, bool global) {
    PyObject *d = nullptr;
    int src = hookDict(name, global, d);
    if (!d)
      return PyRef();
    if (src < 0 && PyDict_Size(d) > 0)
      throw Unsupported("forward hooks of a module kiln cannot guard");
    if (src >= 0) {
      ops.guardLength(src, PyDict_Size(d));
      PyObject *k, *v;
      Py_ssize_t pos = 0;
      while (PyDict_Next(d, &pos, &k, &v))
        ops.fromSource(v, ops.addSource(Source::Kind::DictItem, src, 0, k));
    }
    return PyRef::borrow(d);
  };
  PyRef preKw = withKwargs("_forward_pre_hooks_with_kwargs", false);
  PyRef postKw = withKwargs("_forward_hooks_with_kwargs", false);
  PyRef globalPostKw = withKwargs("_global_forward_hooks_with_kwargs", true);
  auto inDict = [](const PyRef &d, PyObject *k) { return d && PyDict_Contains(d.get(), k) == 1; };
  // The hooks of the global then the module's dict `name`, in call order.
  auto collect = [&](const char *global, const char *own, bool pre) {
    std::vector<Hook> hooks;
    for (auto [name, isGlobal] : {std::pair{global, true}, std::pair{own, false}}) {
      PyObject *d = nullptr;
      int src = hookDict(name, isGlobal, d);
      if (!d)
        continue;
      if (src < 0 && PyDict_Size(d) > 0)
        throw Unsupported("forward hooks of a module kiln cannot guard");
      if (src >= 0)
        ops.guardLength(src, PyDict_Size(d));
      PyRef keys = dictKeysInOrder(d); // an OrderedDict: `prepend=True` reorders it
      if (!keys)
        throw Unsupported(withPythonError("cannot list the forward hooks of a module"));
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keys.get()); ++i) {
        PyObject *k = PyTuple_GET_ITEM(keys.get(), i), *v = PyDict_GetItemWithError(d, k);
        if (!v)
          throw Unsupported(withPythonError("a forward hook vanished while kiln read it"));
        Hook h;
        int hookSrc = ops.addSource(Source::Kind::DictItem, src, 0, k);
        h.fn = ops.fromSource(v, hookSrc);
        if (PyFunction_Check(v)) { // its code too: `hook.__code__ = ...` recompiles
          static PyOnce codeNameOnce;
          PyObject *codeName =
              codeNameOnce.get([] { return PyUnicode_InternFromString("__code__"); });
          ops.fromSource(PyFunction_GET_CODE(v),
                         ops.addSource(Source::Kind::Attr, hookSrc, 0, codeName));
        }
        h.withKwargs = pre ? inDict(preKw, k) : inDict(postKw, k) || inDict(globalPostKw, k);
        hooks.push_back(std::move(h));
      }
    }
    return hooks;
  };
  std::vector<Hook> preHooks = collect("_global_forward_pre_hooks", "_forward_pre_hooks", true);
  std::vector<Hook> postHooks = collect("_global_forward_hooks", "_forward_hooks", false);
  PyErr_Clear();

  VarP kwDict = kwargsDict(kwargs);
  for (const Hook &h : preHooks) {
    std::vector<VarP> hookArgs = {callee, makeSeq(Var::Kind::Tuple, args)};
    if (h.withKwargs)
      hookArgs.push_back(kwDict);
    std::map<std::string, VarP> none;
    VarP r = ops.call(h.fn, hookArgs, none);
    if (isNone(r))
      continue;
    if (h.withKwargs) {
      std::vector<VarP> pair;
      if (!tupleItems(r, pair) || pair.size() != 2)
        throw Unsupported(BreakCategory::UserError,
                          "a forward pre-hook with kwargs must return None or (args, kwargs)",
                          hint::kRaisesInEager);
      if (!tupleItems(pair[0], args))
        throw Unsupported("a forward pre-hook with kwargs returned non-tuple args");
      kwDict = kwargsDict(kwargsOf(pair[1]));
    } else if (!tupleItems(r, args)) {
      args = {r};
    }
  }
  // Forward sees the kwargs dict the hooks saw (and may have changed).
  std::map<std::string, VarP> fwdKwargs = kwargsOf(kwDict);
  std::vector<VarP> fwdArgs = args;
  fwdArgs.insert(fwdArgs.begin(), callee);
  VarP result = ops.forward(fwdArgs, fwdKwargs);
  for (const Hook &h : postHooks) {
    std::vector<VarP> hookArgs = {callee, makeSeq(Var::Kind::Tuple, args)};
    if (h.withKwargs)
      hookArgs.push_back(kwDict);
    hookArgs.push_back(result);
    std::map<std::string, VarP> none;
    VarP r = ops.call(h.fn, hookArgs, none);
    if (!isNone(r))
      result = r;
  }
  return result;
}

} // namespace kiln
