//===- Interpreter.cpp - the interpreter's values, reads and guards -------===//
// SPDX-License-Identifier: Apache-2.0
//
// Reading Const Vars (constObj), decoding a code object (by
// `dis`, so opcode names and jump targets are version-independent; each
// name becomes an Opcode once, Opcodes.h), and the Interpreter's reads of
// Python state: locals, globals and attributes (constants read from the
// frame are guarded where they are loaded; tensors become graph inputs),
// truth values, iteration and subscripts, and runRoot, which sets up the
// root frame for the instruction loop (InstructionLoop.cpp).
//===----------------------------------------------------------------------===//
#include "capture/interp/Interp.h"
#include "capture/interp/LiveIterators.h"
#include "TensorMethods.h"
#include "capture/interp/CaptureTimeCalls.h"
#include "capture/values/Deques.h"
#include "capture/interp/NumpyInterop.h"
#include "GilOnce.h"

#include "capture/interp/PlainObjects.h"
#include "capture/values/DynamicShapes.h"
#include "capture/values/InputLayouts.h"
#include "Export.h"

#include "ir/KilnOps.h"

#include "mlir/IR/BuiltinTypes.h"

namespace kiln {

PyObject *constObj(const VarP &v, const char *what) {
  if (v && v->kind == Var::Kind::Scalar) // .item(), int(t) ... (ops/Scalars.cpp)
    throw Unsupported(BreakCategory::DataDependent,
                      std::string(what) +
                          " is a Python number read from a tensor (.item(), int(t) ...), known "
                          "only when the graph runs; kiln does not specialize on its value",
                      "the graph breaks at this use and the rest resumes with the number as a "
                      "guarded constant (each new value recompiles); keep it a tensor (masks, "
                      "torch.where) or pass it as a Python int to stay in one graph");
  if (!v || !v->isConst())
    throw Unsupported(std::string(what) + " must be a Python constant here");
  refuseMutatedAlias(v);
  return v->obj.get();
}

PyRef constTuple(const std::vector<VarP> &vars, const char *what) {
  PyRef tuple = PyRef::steal(PyTuple_New(vars.size()));
  for (size_t i = 0; i < vars.size(); ++i) {
    PyObject *o = constObj(vars[i], what);
    Py_INCREF(o);
    PyTuple_SET_ITEM(tuple.get(), i, o);
  }
  return tuple;
}

namespace {

/// A dict whose keys are all str.
bool strKeys(PyObject *d) {
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(d, &pos, &k, &v))
    if (!PyUnicode_CheckExact(k))
      return false;
  return true;
}

/// A dict with string keys whose values include a tensor (at any depth of
/// tuples/lists).
bool dictHoldsTensor(PyObject *d) {
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  bool any = false;
  while (PyDict_Next(d, &pos, &k, &v)) {
    if (!PyUnicode_CheckExact(k))
      return false;
    any |= holdsTensor(v);
  }
  return any;
}

PyRef importAttr(const char *module, const char *attr) {
  PyRef m = PyRef::steal(PyImport_ImportModule(module));
  return m ? PyRef::steal(PyObject_GetAttrString(m.get(), attr)) : PyRef();
}

/// Whether tensor `value`'s type overrides torch's dispatch
/// (`__torch_function__` other than the disabled one of nn.Parameter, or
/// `__torch_dispatch__`): its ops run user code, so it is never treated as
/// a plain Tensor. Exact torch.Tensor and nn.Parameter pass at once.
bool overridesDispatch(PyObject *value) {
  static PyOnce tensorTypeOnce, parameterTypeOnce, disabledOnce, fnNameOnce, dispatchNameOnce;
  PyObject *tensorType = tensorTypeOnce.get([] { return importAttr("torch", "Tensor").release(); });
  PyObject *parameterType =
      parameterTypeOnce.get([] { return importAttr("torch.nn", "Parameter").release(); });
  PyObject *type = reinterpret_cast<PyObject *>(Py_TYPE(value));
  if (type == tensorType || type == parameterType)
    return false;
  PyObject *disabled = disabledOnce.get(
      [] { return importAttr("torch._C", "_disabled_torch_function_impl").release(); });
  PyObject *fnName =
      fnNameOnce.get([] { return PyUnicode_InternFromString("__torch_function__"); });
  PyObject *dispatchName =
      dispatchNameOnce.get([] { return PyUnicode_InternFromString("__torch_dispatch__"); });
  PyObject *fn = _PyType_Lookup(Py_TYPE(value), fnName);
  PyObject *dispatch = _PyType_Lookup(Py_TYPE(value), dispatchName);
  PyObject *plainDispatch =
      _PyType_Lookup(reinterpret_cast<PyTypeObject *>(tensorType), dispatchName);
  // A classmethod wraps the function: compare what it wraps.
  PyRef fnFunc = fn ? PyRef::steal(PyObject_GetAttrString(fn, "__func__")) : PyRef();
  PyErr_Clear();
  bool plainFunction = fn && (fn == disabled || fnFunc.get() == disabled);
  return !(plainFunction && dispatch == plainDispatch);
}

} // namespace

bool isModule(PyObject *o) {
  // Leaked on purpose: process-lifetime handles must not be released
  // after the interpreter finalizes.
  static PyOnce moduleTypeOnce;
  PyObject *moduleType =
      moduleTypeOnce.get([] { return importAttr("torch.nn", "Module").release(); });
  return PyObject_IsInstance(o, moduleType) == 1;
}

PyObject *moduleCallFunction() {
  static PyOnce callOnce;
  PyObject *call = callOnce.get([] {
    PyRef t = importAttr("torch.nn", "Module");
    PyObject *c = t ? PyObject_GetAttrString(t.get(), "__call__") : nullptr;
    PyErr_Clear();
    return c; // leaked: process lifetime
  });
  return call;
}

std::vector<std::string> localNames(PyCodeObject *code) {
  std::vector<std::string> names;
  PyRef vn =
      PyRef::steal(PyObject_GetAttrString(reinterpret_cast<PyObject *>(code), "co_varnames"));
  if (!vn) {
    PyErr_Clear();
    return names;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(vn.get()); ++i)
    names.push_back(PyUnicode_AsUTF8(PyTuple_GET_ITEM(vn.get(), i)));
  return names;
}

Interpreter::Interpreter(mlir::MLIRContext &ctx, const FrameView &frame, Capture &out)
    : ctx_(ctx), b_(&ctx), loc_(mlir::UnknownLoc::get(&ctx)), frame_(frame), out_(out) {
  plainObjectsBegin(out_); // PlainObjects.h
}

int Interpreter::sourceOf(const VarP &v) {
  if (v->source >= 0 || !v->isConst() || !isModule(v->obj.get()) ||
      isBuiltModule(*this, v->obj.get())) // built at capture: its attributes are constants
    return v->source;
  return out_.sources.add(Source::Kind::Constant, -1, 0, v->obj.get());
}

VarP Interpreter::fromSource(PyObject *value, int source, bool lazy) {
  if (!sourceOverlay_.empty()) { // a container of the caller mutated in this capture
    if (auto it = sourceOverlay_.find(source); it != sourceOverlay_.end())
      return it->second;
    if (mutated_.count(value))
      throw Unsupported("a list/dict mutated by the compiled code is read again through "
                        "another path (an alias)");
  }
  if (lazy && lazyReads_) // guarded when something uses it (LazyValues.cpp)
    if (VarP v = lazyRead(value, source))
      return v;
  if (holdsTensor(value) && !isTensor(value)) {
    // A tuple/list of tensors: each item becomes its own source (tensors
    // turn into graph inputs); its type (`type(seq)(...)`) and length guarded.
    Py_ssize_t n = PySequence_Fast_GET_SIZE(value);
    guardType(source, value);
    guardLength(source, n);
    std::vector<VarP> items;
    for (Py_ssize_t i = 0; i < n; ++i)
      items.push_back(
          fromSource(PySequence_Fast_ITEMS(value)[i],
                     out_.sources.add(Source::Kind::TupleItem, source, (int)i, nullptr)));
    VarP v = makeSeq(PyList_CheckExact(value) ? Var::Kind::List : Var::Kind::Tuple, items);
    v->source = source;
    if (!PyTuple_CheckExact(value) && !PyList_CheckExact(value)) {
      // A namedtuple: guarded by its exact type, not its identity (a new
      // instance per call shares the graph); a Tuple Var of that class as
      // one built in the frame (UserObjects.cpp), fields read by name.
      PyObject *cls = reinterpret_cast<PyObject *>(Py_TYPE(value));
      v->obj = PyRef::borrow(cls);
      v->self = makeConst(PyRef::borrow(cls));
    }
    return v;
  }
  // The root's **kwargs (a new dict per call) holding more than flags is read
  // by structure like a dict of tensors, never by identity (a decode's cache).
  bool kwargsDict = source == varKeywordsSource_ && PyDict_CheckExact(value) &&
                    !isPrimitiveDict(value) && strKeys(value);
  if (PyDict_CheckExact(value) && (kwargsDict || dictHoldsTensor(value))) {
    // A dict of tensors (e.g. **kwargs): each value read through its own
    // source; the keys are guarded through the length and those sources.
    guardType(source, value);
    guardLength(source, PyDict_Size(value));
    auto d = std::make_shared<Var>();
    d->kind = Var::Kind::Dict;
    d->source = source;
    PyObject *k, *item;
    Py_ssize_t pos = 0;
    while (PyDict_Next(value, &pos, &k, &item)) {
      d->keys.push_back(PyRef::borrow(k));
      d->items.push_back(fromSource(item, out_.sources.add(Source::Kind::DictItem, source, 0, k)));
    }
    return d;
  }
  if (!isTensor(value)) // a guarded constant, or a NumPy array as an input
    return NumpyInterop::fromSource(*this, value, source);
  auto it = inputOfSource_.find(source);
  if (it != inputOfSource_.end())
    return it->second; // the same object: every read sees in-place updates
  if (overridesDispatch(value)) {
    guardType(source, value); // the eager entry must not catch plain tensors
    throw Unsupported(BreakCategory::UnsupportedOp,
                      "tensor subclass " + std::string(Py_TYPE(value)->tp_name) +
                          " overrides __torch_function__ or __torch_dispatch__; kiln compiles "
                          "plain tensors",
                      "convert it to a plain tensor (`t.as_subclass(torch.Tensor)`) before the "
                      "compiled function, or let it run eagerly");
  }
  TensorMeta meta;
  if (!readTensorMeta(value, meta)) {
    PyErr_Clear();
    throw Unsupported("cannot read tensor metadata");
  }
  if (!meta.strided)
    throw Unsupported("a non-dense tensor input (layout " +
                      pyText(PyRef::steal(PyObject_GetAttrString(value, "layout")).get()) +
                      "); kiln compiles dense strided tensors");
  // CPU graphs compile for the CPU; CUDA (and meta, a dry run) graphs for
  // the CUDA backend (frontend/csrc/CudaEntry.cpp checks all inputs agree).
  if (meta.device == TensorMeta::kOtherDevice)
    throw Unsupported("tensor is on a device kiln does not compile for (CPU, CUDA and meta "
                      "tensors are supported)");
  auto dt = dtypeFromObject(meta.dtype);
  if (!dt) {
    std::string name = pyText(meta.dtype);
    bool quantized = name == "torch.quint8" || name == "torch.qint8" || name == "torch.qint32";
    bool bytes = name == "torch.int8" || name == "torch.uint8";
    throw Unsupported(
        BreakCategory::Other, "tensor dtype " + name + " is not supported",
        quantized || bytes
            ? std::string(bytes ? "kiln does not compile 8-bit integer tensors yet; if this is "
                                : "") +
                  "a model torch quantized, it compiles through kiln.quant: from_pt2e(model) "
                  "for PT2E, from_torch_ao(model, example_inputs) for torch.ao's eager-mode "
                  "static flow, prepare(model, dynamic_int8()) for quantize_dynamic"
            : "");
  }
  Guard g;
  g.kind = Guard::Kind::Tensor;
  g.source = source;
  g.dtype = meta.dtype;
  g.sizes = meta.sizes;
  g.strides = meta.strides;
  g.requiresGrad = meta.requiresGrad;
  g.device = meta.device;
  g.expected = PyRef::borrow(reinterpret_cast<PyObject *>(Py_TYPE(value)));
  graphDevice_ = meta.device;
  out_.guards.push_back(g);
  GraphInput in;
  in.source = source;
  in.requiresGrad = meta.requiresGrad;
  chooseInputLayout(in, meta.sizes, meta.strides,
                    /*passDense=*/meta.device == TensorMeta::kCpuDevice && !out_.gradMode &&
                        !exportRecording());
  // Symbolic dims (DynamicShapes.h): `?` in the type; the guard keeps
  // `size >= 2` (-1) and asks for a contiguous input (no strides).
  std::vector<int64_t> sizes = meta.sizes;
  std::vector<bool> dyn =
      symbolicDims(out_.dynamic, value, out_.sources.describe(source, out_.dynamic.localNames),
                   meta, !in.makeContiguous && in.memoryOrder.empty());
  if (std::count(dyn.begin(), dyn.end(), true) && out_.dynamic.shadow) {
    addSymbolicDims(out_, (int)out_.inputs.size(), meta.sizes, dyn); // types stay static
  } else if (std::count(dyn.begin(), dyn.end(), true)) {
    addSymbolicDims(out_, (int)out_.inputs.size(), meta.sizes, dyn);
    Guard &tg = out_.guards.back();
    tg.strides.clear();
    for (size_t d = 0; d < dyn.size(); ++d)
      if (dyn[d]) {
        sizes[d] = mlir::ShapedType::kDynamic;
        tg.sizes[d] = kSymbolicSize;
      }
  }
  out_.inputs.push_back(in);
  mlir::Type elt = elementType(ctx_, *dt);
  auto type = mlir::RankedTensorType::get(memorySizes(in, sizes), elt);
  mlir::Block &entry = func_.getBody().front();
  VarP v = makeTensor(inputValue(b_, loc_, in, entry.addArgument(type, loc_)));
  v->inputIndex = (int)out_.inputs.size() - 1;
  inputOfSource_[source] = v;
  inputObjects_.push_back(PyRef::borrow(value));
  return v;
}

VarP Interpreter::loadLocal(Frame &f, int index) {
  if (f.isRoot && !f.loaded[index]) {
    f.loaded[index] = true;
    PyObject *value = index < frame_.numLocals ? frame_.locals[index] : nullptr;
    if (!value)
      throw Unsupported("local variable is unbound");
    f.locals[index] = fromSource(value, out_.sources.add(Source::Kind::Local, -1, index, nullptr));
  }
  if (!f.locals[index])
    throw Unsupported("local variable referenced before assignment");
  return f.locals[index];
}

VarP Interpreter::loadGlobal(Frame &f, PyObject *name) {
  if (VarP v = overlayGlobal(f, name))
    return v;
  PyObject *v = PyDict_GetItemWithError(f.globals.get(), name);
  if (v)
    return fromSource(v, out_.sources.add(Source::Kind::DictItem, f.globalsSource, 0, name));
  PyErr_Clear();
  v = PyDict_Check(frame_.builtins) ? PyDict_GetItemWithError(frame_.builtins, name) : nullptr;
  if (!v) {
    PyErr_Clear();
    throw Unsupported("name '" + pyText(name) + "' is not defined");
  }
  // A global of that name defined later (`from numpy import abs`) wins.
  guardNotInDict(f.globalsSource, name);
  return fromSource(v, out_.sources.add(Source::Kind::Builtin, -1, 0, name));
}

VarP Interpreter::loadAttr(const VarP &obj, PyObject *name) {
  std::string attr = pyText(name);
  if (obj->isTensor() || obj->kind == Var::Kind::Ndarray) // .numpy(), ndarray attributes
    return NumpyInterop::attribute(*this, obj, attr);
  if (VarP v = overlayAttr(obj, attr)) // stored earlier in this capture
    return v;
  if (obj->kind == Var::Kind::Object || (obj->kind == Var::Kind::Tuple && obj->obj && obj->self))
    return objectAttr(obj, name); // UserObjects.cpp
  if (obj->isLazyList() && (attr == "append" || attr == "extend" || attr == "insert" ||
                            attr == "pop")) { // recorded without reading the list
    auto m = std::make_shared<Var>();
    m->kind = Var::Kind::ListMethod;
    m->self = obj;
    m->name = attr;
    return m;
  }
  bool listRead = attr == "copy" || attr == "index" || attr == "count";
  if (listRead && obj->isLazyList())
    materialize(obj);
  if (listRead && obj->isConst() && PyList_CheckExact(obj->obj.get()) && obj->source >= 0)
    return containerMethodVar(callerListSnapshot(obj), attr); // `self.sizes.copy()`
  if ((attr == "keys" || attr == "values" || attr == "items" || attr == "get") && obj->isConst() &&
      obj->source >= 0 && isModelOutputRecord(obj->obj.get()))
    return recordAttr(callerRecordSnapshot(obj), attr); // `encoder_outputs.to_tuple()`
  if (obj->kind == Var::Kind::Dict && obj->obj)         // a ModelOutput record
    return recordAttr(obj, attr);
  if (obj->kind == Var::Kind::Tuple && obj->obj) { // a torch.return_types result
    PyRef fields = PyRef::steal(PyObject_GetAttrString(obj->obj.get(), "__match_args__"));
    PyErr_Clear();
    for (Py_ssize_t i = 0;
         fields && PyTuple_Check(fields.get()) && i < PyTuple_GET_SIZE(fields.get()); ++i)
      if (PyUnicode_Compare(PyTuple_GET_ITEM(fields.get(), i), name) == 0 &&
          i < (Py_ssize_t)obj->items.size())
        return obj->items[i];
    PyErr_Clear();
  }
  if (VarP m = containerMethodVar(obj, attr)) // ContainerMethods.cpp
    return m;
  PyObject *o = constObj(obj, "attribute base");
  if (auto sup = superSelf_.find(o); sup != superSelf_.end())
    return superAttr(o, sup->second, name); // SuperAttr.cpp
  if (obj->source < 0 && sourceOf(obj) >= 0)
    return loadAttr(makeConst(obj->obj, sourceOf(obj)), name);
  // nn.Module attributes: Python's order (a data descriptor of the class,
  // the instance __dict__, another class attribute, then
  // nn.Module.__getattr__'s _parameters/_buffers/_modules), with dict
  // lookups where the value lives in a dict (cheap to re-check).
  if (obj->source >= 0 && isModule(o)) {
    PyObject *clsAttr = _PyType_Lookup(Py_TYPE(o), name); // borrowed
    bool dataDescriptor = clsAttr && Py_TYPE(clsAttr)->tp_descr_set;
    int dictSrc = out_.sources.add(Source::Kind::ObjDict, obj->source, 0, nullptr);
    PyObject **dictPtr = _PyObject_GetDictPtr(o);
    PyObject *dict = dictPtr ? *dictPtr : nullptr;
    PyObject *v = !dataDescriptor && dict ? PyDict_GetItemWithError(dict, name) : nullptr;
    if (v)
      return fromSource(v, out_.sources.add(Source::Kind::DictItem, dictSrc, 0, name));
    if (clsAttr && PyFunction_Check(clsAttr)) // a method: bound symbolically, inlined
      return boundClassMethod(obj, name, clsAttr);
    for (const char *sub : {"_parameters", "_buffers", "_modules"}) {
      PyObject *subDict = clsAttr || !dict ? nullptr : PyDict_GetItemString(dict, sub);
      PyObject *item = subDict ? PyDict_GetItemWithError(subDict, name) : nullptr;
      if (item) {
        PyRef key = PyRef::steal(PyUnicode_FromString(sub));
        int subSrc = out_.sources.add(Source::Kind::DictItem, dictSrc, 0, key.get());
        return fromSource(item, out_.sources.add(Source::Kind::DictItem, subSrc, 0, name));
      }
    }
    PyErr_Clear();
  }
  if (VarP r = CaptureTimeCalls::descriptorAttr(*this, obj, name)) // a property: inlined
    return r;
  PyRef v = PyRef::steal(PyObject_GetAttr(o, name));
  if (!v) {
    PyErr_Clear();
    throw Unsupported("attribute '" + attr + "' not found on " +
                      pyText(reinterpret_cast<PyObject *>(Py_TYPE(o))));
  }
  if (PyMethod_Check(v.get()) && PyFunction_Check(PyMethod_GET_FUNCTION(v.get()))) {
    PyObject *fn = PyMethod_GET_FUNCTION(v.get()), *self = PyMethod_GET_SELF(v.get());
    if (self == o && _PyType_Lookup(Py_TYPE(o), name) == fn)
      return boundClassMethod(obj, name, fn);
    auto m = std::make_shared<Var>();
    m->kind = Var::Kind::BoundMethod;
    m->obj = PyRef::borrow(fn);
    m->self = self == o ? obj : makeConst(PyRef::borrow(self)); // a classmethod: its class
    m->name = attr;
    return m;
  }
  // A builtin method bound to `o` is a new object on every lookup: it is
  // determined by `o` (already guarded), so it gets no identity guard.
  bool boundToBase = PyCFunction_Check(v.get()) && PyCFunction_GET_SELF(v.get()) == o;
  if (boundToBase && isModule(o)) // a C method of this very module object
    pinModuleIdentity("a C method bound to a module is read at capture");
  if (boundToBase)
    pinPlainObject(o, "a C method bound to the object is read at capture");
  if (obj->source < 0 || boundToBase) {
    keepAlive_.push_back(v);
    return makeConst(v);
  }
  return fromSource(v.get(), out_.sources.add(Source::Kind::Attr, obj->source, 0, name));
}

VarP Interpreter::boundClassMethod(const VarP &obj, PyObject *name, PyObject *fn) {
  // Guarded: the class attribute is still `fn` (monkeypatching the class
  // recompiles) and the instance __dict__ does not shadow it.
  guardClassAttr(obj, name, fn, /*notShadowed=*/true);
  auto m = std::make_shared<Var>();
  m->kind = Var::Kind::BoundMethod;
  m->obj = PyRef::borrow(fn);
  m->self = obj;
  m->name = pyText(name);
  return m;
}

bool Interpreter::truthy(const VarP &v) {
  if (v->isTensor())
    throw Unsupported(BreakCategory::DataDependent, "data-dependent branch on a tensor value",
                      hint::kTensorBranch);
  if (v->kind == Var::Kind::Tuple || v->kind == Var::Kind::List || v->kind == Var::Kind::Dict)
    return !v->items.empty();
  if (v->kind == Var::Kind::SymInt)
    return symIntTruthy(v);
  if (v->kind == Var::Kind::Scalar) // ops/Scalars.cpp; passed on as a number
    throw Unsupported(BreakCategory::DataDependent,
                      "data-dependent branch on a Python number read from a tensor",
                      hint::kTensorBranch);
  if (v->kind == Var::Kind::Object || (v->isConst() && CaptureTimeCalls::dunderClass(*this, v)))
    return objectTruthy(v); // UserObjects.cpp: the class's __bool__/__len__ inlined
  PyObject *cond = constObj(v, "branch condition");
  if (v->source >= 0 && PyList_CheckExact(cond)) { // a caller's list: by its length
    guardLength(v->source, PyList_GET_SIZE(cond));
    return PyList_GET_SIZE(cond) > 0;
  }
  PyTypeObject *ct = Py_TYPE(cond);
  if ((ct->tp_as_number && ct->tp_as_number->nb_bool) ||
      (ct->tp_as_mapping && ct->tp_as_mapping->mp_length) ||
      (ct->tp_as_sequence && ct->tp_as_sequence->sq_length))
    pinPlainObject(cond, "its truth value comes from its own __bool__/__len__");
  int r = PyObject_IsTrue(cond);
  if (r < 0) {
    PyErr_Clear();
    throw Unsupported("truth value of the condition raised");
  }
  return r == 1;
}

namespace {
/// A 0-d integer tensor in the index is a basic index in eager: the result
/// `r` of `c[index]` is a view of `c` (kiln gathers it). Marked a view
/// without replay steps, an in-place update through it (`a[i].add_(1)`) or
/// of `c` while it lives breaks instead of updating a copy (ViewWrites.cpp).
bool markOpaqueIndexView(const VarP &c, const VarP &index, const VarP &r) {
  auto zeroDimInt = [](const VarP &v) {
    if (!v || !v->isTensor())
      return false;
    auto t = llvm::cast<mlir::RankedTensorType>(v->value.getType());
    return t.getRank() == 0 && llvm::isa<mlir::IntegerType>(t.getElementType()) &&
           !t.getElementType().isInteger(1);
  };
  bool byTensor = zeroDimInt(index) ||
                  (index->kind == Var::Kind::Tuple && llvm::any_of(index->items, zeroDimInt));
  if (!byTensor || !r || r == c || !r->isTensor() || !r->fresh)
    return false;
  r->fresh = false;
  r->viewBase = c;
  c->views.push_back(r);
  c->viewed = c->opaqueViews = true;
  return true;
}
} // namespace

namespace {
/// `r = c[index]` (a view, constant index): an in-place update of r goes
/// through to c (InPlace.cpp), and r is rebuilt (returned, live at a
/// break, written through) as eager's own `c[index]` rather than the
/// primitive steps that computed it (a slice and a reshape: another view of
/// the same elements, with other strides for size-1 dims, which torch's
/// overlap checks tell apart).
void recordItemView(const VarP &c, const VarP &r, const PyRef &index) {
  r->itemOf = c;
  r->itemIndex = index;
  int base = c->viewInput >= 0 ? c->viewInput : c->inputIndex;
  bool sameRoot = (r->viewInput >= 0 && r->viewInput == base) ||
                  (r->viewRoot && r->viewRoot == (c->viewRoot ? c->viewRoot : c->value));
  if (sameRoot && !r->viewSteps.empty()) {
    r->viewSteps = c->viewSteps;
    r->viewSteps.push_back({"__getitem__", PyRef::steal(PyTuple_Pack(1, index.get()))});
  }
}
} // namespace

VarP Interpreter::subscript(const VarP &c, const VarP &index) {
  if (c->kind == Var::Kind::Dict && c->obj)
    return recordItem(c, constObj(index, "index"));
  if (c->kind == Var::Kind::Dict) {
    int i = dictFind(c, constObj(index, "dict key"));
    if (i < 0)
      if (VarP v = defaultDictMissing(c, constObj(index, "dict key"))) // Collections.cpp
        return v;
    if (i < 0) // a try/except of the frames may catch it (Exceptions.cpp)
      raiseNew(PyExc_KeyError, index->obj.get(), "KeyError in a dict built by the compiled code");
    return c->items[i];
  }
  if (c->kind == Var::Kind::Tuple || c->kind == Var::Kind::List) {
    PyObject *i = constObj(index, "index");
    if (PySlice_Check(i)) {
      Py_ssize_t start, stop, step, len;
      if (PySlice_GetIndicesEx(i, (Py_ssize_t)c->items.size(), &start, &stop, &step, &len) < 0) {
        PyErr_Clear();
        throw Unsupported("invalid slice");
      }
      std::vector<VarP> items;
      for (Py_ssize_t k = 0, j = start; k < len; ++k, j += step)
        items.push_back(c->items[j]);
      VarP part = makeSeq(c->kind, items);
      if (c->kind == Var::Kind::Tuple && c->obj && c->obj.get() == torchSizeType())
        part->obj = c->obj; // a torch.Size's slice is one (`x.shape[1:]`)
      return part;
    }
    if (!PyLong_Check(i))
      throw Unsupported("only integer indexing of tuples/lists is supported");
    long n = (long)c->items.size(), k = PyLong_AsLong(i);
    if (k < 0)
      k += n;
    if (k < 0 || k >= n) {
      const char *what =
          c->kind == Var::Kind::List ? "list index out of range" : "tuple index out of range";
      raiseNew(PyExc_IndexError, PyRef::steal(PyUnicode_FromString(what)).get(), what);
    }
    return c->items[k];
  }
  if (c->isTensor()) { // TorchIndexing.cpp
    std::vector<VarP> args = {index};
    std::map<std::string, VarP> kwargs;
    VarP r = callTensorMethod(c, "__getitem__", args, kwargs);
    if (markOpaqueIndexView(c, index, r))
      return r;
    PyRef constIndex = index->isConst() ? index->obj : seqAsConst(index);
    if (r && r != c && r->isTensor() && !r->fresh && r->viewBase && constIndex)
      recordItemView(c, r, constIndex);
    return r;
  }
  PyObject *o = constObj(c, "subscripted value");
  PyObject *key = constObj(index, "index");
  bool record = c->source >= 0 && isModelOutputRecord(o) &&
                (PyUnicode_CheckExact(key) || PyLong_CheckExact(key));
  bool bySource = record || (c->source >= 0 && (PyList_CheckExact(o) || PyTuple_CheckExact(o)) &&
                             (PyLong_CheckExact(key) || PySlice_Check(key)));
  if (!bySource) // else each item read through its own source (below)
    pinPlainObject(o, "it is subscripted at capture");
  if (bySource && PySlice_Check(key)) {
    // `self.layers[1:]`: a new list (tuple) of the items, each read through
    // its source, so what the code reads from them stays guarded.
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o), start, stop, step;
    if (PySlice_Unpack(key, &start, &stop, &step) < 0) {
      PyErr_Clear();
      throw Unsupported(BreakCategory::UserError, "slice indices must be integers or None",
                        hint::kRaisesInEager);
    }
    Py_ssize_t len = PySlice_AdjustIndices(n, &start, &stop, step);
    guardLength(c->source, n);
    std::vector<VarP> items;
    for (Py_ssize_t i = 0, k = start; i < len; ++i, k += step)
      items.push_back(
          fromSource(PySequence_Fast_ITEMS(o)[k],
                     out_.sources.add(Source::Kind::TupleItem, c->source, (int)k, nullptr)));
    return makeSeq(PyList_CheckExact(o) ? Var::Kind::List : Var::Kind::Tuple, items);
  }
  // A dict subclass with dict's own __getitem__ (defaultdict, OrderedDict,
  // Counter): a present key is read, and guarded, through its own source as
  // a plain dict's; a missing one would run __missing__ (a defaultdict
  // inserts its default) once at capture instead of per call: a break.
  if (c->source >= 0 && !record && !PyDict_CheckExact(o) && isPrimitive(key) &&
      keepsDictMethod(o, "__getitem__")) {
    PyObject *present = PyDict_GetItemWithError(o, key); // borrowed; no __missing__
    if (!present) {
      PyErr_Clear();
      throw Unsupported(std::string("a key missing from a ") + Py_TYPE(o)->tp_name +
                        " (its __missing__ runs when the call does)");
    }
    return fromSource(present, out_.sources.add(Source::Kind::DictItem, c->source, 0, key));
  }
  pinPlainObject(key, "it is a subscript key");
  PyRef r = PyRef::steal(PyObject_GetItem(o, key));
  if (!r) {
    PyErr_Clear();
    throw Unsupported("subscript raised");
  }
  if (VarP child = moduleContainerItem(c, key, r.get())) // ModuleGuards.cpp
    return child;
  if (record) {
    // A ModelOutput's `o["k"]` is its dict item; `o[i]` is to_tuple()[i],
    // the i-th item in key order (the keys' order is guarded).
    PyObject *k = key, *v;
    Py_ssize_t n = PyDict_GET_SIZE(o), pos = 0;
    if (PyLong_CheckExact(key)) {
      Py_ssize_t i = PyLong_AsSsize_t(key);
      i += i < 0 ? n : 0;
      for (Py_ssize_t j = 0; PyDict_Next(o, &pos, &k, &v) && j < i; ++j)
        ;
    }
    guardLength(c->source, n);
    return fromSource(r.get(), out_.sources.add(Source::Kind::DictItem, c->source, 0, k));
  }
  // An item of a dict/list/tuple read from the frame is read (and guarded)
  // through its own source: the container may be mutated between calls.
  if (c->source >= 0 && PyDict_CheckExact(o) && (isPrimitive(key) || pureConstant(key)))
    return fromSource(r.get(), out_.sources.add(Source::Kind::DictItem, c->source, 0, key));
  if (c->source >= 0 && (PyList_CheckExact(o) || PyTuple_CheckExact(o)) && PyLong_CheckExact(key)) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o), k = PyLong_AsSsize_t(key);
    if (k < 0)
      k += n;
    guardLength(c->source, n);
    return fromSource(r.get(),
                      out_.sources.add(Source::Kind::TupleItem, c->source, (int)k, nullptr));
  }
  // An item of an object of the frame (ParameterDict/List, UserDict,
  // ChainMap, a user container) baked in as a constant would go stale: a
  // Python __getitem__ is inlined so that what it reads is read through
  // sources (a tensor: a graph input) and guarded; a tensor from another
  // __getitem__ is a break.
  static PyOnce nameOnce;
  PyObject *name = nameOnce.get([] { return PyUnicode_InternFromString("__getitem__"); });
  PyObject *fn = _PyType_Lookup(Py_TYPE(o), name); // borrowed
  bool pythonGetItem = sourceOf(c) >= 0 && fn && PyFunction_Check(fn);
  if (!isTensor(r.get()) && !pythonGetItem) {
    noteFresh(r); // a slice of a list made at capture is one too
    return makeConst(r);
  }
  if (!pythonGetItem)
    throw Unsupported(BreakCategory::UnsupportedOp,
                      "subscript of a " + std::string(Py_TYPE(o)->tp_name) +
                          " returns a tensor kiln cannot re-read per call");
  std::vector<VarP> args = {index};
  std::map<std::string, VarP> kwargs;
  return call(boundClassMethod(c, name, fn), args, kwargs);
}

VarP Interpreter::runRoot(PyCodeObject *code, PyObject *func) {
  mlir::Location fileLoc =
      mlir::FileLineColLoc::get(&ctx_, pyText(code->co_filename), code->co_firstlineno, 0);
  auto module = mlir::ModuleOp::create(fileLoc);
  out_.module = module;
  b_.setInsertionPointToEnd(module.getBody());
  func_ = b_.create<mlir::func::FuncOp>(fileLoc, "forward", b_.getFunctionType({}, {}));
  b_.setInsertionPointToStart(func_.addEntryBlock());

  gradMode_ = gradOnSomewhere_ = out_.gradMode;
  guardEntryState();
  out_.guards.push_back(tensorMethodsGuard()); // tensor methods are mapped by name
  std::string op = replacedTensorOperator();
  if (!op.empty())
    throw Unsupported(BreakCategory::UnsupportedOp,
                      "torch.Tensor." + op + " was replaced: kiln maps tensor operators by name",
                      "the frame runs eagerly while the replacement is in place");
  Frame f;
  f.code = &codeInfo(reinterpret_cast<PyObject *>(code));
  int n = (int)localNames(code).size();
  f.locals.resize(n);
  f.loaded.assign(n, false);
  f.isRoot = true;
  f.globals = PyRef::borrow(frame_.globals);
  f.globalsSource = out_.sources.add(Source::Kind::Globals, -1, 0, nullptr);
  if (code->co_flags & CO_VARKEYWORDS) // guardValue: **kwargs is compared by value
    varKeywordsSource_ = out_.sources.add(Source::Kind::Local, -1,
                                          code->co_argcount + code->co_kwonlyargcount +
                                              ((code->co_flags & CO_VARARGS) ? 1 : 0),
                                          nullptr);
  if (code->co_nfreevars > 0)
    bindFreeVars(f, code, func, out_.sources.add(Source::Kind::Function, -1, 0, nullptr), nullptr);
  return interpret(f);
}

} // namespace kiln
