//===- Containers.cpp - handlers that build and index containers ----------===//
// SPDX-License-Identifier: Apache-2.0
//
// Opcode handlers (OpcodeHandlers.h) for tuples, lists and dicts built in
// the frame (Tuple/List/Dict Vars), unpacking, subscripts and slices (a
// bound that is a symbolic size makes a SymSlice), and f-strings of
// constants. Stores into the caller's containers are side effects
// (SideEffects.cpp).
//===----------------------------------------------------------------------===//
#include "capture/values/Deques.h"
#include "capture/interp/CaptureTimeCalls.h"
#include "capture/interp/OpcodeHandlers.h"
#include "capture/interp/PlainObjects.h"

namespace kiln {
namespace {

/// Pops the top `n` items of `f`'s stack, bottom first.
std::vector<VarP> popItems(Frame &f, int n) {
  if (n < 0 || static_cast<size_t>(n) > f.stack.size())
    throw Unsupported("stack underflow (unexpected bytecode)");
  std::vector<VarP> items(f.stack.end() - n, f.stack.end());
  f.stack.resize(f.stack.size() - n);
  return items;
}

/// A Dict Var of `keys` (constants) and `values`; a later equal key
/// replaces an earlier one's value, as in Python.
VarP dictOf(const std::vector<VarP> &keys, const std::vector<VarP> &values) {
  auto d = std::make_shared<Var>();
  d->kind = Var::Kind::Dict;
  for (size_t i = 0; i < keys.size(); ++i) {
    PyObject *k = constObj(keys[i], "dict key");
    if (PyObject_Hash(k) == -1)
      throw Unsupported(BreakCategory::UserError, withPythonError("unhashable dict key"));
    int at = dictFind(d, k);
    if (at >= 0) {
      d->items[at] = values[i];
    } else {
      d->keys.push_back(PyRef::borrow(k));
      d->items.push_back(values[i]);
    }
  }
  return d;
}

/// The slice `start:stop:step` (`step` may be null): a SymSlice when a bound
/// is a symbolic size (only tensor indexing takes it), else a constant.
VarP sliceOf(const VarP &start, const VarP &stop, const VarP &step) {
  if (start->kind == Var::Kind::SymInt || stop->kind == Var::Kind::SymInt ||
      (step && step->kind == Var::Kind::SymInt)) {
    VarP none = makeConst(PyRef::borrow(Py_None));
    return makeSeq(Var::Kind::SymSlice, {start, stop, step ? step : none});
  }
  PyRef slice =
      PyRef::steal(PySlice_New(constObj(start, "slice start"), constObj(stop, "slice stop"),
                               step ? constObj(step, "slice step") : nullptr));
  if (!slice)
    throw Unsupported(BreakCategory::UserError, withPythonError("invalid slice"));
  return makeConst(slice);
}

} // namespace

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

void OpcodeHandlers::buildTuple(Interpreter &, Frame &f, const Instr &in, StepControl &) {
  f.stack.push_back(makeSeq(Var::Kind::Tuple, popItems(f, in.arg)));
}

void OpcodeHandlers::buildList(Interpreter &, Frame &f, const Instr &in, StepControl &) {
  f.stack.push_back(makeSeq(Var::Kind::List, popItems(f, in.arg)));
}

void OpcodeHandlers::listAppend(Interpreter &, Frame &f, const Instr &in, StepControl &) {
  VarP v = popValue(f);
  f.stack[f.stack.size() - in.arg]->items.push_back(v);
}

void OpcodeHandlers::listExtend(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  std::vector<VarP> more = interp.iterItems(popValue(f)); // consumes an iterator
  auto &dst = f.stack[f.stack.size() - in.arg]->items;
  dst.insert(dst.end(), more.begin(), more.end());
}

void OpcodeHandlers::listToTuple(Interpreter &, Frame &f, const Instr &, StepControl &) {
  VarP v = popValue(f);
  f.stack.push_back(makeSeq(Var::Kind::Tuple, v->items));
}

void OpcodeHandlers::unpackSequence(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  std::vector<VarP> items = interp.iterItems(popValue(f)); // consumes an iterator
  if ((int)items.size() != in.arg)
    throw Unsupported(BreakCategory::UserError, "unpacking a sequence of the wrong length");
  for (auto it = items.rbegin(); it != items.rend(); ++it)
    f.stack.push_back(*it);
}

void OpcodeHandlers::unpackEx(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  std::vector<VarP> items = interp.iterItems(popValue(f)); // consumes an iterator
  size_t before = in.arg & 0xff, after = (size_t)in.arg >> 8;
  if (items.size() < before + after)
    throw Unsupported(BreakCategory::UserError, "not enough values to unpack",
                      hint::kRaisesInEager);
  for (size_t i = 0; i < after; ++i)
    f.stack.push_back(items[items.size() - 1 - i]);
  f.stack.push_back(makeSeq(
      Var::Kind::List, std::vector<VarP>(items.begin() + (long)before, items.end() - (long)after)));
  for (size_t i = 0; i < before; ++i)
    f.stack.push_back(items[before - 1 - i]);
}

void OpcodeHandlers::buildSet(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  std::vector<VarP> args = {makeSeq(Var::Kind::Tuple, popItems(f, in.arg))};
  std::map<std::string, VarP> none;
  f.stack.push_back(interp.builtinSet(args, none)); // Collections.cpp
}

void OpcodeHandlers::setAdd(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  VarP v = popValue(f);
  if (in.arg < 1 || (size_t)in.arg > f.stack.size())
    throw Unsupported("stack underflow (unexpected bytecode)");
  VarP &s = f.stack[f.stack.size() - in.arg];
  if (!interp.isFresh(s) || !PySet_CheckExact(s->obj.get()))
    throw Unsupported(in.opname + " into a value that is not a set built here");
  std::vector<VarP> items =
      in.opcode == Opcode::SET_ADD ? std::vector<VarP>{v} : interp.iterItems(v);
  for (const VarP &item : items) {
    if (!item->isConst() || !pureConstant(item->obj.get()))
      throw Unsupported(BreakCategory::PythonBuiltin,
                        "a set of values that are not plain constants (tensors, objects with "
                        "their own __hash__) is not supported");
    if (PySet_Add(s->obj.get(), item->obj.get()) < 0)
      throw Unsupported(BreakCategory::UserError, withPythonError("unhashable set item"),
                        hint::kRaisesInEager);
  }
}

void OpcodeHandlers::buildMap(Interpreter &, Frame &f, const Instr &in, StepControl &) {
  std::vector<VarP> kv = popItems(f, 2 * in.arg), keys, values;
  for (int i = 0; i < in.arg; ++i) {
    keys.push_back(kv[2 * i]);
    values.push_back(kv[2 * i + 1]);
  }
  f.stack.push_back(dictOf(keys, values));
}

void OpcodeHandlers::buildConstKeyMap(Interpreter &, Frame &f, const Instr &in, StepControl &) {
  PyObject *ks = constObj(popValue(f), "dict keys");
  if (!PyTuple_Check(ks) || PyTuple_GET_SIZE(ks) != in.arg)
    throw Unsupported("BUILD_CONST_KEY_MAP without a key tuple");
  std::vector<VarP> values = popItems(f, in.arg), keys;
  for (Py_ssize_t i = 0; i < in.arg; ++i)
    keys.push_back(makeConst(PyRef::borrow(PyTuple_GET_ITEM(ks, i))));
  f.stack.push_back(dictOf(keys, values));
}

void OpcodeHandlers::mapAdd(Interpreter &, Frame &f, const Instr &in, StepControl &) {
  VarP value = popValue(f), key = popValue(f);
  VarP &d = f.stack[f.stack.size() - in.arg];
  if (d->kind != Var::Kind::Dict || d->obj)
    throw Unsupported("MAP_ADD into a value that is not a dict built here");
  dictSet(d, constObj(key, "dict key"), value);
}

void OpcodeHandlers::dictMerge(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  // {**a, **b} / f(**a): merges the popped mapping into a dict built here.
  VarP src = popValue(f);
  VarP &dst = f.stack[f.stack.size() - in.arg];
  if (dst->kind != Var::Kind::Dict)
    throw Unsupported(in.opname + " into a value that is not a dict built here");
  for (auto &[k, v] : interp.dictItems(src)) {
    int at = dictFind(dst, k.get());
    if (at >= 0 && in.opcode == Opcode::DICT_MERGE)
      throw Unsupported(BreakCategory::UserError, "keyword argument repeated in a ** call");
    if (at >= 0) {
      dst->items[at] = v;
    } else {
      dst->keys.push_back(k);
      dst->items.push_back(v);
    }
  }
}

void OpcodeHandlers::binarySubscr(Interpreter &interp, Frame &f, const Instr &, StepControl &) {
  VarP idx = popValue(f), c = popValue(f);
  VarP item = dequeItem(c, idx); // Deques.h
  f.stack.push_back(item ? item : interp.subscript(c, idx));
}

void OpcodeHandlers::storeSubscr(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  const VarP *container = f.stack.size() >= 3 ? &f.stack[f.stack.size() - 2] : nullptr;
  if (container && (*container)->isTensor()) { // x[i] = v (TensorSetItem.cpp)
    VarP key = popValue(f), c = popValue(f), value = popValue(f);
    // `x[k] = x[k]`, the store that ends `x[k] += v` (the update already went
    // into x through that view, ops/InPlace.cpp): eager copies the elements
    // onto themselves, a no-op for a tensor the graph computed (on an input
    // it still counts in its _version: TensorSetItem.cpp does it).
    PyRef k = key->isConst() ? key->obj : seqAsConst(key);
    bool computed = c->inputIndex < 0 && c->viewInput < 0;
    bool sameView = computed && value->itemOf == c && k &&
                    PyObject_RichCompareBool(value->itemIndex.get(), k.get(), Py_EQ) == 1;
    PyErr_Clear();
    if (!sameView)
      interp.tensorSetItem(c, key, value);
    return;
  }
  if (!container || !((*container)->kind == Var::Kind::Dict ||
                      (*container)->kind == Var::Kind::List || (*container)->isConst()))
    throw Unsupported(BreakCategory::SideEffect,
                      "mutation (" + in.opname + ") of Python state is not supported yet");
  VarP key = popValue(f), c = popValue(f), value = popValue(f);
  interp.storeItem(c, key, value); // SideEffects.cpp
}

void OpcodeHandlers::buildSlice(Interpreter &, Frame &f, const Instr &in, StepControl &) {
  VarP step = in.arg == 3 ? popValue(f) : nullptr;
  VarP stop = popValue(f), start = popValue(f);
  f.stack.push_back(sliceOf(start, stop, step));
}

void OpcodeHandlers::binarySlice(Interpreter &interp, Frame &f, const Instr &, StepControl &) {
  VarP stop = popValue(f), start = popValue(f);
  VarP slice = sliceOf(start, stop, nullptr);
  VarP c = popValue(f);
  f.stack.push_back(interp.subscript(c, slice));
}

void OpcodeHandlers::formatValue(Interpreter &interp, Frame &f, const Instr &in, StepControl &) {
  // f-string pieces on constants (values of tensors are data: a break).
  VarP spec = (in.arg & 0x04) ? popValue(f) : nullptr;
  VarP v = popValue(f);
  PyObject *o = constObj(v, "f-string value");
  pinPlainObject(o, "it is formatted at capture");
  CaptureTimeCalls::guardDunderState(interp, v, "an f-string formatted at capture");
  int conv = in.arg & 0x03;
  PyRef converted = PyRef::steal(conv == 1   ? PyObject_Str(o)
                                 : conv == 2 ? PyObject_Repr(o)
                                 : conv == 3 ? PyObject_ASCII(o)
                                             : (Py_INCREF(o), o));
  PyRef emptySpec = PyRef::steal(PyUnicode_FromString(""));
  PyRef r = converted
                ? PyRef::steal(PyObject_Format(converted.get(), spec ? constObj(spec, "format spec")
                                                                     : emptySpec.get()))
                : PyRef();
  if (!r)
    throw Unsupported(withPythonError("formatting an f-string value raised"));
  f.stack.push_back(makeConst(r));
}

void OpcodeHandlers::buildString(Interpreter &, Frame &f, const Instr &in, StepControl &) {
  PyRef parts = PyRef::steal(PyTuple_New(in.arg));
  for (int i = in.arg - 1; i >= 0; --i) {
    VarP part = popValue(f); // owns the string until it is in the tuple
    PyObject *o = constObj(part, "f-string part");
    Py_INCREF(o);
    PyTuple_SET_ITEM(parts.get(), i, o);
  }
  PyRef empty = PyRef::steal(PyUnicode_FromString(""));
  PyRef r = PyRef::steal(PyUnicode_Join(empty.get(), parts.get()));
  if (!r)
    throw Unsupported(withPythonError("BUILD_STRING of non-strings"));
  f.stack.push_back(makeConst(r));
}

} // namespace kiln
