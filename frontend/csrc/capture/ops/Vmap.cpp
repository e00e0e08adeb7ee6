//===- Vmap.cpp - torch.vmap by broadcasting ----------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// torch.vmap of a Python function, captured without running functorch:
// kiln/_decompositions.py's `vmap` returns a function whose call reaches
// `callVmap` here, which runs the function once on *batched* values.
//
// Layout: inside L nested vmap levels, a batched tensor's first dims are
// the levels (outermost first; size 1 where it does not vary along a
// level), the rest its per-example shape (`Var::vmapLevels` counts its
// level dims; a value with fewer is aligned by inserting size-1 dims after
// its own). Elementwise ops then broadcast exactly as the per-example ops
// would batch; integer-tensor indexing of an unbatched tensor by batched
// 0-d indices is advanced indexing with the broadcast indices. Leaving a
// level expands its dim to the level's size and makes it the first
// per-example dim (out_dims=0).
//
// Soundness: only ops whose batching rule is this broadcast (their OpDef's
// VmapRule, OpRegistry.h) are allowed on batched values (`vmapApply`); the
// per-example shape of every operand is checked so broadcasting cannot mix
// levels with example dims; anything else (reductions, shape reads,
// in-place ops, a batched value escaping its vmap) throws Unsupported: a
// graph break, never a wrong batch.
//===----------------------------------------------------------------------===//
#include "capture/interp/Interp.h"
#include "GilOnce.h"
#include "capture/ops/TorchOpsImpl.h"

namespace kiln {

namespace {

PyObject *vmapMarker() {
  static PyOnce markerOnce;
  PyObject *marker = markerOnce.get([] {
    PyRef m = PyRef::steal(PyImport_ImportModule("kiln._decompositions"));
    PyObject *f = m ? PyObject_GetAttrString(m.get(), "vmap_call") : nullptr;
    PyErr_Clear();
    return f; // leaked: process lifetime
  });
  return marker;
}

/// A shallow copy of `v` seen as a plain tensor (its physical layout).
VarP physical(const VarP &v) {
  auto p = std::make_shared<Var>(*v);
  p->vmapLevels = 0;
  return p;
}

int64_t rankOf(const VarP &v) { return ttype(v->value).getRank(); }

/// Tensors among an op's arguments (one level into tuples/lists).
std::vector<VarP *> tensorSlots(Args &a) {
  std::vector<VarP *> out;
  for (auto &[k, v] : a.named) {
    if (!v)
      continue;
    if (v->isTensor())
      out.push_back(&v);
    else if (v->kind == Var::Kind::Tuple || v->kind == Var::Kind::List)
      for (auto &item : v->items)
        if (item->isTensor())
          out.push_back(&item);
  }
  return out;
}

/// In (dims of each argument): 0 or None.
std::vector<bool> mappedArgs(const VarP &inDims, size_t nargs) {
  auto isMapped = [](PyObject *o) {
    if (o == Py_None)
      return false;
    if (PyLong_Check(o) && PyLong_AsLong(o) == 0)
      return true;
    PyErr_Clear();
    throw Unsupported("torch.vmap: only in_dims 0 or None are supported");
  };
  std::vector<bool> mapped;
  if (inDims->kind == Var::Kind::Tuple || inDims->kind == Var::Kind::List) {
    for (auto &d : inDims->items)
      mapped.push_back(isMapped(constObj(d, "in_dims")));
  } else {
    PyObject *o = constObj(inDims, "in_dims");
    if (PyTuple_Check(o) || PyList_Check(o)) {
      PyRef seq = PyRef::steal(PySequence_Tuple(o));
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(seq.get()); ++i)
        mapped.push_back(isMapped(PyTuple_GET_ITEM(seq.get(), i)));
    } else {
      mapped.assign(nargs, isMapped(o));
    }
  }
  if (mapped.size() != nargs)
    throw Unsupported("torch.vmap: in_dims does not match the number of arguments (eager raises)");
  return mapped;
}

} // namespace

VarP Interpreter::vmapAlign(const VarP &v, int levels) {
  if (v->vmapLevels > levels)
    throw Unsupported("torch.vmap: a batched value is used outside its vmap");
  VarP p = physical(v);
  for (int k = v->vmapLevels; k < levels; ++k)
    p = callOp(*this, "unsqueeze", {{"input", p}, {"dim", constInt(k)}});
  p->vmapLevels = levels;
  return p;
}

VarP Interpreter::callVmap(PyObject *fn, std::vector<VarP> &args,
                           std::map<std::string, VarP> &kwargs) {
  if (!fn || fn != vmapMarker())
    return nullptr;
  // vmap_call(func, in_dims, out_dims, args, kwargs)
  if (args.size() != 5 || !kwargs.empty())
    throw Unsupported("torch.vmap: unexpected call");
  VarP func = args[0], outDims = args[2];
  PyObject *od = constObj(outDims, "out_dims");
  if (!PyLong_Check(od) || PyLong_AsLong(od) != 0) {
    PyErr_Clear();
    throw Unsupported("torch.vmap: only out_dims=0 is supported");
  }
  std::vector<VarP> callArgs = iterItems(args[3]);
  std::map<std::string, VarP> callKw;
  for (auto &[k, v] : dictItems(args[4]))
    callKw[pyText(k.get())] = v;
  std::vector<bool> mapped = mappedArgs(args[1], callArgs.size());
  int level = static_cast<int>(vmapSizes_.size()) + 1;
  int64_t size = -1;
  int sizeSym = -1;  // the symbol of a symbolic mapped size (masks over kv_len)
  VarP sizeVarOfMap; // that size as a SymInt
  for (size_t i = 0; i < callArgs.size(); ++i) {
    if (!mapped[i])
      continue;
    VarP &x = callArgs[i];
    if (!x->isTensor())
      throw Unsupported("torch.vmap: a mapped argument must be a tensor");
    VarP p = vmapAlign(x, level - 1);
    auto shape = ttype(p->value).getShape();
    if (static_cast<int64_t>(shape.size()) < level)
      throw Unsupported("torch.vmap: a mapped 0-d tensor (eager raises)");
    int64_t n = shape[level - 1];
    int sym = symbolOfDim(p->value, level - 1);
    if (mlir::ShapedType::isDynamic(n)) {
      if (sym < 0)
        throw Unsupported(BreakCategory::DynamicShape,
                          "torch.vmap over a symbolic size kiln does not track");
      if (size >= 0 && (!sizeVarOfMap || sym != sizeSym))
        throw Unsupported(BreakCategory::DynamicShape,
                          "torch.vmap: mapped sizes of different symbols");
      sizeSym = sym;
      sizeVarOfMap = sizeVar(p->value, level - 1);
    } else if (sizeVarOfMap || (size >= 0 && n != size)) {
      throw Unsupported("torch.vmap: mapped sizes differ (eager raises)");
    }
    size = mlir::ShapedType::isDynamic(n) ? 0 : n; // >= 0: an argument is mapped
    p->vmapLevels = level;
    x = p;
  }
  if (size < 0)
    throw Unsupported("torch.vmap: no argument is mapped (eager raises)");
  vmapSizes_.push_back(size);
  VarP r;
  try {
    r = call(func, callArgs, callKw);
  } catch (...) {
    vmapSizes_.pop_back();
    throw;
  }
  vmapSizes_.pop_back();
  if (!r->isTensor())
    throw Unsupported("torch.vmap: the function must return one tensor");
  // The level's dim becomes the first per-example dim, at its full size.
  VarP p = vmapAlign(r, level);
  std::vector<int64_t> target(ttype(p->value).getShape().begin(), ttype(p->value).getShape().end());
  bool expand =
      sizeVarOfMap ? symbolOfDim(p->value, level - 1) != sizeSym : target[level - 1] != size;
  if (expand) { // sizes as Vars: other dims may be symbolic (an inner level's)
    std::vector<VarP> dims;
    for (int64_t d = 0; d < (int64_t)target.size(); ++d)
      dims.push_back(d != level - 1 ? sizeVar(p->value, d)
                     : sizeVarOfMap ? sizeVarOfMap
                                    : constInt(size));
    p = callOp(*this, "expand",
               {{"input", physical(p)}, {"size", makeSeq(Var::Kind::Tuple, dims)}});
  }
  p->vmapLevels = level - 1;
  // May alias a value of the caller (an identity function): never updated
  // in place through this Var.
  p->fresh = false;
  return p;
}

VarP Interpreter::vmapApply(const std::string &op, Args &a) {
  std::vector<VarP *> tensors = tensorSlots(a);
  bool anyBatched = false;
  for (VarP *t : tensors)
    anyBatched |= (*t)->vmapLevels > 0;
  if (!anyBatched)
    return nullptr;
  int level = static_cast<int>(vmapSizes_.size());
  const OpDef *def = opRegistry().find(op);
  VmapRule rule = def ? def->vmap : VmapRule::NotBatched;
  VarP in = a.get("input");
  auto reject = [&](const std::string &why) {
    throw Unsupported("torch.vmap: " + op + " on a batched tensor is not supported (" + why + ")");
  };
  if (rule == VmapRule::Factory) { // reads only dtype/device of the batched input
    if (tensors.size() != 1)
      reject("tensor arguments");
    Args pa = a;
    pa.named["input"] = physical(in);
    return applyTracked(*this, op, pa); // unbatched
  }
  if (rule == VmapRule::Index) {
    if (!in || in->vmapLevels > 0)
      reject("indexing a batched tensor");
    VarP idx = a.get("index");
    std::vector<VarP> items = idx->kind == Var::Kind::Tuple ? idx->items : std::vector<VarP>{idx};
    Args pa = a;
    std::vector<VarP> aligned;
    for (auto &it : items) {
      if (!it->isTensor() || rankOf(it) - it->vmapLevels != 0)
        reject("only 0-d per-example integer tensor indices are batched");
      aligned.push_back(vmapAlign(it, level));
      aligned.back()->vmapLevels = 0;
    }
    pa.named["index"] =
        idx->kind == Var::Kind::Tuple ? makeSeq(Var::Kind::Tuple, aligned) : aligned[0];
    VarP r = applyTracked(*this, op, pa);
    r->vmapLevels = level;
    return r;
  }
  bool isCast = rule == VmapRule::Cast;
  if (rule != VmapRule::Elementwise && !isCast)
    reject("kiln batches elementwise ops, casts, new_* factories and integer-tensor indexing");
  if (isCast && tensors.size() != 1)
    reject("a cast to another tensor's type");
  // Per-example ranks: batched operands agree; unbatched ones fit under them.
  int64_t exampleRank = -1;
  for (VarP *t : tensors)
    if ((*t)->vmapLevels > 0) {
      int64_t r = rankOf(*t) - (*t)->vmapLevels;
      if (exampleRank >= 0 && r != exampleRank)
        reject("operands of different per-example ranks");
      exampleRank = r;
    }
  Args pa = a;
  for (auto &[k, v] : pa.named) {
    if (!v)
      continue;
    if (v->kind == Var::Kind::Tuple || v->kind == Var::Kind::List)
      reject("tensor sequences");
    if (!v->isTensor())
      continue;
    if (v->vmapLevels == 0 && rankOf(v) > exampleRank)
      reject("an unbatched operand of higher rank than the per-example values");
    if (v->vmapLevels > 0) {
      v = vmapAlign(v, level);
      v->vmapLevels = 0;
    }
  }
  VarP r = applyTracked(*this, op, pa);
  if (r && r->isTensor())
    r->vmapLevels = level;
  return r;
}

} // namespace kiln
