//===- SymbolicInts.cpp - int arguments read as symbolic sizes ------------===//
// SPDX-License-Identifier: Apache-2.0
//
// dynamic=None (Dynamo's automatic dynamic ints): an int argument of the
// frame whose value changed between calls (hook/CodeCache.h
// markChangedInts) is read by later captures as a SymInt over a symbolic
// size, instead of a constant guarded by value. A tensor dim of the same
// captured value shares its symbol (duck sizing; the entry checks they
// stay equal). The symbol reaches the graph through a carrier input
// (GraphInput::Kind::IntCarrier): an empty `(n, 0)` int64 tensor made per
// call from the int, so the entry binds, checks and describes it as it
// does a tensor dim (Entry.cpp), and the graph reads `n` from its dim 0
// (symTrueLine: slices, factories); uses of the value (`x * n`, arange
// bounds) read a second input, a 0-d int64 tensor holding `n` (symbolValue:
// O(1) where the line holds n elements). Every use a symbolic size
// supports works (arithmetic,
// guarded comparisons, tensor operands, factories, slices, returning it);
// any other use throws Unsupported and the frame is compiled again with
// the int static (hook/CompileDriver.cpp), and the shadow static capture
// catches a graph that depended on the value. Values below 2 (and ones
// equal to a static size of the graph) stay static, as tensor dims do.
//===----------------------------------------------------------------------===//
#include "capture/ops/TorchOpsImpl.h"

#include "capture/values/DynamicShapes.h"

#include "mlir/IR/BuiltinTypes.h"

namespace kiln {

VarP Interpreter::symbolicIntRead(PyObject *value, int source) {
  const DynamicPolicy &policy = out_.dynamic;
  if (source < 0 || policy.mode != DynamicPolicy::Mode::Auto || policy.forceStatic ||
      !PyLong_CheckExact(value))
    return nullptr;
  if (auto it = intOfSource_.find(source); it != intOfSource_.end())
    return it->second;
  const Source &src = out_.sources[source];
  if (src.kind != Source::Kind::Local || src.parent != -1)
    return nullptr; // an argument of the frame only (markChangedInts)
  int overflow = 0;
  int64_t n = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (overflow || PyErr_Occurred()) {
    PyErr_Clear();
    return nullptr;
  }
  if (n < 2 || policy.staticSizes.count(n) ||
      !policy.autoDynamic.count(out_.sources.describe(source, policy.localNames)))
    return nullptr;
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
  int sym = symbolOfDim(func_.getArgument(input), 0);
  auto v = std::make_shared<Var>();
  v->kind = Var::Kind::SymInt;
  auto e = std::make_shared<SizeExpr>();
  e->op = SizeExpr::Op::Sym;
  e->value = sym;
  v->sym = e;
  v->captured = n;
  v->staticSym = policy.shadow;
  intOfSource_[source] = v;
  return v;
}

mlir::Value Interpreter::symbolValue(int sym) {
  // An int argument's symbol: its value, passed per call in a 0-d tensor
  // (O(1), where the line below holds n elements).
  for (auto [input, dim] : out_.symbols[sym].dims) {
    const GraphInput &carrier = out_.inputs[input];
    if (carrier.kind != GraphInput::Kind::IntCarrier)
      continue;
    mlir::Value &value = intValueOfSource_[carrier.source];
    if (!value) {
      GraphInput in;
      in.kind = GraphInput::Kind::IntValue;
      in.source = carrier.source;
      out_.inputs.push_back(in);
      inputObjects_.push_back(PyRef::borrow(Py_None));
      value = func_.getBody().front().addArgument(mlir::RankedTensorType::get({}, b_.getI64Type()),
                                                  loc_);
    }
    return value;
  }
  auto leaf = std::make_shared<Var>();
  leaf->kind = Var::Kind::SymInt;
  auto e = std::make_shared<SizeExpr>();
  e->op = SizeExpr::Op::Sym;
  e->value = sym;
  leaf->sym = e;
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
