//===- TensorInfo.cpp - torch tensor metadata via the C API ------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements TensorInfo.h. All handles are created once by initTorchHandles
// and live for the process; every function returns new references only
// where its doc says so.
//===----------------------------------------------------------------------===//
#include "TensorInfo.h"
#include "GilOnce.h"

#include <algorithm>

namespace kiln {
namespace {

struct Handles {
  PyObject *torch = nullptr;
  PyObject *tensorType = nullptr;
  PyObject *isGradEnabled = nullptr;
  PyObject *getNumThreads = nullptr;
  PyObject *getDefaultDtype = nullptr;
  PyObject *empty = nullptr;
  PyObject *dtypes[7] = {};
  PyObject *sShape = nullptr, *sStride = nullptr, *sRequiresGrad = nullptr, *sIsCpu = nullptr,
           *sDtype = nullptr, *sDataPtr = nullptr, *sContiguous = nullptr, *sLayout = nullptr;
  PyObject *strided = nullptr;      ///< torch.strided
  PyObject *emptyKwnames = nullptr; ///< ("size", "dtype")
};
Handles H;

/// Direct calls of torch's own C accessors on exact torch.Tensor /
/// nn.Parameter instances, skipping the generic attribute lookup. Only
/// public CPython descriptor objects are read (getset_descriptor,
/// method_descriptor), nothing of torch's structs; whenever a type's
/// version tag changes (any attribute of it or a base assigned) the
/// descriptors are looked up again, and an accessor that is no longer the
/// same C function makes that type take the generic path.
struct FastAccess {
  enum Attr { Dtype, IsCpu, RequiresGrad, Shape, NumAttrs };
  enum Method { Stride, DataPtr, NumMethods };
  getter get[NumAttrs] = {};
  void *closure[NumAttrs] = {};
  PyMethodDef *method[NumMethods] = {};
  PyTypeObject *types[2] = {};  ///< torch.Tensor, torch.nn.Parameter
  unsigned int version[2] = {}; ///< 0: the generic path for that type
  PyObject *emptyTuple = nullptr;
};
FastAccess FA;

PyObject *attrName(int a) {
  PyObject *names[] = {H.sDtype, H.sIsCpu, H.sRequiresGrad, H.sShape};
  return names[a];
}
PyObject *methodName(int m) { return m == FastAccess::Stride ? H.sStride : H.sDataPtr; }

/// Whether `type` resolves every accessor to the C functions in FA (the
/// first call fills FA from torch.Tensor).
bool accessorsMatch(PyTypeObject *type, bool fill) {
  for (int a = 0; a < FastAccess::NumAttrs; ++a) {
    PyObject *d = _PyType_Lookup(type, attrName(a)); // borrowed
    if (!d || Py_TYPE(d) != &PyGetSetDescr_Type)
      return false;
    PyGetSetDef *def = reinterpret_cast<PyGetSetDescrObject *>(d)->d_getset;
    if (fill) {
      FA.get[a] = def->get;
      FA.closure[a] = def->closure;
    }
    if (!def->get || def->get != FA.get[a] || def->closure != FA.closure[a])
      return false;
  }
  for (int m = 0; m < FastAccess::NumMethods; ++m) {
    PyObject *d = _PyType_Lookup(type, methodName(m));
    if (!d || Py_TYPE(d) != &PyMethodDescr_Type)
      return false;
    PyMethodDef *def = reinterpret_cast<PyMethodDescrObject *>(d)->d_method;
    int flags = def->ml_flags & ~METH_COEXIST;
    if (flags != METH_NOARGS && flags != METH_VARARGS && flags != (METH_VARARGS | METH_KEYWORDS))
      return false;
    if (fill)
      FA.method[m] = def;
    if (def != FA.method[m])
      return false;
  }
  return true;
}

/// Re-validates type slot `i` after its version tag changed.
void revalidate(int i) {
  PyTypeObject *type = FA.types[i];
  FA.version[i] = 0;
  if (type->tp_getattro == PyObject_GenericGetAttr && accessorsMatch(type, /*fill=*/false) &&
      (type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG))
    FA.version[i] = type->tp_version_tag;
}

/// Whether `t`'s accessors may be called directly.
inline bool fastType(PyObject *t) {
  PyTypeObject *type = Py_TYPE(t);
  for (int i = 0; i < 2; ++i) {
    if (type != FA.types[i] || !FA.version[i])
      continue;
    if (type->tp_version_tag != FA.version[i] || !(type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG))
      revalidate(i);
    return FA.version[i] != 0;
  }
  return false;
}

/// `getattr(t, <attr a>)` (new reference).
inline PyObject *getAttr(PyObject *t, int a, bool fast) {
  return fast ? FA.get[a](t, FA.closure[a]) : PyObject_GetAttr(t, attrName(a));
}

/// `t.<method m>()` (new reference).
inline PyObject *callMethod(PyObject *t, int m, bool fast) {
  if (!fast)
    return PyObject_CallMethodNoArgs(t, methodName(m));
  PyMethodDef *def = FA.method[m];
  int flags = def->ml_flags & ~METH_COEXIST;
  if (flags == METH_NOARGS)
    return def->ml_meth(t, nullptr);
  if (flags == METH_VARARGS)
    return def->ml_meth(t, FA.emptyTuple);
  return reinterpret_cast<PyCFunctionWithKeywords>(reinterpret_cast<void (*)(void)>(def->ml_meth))(
      t, FA.emptyTuple, nullptr);
}

const char *kDtypeNames[] = {"float32", "float64", "float16", "bfloat16", "int64", "int32", "bool"};

bool readIntTuple(PyObject *seq, std::vector<int64_t> &out) {
  Py_ssize_t n = PyTuple_Check(seq) ? PyTuple_GET_SIZE(seq) : -1;
  if (n < 0) {
    PyErr_SetString(PyExc_TypeError, "expected a tuple of ints");
    return false;
  }
  out.resize(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    out[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(seq, i));
    if (out[i] == -1 && PyErr_Occurred())
      return false;
  }
  return true;
}

/// Whether `seq` is a tuple (torch.Size included) equal to `want`.
bool intTupleEquals(PyObject *seq, const std::vector<int64_t> &want) {
  if (!seq || !PyTuple_Check(seq) || PyTuple_GET_SIZE(seq) != static_cast<Py_ssize_t>(want.size()))
    return false;
  for (size_t i = 0; i < want.size(); ++i) {
    long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(seq, i));
    if (v == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    if (v != want[i])
      return false;
  }
  return true;
}

/// Whether `shape`/`stride` (tuples) are a contiguous tensor's whose sizes
/// equal `want`, where a -1 in `want` accepts any size >= 2.
bool symbolicShapeMatches(PyObject *shape, PyObject *stride, const std::vector<int64_t> &want) {
  Py_ssize_t rank = static_cast<Py_ssize_t>(want.size());
  if (!shape || !stride || !PyTuple_Check(shape) || !PyTuple_Check(stride) ||
      PyTuple_GET_SIZE(shape) != rank || PyTuple_GET_SIZE(stride) != rank)
    return false;
  int64_t expect = 1;
  for (Py_ssize_t i = rank - 1; i >= 0; --i) {
    long long size = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
    long long st = PyLong_AsLongLong(PyTuple_GET_ITEM(stride, i));
    if (PyErr_Occurred())
      return false;
    if (want[i] == kSymbolicSize ? size < 2 : size != want[i])
      return false;
    if (size != 1 && st != expect)
      return false;
    expect *= size;
  }
  return true;
}

} // namespace

DTypeCategory dtypeCategory(DType d) {
  switch (d) {
  case DType::Bool:
    return DTypeCategory::Bool;
  case DType::I64:
  case DType::I32:
    return DTypeCategory::Integer;
  default:
    return DTypeCategory::Floating;
  }
}

int dtypeBytes(DType d) {
  switch (d) {
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::Bool:
    return 1;
  }
  return 0;
}

PyObject *dtypeObject(DType d) { return H.dtypes[static_cast<int>(d)]; }

std::optional<DType> dtypeFromObject(PyObject *dtype) {
  for (int i = 0; i < 7; ++i)
    if (H.dtypes[i] == dtype)
      return static_cast<DType>(i);
  return std::nullopt;
}

std::string dtypeName(DType d) { return std::string("torch.") + kDtypeNames[static_cast<int>(d)]; }

bool initTorchHandles() {
  if (H.torch)
    return true;
  PyObject *torch = PyImport_ImportModule("torch");
  if (!torch)
    return false;
  H.torch = torch; // kept for the process lifetime
  H.tensorType = PyObject_GetAttrString(torch, "Tensor");
  H.isGradEnabled = PyObject_GetAttrString(torch, "is_grad_enabled");
  H.getNumThreads = PyObject_GetAttrString(torch, "get_num_threads");
  H.getDefaultDtype = PyObject_GetAttrString(torch, "get_default_dtype");
  H.empty = PyObject_GetAttrString(torch, "empty");
  for (int i = 0; i < 7; ++i)
    H.dtypes[i] = PyObject_GetAttrString(torch, kDtypeNames[i]);
  H.sShape = PyUnicode_InternFromString("shape");
  H.sStride = PyUnicode_InternFromString("stride");
  H.sRequiresGrad = PyUnicode_InternFromString("requires_grad");
  H.sIsCpu = PyUnicode_InternFromString("is_cpu");
  H.sDtype = PyUnicode_InternFromString("dtype");
  H.sDataPtr = PyUnicode_InternFromString("data_ptr");
  H.sContiguous = PyUnicode_InternFromString("contiguous");
  H.sLayout = PyUnicode_InternFromString("layout");
  H.strided = PyObject_GetAttrString(torch, "strided");
  H.emptyKwnames = Py_BuildValue("(ss)", "size", "dtype");
  if (PyErr_Occurred())
    return false;
  // Direct accessors for exact torch.Tensor and nn.Parameter instances.
  FA.emptyTuple = PyTuple_New(0);
  PyRef nn = PyRef::steal(PyImport_ImportModule("torch.nn"));
  PyRef parameter = nn ? PyRef::steal(PyObject_GetAttrString(nn.get(), "Parameter")) : PyRef();
  PyErr_Clear(); // without them everything takes the generic path
  FA.types[0] = reinterpret_cast<PyTypeObject *>(H.tensorType);
  if (parameter && PyType_Check(parameter.get()))
    FA.types[1] = reinterpret_cast<PyTypeObject *>(parameter.release()); // kept
  if (FA.emptyTuple && accessorsMatch(FA.types[0], /*fill=*/true)) {
    for (int i = 0; i < 2; ++i)
      if (FA.types[i])
        revalidate(i);
  }
  return !PyErr_Occurred();
}

PyObject *torchModule() { return H.torch; }

PyObject *torchSizeType() {
  static PyOnce sizeType;
  return sizeType.get([] { return PyObject_GetAttrString(torchModule(), "Size"); });
}

bool isTensor(PyObject *obj) {
  return PyObject_TypeCheck(obj, reinterpret_cast<PyTypeObject *>(H.tensorType));
}

/// TensorMeta::device of a non-CPU tensor from `t.device` (type, index);
/// kOtherDevice with a Python error if it cannot be read.
static int deviceOf(PyObject *t) {
  PyRef dev = PyRef::steal(PyObject_GetAttrString(t, "device"));
  PyRef type = dev ? PyRef::steal(PyObject_GetAttrString(dev.get(), "type")) : PyRef();
  PyRef index = dev ? PyRef::steal(PyObject_GetAttrString(dev.get(), "index")) : PyRef();
  if (!type || !index)
    return TensorMeta::kOtherDevice;
  const char *name = PyUnicode_AsUTF8(type.get());
  if (!name)
    return TensorMeta::kOtherDevice;
  if (std::string(name) == "meta")
    return TensorMeta::kMetaDevice;
  if (std::string(name) == "cuda") {
    long i = index.get() == Py_None ? 0 : PyLong_AsLong(index.get());
    return i >= 0 ? int(i) : TensorMeta::kOtherDevice;
  }
  return TensorMeta::kOtherDevice;
}

std::string deviceName(int device) {
  if (device == TensorMeta::kCpuDevice)
    return "cpu";
  if (device == TensorMeta::kMetaDevice)
    return "meta";
  if (device >= 0)
    return "cuda:" + std::to_string(device);
  return "another device";
}

bool readTensorMeta(PyObject *t, TensorMeta &meta) {
  PyRef dtype = PyRef::steal(PyObject_GetAttr(t, H.sDtype));
  PyRef shape = PyRef::steal(PyObject_GetAttr(t, H.sShape));
  PyRef stride = PyRef::steal(PyObject_CallMethodNoArgs(t, H.sStride));
  PyRef rg = PyRef::steal(PyObject_GetAttr(t, H.sRequiresGrad));
  PyRef cpu = PyRef::steal(PyObject_GetAttr(t, H.sIsCpu));
  if (!dtype || !shape || !stride || !rg || !cpu)
    return false;
  meta.dtype = dtype.get(); // dtypes are immortal singletons in torch
  meta.requiresGrad = rg.get() == Py_True;
  meta.isCpu = cpu.get() == Py_True;
  PyRef layout = PyRef::steal(PyObject_GetAttr(t, H.sLayout));
  if (!layout)
    return false;
  meta.strided = layout.get() == H.strided;
  meta.device = meta.isCpu ? TensorMeta::kCpuDevice : deviceOf(t);
  if (meta.device == TensorMeta::kOtherDevice && PyErr_Occurred())
    return false;
  return readIntTuple(shape.get(), meta.sizes) && readIntTuple(stride.get(), meta.strides);
}

bool tensorMetaMatches(PyObject *t, PyObject *dtype, const std::vector<int64_t> &sizes,
                       const std::vector<int64_t> &strides, bool requiresGrad, int device) {
  bool fast = fastType(t);
  // Cheapest reads first; on a match every attribute has been compared.
  PyRef d = PyRef::steal(getAttr(t, FastAccess::Dtype, fast));
  if (d.get() != dtype) {
    PyErr_Clear();
    return false;
  }
  PyRef cpu = PyRef::steal(getAttr(t, FastAccess::IsCpu, fast));
  PyRef rg = PyRef::steal(getAttr(t, FastAccess::RequiresGrad, fast));
  bool onDevice = device == TensorMeta::kCpuDevice
                      ? cpu.get() == Py_True
                      : cpu && cpu.get() == Py_False && deviceOf(t) == device;
  if (!cpu || !rg || !onDevice || (rg.get() == Py_True) != requiresGrad) {
    PyErr_Clear();
    return false;
  }
  PyRef shape = PyRef::steal(getAttr(t, FastAccess::Shape, fast));
  if (strides.empty() && !sizes.empty()) {
    // A dynamic graph's input (capture/values/DynamicShapes.h): -1 sizes are
    // symbolic (any size >= 2), the rest exact, and the tensor contiguous.
    PyRef stride = PyRef::steal(callMethod(t, FastAccess::Stride, fast));
    bool ok = symbolicShapeMatches(shape.get(), stride.get(), sizes);
    PyErr_Clear();
    return ok;
  }
  if (!intTupleEquals(shape.get(), sizes)) {
    PyErr_Clear();
    return false;
  }
  PyRef stride = PyRef::steal(callMethod(t, FastAccess::Stride, fast));
  if (!intTupleEquals(stride.get(), strides)) {
    PyErr_Clear();
    return false;
  }
  // Sparse tensors report all-zero strides: where the guarded strides hold
  // a zero (an expanded dense input), the layout is compared too.
  if (std::find(strides.begin(), strides.end(), 0) != strides.end()) {
    PyRef layout = PyRef::steal(PyObject_GetAttr(t, H.sLayout));
    PyErr_Clear();
    return layout.get() == H.strided;
  }
  return true;
}

void *tensorDataPtr(PyObject *t) {
  PyRef p = PyRef::steal(callMethod(t, FastAccess::DataPtr, fastType(t)));
  if (!p)
    return nullptr;
  return PyLong_AsVoidPtr(p.get());
}

void *tensorStoragePtr(PyObject *t) {
  PyRef storage = PyRef::steal(PyObject_CallMethod(t, "untyped_storage", nullptr));
  PyRef p =
      storage ? PyRef::steal(PyObject_CallMethod(storage.get(), "data_ptr", nullptr)) : PyRef();
  void *address = p ? PyLong_AsVoidPtr(p.get()) : nullptr;
  PyErr_Clear();
  return address;
}

int torchNumThreads() {
  PyRef r = PyRef::steal(PyObject_CallNoArgs(H.getNumThreads));
  long n = r ? PyLong_AsLong(r.get()) : 1;
  if (n < 1) {
    PyErr_Clear();
    n = 1;
  }
  return static_cast<int>(n);
}

PyObject *defaultDtype() {
  PyRef r = PyRef::steal(PyObject_CallNoArgs(H.getDefaultDtype));
  if (!r)
    PyErr_Clear();
  for (PyObject *d : H.dtypes)
    if (r && d == r.get())
      return d;
  return nullptr;
}

bool gradEnabled() {
  PyRef r = PyRef::steal(PyObject_CallNoArgs(H.isGradEnabled));
  return r.get() == Py_True;
}

PyObject *emptyTensor(const std::vector<int64_t> &sizes, PyObject *dtype) {
  PyRef shape = PyRef::steal(PyTuple_New(sizes.size()));
  for (size_t i = 0; i < sizes.size(); ++i)
    PyTuple_SET_ITEM(shape.get(), i, PyLong_FromLongLong(sizes[i]));
  PyRef args = PyRef::steal(PyTuple_Pack(1, shape.get()));
  PyRef kwargs = PyRef::steal(PyDict_New());
  PyDict_SetItemString(kwargs.get(), "dtype", dtype);
  return PyObject_Call(H.empty, args.get(), kwargs.get());
}

PyObject *intTuple(const std::vector<int64_t> &sizes) {
  PyObject *tuple = PyTuple_New(sizes.size());
  for (size_t i = 0; tuple && i < sizes.size(); ++i) {
    PyObject *v = PyLong_FromLongLong(sizes[i]);
    if (!v) {
      Py_DECREF(tuple);
      return nullptr;
    }
    PyTuple_SET_ITEM(tuple, i, v);
  }
  return tuple;
}

PyObject *emptyTensorPrebuilt(PyObject *size, PyObject *dtype, bool dtypeIsDefault) {
  if (dtypeIsDefault && PyTuple_GET_SIZE(size) > 0)
    return PyObject_Call(H.empty, size, nullptr); // a tuple is immutable
  // torch.empty is not vectorcall-native: CPython builds a fresh kwargs
  // dict from these keyword names for each call.
  PyObject *args[] = {size, dtype};
  return PyObject_Vectorcall(H.empty, args, 0, H.emptyKwnames);
}

PyObject *contiguousTensor(PyObject *t) { return PyObject_CallMethodNoArgs(t, H.sContiguous); }

} // namespace kiln
