//===- TorchOps.cpp - torch functions, Tensor methods and operators → kiln ---===//
// SPDX-License-Identifier: Apache-2.0
//
// The one table mapping torch callables (by identity) and Tensor methods
// (by name) to kiln ops, with torch's argument parsing (positional and
// keyword), broadcasting, type promotion and dim normalization. Anything a
// handler cannot express exactly is Unsupported, never approximated.
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

#include "capture/values/DynamicShapes.h"
#include "capture/Coverage.h"

#include "ir/KilnOps.h"
#include "ir/ShapeUtils.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cmath>
#include <set>
#include <unordered_map>

namespace kiln {

using mlir::RankedTensorType;
using mlir::Type;
using mlir::Value;

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
  if (d == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    throw Unsupported(std::string(what) + " must be a number");
  }
  return d;
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

std::vector<int64_t> shapeArg(const VarP &v, const char *what) {
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
  if (!seq) {
    PyErr_Clear();
    throw Unsupported(std::string(what) + " must be ints");
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(seq.get()); ++i)
    out.push_back(PyLong_AsLong(PyTuple_GET_ITEM(seq.get(), i)));
  if (PyErr_Occurred()) {
    PyErr_Clear();
    throw Unsupported(std::string(what) + " must be ints");
  }
  return out;
}

int64_t normDim(int64_t d, int64_t rank) {
  int64_t r = std::max<int64_t>(rank, 1);
  if (d < -r || d >= r)
    throw Unsupported("dimension out of range");
  return d < 0 ? d + r : d;
}

/// Promotion category of a Python scalar, or -1 if it is not one.
int scalarCategory(PyObject *o) {
  if (PyBool_Check(o))
    return 0;
  if (PyLong_Check(o))
    return 1;
  if (PyFloat_Check(o))
    return 2;
  return -1;
}

DType widerOf(DType a, DType b) {
  if (a == b)
    return a;
  int ca = dtypeCategory(a), cb = dtypeCategory(b);
  if (ca != cb)
    return ca > cb ? a : b;
  if (ca == 2) {
    if ((a == DType::F16 && b == DType::BF16) || (a == DType::BF16 && b == DType::F16))
      return DType::F32;
    return dtypeBytes(a) >= dtypeBytes(b) ? a : b;
  }
  return dtypeBytes(a) >= dtypeBytes(b) ? a : b;
}

/// torch.result_type over tensors and Python scalars.
DType resultType(const std::vector<VarP> &operands) {
  std::optional<DType> dims, zeroDim;
  int scalarCat = -1;
  for (auto &v : operands) {
    if (v->isTensor()) {
      auto t = ttype(v->value);
      DType d = dtypeOf(t.getElementType());
      auto &slot = t.getRank() == 0 ? zeroDim : dims;
      slot = slot ? widerOf(*slot, d) : d;
    } else {
      int c = scalarCategory(constObj(v, "operand"));
      if (c < 0)
        throw Unsupported("operand " + pyText(v->obj.get(), true) + " is not a tensor or number");
      scalarCat = std::max(scalarCat, c);
    }
  }
  std::optional<DType> r = dims;
  if (zeroDim && (!r || dtypeCategory(*zeroDim) > dtypeCategory(*r)))
    r = zeroDim;
  if (!r || scalarCat > dtypeCategory(*r)) {
    DType fromScalar = scalarCat == 2 ? tDefaultFloat : scalarCat == 1 ? DType::I64 : DType::Bool;
    if (!r)
      throw Unsupported("no tensor operand");
    r = fromScalar;
  }
  return *r;
}

void OpTable::function(const char *module, const char *name, OpSpec spec) {
  PyRef m = PyRef::steal(PyImport_ImportModule(module));
  PyObject *f = m ? PyObject_GetAttrString(m.get(), name) : nullptr; // kept alive
  PyErr_Clear();
  if (!f)
    return;
  functionList.push_back({module, name, spec});
  functions[f] = std::move(spec);
}

namespace {

/// The entries of the core handlers in applyOp below and TorchIndexing.cpp.
void registerCoreFunctions(OpTable &table) {
  {
    auto add = [&](const char *module, const char *name, OpSpec spec) {
      table.function(module, name, std::move(spec));
    };
    const std::vector<std::string> un = {"input"};
    for (const char *n :
         {"relu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "abs", "neg", "erf"})
      add("torch", n, {n, un});
    for (const char *n : {"relu", "sigmoid", "tanh", "silu"})
      add("torch.nn.functional", n, {n, {"input", "inplace"}});
    add("torch.nn.functional", "gelu", {"gelu", {"input", "approximate"}});
    for (const char *n : {"add", "sub"})
      add("torch", n, {n, {"input", "other", "alpha"}});
    for (const char *n : {"mul", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge"})
      add("torch", n, {n, {"input", "other"}});
    add("torch", "div", {"div", {"input", "other", "rounding_mode"}});
    add("torch", "pow", {"pow", {"input", "exponent"}});
    for (const char *n : {"matmul", "mm", "bmm"})
      add("torch", n, {"matmul", {"input", "other"}});
    add("torch.nn.functional", "linear", {"linear", {"input", "weight", "bias"}});
    add("torch", "softmax", {"softmax", {"input", "dim", "dtype"}});
    add("torch.nn.functional", "softmax", {"softmax", {"input", "dim", "_stacklevel", "dtype"}});
    add("torch.nn.functional", "layer_norm",
        {"layer_norm", {"input", "normalized_shape", "weight", "bias", "eps"}});
    add("torch.nn.functional", "dropout", {"dropout", {"input", "p", "training", "inplace"}});
    for (const char *n : {"sum", "mean"})
      add("torch", n, {n, {"input", "dim", "keepdim", "dtype"}});
    add("torch", "amax", {"amax", {"input", "dim", "keepdim"}});
    add("torch", "transpose", {"transpose", {"input", "dim0", "dim1"}});
    add("torch", "permute", {"permute", {"input", "dims"}});
    add("torch", "reshape", {"reshape", {"input", "shape"}});
    add("torch", "flatten", {"flatten", {"input", "start_dim", "end_dim"}});
    add("torch", "unsqueeze", {"unsqueeze", {"input", "dim"}});
    add("torch", "squeeze", {"squeeze", {"input", "dim"}});
    add("torch", "t", {"t", un});
    add("torch", "where", {"where", {"condition", "input", "other"}});
    add("torch", "clone", {"clone", {"input", "memory_format"}});
    const std::vector<std::string> factoryKw = {
        "out", "dtype", "layout", "device", "requires_grad", "pin_memory", "memory_format"};
    auto withKw = [&](std::vector<std::string> p) {
      p.insert(p.end(), factoryKw.begin(), factoryKw.end());
      return p;
    };
    add("torch", "zeros", {"zeros", withKw({"*size"})});
    add("torch", "ones", {"ones", withKw({"*size"})});
    add("torch", "full", {"full", withKw({"size", "fill_value"})});
    add("torch", "zeros_like", {"zeros_like", withKw({"input"})});
    add("torch", "ones_like", {"ones_like", withKw({"input"})});
    add("torch", "full_like", {"full_like", withKw({"input", "fill_value"})});
    add("torch", "arange", {"arange", withKw({"start", "end", "step"})});
    add("torch", "clamp", {"clamp", {"input", "min", "max"}});
    // Indexing, concatenation, embedding, batch_norm: TorchIndexing.cpp.
    add("torch", "narrow", {"narrow", {"input", "dim", "start", "length"}});
    add("torch", "select", {"select", {"input", "dim", "index"}});
    add("torch", "chunk", {"chunk", {"input", "chunks", "dim"}});
    add("torch", "split", {"split", {"input", "split_size_or_sections", "dim"}});
    add("torch", "unbind", {"unbind", {"input", "dim"}});
    for (const char *n : {"cat", "concat", "concatenate"})
      add("torch", n, {"cat", {"tensors", "dim", "out"}});
    add("torch", "stack", {"stack", {"tensors", "dim", "out"}});
    add("torch.nn.functional", "embedding",
        {"embedding",
         {"input", "weight", "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq",
          "sparse"}});
    add("torch.nn.functional", "batch_norm",
        {"batch_norm",
         {"input", "running_mean", "running_var", "weight", "bias", "training", "momentum",
          "eps"}});
  }
}

/// Tensor methods of the core handlers: name → (op, params after self).
void registerCoreMethods(OpTable &table) {
  {
    auto &t = table.methods;
    for (const char *n :
         {"relu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "abs", "neg", "erf"})
      t[n] = {n, {"input"}};
    for (const char *n : {"add", "sub"})
      t[n] = {n, {"input", "other", "alpha"}};
    for (const char *n : {"mul", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge"})
      t[n] = {n, {"input", "other"}};
    t["div"] = {"div", {"input", "other", "rounding_mode"}};
    t["pow"] = {"pow", {"input", "exponent"}};
    t["matmul"] = {"matmul", {"input", "other"}};
    t["mm"] = t["bmm"] = t["matmul"];
    t["softmax"] = {"softmax", {"input", "dim", "dtype"}};
    for (const char *n : {"sum", "mean"})
      t[n] = {n, {"input", "dim", "keepdim", "dtype"}};
    t["amax"] = {"amax", {"input", "dim", "keepdim"}};
    t["transpose"] = {"transpose", {"input", "dim0", "dim1"}};
    t["permute"] = {"permute", {"input", "*dims"}};
    t["reshape"] = t["view"] = {"reshape", {"input", "*shape"}};
    t["expand"] = {"expand", {"input", "*size"}};
    t["flatten"] = {"flatten", {"input", "start_dim", "end_dim"}};
    t["unsqueeze"] = {"unsqueeze", {"input", "dim"}};
    t["squeeze"] = {"squeeze", {"input", "dim"}};
    t["t"] = {"t", {"input"}};
    t["contiguous"] = {"identity", {"input", "memory_format"}};
    t["clone"] = {"clone", {"input", "memory_format"}};
    t["to"] = {"to", {"input", "dtype"}};
    for (const char *n : {"float", "double", "half", "bfloat16", "int", "long", "bool"})
      t[n] = {n, {"input"}};
    t["clamp"] = {"clamp", {"input", "min", "max"}};
    t["size"] = {"size", {"input", "dim"}};
    t["dim"] = {"dim", {"input"}};
    t["numel"] = {"numel", {"input"}};
    t["__getitem__"] = {"getitem", {"input", "index"}};
    t["narrow"] = {"narrow", {"input", "dim", "start", "length"}};
    t["select"] = {"select", {"input", "dim", "index"}};
    t["chunk"] = {"chunk", {"input", "chunks", "dim"}};
    t["split"] = {"split", {"input", "split_size", "dim"}};
    t["unbind"] = {"unbind", {"input", "dim"}};
  }
}

} // namespace

const OpTable &opTable() {
  static OpTable table = [] {
    OpTable t;
    registerCoreFunctions(t);
    registerCoreMethods(t);
    registerElementwiseOps(t);
    registerReductionOps(t);
    registerShapeOps(t);
    registerNNOps(t);
    registerLossOps(t);
    return t;
  }();
  return table;
}

namespace {

Args bind(const OpSpec &spec, std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  Args a;
  size_t i = 0;
  for (const std::string &p : spec.params) {
    if (p[0] == '*') { // varargs: one sequence or the remaining positionals
      std::vector<VarP> rest(args.begin() + std::min(i, args.size()), args.end());
      a.named[p.substr(1)] = rest.size() == 1 ? rest[0] : makeSeq(Var::Kind::Tuple, rest);
      i = args.size();
      continue;
    }
    if (i < args.size())
      a.named[p] = args[i++];
  }
  if (i < args.size())
    throw Unsupported("too many arguments for " + spec.op);
  for (auto &[k, v] : kwargs) {
    if (std::find(spec.params.begin(), spec.params.end(), k) == spec.params.end())
      throw Unsupported("unsupported keyword '" + k + "' for " + spec.op);
    a.named[k] = v;
  }
  return a;
}

VarP applyOp(Interpreter &I, const std::string &op, Args &a);

} // namespace

/// Ops whose eager result aliases their input (views, or no-ops that return
/// the input itself).
bool isViewLike(const std::string &op) {
  static const std::set<std::string> views = {
      "reshape", "flatten",   "unsqueeze",    "squeeze",    "transpose",
      "t",       "permute",   "expand",       "identity",   "dropout",
      "to",      "float",     "double",       "half",       "bfloat16",
      "int",     "long",      "bool",         "__slice",    "getitem",
      "narrow",  "select",    "chunk",        "split",      "unbind",
      "movedim", "expand_as", "view_as",      "reshape_as", "unflatten",
      "ravel",   "type_as",   "broadcast_to", "swapaxes",   "dropout_variant"};
  return views.count(op) > 0;
}

namespace {

/// Applies `op` as an in-place update of its input (`what` names it in
/// errors): only a tensor the graph computed and nothing views may be
/// updated; its Var is rebound so every Python reference sees the result.
VarP applyInPlace(Interpreter &I, const std::string &op, Args &a, const std::string &what) {
  VarP in = a.get("input");
  if (!in || !in->isTensor())
    throw Unsupported(what + " expects a tensor");
  if (in->vmapLevels > 0)
    throw Unsupported(what + " on a tensor batched by torch.vmap is not supported");
  a.named.erase("inplace");
  VarP r = applyOp(I, op, a);
  if (r && r->isTensor() && r->value == in->value)
    return in; // a no-op (e.g. dropout in eval mode)
  if (!in->fresh || in->viewed || isViewLike(op))
    throw Unsupported(what + " on a graph input or a view is not supported yet");
  if (!r || !r->isTensor() || r->value.getType() != in->value.getType())
    throw Unsupported(what + " would change the tensor's shape or dtype");
  in->value = r->value;
  return in;
}

/// Records that `r` (made by view-like `op` from `in`) views a graph input,
/// with the torch call that rebuilds it from the input.
void recordView(const VarP &in, const VarP &r, const std::string &op) {
  int base = in->viewInput;
  std::vector<std::pair<std::string, PyRef>> steps = in->viewSteps;
  if (base < 0) {
    auto arg = llvm::dyn_cast<mlir::BlockArgument>(in->value);
    if (!arg || in->viewInput >= 0)
      return;
    base = static_cast<int>(arg.getArgNumber());
  }
  auto ints = [](llvm::ArrayRef<int64_t> v) {
    PyRef t = PyRef::steal(PyTuple_New(v.size()));
    // A symbolic size replays as -1 (reshape infers it, expand keeps it).
    for (size_t i = 0; i < v.size(); ++i)
      PyTuple_SET_ITEM(t.get(), i,
                       PyLong_FromLongLong(mlir::ShapedType::isDynamic(v[i]) ? -1 : v[i]));
    return PyRef::steal(PyTuple_Pack(1, t.get()));
  };
  mlir::Operation *def = r->value.getDefiningOp();
  if (op == "identity") {
    steps.push_back({"contiguous", PyRef::steal(PyTuple_New(0))});
  } else if (r->value == in->value) {
    // no-op (same shape/dtype): eager returns the input or a view of it
  } else if (auto p = llvm::dyn_cast_or_null<mlir::kiln::PermuteOp>(def)) {
    steps.push_back({"permute", ints(p.getDims())});
  } else if (llvm::isa_and_nonnull<mlir::kiln::ReshapeOp>(def) ||
             llvm::isa_and_nonnull<mlir::kiln::BroadcastToOp>(def)) {
    steps.push_back({llvm::isa<mlir::kiln::ReshapeOp>(def) ? "reshape" : "expand",
                     ints(ttype(r->value).getShape())});
  } else if (auto sl = llvm::dyn_cast_or_null<mlir::kiln::SliceOp>(def)) {
    PyRef index = PyRef::steal(PyTuple_New(sl.getStart().size()));
    for (size_t i = 0; i < sl.getStart().size(); ++i) {
      PyRef b = PyRef::steal(PyLong_FromLongLong(sl.getStart()[i]));
      // end -1: the whole dim (kiln.slice), None in Python.
      PyRef en = sl.getEnd()[i] == -1 ? PyRef::borrow(Py_None)
                                      : PyRef::steal(PyLong_FromLongLong(sl.getEnd()[i]));
      PyRef st = PyRef::steal(PyLong_FromLongLong(sl.getStep()[i]));
      PyTuple_SET_ITEM(index.get(), i, PySlice_New(b.get(), en.get(), st.get()));
    }
    steps.push_back({"__getitem__", PyRef::steal(PyTuple_Pack(1, index.get()))});
  } else if (llvm::isa_and_nonnull<mlir::kiln::CastOp>(def)) {
    PyObject *dt = dtypeObject(dtypeOf(ttype(r->value).getElementType()));
    steps.push_back({"to", PyRef::steal(PyTuple_Pack(1, dt))});
  } else {
    return; // not a replayable view: returned as a copy
  }
  r->viewInput = base;
  r->viewSteps = std::move(steps);
}

} // namespace

/// Applies `op` and records aliasing facts on the input and the result.
VarP applyTracked(Interpreter &I, const std::string &op, Args &a) {
  if (VarP r = I.vmapApply(op, a)) // an operand batched by torch.vmap (Vmap.cpp)
    return r;
  if (VarP r = applyCompositeOp(I, op, a)) // TorchIndexing.cpp
    return r;
  VarP inplace = a.get("inplace");
  if (inplace && inplace->isConst() && PyObject_IsTrue(inplace->obj.get()) == 1)
    return applyInPlace(I, op, a, op + "(inplace=True)");
  VarP r = applyOp(I, op, a);
  VarP in = a.get("input");
  if (r && r->isTensor() && in && in->isTensor() && isViewLike(op))
    recordView(in, r, op);
  if (r && r->isTensor()) {
    if (isViewLike(op)) {
      if (in && in->isTensor())
        in->viewed = true;
      r->fresh = false;
    } else if (op == "clone" || !(in && in->isTensor() && in->value == r->value)) {
      r->fresh = true;
    }
  }
  return r;
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

VarP callOp(Interpreter &I, const std::string &op,
            std::initializer_list<std::pair<const char *, VarP>> args) {
  Args a;
  for (auto &[k, v] : args)
    if (v)
      a.named[k] = v;
  return applyTracked(I, op, a);
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

std::vector<MappedFunction> mappedFunctions() {
  std::vector<MappedFunction> out;
  for (auto &f : opTable().functionList)
    out.push_back({f.module, f.name, f.spec.op});
  return out;
}

std::vector<MappedMethod> mappedMethods() {
  std::vector<MappedMethod> out;
  for (auto &[name, spec] : opTable().methods) {
    const std::string &op = spec.op;
    bool inplace = !isViewLike(op) && op != "size" && op != "dim" && op != "numel";
    out.push_back({name, op, inplace});
  }
  return out;
}

namespace {

/// torch.zeros/ones/full(_like)/arange with static sizes: a kiln.constant.
VarP applyFactory(Interpreter &I, const std::string &op, Args &a) {
  Emit e(I);
  auto isNoneOr = [&](const char *name, auto ok) {
    if (a.isNone(name))
      return true;
    return ok(constObj(a.get(name), name));
  };
  auto strIs = [](PyObject *o, const char *s) { return pyText(o) == s; };
  if (!a.isNone("out"))
    throw Unsupported(op + " with out=");
  if (!isNoneOr("device", [&](PyObject *o) { return strIs(o, "cpu"); }))
    throw Unsupported(op + " on a device other than the CPU");
  if (!isNoneOr("layout", [&](PyObject *o) { return strIs(o, "torch.strided"); }) ||
      !isNoneOr("requires_grad", [](PyObject *o) { return o == Py_False; }) ||
      !isNoneOr("pin_memory", [](PyObject *o) { return o == Py_False; }) ||
      !isNoneOr("memory_format", [&](PyObject *o) {
        return strIs(o, "torch.preserve_format") || strIs(o, "torch.contiguous_format");
      }))
    throw Unsupported(op + " with layout/requires_grad/pin_memory/memory_format");
  std::optional<DType> dtype;
  if (!a.isNone("dtype")) {
    dtype = dtypeFromObject(constObj(a.get("dtype"), "dtype"));
    if (!dtype)
      throw Unsupported(op + ": unsupported dtype");
  }
  auto scalarDType = [](PyObject *o) {
    int c = scalarCategory(o);
    if (c < 0)
      throw Unsupported("fill value must be a Python number");
    return c == 0 ? DType::Bool : c == 1 ? DType::I64 : tDefaultFloat;
  };
  std::vector<int64_t> shape;
  PyRef fill;
  bool like = op.size() > 5 && op.compare(op.size() - 5, 5, "_like") == 0;
  if (like) {
    VarP x = a.get("input");
    if (!x || !x->isTensor())
      throw Unsupported(op + " expects a tensor");
    auto t = ttype(x->value);
    shape.assign(t.getShape().begin(), t.getShape().end());
    if (!dtype)
      dtype = dtypeOf(t.getElementType());
  }
  if (op == "arange" && (anySymInt(a.get("start")) || anySymInt(a.get("end")))) {
    // arange(s) / arange(c, c + s) of a symbolic length s: built from the
    // input that carries s (SymbolicSizes.cpp).
    if (!a.isNone("step") && !(a.get("step")->isConst() && PyLong_Check(a.get("step")->obj.get()) &&
                               PyLong_AsLong(a.get("step")->obj.get()) == 1))
      throw Unsupported("arange of a symbolic size with a step other than 1");
    VarP start = a.isNone("end") ? constInt(0) : a.get("start");
    VarP end = a.isNone("end") ? a.get("start") : a.get("end");
    if (start->kind == Var::Kind::SymInt || !start->isConst() || !PyLong_Check(start->obj.get()))
      throw Unsupported("arange of a symbolic size needs an int start");
    VarP count = I.symIntBinary("-", end, start);
    if (!count || count->kind != Var::Kind::SymInt)
      throw Unsupported("arange bounds must be numbers");
    I.symIntBinary(">=", count, constInt(0)); // guarded, as eager raises below 0
    Value r = I.symIota(count);
    long s0 = PyLong_AsLong(start->obj.get());
    if (s0)
      r = e.bin<mlir::kiln::AddOp>(r, e.num(s0, DType::I64));
    return T(e.cast(r, dtype ? *dtype : DType::I64));
  }
  if (op == "arange") {
    std::vector<PyObject *> v;
    for (const char *n : {"start", "end", "step"})
      if (!a.isNone(n))
        v.push_back(constObj(a.get(n), n));
    if (a.isNone("end") && !a.isNone("step"))
      throw Unsupported("arange: step without end");
    double start = 0, end, step = 1;
    bool allInt = true;
    for (PyObject *o : v) {
      int c = scalarCategory(o);
      if (c < 0 || c == 0)
        throw Unsupported("arange bounds must be numbers");
      allInt &= c == 1;
    }
    if (v.size() == 1) {
      end = PyFloat_AsDouble(v[0]);
    } else {
      start = PyFloat_AsDouble(v[0]);
      end = PyFloat_AsDouble(v[1]);
      if (v.size() == 3)
        step = PyFloat_AsDouble(v[2]);
    }
    if (step == 0 || (end - start) / step < 0)
      throw Unsupported("arange: invalid bounds");
    int64_t n = static_cast<int64_t>(std::ceil((end - start) / step));
    if (n > (1 << 16))
      throw Unsupported("arange with more than 65536 elements");
    DType d = dtype ? *dtype : allInt ? DType::I64 : tDefaultFloat;
    mlir::Type elt = e.elt(d);
    auto type = RankedTensorType::get({n}, elt);
    mlir::Attribute attr;
    if (llvm::isa<mlir::FloatType>(elt)) {
      llvm::SmallVector<mlir::Attribute> vals;
      for (int64_t i = 0; i < n; ++i)
        vals.push_back(e.b.getFloatAttr(elt, start + i * step));
      attr = mlir::DenseElementsAttr::get(type, vals);
    } else if (elt.isInteger(1)) {
      throw Unsupported("arange of bools");
    } else {
      llvm::SmallVector<mlir::Attribute> vals;
      for (int64_t i = 0; i < n; ++i)
        vals.push_back(e.b.getIntegerAttr(elt, static_cast<int64_t>(start + i * step)));
      attr = mlir::DenseElementsAttr::get(type, vals);
    }
    return T(e.b.create<mlir::kiln::ConstantOp>(I.loc(), llvm::cast<mlir::ElementsAttr>(attr)));
  }
  std::vector<VarP> symDims; // sizes when some are symbolic
  if (like) {
    Value xv = a.get("input")->value;
    for (int64_t i = 0; i < ttype(xv).getRank(); ++i)
      symDims.push_back(I.sizeVar(xv, i));
    if (!anySymInt(makeSeq(Var::Kind::Tuple, symDims)))
      symDims.clear();
  }
  if (!like && anySymInt(a.get("size"))) {
    VarP size = a.get("size");
    symDims = size->kind == Var::Kind::SymInt ? std::vector<VarP>{size} : size->items;
    for (const VarP &d : symDims)
      if (d->kind != Var::Kind::SymInt && asInt(d, "size") < 0)
        throw Unsupported(op + ": negative size");
  } else if (!like) {
    VarP size = a.get("size");
    if (!size)
      throw Unsupported(op + ": missing size");
    shape = asInts(size, "size");
    for (int64_t s : shape)
      if (s < 0)
        throw Unsupported(op + ": negative size");
  }
  if (op == "zeros" || op == "zeros_like")
    fill = PyRef::steal(PyLong_FromLong(0));
  else if (op == "ones" || op == "ones_like")
    fill = PyRef::steal(PyLong_FromLong(1));
  else
    fill = PyRef::borrow(constObj(a.get("fill_value"), "fill_value"));
  if (!dtype)
    dtype = op == "full" ? scalarDType(fill.get()) : tDefaultFloat;
  scalarDType(fill.get()); // a number
  Value scalar = e.scalar(fill.get(), *dtype);
  auto attr = llvm::cast<mlir::DenseElementsAttr>(
      llvm::cast<mlir::kiln::ConstantOp>(scalar.getDefiningOp()).getValue());
  if (!symDims.empty())
    return T(I.symFull(symDims, scalar));
  if (mlir::ShapedType::isDynamicShape(shape))
    throw Unsupported(op + " of a tensor with a symbolic size");
  auto type = RankedTensorType::get(shape, e.elt(*dtype));
  Value splat = e.b.create<mlir::kiln::ConstantOp>(
      I.loc(), llvm::cast<mlir::ElementsAttr>(
                   mlir::DenseElementsAttr::get(type, attr.getSplatValue<mlir::Attribute>())));
  scalar.getDefiningOp()->erase();
  return T(splat);
}

VarP applyOp(Interpreter &I, const std::string &op, Args &a) {
  static const std::set<std::string> factories = {"zeros",     "ones",      "full",  "zeros_like",
                                                  "ones_like", "full_like", "arange"};
  if (factories.count(op))
    return applyFactory(I, op, a);
  if (op == "__slice")
    return applySlice(I, a);
  auto &handlers = opTable().handlers;
  if (auto h = handlers.find(op); h != handlers.end())
    return h->second(I, op, a);
  Emit e(I);
  VarP x = a.get("input");
  if (!x)
    x = a.get("condition");
  if (!x)
    throw Unsupported(op + ": missing input");
  using namespace mlir::kiln;
  auto requireTensor = [&](const VarP &v) -> Value {
    if (!v || !v->isTensor())
      throw Unsupported(op + " expects a tensor");
    return v->value;
  };
  // ---- elementwise ----
  if (op == "add" || op == "sub") {
    VarP other = a.get("other");
    if (!a.isNone("alpha")) {
      VarP alpha = a.get("alpha");
      VarP scaled = T(e.binary<MulOp>(other, alpha));
      other = scaled;
    }
    if (!x->isTensor() && !other->isTensor())
      throw Unsupported(op + " on scalars");
    return T(op == "add" ? e.binary<AddOp>(x, other) : e.binary<SubOp>(x, other));
  }
  if (op == "mul")
    return T(e.binary<MulOp>(x, a.get("other")));
  if (op == "maximum")
    return T(e.binary<MaximumOp>(x, a.get("other")));
  if (op == "minimum")
    return T(e.binary<MinimumOp>(x, a.get("other")));
  if (op == "div" || op == "pow") {
    VarP other = a.get(op == "div" ? "other" : "exponent");
    if (op == "div" && !a.isNone("rounding_mode"))
      return opTable().handlers.at("div_mode")(I, "div_mode", a);
    DType d = resultType({x, other});
    if (dtypeCategory(d) < 2) {
      if (op == "pow")
        throw Unsupported("integer pow");
      d = tDefaultFloat;
    }
    return T(op == "div" ? e.binary<DivOp>(x, other, d) : e.binary<PowOp>(x, other, d));
  }
  if (op == "eq" || op == "ne" || op == "lt" || op == "le" || op == "gt" || op == "ge") {
    VarP o = a.get("other");
    if (op == "eq")
      return T(e.binary<EqOp>(x, o));
    if (op == "ne")
      return T(e.binary<NeOp>(x, o));
    if (op == "lt")
      return T(e.binary<LtOp>(x, o));
    if (op == "le")
      return T(e.binary<LeOp>(x, o));
    if (op == "gt")
      return T(e.binary<GtOp>(x, o));
    return T(e.binary<GeOp>(x, o));
  }
  if (op == "where") {
    VarP t = a.get("input"), f = a.get("other");
    Value c = e.cast(requireTensor(a.get("condition")), DType::Bool);
    DType d = resultType({t, f});
    Value vt = e.operand(t, d), vf = e.operand(f, d);
    llvm::SmallVector<Type> types;
    if (mlir::failed(SelectOp::inferReturnTypes(
            e.b.getContext(), I.loc(), mlir::ValueRange{c, vt, vf}, mlir::DictionaryAttr(),
            mlir::OpaqueProperties(nullptr), mlir::RegionRange(), types)))
      throw Unsupported("invalid operands for where");
    return T(e.b.create<SelectOp>(I.loc(), types.front(), mlir::ValueRange{c, vt, vf}));
  }
  if (op == "clamp") {
    if (a.isNone("min") && a.isNone("max"))
      throw Unsupported("clamp without min and max (eager raises)");
    Value v = requireTensor(x);
    VarP cur = x;
    if (!a.isNone("min"))
      cur = T(e.binary<MaximumOp>(cur, a.get("min")));
    if (!a.isNone("max"))
      cur = T(e.binary<MinimumOp>(cur, a.get("max")));
    (void)v;
    return cur;
  }
  if (op == "relu")
    return T(e.unary<ReluOp>(requireTensor(x)));
  if (op == "neg")
    return T(e.unary<NegOp>(requireTensor(x)));
  if (op == "abs")
    return T(e.unary<AbsOp>(requireTensor(x)));
  if (op == "gelu") {
    std::string approx = "none";
    if (!a.isNone("approximate")) {
      PyObject *s = constObj(a.get("approximate"), "approximate");
      approx = PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : "?";
    }
    if (approx != "none" && approx != "tanh")
      throw Unsupported("gelu approximate=" + approx);
    if (dtypeCategory(dtypeOf(ttype(requireTensor(x)).getElementType())) < 2)
      throw Unsupported("gelu of an integer tensor (eager raises)");
    Value v = e.floatUnaryInput(x);
    return T(e.b.create<GeluOp>(I.loc(), v, e.b.getStringAttr(approx)));
  }
  if (op == "silu") {
    if (dtypeCategory(dtypeOf(ttype(requireTensor(x)).getElementType())) < 2)
      throw Unsupported("silu of an integer tensor (eager raises)");
    return T(e.unary<SiluOp>(e.floatUnaryInput(x)));
  }
  if (op == "sigmoid")
    return T(e.unary<SigmoidOp>(e.floatUnaryInput(x)));
  if (op == "tanh")
    return T(e.unary<TanhOp>(e.floatUnaryInput(x)));
  if (op == "exp")
    return T(e.unary<ExpOp>(e.floatUnaryInput(x)));
  if (op == "log")
    return T(e.unary<LogOp>(e.floatUnaryInput(x)));
  if (op == "sqrt")
    return T(e.unary<SqrtOp>(e.floatUnaryInput(x)));
  if (op == "rsqrt")
    return T(e.unary<RsqrtOp>(e.floatUnaryInput(x)));
  if (op == "erf")
    return T(e.unary<ErfOp>(e.floatUnaryInput(x)));
  // ---- casts ----
  static const std::map<std::string, DType> castOps = {
      {"float", DType::F32},     {"double", DType::F64}, {"half", DType::F16},
      {"bfloat16", DType::BF16}, {"int", DType::I32},    {"long", DType::I64},
      {"bool", DType::Bool}};
  if (castOps.count(op))
    return T(e.cast(requireTensor(x), castOps.at(op)));
  if (op == "to") {
    VarP dt = a.get("dtype");
    auto d = dt ? dtypeFromObject(constObj(dt, "dtype")) : std::nullopt;
    if (!d)
      throw Unsupported("Tensor.to is supported with a dtype only");
    return T(e.cast(requireTensor(x), *d));
  }
  if (op == "identity")
    return T(requireTensor(x));
  if (op == "clone") {
    if (!a.isNone("memory_format"))
      throw Unsupported("clone with a memory_format");
    VarP r = T(requireTensor(x));
    r->copied = true;
    return r;
  }
  if (op == "dropout") {
    bool training =
        a.isNone("training") ? true : PyObject_IsTrue(constObj(a.get("training"), "training")) == 1;
    double p = a.isNone("p") ? 0.5 : asDouble(a.get("p"), "p");
    if (training && p > 0)
      throw Unsupported("dropout in training mode (random) is not supported yet");
    return T(requireTensor(x));
  }
  // ---- linear algebra ----
  if (op == "matmul" || op == "linear") {
    Value lhs = requireTensor(x);
    Value rhs;
    if (op == "linear") {
      Value w = requireTensor(a.get("weight"));
      if (ttype(w).getRank() != 2)
        throw Unsupported("linear with a non-2-D weight");
      rhs = e.permute(w, {1, 0});
    } else {
      rhs = requireTensor(a.get("other"));
    }
    DType d = resultType({makeTensor(lhs), makeTensor(rhs)});
    if (dtypeCategory(d) < 2)
      throw Unsupported("integer matmul");
    lhs = e.cast(lhs, d);
    rhs = e.cast(rhs, d);
    int64_t rl = ttype(lhs).getRank(), rr = ttype(rhs).getRank();
    if (rl == 0 || rr == 0)
      throw Unsupported("matmul of a 0-d tensor");
    // torch.matmul's 1-D rules: prepend/append a dim, then remove it.
    if (rl == 1)
      lhs = e.reshape(lhs, {1, ttype(lhs).getDimSize(0)});
    if (rr == 1)
      rhs = e.reshape(rhs, {ttype(rhs).getDimSize(0), 1});
    Value r = e.inferred<MatmulOp>({lhs, rhs});
    llvm::SmallVector<int64_t> shape(ttype(r).getShape());
    if (rr == 1)
      shape.erase(shape.end() - 1);
    if (rl == 1)
      shape.erase(shape.end() - (rr == 1 ? 1 : 2));
    r = e.reshape(r, shape);
    if (op == "linear" && !a.isNone("bias"))
      r = e.binary<AddOp>(T(r), a.get("bias"));
    return T(r);
  }
  // ---- reductions and normalizations ----
  Value v = requireTensor(x);
  int64_t rank = ttype(v).getRank();
  if (op == "sum" || op == "mean" || op == "amax") {
    std::vector<int64_t> dims;
    // torch reduces over every dim when `dim` is None or empty.
    if (a.isNone("dim") || asInts(a.get("dim"), "dim").empty()) {
      for (int64_t i = 0; i < rank; ++i)
        dims.push_back(i);
    } else {
      dims = asInts(a.get("dim"), "dim");
    }
    bool keepdim =
        !a.isNone("keepdim") && PyObject_IsTrue(constObj(a.get("keepdim"), "keepdim")) == 1;
    if (!a.isNone("dtype")) {
      auto d = dtypeFromObject(constObj(a.get("dtype"), "dtype"));
      if (!d)
        throw Unsupported("reduction dtype");
      v = e.cast(v, *d);
    }
    DType d = dtypeOf(ttype(v).getElementType());
    if (op == "mean") {
      if (dtypeCategory(d) < 2)
        throw Unsupported("mean of an integer tensor");
      return T(e.reduce<MeanOp>(v, dims, keepdim));
    }
    if (op == "sum") {
      if (dtypeCategory(d) < 2 && d != DType::I64)
        v = e.cast(v, DType::I64);
      return T(e.reduce<SumOp>(v, dims, keepdim));
    }
    return T(e.reduce<MaxOp>(v, dims, keepdim));
  }
  if (op == "softmax") {
    if (a.isNone("dim"))
      throw Unsupported("softmax without dim");
    if (!a.isNone("dtype")) {
      auto d = dtypeFromObject(constObj(a.get("dtype"), "dtype"));
      if (!d)
        throw Unsupported("softmax dtype");
      v = e.cast(v, *d);
    }
    if (dtypeCategory(dtypeOf(ttype(v).getElementType())) < 2)
      throw Unsupported("softmax of an integer tensor without dtype= (eager raises)");
    v = e.floatUnaryInput(makeTensor(v));
    int64_t dim = normDim(asInt(a.get("dim"), "dim"), rank);
    return T(e.b.create<SoftmaxOp>(I.loc(), v, e.b.getI64IntegerAttr(rank == 0 ? 0 : dim)));
  }
  if (op == "layer_norm") {
    std::vector<int64_t> ns = asInts(a.get("normalized_shape"), "normalized_shape");
    auto shape = ttype(v).getShape();
    if (ns.empty() || (int64_t)ns.size() > rank ||
        !std::equal(ns.begin(), ns.end(), shape.end() - ns.size()))
      throw Unsupported("layer_norm normalized_shape does not match the input");
    if (dtypeCategory(dtypeOf(ttype(v).getElementType())) < 2)
      throw Unsupported("layer_norm of ints");
    Value w = a.isNone("weight") ? Value() : requireTensor(a.get("weight"));
    Value bias = a.isNone("bias") ? Value() : requireTensor(a.get("bias"));
    auto elt = ttype(v).getElementType();
    for (Value p : {w, bias})
      if (p &&
          (ttype(p).getShape() != llvm::ArrayRef<int64_t>(ns) || ttype(p).getElementType() != elt))
        throw Unsupported("layer_norm weight/bias shape or dtype mismatch");
    double eps = a.isNone("eps") ? 1e-5 : asDouble(a.get("eps"), "eps");
    return T(e.b.create<LayerNormOp>(I.loc(), ttype(v), v, w, bias,
                                     e.b.getI64IntegerAttr(ns.size()), e.b.getF64FloatAttr(eps)));
  }
  // ---- shapes ----
  auto shape = ttype(v).getShape();
  if (op == "size" || op == "dim" || op == "numel") {
    if (op == "dim")
      return makeConst(PyRef::steal(PyLong_FromLong(rank)));
    if (op == "numel") {
      // A product of symbolic sizes is a SymInt (SymbolicSizes.cpp).
      VarP n = constInt(1);
      for (int64_t d = 0; d < rank; ++d) {
        VarP s = I.sizeVar(v, d);
        VarP p = I.symIntBinary("*", n, s);
        n = p ? p : constInt(asInt(n, "numel") * asInt(s, "numel"));
      }
      return n;
    }
    if (a.isNone("dim"))
      return I.tensorAttribute(x, "shape");
    return I.sizeVar(v, normDim(asInt(a.get("dim"), "dim"), rank));
  }
  if (op == "transpose" || op == "t") {
    if (op == "t" && rank < 2)
      return T(v);
    int64_t d0 = op == "t" ? 0 : normDim(asInt(a.get("dim0"), "dim0"), rank);
    int64_t d1 = op == "t" ? 1 : normDim(asInt(a.get("dim1"), "dim1"), rank);
    std::vector<int64_t> perm;
    for (int64_t i = 0; i < rank; ++i)
      perm.push_back(i);
    std::swap(perm[d0], perm[d1]);
    return T(e.permute(v, perm));
  }
  if (op == "permute") {
    std::vector<int64_t> perm = asInts(a.get("dims"), "dims");
    if ((int64_t)perm.size() != rank)
      throw Unsupported("permute: wrong number of dims");
    std::vector<bool> seen(rank, false);
    for (auto &p : perm) {
      p = normDim(p, rank);
      if (seen[p])
        throw Unsupported("permute: repeated dim");
      seen[p] = true;
    }
    return T(e.permute(v, perm));
  }
  if (op == "reshape" || op == "flatten" || op == "unsqueeze" || op == "squeeze") {
    int64_t numel = 1;
    for (int64_t s : shape)
      numel *= s;
    std::vector<int64_t> ns;
    if (op == "reshape" && (!ttype(v).hasStaticShape() || hasSymInt(a.get("shape")))) {
      ns = symbolicReshape(shape, shapeArg(a.get("shape"), "shape"));
    } else if (op == "reshape") {
      // Shadow SymInts (DynamicPolicy::shadow) stand for their captured values.
      ns = anySymInt(a.get("shape")) ? shapeArg(a.get("shape"), "shape")
                                     : asInts(a.get("shape"), "shape");
      int infer = -1;
      int64_t known = 1;
      for (size_t i = 0; i < ns.size(); ++i) {
        if (ns[i] == -1) {
          if (infer >= 0)
            throw Unsupported("reshape with two -1");
          infer = (int)i;
        } else
          known *= ns[i];
      }
      if (infer >= 0) {
        if (known == 0 || numel % known)
          throw Unsupported("reshape: invalid shape");
        ns[infer] = numel / known;
      }
      int64_t total = 1;
      for (int64_t s : ns)
        total *= s;
      if (total != numel)
        throw Unsupported("reshape: element count mismatch");
    } else if (op == "flatten") {
      if (rank == 0)
        return T(e.reshape(v, {1}));
      int64_t s = normDim(a.isNone("start_dim") ? 0 : asInt(a.get("start_dim"), "start_dim"), rank);
      int64_t en = normDim(a.isNone("end_dim") ? -1 : asInt(a.get("end_dim"), "end_dim"), rank);
      if (s > en)
        throw Unsupported("flatten: start_dim > end_dim");
      int64_t m = 1;
      for (int64_t i = 0; i < rank; ++i) {
        if (i < s || i > en)
          ns.push_back(shape[i]);
        else {
          m = mlir::ShapedType::isDynamic(m) || mlir::ShapedType::isDynamic(shape[i])
                  ? mlir::ShapedType::kDynamic
                  : m * shape[i];
          if (i == en)
            ns.push_back(m);
        }
      }
    } else if (op == "unsqueeze") {
      int64_t d = asInt(a.get("dim"), "dim");
      if (d < -(rank + 1) || d > rank)
        throw Unsupported("unsqueeze: dim out of range");
      if (d < 0)
        d += rank + 1;
      ns.assign(shape.begin(), shape.end());
      ns.insert(ns.begin() + d, 1);
    } else {
      std::vector<int64_t> dims;
      if (!a.isNone("dim"))
        for (auto d : asInts(a.get("dim"), "dim"))
          dims.push_back(normDim(d, rank));
      for (int64_t i = 0; i < rank; ++i) {
        bool drop = shape[i] == 1 && (dims.empty() || std::count(dims.begin(), dims.end(), i));
        if (!drop)
          ns.push_back(shape[i]);
      }
    }
    return T(e.reshape(v, ns));
  }
  if (op == "expand") {
    if (VarP r = I.symbolicExpand(x, a.get("size")))
      return r;
    std::vector<int64_t> sizes = asInts(a.get("size"), "size");
    if ((int64_t)sizes.size() < rank)
      throw Unsupported("expand: too few sizes");
    size_t off = sizes.size() - rank;
    for (size_t i = 0; i < sizes.size(); ++i)
      if (sizes[i] == -1) {
        if (i < off)
          throw Unsupported("expand: -1 in a new leading dim");
        sizes[i] = shape[i - off];
      }
    if (!mlir::kiln::isBroadcastableTo(shape, sizes))
      throw Unsupported("expand: invalid sizes");
    if (llvm::ArrayRef<int64_t>(sizes) == shape)
      return T(v);
    auto type = RankedTensorType::get(sizes, ttype(v).getElementType());
    return T(e.b.create<BroadcastToOp>(I.loc(), type, v));
  }
  throw Unsupported("op " + op + " is not mapped");
}

} // namespace

namespace {

/// The `operator` module's functions (FX code and user code call them by
/// name): function → the Python operator they implement.
const std::unordered_map<PyObject *, std::string> &operatorTable() {
  static std::unordered_map<PyObject *, std::string> table = [] {
    std::unordered_map<PyObject *, std::string> t;
    PyRef m = PyRef::steal(PyImport_ImportModule("operator"));
    for (auto [name, sym] :
         std::initializer_list<std::pair<const char *, const char *>>{{"add", "+"},
                                                                      {"sub", "-"},
                                                                      {"mul", "*"},
                                                                      {"truediv", "/"},
                                                                      {"pow", "**"},
                                                                      {"matmul", "@"},
                                                                      {"neg", "neg"}}) {
      PyObject *f = m ? PyObject_GetAttrString(m.get(), name) : nullptr; // kept alive
      if (f)
        t[f] = sym;
    }
    PyErr_Clear();
    return t;
  }();
  return table;
}

} // namespace

VarP Interpreter::callTorchFunction(PyObject *callee, std::vector<VarP> &args,
                                    std::map<std::string, VarP> &kwargs) {
  auto &ops = operatorTable();
  if (auto op = ops.find(callee); op != ops.end()) {
    size_t arity = op->second == "neg" ? 1 : 2;
    if (args.size() != arity || !kwargs.empty())
      throw Unsupported("operator " + op->second + " takes " + std::to_string(arity) +
                        " positional arguments");
    if (arity == 2) {
      if (VarP t = tensorBinary(op->second, args[0], args[1]))
        return t;
    } else if (args[0]->isTensor()) {
      std::vector<VarP> none;
      std::map<std::string, VarP> nokw;
      return callTensorMethod(args[0], "neg", none, nokw);
    }
    // Python numbers (or other constants): evaluate the operator itself.
    PyRef tuple = PyRef::steal(PyTuple_New(arity));
    for (size_t i = 0; i < arity; ++i) {
      PyObject *c = constObj(args[i], "operand");
      Py_INCREF(c);
      PyTuple_SET_ITEM(tuple.get(), i, c);
    }
    PyRef r = PyRef::steal(PyObject_Call(callee, tuple.get(), nullptr));
    if (!r) {
      PyErr_Clear();
      throw Unsupported("operator " + op->second + " raised on constants");
    }
    return makeConst(r);
  }
  auto &table = opTable().functions;
  auto it = table.find(callee);
  if (it == table.end())
    return nullptr;
  // A mapped op whose handler refuses these arguments runs through torch.
  return withFallback(callee, "", args, kwargs, [&] {
    Args a = bind(it->second, args, kwargs);
    return applyTracked(*this, it->second.op, a);
  });
}

VarP Interpreter::callTensorMethod(const VarP &self, const std::string &name,
                                   std::vector<VarP> &args, std::map<std::string, VarP> &kwargs) {
  auto &table = opTable().methods;
  auto it = table.find(name);
  if (it == table.end() && name.size() > 1 && name.back() == '_') {
    // In-place form of a mapped method (`y.add_(b)`, `y.relu_()`).
    auto base = table.find(name.substr(0, name.size() - 1));
    if (base != table.end() && !isViewLike(base->second.op) && base->second.op != "size" &&
        base->second.op != "dim" && base->second.op != "numel") {
      args.insert(args.begin(), self);
      Args a = bind(base->second, args, kwargs);
      return applyInPlace(*this, base->second.op, a, "Tensor." + name);
    }
  }
  args.insert(args.begin(), self);
  if (it == table.end()) { // an unmapped method: through torch, if it can
    Unsupported unmapped("Tensor." + name + " is not supported yet" +
                         (name.back() == '_' ? " (in-place method)" : ""));
    if (VarP r = torchFallback(nullptr, name, args, kwargs, &unmapped))
      return r;
    throw unmapped;
  }
  return withFallback(nullptr, name, args, kwargs, [&] {
    Args a = bind(it->second, args, kwargs);
    return applyTracked(*this, it->second.op, a);
  });
}

} // namespace kiln
