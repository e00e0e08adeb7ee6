//===- TorchTensorProtocol.cpp - Tensor attributes and torch.tensor ------===//
// SPDX-License-Identifier: Apache-2.0
//
// What a captured tensor answers as a Python object: its attributes
// (`x.shape`, `x.dtype`, `x.device`, `x.T`, layout flags, bound methods)
// and torch.tensor of Python data. Python operators on tensors (`x + y`)
// go through the op registry (TorchCalls.cpp).
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"
#include "TensorMethods.h"
#include "capture/values/ViewSteps.h"
#include "GilOnce.h"

#include "ir/KilnOps.h"

#include "llvm/ADT/DenseSet.h"

#include <cmath>
#include <unordered_map>

namespace kiln {

using mlir::RankedTensorType;
using mlir::Type;
using mlir::Value;

VarP Interpreter::sizeVar(mlir::Value value, int64_t dim) {
  auto type = ttype(value);
  int sym = symbolOfDim(value, dim);
  if (sym == -1) {
    if (type.isDynamicDim(dim))
      throw Unsupported("a symbolic size kiln lost track of");
    return makeConst(PyRef::steal(PyLong_FromLongLong(type.getDimSize(dim))));
  }
  out_.readSymbolicSize = true;
  auto v = std::make_shared<Var>();
  v->kind = Var::Kind::SymInt;
  if (sym >= 0) {
    // A derived size reads as its expression of input sizes, so
    // arithmetic and comparisons simplify against them (`[:k.shape[-2]]`
    // of a mask of that size).
    v->sym = out_.symbols[sym].def ? out_.symbols[sym].def : symExpr(sym);
    v->captured = out_.symbols[sym].captured;
    v->staticSym = !type.isDynamicDim(dim);
  }
  return v;
}

namespace {
/// The attributes a graph tensor answers by itself (others are methods,
/// looked up in the op registry).
enum class TensorAttr {
  Shape,
  Len,
  Ndim,
  Dtype,
  IsCuda,
  IsMeta,
  NeverSet,
  RequiresGrad,
  Grad,
  Device,
  T,
  MT
};

const std::unordered_map<std::string, TensorAttr> &tensorAttrs() {
  static const std::unordered_map<std::string, TensorAttr> attrs = {
      // no Python
      {"shape", TensorAttr::Shape},
      {kTensorLenQuery, TensorAttr::Len}, // len(t); t.__len__ is the method
      {"ndim", TensorAttr::Ndim},
      {"dtype", TensorAttr::Dtype},
      {"is_cuda", TensorAttr::IsCuda},
      {"is_meta", TensorAttr::IsMeta},
      // Graph tensors are dense strided tensors: nested, sparse, quantized
      // and MKL-DNN tensors are never graph inputs (their frames run eagerly).
      {"is_nested", TensorAttr::NeverSet},
      {"is_sparse", TensorAttr::NeverSet},
      {"is_quantized", TensorAttr::NeverSet},
      {"is_mkldnn", TensorAttr::NeverSet},
      {"requires_grad", TensorAttr::RequiresGrad},
      {"grad", TensorAttr::Grad},
      {"device", TensorAttr::Device},
      {"T", TensorAttr::T},
      {"mT", TensorAttr::MT},
  };
  return attrs;
}
} // namespace

VarP Interpreter::tensorAttribute(const VarP &self, const std::string &name) {
  auto found = tensorAttrs().find(name);
  if (found == tensorAttrs().end())
    return tensorMethod(self, name);
  TensorAttr attr = found->second;
  if (self->vmapLevels > 0 && attr != TensorAttr::Dtype && attr != TensorAttr::Device &&
      attr != TensorAttr::IsCuda && attr != TensorAttr::RequiresGrad)
    throw Unsupported("torch.vmap: reading ." + name + " of a batched tensor is not supported");
  auto type = ttype(self->value);
  switch (attr) {
  case TensorAttr::Shape:
    return tensorShape(self);
  case TensorAttr::Len:
    if (type.getRank() == 0)
      throw Unsupported("len() of a 0-d tensor");
    return sizeVar(self->value, 0);
  case TensorAttr::Ndim:
    return makeConst(PyRef::steal(PyLong_FromLong(type.getRank())));
  case TensorAttr::Dtype:
    return makeConst(PyRef::borrow(dtypeObject(dtypeOf(type.getElementType()))));
  case TensorAttr::IsCuda:
    return makeConst(PyRef::borrow(graphDevice_ >= 0 ? Py_True : Py_False));
  case TensorAttr::IsMeta:
    return makeConst(PyRef::borrow(graphDevice_ == TensorMeta::kMetaDevice ? Py_True : Py_False));
  case TensorAttr::NeverSet:
    return makeConst(PyRef::borrow(Py_False));
  case TensorAttr::RequiresGrad:
    return tensorRequiresGrad(self);
  case TensorAttr::Grad:
    return tensorGrad(self);
  case TensorAttr::Device: // all graph tensors are on the inputs' device (guarded)
    return makeConst(PyRef::steal(
        PyObject_CallMethod(torchModule(), "device", "s", deviceName(graphDevice_).c_str())));
  case TensorAttr::T: {
    std::vector<VarP> perm;
    for (int64_t i = type.getRank() - 1; i >= 0; --i)
      perm.push_back(makeConst(PyRef::steal(PyLong_FromLongLong(i))));
    std::vector<VarP> args = {makeSeq(Var::Kind::Tuple, perm)};
    std::map<std::string, VarP> nokw;
    return callTensorMethod(self, "permute", args, nokw);
  }
  case TensorAttr::MT: {
    std::vector<VarP> dims = {makeConst(PyRef::steal(PyLong_FromLong(-2))),
                              makeConst(PyRef::steal(PyLong_FromLong(-1)))};
    std::map<std::string, VarP> nokw;
    return callTensorMethod(self, "transpose", dims, nokw);
  }
  }
  throw Unsupported("Tensor." + name + " is not supported yet");
}

VarP Interpreter::tensorShape(const VarP &self) {
  auto type = ttype(self->value);
  bool symbolic = !type.hasStaticShape();
  for (int64_t i = 0; !symbolic && out_.dynamic.shadow && i < type.getRank(); ++i)
    symbolic = symbolOfDim(self->value, i) >= 0;
  if (symbolic) {
    // Symbolic dims read as SymInt vars (DynamicShapes.h).
    std::vector<VarP> items;
    for (int64_t i = 0; i < type.getRank(); ++i)
      items.push_back(sizeVar(self->value, i));
    VarP shape = makeSeq(Var::Kind::Tuple, items);
    shape->obj = PyRef::borrow(torchSizeType()); // returned as a torch.Size
    return shape;
  }
  PyObject *sizeType = torchSizeType();
  PyRef tuple = PyRef::steal(PyTuple_New(type.getRank()));
  for (int64_t i = 0; i < type.getRank(); ++i)
    PyTuple_SET_ITEM(tuple.get(), i, PyLong_FromLongLong(type.getDimSize(i)));
  PyRef args = PyRef::steal(PyTuple_Pack(1, tuple.get()));
  return makeConst(PyRef::steal(PyObject_Call(sizeType, args.get(), nullptr)));
}

VarP Interpreter::tensorRequiresGrad(const VarP &self) {
  auto type = ttype(self->value);
  // A graph input: its guarded flag; a computed tensor: eager's rule
  // (grad mode on here and some input requiring grad).
  if (self->inputIndex >= 0) // the caller's tensor (also after in-place updates)
    return makeConst(
        PyRef::borrow(out_.inputs[self->inputIndex].requiresGrad ? Py_True : Py_False));
  if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(self->value))
    if (arg.getOwner()->isEntryBlock() && arg.getArgNumber() < out_.inputs.size())
      return makeConst(
          PyRef::borrow(out_.inputs[arg.getArgNumber()].requiresGrad ? Py_True : Py_False));
  bool anyInput = false;
  for (const GraphInput &in : out_.inputs)
    anyInput |= in.requiresGrad;
  if (!gradMode_ || !anyInput || !llvm::isa<mlir::FloatType>(type.getElementType()))
    return makeConst(PyRef::borrow(Py_False));
  if (gradSwitched_)
    throw Unsupported("requires_grad of a computed tensor in a graph with grad-mode regions");
  // Grad mode on throughout: the result requires grad when it depends on
  // an input that does (float ops are differentiable).
  llvm::SmallVector<mlir::Value> todo = {self->value};
  llvm::DenseSet<mlir::Value> seen;
  while (!todo.empty()) {
    mlir::Value v = todo.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(v)) {
      if (arg.getOwner()->isEntryBlock() && arg.getArgNumber() < out_.inputs.size() &&
          out_.inputs[arg.getArgNumber()].requiresGrad)
        return makeConst(PyRef::borrow(Py_True));
      continue;
    }
    if (mlir::Operation *def = v.getDefiningOp())
      for (mlir::Value operand : def->getOperands())
        if (auto st = llvm::dyn_cast<mlir::ShapedType>(operand.getType()))
          if (llvm::isa<mlir::FloatType>(st.getElementType()))
            todo.push_back(operand);
  }
  return makeConst(PyRef::borrow(Py_False));
}

VarP Interpreter::tensorGrad(const VarP &self) {
  // The caller's tensor's .grad, read through its source (None and a
  // tensor are guarded like any read); a computed tensor has none.
  if (self->inputIndex < 0)
    throw Unsupported(BreakCategory::UnsupportedOp,
                      ".grad of a tensor computed in the graph (eager: None and a warning)");
  PyRef key = PyRef::steal(PyUnicode_FromString("grad"));
  PyRef grad = PyRef::steal(PyObject_GetAttr(inputObjects_[self->inputIndex].get(), key.get()));
  if (!grad)
    throw Unsupported(BreakCategory::UserError, withPythonError("reading .grad raised"));
  int source =
      out_.sources.add(Source::Kind::Attr, out_.inputs[self->inputIndex].source, 0, key.get());
  keepAlive_.push_back(grad);
  return fromSource(grad.get(), source, /*lazy=*/false);
}

VarP Interpreter::tensorMethod(const VarP &self, const std::string &name) {
  if (self->vmapLevels > 0)
    throw Unsupported("torch.vmap: reading ." + name + " of a batched tensor is not supported");
  if (PyObject *fn = replacedTensorMethod(name)) {
    // The user's replacement runs, not kiln's op of that name: a Python
    // function is inlined, anything else is called eagerly at a break.
    if (!PyFunction_Check(fn))
      throw Unsupported(BreakCategory::UnsupportedOp,
                        "torch.Tensor." + name + " was replaced by a non-Python callable");
    auto m = std::make_shared<Var>();
    m->kind = Var::Kind::BoundMethod;
    m->obj = PyRef::borrow(fn);
    m->self = self;
    m->name = name;
    return m;
  }
  const OpRegistry &registry = opRegistry();
  if (registry.method(name) ||
      (name.size() > 1 && name.back() == '_' && registry.method(name.substr(0, name.size() - 1)))) {
    auto m = std::make_shared<Var>();
    m->kind = Var::Kind::TensorMethod;
    m->self = self;
    m->name = name;
    return m;
  }
  throw Unsupported("Tensor." + name + " is not supported yet");
}

namespace {
/// Flattens Python numbers (nested lists/tuples) into `out`; fills `shape`
/// and the widest promotion category seen. False if not numbers.
bool flattenData(PyObject *o, size_t depth, std::vector<int64_t> &shape, std::vector<double> &out,
                 DTypeCategory &kind) {
  if (PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o)) {
    if (depth != shape.size())
      return false;
    kind = std::max(kind, PyBool_Check(o)        ? DTypeCategory::Bool
                          : PyLong_CheckExact(o) ? DTypeCategory::Integer
                                                 : DTypeCategory::Floating);
    double v = PyFloat_AsDouble(o);
    if (kind == DTypeCategory::Integer && PyLong_CheckExact(o) &&
        std::fabs(v) >= 9007199254740992.0)
      return false; // not exact through a double
    out.push_back(v);
    return !PyErr_Occurred();
  }
  if (!PyList_CheckExact(o) && !PyTuple_CheckExact(o))
    return false;
  int64_t n = PySequence_Fast_GET_SIZE(o);
  if (depth == shape.size())
    shape.push_back(n);
  else if (depth > shape.size() || shape[depth] != n)
    return false;
  for (int64_t i = 0; i < n; ++i)
    if (!flattenData(PySequence_Fast_ITEMS(o)[i], depth + 1, shape, out, kind))
      return false;
  return true;
}
/// The leaves of nested lists/tuples `v` of numbers, Python numbers computed
/// in the graph (Scalars, symbolic sizes) and 0-d graph tensors, row-major,
/// with the nesting's `shape`; false when ragged or another value.
bool flattenVars(const VarP &v, size_t depth, std::vector<int64_t> &shape,
                 std::vector<VarP> &leaves) {
  bool number = (v->isConst() && (PyBool_Check(v->obj.get()) || PyLong_CheckExact(v->obj.get()) ||
                                  PyFloat_CheckExact(v->obj.get()))) ||
                v->kind == Var::Kind::Scalar || (v->kind == Var::Kind::SymInt && v->sym);
  if (number || (v->isTensor() && ttype(v->value).getRank() == 0 && v->vmapLevels == 0)) {
    leaves.push_back(v);
    return depth == shape.size();
  }
  std::vector<VarP> items;
  if (v->kind == Var::Kind::Tuple || v->kind == Var::Kind::List) {
    items = v->items;
  } else if (v->isConst() &&
             (PyList_CheckExact(v->obj.get()) || PyTuple_CheckExact(v->obj.get()))) {
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(v->obj.get()); ++i)
      items.push_back(makeConst(PyRef::borrow(PySequence_Fast_ITEMS(v->obj.get())[i])));
  } else {
    return false;
  }
  int64_t n = (int64_t)items.size();
  if (depth == shape.size())
    shape.push_back(n);
  else if (depth > shape.size() || shape[depth] != n)
    return false;
  for (const VarP &item : items)
    if (!flattenVars(item, depth + 1, shape, leaves))
      return false;
  return true;
}

/// torch.tensor's dtype for `leaves` (its scalar-type inference: the
/// promotion of every element's type, a Python float being the default float).
DType inferredDType(const std::vector<VarP> &leaves) {
  std::optional<DType> d;
  for (const VarP &leaf : leaves) {
    DType t =
        leaf->isTensor()                  ? dtypeOf(ttype(leaf->value).getElementType())
        : leaf->kind == Var::Kind::SymInt ? DType::I64
        : leaf->kind == Var::Kind::Scalar // obj: its Python type
            ? scalarDType(leaf->obj.get() == (PyObject *)&PyFloat_Type  ? DTypeCategory::Floating
                          : leaf->obj.get() == (PyObject *)&PyBool_Type ? DTypeCategory::Bool
                                                                        : DTypeCategory::Integer)
            : scalarDType(*scalarCategory(leaf->obj.get()));
    if (!d || *d == t) {
      d = t;
      continue;
    }
    DTypeCategory a = dtypeCategory(*d), b = dtypeCategory(t);
    if (a != b) {
      d = a > b ? *d : t;
      continue;
    }
    // Two dtypes of one category: the wider (f16 with bf16 gives f32).
    int wa = dtypeBytes(*d), wb = dtypeBytes(t);
    if (wa == wb && a == DTypeCategory::Floating)
      d = DType::F32;
    else if (wa == wb)
      throw Unsupported(BreakCategory::UnsupportedOp,
                        "torch.tensor mixing integer dtypes of one width");
    else
      d = wa > wb ? *d : t;
  }
  return *d;
}

} // namespace

VarP Interpreter::tensorOfGraphValues(const VarP &data, std::optional<DType> dtype) {
  std::vector<int64_t> shape;
  std::vector<VarP> leaves;
  if (!flattenVars(data, 0, shape, leaves) || leaves.empty())
    return nullptr;
  for (const VarP &leaf : leaves)
    if (leaf->isTensor() && constObj(tensorAttribute(leaf, "requires_grad"), "") == Py_True)
      throw Unsupported(BreakCategory::UnsupportedOp,
                        "torch.tensor of values that require grad (eager copies them detached)");
  DType d = dtype ? *dtype : inferredDType(leaves);
  Emit e(*this);
  std::vector<VarP> rows;
  for (const VarP &leaf : leaves)
    rows.push_back(makeTensor(e.reshape(e.operand(symIntAsScalar(*this, leaf), d), {1})));
  VarP flat =
      callOp(*this, "cat", {{"tensors", makeSeq(Var::Kind::List, rows)}, {"dim", constInt(0)}});
  VarP r = makeTensor(e.reshape(flat->value, shape));
  r->fresh = true;
  return r;
}

VarP Interpreter::tensorFromData(std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  if (args.size() != 1)
    throw Unsupported("torch.tensor takes one data argument");
  for (auto &[k, v] : kwargs)
    if (k != "dtype" && k != "device" &&
        !(k == "requires_grad" && v->isConst() && v->obj.get() == Py_False))
      throw Unsupported("torch.tensor(" + k + "=...) is not supported");
  std::vector<int64_t> shape;
  std::vector<double> data;
  DTypeCategory kind = DTypeCategory::Bool;
  // Data as a Python object: a constant, or a list/tuple built in the frame
  // from constants (`torch.tensor([])`, `torch.tensor([1, 2])`).
  PyRef constData = args[0]->isConst() ? args[0]->obj : seqAsConst(args[0]);
  if (!constData || !flattenData(constData.get(), 0, shape, data, kind)) {
    PyErr_Clear();
    std::optional<DType> dtype;
    if (kwargs.count("dtype") &&
        !(kwargs["dtype"]->isConst() && kwargs["dtype"]->obj.get() == Py_None))
      if (!(dtype = dtypeFromObject(constObj(kwargs["dtype"], "dtype"))))
        throw Unsupported("torch.tensor with an unsupported dtype");
    if (kwargs.count("device")) {
      PyRef str = PyRef::steal(PyObject_Str(constObj(kwargs["device"], "device")));
      PyErr_Clear();
      if (!str || pyText(str.get()) != deviceName(graphDevice_))
        throw Unsupported("torch.tensor of graph values on another device");
    }
    if (VarP t = tensorOfGraphValues(args[0], dtype)) // 0-d graph tensors among the data
      return t;
    throw Unsupported(BreakCategory::UnsupportedOp,
                      withPythonError("torch.tensor of data other than Python numbers"));
  }
  if (kwargs.count("device")) {
    PyRef str = PyRef::steal(PyObject_Str(constObj(kwargs["device"], "device")));
    PyErr_Clear();
    std::string dev = str ? pyText(str.get()) : "";
    if (dev != deviceName(graphDevice_) && !(graphDevice_ == -1 && dev == "cpu"))
      throw Unsupported("torch.tensor on device " + dev + " (not the graph's device)");
  }
  // Empty data (`torch.tensor([])`, HF's cache initialization) has eager's
  // default float dtype.
  DType d = data.empty() ? defaultFloat() : scalarDType(kind);
  if (kwargs.count("dtype") &&
      !(kwargs["dtype"]->isConst() && kwargs["dtype"]->obj.get() == Py_None)) {
    auto dt = dtypeFromObject(constObj(kwargs["dtype"], "dtype"));
    if (!dt)
      throw Unsupported("torch.tensor with an unsupported dtype");
    d = *dt;
  }
  Emit e(*this);
  auto t = makeTensor(e.dense(shape, d, data));
  t->fresh = true;
  return t;
}

namespace {
PyObject *dtypeType() {
  static PyOnce tOnce;
  PyObject *t = tOnce.get([] { return PyObject_GetAttrString(torchModule(), "dtype"); });
  return t;
}
} // namespace

/// The storage offset of graph input `input` plus `relative` (a view's
/// offset from it), with an Equals guard on the input's
/// `storage_offset()` (its Tensor guard does not cover the offset).
static PyRef inputStorageOffset(Capture &out, const std::vector<PyRef> &objects, int input,
                                PyObject *relative) {
  PyObject *t = input < (int)objects.size() ? objects[input].get() : nullptr;
  PyRef base = t ? PyRef::steal(PyObject_CallMethod(t, "storage_offset", nullptr)) : PyRef();
  PyRef total = base ? PyRef::steal(PyNumber_Add(base.get(), relative)) : PyRef();
  if (!total)
    throw Unsupported(BreakCategory::UnsupportedOp,
                      withPythonError("Tensor.storage_offset() of an input"));
  PyRef key = PyRef::steal(PyUnicode_InternFromString("storage_offset"));
  Guard g;
  g.kind = Guard::Kind::Equals;
  g.source = out.sources.add(Source::Kind::MethodCall, out.inputs[input].source, 0, key.get());
  g.expected = base;
  bool seen = false;
  for (const Guard &e : out.guards)
    seen = seen || (e.source == g.source && e.kind == g.kind);
  if (!seen)
    out.guards.push_back(std::move(g));
  return total;
}

VarP Interpreter::tensorLayout(const VarP &self, const std::string &name,
                               const std::vector<VarP> &args,
                               const std::map<std::string, VarP> &kwargs) {
  // The strides of a graph input are guarded (its Tensor guard); a view of
  // one gets eager's layout by replaying its view steps on a meta tensor
  // with the input's sizes and strides. Anything else: nullptr (a break).
  // A copy made by a view step (ViewSteps.h) is contiguous.
  auto arg = llvm::dyn_cast<mlir::BlockArgument>(self->value);
  int input = self->contiguousCopy    ? -1
              : self->viewInput >= 0  ? self->viewInput
              : self->inputIndex >= 0 ? self->inputIndex
              : arg                   ? (int)arg.getArgNumber()
                                      : -1;
  const char *kwName = name == "stride" ? "dim" : "memory_format";
  if ((input < 0 && !self->contiguousCopy) || input >= (int)out_.inputs.size() ||
      self->vmapLevels > 0 || kwargs.size() > (kwargs.count(kwName) ? 1u : 0u) ||
      args.size() + kwargs.size() > (name == "storage_offset" ? 0u : 1u))
    return nullptr;
  for (const VarP &v : args)
    if (!v->isConst())
      return nullptr;
  for (auto &[k, v] : kwargs)
    if (!v->isConst())
      return nullptr;
  const Guard *tg = nullptr;
  for (const Guard &g : out_.guards)
    if (input >= 0 && g.kind == Guard::Kind::Tensor && g.source == out_.inputs[input].source)
      tg = &g;
  auto type = ttype(self->value);
  if (self->contiguousCopy ? !type.hasStaticShape()
                           : !tg || (tg->strides.empty() && !tg->sizes.empty())) // symbolic
    return nullptr;
  std::vector<int64_t> sizes = tg ? tg->sizes : std::vector<int64_t>(type.getShape());
  std::vector<int64_t> strides(sizes.size(), 1);
  for (int i = (int)sizes.size() - 2; i >= 0; --i) // contiguous
    strides[i] = strides[i + 1] * std::max<int64_t>(sizes[i + 1], 1);
  static PyOnce emptyStridedOnce;
  PyObject *emptyStrided =
      emptyStridedOnce.get([] { return PyObject_GetAttrString(torchModule(), "empty_strided"); });
  PyObject *dtype = tg ? tg->dtype : dtypeObject(dtypeOf(type.getElementType()));
  PyRef kw = PyRef::steal(Py_BuildValue("{s:O,s:s}", "dtype", dtype, "device", "meta"));
  PyRef shapeArgs =
      PyRef::steal(PyTuple_Pack(2, PyRef::steal(intTuple(sizes)).get(),
                                PyRef::steal(intTuple(tg ? tg->strides : strides)).get()));
  PyRef t = PyRef::steal(PyObject_Call(emptyStrided, shapeArgs.get(), kw.get()));
  for (size_t i = 0; t && self->viewInput >= 0 && i < self->viewSteps.size(); ++i) {
    PyRef method = PyRef::steal(PyObject_GetAttrString(t.get(), self->viewSteps[i].first.c_str()));
    t = method ? PyRef::steal(PyObject_Call(method.get(), self->viewSteps[i].second.get(),
                                            self->viewSteps[i].kwargs.get()))
               : PyRef();
  }
  PyRef callArgs = PyRef::steal(PyTuple_New(args.size()));
  for (size_t i = 0; i < args.size(); ++i)
    PyTuple_SET_ITEM(callArgs.get(), i, PyRef::borrow(args[i]->obj.get()).release());
  PyRef callKwargs = PyRef::steal(PyDict_New());
  for (auto &[k, v] : kwargs)
    PyDict_SetItemString(callKwargs.get(), k.c_str(), v->obj.get());
  PyRef method = t ? PyRef::steal(PyObject_GetAttrString(t.get(), name.c_str())) : PyRef();
  PyRef answer = method
                     ? PyRef::steal(PyObject_Call(method.get(), callArgs.get(), callKwargs.get()))
                     : PyRef();
  if (!answer)
    throw Unsupported(BreakCategory::UnsupportedOp,
                      withPythonError("Tensor." + name + "() of a view of an input"));
  if (name == "storage_offset") // the meta base starts at 0: add the input's, guarded
    answer = inputStorageOffset(out_, inputObjects_, input, answer.get());
  return makeConst(answer);
}

PyRef Interpreter::layoutRecipe(const VarP &self) {
  // An input keeps its Var when in-place updates rebind its value.
  auto arg = llvm::dyn_cast<mlir::BlockArgument>(self->value);
  int input = self->viewInput >= 0    ? self->viewInput
              : self->inputIndex >= 0 ? self->inputIndex
              : arg                   ? (int)arg.getArgNumber()
                                      : -1;
  if (self->vmapLevels > 0)
    return PyRef();
  return inputLayout(out_, input, self->viewInput >= 0 ? self.get() : nullptr);
}

VarP Interpreter::tensorQuery(const VarP &self, const std::string &name,
                              const std::vector<VarP> &args,
                              const std::map<std::string, VarP> &kwargs) {
  if (name == "type" && args.size() == 1 && kwargs.empty() && args[0]->isConst() &&
      PyObject_TypeCheck(args[0]->obj.get(), reinterpret_cast<PyTypeObject *>(dtypeType()))) {
    // x.type(torch.float32) is x.to(torch.float32); type strings are not mapped.
    std::vector<VarP> a = args;
    std::map<std::string, VarP> kw;
    return callTensorMethod(self, "to", a, kw);
  }
  if (name == "__len__" && args.empty() && kwargs.empty())
    return tensorAttribute(self, kTensorLenQuery);
  if (name == "cpu" && args.empty() && kwargs.empty() && graphDevice_ == TensorMeta::kCpuDevice)
    return self; // eager returns the tensor itself (the same object)
  if (name == "to" && args.size() == 1 && kwargs.empty() && args[0]->isConst() &&
      args[0]->obj.get() == dtypeObject(dtypeOf(ttype(self->value).getElementType())))
    return self; // x.to(its own dtype): eager returns x itself
  if (name == "to") {
    // x.to(device[, dtype]) / x.to(device=, dtype=) on the graph's own
    // device moves nothing (eager returns x, or the cast).
    static PyOnce deviceTypeOnce;
    PyObject *deviceType =
        deviceTypeOnce.get([] { return PyObject_GetAttrString(torchModule(), "device"); });
    std::vector<VarP> rest = args;
    std::map<std::string, VarP> kw = kwargs;
    VarP dev;
    if (kw.count("device")) {
      dev = kw["device"];
      kw.erase("device");
    } else if (!rest.empty() && rest[0]->isConst() &&
               (PyObject_TypeCheck(rest[0]->obj.get(),
                                   reinterpret_cast<PyTypeObject *>(deviceType)) ||
                PyUnicode_Check(rest[0]->obj.get()))) {
      dev = rest[0];
      rest.erase(rest.begin());
    }
    if (!dev || !dev->isConst())
      return nullptr;
    PyRef str = PyRef::steal(PyObject_Str(dev->obj.get()));
    PyErr_Clear();
    std::string d = str ? pyText(str.get()) : "";
    std::string mine = deviceName(graphDevice_);
    if (d != mine && !(graphDevice_ == -1 && d == "cpu"))
      return nullptr;
    if (kw.count("dtype") && rest.empty()) {
      rest.push_back(kw["dtype"]);
      kw.erase("dtype");
    }
    if (rest.empty() && kw.empty())
      return self;
    return callTensorMethod(self, "to", rest, kw);
  }
  if (name == "stride" || name == "is_contiguous" || name == "storage_offset") {
    if (VarP r = tensorLayout(self, name, args, kwargs))
      return r;
    bool callers = llvm::isa<mlir::BlockArgument>(self->value) || self->viewInput >= 0 ||
                   self->inputIndex >= 0;
    if (callers || self->vmapLevels > 0)
      return nullptr; // a break; the eager part sees the caller's tensor
    // A tensor the graph computes has kiln's layout after a break (the
    // graph's results are contiguous), not eager's: never resume there.
    Unsupported u(BreakCategory::UnsupportedOp,
                  "Tensor." + name +
                      "() of a tensor the graph computes (its layout in eager is "
                      "not known to kiln)");
    u.resumable = false;
    throw u;
  }
  if (!args.empty() || !kwargs.empty())
    return nullptr;
  mlir::Type elt = ttype(self->value).getElementType();
  if (name == "is_floating_point")
    return makeConst(PyRef::borrow(llvm::isa<mlir::FloatType>(elt) ? Py_True : Py_False));
  if (name == "is_complex")
    return makeConst(PyRef::borrow(Py_False)); // kiln has no complex dtypes
  return nullptr;
}

} // namespace kiln
