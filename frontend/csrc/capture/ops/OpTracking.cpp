//===- OpTracking.cpp - applying mapped ops with aliasing facts -----------===//
// SPDX-License-Identifier: Apache-2.0
//
// Every mapped op runs through applyTracked: operands batched by torch.vmap
// go to Vmap.cpp, composite ops run their own tracked steps, `inplace=True`
// updates the input's Var, and otherwise the result is marked fresh (a new
// tensor the graph computed) or a view of its input; a view of a graph input
// records the torch calls that replay it, so a returned view aliases its
// input as in eager.
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"
#include "capture/ops/AutocastPolicy.h"
#include "capture/ops/StopGradient.h"
#include "capture/values/ViewSteps.h"

#include "ir/KilnOps.h"

namespace kiln {

namespace {

/// The dims of `v` that are symbolic (`?`, or tracked as a symbol in the
/// shadow static capture).
int symbolicDims(Interpreter &I, mlir::Value v) {
  int n = 0;
  for (int64_t d = 0; d < ttype(v).getRank(); ++d)
    n += ttype(v).isDynamicDim(d) || I.symbolOfDim(v, d) != -1;
  return n;
}

/// Records that `r` (made by view-like `op` from `in`) views a graph input
/// or a tensor the graph computed, with the torch calls that rebuild it
/// from that base.
void recordView(Interpreter &I, const VarP &in, const VarP &r, const OpDef &op) {
  auto ints = [](llvm::ArrayRef<int64_t> v) {
    PyRef t = PyRef::steal(PyTuple_New(v.size()));
    // A symbolic size replays as -1 (reshape infers it, expand keeps it).
    for (size_t i = 0; i < v.size(); ++i)
      PyTuple_SET_ITEM(t.get(), i,
                       PyLong_FromLongLong(mlir::ShapedType::isDynamic(v[i]) ? -1 : v[i]));
    return PyRef::steal(PyTuple_Pack(1, t.get()));
  };
  mlir::Operation *def = r->value.getDefiningOp();
  if (op.is(ReplaysAsContiguous)) {
    recordViewStep(in, r, {"contiguous", PyRef::steal(PyTuple_New(0))});
  } else if (op.is(Detaches)) {
    recordViewStep(in, r, {"detach", PyRef::steal(PyTuple_New(0))});
  } else if (r->value == in->value) {
    // A no-op view (same shape/dtype; casts returned the input itself
    // before): eager returns a new view object of the input, `t[...]`
    // (valid for any number of symbolic dims, unlike view(-1, -1)).
    recordViewStep(in, r, {"__getitem__", PyRef::steal(PyTuple_Pack(1, Py_Ellipsis))});
  } else if (auto p = llvm::dyn_cast_or_null<mlir::kiln::PermuteOp>(def)) {
    recordViewStep(in, r, {"permute", ints(p.getDims())});
  } else if (llvm::isa_and_nonnull<mlir::kiln::ReshapeOp>(def) && symbolicDims(I, r->value) > 1) {
    // reshape(-1, -1): only one size can be inferred; returned as a copy
    // (symbolic dims counted, so the shadow static capture does the same).
    return;
  } else if (llvm::isa_and_nonnull<mlir::kiln::ReshapeOp>(def) ||
             llvm::isa_and_nonnull<mlir::kiln::BroadcastToOp>(def)) {
    recordViewStep(in, r,
                   {llvm::isa<mlir::kiln::ReshapeOp>(def) ? "reshape" : "expand",
                    ints(ttype(r->value).getShape())});
  } else if (auto sl = llvm::dyn_cast_or_null<mlir::kiln::SliceOp>(def)) {
    PyRef index = PyRef::steal(PyTuple_New(sl.getStart().size()));
    for (size_t i = 0; i < sl.getStart().size(); ++i) {
      PyRef b = PyRef::steal(PyLong_FromLongLong(sl.getStart()[i]));
      // end -1: to the end (kiln.slice), None in Python; an end < -1 is
      // counted from one past the end (sliceBounds), Python's from the end.
      int64_t end = sl.getEnd()[i];
      PyRef en = end == -1 ? PyRef::borrow(Py_None)
                           : PyRef::steal(PyLong_FromLongLong(end < 0 ? end + 1 : end));
      PyRef st = PyRef::steal(PyLong_FromLongLong(sl.getStep()[i]));
      PyTuple_SET_ITEM(index.get(), i, PySlice_New(b.get(), en.get(), st.get()));
    }
    recordViewStep(in, r, {"__getitem__", PyRef::steal(PyTuple_Pack(1, index.get()))});
  } else if (llvm::isa_and_nonnull<mlir::kiln::CastOp>(def)) {
    PyObject *dt = dtypeObject(dtypeOf(ttype(r->value).getElementType()));
    recordViewStep(in, r, {"to", PyRef::steal(PyTuple_Pack(1, dt))});
  } // else not a replayable view: returned as a copy
}

} // namespace

mlir::Value stopGradient(Interpreter &I, mlir::Value v) {
  auto type = llvm::dyn_cast<mlir::RankedTensorType>(v.getType());
  if (!type || !llvm::isa<mlir::FloatType>(type.getElementType()))
    return v;
  auto cast = I.builder().create<mlir::kiln::CastOp>(I.loc(), type, v);
  cast->setAttr("kiln.no_grad", mlir::UnitAttr::get(cast->getContext()));
  I.markNoGrad(cast.getResult()); // eager's result has no requires_grad (GradFlow.cpp)
  return cast.getResult();
}

mlir::Value gradThrough(Interpreter &I, mlir::Value v) {
  auto cast = I.builder().create<mlir::kiln::CastOp>(I.loc(), v.getType(), v);
  cast->setAttr(kGradThroughAttr, mlir::UnitAttr::get(cast->getContext()));
  return cast.getResult();
}

void recordViewStep(const VarP &in, const VarP &r, Var::ViewStep step) {
  int base = in->viewInput;
  mlir::Value root = base < 0 ? in->viewRoot : mlir::Value();
  if (base < 0 && !root) {
    // The caller's tensor itself (its value may be an in-place update's),
    // or a tensor the graph computed.
    base = in->inputIndex;
    if (base < 0 && in->fresh)
      root = in->value;
  }
  if (base < 0 && !root)
    return;
  r->viewSteps = in->viewSteps;
  r->viewSteps.push_back(std::move(step));
  r->viewInput = base;
  r->viewRoot = base < 0 ? root : mlir::Value();
}

VarP applyInPlace(Interpreter &I, const OpDef &op, Args &a, const std::string &what) {
  VarP in = a.get("input");
  if (!in || !in->isTensor())
    throw Unsupported(what + " expects a tensor");
  if (in->vmapLevels > 0)
    throw Unsupported(what + " on a tensor batched by torch.vmap is not supported");
  a.named.erase("inplace");
  VarP r = op.handler(I, op.name, a);
  if (r && r->isTensor() && r->value == in->value)
    return in; // a no-op (e.g. dropout in eval mode)
  if (op.is(View))
    throw Unsupported(BreakCategory::SideEffect, what + ": an in-place view op is not supported");
  if (!r || !r->isTensor())
    throw Unsupported(what + " does not compute a tensor");
  return I.assignInPlace(in, r->value, what); // InPlace.cpp
}

/// Symbolic size expression `e` as a 0-d int64 value of the graph (a
/// Python int for a constant): each symbol a sum over its line
/// (Interpreter::symTrueLine, read from an input at run time), combined
/// with Python's integer arithmetic (a constant divisor stays a number).
VarP symbolicSizeValue(Interpreter &I, const SizeExpr &e) {
  using Op = SizeExpr::Op;
  if (e.op == Op::Const)
    return constInt(e.value);
  if (e.op == Op::Sym)
    return T(I.symbolValue((int)e.value));
  static const std::map<Op, const char *> ops = {{Op::Add, "add"},
                                                 {Op::Sub, "sub"},
                                                 {Op::Mul, "mul"},
                                                 {Op::FloorDiv, "floor_divide"},
                                                 {Op::Mod, "remainder"}};
  VarP l = symbolicSizeValue(I, *e.lhs), r = symbolicSizeValue(I, *e.rhs);
  if (!l->isTensor()) { // c + s, c * s, c - s: the tensor first
    if (e.op == Op::Add || e.op == Op::Mul)
      std::swap(l, r);
    else if (e.op == Op::Sub)
      return callOp(I, "add", {{"input", callOp(I, "neg", {{"input", r}})}, {"other", l}});
    else
      l = T(Emit(I).num(e.lhs->value, DType::I64));
  }
  return callOp(I, ops.at(e.op), {{"input", l}, {"other", r}});
}

/// An elementwise op with a tensor operand and a symbolic size operand
/// (`x * x.shape[1]`, `x.sum(1) / n`): the size becomes a Python int
/// Scalar computed in the graph, so the graph stays symbolic (the shadow
/// static capture builds the same ops). Other ops keep their SymInts.
void symbolicSizesAsScalars(Interpreter &I, const OpDef &op, Args &a) {
  if (op.vmap != VmapRule::Elementwise)
    return;
  // Only the operands (`x * s`, `s - x`); sizes (`expand(b, s)`) stay SymInts.
  auto operand = [](const std::string &k) { return k == "input" || k == "other"; };
  bool tensor = false, sym = false;
  for (auto &[k, v] : a.named) {
    tensor |= v && v->isTensor();
    sym |= v && operand(k) && v->kind == Var::Kind::SymInt && v->sym;
  }
  if (!tensor || !sym)
    return;
  for (auto &[k, v] : a.named)
    if (v && operand(k) && v->kind == Var::Kind::SymInt && v->sym)
      v = makeScalar(symbolicSizeValue(I, *v->sym)->value,
                     reinterpret_cast<PyObject *>(&PyLong_Type));
}

VarP applyTracked(Interpreter &I, const OpDef &op, Args &a) {
  AutocastScope autocast(I, op, a); // CPU autocast's casts of the arguments (AutocastPolicy.h)
  symbolicSizesAsScalars(I, op, a);
  if (VarP r = I.vmapApply(op.name, a)) // an operand batched by torch.vmap (Vmap.cpp)
    return r;
  if (op.is(Composite))
    return op.handler(I, op.name, a);
  VarP inplace = a.get("inplace");
  if (inplace && inplace->isConst() && PyObject_IsTrue(inplace->obj.get()) == 1)
    return applyInPlace(I, op, a, op.name + "(inplace=True)");
  VarP r = op.handler(I, op.name, a);
  VarP in = a.get("input");
  bool inputTensor = in && in->isTensor();
  // `detach()`: the same value behind a stop-gradient (StopGradient.h), a
  // view of its input all the same (recordView replays "detach").
  if (op.is(Detaches) && inputTensor && r && r->isTensor() && r != in && r->value == in->value)
    r->value = stopGradient(I, in->value);
  if (!r || !r->isTensor())
    return r;
  if (op.is(View)) {
    // A cast to the tensor's own dtype returns the tensor itself in eager.
    if (inputTensor && r->value == in->value && op.is(SelfIfNoOp))
      return in;
    if (inputTensor) {
      recordView(I, in, r, op);
      // A step that copies in eager (x.t().contiguous(), a reshape of a
      // strided input): a new tensor, not a view (ViewSteps.h).
      bool mayCopy =
          r->viewInput >= 0 && r != in && !r->viewSteps.empty() &&
          (r->viewSteps.back().first == "contiguous" || r->viewSteps.back().first == "reshape");
      if (mayCopy)
        if (PyRef layout = I.layoutRecipe(in); layout && viewStepsCopy(layout.get(), *r)) {
          if (op.name == "view") // the eager frame raises it
            throw Unsupported(BreakCategory::UserError,
                              "Tensor.view of an input whose strides do not allow that shape "
                              "(eager: \"view size is not compatible with input tensor's size "
                              "and stride\"; use .reshape(...))");
          r->viewSteps.clear();
          r->viewInput = -1;
          r->fresh = r->copied = r->contiguousCopy = true;
          return r;
        }
      in->viewed = true;
      if (r->viewInput < 0 && !r->viewRoot && r->value != in->value)
        in->opaqueViews = true;
      if (r != in) {
        r->viewBase = in;
        in->views.push_back(r);
        r->selfIfContiguous = op.is(ReplaysAsContiguous);
      }
    }
    r->fresh = false;
  } else if (op.is(Copy) || !(inputTensor && in->value == r->value)) {
    r->fresh = true;
    if (op.is(KeepsMemoryFormat) && inputTensor)
      I.keepsLayout(r->value, in->value, /*exact=*/false);
  }
  return r;
}

VarP applyTracked(Interpreter &I, const std::string &op, Args &a) {
  const OpDef *def = opRegistry().find(op);
  if (!def)
    throw Unsupported("op " + op + " is not mapped");
  return applyTracked(I, *def, a);
}

VarP callOp(Interpreter &I, const std::string &op,
            std::initializer_list<std::pair<const char *, VarP>> args) {
  Args a;
  for (auto &[k, v] : args)
    if (v)
      a.named[k] = v;
  return applyTracked(I, op, a);
}

} // namespace kiln
