//===- Iterators.cpp - the iteration protocol during capture -----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// An Iter Var yields its `items` from `pos`, then whatever its `produce`
// makes on demand. Lazy iterators are what keep Python's order: a
// generator's frame is resumed to its next yield only when the consumer
// asks (so side effects interleave as in eager, and an infinite generator
// is fine when the consumer stops), zip/map/filter/enumerate and the
// itertools iterators pull from their sources item by item, `next(it,
// default)` consumes exactly one item, and an exhausted `next` without a
// default is a user-error break (eager raises StopIteration). An iterator
// that is live at a graph break or escapes the frame cannot be rebuilt
// (BreakState.cpp refuses it), so a partially consumed generator never
// resumes from a wrong position. Builtins are found by identity in one
// table (callIterationBuiltin).
//===----------------------------------------------------------------------===//
#include "capture/values/Deques.h"
#include "capture/interp/OpcodeHandlers.h"

#include <unordered_map>

namespace kiln {
namespace {

/// Keyword `name` removed from `kwargs` (nullptr when absent).
VarP takeKeyword(std::map<std::string, VarP> &kwargs, const char *name) {
  auto it = kwargs.find(name);
  if (it == kwargs.end())
    return nullptr;
  VarP v = it->second;
  kwargs.erase(it);
  return v;
}

/// Throws a user-error break when keywords are left or the positional
/// count is outside [lo, hi].
void checkArity(const std::vector<VarP> &args, const std::map<std::string, VarP> &kwargs, size_t lo,
                size_t hi, const char *what) {
  if (!kwargs.empty() || args.size() < lo || args.size() > hi)
    throw Unsupported(BreakCategory::UserError, std::string(what) + ": unexpected arguments",
                      hint::kRaisesInEager);
}

/// A constant int argument (None -> `dflt`).
long intArg(const VarP &v, long dflt, const char *what) {
  if (!v)
    return dflt;
  PyObject *o = constObj(v, what);
  if (o == Py_None)
    return dflt;
  long r = PyLong_AsLong(o);
  if (r == -1 && PyErr_Occurred())
    throw Unsupported(BreakCategory::UserError,
                      withPythonError(std::string(what) + " must be an int"), hint::kRaisesInEager);
  return r;
}

VarP none() { return makeConst(PyRef::borrow(Py_None)); }
VarP intConst(long v) { return makeConst(PyRef::steal(PyLong_FromLong(v))); }

} // namespace

VarP Interpreter::makeLazyIter(std::function<VarP()> produce) {
  VarP it = makeSeq(Var::Kind::Iter, {});
  it->produce = std::move(produce);
  return it;
}

VarP Interpreter::iterNext(const VarP &it) {
  if (it->kind != Var::Kind::Iter)
    throw Unsupported(BreakCategory::UserError, "next() of a value that is not an iterator",
                      hint::kRaisesInEager);
  if (it->pos < it->items.size())
    return it->items[it->pos++];
  if (!it->produce)
    return nullptr;
  std::function<VarP()> produce = it->produce; // alive while it runs
  VarP v;
  try {
    v = produce();
  } catch (const PyRaised &e) {
    // A StopIteration from inside the iterator's own code (a function map
    // calls) would end the loop in eager, not reach a handler: a break.
    if (!PyErr_GivenExceptionMatches(e.exc.get(), PyExc_StopIteration))
      throw;
    throw Unsupported(e.category, e.what(), e.hint);
  }
  if (!v)
    it->produce = nullptr;
  return v;
}

VarP Interpreter::generatorIter(Frame &&f) {
  auto frame = std::make_shared<Frame>(std::move(f));
  frame->stepping = true;
  auto running = std::make_shared<bool>(false);
  return makeLazyIter([this, frame, running]() -> VarP {
    if (frame->finished)
      return nullptr;
    if (*running) // next(gen) inside gen itself: eager raises (re-entering crashed)
      raiseNew(PyExc_ValueError, nullptr, "generator already executing");
    struct Running {
      bool &flag;
      ~Running() { flag = false; }
    } scope{ *running = true};
    if (++depth_ > 32)
      throw Unsupported("inlining is nested too deeply (recursion?)");
    // The generator's own handled exception while it runs (sys.exc_info()).
    std::swap(handledExc_, frame->handledExc);
    VarP r;
    try {
      r = interpret(*frame);
    } catch (const Unsupported &e) {
      --depth_;
      std::swap(handledExc_, frame->handledExc);
      frame->finished = true;
      // An exception leaving a generator is not modelled (StopIteration
      // becomes RuntimeError there, a resumed generator is finished): a break.
      if (dynamic_cast<const PyRaised *>(&e))
        throw Unsupported(e.category, e.what(), e.hint);
      throw;
    }
    std::swap(handledExc_, frame->handledExc);
    --depth_;
    if (!r) { // suspended at a yield
      VarP y = frame->yields.back();
      frame->yields.clear();
      return y;
    }
    // Returned: StopIteration. Its value (`r = yield from gen()`) is not
    // passed on (SEND pushes None), so a generator returning anything else
    // breaks rather than hand a wrong None to its caller.
    if (!r->isConst() || r->obj.get() != Py_None)
      throw Unsupported(BreakCategory::PythonBuiltin,
                        "a generator that returns a value (StopIteration.value) is not supported");
    frame->finished = true;
    frame->locals.clear();
    frame->stack.clear();
    return nullptr;
  });
}

VarP Interpreter::builtinIter(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  if (args.size() == 2)
    throw Unsupported(BreakCategory::PythonBuiltin, "iter(callable, sentinel) is not supported");
  checkArity(args, kwargs, 1, 1, "iter()");
  return getIter(args[0]);
}

VarP Interpreter::builtinNext(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  checkArity(args, kwargs, 1, 2, "next()");
  if (args[0]->kind != Var::Kind::Iter)
    throw Unsupported(args[0]->isConst() && PyIter_Check(args[0]->obj.get())
                          ? BreakCategory::SideEffect
                          : BreakCategory::UserError,
                      args[0]->isConst() && PyIter_Check(args[0]->obj.get())
                          ? "next() of an iterator made outside the compiled code"
                          : "next() of a value that is not an iterator");
  if (VarP v = iterNext(args[0]))
    return v;
  if (args.size() == 2)
    return args[1];
  raiseNew(PyExc_StopIteration, nullptr, "next() of an exhausted iterator (StopIteration)");
}

VarP Interpreter::builtinZip(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  VarP strictVar = takeKeyword(kwargs, "strict");
  checkArity(args, kwargs, 0, SIZE_MAX, "zip()");
  bool strict = strictVar && truthy(strictVar);
  std::vector<VarP> its;
  for (const VarP &a : args)
    its.push_back(getIter(a));
  if (its.empty())
    return makeSeq(Var::Kind::Iter, {});
  return makeLazyIter([this, its, strict]() -> VarP {
    std::vector<VarP> t;
    for (size_t i = 0; i < its.size(); ++i) {
      VarP v = iterNext(its[i]);
      if (v) {
        t.push_back(v);
        continue;
      }
      if (strict && i > 0)
        throw Unsupported(BreakCategory::UserError,
                          "zip() argument " + std::to_string(i + 1) + " is shorter than argument 1",
                          hint::kRaisesInEager);
      for (size_t j = 1; strict && i == 0 && j < its.size(); ++j)
        if (iterNext(its[j]))
          throw Unsupported(BreakCategory::UserError,
                            "zip() argument " + std::to_string(j + 1) +
                                " is longer than argument 1",
                            hint::kRaisesInEager);
      return nullptr;
    }
    return makeSeq(Var::Kind::Tuple, t);
  });
}

VarP Interpreter::builtinMap(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  checkArity(args, kwargs, 2, SIZE_MAX, "map()");
  VarP fn = args[0];
  std::vector<VarP> its;
  for (size_t i = 1; i < args.size(); ++i)
    its.push_back(getIter(args[i]));
  return makeLazyIter([this, fn, its]() -> VarP {
    std::vector<VarP> callArgs;
    for (const VarP &it : its) {
      VarP v = iterNext(it);
      if (!v)
        return nullptr;
      callArgs.push_back(v);
    }
    std::map<std::string, VarP> none;
    return call(fn, callArgs, none);
  });
}

VarP Interpreter::builtinFilter(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  checkArity(args, kwargs, 2, 2, "filter()");
  VarP fn = args[0], it = getIter(args[1]);
  bool identity = fn->isConst() && fn->obj.get() == Py_None;
  return makeLazyIter([this, fn, it, identity]() -> VarP {
    while (VarP v = iterNext(it)) {
      std::vector<VarP> callArgs{v};
      std::map<std::string, VarP> none;
      if (truthy(identity ? v : call(fn, callArgs, none)))
        return v;
    }
    return nullptr;
  });
}

VarP Interpreter::builtinEnumerate(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  VarP startVar = takeKeyword(kwargs, "start");
  if (!startVar && args.size() == 2)
    startVar = args[1];
  checkArity(args, kwargs, 1, startVar && args.size() == 2 ? 2 : 1, "enumerate()");
  auto count = std::make_shared<long>(intArg(startVar, 0, "enumerate start"));
  VarP it = getIter(args[0]);
  return makeLazyIter([this, it, count]() -> VarP {
    VarP v = iterNext(it);
    return v ? makeSeq(Var::Kind::Tuple, {intConst((*count)++), v}) : nullptr;
  });
}

VarP Interpreter::builtinReversed(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  checkArity(args, kwargs, 1, 1, "reversed()");
  if (args[0]->kind == Var::Kind::Iter)
    throw Unsupported(BreakCategory::UserError, "reversed() of an iterator", hint::kRaisesInEager);
  std::vector<VarP> items = iterItems(args[0]);
  std::reverse(items.begin(), items.end());
  return makeSeq(Var::Kind::Iter, items);
}

VarP Interpreter::itertoolsCount(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  VarP start = takeKeyword(kwargs, "start"), step = takeKeyword(kwargs, "step");
  checkArity(args, kwargs, 0, 2, "itertools.count()");
  start = args.size() > 0 ? args[0] : start ? start : intConst(0);
  step = args.size() > 1 ? args[1] : step ? step : intConst(1);
  auto cur = std::make_shared<VarP>(start);
  return makeLazyIter([this, cur, step]() -> VarP {
    VarP v = *cur;
    *cur = OpcodeHandlers::applyOperator(*this, "+", v, step);
    return v;
  });
}

VarP Interpreter::itertoolsRepeat(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  VarP times = takeKeyword(kwargs, "times");
  checkArity(args, kwargs, 1, 2, "itertools.repeat()");
  long n = intArg(args.size() > 1 ? args[1] : times, -1, "repeat times");
  if (n >= 0)
    return makeSeq(Var::Kind::Iter, std::vector<VarP>(n, args[0]));
  VarP v = args[0];
  return makeLazyIter([v]() { return v; });
}

VarP Interpreter::itertoolsChain(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  checkArity(args, kwargs, 0, SIZE_MAX, "itertools.chain()");
  std::vector<VarP> copy = args;
  VarP outer = makeSeq(Var::Kind::Iter, copy);
  std::vector<VarP> one{outer};
  std::map<std::string, VarP> none;
  return itertoolsChainFromIterable(one, none);
}

VarP Interpreter::itertoolsChainFromIterable(std::vector<VarP> &args,
                                             std::map<std::string, VarP> &kwargs) {
  checkArity(args, kwargs, 1, 1, "itertools.chain.from_iterable()");
  VarP outer = getIter(args[0]);
  auto inner = std::make_shared<VarP>();
  return makeLazyIter([this, outer, inner]() -> VarP {
    for (;;) {
      if (*inner)
        if (VarP v = iterNext(*inner))
          return v;
      VarP nextIterable = iterNext(outer);
      if (!nextIterable)
        return nullptr;
      *inner = getIter(nextIterable); // iter() of each iterable only when reached
    }
  });
}

VarP Interpreter::itertoolsProduct(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  long repeat = intArg(takeKeyword(kwargs, "repeat"), 1, "product repeat");
  checkArity(args, kwargs, 0, SIZE_MAX, "itertools.product()");
  std::vector<std::vector<VarP>> pools;
  for (const VarP &a : args) // product reads every input up front, as in eager
    pools.push_back(iterItems(a));
  std::vector<std::vector<VarP>> all;
  for (long r = 0; r < std::max(0L, repeat); ++r)
    all.insert(all.end(), pools.begin(), pools.end());
  std::vector<std::vector<VarP>> combos{{}};
  for (const auto &pool : all) {
    std::vector<std::vector<VarP>> next;
    for (const auto &prefix : combos)
      for (const VarP &v : pool) {
        next.push_back(prefix);
        next.back().push_back(v);
      }
    combos.swap(next);
    if (combos.size() > 100000)
      throw Unsupported(BreakCategory::PythonBuiltin, "itertools.product is too large to unroll");
  }
  std::vector<VarP> items;
  for (auto &c : combos)
    items.push_back(makeSeq(Var::Kind::Tuple, c));
  return makeSeq(Var::Kind::Iter, items);
}

VarP Interpreter::itertoolsAccumulate(std::vector<VarP> &args,
                                      std::map<std::string, VarP> &kwargs) {
  VarP fn = takeKeyword(kwargs, "func"), initial = takeKeyword(kwargs, "initial");
  checkArity(args, kwargs, 1, 2, "itertools.accumulate()");
  if (args.size() == 2)
    fn = args[1];
  if (fn && fn->isConst() && fn->obj.get() == Py_None)
    fn = nullptr;
  if (initial && initial->isConst() && initial->obj.get() == Py_None)
    initial = nullptr;
  VarP it = getIter(args[0]);
  auto total = std::make_shared<VarP>(initial);
  auto emittedInitial = std::make_shared<bool>(!initial);
  return makeLazyIter([this, it, fn, total, emittedInitial]() -> VarP {
    if (!*emittedInitial) {
      *emittedInitial = true;
      return *total;
    }
    VarP v = iterNext(it);
    if (!v)
      return nullptr;
    if (!*total) {
      *total = v;
    } else if (fn) {
      std::vector<VarP> callArgs{*total, v};
      std::map<std::string, VarP> none;
      *total = call(fn, callArgs, none);
    } else {
      *total = OpcodeHandlers::applyOperator(*this, "+", *total, v);
    }
    return *total;
  });
}

VarP Interpreter::itertoolsIslice(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  checkArity(args, kwargs, 2, 4, "itertools.islice()");
  long start = 0, stop = -1, step = 1;
  if (args.size() == 2) {
    stop = intArg(args[1], -1, "islice stop");
  } else {
    start = intArg(args[1], 0, "islice start");
    stop = intArg(args[2], -1, "islice stop");
    step = args.size() == 4 ? intArg(args[3], 1, "islice step") : 1;
  }
  if (start < 0 || step < 1 || (stop < -1))
    throw Unsupported(BreakCategory::UserError, "islice() arguments out of range",
                      hint::kRaisesInEager);
  VarP it = getIter(args[0]);
  auto index = std::make_shared<long>(0), wanted = std::make_shared<long>(start);
  return makeLazyIter([this, it, index, wanted, stop, step]() -> VarP {
    if (stop >= 0 && *wanted >= stop) // eager stops without reading further
      return nullptr;
    while (VarP v = iterNext(it)) {
      long at = (*index)++;
      if (at == *wanted) {
        *wanted += step;
        return v;
      }
    }
    return nullptr;
  });
}

VarP Interpreter::itertoolsZipLongest(std::vector<VarP> &args,
                                      std::map<std::string, VarP> &kwargs) {
  VarP fill = takeKeyword(kwargs, "fillvalue");
  checkArity(args, kwargs, 0, SIZE_MAX, "itertools.zip_longest()");
  if (!fill)
    fill = none();
  auto its = std::make_shared<std::vector<VarP>>();
  for (const VarP &a : args)
    its->push_back(getIter(a));
  auto active = std::make_shared<size_t>(its->size());
  return makeLazyIter([this, its, active, fill]() -> VarP {
    if (*active == 0)
      return nullptr;
    std::vector<VarP> t;
    for (VarP &it : *its) {
      VarP v = it ? iterNext(it) : nullptr;
      if (!v && it) {
        it = nullptr;
        if (--*active == 0)
          return nullptr;
      }
      t.push_back(v ? v : fill);
    }
    return makeSeq(Var::Kind::Tuple, t);
  });
}

VarP Interpreter::itertoolsPairwise(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  checkArity(args, kwargs, 1, 1, "itertools.pairwise()");
  VarP it = getIter(args[0]);
  auto prev = std::make_shared<VarP>();
  return makeLazyIter([this, it, prev]() -> VarP {
    if (!*prev && !(*prev = iterNext(it)))
      return nullptr;
    VarP v = iterNext(it);
    if (!v)
      return nullptr;
    VarP pair = makeSeq(Var::Kind::Tuple, {*prev, v});
    *prev = v;
    return pair;
  });
}

std::vector<VarP> Interpreter::iterItems(const VarP &v) {
  if (VarP snap = dequeSnapshot(v, /*iterated=*/false)) // consumed at once (Deques.h)
    return snap->items;
  // Consumes an iterator, as iterating it in eager does.
  VarP it = getIter(v);
  std::vector<VarP> items;
  while (VarP item = iterNext(it))
    if (items.push_back(item), items.size() > 100000)
      throw Unsupported(BreakCategory::PythonBuiltin, "iterating an unbounded iterator");
  return items;
}

VarP Interpreter::callIterationBuiltin(PyObject *fn, std::vector<VarP> &args,
                                       std::map<std::string, VarP> &kwargs) {
  if (VarP d = makeDeque(fn, args, kwargs, [this](const VarP &x) { return iterItems(x); }))
    return d; // collections.deque (Deques.h)
  // Built once (the GIL is held): callable object -> handler. The keys are
  // process-lifetime objects (builtins, itertools and collections types).
  static std::unordered_map<PyObject *, IterHandler> *table = nullptr;
  static PyCFunction fromIterable = nullptr;
  static PyObject *chainType = nullptr;
  if (!table) {
    auto *t = new std::unordered_map<PyObject *, IterHandler>();
    PyObject *builtins = PyEval_GetBuiltins();
    auto type = [](PyTypeObject &ty) { return reinterpret_cast<PyObject *>(&ty); };
    (*t)[PyDict_GetItemString(builtins, "iter")] = &Interpreter::builtinIter;
    (*t)[PyDict_GetItemString(builtins, "next")] = &Interpreter::builtinNext;
    (*t)[type(PyZip_Type)] = &Interpreter::builtinZip;
    (*t)[type(PyMap_Type)] = &Interpreter::builtinMap;
    (*t)[type(PyFilter_Type)] = &Interpreter::builtinFilter;
    (*t)[type(PyEnum_Type)] = &Interpreter::builtinEnumerate;
    (*t)[type(PyReversed_Type)] = &Interpreter::builtinReversed;
    (*t)[type(PySet_Type)] = &Interpreter::builtinSet;
    (*t)[type(PyFrozenSet_Type)] = &Interpreter::builtinFrozenset;
    (*t)[type(PyDict_Type)] = &Interpreter::builtinDict;
    PyRef itertools = PyRef::steal(PyImport_ImportModule("itertools"));
    PyRef collections = PyRef::steal(PyImport_ImportModule("collections"));
    const std::pair<const char *, IterHandler> fromItertools[] = {
        {"count", &Interpreter::itertoolsCount},
        {"repeat", &Interpreter::itertoolsRepeat},
        {"chain", &Interpreter::itertoolsChain},
        {"product", &Interpreter::itertoolsProduct},
        {"accumulate", &Interpreter::itertoolsAccumulate},
        {"islice", &Interpreter::itertoolsIslice},
        {"zip_longest", &Interpreter::itertoolsZipLongest},
        {"pairwise", &Interpreter::itertoolsPairwise}};
    for (const auto &[name, handler] : fromItertools)
      if (PyObject *o = itertools ? PyObject_GetAttrString(itertools.get(), name) : nullptr)
        (*t)[o] = handler; // leaked: process lifetime
    const std::pair<const char *, IterHandler> fromCollections[] = {
        {"OrderedDict", &Interpreter::makeOrderedDict},
        {"defaultdict", &Interpreter::makeDefaultDict}};
    for (const auto &[name, handler] : fromCollections)
      if (PyObject *o = collections ? PyObject_GetAttrString(collections.get(), name) : nullptr)
        (*t)[o] = handler;
    chainType = itertools ? PyObject_GetAttrString(itertools.get(), "chain") : nullptr;
    PyRef sample =
        chainType ? PyRef::steal(PyObject_GetAttrString(chainType, "from_iterable")) : PyRef();
    if (sample && PyCFunction_Check(sample.get()))
      fromIterable = PyCFunction_GET_FUNCTION(sample.get());
    PyErr_Clear();
    table = t;
  }
  // chain.from_iterable is a new bound method on every lookup: matched by
  // its C function and its class.
  if (fromIterable && PyCFunction_Check(fn) && PyCFunction_GET_SELF(fn) == chainType &&
      PyCFunction_GET_FUNCTION(fn) == fromIterable)
    return itertoolsChainFromIterable(args, kwargs);
  auto it = table->find(fn);
  if (it == table->end())
    return nullptr;
  return (this->*it->second)(args, kwargs);
}

} // namespace kiln
