//===- OpRegistry.cpp - the one torch → kiln op registry ------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Builds the registry from the category files, resolves torch names to
// callables once (a name this torch lacks is skipped), records names
// registered twice, binds call arguments to a schema, and serves the
// coverage view (capture/Coverage.h).
//===----------------------------------------------------------------------===//
#include "capture/ops/OpRegistry.h"
#include "GilOnce.h"

#include "capture/Coverage.h"

#include <algorithm>

namespace kiln {

Params Params::with(const Params &more) const {
  Params p = *this;
  p.names.insert(p.names.end(), more.names.begin(), more.names.end());
  return p;
}

void OpRegistry::noteDuplicate(bool isNew, const std::string &what) {
  if (!isNew)
    duplicateNames.push_back(what);
}

OpRegistry::Entry OpRegistry::op(const char *name, OpHandler handler, Params params,
                                 unsigned traits, VmapRule vmap) {
  auto [it, isNew] = ops.try_emplace(name);
  noteDuplicate(isNew, std::string("op ") + name);
  it->second = OpDef{name, handler, std::move(params), traits, vmap};
  return Entry(*this, it->second);
}

OpRegistry::Entry &OpRegistry::Entry::function(const char *module, const char *name,
                                               Params params) {
  name = nameOr(name);
  std::string qualified = std::string(module) + "." + name;
  // Owned: the import; the callable is kept alive as a table key.
  PyRef m = PyRef::steal(PyImport_ImportModule(module));
  PyObject *callable = m ? PyObject_GetAttrString(m.get(), name) : nullptr;
  PyErr_Clear(); // a name this torch lacks is not mapped, not an error
  if (!callable)
    return *this;
  auto [at, isNew] = registry.functionIndex.try_emplace(qualified, registry.functionList.size());
  registry.noteDuplicate(isNew, qualified);
  if (!isNew) {
    Py_DECREF(callable);
    return *this;
  }
  OpBinding binding{&def, std::move(params)};
  registry.functionList.push_back({module, name, binding});
  // One callable under two names (F.conv2d is torch.conv2d): the first wins.
  if (!registry.functions.try_emplace(callable, std::move(binding)).second)
    Py_DECREF(callable);
  return *this;
}

OpRegistry::Entry &OpRegistry::Entry::method(const char *name, Params params) {
  name = nameOr(name);
  OpBinding binding{&def, std::move(params)};
  bool isNew = registry.methods.try_emplace(name, binding).second;
  registry.noteDuplicate(isNew, std::string("Tensor.") + name);
  if (isNew)
    registry.methodList.push_back({name, std::move(binding)});
  return *this;
}

OpRegistry::Entry &OpRegistry::Entry::binaryOperator(const char *symbol,
                                                     const char *operatorFunction) {
  bool isNew = registry.binaryOperators.try_emplace(symbol, &def).second;
  registry.noteDuplicate(isNew, std::string("operator ") + symbol);
  if (operatorFunction) {
    PyRef m = PyRef::steal(PyImport_ImportModule("operator"));
    PyObject *f = m ? PyObject_GetAttrString(m.get(), operatorFunction) : nullptr; // kept alive
    PyErr_Clear();
    if (f && !registry.operatorFunctions.try_emplace(f, OperatorFunction{symbol, 2}).second)
      Py_DECREF(f);
  }
  return *this;
}

OpRegistry::Entry &OpRegistry::Entry::unaryOperator(const char *operatorFunction) {
  PyRef m = PyRef::steal(PyImport_ImportModule("operator"));
  PyObject *f = m ? PyObject_GetAttrString(m.get(), operatorFunction) : nullptr; // kept alive
  PyErr_Clear();
  if (!f)
    return *this;
  bool isNew = registry.operatorFunctions.try_emplace(f, OperatorFunction{def.name, 1}).second;
  registry.noteDuplicate(isNew, std::string("operator.") + operatorFunction);
  if (!isNew)
    Py_DECREF(f);
  return *this;
}

const OpDef *OpRegistry::find(const std::string &name) const {
  auto it = ops.find(name);
  return it == ops.end() ? nullptr : &it->second;
}

const OpBinding *OpRegistry::function(PyObject *callee) const {
  auto it = functions.find(callee);
  return it == functions.end() ? nullptr : &it->second;
}

const OpBinding *OpRegistry::method(const std::string &name) const {
  auto it = methods.find(name);
  return it == methods.end() ? nullptr : &it->second;
}

const OpDef *OpRegistry::binaryOperator(const std::string &symbol) const {
  auto it = binaryOperators.find(symbol);
  return it == binaryOperators.end() ? nullptr : it->second;
}

const OperatorFunction *OpRegistry::operatorFunction(PyObject *callee) const {
  auto it = operatorFunctions.find(callee);
  return it == operatorFunctions.end() ? nullptr : &it->second;
}

// kiln.quant's layers (QuantOps.cpp); declared here, not in OpRegistry.h,
// which most of the capture includes.
void registerQuantOps(OpRegistry &r);

const OpRegistry &opRegistry() {
  // Built on first use by a GIL holder (the names are resolved through
  // Python imports): GilOnce.h, never a function-local static.
  static GilOnce<OpRegistry> registry;
  return registry.get([] {
    OpRegistry r;
    registerCoreElementwiseOps(r);
    registerCoreNNOps(r);
    registerCoreShapeOps(r);
    registerFactoryOps(r);
    registerIndexingOps(r);
    registerElementwiseOps(r);
    registerReductionOps(r);
    registerShapeOps(r);
    registerNNOps(r);
    registerLossOps(r);
    registerRandomOps(r);
    registerQuantOps(r);
    return r;
  });
}

Args bindArguments(const OpBinding &binding, std::vector<VarP> &args,
                   std::map<std::string, VarP> &kwargs) {
  const std::vector<std::string> &params = binding.params.names;
  const std::string &op = binding.op->name;
  Args a;
  size_t i = 0;
  for (const std::string &p : params) {
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
    throw Unsupported("too many arguments for " + op);
  for (auto &[k, v] : kwargs) {
    if (std::find(params.begin(), params.end(), "*" + k) != params.end()) {
      // `torch.zeros(size=(2, 3))`: the varargs by their keyword, when no
      // positional took their place (torch's parser raises then).
      VarP given = a.named[k];
      if (given && given->kind == Var::Kind::Tuple && given->items.empty()) {
        a.named[k] = v;
        continue;
      }
    }
    if (std::find(params.begin(), params.end(), k) == params.end())
      throw Unsupported("unsupported keyword '" + k + "' for " + op);
    a.named[k] = v;
  }
  return a;
}

std::vector<MappedFunction> mappedFunctions() {
  std::vector<MappedFunction> out;
  for (const auto &f : opRegistry().functionNames())
    out.push_back({f.module, f.name, f.binding.op->name, f.binding.params.names});
  return out;
}

std::vector<MappedMethod> mappedMethods() {
  std::vector<MappedMethod> out;
  for (const auto &m : opRegistry().methodNames())
    out.push_back(
        {m.name, m.binding.op->name, m.binding.op->hasInPlaceForm(), m.binding.params.names});
  return out;
}

std::vector<std::string> duplicateOpNames() { return opRegistry().duplicates(); }

} // namespace kiln
