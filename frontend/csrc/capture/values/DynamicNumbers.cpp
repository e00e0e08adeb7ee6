//===- DynamicNumbers.cpp - int and float arguments read as graph values ---===//
// SPDX-License-Identifier: Apache-2.0
//
// dynamic=None (Dynamo's automatic dynamic ints and unspecialized floats):
// an int or float argument of the frame whose value changed between calls
// (hook/CodeCache.h markChangedNumbers) is read by later captures as a
// graph value instead of a constant guarded by value.
//
// An int becomes a SymInt over a symbolic size. A tensor dim of the same
// captured value shares its symbol (duck sizing; the entry checks they stay
// equal). The symbol reaches the graph through a carrier input
// (GraphInput::Kind::IntCarrier): an empty `(n, 0)` int64 tensor made per
// call from the int, so the entry binds, checks and describes it as it does
// a tensor dim (Entry.cpp), and the graph reads `n` from its dim 0
// (symTrueLine: slices, factories); uses of the value (`x * n`, arange
// bounds) read a second input, a 0-d int64 tensor holding `n` (symbolValue:
// O(1) where the line holds n elements). Every use a symbolic size supports
// works (arithmetic, guarded comparisons, tensor operands, factories,
// slices, returning it); any other use throws Unsupported and the frame is
// compiled again with the int static (hook/CompileDriver.cpp), and the
// shadow static capture catches a graph that depended on the value. Values
// below 2 (and ones equal to a static size of the graph) stay static, as
// tensor dims do.
//
// A float becomes a Scalar (a Python number computed in the graph, as a
// `.item()` is: ops/Scalars.cpp) over a 0-d float64 value input: arithmetic
// and tensor operands stay in the graph; a use that needs the value (a
// branch, an op's constant argument) throws, and the frame is captured
// again with the float constant (Capture::readDynamicFloat).
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

#include "capture/values/DynamicShapes.h"

#include "mlir/IR/BuiltinTypes.h"

namespace kiln {

namespace {
/// The 0-d `elt` graph input holding the number at `source` per call
/// (GraphInput::Kind::NumberValue), made on first use and kept in `made`.
mlir::Value numberInput(Capture &out, std::vector<PyRef> &objects, mlir::func::FuncOp func,
                        mlir::Location loc, std::map<int, mlir::Value> &made, int source,
                        mlir::Type elt) {
  mlir::Value &value = made[source];
  if (!value) {
    GraphInput in;
    in.kind = GraphInput::Kind::NumberValue;
    in.source = source;
    out.inputs.push_back(in);
    objects.push_back(PyRef::borrow(Py_None));
    value = func.getBody().front().addArgument(mlir::RankedTensorType::get({}, elt), loc);
  }
  return value;
}
} // namespace

VarP Interpreter::dynamicNumberRead(PyObject *value, int source) {
  const DynamicPolicy &policy = out_.dynamic;
  bool isFloat = PyFloat_CheckExact(value);
  if (source < 0 || policy.mode != DynamicPolicy::Mode::Auto || policy.forceStatic ||
      (!PyLong_CheckExact(value) && !isFloat))
    return nullptr;
  if (auto it = intOfSource_.find(source); it != intOfSource_.end())
    return it->second;
  const Source &src = out_.sources[source];
  if (src.kind != Source::Kind::Local || src.parent != -1)
    return nullptr; // an argument of the frame only (markChangedNumbers)
  std::string desc = out_.sources.describe(source, policy.localNames);
  if (!policy.autoDynamic.count(desc))
    return nullptr; // not changed yet
  if (isFloat) {
    out_.dynamicNumbers.push_back(desc);
    guardType(source, value); // exactly float
    out_.readDynamicFloat = true;
    VarP v = makeScalar(
        numberInput(out_, inputObjects_, func_, loc_, intValueOfSource_, source, b_.getF64Type()),
        reinterpret_cast<PyObject *>(&PyFloat_Type));
    intOfSource_[source] = v;
    return v;
  }
  int overflow = 0;
  int64_t n = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (overflow || PyErr_Occurred()) {
    PyErr_Clear();
    return nullptr;
  }
  if (n < 2 || policy.staticSizes.count(n))
    return nullptr;
  out_.dynamicNumbers.push_back(desc);
  guardType(source, value); // exactly int (a bool or an int subclass recompiles)
  GraphInput in;
  in.kind = GraphInput::Kind::IntCarrier;
  in.source = source;
  int input = (int)out_.inputs.size();
  out_.inputs.push_back(in);
  inputObjects_.push_back(PyRef::borrow(Py_None));
  // The shadow static capture sees the same carrier with its static size.
  int64_t rows = policy.shadow ? n : mlir::ShapedType::kDynamic;
  func_.getBody().front().addArgument(mlir::RankedTensorType::get({rows, 0}, b_.getI64Type()),
                                      loc_);
  addSymbolicDims(out_, input, {n, 0}, {true, false});
  auto v = std::make_shared<Var>();
  v->kind = Var::Kind::SymInt;
  v->sym = symExpr(symbolOfDim(func_.getArgument(input), 0));
  v->captured = n;
  v->staticSym = policy.shadow;
  intOfSource_[source] = v;
  return v;
}

mlir::Value Interpreter::symbolValue(int sym) {
  // An int argument's symbol: its value, passed per call in a 0-d tensor
  // (O(1), where the line below holds n elements).
  for (auto [input, dim] : out_.symbols[sym].dims)
    if (out_.inputs[input].kind == GraphInput::Kind::IntCarrier)
      return numberInput(out_, inputObjects_, func_, loc_, intValueOfSource_,
                         out_.inputs[input].source, b_.getI64Type());
  auto leaf = std::make_shared<Var>();
  leaf->kind = Var::Kind::SymInt;
  leaf->sym = symExpr(sym);
  Emit em(*this);
  mlir::Value line = em.cast(symTrueLine(leaf), DType::I64);
  return em.reduce<mlir::kiln::SumOp>(line, {0}, false);
}

bool Interpreter::isIntCarrier(mlir::Value v) {
  auto arg = llvm::dyn_cast<mlir::BlockArgument>(v);
  return arg && arg.getOwner() == &func_.getBody().front() &&
         arg.getArgNumber() < out_.inputs.size() &&
         out_.inputs[arg.getArgNumber()].kind == GraphInput::Kind::IntCarrier;
}

} // namespace kiln
