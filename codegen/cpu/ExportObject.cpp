//===- ExportObject.cpp - run-time calls through an import table -------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements ExportObject.h. Runs after LLVM's O3 pipeline (so the
// optimizer still sees `malloc`/`free` by name, as in the JIT) and before
// code generation.
//===----------------------------------------------------------------------===//
#include "codegen/cpu/ExportObject.h"

#include "codegen/cpu/RuntimeSymbols.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"

#include <set>

namespace mlir::kiln {

llvm::Error indirectRuntimeCalls(llvm::Module &module, std::vector<std::string> &imports) {
  std::set<std::string> known;
  for (auto &[name, address] : runtimeSymbols())
    known.insert(name);
  std::vector<llvm::Function *> used;
  for (llvm::Function &f : module)
    if (f.isDeclaration() && !f.use_empty() && known.count(f.getName().str()))
      used.push_back(&f);
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(ctx);
  auto *tableType = llvm::ArrayType::get(ptr, std::max<size_t>(used.size(), 1));
  auto *table = new llvm::GlobalVariable(
      module, tableType, /*isConstant=*/false, llvm::GlobalValue::ExternalLinkage,
      llvm::ConstantAggregateZero::get(tableType), kImportTableName);
  imports.clear();
  for (auto [slot, f] : llvm::enumerate(used)) {
    imports.push_back(f->getName().str());
    for (llvm::Use &use : llvm::make_early_inc_range(f->uses())) {
      auto *inst = llvm::dyn_cast<llvm::Instruction>(use.getUser());
      if (!inst || llvm::isa<llvm::PHINode>(inst))
        return llvm::createStringError("kiln.export: " + f->getName().str() +
                                       " is used outside a call; cannot route it through the "
                                       "import table");
      llvm::IRBuilder<> b(inst);
      llvm::Value *at = b.CreateConstInBoundsGEP2_64(tableType, table, 0, slot);
      use.set(b.CreateLoad(ptr, at, f->getName() + ".import"));
    }
    f->eraseFromParent();
  }
  return llvm::Error::success();
}

} // namespace mlir::kiln
