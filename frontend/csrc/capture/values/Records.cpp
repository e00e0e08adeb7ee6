//===- Records.cpp - HuggingFace ModelOutput objects in the capture ----------===//
// SPDX-License-Identifier: Apache-2.0
//
// transformers' ModelOutput subclasses are dataclasses deriving from
// OrderedDict whose __post_init__ stores the non-None fields as dict items.
// The capture models one built inside the compiled code as a Dict Var with
// `obj` = the class (a "record"): keys are the non-None fields in field
// order, items their values. Attribute access, `out[0]`, `out["key"]`,
// `out[1:]`, `to_tuple()`, iteration and `isinstance` follow ModelOutput's
// definitions; a record returned from the graph is rebuilt by calling the
// class with those items as keywords (Entry.cpp), which reproduces the same
// object. Anything else about such objects is Unsupported.
//===----------------------------------------------------------------------===//
#include "capture/interp/Interp.h"
#include "capture/interp/PlainObjects.h"

#include <set>

namespace kiln {
namespace {

/// transformers.utils.generic.ModelOutput if `cls` derives from it (with
/// its dict behaviour not overridden: a subclass's own to_tuple, CLIPOutput's,
/// is refused only where to_tuple is used, ownsToTuple), else null.
PyObject *modelOutputBase(PyObject *cls) {
  if (!PyType_Check(cls))
    return nullptr;
  PyObject *mro = reinterpret_cast<PyTypeObject *>(cls)->tp_mro;
  PyObject *base = nullptr;
  for (Py_ssize_t i = 0; mro && i < PyTuple_GET_SIZE(mro); ++i) {
    auto *t = reinterpret_cast<PyTypeObject *>(PyTuple_GET_ITEM(mro, i));
    PyObject *mod = PyDict_GetItemString(t->tp_dict, "__module__");
    if (std::string(t->tp_name) == "ModelOutput" && mod && PyUnicode_Check(mod) &&
        pyText(mod) == "transformers.utils.generic")
      base = reinterpret_cast<PyObject *>(t);
  }
  if (!base || cls == base)
    return nullptr;
  for (const char *m : {"__post_init__", "__getitem__", "__setitem__", "__setattr__"}) {
    PyRef mine = PyRef::steal(PyObject_GetAttrString(cls, m));
    PyRef theirs = PyRef::steal(PyObject_GetAttrString(base, m));
    PyErr_Clear();
    if (!mine || mine.get() != theirs.get())
      return nullptr;
  }
  return base;
}

/// The dataclass field names of `cls`, in order (empty on failure).
std::vector<std::pair<std::string, PyRef>> fieldsOf(PyObject *cls) {
  std::vector<std::pair<std::string, PyRef>> out;
  PyRef dc = PyRef::steal(PyImport_ImportModule("dataclasses"));
  PyRef fieldsFn = dc ? PyRef::steal(PyObject_GetAttrString(dc.get(), "fields")) : PyRef();
  PyRef fields = fieldsFn ? PyRef::steal(PyObject_CallOneArg(fieldsFn.get(), cls)) : PyRef();
  PyRef missing = dc ? PyRef::steal(PyObject_GetAttrString(dc.get(), "MISSING")) : PyRef();
  if (!fields || !PyTuple_Check(fields.get())) {
    PyErr_Clear();
    return out;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fields.get()); ++i) {
    PyObject *f = PyTuple_GET_ITEM(fields.get(), i);
    PyRef name = PyRef::steal(PyObject_GetAttrString(f, "name"));
    PyRef dflt = PyRef::steal(PyObject_GetAttrString(f, "default"));
    if (!name || !dflt) {
      PyErr_Clear();
      return {};
    }
    out.push_back({pyText(name.get()), dflt.get() == missing.get() ? PyRef() : dflt});
  }
  return out;
}

bool isNone(const VarP &v) { return v->isConst() && v->obj.get() == Py_None; }

/// Refuses (a break) `use`, which runs to_tuple (`out[i]`, `out[a:b]`,
/// `out.to_tuple()`), where record class `cls` defines its own.
void refuseOwnToTuple(PyObject *cls, const char *use) {
  PyObject *base = modelOutputBase(cls);
  PyRef mine = PyRef::steal(PyObject_GetAttrString(cls, "to_tuple"));
  PyRef theirs = base ? PyRef::steal(PyObject_GetAttrString(base, "to_tuple")) : PyRef();
  PyErr_Clear();
  if (!mine || mine.get() != theirs.get())
    throw Unsupported(BreakCategory::PythonBuiltin, std::string(use) + " of a " + pyText(cls) +
                                                        " built in the compiled code (its class "
                                                        "defines its own to_tuple)");
}

} // namespace

VarP Interpreter::buildRecord(PyObject *cls, std::vector<VarP> &args,
                              std::map<std::string, VarP> &kwargs) {
  if (!modelOutputBase(cls))
    return nullptr;
  auto fields = fieldsOf(cls);
  if (fields.empty())
    throw Unsupported(BreakCategory::PythonBuiltin, pyText(cls) + " has no dataclass fields");
  if (args.size() > fields.size())
    throw Unsupported(BreakCategory::UserError, "too many arguments to " + pyText(cls));
  std::vector<VarP> values(fields.size());
  for (size_t i = 0; i < args.size(); ++i)
    values[i] = args[i];
  for (auto &[k, v] : kwargs) {
    size_t i = 0;
    while (i < fields.size() && fields[i].first != k)
      ++i;
    if (i == fields.size() || values[i])
      throw Unsupported(BreakCategory::UserError,
                        "unexpected or repeated field '" + k + "' of " + pyText(cls));
    values[i] = v;
  }
  for (size_t i = 0; i < fields.size(); ++i) {
    if (values[i])
      continue;
    if (!fields[i].second)
      throw Unsupported(BreakCategory::UserError,
                        "missing field '" + fields[i].first + "' of " + pyText(cls));
    values[i] = makeConst(fields[i].second);
  }
  bool othersNone = true;
  for (size_t i = 1; i < values.size(); ++i)
    othersNone &= isNone(values[i]);
  if (othersNone && !values[0]->isTensor())
    throw Unsupported(BreakCategory::PythonBuiltin, pyText(cls) +
                                                        " built from a non-tensor first field (its "
                                                        "__post_init__ iterates over it)");
  auto rec = std::make_shared<Var>();
  rec->kind = Var::Kind::Dict;
  rec->obj = PyRef::borrow(cls);
  for (size_t i = 0; i < fields.size(); ++i) {
    if (isNone(values[i]))
      continue;
    rec->keys.push_back(PyRef::steal(PyUnicode_FromString(fields[i].first.c_str())));
    rec->items.push_back(values[i]);
  }
  // Fields that are None stay attributes (reading them gives None).
  rec->name = "";
  for (auto &f : fields)
    rec->name += f.first + ",";
  return rec;
}

VarP Interpreter::callPureMethod(PyObject *fn, std::vector<VarP> &args,
                                 std::map<std::string, VarP> &kwargs) {
  if (Py_TYPE(fn) != &PyMethodDescr_Type || args.empty())
    return nullptr;
  PyObject *owner = reinterpret_cast<PyObject *>(PyDescr_TYPE(fn));
  std::string name = pyText(PyDescr_NAME(fn));
  static const std::set<std::string> dictReads = {"get", "keys", "values", "items", "__contains__"};
  static const std::set<std::string> strReads = {
      "startswith", "endswith", "lower",     "upper",      "split",       "rsplit",  "join",
      "format",     "replace",  "strip",     "lstrip",     "rstrip",      "isdigit", "isalpha",
      "count",      "find",     "partition", "rpartition", "__contains__"};
  static const std::set<std::string> seqReads = {"index", "count", "__contains__"};
  bool isDict = PyType_IsSubtype(reinterpret_cast<PyTypeObject *>(owner), &PyDict_Type);
  if (isDict && dictReads.count(name)) {
    VarP self = args[0];
    if (self->kind == Var::Kind::Dict || (self->isConst() && PyDict_Check(self->obj.get()))) {
      // Items of a dict of the frame are read through their own sources.
      VarP d = self;
      if (self->isConst()) {
        if (!PyDict_CheckExact(self->obj.get()) &&
            Py_TYPE(self->obj.get())->tp_iter != PyDict_Type.tp_iter)
          return nullptr;
        d = std::make_shared<Var>();
        d->kind = Var::Kind::Dict;
        for (auto &[k, v] : dictItems(self)) {
          d->keys.push_back(k);
          d->items.push_back(v);
        }
      }
      auto m = std::make_shared<Var>();
      m->kind = Var::Kind::ListMethod;
      m->self = d;
      m->name = name == "__contains__" ? "get" : name;
      std::vector<VarP> rest(args.begin() + 1, args.end());
      if (name == "__contains__") {
        if (rest.size() != 1)
          throw Unsupported(BreakCategory::UserError, "dict.__contains__ takes one argument");
        return makeConst(
            PyRef::borrow(dictFind(d, constObj(rest[0], "key")) >= 0 ? Py_True : Py_False));
      }
      VarP r = call(m, rest, kwargs);
      if (self->isConst() && self->source >= 0 && r->kind == Var::Kind::Iter && r->reiterable)
        r->self = self; // a view of the caller's dict: iterated live (LiveIterators.h)
      return r;
    }
    return nullptr;
  }
  bool ok = (owner == reinterpret_cast<PyObject *>(&PyUnicode_Type) && strReads.count(name)) ||
            ((owner == reinterpret_cast<PyObject *>(&PyTuple_Type) ||
              owner == reinterpret_cast<PyObject *>(&PyList_Type)) &&
             seqReads.count(name));
  if (!ok)
    return nullptr;
  PyRef tuple = constTuple(args, "argument of a str/tuple method");
  PyRef kw = PyRef::steal(PyDict_New());
  for (auto &[k, v] : kwargs)
    PyDict_SetItemString(kw.get(), k.c_str(), constObj(v, "keyword argument"));
  pinPlainObjectsIn(tuple.get(), "a str/tuple method is evaluated on it at capture");
  pinPlainObjectsIn(kw.get(), "a str/tuple method is evaluated on it at capture");
  PyRef r = PyRef::steal(PyObject_Call(fn, tuple.get(), kw.get()));
  if (!r) // a pure method on constants: eager raises the same (Exceptions.cpp)
    raisePending(pyText(owner) + "." + name + " raised at capture time");
  keepAlive_.push_back(r);
  return makeConst(r);
}

VarP Interpreter::recordAttr(const VarP &rec, const std::string &attr) {
  int at = -1;
  PyRef key = PyRef::steal(PyUnicode_FromString(attr.c_str()));
  at = dictFind(rec, key.get());
  if (at >= 0)
    return rec->items[at];
  if (("," + rec->name).find("," + attr + ",") != std::string::npos)
    return makeConst(PyRef::borrow(Py_None)); // a field left None
  if (attr == "to_tuple")
    refuseOwnToTuple(rec->obj.get(), "to_tuple()");
  if (attr == "to_tuple" || attr == "keys" || attr == "values" || attr == "items" ||
      attr == "get") {
    auto m = std::make_shared<Var>();
    m->kind = Var::Kind::ListMethod;
    m->self = rec;
    m->name = attr;
    return m;
  }
  throw Unsupported(BreakCategory::PythonBuiltin, "attribute '" + attr + "' of a " +
                                                      pyText(rec->obj.get()) +
                                                      " built in the compiled code");
}

VarP Interpreter::recordItem(const VarP &rec, PyObject *index) {
  if (PyUnicode_Check(index)) {
    int at = dictFind(rec, index);
    if (at < 0)
      throw Unsupported(BreakCategory::UserError,
                        "KeyError: " + pyText(index) + " in a ModelOutput built here");
    return rec->items[at];
  }
  refuseOwnToTuple(rec->obj.get(), "an index or slice");
  VarP tuple = makeSeq(Var::Kind::Tuple, rec->items); // to_tuple()
  return subscript(tuple, makeConst(PyRef::borrow(index)));
}

} // namespace kiln
