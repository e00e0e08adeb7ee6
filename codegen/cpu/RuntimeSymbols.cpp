//===- RuntimeSymbols.cpp - what JIT'd code calls in runtime/cpu --------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements RuntimeSymbols.h: the symbol table the JIT resolves first, and
// the check that generated code calls only OpenMP entry points the shim
// implements, with an argument count it supports.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/RuntimeSymbols.h"

#include "runtime/artifact/Imports.h"
#include "runtime/cpu/DnnlConv.h"
#include "runtime/cpu/Int4Linear.h"
#include "runtime/cpu/Int8Gemm.h"
#include "runtime/cpu/OpenMPShim.h"
#include "runtime/cpu/CallHooks.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/InstrTypes.h"
#include "llvm/IR/Module.h"

#include <set>

namespace mlir::kiln {

llvm::Error checkRuntimeCalls(const llvm::Module &module) {
  std::set<std::string> known;
  for (auto &[name, address] : ::kiln::rt::openMPShimSymbols())
    known.insert(name);
  for (const llvm::Function &f : module) {
    llvm::StringRef name = f.getName();
    if (!f.isDeclaration() || !(name.starts_with("__kmpc_") || name.starts_with("omp_")))
      continue;
    if (!known.count(name.str()))
      return llvm::createStringError("kiln: the generated code calls " + name.str() +
                                     ", which kiln's OpenMP shim does not implement");
    if (name != "__kmpc_fork_call")
      continue;
    for (const llvm::User *user : f.users()) {
      auto *call = llvm::dyn_cast<llvm::CallBase>(user);
      auto *argc = call ? llvm::dyn_cast<llvm::ConstantInt>(call->getArgOperand(1)) : nullptr;
      if (!argc || argc->getZExtValue() > static_cast<uint64_t>(::kiln::rt::kMaxForkArgs))
        return llvm::createStringError("kiln: a parallel region takes more than " +
                                       std::to_string(::kiln::rt::kMaxForkArgs) + " arguments");
    }
  }
  return llvm::Error::success();
}

std::vector<std::pair<const char *, void *>> runtimeSymbols() {
  // One table for the JIT and exported code, plus the oneDNN convolution
  // shims (JIT only: exported code does not call them, Model.cpp refuses it).
  std::vector<std::pair<const char *, void *>> symbols = ::kiln::rt::cpuRuntimeImports();
  for (auto symbol : ::kiln::rt::dnnlShimSymbols())
    symbols.push_back(symbol);
  for (auto symbol : ::kiln::rt::int8GemmSymbols()) // kiln.qlinear (JIT only too)
    symbols.push_back(symbol);
  for (auto symbol : ::kiln::rt::int4LinearSymbols()) // grouped weight-only kiln.qlinear
    symbols.push_back(symbol);
  for (auto symbol : ::kiln::rt::callHookSymbols()) // lazy outputs, released inputs (JIT only)
    symbols.push_back(symbol);
  return symbols;
}

} // namespace mlir::kiln
