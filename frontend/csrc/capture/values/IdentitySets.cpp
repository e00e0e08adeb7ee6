//===- IdentitySets.cpp - sets of tensors built in the frame --------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements IdentitySets.h. Each question is eager's: a tensor is in the
// set when it is one object with an item (never `==`, which a set only
// calls after equal hashes, i.e. for the same tensor), a non-tensor is
// never in it (its hash would have to equal a tensor's id; only plain
// constants, whose hashes run no Python code, are answered).
//===----------------------------------------------------------------------===//
#include "capture/values/IdentitySets.h"
#include "capture/breaks/GraphBreak.h"
#include "capture/values/IdTokens.h"

namespace kiln {

namespace {

/// Index of the item of `s` that is `x`, or -1.
int findItem(const std::vector<VarP> &items, const VarP &x) {
  for (size_t i = 0; i < items.size(); ++i) {
    const char *why = "";
    int same = sameTensorIdentity(x, items[i], &why);
    if (same < 0)
      throw Unsupported(BreakCategory::PythonBuiltin,
                        std::string("a set of tensors looks up ") + why);
    if (same)
      return (int)i;
  }
  return -1;
}

VarP noneVar() { return makeConst(PyRef::borrow(Py_None)); }

} // namespace

VarP makeIdentitySet(const std::vector<VarP> &items, bool frozen) {
  bool anyTensor = false;
  for (const VarP &v : items)
    anyTensor |= v->isTensor();
  if (!anyTensor)
    return nullptr;
  auto s = std::make_shared<Var>();
  s->kind = Var::Kind::Object;
  s->obj = PyRef::borrow(reinterpret_cast<PyObject *>(frozen ? &PyFrozenSet_Type : &PySet_Type));
  for (const VarP &v : items) {
    if (!v->isTensor())
      throw Unsupported(BreakCategory::PythonBuiltin,
                        "a set holding tensors and other values is not supported");
    if (findItem(s->items, v) < 0)
      s->items.push_back(v);
  }
  return s;
}

bool isIdentitySet(const VarP &v) {
  return v && v->kind == Var::Kind::Object &&
         (v->obj.get() == reinterpret_cast<PyObject *>(&PySet_Type) ||
          v->obj.get() == reinterpret_cast<PyObject *>(&PyFrozenSet_Type));
}

bool identitySetContains(const VarP &s, const VarP &x) {
  if (x->isTensor())
    return findItem(s->items, x) >= 0;
  PyObject *o = x->isConst() ? x->obj.get() : nullptr;
  bool plain = o && (o == Py_None || PyBool_Check(o) || PyLong_CheckExact(o) ||
                     PyFloat_CheckExact(o) || PyUnicode_CheckExact(o));
  if (!plain)
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "'in' looks up a value that is not a tensor or a plain constant in a set "
                      "of tensors");
  return false;
}

void refuseIdentitySetIteration(const VarP &v) {
  if (isIdentitySet(v))
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "iterating over a set of tensors (eager's order follows their addresses)",
                      "iterate over a list of the tensors instead");
}

VarP identitySetAttr(const VarP &s, const std::string &name) {
  if (!isIdentitySet(s))
    return nullptr;
  if (name != "add" && name != "discard" && name != "remove")
    throw Unsupported(BreakCategory::PythonBuiltin,
                      "set." + name + " on a set of tensors is not supported");
  auto m = std::make_shared<Var>();
  m->kind = Var::Kind::ListMethod;
  m->self = s;
  m->name = name;
  return m;
}

VarP identitySetMethod(const VarP &s, const std::string &name, std::vector<VarP> &args,
                       std::map<std::string, VarP> &kwargs) {
  std::string what = "set." + name + "()";
  if (s->obj.get() != reinterpret_cast<PyObject *>(&PySet_Type))
    throw Unsupported(BreakCategory::UserError,
                      "'frozenset' object has no attribute '" + name + "'", hint::kRaisesInEager);
  if (args.size() != 1 || !kwargs.empty())
    throw Unsupported(BreakCategory::UserError, what + " takes exactly one argument",
                      hint::kRaisesInEager);
  if (!args[0]->isTensor())
    throw Unsupported(BreakCategory::PythonBuiltin, what + " of a value that is not a tensor on "
                                                           "a set of tensors is not supported");
  int at = findItem(s->items, args[0]);
  if (name == "add" && at < 0)
    s->items.push_back(args[0]);
  if (name != "add" && at >= 0)
    s->items.erase(s->items.begin() + at);
  if (name == "remove" && at < 0)
    throw Unsupported(BreakCategory::UserError, "set.remove(x): x not in set",
                      hint::kRaisesInEager);
  return noneVar();
}

} // namespace kiln
