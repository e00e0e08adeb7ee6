//===- Inlining.cpp - calls into user Python functions ---------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// How the interpreter enters a user function: binding arguments (defaults,
// *args/**kwargs), free variables and cells (closures), zero-argument
// super(), and interpreting the callee's frame in place.
//===----------------------------------------------------------------------===//
#include "capture/interp/Interp.h"
#include "GilOnce.h"

#include <set>
#include <unordered_set>

namespace kiln {

PyObject *pythonDecomposition(PyObject *fn) {
  static PyOnce tableOnce;
  PyObject *table = tableOnce.get([] {
    PyRef mod = PyRef::steal(PyImport_ImportModule("kiln._decompositions"));
    PyObject *t = mod ? PyObject_GetAttrString(mod.get(), "DECOMPOSITIONS") : nullptr;
    PyErr_Clear();
    return t && PyDict_Check(t) ? t : nullptr; // leaked: process lifetime
  });
  PyObject *d = table ? PyDict_GetItemWithError(table, fn) : nullptr;
  PyErr_Clear(); // an unhashable callee is no decomposition
  return d;
}

VarP Interpreter::zeroArgSuper(Frame &f) {
  auto it = f.cells.find("__class__");
  auto *code = reinterpret_cast<PyCodeObject *>(f.code->code.get());
  if (it == f.cells.end() || code->co_argcount < 1)
    throw Unsupported(BreakCategory::UserError, "super() outside a method");
  VarP cls = cellContent(it->second, "__class__");
  VarP self = f.isRoot ? loadLocal(f, 0) : f.locals[0];
  if (self && self->kind == Var::Kind::Object && cls->isConst() && PyType_Check(cls->obj.get())) {
    // A user object built here (UserObjects.cpp): super(cls, type(self))
    // finds the parent's attribute unbound; loadAttr binds it to the Var.
    PyRef sup = PyRef::steal(PyObject_CallFunctionObjArgs(
        reinterpret_cast<PyObject *>(&PySuper_Type), cls->obj.get(), self->obj.get(), nullptr));
    if (!sup)
      throw Unsupported(BreakCategory::UserError, withPythonError("super() raised"));
    keepAlive_.push_back(sup);
    superSelf_[sup.get()] = self;
    return makeConst(sup);
  }
  if (!cls->isConst() || !PyType_Check(cls->obj.get()) || !self || !self->isConst())
    throw Unsupported(BreakCategory::PythonBuiltin, "super() with a receiver kiln does not track");
  PyRef sup = PyRef::steal(PyObject_CallFunctionObjArgs(reinterpret_cast<PyObject *>(&PySuper_Type),
                                                        cls->obj.get(), self->obj.get(), nullptr));
  if (!sup)
    throw Unsupported(BreakCategory::UserError, withPythonError("super() raised"));
  keepAlive_.push_back(sup);
  superSelf_[sup.get()] = self;
  return makeConst(sup);
}

VarP Interpreter::cellContent(const VarP &cell, const std::string &name) {
  if (cell->kind != Var::Kind::Cell)
    throw Unsupported("closure variable '" + name + "' is not a cell");
  if (cell->items.empty() && cell->obj) {
    // A real cell of an enclosing Python function: its content is read
    // (and guarded) through its source on every call.
    PyObject *content = PyCell_GET(cell->obj.get());
    if (!content)
      throw Unsupported(BreakCategory::UserError, "closure variable '" + name + "' is unbound");
    cell->items.push_back(fromSource(content, cell->source));
  }
  if (cell->items.empty())
    throw Unsupported(BreakCategory::UserError,
                      "closure variable '" + name + "' referenced before assignment");
  return cell->items[0];
}

void Interpreter::bindFreeVars(Frame &f, PyCodeObject *code, PyObject *fn, int fnSource,
                               const std::vector<VarP> *closure) {
  PyObject *freevars = PyCode_GetFreevars(code);
  PyRef owned = PyRef::steal(freevars);
  Py_ssize_t n = freevars ? PyTuple_GET_SIZE(freevars) : 0;
  if (n == 0)
    return;
  if (closure) {
    if ((Py_ssize_t)closure->size() != n)
      throw Unsupported("closure does not match the function's free variables");
    for (Py_ssize_t i = 0; i < n; ++i)
      f.cells[PyUnicode_AsUTF8(PyTuple_GET_ITEM(freevars, i))] = (*closure)[i];
    return;
  }
  PyObject *cells = fn && PyFunction_Check(fn) ? PyFunction_GET_CLOSURE(fn) : nullptr;
  if (!cells || !PyTuple_Check(cells) || PyTuple_GET_SIZE(cells) != n)
    throw Unsupported("function without its closure cells");
  if (fnSource < 0)
    fnSource = out_.sources.add(Source::Kind::Constant, -1, 0, fn);
  PyRef closureName = PyRef::steal(PyUnicode_FromString("__closure__"));
  PyRef contentsName = PyRef::steal(PyUnicode_FromString("cell_contents"));
  int closureSrc = out_.sources.add(Source::Kind::Attr, fnSource, 0, closureName.get());
  for (Py_ssize_t i = 0; i < n; ++i) {
    auto cell = std::make_shared<Var>();
    cell->kind = Var::Kind::Cell;
    cell->obj = PyRef::borrow(PyTuple_GET_ITEM(cells, i));
    int cellSrc = out_.sources.add(Source::Kind::TupleItem, closureSrc, (int)i, nullptr);
    cell->source = out_.sources.add(Source::Kind::Attr, cellSrc, 0, contentsName.get());
    f.cells[PyUnicode_AsUTF8(PyTuple_GET_ITEM(freevars, i))] = cell;
  }
}

VarP Interpreter::inlineFunction(PyObject *fn, int fnSource, std::vector<VarP> &args,
                                 std::map<std::string, VarP> &kwargs,
                                 const std::vector<VarP> *closure, const Var *made) {
  if (++depth_ > 32)
    throw Unsupported("inlining is nested too deeply (recursion?)");
  struct Depth { // back when the frame returns or an exception leaves it
    int &depth;
    ~Depth() { --depth; }
  } leave{depth_};
  auto *func = reinterpret_cast<PyFunctionObject *>(fn);
  auto *code = reinterpret_cast<PyCodeObject *>(func->func_code);
  if (code->co_flags & (CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE))
    throw Unsupported("coroutines and async generators are not supported");
  Frame f;
  // A generator (e.g. a generator expression) is an iterator that resumes
  // its frame to the next yield when the consumer asks (Iterators.cpp).
  f.generator = code->co_flags & CO_GENERATOR;
  f.code = &codeInfo(func->func_code);
  // The function object's code, defaults and keyword defaults can be
  // reassigned after compiling (Jupyter's autoreload patches `__code__` in
  // place): guard them unless the frame itself made the function.
  auto fnAttr = [&](const char *attr) {
    if (fnSource < 0)
      fnSource = out_.sources.add(Source::Kind::Constant, -1, 0, fn);
    return out_.sources.add(Source::Kind::Attr, fnSource, 0,
                            PyRef::steal(PyUnicode_InternFromString(attr)).get());
  };
  if (!made)
    fromSource(func->func_code, fnAttr("__code__"), false);
  std::vector<std::string> names = localNames(code);
  f.locals.resize(names.size());
  int npos = code->co_argcount, nkw = code->co_kwonlyargcount;
  bool varargs = code->co_flags & CO_VARARGS, varkw = code->co_flags & CO_VARKEYWORDS;
  if ((int)args.size() > npos && !varargs)
    throw Unsupported(BreakCategory::UserError,
                      "too many positional arguments to " + pyText(func->func_qualname));
  for (size_t i = 0; i < args.size() && (int)i < npos; ++i)
    f.locals[i] = args[i];
  if (varargs) // *args: the extra positional arguments
    f.locals[npos + nkw] =
        makeSeq(Var::Kind::Tuple,
                std::vector<VarP>(args.begin() + std::min<size_t>(args.size(), npos), args.end()));
  auto extra = std::make_shared<Var>(); // **kwargs: the unmatched keywords
  extra->kind = Var::Kind::Dict;
  int posOnly = code->co_posonlyargcount;
  std::vector<std::string> unmatched; // sorted, as kwargs
  for (auto &[k, v] : kwargs) {
    auto it = std::find(names.begin() + posOnly, names.begin() + npos + nkw, k);
    if (it == names.begin() + npos + nkw) {
      if (!varkw)
        throw Unsupported(BreakCategory::UserError, "unexpected keyword argument '" + k + "'");
      unmatched.push_back(k);
      continue;
    }
    if (f.locals[it - names.begin()])
      throw Unsupported(BreakCategory::UserError, "multiple values for argument '" + k + "'");
    f.locals[it - names.begin()] = v;
  }
  for (const std::string &k : callOrder(unmatched, "**kwargs of " + pyText(func->func_qualname))) {
    extra->keys.push_back(PyRef::steal(PyUnicode_FromString(k.c_str())));
    extra->items.push_back(kwargs.at(k));
  }
  if (varkw)
    f.locals[npos + nkw + (varargs ? 1 : 0)] = extra;
  // Defaults the frame computed (MAKE_FUNCTION, Calls.cpp) are Vars on
  // `made`; others are read from the function.
  const std::vector<VarP> *varDefaults =
      made && made->fnDefaults ? &made->fnDefaults->items : nullptr;
  PyObject *defaults = func->func_defaults;
  int ndef = varDefaults ? (int)varDefaults->size()
             : defaults  ? (int)PyTuple_GET_SIZE(defaults)
                         : 0;
  for (int i = 0; i < npos; ++i)
    if (!f.locals[i]) {
      int d = i - (npos - ndef);
      if (d < 0)
        throw Unsupported(BreakCategory::UserError, "missing argument '" + names[i] + "'");
      if (varDefaults) {
        f.locals[i] = (*varDefaults)[d];
        continue;
      }
      // A default is read through `__defaults__` (a tensor is a graph input,
      // anything else a guarded value).
      PyObject *dv = PyTuple_GET_ITEM(defaults, d);
      int ds = fnAttr("__defaults__");
      guardLength(ds, PyTuple_GET_SIZE(defaults));
      f.locals[i] = fromSource(dv, out_.sources.add(Source::Kind::TupleItem, ds, d, nullptr));
    }
  for (int i = npos; i < npos + nkw; ++i)
    if (!f.locals[i]) {
      PyRef key = PyRef::steal(PyUnicode_FromString(names[i].c_str()));
      int at = made && made->fnKwDefaults ? dictFind(made->fnKwDefaults, key.get()) : -1;
      if (at >= 0) {
        f.locals[i] = made->fnKwDefaults->items[at];
        continue;
      }
      PyObject *v =
          func->func_kwdefaults ? PyDict_GetItem(func->func_kwdefaults, key.get()) : nullptr;
      if (!v)
        throw Unsupported(BreakCategory::UserError, "missing keyword argument '" + names[i] + "'");
      f.locals[i] = fromSource(
          v, out_.sources.add(Source::Kind::DictItem, fnAttr("__kwdefaults__"), 0, key.get()));
    }
  f.globals = PyRef::borrow(func->func_globals);
  f.globalsSource = fnSource >= 0
                        ? out_.sources.add(Source::Kind::Attr, fnSource, 0,
                                           PyRef::steal(PyUnicode_FromString("__globals__")).get())
                        : out_.sources.add(Source::Kind::Constant, -1, 0, func->func_globals);
  bindFreeVars(f, code, fn, fnSource, closure);
  if (f.generator)
    return generatorIter(std::move(f));
  return interpret(f);
}

namespace {

/// The source of `module.__dict__[key]` (its `_modules`, `_parameters` or
/// `_buffers` dict) for a module read through `moduleSrc`.
int moduleDictSource(SourceTable &sources, int moduleSrc, PyObject *key) {
  return sources.add(Source::Kind::DictItem,
                     sources.add(Source::Kind::ObjDict, moduleSrc, 0, nullptr), 0, key);
}

/// `args`/`kwargs` of an nn.Module tree method as constants: None, bools,
/// ints and strs only (a memo set of the caller would be mutated).
std::pair<PyRef, PyRef> plainModuleArgs(const std::string &method, const std::vector<VarP> &args,
                                        const std::map<std::string, VarP> &kwargs) {
  std::string what = "argument of nn.Module." + method + "()";
  auto plain = [&](const VarP &v) {
    PyObject *o = constObj(v, what.c_str());
    if (o != Py_None && !PyBool_Check(o) && !PyLong_CheckExact(o) && !PyUnicode_CheckExact(o))
      throw Unsupported(BreakCategory::PythonBuiltin,
                        "nn.Module." + method + "() with a " +
                            pyText(reinterpret_cast<PyObject *>(Py_TYPE(o))) + " argument");
    return o;
  };
  for (const VarP &a : args)
    plain(a);
  PyRef posArgs = constTuple(args, what.c_str());
  PyRef kw = PyRef::steal(PyDict_New());
  for (auto &[k, v] : kwargs)
    PyDict_SetItemString(kw.get(), k.c_str(), plain(v));
  return {posArgs, kw};
}

/// The list `root.<method>(*posArgs, **kw)` produces, or throws.
PyRef callModuleMethod(PyObject *root, const std::string &method, PyObject *posArgs, PyObject *kw) {
  PyRef bound = PyRef::steal(PyObject_GetAttrString(root, method.c_str()));
  PyRef seq = bound ? PyRef::steal(PyObject_Call(bound.get(), posArgs, kw)) : PyRef();
  PyRef list = seq ? PyRef::steal(PySequence_List(seq.get())) : PyRef();
  if (!list)
    throw Unsupported(BreakCategory::UserError,
                      withPythonError("nn.Module." + method + "() raised at capture time"),
                      hint::kRaisesInEager);
  return list;
}

} // namespace

VarP Interpreter::moduleMembers(const VarP &module, const std::string &method,
                                std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  PyObject *root = constObj(module, "module");
  auto [posArgs, kw] = plainModuleArgs(method, args, kwargs);
  PyRef list = callModuleMethod(root, method, posArgs.get(), kw.get());
  keepAlive_.push_back(list);
  // The module tree is guarded (moduleTree), then every module's member
  // dict: its length, and each member read through its own source.
  std::vector<VarP> none;
  std::map<std::string, VarP> nokw;
  moduleTree(module, "modules", none, nokw);
  PyRef noArgs = PyRef::steal(PyTuple_New(0));
  PyRef mlist = callModuleMethod(root, "modules", noArgs.get(), nullptr);
  bool params = method.find("parameters") != std::string::npos;
  PyRef dictKey = PyRef::steal(PyUnicode_FromString(params ? "_parameters" : "_buffers"));
  std::map<PyObject *, int> sourceOfMember;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(mlist.get()); ++i) {
    PyObject *m = PyList_GET_ITEM(mlist.get(), i);
    PyObject **dictPtr = _PyObject_GetDictPtr(m);
    PyObject *members = dictPtr && *dictPtr ? PyDict_GetItem(*dictPtr, dictKey.get()) : nullptr;
    if (!members || !PyDict_Check(members))
      throw Unsupported("nn.Module." + method + "(): a module without " + pyText(dictKey.get()));
    int src = m == root ? sourceOf(module) : out_.sources.add(Source::Kind::Constant, -1, 0, m);
    int dictSrc = moduleDictSource(out_.sources, src, dictKey.get());
    guardLength(dictSrc, PyDict_Size(members));
    PyObject *k, *t;
    Py_ssize_t pos = 0;
    while (PyDict_Next(members, &pos, &k, &t)) {
      int itemSrc = out_.sources.add(Source::Kind::DictItem, dictSrc, 0, k);
      if (t == Py_None) // a None member stays None (guarded: set later recompiles)
        fromSource(t, itemSrc);
      else if (!sourceOfMember.count(t))
        sourceOfMember[t] = itemSrc;
    }
  }
  bool named = method.rfind("named_", 0) == 0;
  std::vector<VarP> items;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list.get()); ++i) {
    PyObject *item = PyList_GET_ITEM(list.get(), i);
    PyObject *t = named ? PyTuple_GetItem(item, 1) : item;
    auto found = t ? sourceOfMember.find(t) : sourceOfMember.end();
    if (found == sourceOfMember.end())
      throw Unsupported("nn.Module." + method + "(): a member kiln cannot read per call");
    VarP v = fromSource(t, found->second);
    items.push_back(
        named ? makeSeq(Var::Kind::Tuple, {makeConst(PyRef::borrow(PyTuple_GET_ITEM(item, 0))), v})
              : v);
  }
  return makeSeq(Var::Kind::Iter, items);
}

VarP Interpreter::moduleTree(const VarP &module, const std::string &method, std::vector<VarP> &args,
                             std::map<std::string, VarP> &kwargs) {
  // Arguments (prefix=, recurse=, remove_duplicate=) are constants; a memo
  // set or anything else of the frame is a break.
  PyObject *root = constObj(module, "module");
  auto [posArgs, kw] = plainModuleArgs(method, args, kwargs);
  PyRef list = callModuleMethod(root, method, posArgs.get(), kw.get());
  // Guard the tree the result was read from: every module reached has the
  // same children (count and identity) as now.
  std::vector<PyObject *> todo = {root};
  PyRef modulesKey = PyRef::steal(PyUnicode_FromString("_modules"));
  for (size_t i = 0; i < todo.size() && i < 4096; ++i) {
    PyObject **dictPtr = _PyObject_GetDictPtr(todo[i]);
    PyObject *children = dictPtr && *dictPtr ? PyDict_GetItemString(*dictPtr, "_modules") : nullptr;
    if (!children || !PyDict_Check(children))
      continue;
    int src = todo[i] == root ? sourceOf(module)
                              : out_.sources.add(Source::Kind::Constant, -1, 0, todo[i]);
    int modSrc = moduleDictSource(out_.sources, src, modulesKey.get());
    guardLength(modSrc, PyDict_Size(children));
    PyObject *k, *child;
    Py_ssize_t pos = 0;
    while (PyDict_Next(children, &pos, &k, &child)) {
      fromSource(child, out_.sources.add(Source::Kind::DictItem, modSrc, 0, k));
      if (child != Py_None)
        todo.push_back(child);
    }
  }
  std::vector<VarP> items;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list.get()); ++i)
    items.push_back(makeConst(PyRef::borrow(PyList_GET_ITEM(list.get(), i))));
  keepAlive_.push_back(list);
  return makeSeq(Var::Kind::Iter, items);
}

} // namespace kiln
