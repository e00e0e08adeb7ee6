//===- OpRegistry.h - the one torch → kiln op registry ------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The single mechanism that maps torch to kiln. Each category file
// (CoreElementwise.cpp, TorchOpsNN.cpp, ...) defines ops: a kiln-level op
// name, its handler, its argument schema and traits, followed by the torch
// names that reach it (torch.X functions, F.* functions, Tensor methods,
// Python operators), each written once, next to the handler. Dispatch looks
// callables up by identity and methods and operators by name in hash maps;
// the interpreter never compares op names in a chain. The coverage command
// (`python -m kiln.coverage`, through `kiln._C.mapped_ops()`) lists the
// same registry, including any name registered twice (a test keeps that
// list empty).
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTEND_CAPTURE_OPS_OPREGISTRY_H
#define KILN_FRONTEND_CAPTURE_OPS_OPREGISTRY_H

#include "capture/interp/Interp.h"

#include <initializer_list>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln {

/// Bound arguments of one op call: by parameter name (varargs gathered
/// into one tuple under their name).
struct Args {
  std::map<std::string, VarP> named;
  /// The argument `n`, or nullptr when it was not passed.
  VarP get(const std::string &n) const {
    auto it = named.find(n);
    return it == named.end() ? nullptr : it->second;
  }
  /// Whether `n` is absent or the constant None.
  bool isNone(const std::string &n) const {
    VarP v = get(n);
    return !v || (v->isConst() && v->obj.get() == Py_None);
  }
};

/// A torch signature's parameter names in order; a leading `*` marks
/// varargs (the remaining positionals, or one sequence). Defaults stay with
/// the handler, which reads absent arguments as None.
struct Params {
  std::vector<std::string> names;
  Params() = default;
  /// Write `Params{"input", "dim"}` at a binding: a one-name braced list
  /// would otherwise select the overload taking a torch name.
  Params(std::initializer_list<const char *> list) : names(list.begin(), list.end()) {}
  explicit Params(std::vector<std::string> list) : names(std::move(list)) {}
  /// These parameters followed by `more`.
  Params with(const Params &more) const;
};

/// Builds the graph of mapped op `op` (its kiln-level name, for messages)
/// from its bound arguments; Unsupported when it cannot be exact.
using OpHandler = VarP (*)(Interpreter &I, const std::string &op, Args &a);

/// What tracking (OpTracking.cpp) and the coverage report need to know of an op.
enum OpTrait : unsigned {
  NoTraits = 0,
  /// Eager's result may alias the input (views, casts and no-ops that
  /// return the input): never updated in place, no `name_` method form, and
  /// a returned view of a graph input replays as a view.
  View = 1u << 0,
  /// Returns a Python value, not a tensor (size, dim, numel): no `name_` form.
  Query = 1u << 1,
  /// The result is a new tensor even when it is the input's graph value (clone).
  Copy = 1u << 2,
  /// Built from tracked primitive steps (indexing, cat, embedding ...): the
  /// handler runs as is, without the in-place and view bookkeeping.
  Composite = 1u << 3,
  /// Returns its input as is (contiguous, detach): a returned view of a
  /// graph input replays as `.contiguous()`.
  ReplaysAsContiguous = 1u << 4,
  /// Where the result is the input's graph value, eager returns the input
  /// object itself (`x.float() is x` for a float `x`): the capture hands
  /// back the input's Var (OpTracking.cpp).
  SelfIfNoOp = 1u << 5,
  /// `detach()`: a returned view of a graph input replays as `.detach()`.
  Detaches = 1u << 6,
  /// Eager's result takes the memory format its input suggests (a
  /// channels-last input, a channels-last result) where the graph's ops do
  /// not show it (values/EagerLayouts.cpp).
  KeepsMemoryFormat = 1u << 7,
};

/// How an op applies to operands batched by torch.vmap (Vmap.cpp).
enum class VmapRule {
  NotBatched,  ///< a batched operand is Unsupported
  Elementwise, ///< per-example operands broadcast; the result is batched
  Cast,        ///< one batched operand, cast elementwise
  Factory,     ///< reads only the dtype/device of its input (new_zeros ...)
  Index,       ///< x[i] of an unbatched x by 0-d per-example integer tensors
};

/// One kiln-level op: a handler with its default schema and traits.
struct OpDef {
  std::string name;
  OpHandler handler = nullptr;
  Params params;
  unsigned traits = NoTraits;
  VmapRule vmap = VmapRule::NotBatched;

  /// Whether the op has trait `t`.
  bool is(OpTrait t) const { return (traits & t) != 0; }
  /// Whether a Tensor method of this op has an in-place `name_` form.
  bool hasInPlaceForm() const { return !is(View) && !is(Query); }
};

/// A torch name bound to an op, with the parameters of that name's signature.
struct OpBinding {
  const OpDef *op = nullptr;
  Params params;
};

/// A function of Python's `operator` module mapped to a tensor operator:
/// binary ones by their symbol, unary ones by their Tensor method.
struct OperatorFunction {
  std::string symbol; ///< "+", "@" ... (binary) or the method name (unary)
  int arity = 2;
};

/// The registry of every mapped op and torch name; built once, on first use.
class OpRegistry {
public:
  /// Attaches torch names to one op (returned by OpRegistry::op). A name
  /// argument of nullptr means the op's own name; a Params argument
  /// replaces the op's schema for that name.
  class Entry {
  public:
    Entry(OpRegistry &registry, const OpDef &op) : registry(registry), def(op) {}
    /// `torch.<name>`.
    Entry &torch(const char *name = nullptr) { return function("torch", name); }
    Entry &torch(Params params) { return function("torch", nullptr, std::move(params)); }
    Entry &torch(const char *name, Params params) {
      return function("torch", name, std::move(params));
    }
    /// `torch.nn.functional.<name>`.
    Entry &functional(const char *name = nullptr) { return function(kFunctional, name); }
    Entry &functional(Params params) { return function(kFunctional, nullptr, std::move(params)); }
    Entry &functional(const char *name, Params params) {
      return function(kFunctional, name, std::move(params));
    }
    /// `<module>.<name>` (skipped when this torch lacks it).
    Entry &function(const char *module, const char *name, Params params);
    Entry &function(const char *module, const char *name) {
      return function(module, name, def.params);
    }
    /// `Tensor.<name>` (its first parameter is self).
    Entry &method(const char *name = nullptr) { return method(name, def.params); }
    Entry &method(Params params) { return method(nullptr, std::move(params)); }
    Entry &method(const char *name, Params params);
    /// `torch.<name>` and `Tensor.<name>`, both with the op's schema.
    Entry &torchAndMethod(const char *name = nullptr) { return torch(name).method(name); }
    /// The binary Python operator `symbol` ("+", "==" ...; `x += y` too)
    /// and, when given, the `operator` module function that computes it.
    Entry &binaryOperator(const char *symbol, const char *operatorFunction = nullptr);
    /// The unary `operator` module function `operatorFunction` (operator.neg).
    Entry &unaryOperator(const char *operatorFunction);

  private:
    static constexpr const char *kFunctional = "torch.nn.functional";
    const char *nameOr(const char *name) const { return name ? name : def.name.c_str(); }
    OpRegistry &registry;
    const OpDef &def;
  };

  /// Defines op `name`; its torch names follow on the returned Entry.
  Entry op(const char *name, OpHandler handler, Params params, unsigned traits = NoTraits,
           VmapRule vmap = VmapRule::NotBatched);

  /// A registered torch callable.
  struct FunctionName {
    std::string module, name;
    OpBinding binding;
  };
  /// A registered Tensor method.
  struct MethodName {
    std::string name;
    OpBinding binding;
  };

  /// The op named `name` (nullptr if none).
  const OpDef *find(const std::string &name) const;
  /// The binding of torch callable `callee` (by identity; nullptr if unmapped).
  const OpBinding *function(PyObject *callee) const;
  /// The binding of Tensor method `name` (nullptr if unmapped).
  const OpBinding *method(const std::string &name) const;
  /// The op of binary operator `symbol` (nullptr if unmapped).
  const OpDef *binaryOperator(const std::string &symbol) const;
  /// The tensor operator `callee` (an `operator` module function) computes.
  const OperatorFunction *operatorFunction(PyObject *callee) const;

  /// Every torch callable, in registration order.
  const std::vector<FunctionName> &functionNames() const { return functionList; }
  /// Every Tensor method, in registration order.
  const std::vector<MethodName> &methodNames() const { return methodList; }
  /// Names registered more than once ("torch.add", "Tensor.add", "op add",
  /// "operator +"): empty in a consistent registry.
  const std::vector<std::string> &duplicates() const { return duplicateNames; }

private:
  void noteDuplicate(bool isNew, const std::string &what);

  std::unordered_map<std::string, OpDef> ops; ///< node-based: OpDef pointers stay valid
  std::vector<FunctionName> functionList;
  std::unordered_map<PyObject *, OpBinding> functions;   ///< keys: callables kept alive
  std::unordered_map<std::string, size_t> functionIndex; ///< "module.name" → functionList
  std::vector<MethodName> methodList;
  std::unordered_map<std::string, OpBinding> methods;
  std::unordered_map<std::string, const OpDef *> binaryOperators;
  std::unordered_map<PyObject *, OperatorFunction> operatorFunctions; ///< keys kept alive
  std::vector<std::string> duplicateNames;
};

/// The registry, built on first use (imports torch's modules).
const OpRegistry &opRegistry();

/// Binds positional and keyword arguments to `binding`'s parameters
/// (Unsupported on too many positionals or an unknown keyword).
Args bindArguments(const OpBinding &binding, std::vector<VarP> &args,
                   std::map<std::string, VarP> &kwargs);

/// Category registrations, one per file, called once by opRegistry().
void registerCoreElementwiseOps(OpRegistry &r); // CoreElementwise.cpp
void registerCoreNNOps(OpRegistry &r);          // CoreNN.cpp
void registerCoreShapeOps(OpRegistry &r);       // CoreShape.cpp
void registerFactoryOps(OpRegistry &r);         // Factories.cpp
void registerIndexingOps(OpRegistry &r);        // TorchIndexing.cpp
void registerElementwiseOps(OpRegistry &r);     // TorchOpsElementwise.cpp
void registerReductionOps(OpRegistry &r);       // TorchOpsReduction.cpp
void registerShapeOps(OpRegistry &r);           // TorchOpsShape.cpp
void registerNNOps(OpRegistry &r);              // TorchOpsNN.cpp
void registerLossOps(OpRegistry &r);            // TorchOpsLoss.cpp
void registerRandomOps(OpRegistry &r);          // RandomOps.cpp

} // namespace kiln

#endif // KILN_FRONTEND_CAPTURE_OPS_OPREGISTRY_H
