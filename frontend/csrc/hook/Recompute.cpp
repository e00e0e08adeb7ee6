//===- Recompute.cpp - compiled calls that need gradients --------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements Recompute.h. Ownership: every object built here is held by a
// PyRef and released on return; the entry is passed to Python as a capsule
// owning a shared reference to it (kiln.reset() may drop it from its cache
// while autograd still holds the capsule).
//===----------------------------------------------------------------------===//
#include "hook/Recompute.h"

#include "capture/breaks/Resume.h"
#include "hook/CompiledGrad.h"

#include <functional>

namespace kiln {
namespace {

/// For each graph result, the index path from the Python result down to
/// it (e.g. `return x, (h, c)` → h is (1, 0)); a tuple of tuples (new
/// reference).
PyObject *resultPaths(const Entry &entry) {
  std::vector<PyRef> paths(entry.results.size());
  std::vector<PyRef> path; // list indices or dict keys
  size_t pos = 0;
  std::function<void()> walk = [&]() {
    const OutputSlot &s = entry.outputs[pos++];
    if (s.kind == OutputSlot::Kind::Tuple || s.kind == OutputSlot::Kind::List ||
        s.kind == OutputSlot::Kind::Dict || s.kind == OutputSlot::Kind::Object) {
      for (int i = 0; i < s.index; ++i) {
        PyObject *key = s.kind == OutputSlot::Kind::Tuple || s.kind == OutputSlot::Kind::List
                            ? nullptr
                            : PyTuple_GET_ITEM(s.constant.get(), i);
        // An object's attribute is slice(name) (never a dict key: slices
        // are unhashable): select() reads it with getattr.
        path.push_back(!key ? PyRef::steal(PyLong_FromLong(i))
                       : s.kind == OutputSlot::Kind::Object
                           ? PyRef::steal(PySlice_New(key, nullptr, nullptr))
                           : PyRef::borrow(key));
        walk();
        path.pop_back();
      }
      return;
    }
    if (s.kind != OutputSlot::Kind::Graph || paths[s.index])
      return;
    PyRef t = PyRef::steal(PyTuple_New(path.size()));
    for (size_t i = 0; i < path.size(); ++i) {
      Py_INCREF(path[i].get());
      PyTuple_SET_ITEM(t.get(), i, path[i].get());
    }
    paths[s.index] = t;
  };
  walk();
  // A result only read as a Python number (OutputSlot::Scalar) has no
  // tensor in the eager result: None (no gradient flows through .item()).
  PyObject *all = PyTuple_New(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) // None: also a result only side effects store
    PyTuple_SET_ITEM(all, i, paths[i] ? paths[i].release() : (Py_INCREF(Py_None), Py_None));
  return all;
}

/// `functools.partial(kiln._C.call_eager, func, args, kwargs)` with the
/// arguments the frame was called with (read from `locals`, borrowed): the
/// original function called eagerly with the hook off. New reference or
/// null with a Python error set.
PyObject *makeRecompute(PyObject *func, PyObject *code, PyObject **locals) {
  auto *co = reinterpret_cast<PyCodeObject *>(code);
  int n = co->co_argcount, nkw = co->co_kwonlyargcount;
  PyRef args = PyRef::steal(PyTuple_New(n));
  for (int i = 0; i < n; ++i) {
    Py_XINCREF(locals[i]);
    PyTuple_SET_ITEM(args.get(), i, locals[i] ? locals[i] : (Py_INCREF(Py_None), Py_None));
  }
  PyRef kwargs = PyRef::steal(PyDict_New());
  for (int i = n; i < n + nkw; ++i)
    PyDict_SetItem(kwargs.get(), PyTuple_GET_ITEM(co->co_localsplusnames, i), locals[i]);
  // *args and **kwargs follow the named parameters.
  int extra = n + nkw;
  if (co->co_flags & CO_VARARGS) {
    PyObject *rest = locals[extra++];
    if (rest && PyTuple_Check(rest)) {
      PyRef all = PyRef::steal(PySequence_Concat(args.get(), rest));
      if (!all)
        return nullptr;
      args = all;
    }
  }
  if (co->co_flags & CO_VARKEYWORDS) {
    PyObject *more = locals[extra];
    if (more && PyDict_Check(more) && PyDict_Update(kwargs.get(), more) < 0)
      return nullptr;
  }
  PyRef partial = PyRef::steal(PyImport_ImportModule("functools"));
  PyRef eager = PyRef::steal(PyImport_ImportModule("kiln._C"));
  if (!partial || !eager)
    return nullptr;
  PyRef callEagerFn = PyRef::steal(PyObject_GetAttrString(eager.get(), "call_eager"));
  PyRef partialFn = PyRef::steal(PyObject_GetAttrString(partial.get(), "partial"));
  PyRef pargs = PyRef::steal(PyTuple_Pack(4, callEagerFn.get(), func, args.get(), kwargs.get()));
  return PyObject_Call(partialFn.get(), pargs.get(), nullptr);
}

/// The backward's recompute: kiln._autograd.select(paths, eager) where
/// `eager` recomputes the frame (or a break's prefix) eagerly. New
/// reference or null with a Python error set.
PyRef recomputeFunction(Entry &entry, PyObject *func, PyObject *code, PyObject **locals) {
  PyRef eagerFn =
      entry.resume ? PyRef::steal(prefixFunction(*entry.resume, func)) : PyRef::borrow(func);
  PyRef eager = eagerFn ? PyRef::steal(makeRecompute(eagerFn.get(), code, locals)) : PyRef();
  PyRef paths = PyRef::steal(resultPaths(entry));
  PyRef autogradMod = PyRef::steal(PyImport_ImportModule("kiln._autograd"));
  PyRef select =
      autogradMod ? PyRef::steal(PyObject_GetAttrString(autogradMod.get(), "select")) : PyRef();
  if (!eager || !select)
    return PyRef();
  return PyRef::steal(
      PyObject_CallFunctionObjArgs(select.get(), paths.get(), eager.get(), nullptr));
}

/// `kiln._random.replaying(seed, recompute)`: the recompute run with the
/// random values of the call that drew `seed` (borrowed). Null with a
/// Python error set on failure.
PyRef replayingRandom(PyObject *seed, PyObject *recompute) {
  PyRef mod = PyRef::steal(PyImport_ImportModule("kiln._random"));
  PyRef replaying = mod ? PyRef::steal(PyObject_GetAttrString(mod.get(), "replaying")) : PyRef();
  if (!replaying)
    return PyRef();
  return PyRef::steal(PyObject_CallFunctionObjArgs(replaying.get(), seed, recompute, nullptr));
}

/// kiln._autograd.<name> (new reference; null with a Python error set).
PyRef autogradHelper(const char *name) {
  PyRef mod = PyRef::steal(PyImport_ImportModule("kiln._autograd"));
  return mod ? PyRef::steal(PyObject_GetAttrString(mod.get(), name)) : PyRef();
}

/// `recompute` wrapped by kiln._autograd.restoring with the state the
/// entry's side effects change, as it is before this call replays them:
/// each effect as (kind, object, key). `recompute` itself when there are
/// none; null with a Python error set on failure.
PyRef restoringEffects(const Entry &entry, const std::vector<PyRef> &values, PyRef recompute) {
  if (entry.effects.empty() || !recompute)
    return recompute;
  PyRef targets = PyRef::steal(PyTuple_New(entry.effects.size()));
  for (size_t i = 0; targets && i < entry.effects.size(); ++i) {
    const SideEffect &e = entry.effects[i];
    const char *kind = e.kind == SideEffect::Kind::CopyInto  ? "tensor"
                       : e.kind == SideEffect::Kind::SetAttr ? "attr"
                                                             : "item";
    PyObject *key = e.key ? e.key.get() : Py_None;
    PyTuple_SET_ITEM(targets.get(), i, Py_BuildValue("(sOO)", kind, values[e.target].get(), key));
  }
  PyRef snapshot = autogradHelper("snapshot"), restoring = autogradHelper("restoring");
  if (!targets || !snapshot || !restoring)
    return PyRef();
  PyRef state = PyRef::steal(PyObject_CallOneArg(snapshot.get(), targets.get()));
  if (!state)
    return PyRef();
  return PyRef::steal(
      PyObject_CallFunctionObjArgs(restoring.get(), state.get(), recompute.get(), nullptr));
}

/// The indices of the graph results eager computes without gradients, and
/// of the graph inputs the side effects update in place (tuples).
std::pair<PyRef, PyRef> autogradMarks(const Entry &entry) {
  PyRef noGrad = PyRef::steal(PyList_New(0)), mutated = PyRef::steal(PyList_New(0));
  for (size_t i = 0; i < entry.results.size(); ++i)
    if (entry.results[i].noGrad)
      PyList_Append(noGrad.get(), PyRef::steal(PyLong_FromSize_t(i)).get());
  for (const SideEffect &e : entry.effects)
    for (size_t i = 0; e.kind == SideEffect::Kind::CopyInto && i < entry.inputs.size(); ++i)
      if (entry.inputs[i].isTensor() && entry.inputs[i].source == e.target)
        PyList_Append(mutated.get(), PyRef::steal(PyLong_FromSize_t(i)).get());
  return {PyRef::steal(PyList_AsTuple(noGrad.get())), PyRef::steal(PyList_AsTuple(mutated.get()))};
}

/// replaySideEffects with grad mode off (a parameter updated under
/// torch.no_grad() in the frame is written back as eager did it).
bool replayWithoutGrad(const Entry &entry, const std::vector<PyRef> &results,
                       llvm::ArrayRef<PyObject *> inputs, const std::vector<PyRef> &values) {
  PyRef c = PyRef::steal(PyObject_GetAttrString(torchModule(), "_C"));
  PyRef set = c ? PyRef::steal(PyObject_GetAttrString(c.get(), "_set_grad_enabled")) : PyRef();
  PyRef isOn = c ? PyRef::steal(PyObject_GetAttrString(c.get(), "is_grad_enabled")) : PyRef();
  PyRef was = isOn ? PyRef::steal(PyObject_CallNoArgs(isOn.get())) : PyRef();
  if (!set || !was || !PyRef::steal(PyObject_CallOneArg(set.get(), Py_False)))
    return false;
  bool ok = replaySideEffects(entry, results, inputs, values);
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb); // restore the mode even on failure
  PyRef back = PyRef::steal(PyObject_CallOneArg(set.get(), was.get()));
  if (!back)
    ok = false;
  if (type)
    PyErr_Restore(type, value, tb);
  return ok && back;
}

/// kiln._autograd.apply_compiled(forward, backward, recompute, inputs,
/// layout, no_grad) for an entry compiled with its backward (new reference
/// or null with a Python error set).
PyRef applyCompiled(const std::shared_ptr<Entry> &entry, PyObject *recompute, PyObject *inputs,
                    PyObject *noGrad) {
  PyRef forward, backward, layout;
  PyRef apply = autogradHelper("apply_compiled");
  if (!apply || !compiledGradCallables(entry, forward, backward, layout))
    return PyRef();
  return PyRef::steal(PyObject_CallFunctionObjArgs(apply.get(), forward.get(), backward.get(),
                                                   recompute, inputs, layout.get(), noGrad,
                                                   nullptr));
}

} // namespace

PyObject *entryCapsule(const std::shared_ptr<Entry> &entry) {
  auto *owned = new std::shared_ptr<Entry>(entry);
  PyObject *capsule = PyCapsule_New(owned, "kiln.Entry", [](PyObject *c) {
    delete static_cast<std::shared_ptr<Entry> *>(PyCapsule_GetPointer(c, "kiln.Entry"));
  });
  if (!capsule)
    delete owned;
  return capsule;
}

const Entry *entryOfCapsule(PyObject *capsule) {
  auto *owned = static_cast<std::shared_ptr<Entry> *>(PyCapsule_GetPointer(capsule, "kiln.Entry"));
  return owned ? owned->get() : nullptr;
}

PyObject *runWithAutograd(const std::shared_ptr<Entry> &shared, llvm::ArrayRef<PyObject *> inputs,
                          PyObject *func, PyObject *code, PyObject **locals,
                          PyObject *autogradApply, const std::vector<PyRef> &values) {
  Entry &entry = *shared;
  // kiln._autograd.apply(run, recompute, inputs), run = partial(_run_entry, entry).
  PyRef run = PyRef::steal(entryCapsule(shared));
  PyRef runner = PyRef::steal(PyImport_ImportModule("kiln._C"));
  PyRef runFn = runner ? PyRef::steal(PyObject_GetAttrString(runner.get(), "_run_entry")) : PyRef();
  PyRef partial = PyRef::steal(PyImport_ImportModule("functools"));
  PyRef partialFn =
      partial ? PyRef::steal(PyObject_GetAttrString(partial.get(), "partial")) : PyRef();
  if (!run || !runFn || !partialFn)
    return nullptr;
  PyRef bound =
      PyRef::steal(PyObject_CallFunctionObjArgs(partialFn.get(), runFn.get(), run.get(), nullptr));
  // The backward differentiates the eager result's tensors at the graph
  // results' positions (the result may hold inputs, constants, nesting).
  // A break's prefix recomputes through the prefix function (the original
  // code returning the state at the break).
  PyRef recompute = bound ? recomputeFunction(entry, func, code, locals) : PyRef();
  // A graph with random ops: the recompute replays this call's random
  // values (kiln._random.replaying) so the backward sees the forward's masks.
  for (size_t i = 0; recompute && i < entry.inputs.size(); ++i)
    if (entry.inputs[i].kind == GraphInput::Kind::Seed)
      recompute = replayingRandom(inputs[i], recompute.get());
  // Side effects: the recompute runs on the state before them and puts
  // back the state it found (the recompute would repeat them).
  recompute = restoringEffects(entry, values, recompute);
  auto [noGrad, mutated] = autogradMarks(entry);
  PyRef inTuple = PyRef::steal(PyTuple_New(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    Py_INCREF(inputs[i]);
    PyTuple_SET_ITEM(inTuple.get(), i, inputs[i]);
  }
  if (!bound || !recompute || !noGrad || !mutated)
    return nullptr;
  PyRef outs = entry.grad ? applyCompiled(shared, recompute.get(), inTuple.get(), noGrad.get())
                          : PyRef::steal(PyObject_CallFunctionObjArgs(
                                autogradApply, bound.get(), recompute.get(), inTuple.get(),
                                noGrad.get(), mutated.get(), nullptr));
  if (!outs)
    return nullptr;
  std::vector<PyRef> results;
  if (PyTuple_Check(outs.get()))
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(outs.get()); ++i)
      results.push_back(PyRef::borrow(PyTuple_GET_ITEM(outs.get(), i)));
  else
    results.push_back(outs);
  PyObject *r = assembleResult(entry, results, inputs, values);
  if (r && !entry.effects.empty() && !replayWithoutGrad(entry, results, inputs, values)) {
    Py_DECREF(r);
    return nullptr;
  }
  return r;
}

} // namespace kiln
