//===- Bytecode.cpp - opcode semantics of the symbolic interpreter -----------===//
// SPDX-License-Identifier: Apache-2.0
//
// The instruction loop (Python 3.11 names, with the 3.12 variants handled by
// name), calls and function inlining (builtins: PythonBuiltins.cpp). Unknown
// opcodes end the capture with the opcode's name and line.
//===----------------------------------------------------------------------===//
#include "capture/interp/Interp.h"

#include <functional>
#include <set>
#include <unordered_set>

namespace kiln {
namespace {

VarP pop(Frame &f) {
  if (f.stack.empty())
    throw Unsupported("stack underflow (unexpected bytecode)");
  VarP v = f.stack.back();
  f.stack.pop_back();
  return v;
}

VarP nullVar() { return std::make_shared<Var>(); }

} // namespace

/// A tuple/list Var whose items are all constants (recursively) as a Python
/// tuple/list; null otherwise.
PyRef seqAsConst(const VarP &v, int depth) {
  if (v->isConst())
    return v->obj;
  if ((v->kind != Var::Kind::Tuple && v->kind != Var::Kind::List) || depth > 8)
    return PyRef();
  PyRef out = PyRef::steal(v->kind == Var::Kind::Tuple ? PyTuple_New(v->items.size())
                                                       : PyList_New(v->items.size()));
  for (size_t i = 0; i < v->items.size(); ++i) {
    PyRef item = seqAsConst(v->items[i], depth + 1);
    if (!item)
      return PyRef();
    if (v->kind == Var::Kind::Tuple)
      PyTuple_SET_ITEM(out.get(), i, item.release());
    else
      PyList_SET_ITEM(out.get(), i, item.release());
  }
  return out;
}

/// `a + b` / `a * n` on tuple/list Vars (items may be tensors); null when
/// the operands are not that.
VarP seqBinary(const std::string &sym, const VarP &a, const VarP &b,
               const std::function<std::vector<VarP>(const VarP &)> &items) {
  auto isSeq = [](const VarP &v) {
    return v->kind == Var::Kind::Tuple || v->kind == Var::Kind::List ||
           (v->isConst() && (PyTuple_Check(v->obj.get()) || PyList_Check(v->obj.get())));
  };
  auto kindOf = [](const VarP &v) {
    if (!v->isConst())
      return v->kind;
    return PyTuple_Check(v->obj.get()) ? Var::Kind::Tuple : Var::Kind::List;
  };
  if (a->isConst() && b->isConst())
    return nullptr;
  if ((sym == "+" || sym == "+=") && isSeq(a) && isSeq(b) && kindOf(a) == kindOf(b)) {
    std::vector<VarP> all = items(a), more = items(b);
    all.insert(all.end(), more.begin(), more.end());
    return makeSeq(kindOf(a), all);
  }
  if ((sym == "*" || sym == "*=") && (isSeq(a) || isSeq(b))) {
    const VarP &seq = isSeq(a) ? a : b, &n = isSeq(a) ? b : a;
    if (!n->isConst() || !PyLong_CheckExact(n->obj.get()))
      return nullptr;
    long times = PyLong_AsLong(n->obj.get());
    std::vector<VarP> one = items(seq), all;
    for (long i = 0; i < times; ++i)
      all.insert(all.end(), one.begin(), one.end());
    return makeSeq(kindOf(seq), all);
  }
  return nullptr;
}

long asLong(PyObject *o) {
  long v = PyLong_Check(o) ? PyLong_AsLong(o) : -1;
  PyErr_Clear();
  return v;
}

/// Evaluates a Python binary operator on two constants.
PyObject *constBinary(const std::string &op, PyObject *a, PyObject *b) {
  std::string o = op;
  if (o.size() > 1 && o.back() == '=' && o != "==" && o != "!=" && o != "<=" && o != ">=")
    o.pop_back(); // in-place form on immutable constants
  if (o == "+")
    return PyNumber_Add(a, b);
  if (o == "-")
    return PyNumber_Subtract(a, b);
  if (o == "*")
    return PyNumber_Multiply(a, b);
  if (o == "/")
    return PyNumber_TrueDivide(a, b);
  if (o == "//")
    return PyNumber_FloorDivide(a, b);
  if (o == "%")
    return PyNumber_Remainder(a, b);
  if (o == "**")
    return PyNumber_Power(a, b, Py_None);
  if (o == "<<")
    return PyNumber_Lshift(a, b);
  if (o == ">>")
    return PyNumber_Rshift(a, b);
  if (o == "&")
    return PyNumber_And(a, b);
  if (o == "|")
    return PyNumber_Or(a, b);
  if (o == "^")
    return PyNumber_Xor(a, b);
  if (o == "<")
    return PyObject_RichCompare(a, b, Py_LT);
  if (o == "<=")
    return PyObject_RichCompare(a, b, Py_LE);
  if (o == ">")
    return PyObject_RichCompare(a, b, Py_GT);
  if (o == ">=")
    return PyObject_RichCompare(a, b, Py_GE);
  if (o == "==")
    return PyObject_RichCompare(a, b, Py_EQ);
  if (o == "!=")
    return PyObject_RichCompare(a, b, Py_NE);
  throw Unsupported("operator " + op + " on constants");
}

/// Pure builtins that may be evaluated on constants at capture time.
bool isPureBuiltin(const std::string &name) {
  static const std::unordered_set<std::string> pure = {
      "len",      "isinstance", "issubclass", "range",   "tuple",   "list",      "int",
      "float",    "bool",       "min",        "max",     "abs",     "round",     "sum",
      "any",      "all",        "str",        "hasattr", "getattr", "enumerate", "zip",
      "reversed", "sorted",     "divmod",     "pow",     "type"};
  return pure.count(name) > 0;
}

bool Interpreter::isGradContextType(PyObject *t) {
  static PyObject *noGrad = PyObject_GetAttrString(torchModule(), "no_grad");         // leaked
  static PyObject *enableGrad = PyObject_GetAttrString(torchModule(), "enable_grad"); // leaked
  return t && (t == noGrad || t == enableGrad);
}

int Interpreter::gradContextMode(const VarP &ctx) {
  if (!ctx->isConst())
    return -1;
  PyObject *t = reinterpret_cast<PyObject *>(Py_TYPE(ctx->obj.get()));
  if (!isGradContextType(t))
    return -1;
  static PyObject *enableGrad = PyObject_GetAttrString(torchModule(), "enable_grad"); // leaked
  return t == enableGrad ? 1 : 0;
}

void Interpreter::checkGradRegions() const {
  if (!gradSwitched_ || !gradOnSomewhere_)
    return;
  // Graph results carry one requires_grad rule (the entry's grad mode); a
  // region with another mode would give results eager marks differently.
  for (const GraphInput &in : out_.inputs)
    if (in.requiresGrad)
      throw Unsupported("a torch.no_grad()/enable_grad() block in a graph whose inputs "
                        "require grad (grad mode is on in part of it)");
}

std::vector<std::pair<PyRef, VarP>> Interpreter::dictItems(const VarP &d) {
  std::vector<std::pair<PyRef, VarP>> out;
  if (d->kind == Var::Kind::Dict) {
    for (size_t i = 0; i < d->keys.size(); ++i)
      out.push_back({d->keys[i], d->items[i]});
    return out;
  }
  PyObject *o = constObj(d, "mapping");
  if (!PyDict_CheckExact(o))
    throw Unsupported("** of a " + pyText(reinterpret_cast<PyObject *>(Py_TYPE(o))));
  // Items of a dict read from the frame are read (and guarded) one by one.
  if (d->source >= 0)
    guardLength(d->source, PyDict_Size(o));
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(o, &pos, &k, &v)) {
    bool keyed = d->source >= 0 && PyUnicode_CheckExact(k);
    out.push_back({PyRef::borrow(k),
                   keyed ? fromSource(v, out_.sources.add(Source::Kind::DictItem, d->source, 0, k))
                         : makeConst(PyRef::borrow(v))});
  }
  return out;
}

VarP Interpreter::tensorMethodOrAttr(const VarP &obj, PyObject *name) {
  try {
    return loadAttr(obj, name);
  } catch (const Unsupported &) {
    // A Tensor method kiln does not capture (`x.item()`): the graph breaks
    // at its call, so that the eager part is just the call.
    static PyObject *tensorType = PyObject_GetAttrString(torchModule(), "Tensor"); // leaked
    PyRef m = PyRef::steal(PyObject_GetAttr(tensorType, name));
    PyErr_Clear();
    if (!m || !(Py_TYPE(m.get()) == &PyMethodDescr_Type || PyFunction_Check(m.get()) ||
                Py_TYPE(m.get()) == &PyWrapperDescr_Type))
      throw;
    auto v = std::make_shared<Var>();
    v->kind = Var::Kind::TensorMethod;
    v->self = obj;
    v->name = pyText(name);
    return v;
  }
}

VarP Interpreter::interpret(Frame &f) {
  size_t pc = 0;
  VarP result;
  while (pc < f.code->instrs.size()) {
    if (++steps_ > 200000)
      throw Unsupported("capture exceeded the instruction budget (very long loop?)");
    const Instr &in = f.code->instrs[pc];
    loc_ = mlir::FileLineColLoc::get(&ctx_, f.code->filename, in.line, 0);
    if (f.isRoot) {
      rootOffset_ = in.offset;
      if (in.offset == out_.stopOffset) {
        for (const VarP &v : f.stack) // the state passed on is read (LazyValues.cpp)
          materializeDeep(v);
        for (const VarP &v : f.locals)
          materializeDeep(v);
        for (const auto &[name, cell] : f.cells)
          materializeDeep(cell);
        return breakState(f);
      }
    }
    materializeOperands(f, in); // LazyValues.cpp
    struct LazyScope {          // reads are lazy only while a pushing-only instruction runs
      bool &flag, saved;
      ~LazyScope() { flag = saved; }
    } scope{lazyReads_, lazyReads_};
    lazyReads_ = in.op == "LOAD_FAST" || in.op == "LOAD_FAST_CHECK" || in.op == "LOAD_GLOBAL" ||
                 in.op == "LOAD_ATTR" || in.op == "LOAD_METHOD" || in.op == "LOAD_DEREF" ||
                 in.op == "BINARY_SUBSCR";
    if (step(f, pc, result)) {
      if (f.isRoot)
        rootOffset_ = -1;
      return result;
    }
  }
  throw Unsupported("fell off the end of the bytecode");
}

bool Interpreter::step(Frame &f, size_t &pc, VarP &result) {
  const Instr &in = f.code->instrs[pc];
  const std::string &op = in.op;
  auto jumpTo = [&](PyObject *target) { pc = f.code->indexOfOffset.at(PyLong_AsLong(target)); };
  size_t next = pc + 1;
  if (op == "RESUME" || op == "NOP" || op == "PRECALL" || op == "CACHE" || op == "EXTENDED_ARG" ||
      op == "COPY_FREE_VARS") {
    // COPY_FREE_VARS: free variables were bound when the frame was set up.
  } else if (op == "RETURN_GENERATOR") {
    // A generator frame run to completion (Inlining.cpp): the value
    // RETURN_GENERATOR leaves is popped by the POP_TOP after it.
    if (!f.generator)
      throw Unsupported("RETURN_GENERATOR outside a generator");
    f.stack.push_back(makeConst(PyRef::borrow(Py_None)));
  } else if (op == "YIELD_VALUE") {
    if (!f.generator)
      throw Unsupported("yield outside a generator");
    f.yields.push_back(pop(f));
    f.stack.push_back(makeConst(PyRef::borrow(Py_None))); // the value sent in
  } else if (op == "GET_YIELD_FROM_ITER") {
    f.stack.push_back(getIter(pop(f)));
  } else if (op == "SEND") {
    // `yield from it` (None sent each time): the next item is yielded, the
    // end jumps past the loop with None (the sub-generator's return value).
    pop(f);
    VarP it = f.stack.back();
    if (it->kind != Var::Kind::Iter)
      throw Unsupported("yield from a value that is not an iterator");
    if (it->pos < it->items.size()) {
      f.stack.push_back(it->items[it->pos++]);
    } else {
      if (PY_MINOR_VERSION < 12)
        pop(f); // 3.12 leaves the iterator for END_SEND
      f.stack.push_back(makeConst(PyRef::borrow(Py_None)));
      jumpTo(in.argval.get());
      return false;
    }
  } else if (op == "END_SEND") {
    VarP v = pop(f);
    pop(f);
    f.stack.push_back(v);
  } else if (op == "FORMAT_VALUE") {
    // f-string pieces on constants (values of tensors are data: a break).
    VarP spec = (in.arg & 0x04) ? pop(f) : nullptr;
    VarP v = pop(f);
    PyObject *o = constObj(v, "f-string value");
    int conv = in.arg & 0x03;
    PyRef conv1 = PyRef::steal(conv == 1   ? PyObject_Str(o)
                               : conv == 2 ? PyObject_Repr(o)
                               : conv == 3 ? PyObject_ASCII(o)
                                           : (Py_INCREF(o), o));
    PyRef emptySpec = PyRef::steal(PyUnicode_FromString(""));
    PyRef r = conv1 ? PyRef::steal(PyObject_Format(conv1.get(), spec ? constObj(spec, "format spec")
                                                                     : emptySpec.get()))
                    : PyRef();
    if (!r) {
      PyErr_Clear();
      throw Unsupported("formatting an f-string value raised");
    }
    f.stack.push_back(makeConst(r));
  } else if (op == "BUILD_STRING") {
    PyRef parts = PyRef::steal(PyTuple_New(in.arg));
    for (int i = in.arg - 1; i >= 0; --i) {
      VarP part = pop(f); // owns the string until it is in the tuple
      PyObject *o = constObj(part, "f-string part");
      Py_INCREF(o);
      PyTuple_SET_ITEM(parts.get(), i, o);
    }
    PyRef empty = PyRef::steal(PyUnicode_FromString(""));
    PyRef r = PyRef::steal(PyUnicode_Join(empty.get(), parts.get()));
    if (!r) {
      PyErr_Clear();
      throw Unsupported("BUILD_STRING of non-strings");
    }
    f.stack.push_back(makeConst(r));
  } else if (op == "IMPORT_NAME") {
    // An import inside a function: only of a module already imported (no
    // import side effects at capture); the module is a constant.
    VarP fromlist = pop(f), level = pop(f);
    PyRef name = in.argval;
    PyRef mod = PyRef::steal(PyImport_ImportModuleLevelObject(
        name.get(), f.globals.get(), nullptr, constObj(fromlist, "import fromlist"),
        (int)asLong(constObj(level, "import level"))));
    if (!mod) {
      PyErr_Clear();
      throw Unsupported("import of " + pyText(name.get()) + " failed at capture time");
    }
    keepAlive_.push_back(mod);
    f.stack.push_back(makeConst(mod));
  } else if (op == "IMPORT_FROM") {
    PyObject *mod = constObj(f.stack.back(), "module");
    PyRef v = PyRef::steal(PyObject_GetAttr(mod, in.argval.get()));
    if (!v) {
      PyErr_Clear();
      throw Unsupported("cannot import name " + pyText(in.argval.get()));
    }
    keepAlive_.push_back(v);
    f.stack.push_back(makeConst(v));
  } else if (op == "MAKE_CELL") {
    std::string name = pyText(in.argval.get());
    auto cell = std::make_shared<Var>();
    cell->kind = Var::Kind::Cell;
    // An argument that is also a cell starts with the argument's value.
    std::vector<std::string> names =
        localNames(reinterpret_cast<PyCodeObject *>(f.code->code.get()));
    auto it = std::find(names.begin(), names.end(), name);
    if (it != names.end()) {
      int idx = static_cast<int>(it - names.begin());
      bool bound = f.isRoot ? (f.loaded[idx] ? f.locals[idx] != nullptr
                                             : idx < frame_.numLocals && frame_.locals[idx])
                            : f.locals[idx] != nullptr;
      if (bound)
        cell->items.push_back(loadLocal(f, idx));
    }
    f.cells[name] = cell;
  } else if (op == "LOAD_DEREF" || op == "LOAD_CLOSURE") {
    std::string name = pyText(in.argval.get());
    auto it = f.cells.find(name);
    if (it == f.cells.end())
      throw Unsupported("closure variable '" + name + "' is not bound");
    f.stack.push_back(op == "LOAD_CLOSURE" ? it->second : cellContent(it->second, name));
  } else if (op == "STORE_DEREF") {
    std::string name = pyText(in.argval.get());
    auto it = f.cells.find(name);
    if (it == f.cells.end() || it->second->obj)
      throw Unsupported("assigning the enclosing function's variable '" + name +
                        "' (nonlocal) is not supported yet");
    it->second->items = {pop(f)};
  } else if (op == "MAKE_FUNCTION") {
    VarP codeVar = pop(f);
    PyObject *code = constObj(codeVar, "function code");
    if (!PyCode_Check(code))
      throw Unsupported("MAKE_FUNCTION without a code object");
    VarP closure = in.arg & 0x08 ? pop(f) : nullptr;
    if (in.arg & 0x04)
      pop(f); // annotations
    VarP kwdefaults = in.arg & 0x02 ? pop(f) : nullptr;
    VarP defaults = in.arg & 0x01 ? pop(f) : nullptr;
    PyRef fn = PyRef::steal(PyFunction_New(code, f.globals.get()));
    if (!fn) {
      PyErr_Clear();
      throw Unsupported("cannot create function");
    }
    if (defaults) {
      if (defaults->kind == Var::Kind::Tuple)
        for (auto &d : defaults->items)
          constObj(d, "default argument value");
      PyObject *d = constObj(defaults, "default arguments");
      if (PyFunction_SetDefaults(fn.get(), d) < 0) {
        PyErr_Clear();
        throw Unsupported("invalid defaults");
      }
    }
    if (kwdefaults &&
        PyFunction_SetKwDefaults(fn.get(), constObj(kwdefaults, "keyword defaults")) < 0) {
      PyErr_Clear();
      throw Unsupported("invalid keyword defaults");
    }
    keepAlive_.push_back(fn);
    auto v = std::make_shared<Var>();
    v->kind = Var::Kind::Function;
    v->obj = fn;
    if (closure)
      v->items = closure->items;
    f.stack.push_back(v);
  } else if (op == "LOAD_FAST" || op == "LOAD_FAST_CHECK") {
    f.stack.push_back(loadLocal(f, in.arg));
  } else if (op == "STORE_FAST") {
    f.locals[in.arg] = pop(f);
    if (f.isRoot)
      f.loaded[in.arg] = true;
  } else if (op == "DELETE_FAST") {
    f.locals[in.arg] = nullptr;
  } else if (op == "LOAD_CONST") {
    f.stack.push_back(makeConst(in.argval));
  } else if (op == "RETURN_CONST") {
    result = makeConst(in.argval);
    return true;
  } else if (op == "LOAD_GLOBAL") {
    if (in.arg & 1)
      f.stack.push_back(nullVar());
    f.stack.push_back(loadGlobal(f, in.argval.get()));
  } else if (op == "LOAD_ATTR" || op == "LOAD_METHOD") {
    VarP obj = pop(f);
    bool methodForm = op == "LOAD_METHOD" || (in.arg & 1 && PY_MINOR_VERSION >= 12);
    VarP attr = methodForm && obj->isTensor() ? tensorMethodOrAttr(obj, in.argval.get())
                                              : loadAttr(obj, in.argval.get());
    PyObject *a = attr->isConst() ? attr->obj.get() : nullptr;
    if (methodForm && a && obj->isConst() && PyCFunction_Check(a) &&
        PyCFunction_GET_SELF(a) == obj->obj.get() && !PyModule_Check(obj->obj.get())) {
      // A builtin method of an object (`lst.append`): kept as CPython's
      // [function, self] so that a graph break calls it on the object the
      // frame holds at run time, not on the one seen at capture.
      PyRef fn = PyRef::steal(
          PyObject_GetAttr(reinterpret_cast<PyObject *>(Py_TYPE(obj->obj.get())), in.argval.get()));
      PyErr_Clear();
      if (fn) {
        f.stack.push_back(makeConst(fn));
        f.stack.push_back(obj);
        pc = next;
        return false;
      }
    }
    if (methodForm)
      f.stack.push_back(nullVar());
    f.stack.push_back(attr);
  } else if (op == "PUSH_NULL") {
    f.stack.push_back(nullVar());
  } else if (op == "KW_NAMES") {
    PyRef consts = PyRef::steal(PyObject_GetAttrString(f.code->code.get(), "co_consts"));
    f.kwNames = PyRef::borrow(PyTuple_GetItem(consts.get(), in.arg));
  } else if (op == "CALL") {
    int argc = in.arg;
    std::vector<VarP> args(f.stack.end() - argc, f.stack.end());
    f.stack.resize(f.stack.size() - argc);
    VarP b = pop(f), a = pop(f);
    VarP callee = a->kind == Var::Kind::Null ? b : a;
    if (a->kind != Var::Kind::Null)
      args.insert(args.begin(), b);
    std::map<std::string, VarP> kwargs;
    if (f.kwNames) {
      Py_ssize_t nk = PyTuple_GET_SIZE(f.kwNames.get());
      for (Py_ssize_t i = 0; i < nk; ++i)
        kwargs[PyUnicode_AsUTF8(PyTuple_GET_ITEM(f.kwNames.get(), i))] = args[args.size() - nk + i];
      args.resize(args.size() - nk);
      f.kwNames = PyRef();
    }
    bool superCall = callee->isConst() && callee->obj.get() == (PyObject *)&PySuper_Type &&
                     args.empty() && kwargs.empty();
    f.stack.push_back(superCall ? zeroArgSuper(f) : call(callee, args, kwargs));
  } else if (op == "CALL_FUNCTION_EX") {
    // f(*args, **kwargs): one tuple/list and (arg & 1) one dict (3.11+:
    // after a NULL).
    VarP kwVar = in.arg & 1 ? pop(f) : nullptr;
    VarP argsVar = pop(f);
    VarP callee = pop(f);
    if (!f.stack.empty() && f.stack.back()->kind == Var::Kind::Null)
      pop(f);
    std::vector<VarP> args = iterItems(argsVar);
    std::map<std::string, VarP> kwargs;
    if (kwVar)
      for (auto &[k, v] : dictItems(kwVar)) {
        if (!PyUnicode_Check(k.get()))
          throw Unsupported("keywords must be strings");
        kwargs[PyUnicode_AsUTF8(k.get())] = v;
      }
    f.stack.push_back(call(callee, args, kwargs));
  } else if (op == "BEFORE_WITH") { // ContextManagers.cpp
    VarP ctxVar = pop(f);
    enterWith(f, ctxVar);
  } else if (op == "DICT_MERGE" || op == "DICT_UPDATE") {
    // {**a, **b} / f(**a): merges the popped mapping into a dict built here.
    VarP src = pop(f);
    VarP &dst = f.stack[f.stack.size() - in.arg];
    if (dst->kind != Var::Kind::Dict)
      throw Unsupported(op + " into a value that is not a dict built here");
    for (auto &[k, v] : dictItems(src)) {
      int at = dictFind(dst, k.get());
      if (at >= 0 && op == "DICT_MERGE")
        throw Unsupported("keyword argument repeated in a ** call");
      if (at >= 0) {
        dst->items[at] = v;
      } else {
        dst->keys.push_back(k);
        dst->items.push_back(v);
      }
    }
  } else if (op == "BINARY_OP" || op == "COMPARE_OP") {
    VarP rhs = pop(f), lhs = pop(f);
    std::string sym = in.argrepr;
    if (op == "COMPARE_OP")
      sym = pyText(in.argval.get());
    if (op == "BINARY_OP")
      if (VarP lazy = lazyBinary(sym, lhs, rhs)) { // LazyValues.cpp
        f.stack.push_back(lazy);
        pc = next;
        return false;
      }
    materializeDeep(lhs);
    materializeDeep(rhs);
    VarP seq = !lhs->isTensor() && !rhs->isTensor() ? symIntBinary(sym, lhs, rhs) : nullptr;
    if (!seq)
      seq = tensorBinary(sym, lhs, rhs);
    if (!seq && !lhs->isTensor() && !rhs->isTensor())
      seq = seqBinary(sym, lhs, rhs, [&](const VarP &v) { return iterItems(v); });
    if (seq) {
      f.stack.push_back(seq);
    } else {
      PyRef l = seqAsConst(lhs), r0 = seqAsConst(rhs);
      PyRef r = PyRef::steal(constBinary(sym, l ? l.get() : constObj(lhs, "operand"),
                                         r0 ? r0.get() : constObj(rhs, "operand")));
      if (!r) {
        PyErr_Clear();
        throw Unsupported("operator " + sym + " raised on constants");
      }
      f.stack.push_back(makeConst(r));
    }
  } else if (op == "UNARY_NEGATIVE" || op == "UNARY_INVERT") {
    // -x is Tensor.neg; ~x is Tensor.bitwise_not (bool tensors: logical not).
    bool neg = op == "UNARY_NEGATIVE";
    VarP v = pop(f);
    if (v->isTensor()) {
      std::vector<VarP> none;
      std::map<std::string, VarP> nokw;
      f.stack.push_back(callTensorMethod(v, neg ? "neg" : "bitwise_not", none, nokw));
    } else {
      PyObject *c = constObj(v, "operand");
      PyRef r = PyRef::steal(neg ? PyNumber_Negative(c) : PyNumber_Invert(c));
      if (!r) {
        PyErr_Clear();
        throw Unsupported(std::string("unary ") + (neg ? "-" : "~") + " raised");
      }
      f.stack.push_back(makeConst(r));
    }
  } else if (op == "UNARY_NOT") {
    f.stack.push_back(makeConst(PyRef::borrow(truthy(pop(f)) ? Py_False : Py_True)));
  } else if (op == "IS_OP" || op == "CONTAINS_OP") {
    VarP rhs = pop(f), lhs = pop(f);
    bool r;
    if (op == "IS_OP") {
      if (lhs->isTensor() || rhs->isTensor())
        r = lhs->isTensor() && rhs->isTensor() && lhs->value == rhs->value;
      else if (!lhs->isConst() || !rhs->isConst())
        r = lhs.get() == rhs.get(); // containers built here are new objects
      else
        r = constObj(lhs, "operand") == constObj(rhs, "operand");
    } else if (rhs->kind == Var::Kind::Dict) {
      r = dictFind(rhs, constObj(lhs, "operand")) >= 0;
    } else if (rhs->kind == Var::Kind::Tuple || rhs->kind == Var::Kind::List ||
               rhs->kind == Var::Kind::Iter) {
      // `x in [a, b]` built here: identity for tensors, == for constants.
      r = false;
      for (const VarP &item : iterItems(rhs)) {
        if (lhs->isTensor() || item->isTensor()) {
          if (lhs->isTensor() && item->isTensor() && lhs->value == item->value)
            r = true;
          else if (lhs->isTensor() != item->isTensor())
            throw Unsupported("'in' comparing a tensor with a Python value");
          continue;
        }
        int eq = PyObject_RichCompareBool(constObj(lhs, "operand"), constObj(item, "item"), Py_EQ);
        if (eq < 0) {
          PyErr_Clear();
          throw Unsupported("'in' raised");
        }
        r |= eq == 1;
      }
    } else {
      int c = PySequence_Contains(constObj(rhs, "container"), constObj(lhs, "operand"));
      if (c < 0) {
        PyErr_Clear();
        throw Unsupported("'in' raised");
      }
      r = c == 1;
    }
    if (in.arg)
      r = !r;
    f.stack.push_back(makeConst(PyRef::borrow(r ? Py_True : Py_False)));
  } else if (op.rfind("POP_JUMP", 0) == 0) {
    VarP v = pop(f);
    bool take;
    if (op.find("NOT_NONE") != std::string::npos)
      take = !(v->isConst() && v->obj.get() == Py_None);
    else if (op.find("NONE") != std::string::npos)
      take = v->isConst() && v->obj.get() == Py_None;
    else if (op.find("FALSE") != std::string::npos)
      take = !truthy(v);
    else
      take = truthy(v);
    if (take) {
      jumpTo(in.argval.get());
      return false;
    }
  } else if (op == "JUMP_IF_FALSE_OR_POP" || op == "JUMP_IF_TRUE_OR_POP") {
    bool t = truthy(f.stack.back());
    if (t == (op == "JUMP_IF_TRUE_OR_POP")) {
      jumpTo(in.argval.get());
      return false;
    }
    pop(f);
  } else if (op == "JUMP_FORWARD" || op == "JUMP_BACKWARD" || op == "JUMP" ||
             op == "JUMP_BACKWARD_NO_INTERRUPT" || op == "JUMP_NO_INTERRUPT") {
    jumpTo(in.argval.get());
    return false;
  } else if (op == "GET_ITER") {
    f.stack.push_back(getIter(pop(f)));
  } else if (op == "FOR_ITER") {
    VarP it = f.stack.back();
    if (it->kind != Var::Kind::Iter)
      throw Unsupported("FOR_ITER over a non-iterator");
    if (it->pos < it->items.size()) {
      f.stack.push_back(it->items[it->pos++]);
    } else {
      pop(f);
      jumpTo(in.argval.get());
      if (f.code->instrs[pc].op == "END_FOR")
        ++pc; // 3.12: exhaustion skips END_FOR
      return false;
    }
  } else if (op == "END_FOR") {
    pop(f);
    pop(f);
  } else if (op == "POP_TOP") {
    pop(f);
  } else if (op == "COPY") {
    f.stack.push_back(f.stack[f.stack.size() - in.arg]);
  } else if (op == "SWAP") {
    std::swap(f.stack.back(), f.stack[f.stack.size() - in.arg]);
  } else if (op == "BUILD_TUPLE" || op == "BUILD_LIST") {
    std::vector<VarP> items(f.stack.end() - in.arg, f.stack.end());
    f.stack.resize(f.stack.size() - in.arg);
    f.stack.push_back(makeSeq(op == "BUILD_TUPLE" ? Var::Kind::Tuple : Var::Kind::List, items));
  } else if (op == "MAP_ADD") {
    VarP value = pop(f), key = pop(f);
    VarP &d = f.stack[f.stack.size() - in.arg];
    if (d->kind != Var::Kind::Dict || d->obj)
      throw Unsupported("MAP_ADD into a value that is not a dict built here");
    dictSet(d, constObj(key, "dict key"), value);
  } else if (op == "LIST_APPEND") {
    VarP v = pop(f);
    f.stack[f.stack.size() - in.arg]->items.push_back(v);
  } else if (op == "LIST_EXTEND") {
    VarP v = pop(f);
    VarP it = getIter(v);
    auto &dst = f.stack[f.stack.size() - in.arg]->items;
    dst.insert(dst.end(), it->items.begin(), it->items.end());
  } else if (op == "LIST_TO_TUPLE") {
    VarP v = pop(f);
    f.stack.push_back(makeSeq(Var::Kind::Tuple, v->items));
  } else if (op == "UNPACK_SEQUENCE") {
    VarP v = getIter(pop(f));
    if ((int)v->items.size() != in.arg)
      throw Unsupported("unpacking a sequence of the wrong length");
    for (auto it = v->items.rbegin(); it != v->items.rend(); ++it)
      f.stack.push_back(*it);
  } else if (op == "BUILD_MAP" || op == "BUILD_CONST_KEY_MAP") {
    auto d = std::make_shared<Var>();
    d->kind = Var::Kind::Dict;
    std::vector<VarP> keys, values;
    if (op == "BUILD_CONST_KEY_MAP") {
      PyObject *ks = constObj(pop(f), "dict keys");
      if (!PyTuple_Check(ks) || PyTuple_GET_SIZE(ks) != in.arg)
        throw Unsupported("BUILD_CONST_KEY_MAP without a key tuple");
      values.assign(f.stack.end() - in.arg, f.stack.end());
      f.stack.resize(f.stack.size() - in.arg);
      for (Py_ssize_t i = 0; i < in.arg; ++i)
        keys.push_back(makeConst(PyRef::borrow(PyTuple_GET_ITEM(ks, i))));
    } else {
      std::vector<VarP> kv(f.stack.end() - 2 * in.arg, f.stack.end());
      f.stack.resize(f.stack.size() - 2 * in.arg);
      for (int i = 0; i < in.arg; ++i) {
        keys.push_back(kv[2 * i]);
        values.push_back(kv[2 * i + 1]);
      }
    }
    for (size_t i = 0; i < keys.size(); ++i) {
      PyObject *k = constObj(keys[i], "dict key");
      if (PyObject_Hash(k) == -1) {
        PyErr_Clear();
        throw Unsupported("unhashable dict key");
      }
      int at = dictFind(d, k);
      if (at >= 0) {
        d->items[at] = values[i];
      } else {
        d->keys.push_back(PyRef::borrow(k));
        d->items.push_back(values[i]);
      }
    }
    f.stack.push_back(d);
  } else if (op == "STORE_SUBSCR" && f.stack.size() >= 3 &&
             (f.stack[f.stack.size() - 2]->kind == Var::Kind::Dict ||
              f.stack[f.stack.size() - 2]->kind == Var::Kind::List ||
              f.stack[f.stack.size() - 2]->isConst())) {
    VarP key = pop(f), c = pop(f), value = pop(f);
    storeItem(c, key, value); // SideEffects.cpp
  } else if (op == "BUILD_SLICE" || op == "BINARY_SLICE") {
    VarP step = op == "BUILD_SLICE" && in.arg == 3 ? pop(f) : nullptr;
    VarP stop = pop(f), start = pop(f);
    VarP sl;
    if (start->kind == Var::Kind::SymInt || stop->kind == Var::Kind::SymInt ||
        (step && step->kind == Var::Kind::SymInt)) {
      // A bound is a symbolic size: only tensor indexing takes it.
      VarP none = makeConst(PyRef::borrow(Py_None));
      sl = makeSeq(Var::Kind::SymSlice, {start, stop, step ? step : none});
    } else {
      PyRef slice =
          PyRef::steal(PySlice_New(constObj(start, "slice start"), constObj(stop, "slice stop"),
                                   step ? constObj(step, "slice step") : nullptr));
      if (!slice) {
        PyErr_Clear();
        throw Unsupported("invalid slice");
      }
      sl = makeConst(slice);
    }
    if (op == "BINARY_SLICE") {
      VarP c = pop(f);
      f.stack.push_back(subscript(c, sl));
    } else {
      f.stack.push_back(sl);
    }
  } else if (op == "BINARY_SUBSCR") {
    VarP idx = pop(f), c = pop(f);
    f.stack.push_back(subscript(c, idx));
  } else if (op == "RETURN_VALUE") {
    result = pop(f);
    return true;
  } else if (op == "LOAD_ASSERTION_ERROR" || op == "RAISE_VARARGS") {
    throw Unsupported("raise (or a failing assert) inside the compiled region");
  } else if (op == "STORE_ATTR") { // SideEffects.cpp
    VarP obj = pop(f), value = pop(f);
    storeAttr(obj, in.argval.get(), value);
  } else if (op == "STORE_GLOBAL") {
    storeGlobal(f, in.argval.get(), pop(f));
  } else if (op == "STORE_SUBSCR" || op == "DELETE_ATTR" || op == "DELETE_SUBSCR") {
    throw Unsupported("mutation (" + op + ") of Python state is not supported yet");
  } else if (op == "DELETE_DEREF") {
    throw Unsupported("del of a closure variable is not supported yet");
  } else {
    throw Unsupported("opcode " + op + " is not supported yet");
  }
  pc = next;
  return false;
}

VarP Interpreter::call(const VarP &callee, std::vector<VarP> &args,
                       std::map<std::string, VarP> &kwargs) {
  if (callee->kind == Var::Kind::TensorMethod) {
    if (VarP q = tensorQuery(callee->self, callee->name, args, kwargs))
      return q;
    return callTensorMethod(callee->self, callee->name, args, kwargs);
  }
  if (callee->kind == Var::Kind::ListMethod && callee->self->kind == Var::Kind::Dict) {
    const VarP &d = callee->self;
    if (callee->name == "get") {
      if (args.empty() || args.size() > 2 || !kwargs.empty())
        throw Unsupported("dict.get takes one or two arguments");
      int at = dictFind(d, constObj(args[0], "dict key"));
      return at >= 0            ? d->items[at]
             : args.size() == 2 ? args[1]
                                : makeConst(PyRef::borrow(Py_None));
    }
    if (callee->name == "pop" && !d->obj) // a dict built here (not a record)
      return dictPop(d, args, kwargs);
    if (!args.empty() || !kwargs.empty())
      throw Unsupported("dict." + callee->name + " takes no arguments");
    if (callee->name == "to_tuple") // a ModelOutput record
      return makeSeq(Var::Kind::Tuple, d->items);
    std::vector<VarP> items;
    for (size_t i = 0; i < d->keys.size(); ++i) {
      VarP k = makeConst(d->keys[i]);
      items.push_back(callee->name == "keys"     ? k
                      : callee->name == "values" ? d->items[i]
                                                 : makeSeq(Var::Kind::Tuple, {k, d->items[i]}));
    }
    return makeSeq(Var::Kind::Iter, items);
  }
  if (callee->kind == Var::Kind::ListMethod) // SideEffects.cpp
    return listMutation(callee->self, callee->name, args, kwargs);
  if (callee->kind == Var::Kind::Function)
    return inlineFunction(callee->obj.get(), -1, args, kwargs, &callee->items);
  if (callee->kind == Var::Kind::BoundMethod && callee->obj.get() == moduleCallFunction() &&
      callee->self->isConst() && isModule(callee->self->obj.get())) {
    // nn.Module.__call__ reached through super().__call__ from a custom
    // __call__: the plain module call (hook checks, forward inlined).
    plainModuleCall_ = callee->self->obj.get();
    return call(callee->self, args, kwargs);
  }
  if (callee->kind == Var::Kind::BoundMethod) {
    static PyObject *moduleType = [] {
      PyRef nn = PyRef::steal(PyImport_ImportModule("torch.nn"));
      PyObject *t = nn ? PyObject_GetAttrString(nn.get(), "Module") : nullptr;
      PyErr_Clear();
      return t; // leaked: process lifetime
    }();
    for (const char *m : {"modules", "named_modules", "children", "named_children"}) {
      PyRef fnObj = PyRef::steal(moduleType ? PyObject_GetAttrString(moduleType, m) : nullptr);
      PyErr_Clear();
      if (fnObj.get() == callee->obj.get() && callee->self->isConst())
        return moduleTree(callee->self, m, args, kwargs);
    }
    args.insert(args.begin(), callee->self);
    return inlineFunction(callee->obj.get(), -1, args, kwargs);
  }
  PyObject *fn = constObj(callee, "callee");
  auto exitIt = gradExits_.find(fn);
  if (exitIt != gradExits_.end()) { // the end of a grad-mode with-block
    gradMode_ = exitIt->second;
    gradExits_.erase(exitIt);
    return makeConst(PyRef::borrow(Py_False));
  }
  if (VarP r = callListMutation(fn, args, kwargs)) // SideEffects.cpp
    return r;
  if (VarP ctx = constructContext(fn, args, kwargs)) // ContextManagers.cpp
    return ctx;
  if (VarP r = callVmap(fn, args, kwargs)) // Vmap.cpp
    return r;
  if (VarP r = callAtCapture(fn, args, kwargs)) // PythonBuiltins.cpp
    return r;
  if (VarP r = callStateQuery(fn, args, kwargs))
    return r;
  if (PyObject *decomp = pythonDecomposition(fn)) // a fused kernel as kiln-mapped ops
    return inlineFunction(decomp, -1, args, kwargs);
  if (VarP r = callTorchFunction(fn, args, kwargs))
    return r;
  if (isModule(fn)) {
    bool plainCall = plainModuleCall_ == fn; // reached from super().__call__
    plainModuleCall_ = nullptr;
    // Module.__call__ runs hooks (the module's and the global ones) around
    // forward; the graph inlines forward alone, so it guards that there are
    // none: a hook registered later must recompile (and then fall back).
    int modSrc = sourceOf(callee);
    int dictSrc = modSrc >= 0 ? out_.sources.add(Source::Kind::ObjDict, modSrc, 0, nullptr) : -1;
    for (const char *hooks :
         {"_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks"}) {
      PyObject **dictPtr = _PyObject_GetDictPtr(fn);
      PyObject *h = dictPtr && *dictPtr ? PyDict_GetItemString(*dictPtr, hooks) : nullptr;
      if (!h || !PyDict_Check(h))
        continue;
      if (PyDict_Size(h) > 0)
        throw Unsupported("module " + std::string(Py_TYPE(fn)->tp_name) + " has hooks");
      if (dictSrc >= 0) {
        PyRef key = PyRef::steal(PyUnicode_FromString(hooks));
        guardLength(out_.sources.add(Source::Kind::DictItem, dictSrc, 0, key.get()), 0);
      }
    }
    static PyObject *moduleModule = PyImport_ImportModule("torch.nn.modules.module"); // leaked
    for (const char *hooks : {"_global_forward_hooks", "_global_forward_pre_hooks",
                              "_global_backward_hooks", "_global_backward_pre_hooks"}) {
      PyRef h = PyRef::steal(moduleModule ? PyObject_GetAttrString(moduleModule, hooks) : nullptr);
      if (!h || !PyDict_Check(h.get()))
        continue;
      if (PyDict_Size(h.get()) > 0)
        throw Unsupported("global module hooks are registered");
      guardLength(out_.sources.add(Source::Kind::Constant, -1, 0, h.get()), 0);
    }
    PyErr_Clear();
    PyObject **instDict = _PyObject_GetDictPtr(fn);
    if (instDict && *instDict && PyDict_GetItemString(*instDict, "forward"))
      throw Unsupported("module " + std::string(Py_TYPE(fn)->tp_name) +
                        " has a forward set on the instance");
    // A kiln.compile'd module called inside a compiled region: inline the
    // module it wraps.
    static PyObject *compiledModuleType = [] {
      PyRef api = PyRef::steal(PyImport_ImportModule("kiln.api"));
      PyObject *t = api ? PyObject_GetAttrString(api.get(), "CompiledModule") : nullptr;
      PyErr_Clear();
      return t; // leaked: process lifetime
    }();
    if (compiledModuleType &&
        PyObject_TypeCheck(fn, reinterpret_cast<PyTypeObject *>(compiledModuleType))) {
      PyRef name = PyRef::steal(PyUnicode_FromString("_orig_mod"));
      VarP inner = loadAttr(sourceOf(callee) >= 0 && callee->source < 0
                                ? makeConst(callee->obj, sourceOf(callee))
                                : callee,
                            name.get());
      return call(inner, args, kwargs);
    }
    if (!plainCall) {
      // A module class with its own __call__ (e.g. transformers'
      // GradientCheckpointingLayer): inline it; its super().__call__ comes
      // back here as nn.Module.__call__ (plainModuleCall_).
      PyRef own = PyRef::steal(
          PyObject_GetAttrString(reinterpret_cast<PyObject *>(Py_TYPE(fn)), "__call__"));
      PyErr_Clear();
      if (own && own.get() != moduleCallFunction() && PyFunction_Check(own.get())) {
        keepAlive_.push_back(own);
        args.insert(args.begin(), callee);
        return inlineFunction(own.get(), -1, args, kwargs);
      }
    }
    PyRef forward =
        PyRef::steal(PyObject_GetAttrString(reinterpret_cast<PyObject *>(Py_TYPE(fn)), "forward"));
    if (!forward || !PyFunction_Check(forward.get())) {
      PyErr_Clear();
      throw Unsupported("module " + std::string(Py_TYPE(fn)->tp_name) + " has no Python forward");
    }
    keepAlive_.push_back(forward);
    args.insert(args.begin(), callee);
    return inlineFunction(forward.get(), -1, args, kwargs);
  }
  if (PyFunction_Check(fn)) {
    // A kiln.compile'd function called inside a compiled region: inline the
    // function it wraps (read through its source, so it stays guarded).
    PyObject *fdict = reinterpret_cast<PyFunctionObject *>(fn)->func_dict;
    PyObject *wrapped = fdict && PyDict_GetItemString(fdict, "_kiln_compiled") == Py_True
                            ? PyDict_GetItemString(fdict, "__wrapped__")
                            : nullptr;
    if (wrapped) {
      PyRef name = PyRef::steal(PyUnicode_FromString("__wrapped__"));
      VarP inner = callee->source >= 0
                       ? fromSource(wrapped, out_.sources.add(Source::Kind::Attr, callee->source, 0,
                                                              name.get()))
                       : makeConst(PyRef::borrow(wrapped));
      return call(inner, args, kwargs);
    }
    if (isTorchOpFunction(
            fn)) // unmapped Python code of torch: inline it, else run it through torch
      return withFallback(fn, "", args, kwargs,
                          [&] { return inlineFunction(fn, callee->source, args, kwargs); });
    return inlineFunction(fn, callee->source, args, kwargs);
  }
  if (VarP rec = buildRecord(fn, args, kwargs))
    return rec;
  if (PyMethod_Check(fn) && PyFunction_Check(PyMethod_GET_FUNCTION(fn))) {
    args.insert(args.begin(), makeConst(PyRef::borrow(PyMethod_GET_SELF(fn))));
    return inlineFunction(PyMethod_GET_FUNCTION(fn), -1, args, kwargs);
  }
  if (VarP r = torchFallback(fn, "", args, kwargs, nullptr)) // an unmapped torch op
    return r;
  return callBuiltin(fn, args, kwargs);
}

} // namespace kiln
