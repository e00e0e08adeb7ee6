//===- OpArguments.cpp - argument helpers and torch type promotion --------===//
// SPDX-License-Identifier: Apache-2.0
//
// What every handler reads its arguments with: constant ints, floats,
// bools, strings and int sequences (symbolic sizes included), dim
// normalization, Python constants as Vars, and torch's type promotion
// (torch.result_type over tensors and Python scalars, with the default
// float dtype of the capture in progress). Mapping kiln element types to
// and from DType lives here too.
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

#include "mlir/IR/BuiltinTypes.h"

namespace kiln {

mlir::Type elementType(mlir::MLIRContext &ctx, DType d) {
  mlir::Builder b(&ctx);
  switch (d) {
  case DType::F32:
    return b.getF32Type();
  case DType::F64:
    return b.getF64Type();
  case DType::F16:
    return b.getF16Type();
  case DType::BF16:
    return b.getBF16Type();
  case DType::I64:
    return b.getI64Type();
  case DType::I32:
    return b.getI32Type();
  case DType::Bool:
    return b.getI1Type();
  }
  return {};
}

DType dtypeOf(mlir::Type t) {
  if (t.isF32())
    return DType::F32;
  if (t.isF64())
    return DType::F64;
  if (t.isF16())
    return DType::F16;
  if (t.isBF16())
    return DType::BF16;
  if (t.isInteger(64))
    return DType::I64;
  if (t.isInteger(32))
    return DType::I32;
  if (t.isInteger(1))
    return DType::Bool;
  throw Unsupported("unsupported element type");
}

namespace {
/// torch.get_default_dtype() of the capture in progress (guarded per entry).
thread_local DType tDefaultFloat = DType::F32;
} // namespace

void setDefaultFloat(DType d) { tDefaultFloat = d; }
DType defaultFloat() { return tDefaultFloat; }

long asInt(const VarP &v, const char *what) {
  PyObject *o = constObj(v, what);
  if (!PyLong_Check(o))
    throw Unsupported(std::string(what) + " must be an int");
  return PyLong_AsLong(o);
}

double asDouble(const VarP &v, const char *what) {
  PyObject *o = constObj(v, what);
  double d = PyFloat_AsDouble(o);
  if (d == -1.0 && PyErr_Occurred())
    throw Unsupported(BreakCategory::UnsupportedOp,
                      withPythonError(std::string(what) + " must be a number"));
  return d;
}

bool isNanFloatConst(const VarP &v) {
  return v && v->isConst() && PyFloat_Check(v->obj.get()) &&
         std::isnan(PyFloat_AS_DOUBLE(v->obj.get()));
}

bool hasSymInt(const VarP &v) {
  if (v && (v->kind == Var::Kind::Tuple || v->kind == Var::Kind::List))
    for (auto &i : v->items)
      if (i->kind == Var::Kind::SymInt && !i->staticSym)
        return true;
  return v && v->kind == Var::Kind::SymInt && !v->staticSym;
}

bool anySymInt(const VarP &v) {
  if (v && (v->kind == Var::Kind::Tuple || v->kind == Var::Kind::List))
    for (auto &i : v->items)
      if (i->kind == Var::Kind::SymInt)
        return true;
  return v && v->kind == Var::Kind::SymInt;
}

namespace {
int64_t shapeItem(const VarP &i, const char *what) {
  if (i->kind != Var::Kind::SymInt)
    return asInt(i, what);
  return i->staticSym ? i->captured : mlir::ShapedType::kDynamic;
}
} // namespace

/// Unsupported when a required argument was not passed (eager raises
/// TypeError; the frame then runs eagerly and raises it).
static void requirePassed(const VarP &v, const char *what) {
  if (!v)
    throw Unsupported(BreakCategory::UserError, std::string(what) + " is missing (eager raises)");
}

std::vector<int64_t> shapeArg(const VarP &v, const char *what) {
  requirePassed(v, what);
  if (v->kind == Var::Kind::SymInt)
    return {shapeItem(v, what)};
  if (v->kind != Var::Kind::Tuple && v->kind != Var::Kind::List)
    return asInts(v, what);
  std::vector<int64_t> out;
  for (auto &i : v->items)
    out.push_back(shapeItem(i, what));
  return out;
}

std::vector<int64_t> asInts(const VarP &v, const char *what) {
  requirePassed(v, what);
  std::vector<int64_t> out;
  if (v->kind == Var::Kind::Tuple || v->kind == Var::Kind::List) {
    for (auto &i : v->items)
      out.push_back(asInt(i, what));
    return out;
  }
  PyObject *o = constObj(v, what);
  if (PyLong_Check(o))
    return {PyLong_AsLong(o)};
  PyRef seq = PyRef::steal(PySequence_Tuple(o));
  if (!seq)
    throw Unsupported(BreakCategory::UnsupportedOp,
                      withPythonError(std::string(what) + " must be ints"));
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(seq.get()); ++i)
    out.push_back(PyLong_AsLong(PyTuple_GET_ITEM(seq.get(), i)));
  if (PyErr_Occurred())
    throw Unsupported(BreakCategory::UnsupportedOp,
                      withPythonError(std::string(what) + " must be ints"));
  return out;
}

int64_t normDim(int64_t d, int64_t rank) {
  int64_t r = std::max<int64_t>(rank, 1);
  if (d < -r || d >= r)
    throw Unsupported("dimension out of range");
  return d < 0 ? d + r : d;
}

std::optional<DTypeCategory> scalarCategory(PyObject *o) {
  if (PyBool_Check(o))
    return DTypeCategory::Bool;
  if (PyLong_Check(o))
    return DTypeCategory::Integer;
  if (PyFloat_Check(o))
    return DTypeCategory::Floating;
  return std::nullopt;
}

namespace {

/// The dtype two tensors of different dtypes promote to.
DType widerOf(DType a, DType b) {
  if (a == b)
    return a;
  DTypeCategory ca = dtypeCategory(a), cb = dtypeCategory(b);
  if (ca != cb)
    return ca > cb ? a : b;
  if (ca == DTypeCategory::Floating &&
      ((a == DType::F16 && b == DType::BF16) || (a == DType::BF16 && b == DType::F16)))
    return DType::F32;
  return dtypeBytes(a) >= dtypeBytes(b) ? a : b;
}

} // namespace

DType scalarDType(DTypeCategory c) {
  switch (c) {
  case DTypeCategory::Bool:
    return DType::Bool;
  case DTypeCategory::Integer:
    return DType::I64;
  case DTypeCategory::Floating:
    break;
  }
  return defaultFloat();
}

DType resultType(const std::vector<VarP> &operands) {
  std::optional<DType> dims, zeroDim;
  std::optional<DTypeCategory> scalarCat;
  for (auto &v : operands) {
    if (!v) // a required argument was not passed: eager raises TypeError
      throw Unsupported(BreakCategory::UserError, "an operand is missing (eager raises)");
    if (v->isTensor()) {
      auto t = ttype(v->value);
      DType d = dtypeOf(t.getElementType());
      auto &slot = t.getRank() == 0 ? zeroDim : dims;
      slot = slot ? widerOf(*slot, d) : d;
    } else if (v->kind == Var::Kind::Scalar) { // a Python number read from a tensor
      DType d = dtypeOfScalar(v);
      DTypeCategory c = dtypeCategory(d);
      scalarCat = scalarCat ? std::max(*scalarCat, c) : c;
    } else {
      std::optional<DTypeCategory> c = scalarCategory(constObj(v, "operand"));
      if (!c)
        throw Unsupported("operand " + pyText(v->obj.get(), true) + " is not a tensor or number");
      scalarCat = scalarCat ? std::max(*scalarCat, *c) : *c;
    }
  }
  std::optional<DType> r = dims;
  if (zeroDim && (!r || dtypeCategory(*zeroDim) > dtypeCategory(*r)))
    r = zeroDim;
  if (!r || (scalarCat && *scalarCat > dtypeCategory(*r))) {
    if (!r)
      throw Unsupported("no tensor operand");
    r = scalarDType(*scalarCat);
  }
  return *r;
}

VarP constInt(int64_t v) { return makeConst(PyRef::steal(PyLong_FromLongLong(v))); }
VarP constFloat(double v) { return makeConst(PyRef::steal(PyFloat_FromDouble(v))); }
VarP constBool(bool v) { return makeConst(PyRef::borrow(v ? Py_True : Py_False)); }
VarP constIntTuple(llvm::ArrayRef<int64_t> v) {
  PyRef t = PyRef::steal(PyTuple_New(v.size()));
  for (size_t i = 0; i < v.size(); ++i)
    PyTuple_SET_ITEM(t.get(), i, PyLong_FromLongLong(v[i]));
  return makeConst(t);
}

Value tensorArg(const VarP &v, const std::string &op) {
  if (!v || !v->isTensor())
    throw Unsupported(op + " expects a tensor");
  return v->value;
}

bool boolArg(const Args &a, const char *name, bool dflt) {
  if (a.isNone(name))
    return dflt;
  PyObject *o = constObj(a.get(name), name);
  if (!PyBool_Check(o) && !PyLong_Check(o))
    throw Unsupported(std::string(name) + " must be a bool");
  return PyObject_IsTrue(o) == 1;
}

double floatArg(const Args &a, const char *name, double dflt) {
  return a.isNone(name) ? dflt : asDouble(a.get(name), name);
}

int64_t intArg(const Args &a, const char *name, int64_t dflt) {
  return a.isNone(name) ? dflt : asInt(a.get(name), name);
}

std::string strArg(const Args &a, const char *name, const std::string &dflt) {
  if (a.isNone(name))
    return dflt;
  PyObject *o = constObj(a.get(name), name);
  if (!PyUnicode_Check(o))
    throw Unsupported(std::string(name) + " must be a str");
  return PyUnicode_AsUTF8(o);
}

VarP freshResult(Value v) {
  VarP r = T(v);
  r->copied = true;
  return r;
}

VarP inputArg(const Args &a, const std::string &op) {
  VarP x = a.get("input");
  if (!x)
    x = a.get("condition");
  if (!x)
    throw Unsupported(op + ": missing input");
  return x;
}

} // namespace kiln
