//===- LazyValues.cpp - reads nothing depends on yet (for side effects) -----===//
// SPDX-License-Identifier: Apache-2.0
//
// A counter (`self.calls += 1`) or a logging list (`self.log.append(x)`)
// must not specialize the compiled code on its value: only the side effect
// depends on it, not the graph. So an int/float/str/bool or a list read
// from a source is first a Lazy Var, with no guard. `+ - *` on such values
// stays lazy (an expression); a side effect stores the expression, which
// the replay evaluates on the values the sources hold at that call's start
// (Entry.cpp), with only the leaves' types guarded; list.append/extend/
// insert (and pop of an item appended here) on a lazy list are recorded
// without reading the list (its type is guarded). Any other use — a
// branch, tensor math, a call, an iteration, returning it — materializes
// the value before that instruction runs: it becomes exactly what an eager
// read gives (a value-guarded Const, or the list's Var with the pending
// mutations applied), so whatever depends on it is specialized and guarded
// as before.
//===----------------------------------------------------------------------===//
#include "capture/interp/Interp.h"
#include "capture/interp/PlainObjects.h"
#include "capture/interp/OpcodeHandlers.h"

#include <algorithm>

namespace kiln {

namespace {

bool lazyScalarType(PyObject *o) {
  return PyLong_CheckExact(o) || PyFloat_CheckExact(o) || PyUnicode_CheckExact(o) ||
         PyBool_Check(o);
}

bool isLazyScalar(const VarP &v) { return v->kind == Var::Kind::Lazy && !v->isLazyList(); }

bool isLazyOperator(const std::string &sym) {
  return sym == "+" || sym == "-" || sym == "*" || sym == "+=" || sym == "-=" || sym == "*=";
}

bool isListMethod(const std::string &name) {
  return name == "append" || name == "extend" || name == "insert" || name == "pop";
}

/// Deepest expression kept lazy (a counter bumped in an unrolled loop).
constexpr size_t kMaxLazyDepth = 64;

/// Applies a pending mutation to the items of the list it was made on.
void applyPending(std::vector<VarP> &items, const Var::PendingOp &p) {
  if (p.method == "append") {
    items.push_back(p.value);
  } else if (p.method == "extend") {
    items.insert(items.end(), p.value->items.begin(), p.value->items.end());
  } else { // insert, clamped as list.insert does
    long n = (long)items.size(), i = PyLong_AsLong(p.index.get());
    i = i < 0 ? std::max(0L, i + n) : std::min(i, n);
    items.insert(items.begin() + i, p.value);
  }
}

} // namespace

VarP Interpreter::lazyRead(PyObject *value, int source) {
  if (source < 0 || (!lazyScalarType(value) && !PyList_CheckExact(value)))
    return nullptr;
  auto v = std::make_shared<Var>();
  v->kind = Var::Kind::Lazy;
  v->obj = PyRef::borrow(value);
  v->source = source;
  lazies_.push_back(v);
  return v;
}

void Interpreter::guardType(int source, PyObject *obj) {
  if (source < 0 || !typeGuarded_.insert(source).second)
    return;
  Guard g;
  g.kind = Guard::Kind::Type;
  g.source = source;
  g.expected = PyRef::borrow(reinterpret_cast<PyObject *>(Py_TYPE(obj)));
  out_.guards.push_back(std::move(g));
}

bool Interpreter::anyLazy() {
  lazies_.erase(std::remove_if(lazies_.begin(), lazies_.end(),
                               [](const std::weak_ptr<Var> &w) {
                                 VarP v = w.lock();
                                 return !v || v->kind != Var::Kind::Lazy;
                               }),
                lazies_.end());
  return !lazies_.empty();
}

void Interpreter::materialize(const VarP &v) {
  if (!v || v->kind != Var::Kind::Lazy)
    return;
  if (!v->name.empty()) { // an expression: the graph depends on its reads now
    for (const VarP &operand : v->items)
      materialize(operand);
    if (v->items.size() == 2 && (!v->items[0]->isConst() || !v->items[1]->isConst())) {
      // An int or float argument read as a graph value (DynamicNumbers.cpp):
      // the value at capture holds for this call only; the expression is
      // evaluated as the operator would be now (a SymInt, a Scalar).
      VarP r = OpcodeHandlers::applyOperator(*this, v->name, v->items[0], v->items[1]);
      *v = *r;
      return;
    }
    v->kind = Var::Kind::Const; // `obj` holds its value at capture
    v->items.clear();
    v->name.clear();
    v->source = -1; // derives from guarded values
    return;
  }
  if (!v->isLazyList()) {
    if (VarP s = dynamicNumberRead(v->obj.get(), v->source)) { // DynamicNumbers.cpp
      *v = *s;
      return;
    }
    v->kind = Var::Kind::Const;
    guardValue(v);
    return;
  }
  std::vector<Var::PendingOp> pending = std::move(v->pending);
  v->pending.clear();
  v->kind = Var::Kind::Const;
  if (pending.empty()) { // what an eager read gives
    VarP eager = fromSource(v->obj.get(), v->source, /*lazy=*/false);
    if (eager.get() != v.get())
      *v = *eager;
    return;
  }
  // Mutated before this read: the list's Var (length guarded, items read
  // through their own sources) with the mutations applied.
  sourceOverlay_.erase(v->source);
  mutated_.erase(v->obj.get()); // by this Var itself: not an alias (containerVar)
  containerVar(v);
  for (const Var::PendingOp &p : pending)
    applyPending(v->items, p);
}

void Interpreter::materializeDeep(const VarP &v) {
  std::set<const Var *> seen;
  std::function<void(const VarP &)> walk = [&](const VarP &x) {
    if (!x || !seen.insert(x.get()).second)
      return;
    materialize(x);
    for (size_t i = 0; i < x->items.size(); ++i)
      walk(x->items[i]);
    walk(x->self);
  };
  walk(v);
}

void Interpreter::materializeOperands(Frame &f, const Instr &in) {
  if (!anyLazy())
    return;
  std::vector<VarP> &s = f.stack;
  auto top = [&](size_t i) -> const VarP & { return s[s.size() - 1 - i]; };
  switch (opcodeInfo(in.opcode).lazyOperands) { // the opcode table (Opcodes.def)
  case LazyOperands::None:
    return;
  case LazyOperands::Receiver:
    if (s.empty())
      break;
    // A lazy list's own mutation methods keep it unread.
    if (!(top(0)->isLazyList() && isListMethod(pyText(in.argval.get()))))
      materializeDeep(top(0));
    return;
  case LazyOperands::AttrTarget: // the stored value may stay lazy
    if (s.size() < 2)
      break;
    materializeDeep(top(0));
    return;
  case LazyOperands::ItemRead:
  case LazyOperands::ItemStore: {
    bool store = opcodeInfo(in.opcode).lazyOperands == LazyOperands::ItemStore;
    if (s.size() < (store ? 3u : 2u))
      break;
    // The key is read; a lazy container is read (a list item store checks
    // the index); a container Var's other items are not.
    materializeDeep(top(0));
    materialize(top(1));
    const VarP &c = top(1);
    if (store && c->kind != Var::Kind::Dict && c->kind != Var::Kind::List && !c->isConst())
      materializeDeep(top(2)); // a tensor item store reads the value
    return;
  }
  case LazyOperands::CallArguments: {
    if (s.size() < (size_t)in.arg + 2)
      break;
    size_t first = s.size() - in.arg - 2;
    const VarP &callee = s[first]->kind == Var::Kind::Null ? s[first + 1] : s[first];
    if (callee->kind == Var::Kind::ListMethod && callee->self && callee->self->isLazyList())
      return; // lazyListMutation reads what it needs
    for (size_t i = first; i < s.size(); ++i)
      materializeDeep(s[i]);
    return;
  }
  case LazyOperands::Stack:
    break;
  }
  for (const VarP &v : s)
    materializeDeep(v);
}

VarP Interpreter::lazyBinary(const std::string &sym, const VarP &lhs, const VarP &rhs) {
  if (!isLazyOperator(sym) || !(isLazyScalar(lhs) || isLazyScalar(rhs)))
    return nullptr;
  size_t depth = 0;
  for (const VarP &v : {lhs, rhs}) {
    if (!isLazyScalar(v) && !(v->isConst() && lazyScalarType(v->obj.get())))
      return nullptr;
    depth = std::max(depth, isLazyScalar(v) ? v->pos : 0);
  }
  if (depth >= kMaxLazyDepth)
    return nullptr;
  PyRef r = PyRef::steal(constBinary(sym, lhs->obj.get(), rhs->obj.get()));
  if (!r || !lazyScalarType(r.get())) {
    PyErr_Clear();
    return nullptr;
  }
  auto v = std::make_shared<Var>();
  v->kind = Var::Kind::Lazy;
  v->name = sym;
  v->items = {lhs, rhs};
  v->obj = r;
  v->pos = depth + 1;
  lazies_.push_back(v);
  return v;
}

VarP Interpreter::lazyListMutation(const VarP &list, const std::string &name,
                                   std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  if (!kwargs.empty())
    throw Unsupported(BreakCategory::UserError, "list." + name + " with keyword arguments");
  std::vector<Var::PendingOp> &pending = list->pending;
  SideEffect e{SideEffect::Kind::ListAppend, list->source, {}, -1, "list." + name};
  VarP logged;
  if (name == "pop") {
    // pop() of an item appended in this frame needs no read of the list.
    for (VarP &a : args)
      materializeDeep(a);
    PyObject *at = args.size() == 1 ? constObj(args[0], "list.pop index") : nullptr;
    bool atEnd =
        args.empty() || (args.size() == 1 && PyLong_CheckExact(at) && PyLong_AsLong(at) == -1);
    if (!atEnd || pending.empty() || pending.back().method != "append") {
      materialize(list); // a List Var (mutated before), or what an eager read gives
      return listMutation(list->isConst() ? containerVar(list) : list, name, args, kwargs);
    }
    VarP item = pending.back().value;
    pending.pop_back();
    e.kind = SideEffect::Kind::ListPop;
    e.key = PyRef::steal(PyLong_FromLong(-1));
    recordEffect(std::move(e), makeConst(PyRef::borrow(Py_None)));
    return item;
  }
  if (name == "append") {
    if (args.size() != 1)
      throw Unsupported(BreakCategory::UserError, "list.append takes one argument");
    pending.push_back({"append", {}, args[0]});
    logged = args[0];
  } else if (name == "extend") {
    if (args.size() != 1)
      throw Unsupported(BreakCategory::UserError, "list.extend takes one argument");
    materialize(args[0]);
    logged = makeSeq(Var::Kind::Tuple, iterItems(args[0]));
    pending.push_back({"extend", {}, logged});
    e.kind = SideEffect::Kind::ListExtend;
  } else if (name == "insert") {
    if (args.size() != 2)
      throw Unsupported(BreakCategory::UserError, "list.insert takes two arguments");
    materializeDeep(args[0]);
    PyObject *at = constObj(args[0], "list.insert index");
    if (!PyLong_CheckExact(at))
      throw Unsupported(BreakCategory::UserError, "list.insert with a non-int index");
    e.kind = SideEffect::Kind::ListInsert;
    e.key = PyRef::borrow(at);
    pending.push_back({"insert", e.key, args[1]});
    logged = args[1];
  } else {
    throw Unsupported(BreakCategory::PythonBuiltin, "list." + name + " is not supported");
  }
  recordEffect(std::move(e), logged);
  guardType(list->source, list->obj.get()); // the replay calls list methods on it
  // Later reads of this list (through its source) see the same Var.
  sourceOverlay_[list->source] = list;
  mutated_.insert(list->obj.get());
  noteContainerMutation(list->source, list->obj.get()); // PlainObjects.h
  keepAlive_.push_back(list->obj);
  return makeConst(PyRef::borrow(Py_None));
}

} // namespace kiln
